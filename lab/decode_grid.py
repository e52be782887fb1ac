"""Where a decode call's time goes, by its grid: for every indexed decode call of a
generalization results file (bench/bench_w4a16.py --set generalization), the kernel the call
ran (the row's `ran_kernel`; files from before the bench recorded it have only `kernel`, the
rule's pick, where the decode tile search may have run another tile), its tiles on the call's
own routing draw (bench/generalization.py, the same draws), CTAs, resident CTAs per SM (shared
memory and registers, from ptxas through `chord config --cubin`), waves and the busiest SM's
share. No GPU.

    python3 lab/decode_grid.py RESULTS.json [--chord build/chord] [--over-marlin 0.9] [--json FILE]

--over-marlin R lists only the calls where chord took more than R times Marlin's time (the
issue's bar is 0.9); without it every indexed decode call (<= 64 routed rows per expert).
The summary groups the calls by waves (CTAs / resident slots) and by how many tiles the
hottest expert needs: the two ways a grid leaves an H200's SMs unevenly loaded.
"""
import argparse
import collections
import json
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "bench"))
import generalization  # noqa: E402

SMS = generalization.SMS
SMEM_PER_SM = 228 * 1024   # H100 / H200: shared memory per SM, 1 KiB of it reserved per CTA
REGS_PER_SM = 65536
MAX_WARPS_PER_SM = 64

# Kernel names: the tile, the weight kind's suffix (_f16, _zpg128, _nf4, ...), then _sk<split>,
# _gs<form> and _nr<run> where they are not the defaults, _ml for a masked tile loop
# (jit/families/w4a16.cpp). _stk is the stream-K schedule the library no longer builds:
# bench/results files that measured it name it.
MMA_NAME = re.compile(r"w4a16_(?:indexed|masked|offsets|contiguous)_m(\d+)n(\d+)k(\d+)s(\d+)w(\d+)x(\d+)"
                      r"(?:_(?!sk\d|gs\d|stk$|nr\d|ml$)[a-z0-9]+)?(?:_sk(\d+))?(?:_gs\d+)?(_stk)?(?:_nr(\d+))?(_ml)?$")
WGMMA_NAME = re.compile(r"w4a16_wgmma(?:_ws)?_(?:indexed|masked|offsets|contiguous)_m(\d+)n(\d+)wg(\d+)s(\d+)")


def parse_kernel(name):
    """{engine, bm, bn, bk, stages, warps_m, warps_n, split_k, stream_k, n_run, masked_loop} of a kernel
    name, or None."""
    m = MMA_NAME.match(name)
    if m:
        bm, bn, bk, st, wm, wn, sk, stk, nr, ml = m.groups()
        return dict(engine="mma_sync", bm=int(bm), bn=int(bn), bk=int(bk), stages=int(st), warps_m=int(wm),
                    warps_n=int(wn), split_k=int(sk or 1), stream_k=bool(stk), n_run=int(nr or 1),
                    masked_loop=bool(ml))
    m = WGMMA_NAME.match(name)
    if m:
        bm, bn, wg, st = m.groups()
        return dict(engine="wgmma_ws" if "_ws_" in name else "wgmma", bm=int(bm), bn=int(bn), bk=64, stages=int(st),
                    warpgroups=int(wg), split_k=1)
    return None


def resources(cli, call, k):
    """(threads, shared bytes, registers) of kernel k forced on the call's shape, from ptxas."""
    env = dict(os.environ, CHORD_W4A16_SEARCH="0", CHORD_W4A16_ENGINE=k["engine"], CHORD_W4A16_BM=str(k["bm"]),
               CHORD_W4A16_BN=str(k["bn"]), CHORD_W4A16_BK=str(k["bk"]), CHORD_W4A16_STAGES=str(k["stages"]))
    if k["engine"] == "mma_sync":
        env.update(CHORD_W4A16_WARPS_N=str(k["warps_n"]), CHORD_W4A16_WARPS_M=str(k["warps_m"]),
                   CHORD_W4A16_SPLIT_K=str(k["split_k"]),
                   CHORD_W4A16_N_RUN=str(k.get("n_run", 1)))
    with tempfile.TemporaryDirectory() as tmp:
        args = [cli] + generalization.config_args(call) + ["--cubin", os.path.join(tmp, "k.cubin")]
        out = subprocess.run(args, env=env, capture_output=True, text=True)
    text = out.stdout + out.stderr
    threads = re.search(r"threads=(\d+)", text)
    smem = re.search(r"smem=(\d+)", text)
    regs = re.search(r"Used (\d+) registers", text)
    if not (threads and smem and regs):
        raise RuntimeError(f"chord config gave no resources for {k}: {text[-400:]}")
    return int(threads.group(1)), int(smem.group(1)), int(regs.group(1))


def ctas_per_sm(threads, smem, regs):
    """Resident CTAs per SM: the least of the shared-memory, register and warp limits."""
    by_smem = SMEM_PER_SM // (smem + 1024)
    regs_per_warp = math.ceil(regs * 32 / 256) * 256  # allocated per warp in 256-register units
    by_regs = REGS_PER_SM // (regs_per_warp * (threads // 32))
    by_warps = MAX_WARPS_PER_SM // (threads // 32)
    return max(0, min(by_smem, by_regs, by_warps))


def grid(call, k):
    """(work tiles, CTAs, tiles of the hottest expert) of kernel k on the call's draw: a tile is
    BLOCK_M routed rows of one expert (tiles of padding only exit at once and are not counted);
    a tile's CTAs along N each take n_run of its N / BLOCK_N blocks."""
    counts = collections.Counter(e for ids in call["topk_ids"] for e in ids)
    tiles = sum(math.ceil(c / k["bm"]) for c in counts.values())
    hottest = max(math.ceil(c / k["bm"]) for c in counts.values())
    run = k.get("n_run", 1)
    return tiles, tiles * -(-(call["n"] // k["bn"]) // run) * k["split_k"], hottest


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a generalization results JSON (bench_w4a16.py --set generalization)")
    parser.add_argument("--chord", default=os.path.join(HERE, os.pardir, "build", "chord"))
    parser.add_argument("--over-marlin", type=float, default=None,
                        help="only calls with chord / Marlin time above this (e.g. 0.9)")
    parser.add_argument("--json", default=None, help="also write the rows here")
    args = parser.parse_args()
    with open(args.results) as f:
        rows = json.load(f)["rows"]
    calls = {(c["scenario"], c["x"], c["proj"]): c for c in generalization.calls()}
    cache, out = {}, []
    for r in rows:
        if r.get("mode") != "indexed" or r["routed_rows"] > 64 * r["active_experts"]:
            continue
        ratio = r["chord_us"] / r["marlin_us"] if r.get("marlin_us") else None
        if args.over_marlin is not None and (ratio is None or ratio <= args.over_marlin):
            continue
        call = calls.get((r["scenario"], r["x"], r["proj"]))
        name = r.get("ran_kernel") or r.get("kernel", "")
        k = parse_kernel(name)
        if call is None or k is None:
            print(f"skipped {r['scenario']} x={r['x']} {r['proj']}: no draw or unknown kernel {name}")
            continue
        if k.get("stream_k"):  # its grid is the resident CTAs whatever the tiles: nothing to classify
            print(f"skipped {r['scenario']} x={r['x']} {r['proj']}: stream-K kernel {name}")
            continue
        key = (name, call["n"], call["k"])
        if key not in cache:
            cache[key] = resources(args.chord, call, k)
        threads, smem, regs = cache[key]
        per_sm = ctas_per_sm(threads, smem, regs)
        tiles, ctas, hottest = grid(call, k)
        slots = per_sm * SMS
        out.append(dict(row=f"{r['scenario']} x={r['x']} {r['proj']}", kernel=name, ran=bool(r.get("ran_kernel")),
                        chord_us=r["chord_us"], marlin_us=r.get("marlin_us"), vs_marlin=ratio, pct_floor=r["pct_floor"],
                        floor_us=r["floor_us"], tiles=tiles, ctas=ctas, ctas_per_sm=per_sm, regs=regs, smem=smem,
                        waves=ctas / slots if slots else None,
                        busiest_sm=math.ceil(ctas / SMS) / (ctas / SMS), hottest_expert_tiles=hottest))
    print(f"{'row':46s} {'chord':>6s} {'marlin':>6s} {'ratio':>5s} {'floor%':>6s} {'CTAs':>5s} {'/SM':>3s} "
          f"{'waves':>5s} {'busy':>4s} {'hot':>3s}  kernel")
    for o in out:
        print(f"{o['row']:46s} {o['chord_us']:6.1f} {o['marlin_us'] or 0:6.1f} {o['vs_marlin'] or 0:5.2f} "
              f"{o['pct_floor']:6.1f} {o['ctas']:5d} {o['ctas_per_sm']:3d} {o['waves']:5.2f} {o['busiest_sm']:4.2f} "
              f"{o['hottest_expert_tiles']:3d}  {o['kernel']}")
    by_waves = collections.Counter(
        "< 0.5 wave" if o["waves"] < 0.5 else "0.5-1 wave" if o["waves"] <= 1 else "1-2 waves" if o["waves"] <= 2
        else "> 2 waves" for o in out)
    by_hot = collections.Counter("hottest expert 1 tile" if o["hottest_expert_tiles"] == 1 else
                                 "hottest expert 2-3 tiles" if o["hottest_expert_tiles"] <= 3 else
                                 "hottest expert 4+ tiles" for o in out)
    print(f"\n{len(out)} calls; by waves: {dict(by_waves)}; by the hottest expert: {dict(by_hot)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
