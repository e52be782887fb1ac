"""CPU check of lab/kernel_check/decode_explore_report.py on a synthetic JSON."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_decode_explore_report_self_test():
    script = os.path.join(ROOT, "lab", "kernel_check", "decode_explore_report.py")
    done = subprocess.run([sys.executable, script, "--self-test"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "self-test ok" in done.stdout
