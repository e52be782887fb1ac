"""Masked EP8 8 tokens/expert down timed before and after the contiguous 512 rows/expert down
row, in one process, with the SM clock and throttle reasons (nvidia-smi) after each row: how
much the power cap a heavy row leaves behind moves a decode row. Run from the repo root:
    python3 lab/kernel_check/power_order.py
"""
import os, subprocess, sys, time
sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
import torch
import bench_w4a16 as b

def clocks(tag):
    q = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active",
                        "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()
    print(f"   [{tag}] sm MHz, W, C, throttle: {q}", flush=True)

gen = torch.Generator(device="cuda"); gen.manual_seed(b.SEED)
suite = b.Suite(None, True)  # None: chord_kernels' own libchord
_, n_up, k_up, n_down, k_down = b.MODELS["kimi"]
down = b.ExpertWeights(None, b.shapes.SPLITS["ep8"]["experts_local"], n_down, k_down, gen)
suite.proj = "down"
for step in ("masked", "contig", "masked", "sleep", "masked", "contig", "masked"):
    if step == "sleep":
        time.sleep(5); clocks("after 5 s idle"); continue
    g = torch.Generator(device="cuda"); g.manual_seed(7)
    if step == "masked":
        suite.masked("masked EP8", 8, down, 8, 8, g)
    else:
        suite.contiguous("contiguous EP8", 512, down, 512, g)
    clocks(step)
