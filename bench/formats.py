"""The formats set (`bench/bench_w4a16.py --set formats`), in pure Python: the suite's Qwen3-30B-A3B
and Kimi K2 EP8 splits (shapes/suite.json) under the INT4 checkpoint formats chord serves (group
32 and 128, symmetric and zero-point, BF16 and FP16 activations), their routing draws, each
call's geometry and its two read floors. No torch here, so that `python3 bench/formats.py` lists,
without a GPU, exactly the rows and floors the bench times.

    python3 bench/formats.py [--quick] [--only TEXT]

Two floors per row, both counting the experts the call touches once, the activations read once
and the outputs written once (max of bytes / 4.47 TB/s and FLOP / 790 TFLOP/s):
- `checkpoint`: the bytes of the format as the checkpoint stores it: 4-bit codes, one 2-byte
  scale per group, one 4-bit zero point per group (AWQ / GPTQ qzeros);
- `chord`: the bytes chord's packed layout holds and its kernels read (docs/packed_layout.md):
  4-bit codes, one 2-byte scale (a 4-byte {scale, bias} entry with zero points) per 128 weights
  for a group that is a multiple of 128 with K % 128 == 0 (the group-128 formats), else per 32.
`pct_floor` is the checkpoint floor over the time: what a kernel reading the checkpoint's own
bytes at the streaming rate would reach.
"""
import argparse
import heapq
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shapes  # noqa: E402

STREAM_BYTES_PER_S = 4.47e12   # docs/shapes.md, measured on the H200
BF16_FLOP_PER_S = 790e12       # dense BF16 (FP16 runs at the same rate on the H200)
SEED = 2031
CHORD_GROUP = 32               # the packed layout's finest scale group (docs/formats.md)
CHORD_GROUP_128 = 128          # the group-128 formats' group
ACT_BYTES = 2                  # bf16 and fp16 activations and outputs

# The variants timed on every row, rep by rep in one process; g32 is today's format (the
# baseline), the others are what GPTQ / AWQ / compressed-tensors checkpoints ship.
VARIANTS = (
    dict(name="g32", group_size=32, zero_point=False, dtype="bfloat16"),
    dict(name="g128", group_size=128, zero_point=False, dtype="bfloat16"),
    dict(name="g128-zp", group_size=128, zero_point=True, dtype="bfloat16"),
    dict(name="g128-fp16", group_size=128, zero_point=False, dtype="float16"),
    dict(name="g128-zp-fp16", group_size=128, zero_point=True, dtype="float16"),
)
BASELINE = "g32"
SYMMETRIC_OF = {"g128-zp": "g128", "g128-zp-fp16": "g128-fp16"}  # zp variant -> same group and dtype without


def scenarios():
    """The set's rows, decode-sized before prefill-sized (docs/benchmarking.md: a heavy row
    leaves the GPU at its power cap). All indexed (vLLM's routing). The EP8 rows route as the
    suite's indexed EP8 rows; the Qwen3 rows route every token over the 128 experts of TP1."""
    ep8_decode, ep8_prefill = shapes.ROWS["indexed EP8 decode"], shapes.ROWS["indexed EP8 prefill"]
    return [
        dict(scenario="formats Qwen3 decode", phase="decode", split="qwen3", routed_over="local_experts",
             routing_block=16, tokens=[1, 8, 64], quick=[1, 64]),
        dict(scenario="formats EP8 decode", phase="decode", split="ep8", routed_over=ep8_decode["routed_over"],
             routing_block=ep8_decode["routing_block"], tokens=[20], quick=[20]),
        dict(scenario="formats Qwen3 prefill", phase="prefill", split="qwen3", routed_over="local_experts",
             routing_block=64, tokens=[4096], quick=[4096]),
        dict(scenario="formats EP8 prefill", phase="prefill", split="ep8", routed_over=ep8_prefill["routed_over"],
             routing_block=ep8_prefill["routing_block"], tokens=[8192], quick=[8192]),
    ]


def expert_bytes(n, k, group_size, zero_point, stored):
    """Bytes of one [n, k] INT4 expert. stored="checkpoint": codes, a 2-byte scale per group
    and a 4-bit zero point per group; stored="chord": the packed layout (a 2-byte scale, or a
    4-byte {scale, bias} with zero points, per 128 when the group is a multiple of 128 and
    K % 128 == 0, else per 32: chord_kernels.pack_w4a16's choice, _ops.packed_group)."""
    if k % group_size or group_size % CHORD_GROUP:
        raise ValueError(f"group {group_size} does not divide K = {k} or is not a multiple of {CHORD_GROUP}")
    codes = n * k // 2
    if stored == "checkpoint":
        groups = n * (k // group_size)
        return codes + 2 * groups + (groups // 2 if zero_point else 0)
    if stored == "chord":
        packed = CHORD_GROUP_128 if group_size % CHORD_GROUP_128 == 0 and k % CHORD_GROUP_128 == 0 else CHORD_GROUP
        return codes + n * (k // packed) * (4 if zero_point else 2)
    raise ValueError(f"stored must be 'checkpoint' or 'chord', not {stored!r}")


def floor_us(moved_bytes, flop):
    return max(moved_bytes / STREAM_BYTES_PER_S, flop / BF16_FLOP_PER_S) * 1e6


def rng_for(scenario, x):
    """One generator per (row, token count): a row's draw does not depend on which others run."""
    return random.Random(f"{SEED}:{scenario}:{x}")


def draw_mild(rng, tokens, experts, top_k):
    """The suite's draw (bench_w4a16.skewed_topk, here in pure Python): each expert gets a bias
    in [0, 0.5), each token scores every expert uniform + bias and takes the top_k."""
    bias = [0.5 * rng.random() for _ in range(experts)]
    out = []
    for _ in range(tokens):
        scores = [rng.random() + b for b in bias]
        out.append(heapq.nlargest(top_k, range(experts), key=scores.__getitem__))
    return out


def geometry(topk_ids, experts_local, top_k, proj, n, k):
    """What one projection of an indexed call touches, with the first `experts_local` global
    experts on this GPU: routed rows (routes on local experts), active experts, the activation
    rows it reads (gate_up: the distinct tokens with a local route; down: one row per route),
    the A rows and top_k the kernel is called with, FLOP, and per variant the bytes and floors."""
    counts = [0] * experts_local
    tokens_read = 0
    for ids in topk_ids:
        local = [e for e in ids if e < experts_local]
        for e in local:
            counts[e] += 1
        tokens_read += bool(local)
    routed = sum(counts)
    active = sum(1 for c in counts if c)
    if proj == "gate_up":
        rows_read, a_rows, kernel_top_k = tokens_read, len(topk_ids), top_k
    else:
        rows_read, a_rows, kernel_top_k = routed, len(topk_ids) * top_k, 1
    act_bytes = (rows_read * k + routed * n) * ACT_BYTES
    flop = 2 * routed * n * k
    variants = {}
    for v in VARIANTS:
        ckpt = active * expert_bytes(n, k, v["group_size"], v["zero_point"], "checkpoint") + act_bytes
        read = active * expert_bytes(n, k, v["group_size"], v["zero_point"], "chord") + act_bytes
        variants[v["name"]] = dict(checkpoint_bytes=ckpt, read_bytes=read, floor_us=floor_us(ckpt, flop),
                                   floor_read_us=floor_us(read, flop))
    return dict(proj=proj, n=n, k=k, routed_rows=routed, active_experts=active, rows_read=rows_read,
                a_rows=a_rows, kernel_top_k=kernel_top_k, act_bytes=act_bytes, flop=flop, counts=counts,
                variants=variants)


def cases(quick=False, only=None):
    """Every (scenario, token count) of the set in run order: the routing draw and both
    projections' geometry (geometry()). Draws are seeded per row and token count."""
    out = []
    for row in scenarios():
        if only and only not in row["scenario"]:
            continue
        split, model = shapes.SPLITS[row["split"]], shapes.model(row["split"])
        experts = split["experts_local"]
        over = experts if row["routed_over"] == "local_experts" else model["experts"]
        for t in (row["quick"] if quick else row["tokens"]):
            topk_ids = draw_mild(rng_for(row["scenario"], t), t, over, model["top_k"])
            projs = {proj: geometry(topk_ids, experts, model["top_k"], proj, split[proj]["n"], split[proj]["k"])
                     for proj in ("gate_up", "down")}
            out.append(dict(scenario=row["scenario"], phase=row["phase"], split=row["split"], x=t,
                            experts=experts, routed_over=over, top_k=model["top_k"],
                            routing_block=row["routing_block"], topk_ids=topk_ids, projs=projs))
    return out


def ratios(times):
    """The row's ratios from its variants' times in one run ({variant: us}, plus "grouped_mm"):
    zp/sym per zero-point variant, variant / g32, variant / BF16 grouped_mm."""
    out = {}
    for name, us in times.items():
        if name == "grouped_mm":
            continue
        sym = SYMMETRIC_OF.get(name)
        out[name] = dict(zp_over_sym=round(us / times[sym], 3) if sym else None,
                         over_g32=round(us / times[BASELINE], 3),
                         over_grouped_mm=round(us / times["grouped_mm"], 3))
    return out


def summary(rows):
    """Text: per (scenario, T, projection) each variant's % of the checkpoint floor, then the
    zero-point cost and, on prefill rows, the time over BF16 grouped_mm."""
    names = [v["name"] for v in VARIANTS]
    keyed = {}
    for r in rows:
        keyed.setdefault((r["scenario"], r["x"], r["proj"]), {})[r["variant"]] = r
    lines = ["% of the checkpoint format's read floor (floor / time; the floor counts codes, scales and zero "
             "points as the checkpoint stores them)",
             f"{'scenario':22s} {'T':>5s} {'proj':7s} " + " ".join(f"{n:>12s}" for n in names)]
    for (scenario, x, proj), by in keyed.items():
        lines.append(f"{scenario:22s} {x:>5} {proj:7s} " +
                     " ".join(f"{by[n]['pct_floor']:11.1f}%" if n in by else f"{'-':>12s}" for n in names))
    lines.append("zero-point time / symmetric time (same group and dtype, same run) | time / BF16 torch._grouped_mm "
                 "(prefill: <= 1 is at or under it)")
    zp = list(SYMMETRIC_OF)
    lines.append(f"{'scenario':22s} {'T':>5s} {'proj':7s} " + " ".join(f"{n:>12s}" for n in zp) + " | " +
                 " ".join(f"{n:>12s}" for n in names))
    for (scenario, x, proj), by in keyed.items():
        cells = [f"{by[n]['zp_over_sym']:11.3f}x" if n in by else f"{'-':>12s}" for n in zp]
        gmm = [f"{by[n]['over_grouped_mm']:11.3f}x" if n in by else f"{'-':>12s}" for n in names]
        lines.append(f"{scenario:22s} {x:>5} {proj:7s} " + " ".join(cells) + " | " + " ".join(gmm))
    if any("vs_against" in r for r in rows):
        lines.append("--against: its time / ours (above 1 this build is faster), same run")
        lines.append(f"{'scenario':22s} {'T':>5s} {'proj':7s} " + " ".join(f"{n:>12s}" for n in names))
        for (scenario, x, proj), by in keyed.items():
            lines.append(f"{scenario:22s} {x:>5} {proj:7s} " + " ".join(
                f"{by[n]['vs_against']:11.3f}x" if "vs_against" in by.get(n, {}) else f"{'-':>12s}" for n in names))
    failed = [(r, what) for r in rows for what in (r["check"], r.get("against_check", "ok")) if what != "ok"]
    lines.append(f"{len(failed)} failed checks" + "".join(
        f"\n  {r['scenario']} T={r['x']} {r['proj']} {r['variant']}: {what}" for r, what in failed))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description="The formats set's rows and read floors, without a GPU")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default=None)
    args = parser.parse_args()
    print(f"{'scenario':22s} {'T':>5s} {'proj':7s} {'N x K':>12s} {'rows':>6s} {'act':>4s} {'variant':13s} "
          f"{'ckpt MB':>9s} {'floor_us':>9s} {'read MB':>9s} {'read_us':>9s}")
    for case in cases(args.quick, args.only):
        for proj, g in case["projs"].items():
            for name, v in g["variants"].items():
                print(f"{case['scenario']:22s} {case['x']:>5} {proj:7s} {g['n']:>5} x {g['k']:<5} "
                      f"{g['routed_rows']:>6} {g['active_experts']:>4} {name:13s} {v['checkpoint_bytes'] / 1e6:9.2f} "
                      f"{v['floor_us']:9.2f} {v['read_bytes'] / 1e6:9.2f} {v['floor_read_us']:9.2f}")


if __name__ == "__main__":
    main()
