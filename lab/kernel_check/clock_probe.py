"""Contiguous EP8 512 rows/expert: chord vs BF16 grouped_mm, each timed as the bench does, in
both orders, with the SM clock / power sampled by nvidia-smi during each phase (are the two
sides timed at the same clock?). Run from the repo root after scripts/install_wheel.sh:
    python3 lab/kernel_check/clock_probe.py
"""
import os, subprocess, sys, time, threading
sys.path.insert(0, os.path.join(os.getcwd(), "bench"))
import torch
import bench_w4a16 as b
import chord_kernels as ck

samples = []
def sampler():
    p = subprocess.Popen(["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits", "-lms", "20"],
                         stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        try:
            c, w = line.strip().split(",")
            samples.append((time.time(), float(c), float(w)))
        except ValueError:
            pass
threading.Thread(target=sampler, daemon=True).start()
time.sleep(1.0)

gen = torch.Generator(device="cuda"); gen.manual_seed(b.SEED)
_, n_up, k_up, n_down, k_down = b.MODELS["kimi"]
flush = b.l2_flush_buffer()
for proj, n, k in (("gate_up", n_up, k_up), ("down", n_down, k_down)):
    e, rpe = b.shapes.SPLITS["ep8"]["experts_local"], 512
    w = b.ExpertWeights(None, e, n, k, gen)
    m = e * rpe
    a = torch.randn(m, k, device="cuda", generator=gen).to(torch.bfloat16)
    m_idx = torch.arange(e, device="cuda", dtype=torch.int32).repeat_interleave(rpe)
    offs = torch.cumsum(torch.full((e,), rpe, device="cuda"), 0).to(torch.int32)
    out = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
    fns = {"chord": lambda: ck.contiguous(a, w.packed, m_idx, out), "bf16": lambda: b.grouped_mm(a, w.bf16, offs)}
    for order in (("chord", "bf16"), ("bf16", "chord"), ("chord", "bf16")):
        for name in order:
            t0 = time.time()
            us = b.time_us(fns[name], flush)
            t1 = time.time()
            time.sleep(0.1)
            s = [x for x in samples if t0 <= x[0] <= t1]
            mhz = sum(x[1] for x in s) / max(len(s), 1)
            watt = sum(x[2] for x in s) / max(len(s), 1)
            print(f"{proj:8s} {name:6s} {us:8.1f} us  sm {mhz:6.0f} MHz  {watt:5.0f} W  ({len(s)} samples)", flush=True)
    del w, a, out
    torch.cuda.empty_cache()
