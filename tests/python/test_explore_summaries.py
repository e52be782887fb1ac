"""CPU checks of lab/kernel_check/explore_summary.py and search_draws.py on a synthetic
decode_explore.py JSON: one shape called with a uniform and a skewed draw, three tiles in two
group-sum forms."""
import gzip
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB = os.path.join(ROOT, "lab", "kernel_check")

RULE = dict(engine="mma_sync", block_m=8, block_n=128, block_k=128, stages=3, split_k=1)
# us per setting and draw: the rule's tile is best on uniform, m8n64k256s3sk1 on skewed.
TIMES = {
    "uniform": {"default": 10.0, "m8n128k128s3sk1": 10.0, "m8n64k256s3sk1": 10.2, "m8n128k128s3sk2": 11.0,
                "m8n128k128s3sk1gs1": 11.0, "m8n64k256s3sk1gs1": 10.0, "m8n128k128s3sk2gs1": 12.0},
    "skewed": {"default": 20.0, "m8n128k128s3sk1": 20.0, "m8n64k256s3sk1": 14.0, "m8n128k128s3sk2": 19.0,
               "m8n128k128s3sk1gs1": 22.0, "m8n64k256s3sk1gs1": 15.0, "m8n128k128s3sk2gs1": 20.0},
}


def write_run(folder, times=None):
    times = times or TIMES
    rows, results = [], []
    for i, (draw, floor) in enumerate((("uniform", 9.0), ("skewed", 12.0))):
        rows.append(dict(id=f"r{i}", set="generalization", weight="int4", split="s", mode="indexed", x=4,
                         proj="gate_up", draw=draw, floor_us=floor, rule=RULE))
        results += [dict(row=f"r{i}", setting=k, us=v, ok=True) for k, v in times[draw].items()]
    path = os.path.join(folder, "run.json.gz")
    with gzip.open(path, "wt") as f:
        json.dump(dict(meta=dict(gpu="test GPU", grid="gs"), rows=rows, results=results), f)
    return path


def run(script, *args):
    done = subprocess.run([sys.executable, os.path.join(LAB, script), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_explore_summary_floor_and_forms(tmp_path):
    out = run("explore_summary.py", write_run(str(tmp_path)))
    # Floors 9 and 12 us: at --min-floor-us 10 only the skewed call counts; shipped 12/20 = 60%,
    # fastest 12/14 = 85.7%.
    assert "calls with a floor >= 10.0 us: 1" in out
    assert "shipped (rule + search): median 60.0% of the floor, >= 85% on 0" in out
    assert "fastest forced setting: median 85.7% of the floor, >= 85% on 1" in out
    # Best per call, offset over correction: uniform 10 / 10, skewed 14 / 15.
    assert "over 2 calls: median 0.967" in out
    assert "faster by > 3% on 1, slower by > 3% on 0" in out
    assert "m8n128k128s3sk1: median 0.909 over 2 calls" in out  # (10/11 + 20/22) / 2
    everything = run("explore_summary.py", write_run(str(tmp_path)), "--min-floor-us", "0")
    assert "calls with a floor >= 0.0 us: 2" in everything


def test_search_draws_policies(tmp_path):
    out = run("search_draws.py", write_run(str(tmp_path)))
    assert "1 shapes with a uniform and a skewed call" in out
    lines = {line.split()[0]: line for line in out.splitlines()[1:]}
    # The rule's tile: fastest on uniform, 20 / 14 on skewed.
    assert "uniform: median 1.000" in lines["rule"] and "skewed: median 1.429" in lines["rule"]
    # Timing the uniform call alone keeps the rule's tile (nothing 3% faster there).
    assert "skewed: median 1.429" in lines["uniform"]
    # The least worse tile over both draws: m8n64k256s3sk1 (1.02 uniform, 1.0 skewed).
    assert "uniform: median 1.020" in lines["worse"] and "skewed: median 1.000" in lines["worse"]


# Each policy keeps another tile: rule m8n128k128s3sk1 (10.0 / 20.0 us, uniform / skewed);
# uniform m8n128k128s3sk2, over 3% faster there (9.6 / 19.0); worse m8n64k256s3sk1 (10.5 / 14.0);
# the fastest timed setting per call, 9.6 / 14.0. The `default` setting (the library as
# shipped) is faster still and must not count as a tile.
MARLIN_TIMES = {
    "uniform": {"default": 9.0, "m8n128k128s3sk1": 10.0, "m8n64k256s3sk1": 10.5, "m8n128k128s3sk2": 9.6,
                "m8n128k128s3sk1gs1": 11.0, "m8n64k256s3sk1gs1": 11.0, "m8n128k128s3sk2gs1": 12.0},
    "skewed": {"default": 5.0, "m8n128k128s3sk1": 20.0, "m8n64k256s3sk1": 14.0, "m8n128k128s3sk2": 19.0,
               "m8n128k128s3sk1gs1": 25.0, "m8n64k256s3sk1gs1": 25.0, "m8n128k128s3sk2gs1": 25.0},
}


def marlin_counts(tmp_path, uniform_us, skewed_us):
    peers = os.path.join(str(tmp_path), "peers.json")
    with open(peers, "w") as f:
        json.dump(dict(rows=[dict(split="s", mode="indexed", x=4, proj="gate_up", draw=draw, marlin_us=us)
                             for draw, us in (("uniform", uniform_us), ("skewed", skewed_us))]), f)
    out = run("search_draws.py", write_run(str(tmp_path), MARLIN_TIMES), "--marlin", peers)
    assert "of the 2 these pairs have Marlin times for" in out
    return {line.split()[0]: line for line in out.splitlines() if line.startswith("  ")}


def test_search_draws_marlin_bar(tmp_path):
    # Bars (0.9x Marlin) of 9.8 us uniform and 16.2 skewed: each policy over on other draws.
    lines = marlin_counts(tmp_path, 9.8 / 0.9, 16.2 / 0.9)
    assert "uniform 1  skewed 1  total 2" in lines["rule"]
    assert "uniform 0  skewed 1  total 1" in lines["uniform"]
    assert "uniform 1  skewed 0  total 1" in lines["worse"]
    assert "uniform 0  skewed 0  total 0" in lines["fastest"]
    # A skewed bar of 13.5 us: the fastest tile (14.0) is over; the shipped library's 5.0 would not be.
    assert "uniform 0  skewed 1  total 1" in marlin_counts(tmp_path, 9.8 / 0.9, 13.5 / 0.9)["fastest"]
