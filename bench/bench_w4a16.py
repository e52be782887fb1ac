"""The benchmark suite of docs/shapes.md for chord's W4A16 MoE GEMM.

One command on a GPU machine (after scripts/install_wheel.sh: it runs through chord_kernels):
    python3 bench/bench_w4a16.py --out DIR [--quick]
    python3 bench/bench_w4a16.py --set generalization --out DIR [--quick]
The second runs the generalization set (other models' shapes, decode sizes) instead: each row's
time against its read floor and the config the resolver picked, no BF16 anchor (run_generalization);
with --peers also the peers on its indexed INT4 calls, rep by rep with ours (and DIR/peers.png).
    python3 bench/bench_w4a16.py --set formats --out DIR [--quick]
runs the formats set (bench/formats.py: the Qwen3-30B-A3B and EP8 shapes in group 32 / 128,
symmetric / zero-point, BF16 / FP16), the variants of a row rep by rep (run_formats).
    python3 bench/bench_w4a16.py [--set generalization] --peers marlin,humming --out DIR [--quick]
also times vLLM's Marlin MoE (scripts/peer-marlin.sh) and inclusionAI's Humming
(scripts/peer-wheels.sh) through bench/peers.py on the same weights and inputs, rep by rep with
ours, checked against the same reference.
Every row is checked against torch (BF16 dequantized weights, torch._grouped_mm, FP32
accumulation) before it is timed; ours, torch._grouped_mm BF16 and the byte/FLOP floor
are reported side by side from the same routing draw, activations and weights. Writes
DIR/bench.json and DIR/bench.png (and, where --peers timed a peer, DIR/peers.png: chord's time /
each peer's, bench/peers_chart.py) and prints a table. Exit code 1 if any check fails.
"""
import argparse
import json
import math
import os
import shlex
import signal
import statistics
import subprocess
import sys
import time

import torch

import chord_kernels as ck

sys.path.insert(0, os.path.dirname(__file__))
import generalization  # noqa: E402
import shapes  # noqa: E402

STREAM_BYTES_PER_S = 4.47e12   # docs/shapes.md, measured on this H200
BF16_FLOP_PER_S = 790e12
SEED = 2026

MODELS = {  # name: (the model's experts, gate_up N, K, down N, K of the split), from shapes/suite.json
    name: (shapes.model(split)["experts"],) + shapes.gemm(split)[1:]
    for name, split in (("kimi", "ep8"), ("tp8", "tp8"), ("qwen3", "qwen3"))
}


ARCH = "sm_90a"  # the tuning tables the indexed rows take their routing block from (H200)


def settle_clocks(seconds=1.0):
    """Runs BF16 GEMMs for about `seconds` before the first timed row, so that it does not
    start from an idle GPU (the first row of a process, EP8 decode T=20 gate_up, varied from
    169.8 to 192.9 us between runs of the same code while the rows after it repeated)."""
    x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(20):
            x @ x
        torch.cuda.synchronize()


def l2_flush_buffer():
    return torch.zeros(256 * 1024 * 1024, dtype=torch.uint8, device="cuda")


# The L2 is flushed by reading a 256 MiB buffer, so it holds clean lines when the timed call
# starts. Zeroing the buffer instead leaves ~50 MB of dirty lines whose write-back the next call
# pays in DRAM time: a copy-only stream of 132 MB reads 72% of the read floor after a zeroing
# flush and 90% after a reading one (lab/kernel_check/stream_sweep.cu). CHORD_BENCH_FLUSH=write
# zeroes it, as earlier results files were timed.
WRITE_FLUSH = os.environ.get("CHORD_BENCH_FLUSH", "read") == "write"


# Passes of the flush before each timed call. Beyond evicting the L2, the flush is GPU work
# queued ahead of the call: the host's work to launch the call (a peer's Python wrapper, its
# routing and checks) must be done before the GPU reaches the start event, or the events time
# an idle GPU waiting for the host. Two passes give the host about 150 us, the state of a server
# replaying CUDA Graphs (its host runs ahead); a spin kernel in the second pass's place idles the
# GPU before the call instead, and every candidate's larger calls then ran 1-3% slower.
# docs/benchmarking.md has the measurements. CHORD_BENCH_FLUSH_PASSES=1 times as results files
# whose meta has no flush_passes were timed.
FLUSH_PASSES = int(os.environ.get("CHORD_BENCH_FLUSH_PASSES", "2"))


def flush_l2(flush):
    for _ in range(FLUSH_PASSES):
        if WRITE_FLUSH:
            flush.zero_()
        else:
            flush.view(torch.int64).sum()


def time_interleaved_us(fns, flush, reps=100, warmup=10, late=None):
    """Median us of each function over `reps` calls, each after an L2 flush (flush_l2), timed
    with events; the functions' reps are interleaved (a, b, a, b, ...), so that all of them run
    at the same clock: heavy rows run under the power cap, where each function timed alone
    settles at its own clock (docs/benchmarking.md, --interleaved).
    late (a list, filled in place): per function, the fraction of its reps in which the GPU had
    already reached the start event when the host had queued the call and its end event. In
    those reps the GPU waited for the host inside the timed span, so the time includes host work
    (a call whose host path outlasts the flush); near 0, the times are the GPU's alone."""
    for _ in range(warmup):
        for fn in fns:
            fn()
    events = [[(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
              for _ in fns]
    reached = [0] * len(fns)
    for i in range(reps):
        for j, (fn, side) in enumerate(zip(fns, events)):
            start, end = side[i]
            flush_l2(flush)
            start.record()
            fn()
            end.record()
            if late is not None:  # after end.record(): the query's host time stays out of the span
                reached[j] += bool(start.query())
    torch.cuda.synchronize()
    medians = []
    for side in events:
        times = sorted(s.elapsed_time(e) * 1000.0 for s, e in side)
        medians.append(times[len(times) // 2])
    if late is not None:
        late[:] = [n / reps for n in reached]
    return medians


def time_us(fn, flush, reps=100, warmup=10):
    return time_interleaved_us([fn], flush, reps, warmup)[0]


class ExpertWeights:
    """Random INT4 g32 experts packed by chord (through `library`: None = this package's
    libchord), plus the BF16 dequantized copy; with --peers loaded (peers: name -> the loaded
    peer), the same codes and scales in Humming's and Marlin's layouts too (self.humming,
    self.marlin)."""

    def __init__(self, library, experts, n, k, gen, peers=None):
        codes = torch.randint(0, 16, (experts, n, k), dtype=torch.uint8, device="cuda", generator=gen)
        scales = (torch.randn(experts, n, k // 32, device="cuda", generator=gen) * 0.02).to(torch.bfloat16)
        self.packed = ck.pack_w4a16(codes, scales, library=library)
        self.humming = self.marlin = None
        self.peer_errors = {}  # peer name -> what its layout conversion raised (its rows report it)
        for name, layout in (("humming", "HummingMoE"), ("marlin", "MarlinMoE")):
            if peers and name in peers:
                import peers as peer_adapters
                try:
                    setattr(self, name, getattr(peer_adapters, layout)(peers[name], codes, scales))
                except Exception as e:  # noqa: BLE001 - reported on every row it would have run
                    self.peer_errors[name] = e
                    print(f"peer {name}: no layout for {experts} x {n} x {k}: {peer_error(e)}", flush=True)
        del codes
        self.bf16 = ck.dequantize(self.packed, library=library)  # [E, N, K], exact (code-8)*scale
        self.experts, self.n, self.k = experts, n, k
        torch.cuda.synchronize()

    def first_experts(self, experts):
        """The packed weight of the first `experts` experts: a prefix of both buffers (both
        are expert-major, docs/packed_layout.md)."""
        p = self.packed
        weight_bytes, scale_bytes = p.weight.numel() // self.experts, p.scales.numel() // self.experts
        return ck.W4A16Weight(p.weight[:experts * weight_bytes], p.scales[:experts * scale_bytes],
                              ck.expected_tag(experts, self.n, self.k))

    def bytes_for(self, active_experts):
        return active_experts * self.n * (self.k // 2 + 2 * self.k // 32)


NF4_TABLE = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
             -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
             0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
             0.7229568362236023, 1.0]


class NF4ExpertWeights:
    """A random double-quantized bitsandbytes NF4 QuantState packed by chord, plus the BF16
    logical weight computed here in torch the way dequantize_4bit does (FP32 absmax =
    code[q] * absmax2 + offset; FP32 product; one rounding), checked equal to chord's."""

    def __init__(self, library, experts, n, k, gen):
        blocks = experts * n * k // 64
        packed = torch.randint(0, 256, (experts * n * k // 2,), dtype=torch.uint8, device="cuda", generator=gen)
        absmax_q = torch.randint(150, 256, (blocks,), dtype=torch.uint8, device="cuda", generator=gen)
        absmax2 = torch.rand((blocks + 255) // 256, device="cuda", generator=gen) * 0.04 + 0.01
        code = torch.linspace(-1.0, 1.0, 256, device="cuda")
        offset = 0.03
        self.packed = ck.NF4Weights.from_quant_state(packed, absmax_q, (experts, n, k), nested_absmax=absmax2,
                                                     nested_code=code, offset=offset, library=library)
        absmax = code[absmax_q.long()] * absmax2.repeat_interleave(256)[:blocks]
        absmax = absmax + torch.tensor(offset, dtype=torch.float32, device="cuda")
        codes = torch.stack((packed >> 4, packed & 15), dim=1).reshape(-1).long()
        table = torch.tensor(NF4_TABLE, dtype=torch.float32, device="cuda")
        values = (table[codes].view(blocks, 64) * absmax.view(blocks, 1)).view(experts, n, k)
        self.bf16 = values.to(torch.bfloat16)
        self.dequantize_exact = bool(torch.equal(self.packed.dequantize(torch.bfloat16, library=library)
                                                 .view(torch.int16), self.bf16.view(torch.int16)))
        del values, codes, packed
        self.experts, self.n, self.k = experts, n, k
        torch.cuda.synchronize()

    def bytes_for(self, active_experts):
        return active_experts * self.n * (self.k // 2 + 4 * self.k // 64)


def grouped_mm(x, w_bf16, offsets):
    return torch._grouped_mm(x, w_bf16.transpose(1, 2), offs=offsets)


def skewed_topk(tokens, experts, top_k, gen):
    bias = torch.rand(experts, device="cuda", generator=gen) * 0.5  # mild skew: popular and empty experts
    scores = torch.rand(tokens, experts, device="cuda", generator=gen) + bias
    return scores.topk(top_k, dim=1).indices.to(torch.int32)


# --capacity: how long sorted_ids is past the padded routes. "tight": 2 blocks more (the
# rows' default); "vllm": vLLM's max_num_tokens_padded over the model's experts (all of them,
# as vLLM counts under EP), routes + experts x (block - 1), at most routes x block (the smaller
# one when there are fewer routes than experts; the peers' alignment counts this rank's experts
# and one group for the others'). The indexed GEMM launches one M tile per block_m slots of
# sorted_ids (the padded count is on the device), so the longer buffer adds CTAs that read
# num_tokens_padded and exit: it times the call as vLLM sizes it. Masked rows: max_m is twice
# the mean rows per group (tight) or the batched buffer vLLM gives its masked experts by default
# (vllm: max_num_tokens, its max_num_batched_tokens, 256 per dispatching rank unless set, x the
# EP ranks: MASKED_TOKENS_PER_RANK); the rows and inputs are the same either way. The masked
# grid follows the hint (tokens per expert) on the kernels that loop over tiles and covers
# max_m on the others (docs/kernels.md), so the longer buffer times what those CTAs cost.
CAPACITY = "tight"
MASKED_TOKENS_PER_RANK = 256  # vLLM's SchedulerConfig.DEFAULT_MAX_NUM_BATCHED_TOKENS_FOR_BATCHED_DP


def masked_capacity(tokens_per_expert, ranks):
    """max_m of a masked row for --capacity (see CAPACITY): never below the 2 t rows the row's
    groups can have."""
    rows = 2 * tokens_per_expert
    return max(MASKED_TOKENS_PER_RANK * ranks, rows) if CAPACITY == "vllm" else rows


def routing_capacity(routes, experts, block_size, padded, extra_blocks):
    """The length of sorted_ids for --capacity (see CAPACITY): never below `padded`."""
    if CAPACITY == "vllm":
        return min(routes * block_size, routes + experts * (block_size - 1))
    return padded + extra_blocks * block_size


def align_block_size(topk_ids, num_global, local_of_global, block_size, extra_blocks=2, model_experts=None):
    """vLLM's moe_align_block_size: segments padded to block_size with sentinel M*top_k,
    one expert id per block (-1 for experts not on this rank), over-allocated buffers
    (routing_capacity; model_experts: the model's expert count, num_global where not given)."""
    flat = topk_ids.flatten().long()
    sentinel = flat.numel()
    counts = torch.bincount(flat, minlength=num_global)
    padded = (counts + block_size - 1) // block_size * block_size
    order = torch.argsort(flat, stable=True)
    expert_sorted = flat[order]
    rank = torch.arange(flat.numel(), device="cuda") - (torch.cumsum(counts, 0) - counts)[expert_sorted]
    pos = (torch.cumsum(padded, 0) - padded)[expert_sorted] + rank
    total = int(padded.sum())
    capacity = routing_capacity(flat.numel(), model_experts or num_global, block_size, total, extra_blocks)
    sorted_ids = torch.full((capacity,), sentinel, dtype=torch.int32, device="cuda")
    sorted_ids[pos] = order.to(torch.int32)
    block_expert = torch.repeat_interleave(torch.arange(num_global, device="cuda"), padded // block_size)
    expert_ids = torch.full((-(-capacity // block_size),), -1, dtype=torch.int32, device="cuda")
    expert_ids[: block_expert.numel()] = local_of_global[block_expert]
    num_tokens_padded = torch.tensor([total], dtype=torch.int32, device="cuda")
    return sorted_ids, expert_ids, num_tokens_padded


def masked_activations(groups, max_m, k, tokens_per_expert, gen):
    """A masked call's activations [groups, max_m, k]: the 2 t rows a group can have (masked_rows)
    drawn whatever max_m is, so that both --capacity settings time the same inputs; rows past
    them are zero."""
    a = torch.zeros(groups, max_m, k, device="cuda", dtype=torch.bfloat16)
    a[:, :2 * tokens_per_expert] = torch.randn(groups, 2 * tokens_per_expert, k, device="cuda",
                                               generator=gen).to(torch.bfloat16)
    return a


def masked_rows(groups, tokens_per_expert, gen):
    """masked_m of the masked rows: uniform in [t / 2, 1.5 t] per group (ragged), int32 on the
    device; max_m = 2 t holds them all."""
    return torch.randint(tokens_per_expert // 2, tokens_per_expert + tokens_per_expert // 2 + 1, (groups,),
                         device="cuda", generator=gen, dtype=torch.int32)


def grouped_rows(topk_ids, local_of_global, num_local):
    """Valid routes (on local experts) sorted by local expert: (route ids, offsets, active)."""
    flat = local_of_global[topk_ids.flatten().long()]
    valid = torch.nonzero(flat >= 0).flatten()
    local = flat[valid]
    order = torch.argsort(local, stable=True)
    routes = valid[order]
    counts = torch.bincount(local, minlength=num_local)
    offsets = torch.cumsum(counts, 0).to(torch.int32)
    return routes, offsets, int((counts > 0).sum())


def routing_block(library, arch, experts, n, k, routed_rows):
    """The moe_align_block_size block our tuning table exports (as vLLM's Humming backend reads
    it: top_k = 1, M = routed rows) for this shape and row count, or None."""
    try:
        text = ck.tuning_table_json(arch, experts, n, k, 1, library=library)
    except ValueError:  # builds that predate the empty answer refuse a shape without a table
        return None
    for first, last, config in json.loads(text) if text else []:
        if first <= routed_rows <= last:
            return int(config["block_size_m"])
    return None


def indexed_routing(library, tokens, num_global, top_k, local_of_global, weights_up, block_size, gen,
                    fixed_block=False, with_topk_ids=False, model_experts=None):
    """A skewed top-k draw aligned as vLLM would for our kernels: the routing block our
    exported tuning table gives the shape (both projections use it), `block_size` where no table
    holds it or with fixed_block. Returns (routes, offsets, active, block, sorted_ids, expert_ids,
    num_tokens_padded[, topk_ids with with_topk_ids]); routes / offsets / active as grouped_rows gives them."""
    topk_ids = skewed_topk(tokens, num_global, top_k, gen)
    routes, offsets, active = grouped_rows(topk_ids, local_of_global, weights_up.experts)
    if not fixed_block:
        block_size = routing_block(library, ARCH, weights_up.experts, weights_up.n, weights_up.k,
                                   routes.numel()) or block_size
    sorted_ids, expert_ids, ntp = align_block_size(topk_ids, num_global, local_of_global, block_size,
                                                   model_experts=model_experts)
    if with_topk_ids:  # the draw itself too (a peer aligns it at its own block)
        return routes, offsets, active, block_size, sorted_ids, expert_ids, ntp, topk_ids
    return routes, offsets, active, block_size, sorted_ids, expert_ids, ntp


def peer_alignment(topk_ids, local_of_global, experts, block_size):
    """moe_align_block_size for a peer, over this rank's experts only: routes on other ranks'
    experts go to one last group (expert id -1) that num_tokens_padded leaves out, so no block in
    range has expert id -1 (vLLM drops them: ignore_invalid_experts)."""
    local = local_of_global[topk_ids.long()]
    local = torch.where(local >= 0, local, torch.full_like(local, experts))
    with_other = torch.cat((torch.arange(experts, device="cuda"), torch.tensor([-1], device="cuda"))).to(torch.int32)
    sorted_ids, expert_ids, _ = align_block_size(local, experts + 1, with_other, block_size)
    counts = torch.bincount(local.flatten().long(), minlength=experts + 1)[:experts]
    total = int(((counts + block_size - 1) // block_size * block_size).sum())
    return sorted_ids, expert_ids, torch.tensor([total], dtype=torch.int32, device="cuda")


def peer_error(e):
    """A peer's exception as its row's `<peer>_check`: "ERROR: <type>: <first line>"."""
    first = (str(e).strip().splitlines() or [""])[0][:300]
    return f"ERROR: {type(e).__name__}: {first}"


def has_peer(w, name):
    """Whether the weights `w` were converted for peer `name` (successfully or not)."""
    return getattr(w, name, None) is not None or name in getattr(w, "peer_errors", {})


def peer_layout(w, name):
    """w's layout for peer `name` (ExpertWeights.humming / .marlin); raises what its conversion
    raised, so that the row reports it (try_peers)."""
    error = getattr(w, "peer_errors", {}).get(name)
    if error is not None:
        raise error
    return getattr(w, name)


def try_peers(names, peer_calls):
    """The --peers peers on one row, before it is timed. peer_calls: name -> a function giving
    (function to time, check, extra row fields) of that peer on the row, None where the peer does
    not serve the row, or a string saying why it does not. Each served peer is built, run once and
    checked against the row's reference; one that raises is reported (`<peer>_check` "ERROR: ..."),
    never dropped. Returns (row fields, [(name, function to time)], failed: checks failed or
    raised); the fields of a timed peer get their times from peer_times."""
    fields, timed, failed = {}, [], 0
    for name in names:
        make = (peer_calls or {}).get(name)
        if make is None or isinstance(make, str):
            fields.update({f"{name}_us": None, f"vs_{name}": None, f"{name}_check": "not run"})
            if make:
                fields[f"{name}_note"] = make
            continue
        try:
            peer_fn, peer_check, extra = make()
            t0 = time.perf_counter()
            peer_fn()
            torch.cuda.synchronize()
            first_call_ms = (time.perf_counter() - t0) * 1000.0
            peer_ok, peer_err = peer_check()
        except Exception as e:  # noqa: BLE001 - a failing peer is a result
            fields.update({f"{name}_us": None, f"vs_{name}": None, f"{name}_check": peer_error(e)})
            failed += 1
            continue
        failed += not peer_ok
        fields.update({f"{name}_check": "ok" if peer_ok else "FAIL", f"{name}_rel_error": peer_err,
                       f"{name}_first_call_ms": round(first_call_ms, 1),
                       **{f"{name}_{k}": v for k, v in extra.items()}})
        timed.append((name, peer_fn))
    return fields, timed, failed


def peer_times(fields, timed, times, ours, late=None):
    """Sets `<peer>_us` and `vs_<peer>` (peer time / ours) of try_peers' timed peers from their
    times (in the order of `timed`), and `<peer>_host_late` from late (time_interleaved_us's
    fractions, same order) where given."""
    for j, ((name, _), us) in enumerate(zip(timed, times)):
        fields.update({f"{name}_us": round(us, 2), f"vs_{name}": round(us / ours, 3)})
        if late:
            fields[f"{name}_host_late"] = round(late[j], 2)


def peer_text(row, names):
    """The peers' part of a row's printed line."""
    text = ""
    for name in names:
        if row.get(f"{name}_us") is not None:
            text += f"{name}={row[name + '_us']:9.1f}us ({row['vs_' + name]:.3f}x, {row[name + '_check']}) "
        elif str(row.get(f"{name}_check", "")).startswith("ERROR"):
            text += f"{name}={row[name + '_check']} "
    return text


def humming_indexed(w, a, out, topk_ids, local_of_global, routed, kernel_top_k, check):
    """The humming peer's call on an indexed row (a function for try_peers), None without it:
    Humming as vLLM runs it, its own routing block for this row count, the draw realigned at it
    over this rank's experts (peer_alignment); its output checked by check(out)."""
    if not has_peer(w, "humming"):
        return None

    def make():
        humming = peer_layout(w, "humming")
        block = humming.block_size(routed)
        ids, experts_of_blocks, padded = peer_alignment(topk_ids, local_of_global, w.experts, block)
        peer_out = torch.full_like(out, float("nan"))
        return (lambda: humming.indexed(a, peer_out, ids, experts_of_blocks, padded, kernel_top_k, routed),
                lambda: check(peer_out), dict(block=block))
    return make


def marlin_indexed(w, a, out, topk_ids, tokens, top_k, num_global, local_of_global, kernel_top_k, down, check):
    """The marlin peer's call on an indexed row (a function for try_peers), None without it: as
    vLLM's fused_marlin_moe runs it, its block rule, its own alignment (the expert map under EP),
    router weights multiplied in the down GEMM (all ones here: the reference has none)."""
    if not has_peer(w, "marlin"):
        return None

    def make():
        import peers as peer_adapters
        marlin = peer_layout(w, "marlin")
        block = peer_adapters.marlin_block_size(tokens, top_k, w.experts, num_global)
        expert_map = None if num_global == w.experts else local_of_global
        ids, experts_of_blocks, total = marlin.align(topk_ids, block, num_global, expert_map)
        ones = torch.ones(tokens, top_k, dtype=torch.float32, device="cuda")
        peer_out = torch.full_like(out, float("nan"))
        return (lambda: marlin.indexed(a, peer_out, ids, experts_of_blocks, total, ones, block, kernel_top_k,
                                       down),
                lambda: check(peer_out), dict(block=block))
    return make


def rel_error(out, ref):
    return (out.float() - ref.float()).norm().item() / max(ref.float().norm().item(), 1e-30)


class Suite:
    def __init__(self, library, quick, only=None, fixed_blocks=False, interleaved=False, against=None,
                 peers=None):
        # library: ours (None = this package's libchord, or --library's); against: another
        # build's Library (ck.load_library), timed rep by rep with ours and the anchor; peers:
        # name -> bench/peers.PeerModules (--peers), timed rep by rep with ours on the rows they serve.
        self.library, self.quick, self.only, self.fixed_blocks = library, quick, only, fixed_blocks
        self.interleaved = interleaved  # time ours and the anchor rep by rep (time_interleaved_us)
        self.against = against
        self.peers = peers or {}
        self.block_size = None  # the indexed scenario's routing block (recorded in its rows)
        self.flush = l2_flush_buffer()
        self.rows = []
        self.failures = 0

    def record(self, scenario, x, proj, routed_rows, weights, active, flop, call, ref_fn, check, peer_calls=None):
        """call(library) -> the timed function through that build; check() -> (ok, error) of the
        output it wrote. Times ours and the grouped_mm anchor (and the --against build's call,
        checked too, all three rep by rep); appends a row. peer_calls: the --peers peers' calls
        on this row (try_peers): each is run once, checked, and timed rep by rep with the others
        (a failed check, or a peer that raised, is counted apart: count_peer_failures)."""
        if not generalization.selected(scenario, self.only):
            return
        ours_fn = call(self.library)
        t0 = time.perf_counter()
        ours_fn()
        torch.cuda.synchronize()
        first_call_ms = (time.perf_counter() - t0) * 1000.0
        ran_kernel = last_kernel(self.library)  # before the --against build's call
        ok, err = check()
        timed, against = [ours_fn], {}
        if self.against is not None:
            against_fn = call(self.against)
            against_fn()
            against_ok, against_err = check()
            ok = ok and against_ok
            timed.append(against_fn)
        if not ok:
            self.failures += 1
        peer_rows, peer_timed, _ = try_peers(self.peers, peer_calls)
        first_peer = len(timed)
        timed += [fn for _, fn in peer_timed]
        late = []  # with peers: how often each call was queued after the GPU reached its start
        if ref_fn is not None and (self.interleaved or len(timed) > 1):
            times = time_interleaved_us(timed + [ref_fn], self.flush, late=late if peer_timed else None)
            anchor = times[-1]
        else:
            times = [time_us(fn, self.flush) for fn in timed]
            anchor = time_us(ref_fn, self.flush) if ref_fn is not None else float("nan")
        ours = times[0]
        peer_times(peer_rows, peer_timed, times[first_peer:first_peer + len(peer_timed)], ours,
                   late[first_peer:first_peer + len(peer_timed)])
        if late:
            peer_rows["host_late"] = round(late[0], 2)
        if self.against is not None:
            against = dict(against_us=round(times[1], 2), vs_against=round(times[1] / ours, 3),
                           against_check="ok" if against_ok else "FAIL", against_rel_error=against_err)
        wbytes = weights.bytes_for(active)
        floor = max(wbytes / STREAM_BYTES_PER_S, flop / BF16_FLOP_PER_S) * 1e6
        row = dict(scenario=scenario, x=x, proj=proj, routed_rows=routed_rows, active_experts=active,
                   chord_us=round(ours, 2), grouped_mm_bf16_us=round(anchor, 2), floor_us=round(floor, 2),
                   tflops=round(flop / ours / 1e6, 1), weight_gbps=round(wbytes / ours / 1e3, 1),
                   vs_grouped_mm=round(anchor / ours, 3), vs_floor=round(floor / ours, 3),
                   check="ok" if ok else "FAIL", rel_error=err, first_call_ms=round(first_call_ms, 1),
                   routing_block=self.block_size, ran_kernel=ran_kernel, **against, **peer_rows)
        self.rows.append(row)
        other = f"against={against['against_us']:9.1f}us ({against['vs_against']:.3f}x) " if against else ""
        other += peer_text(row, self.peers)
        print(f"{scenario:22s} {str(x):>6s} {proj:8s} rows={routed_rows:6d} chord={ours:9.1f}us {other}"
              f"bf16_gmm={anchor:9.1f}us floor={floor:8.1f}us {row['tflops']:6.1f}TF "
              f"{row['weight_gbps']:7.1f}GB/s {row['check']} err={err:.2e}", flush=True)

    # -- indexed (vLLM routing) -------------------------------------------------------------
    def indexed(self, scenario, x, weights_up, weights_down, tokens, num_global, top_k, local_of_global,
                block_size, gen, model_experts=None):
        routes, offsets, active, block_size, sorted_ids, expert_ids, ntp, topk_ids = indexed_routing(
            self.library, tokens, num_global, top_k, local_of_global, weights_up, block_size, gen,
            self.fixed_blocks, with_topk_ids=True, model_experts=model_experts)
        routed = routes.numel()
        self.block_size = block_size
        for proj, w, a_rows, kernel_top_k in (("gate_up", weights_up, tokens, top_k),
                                              ("down", weights_down, tokens * top_k, 1)):
            a = torch.randn(a_rows, w.k, device="cuda", generator=gen).to(torch.bfloat16)
            out = torch.full((tokens * top_k, w.n), float("nan"), dtype=torch.bfloat16, device="cuda")
            in_rows = routes // kernel_top_k
            x_grouped = a[in_rows]

            def call(library):  # used within this iteration (record), like anchor and check
                return lambda: ck.indexed(a, w.packed, sorted_ids, expert_ids, ntp, kernel_top_k, out,
                                          block_size=block_size, library=library)

            def anchor():
                grouped_mm(x_grouped, w.bf16, offsets)

            def check(out=out):
                ref = grouped_mm(x_grouped, w.bf16, offsets)
                got = out[routes]
                untouched = torch.ones(tokens * top_k, dtype=torch.bool, device="cuda")
                untouched[routes] = False
                clean = bool(torch.isnan(out[untouched]).all()) if untouched.any() else True
                err = rel_error(got, ref) if routed else 0.0
                return clean and err < 1e-2 and not torch.isnan(got).any().item(), err

            self.record(scenario, x, proj, routed, w, active, 2.0 * routed * w.n * w.k, call, anchor, check,
                        dict(humming=humming_indexed(w, a, out, topk_ids, local_of_global, routed, kernel_top_k,
                                                     check),
                             marlin=marlin_indexed(w, a, out, topk_ids, tokens, top_k, num_global, local_of_global,
                                                   kernel_top_k, proj == "down", check)))
        self.block_size = None

    # -- grouped contiguous ------------------------------------------------------------------
    def contiguous(self, scenario, x, w, rows_per_expert, gen):
        e = w.experts
        m = e * rows_per_expert
        a = torch.randn(m, w.k, device="cuda", generator=gen).to(torch.bfloat16)
        m_indices = torch.arange(e, device="cuda", dtype=torch.int32).repeat_interleave(rows_per_expert)
        offsets = torch.cumsum(torch.full((e,), rows_per_expert, device="cuda"), 0).to(torch.int32)
        out = torch.full((m, w.n), float("nan"), dtype=torch.bfloat16, device="cuda")

        def check(out=out):
            err = rel_error(out, grouped_mm(a, w.bf16, offsets))
            return err < 1e-2 and not torch.isnan(out).any().item(), err

        self.record(scenario, x, self.proj, m, w, e, 2.0 * m * w.n * w.k,
                    lambda library: lambda: ck.contiguous(a, w.packed, m_indices, out, library=library),
                    lambda: grouped_mm(a, w.bf16, offsets), check,
                    dict(humming=self.humming_contiguous(w, a, out, offsets, check)))

    # -- grouped masked ----------------------------------------------------------------------
    def masked(self, scenario, x, w, tokens_per_expert, ranks, gen):
        e = w.experts
        max_m = masked_capacity(tokens_per_expert, ranks)
        masked_m = masked_rows(e, tokens_per_expert, gen)
        a = masked_activations(e, max_m, w.k, tokens_per_expert, gen)
        out = torch.full((e, max_m, w.n), float("nan"), dtype=torch.bfloat16, device="cuda")
        valid = torch.arange(max_m, device="cuda")[None, :] < masked_m[:, None]
        x_grouped = a[valid]
        offsets = torch.cumsum(masked_m, 0).to(torch.int32)
        routed = int(masked_m.sum())

        def check():
            err = rel_error(out[valid], grouped_mm(x_grouped, w.bf16, offsets))
            clean = bool(torch.isnan(out[~valid]).all()) if (~valid).any() else True
            return clean and err < 1e-2 and not torch.isnan(out[valid]).any().item(), err

        self.record(scenario, x, self.proj, routed, w, int((masked_m > 0).sum()), 2.0 * routed * w.n * w.k,
                    lambda library: lambda: ck.masked(a, w.packed, masked_m, tokens_per_expert, out,
                                                      library=library),
                    lambda: grouped_mm(x_grouped, w.bf16, offsets), check)

    # -- offsets (INT4, or NF4 whose dequantize must also have matched bitsandbytes' rule) ----
    def offsets_mode(self, scenario, x, w, tokens, top_k, gen, nf4=False):
        e = w.experts
        topk_ids = skewed_topk(tokens, e, top_k, gen)
        identity = torch.arange(e, dtype=torch.int32, device="cuda")
        routes, offsets, active = grouped_rows(topk_ids, identity, e)
        s_rows = routes.numel()
        a = torch.randn(s_rows, w.k, device="cuda", generator=gen).to(torch.bfloat16)
        out = torch.full((s_rows, w.n), float("nan"), dtype=torch.bfloat16, device="cuda")
        launch = ck.nf4_grouped_mm if nf4 else ck.grouped_mm
        weights_exact = w.dequantize_exact if nf4 else True

        def check(out=out):
            err = rel_error(out, grouped_mm(a, w.bf16, offsets))
            return weights_exact and err < 1e-2 and not torch.isnan(out).any().item(), err

        self.record(scenario, x, self.proj, s_rows, w, active, 2.0 * s_rows * w.n * w.k,
                    lambda library: lambda: launch(a, offsets, w.packed, out, library=library),
                    lambda: grouped_mm(a, w.bf16, offsets), check,
                    dict(humming=None if nf4 else self.humming_contiguous(w, a, out, offsets, check),
                         marlin=None if nf4 else self.marlin_offsets(w, a, out, routes, topk_ids, tokens, top_k,
                                                                     check)))

    @staticmethod
    def marlin_offsets(w, a, out, routes, topk_ids, tokens, top_k, check):
        """The marlin peer on an offsets row, or None without it: the row's routing draw (topk_ids,
        every expert local) as vLLM's fused_marlin_moe runs its second GEMM, one input row per route
        (route = token * top_k + k) with top_k 1: its block rule for (tokens, top_k),
        moe_align_block_size over the draw, no router weights (chord's offsets call has none). The
        rows of `a` (sorted by expert: row i is route routes[i]) are put in route order before and
        the output taken back to chord's order for the check (neither is timed)."""
        if not has_peer(w, "marlin"):
            return None

        def make():
            import peers as peer_adapters
            marlin = peer_layout(w, "marlin")
            block = peer_adapters.marlin_block_size(tokens, top_k, w.experts)
            ids, experts_of_blocks, total = marlin.align(topk_ids.reshape(-1, 1), block, w.experts)
            a_routes = torch.empty_like(a)
            a_routes[routes] = a
            out_routes = torch.full_like(out, float("nan"))
            ones = torch.ones(routes.numel(), 1, dtype=torch.float32, device=a.device)
            return (lambda: marlin.indexed(a_routes, out_routes, ids, experts_of_blocks, total, ones, block, 1,
                                           False),
                    lambda: check(out_routes[routes]), dict(block=block))
        return make

    @staticmethod
    def humming_contiguous(w, a, out, offsets, check):
        """The humming peer's call on rows sorted by expert (its grouped_contiguous GEMM, the
        gemm type vLLM uses under expert parallelism), or None without it."""
        if not has_peer(w, "humming"):
            return None

        def make():
            import peers as peer_adapters
            humming = peer_layout(w, "humming")
            layout = peer_adapters.expert_layout_from_offsets(offsets)
            peer_out = torch.full_like(out, float("nan"))
            rows = a.size(0)
            return lambda: humming.contiguous(a, peer_out, layout, rows), lambda: check(peer_out), {}
        return make


def run_kimi(suite, chord, quick, gen):
    # Kimi EP8: 48 local experts of 384 (EP16/EP32 use the first 24/12 of them).
    e_all, n_up, k_up, n_down, k_down = MODELS["kimi"]
    e_ep8 = shapes.SPLITS["ep8"]["experts_local"]
    up = ExpertWeights(chord, e_ep8, n_up, k_up, gen, suite.peers)
    down = ExpertWeights(chord, e_ep8, n_down, k_down, gen, suite.peers)
    local_ep8 = torch.where(torch.arange(e_all, device="cuda") < e_ep8, torch.arange(e_all, device="cuda"),
                            torch.full((e_all,), -1, device="cuda")).to(torch.int32)
    local_only = torch.arange(e_ep8, dtype=torch.int32, device="cuda")
    subsets = {}
    for ep in ("EP8", "EP16", "EP32"):
        experts = shapes.SPLITS[ep.lower()]["experts_local"]
        if not shapes.sweep(f"masked {ep}", quick) and not shapes.sweep(f"contiguous {ep}", quick):
            continue
        subset = [ExpertWeights.__new__(ExpertWeights) for _ in range(2)]
        for sub, full in zip(subset, (up, down)):
            sub.__dict__.update(full.__dict__)
            sub.packed = full.first_experts(experts)
            sub.experts = experts
            sub.bf16 = full.bf16[:experts]
            sub.humming = sub.marlin = None  # marlin serves the indexed and offsets rows only
            sub.peer_errors = {name: e for name, e in full.peer_errors.items() if name == "humming"}
            if full.humming is not None:
                try:  # Humming's layer config for fewer experts, over the same tensors' slices
                    sub.humming = full.humming.first_experts(experts)
                except Exception as e:  # noqa: BLE001 - the rows still run; the peer's columns say ERROR
                    sub.peer_errors["humming"] = e
                    print(f"humming: no {ep} subset ({peer_error(e)})", flush=True)
        subsets[ep] = subset
    # Decode-sized rows (indexed decode, masked) run before the prefill-sized ones: a row of
    # 1-3 ms repeated 110 times leaves the GPU at its power cap (1500 MHz against 1980 idle),
    # which slowed the instruction-bound decode rows timed right after it by up to 25% (masked
    # EP8 8 tokens/expert down: 122 us alone, 150-184 us after the contiguous rows).
    for t in shapes.sweep("indexed EP8 decode", quick):
        # decode: all top_k x T routes of this GPU's tokens land on its local experts
        over, top_k, block = shapes.routing("indexed EP8 decode")
        suite.indexed("indexed EP8 decode", t, up, down, t, over, top_k, local_only, block, gen, model_experts=e_all)
    for ep, subset in subsets.items():
        for suite.proj, w in (("gate_up", subset[0]), ("down", subset[1])):
            for t in shapes.sweep(f"masked {ep}", quick):
                suite.masked(f"masked {ep}", t, w, t, int(ep[2:]), gen)
    for t in shapes.sweep("indexed EP8 prefill", quick):
        over, top_k, block = shapes.routing("indexed EP8 prefill")
        suite.indexed("indexed EP8 prefill", t, up, down, t, over, top_k, local_ep8, block, gen, model_experts=e_all)
    for ep, subset in subsets.items():
        for suite.proj, w in (("gate_up", subset[0]), ("down", subset[1])):
            for r in shapes.sweep(f"contiguous {ep}", quick):
                suite.contiguous(f"contiguous {ep}", r, w, r, gen)
    del up, down, subsets
    torch.cuda.empty_cache()


def run_tp8(suite, chord, quick, gen):
    e_tp, n_up, k_up, n_down, k_down = MODELS["tp8"]
    up = ExpertWeights(chord, e_tp, n_up, k_up, gen, suite.peers)
    down = ExpertWeights(chord, e_tp, n_down, k_down, gen, suite.peers)
    all_local = torch.arange(e_tp, dtype=torch.int32, device="cuda")
    for t in shapes.sweep("indexed TP8", quick):
        over, top_k, block = shapes.routing("indexed TP8")
        suite.indexed("indexed TP8", t, up, down, t, over, top_k, all_local, block, gen)
    del up, down
    torch.cuda.empty_cache()


def generalization_weights(library, call, gen, peers=None):
    """The weights of a call's projection; INT4 ones also in the layouts of `peers` (name -> the
    loaded --peers peer), from the same codes and scales (the draw from `gen` is the same)."""
    if call["weight"] == "nf4":
        return NF4ExpertWeights(library, call["experts"], call["n"], call["k"], gen)
    return ExpertWeights(library, call["experts"], call["n"], call["k"], gen, peers)


def generalization_call(library, call, w, gen, with_peers=False, against=None):
    """(timed function, check) of one call of bench/generalization.py on the device: the routing
    it drew, fresh activations, an output filled with NaN (rows the call must not write stay NaN).
    with_peers: also the --peers calls on the same routing, activations and weights (name -> a
    function for try_peers, None where the peer does not serve the call: masked and offsets).
    against (--against: another build's library): also "against", a function for try_peers giving
    the same call through that library, into an output of its own, checked the same way. With
    either, returns (function, check, {name: function for try_peers})."""
    e, k, n = call["experts"], call["k"], call["n"]
    identity = torch.arange(e, dtype=torch.int32, device="cuda")

    def result(launch, out, check, peers=None):
        """(fn, check[, made]): launch(library, out) -> the call into `out`; check(out)."""
        fn = lambda: launch(library, out)  # noqa: E731
        if not with_peers and against is None:
            return fn, lambda: check(out)
        made = dict(peers or {}) if with_peers else {}
        if against is not None:
            def make_against():
                own = torch.full_like(out, float("nan"))
                return (lambda: launch(against, own)), (lambda: check(own)), {}
            made["against"] = make_against
        return fn, lambda: check(out), made

    if call["mode"] == "masked":
        masked_m = torch.tensor(call["masked_m"], dtype=torch.int32, device="cuda")
        max_m = call["max_m"]
        a = masked_activations(e, max_m, k, call["x"], gen)
        out = torch.full((e, max_m, n), float("nan"), dtype=torch.bfloat16, device="cuda")
        valid = torch.arange(max_m, device="cuda")[None, :] < masked_m[:, None]
        offsets = torch.cumsum(masked_m, 0).to(torch.int32)

        def check(out):
            err = rel_error(out[valid], grouped_mm(a[valid], w.bf16, offsets))
            clean = bool(torch.isnan(out[~valid]).all()) if (~valid).any() else True
            return clean and err < 1e-2 and not torch.isnan(out[valid]).any().item(), err

        return result(lambda lib, o: ck.masked(a, w.packed, masked_m, call["expected_m"], o, library=lib), out, check)
    topk_ids = torch.tensor(call["topk_ids"], dtype=torch.int32, device="cuda")
    routes, offsets, _ = grouped_rows(topk_ids, identity, e)
    if call["mode"] == "offsets":
        a = torch.randn(routes.numel(), k, device="cuda", generator=gen).to(torch.bfloat16)
        out = torch.full((routes.numel(), n), float("nan"), dtype=torch.bfloat16, device="cuda")
        grouped = ck.nf4_grouped_mm if call["weight"] == "nf4" else ck.grouped_mm
        exact = w.dequantize_exact if call["weight"] == "nf4" else True

        def check(out):
            err = rel_error(out, grouped_mm(a, w.bf16, offsets))
            return exact and err < 1e-2 and not torch.isnan(out).any().item(), err

        return result(lambda lib, o: grouped(a, offsets, w.packed, o, library=lib), out, check)
    block, top_k = call["block_size"], call["kernel_top_k"]
    sorted_ids, expert_ids, ntp = align_block_size(topk_ids, e, identity, block, extra_blocks=2,
                                                   model_experts=call.get("model_experts"))
    routes_all = topk_ids.numel()
    a = torch.randn(call["a_rows"], k, device="cuda", generator=gen).to(torch.bfloat16)
    out = torch.full((routes_all, n), float("nan"), dtype=torch.bfloat16, device="cuda")

    def check(out=out):
        ref = grouped_mm(a[routes // top_k], w.bf16, offsets)
        got = out[routes]
        err = rel_error(got, ref)
        return err < 1e-2 and not torch.isnan(got).any().item(), err

    def launch(lib, o):
        return ck.indexed(a, w.packed, sorted_ids, expert_ids, ntp, top_k, o, block_size=block, library=lib)

    # decode: every route lands on this GPU's experts (routed over them: global = local)
    peers = dict(
        humming=humming_indexed(w, a, out, topk_ids, identity, routes.numel(), top_k, check),
        marlin=marlin_indexed(w, a, out, topk_ids, call["tokens"], call["top_k"], e, identity, top_k,
                              call["proj"] == "down", check)) if with_peers else None
    return result(launch, out, check, peers)


def last_kernel(library=None):
    """The kernel that served this thread's last chord call (ck.last_w4a16_kernel): the decode
    tile search's choice where it ran one; None from a build without the entry point (the
    binding raises NotImplementedError) or a chord_kernels without the function."""
    try:
        return ck.last_w4a16_kernel(library=library)
    except (NotImplementedError, AttributeError):
        return None


def generalization_row(call, fn, check, timer, peer_names=(), peer_calls=None, library=None):
    """One row of the set: the call run once (its first call timed: JIT compile included) and
    checked, the --peers peers on it (try_peers: each run once and checked), then all of them
    timed rep by rep by timer(functions, late) -> us each (one clock; late: a list the timer may
    fill, as time_interleaved_us does); prints the row's line. Returns (row, ok, peers failed);
    with peer_names the row ends with the peers' fields (<peer>_us, vs_<peer>, <peer>_check,
    <peer>_host_late, ...: 'not run' where peer_calls has no call for the peer) and, where a peer
    was timed, chord's `host_late`."""
    t1 = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    first_call_ms = (time.perf_counter() - t1) * 1000.0
    ran_kernel = last_kernel(library)
    ok, err = check()
    fields, timed, peers_failed = try_peers(peer_names, peer_calls)
    late = []
    times = timer([fn] + [peer_fn for _, peer_fn in timed], late if timed else None)
    us = times[0]
    peer_times(fields, timed, times[1:], us, late[1:])
    if late:
        fields["host_late"] = round(late[0], 2)
    config = call["config"]
    row = dict(model=call["model"], split=call["split"], scenario=call["scenario"], mode=call["mode"],
               weight=call["weight"], draw=call["draw"], x=call["x"], proj=call["proj"], n=call["n"],
               k=call["k"], experts=call["experts"], routed_rows=call["routed_rows"],
               active_experts=call["active_experts"], config=generalization.config_label(config),
               config_source=config.get("source"), kernel=config.get("kernel"), ran_kernel=ran_kernel,
               chord_us=round(us, 2),
               floor_us=round(call["floor_us"], 2), floor_bytes=call["bytes"],
               pct_floor=round(100.0 * call["floor_us"] / us, 1), check="ok" if ok else "FAIL",
               rel_error=err, first_call_ms=round(first_call_ms, 1), **fields)
    print(f"{row['scenario']:28s} {row['x']:>3} {row['proj']:7s} rows={row['routed_rows']:4d} "
          f"experts={row['active_experts']:3d} {us:8.1f}us floor={row['floor_us']:7.1f}us "
          f"{row['pct_floor']:5.1f}% {row['check']} {row['config']} [{row['config_source']}]"
          + (" " + peer_text(row, peer_names) if peer_names else ""), flush=True)
    return row, ok, peers_failed


def run_generalization(args, loaded_peers=None, rows=None):
    """The generalization set: every call of bench/generalization.py (its routing drawn there,
    its config asked of the installed wheel's `chord config` before any GPU work), checked
    against torch, then timed (median of --reps after warm-up, L2 flushed) against its read
    floor. One split's weights are held at a time. loaded_peers (--peers): name -> the loaded
    peer, run on the calls it serves (generalization.peer_note: the indexed INT4 calls, Marlin
    where vLLM would run it on the layer) on the same weights, routing and activations, checked
    against the same reference and timed rep by rep with ours; each split's weights are
    converted for a peer once, if some call of the split runs it. rows: the list the rows are
    appended to (a new one by default)."""
    import itertools
    chord = ck.load_library(args.library) if args.library else None
    against = ck.load_library(args.against) if args.against else None
    loaded_peers = loaded_peers or {}
    # --against rides along as one more peer (try_peers): against_us, vs_against (its time /
    # ours: above 1 this build is faster), against_check; its failed checks count as failures.
    names = list(loaded_peers) + (["against"] if against is not None else [])
    calls = generalization.calls(quick=row_values(args), only=args.only, fixed_blocks=args.fixed_blocks,
                                 masked_max_m=masked_capacity)
    t0 = time.perf_counter()
    generalization.resolve_configs(calls)
    print(f"{len(calls)} calls; configs from `chord config` in {time.perf_counter() - t0:.1f} s", flush=True)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(SEED)
    flush = l2_flush_buffer()
    settle_clocks()
    rows, failures = [] if rows is None else rows, 0
    timer = lambda fns, late=None: time_interleaved_us(fns, flush, reps=args.reps, late=late)  # noqa: E731
    for split, group in itertools.groupby(calls, key=lambda c: c["split"]):
        group = list(group)
        weights = {}
        for call in group:
            key = (call["proj"], call["weight"])
            if key not in weights:  # converted for the peers that some call of this key runs
                serving = {name: peer for name, peer in loaded_peers.items()
                           if any(generalization.peer_note(c, name) is None for c in group
                                  if (c["proj"], c["weight"]) == key)}
                weights[key] = generalization_weights(chord, call, gen, serving)
            if not names:
                fn, check = generalization_call(chord, call, weights[key], gen)
                peer_calls = None
            else:
                fn, check, made = generalization_call(chord, call, weights[key], gen, with_peers=bool(loaded_peers),
                                                      against=against)
                notes = {name: generalization.peer_note(call, name) for name in loaded_peers}
                peer_calls = {name: made.get(name) if notes[name] is None else notes[name] for name in loaded_peers}
                if against is not None:
                    peer_calls["against"] = made["against"]
            row, ok, _ = generalization_row(call, fn, check, timer, names, peer_calls, library=chord)
            failures += (not ok) + (against is not None and row["against_check"] != "ok")
            rows.append(row)
        del weights, fn, check
        torch.cuda.empty_cache()
    return rows, failures


class FormatWeights:
    """One projection's experts in every variant of bench/formats.py, from one draw of codes:
    group-32 and group-128 scales N(0, 0.02), zero points uniform in 0..15, each variant packed by
    pack_w4a16 in its dtype. `logical[name]` is the variant's weight computed here in torch,
    T((code - zero) * scale) rounded once (zero 8 when symmetric), checked bit for bit against
    chord's dequantize of the packed weight (`dequantize_exact`) and against the variant's
    packed byte count (`read_bytes_match`: formats.expert_bytes(..., "chord"))."""

    DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16}

    def __init__(self, library, experts, n, k, gen):
        import formats
        codes = torch.randint(0, 16, (experts, n, k), dtype=torch.uint8, device="cuda", generator=gen)
        scales = {g: torch.randn(experts, n, k // g, device="cuda", generator=gen) * 0.02 for g in (32, 128)}
        zeros = torch.randint(0, 16, (experts, n, k // 128), dtype=torch.uint8, device="cuda", generator=gen)
        self.packed, self.logical, self.dequantize_exact, self.read_bytes_match = {}, {}, {}, {}
        for v in formats.VARIANTS:
            dt, g = self.DTYPES[v["dtype"]], v["group_size"]
            scale = scales[g].to(dt)
            zp = zeros if v["zero_point"] else None
            packed = ck.pack_w4a16(codes, scale, group_size=g, dtype=dt, zero_point=zp, library=library)
            logical = torch.empty(experts, n, k, dtype=dt, device="cuda")
            for e in range(experts):  # one expert at a time: the FP32 temporaries stay small
                zero = zp[e].float().repeat_interleave(g, -1) if zp is not None else 8.0
                logical[e] = ((codes[e].float() - zero) * scale[e].float().repeat_interleave(g, -1)).to(dt)
            name = v["name"]
            self.packed[name], self.logical[name] = packed, logical
            self.dequantize_exact[name] = bool(torch.equal(ck.dequantize(packed, library=library).view(torch.int16),
                                                           logical.view(torch.int16)))
            self.read_bytes_match[name] = (packed.weight.numel() + packed.scales.numel() ==
                                           experts * formats.expert_bytes(n, k, g, v["zero_point"], "chord"))
        del codes, scales, zeros
        self.experts, self.n, self.k = experts, n, k
        torch.cuda.synchronize()


def reference_fp32(x_grouped, w, counts):
    """FP32 x @ W^T expert by expert over rows grouped by expert (counts: rows per expert, on
    the host): the reference of every variant, whichever its dtype."""
    out, start = torch.empty(x_grouped.size(0), w.size(1), device="cuda"), 0
    for e, c in enumerate(counts):
        if c:
            out[start:start + c] = x_grouped[start:start + c].float() @ w[e].float().T
            start += c
    return out


def run_formats(args, rows=None):
    """The formats set: every row of bench/formats.py (its routing drawn there), each variant's
    call checked against an FP32 reference of its logical weight, then the variants and the BF16
    grouped_mm anchor timed rep by rep (time_interleaved_us: one clock), --reps after 10 warm-ups,
    L2 flushed before each. One row per (scenario, T, projection, variant), appended to rows (a new
    list by default)."""
    import formats
    chord = ck.load_library(args.library) if args.library else None
    # --against: another build's library runs every variant on the same packed weights, checked
    # the same way and timed rep by rep with ours (against_us, vs_against: its time / ours).
    against = ck.load_library(args.against) if args.against else None
    cases = formats.cases(quick=args.quick, only=args.only)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(SEED)
    flush = l2_flush_buffer()
    settle_clocks()
    weights, rows, failures = {}, [] if rows is None else rows, 0
    for case in cases:
        split = shapes.SPLITS[case["split"]]
        if case["split"] not in weights:
            weights[case["split"]] = {proj: FormatWeights(chord, case["experts"], split[proj]["n"], split[proj]["k"],
                                                          gen) for proj in ("gate_up", "down")}
        ws = weights[case["split"]]
        e, over, t = case["experts"], case["routed_over"], case["x"]
        topk_ids = torch.tensor(case["topk_ids"], dtype=torch.int32, device="cuda")
        glob = torch.arange(over, device="cuda")
        local_of_global = torch.where(glob < e, glob, torch.full_like(glob, -1)).to(torch.int32)
        routes, offsets, active = grouped_rows(topk_ids, local_of_global, e)
        plan_up = case["projs"]["gate_up"]
        if routes.numel() != plan_up["routed_rows"] or active != plan_up["active_experts"]:
            raise RuntimeError(f"{case['scenario']} T={t}: the device routing disagrees with bench/formats.py")
        block = case["routing_block"]
        if not args.fixed_blocks:
            block = routing_block(chord, ARCH, e, ws["gate_up"].n, ws["gate_up"].k, routes.numel()) or block
        sorted_ids, expert_ids, ntp = align_block_size(topk_ids, over, local_of_global, block)
        for proj, plan in case["projs"].items():
            w, kernel_top_k = ws[proj], plan["kernel_top_k"]
            a32 = torch.randn(plan["a_rows"], w.k, device="cuda", generator=gen)
            in_rows = routes // kernel_top_k
            fns, checks, first_ms, against_fns, against_checks = [], {}, {}, [], {}

            def run_and_check(library, a, name, ref):
                """A variant's call through `library` on a NaN-filled output, its first-call time
                and (check, rel error) against ref."""
                out = torch.full((plan["a_rows"] * kernel_top_k, w.n), float("nan"), dtype=a.dtype, device="cuda")
                fn = (lambda a=a, p=w.packed[name], out=out, top=kernel_top_k, block=block:
                      ck.indexed(a, p, sorted_ids, expert_ids, ntp, top, out, block_size=block, library=library))
                t1 = time.perf_counter()
                fn()
                torch.cuda.synchronize()
                ms = (time.perf_counter() - t1) * 1000.0
                got = out[routes]
                untouched = torch.ones(out.size(0), dtype=torch.bool, device="cuda")
                untouched[routes] = False
                clean = bool(torch.isnan(out[untouched]).all()) if untouched.any() else True
                err = rel_error(got, ref) if routes.numel() else 0.0
                problems = [what for what, bad in (
                    ("dequantize not bit-exact", not w.dequantize_exact[name]),
                    ("packed bytes differ from formats.expert_bytes", not w.read_bytes_match[name]),
                    ("wrote rows outside the routes", not clean), ("NaN in routed rows", bool(torch.isnan(got).any())),
                    (f"rel error {err:.2e}", not err < 1e-2)) if bad]
                return fn, ms, ("ok" if not problems else "FAIL: " + "; ".join(problems), err)

            for v in formats.VARIANTS:
                name, dt = v["name"], FormatWeights.DTYPES[v["dtype"]]
                a = a32.to(dt)
                ref = reference_fp32(a[in_rows], w.logical[name], plan["counts"])
                fn, first_ms[name], checks[name] = run_and_check(chord, a, name, ref)
                fns.append(fn)
                if against is not None:
                    fn, _, against_checks[name] = run_and_check(against, a, name, ref)
                    against_fns.append(fn)
                del ref
            x_bf16 = a32.to(torch.bfloat16)[in_rows]
            w_bf16 = w.logical[formats.BASELINE]
            fns.append(lambda: grouped_mm(x_bf16, w_bf16, offsets))
            names = [v["name"] for v in formats.VARIANTS]
            timed = time_interleaved_us(fns + against_fns, flush, reps=args.reps)
            times = dict(zip(names + ["grouped_mm"], timed))
            against_times = dict(zip(names, timed[len(fns):]))  # empty without --against
            ratio = formats.ratios(times)
            for v in formats.VARIANTS:
                name = v["name"]
                us, floors, check = times[name], plan["variants"][name], checks[name]
                failures += check[0] != "ok"
                vs = {}
                if against is not None:
                    failures += against_checks[name][0] != "ok"
                    vs = dict(against_us=round(against_times[name], 2), vs_against=round(against_times[name] / us, 3),
                              against_check=against_checks[name][0], against_rel_error=against_checks[name][1])
                row = dict(scenario=case["scenario"], phase=case["phase"], split=case["split"], x=t, proj=proj,
                           variant=name, group_size=v["group_size"], zero_point=v["zero_point"], dtype=v["dtype"],
                           n=w.n, k=w.k, experts=e, routed_rows=plan["routed_rows"],
                           active_experts=plan["active_experts"], rows_read=plan["rows_read"], routing_block=block,
                           chord_us=round(us, 2), grouped_mm_bf16_us=round(times["grouped_mm"], 2),
                           floor_us=round(floors["floor_us"], 2), floor_read_us=round(floors["floor_read_us"], 2),
                           checkpoint_bytes=floors["checkpoint_bytes"], read_bytes=floors["read_bytes"],
                           pct_floor=round(100.0 * floors["floor_us"] / us, 1),
                           pct_floor_read=round(100.0 * floors["floor_read_us"] / us, 1),
                           **ratio[name], check=check[0], rel_error=check[1],
                           first_call_ms=round(first_ms[name], 1), **vs)
                rows.append(row)
            line = " ".join(f"{v['name']}={times[v['name']]:.1f}us" for v in formats.VARIANTS)
            zp = " ".join(f"{n}/sym={ratio[n]['zp_over_sym']:.3f}" for n in formats.SYMMETRIC_OF)
            if against is not None:
                line += " against/ours " + " ".join(f"{v['name']}={against_times[v['name']] / times[v['name']]:.3f}"
                                                    for v in formats.VARIANTS)
            fail = sum(checks[v["name"]][0] != "ok" for v in formats.VARIANTS)
            fail += sum(against_checks[v["name"]][0] != "ok" for v in formats.VARIANTS if against is not None)
            print(f"{case['scenario']:22s} {t:>5} {proj:7s} rows={plan['routed_rows']:6d} "
                  f"experts={plan['active_experts']:3d} {line} bf16_gmm={times['grouped_mm']:.1f}us {zp} "
                  f"{'ok' if not fail else f'{fail} FAIL'}", flush=True)
    del weights
    torch.cuda.empty_cache()
    return rows, failures


def generalization_summary(rows, worst=15):
    """Text: % of the read floor per scenario and projection (min / median / max), then the
    worst rows; with --against, its time over ours; where the rows carry --peers peers, then
    chord / each peer (peers_chart.summary: the rows above 0.9x Marlin's time, above 1.0x
    Humming's, and the peers that failed)."""
    lines = ["% of the read floor (floor / time), per scenario and projection: min / median / max"]
    keyed = {}
    for r in rows:
        keyed.setdefault((r["scenario"], r["proj"]), []).append(r["pct_floor"])
    for (scenario, proj), pcts in keyed.items():
        lines.append(f"  {scenario:28s} {proj:7s} {min(pcts):5.1f} / {statistics.median(pcts):5.1f} / {max(pcts):5.1f}")
    lines.append(f"worst {worst} rows:")
    for r in sorted(rows, key=lambda r: r["pct_floor"])[:worst]:
        lines.append(f"  {r['pct_floor']:5.1f}%  {r['scenario']} x={r['x']} {r['proj']} ({r['n']} x {r['k']}, "
                     f"{r['routed_rows']} rows on {r['active_experts']} experts) {r['chord_us']} us vs "
                     f"{r['floor_us']} us: {r['config']} [{r['config_source']}]")
    against = sorted(r["vs_against"] for r in rows if r.get("vs_against") is not None)
    if against:
        lines.append(f"--against (its time / ours: above 1 this build is faster): min {against[0]:.3f} / median "
                     f"{statistics.median(against):.3f} / max {against[-1]:.3f} over {len(against)} calls")
    import peers_chart
    if peers_chart.peer_names(rows):
        lines.append("peers (chord time / peer time: below 1 chord is faster):")
        lines += ["  " + line for line in peers_chart.summary(rows, worst).splitlines()]
    return "\n".join(lines)


def commit_label():
    """CHORD_BENCH_COMMIT if set, else the checkout's HEAD, marked "+modified" when tracked files
    differ from it: a copy of a newer tree over older git metadata (as on the device machine)
    must not be reported as the older commit."""
    if os.environ.get("CHORD_BENCH_COMMIT"):
        return os.environ["CHORD_BENCH_COMMIT"]
    here = os.path.dirname(os.path.abspath(__file__))
    git = lambda *a: subprocess.run(["git", "-C", here, *a], capture_output=True, text=True)
    head = git("rev-parse", "--short", "HEAD").stdout.strip()
    if not head:
        return "unknown"
    changed = git("status", "--porcelain", "--untracked-files=no").stdout.strip()
    return head + ("+modified" if changed else "")


def load_peers(names):
    """(name -> the loaded peer, name -> why it is missing) for --peers: a peer that is not
    installed is left out with bench/peers' message (naming the script that installs it), and
    the bench runs with the others."""
    if not names:
        return {}, {}
    import peers as peer_adapters
    loaded, missing = {}, {}
    for name in names:
        try:
            loaded[name] = peer_adapters.load_peer(name)
        except peer_adapters.PeerMissing as e:
            missing[name] = str(e)
            print(f"peer {name} not run: {e}", flush=True)
    return loaded, missing


def peer_names(value):
    """--peers' type: the names (bench/peers.parse_peers), an argparse error for an unknown one."""
    import peers as peer_adapters
    try:
        return peer_adapters.parse_peers(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def run(args, loaded_peers=None, rows=None):
    """The suite; its rows are appended to rows (the Suite's own list by default)."""
    chord = ck.load_library(args.library) if args.library else None  # ours: None = this package's
    gen = torch.Generator(device="cuda")
    gen.manual_seed(SEED)
    against = ck.load_library(args.against) if args.against else None
    suite = Suite(chord, row_values(args), args.only, args.fixed_blocks, args.interleaved, against, loaded_peers)
    if rows is not None:
        suite.rows = rows
    settle_clocks()
    quick = row_values(args)

    def section(*names):  # --only: skip building the weights of sections it excludes
        return any(generalization.selected(name, args.only) for name in names)

    if section(*(name for name, row in shapes.ROWS.items() if row["split"] in ("ep8", "ep16", "ep32"))):
        run_kimi(suite, chord, quick, gen)

    if section("indexed TP8"):
        run_tp8(suite, chord, quick, gen)

    e_q, n_up, k_up, n_down, k_down = MODELS["qwen3"]
    if section("offsets Qwen3 INT4"):
        up = ExpertWeights(chord, e_q, n_up, k_up, gen, suite.peers)
        down = ExpertWeights(chord, e_q, n_down, k_down, gen, suite.peers)
        for suite.proj, w in (("gate_up", up), ("down", down)):
            for t in shapes.sweep("offsets Qwen3 INT4", quick):
                suite.offsets_mode("offsets Qwen3 INT4", t, w, t, shapes.model("qwen3")["top_k"], gen)
        del up, down
        torch.cuda.empty_cache()
    if section("offsets Qwen3 NF4"):
        up = NF4ExpertWeights(chord, e_q, n_up, k_up, gen)
        down = NF4ExpertWeights(chord, e_q, n_down, k_down, gen)
        for suite.proj, w in (("gate_up", up), ("down", down)):
            for t in shapes.sweep("offsets Qwen3 NF4", quick):
                suite.offsets_mode("offsets Qwen3 NF4", t, w, t, shapes.model("qwen3")["top_k"], gen, nf4=True)
    return suite


def draw(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    scenarios = sorted({r["scenario"] for r in rows}, key=lambda s: [r["scenario"] for r in rows].index(s))
    cols = 4
    fig, axes = plt.subplots(math.ceil(len(scenarios) / cols), cols, figsize=(5 * cols, 4 * math.ceil(len(scenarios) / cols)),
                             squeeze=False)
    for ax, scenario in zip(axes.flat, scenarios):
        for proj, color in (("gate_up", "tab:blue"), ("down", "tab:orange")):
            sel = [r for r in rows if r["scenario"] == scenario and r["proj"] == proj]
            if not sel:
                continue
            xs = [r["x"] for r in sel]
            ax.plot(xs, [r["chord_us"] for r in sel], "o-", color=color, label=f"chord {proj}")
            ax.plot(xs, [r["grouped_mm_bf16_us"] for r in sel], "s--", color=color, alpha=0.6,
                    label=f"bf16 grouped_mm {proj}")
            ax.plot(xs, [r["floor_us"] for r in sel], ":", color=color, alpha=0.8, label=f"floor {proj}")
        ax.set_title(scenario)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("tokens / rows per expert")
        ax.set_ylabel("us")
        ax.legend(fontsize=6)
    for ax in list(axes.flat)[len(scenarios):]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def recorded_path(path):
    """A library path as bench.json records it: relative to the repository when inside it (so
    the file names no machine's folders), else as given."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    full = os.path.abspath(path)
    return os.path.relpath(full, repo) if full.startswith(repo + os.sep) else path


def command_line(args):
    """The options that change what the rows measure, as a command (recorded in bench.json)."""
    parts = ["python3", "bench/bench_w4a16.py"]
    if args.set != "suite":
        parts += ["--set", args.set, "--reps", str(args.reps)]
    for flag, on in (("--quick", args.quick), ("--fixed-blocks", args.fixed_blocks), ("--interleaved", args.interleaved)):
        if on:
            parts.append(flag)
    if args.sweep:
        parts += ["--sweep", ",".join(str(v) for v in args.sweep)]
    if args.capacity != "tight":
        parts += ["--capacity", args.capacity]
    for flag, value in (("--only", args.only), ("--library", args.library and recorded_path(args.library)),
                        ("--against", args.against and recorded_path(args.against)),
                        ("--peers", ",".join(args.peers) if args.peers else None)):
        if value:
            parts += [flag, shlex.quote(value)]
    return " ".join(parts)


def count_peer_failures(rows, peers):
    """The rows' failed peer checks (wrong, or raised) over the peers named."""
    return sum(1 for r in rows for p in peers if r.get(f"{p}_check") not in (None, "ok", "not run"))


class Stopped(BaseException):
    """SIGTERM (what `timeout` sends) during a run. A BaseException, like KeyboardInterrupt: the
    handlers that record a failing peer as a result (`except Exception`) must not swallow it, or
    a signal that lands inside a peer's call (Humming compiling a new shape) lets the run go on
    past its time limit and lose every row."""


def stop_on_sigterm():
    """SIGTERM raises Stopped, so that a run cut short by a time limit still writes the rows it
    has, its meta marked `partial`."""
    def stop(signum, frame):
        raise Stopped()
    signal.signal(signal.SIGTERM, stop)


def run_rows_until_stopped(meta, run_rows, rows):
    """run_rows(rows) -> failures, appending to rows; on Stopped meta.partial says how many rows
    were done, and the failures are the finished rows' failed checks."""
    try:
        return run_rows(rows)
    except Stopped:
        meta["partial"] = f"stopped by SIGTERM after {len(rows)} rows"
        print(f"\nstopped by SIGTERM: writing the {len(rows)} rows done", flush=True)
        return sum((r.get("check") not in (None, "ok")) + (r.get("against_check") not in (None, "ok")) for r in rows)


def run_set(args, meta, name, run_rows, summarize, peers=None, missing_peers=None):
    """--set generalization / formats: runs the set (run_rows(args) -> rows, failures), writes
    NAME.json (meta and rows) and NAME_summary.txt (summarize(rows), also printed) to --out.
    meta gains the run's seconds and the first calls' share of them (their JIT compiles). With
    --peers (peers: the loaded ones' names) also meta.peer_first_call_s (each peer's first calls:
    Humming's JIT compiles) and peers.png (bench/peers_chart.py) where a peer ran; peer failures
    are counted on the last line and do not change the exit code, as in the suite."""
    started = time.perf_counter()
    rows = []
    failures = run_rows_until_stopped(meta, lambda out: run_rows(args, out)[1], rows)
    summary = summarize(rows)
    meta["seconds"] = round(time.perf_counter() - started, 1)
    meta["first_call_s"] = round(sum(r["first_call_ms"] for r in rows) / 1000.0, 1)
    peer_note = ""
    if peers:
        meta["peer_first_call_s"] = {p: round(sum(r.get(f"{p}_first_call_ms") or 0.0 for r in rows) / 1000.0, 1)
                                     for p in peers}
        peer_note = f" (peers: {count_peer_failures(rows, peers)} failed checks"
    with open(os.path.join(args.out, f"{name}.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1)
    with open(os.path.join(args.out, f"{name}_summary.txt"), "w") as f:
        f.write(summary + "\n")
    if peers:
        import peers_chart
        if peers_chart.draw(rows, os.path.join(args.out, "peers.png"), meta):
            peer_note += "; peers.png"
        peer_note += f", first calls {meta['peer_first_call_s']} s)"
    if missing_peers:
        peer_note += f" (not run, not installed: {', '.join(missing_peers)})"
    print("\n" + summary)
    print(f"\n{len(rows)} rows, {failures} failed checks{peer_note}, {meta['seconds']} s (first calls, JIT compiles "
          f"included: {meta['first_call_s']} s); {name}.json and {name}_summary.txt in {args.out}")
    return 1 if failures else 0


def parse_args(argv=None):
    """The command line (sys.argv[1:] by default); argparse's error (SystemExit 2) on a bad one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="bench-out")
    parser.add_argument("--quick", action="store_true", help="a subset of the rows")
    parser.add_argument("--sweep", default=None, type=sweep_values, metavar="X,Y,...",
                        help="run each selected row at these values (tokens, tokens or rows per expert, as "
                             "the row counts) instead of its own sweep: for screening a rule outside the "
                             "suite's points. Not with --quick or --set formats")
    parser.add_argument("--library", default=None,
                        help="run ours through this libchord.so (chord_kernels.load_library) instead of the "
                             "installed chord_kernels' own")
    parser.add_argument("--only", default=None, help="run only the scenarios whose name contains this, or any of these comma-separated texts")
    parser.add_argument("--fixed-blocks", action="store_true",
                        help="indexed rows: the row's routing block (16 for decode, 64 for prefill) instead of "
                             "the block our exported tuning table gives vLLM (the generalization set: instead of "
                             "the block our humming facade's rule gives)")
    parser.add_argument("--interleaved", action="store_true",
                        help="time our call and its BF16 anchor rep by rep (same clock) instead of one after "
                             "the other (each at its own power-capped clock)")
    parser.add_argument("--against", default=None, metavar="LIBRARY",
                        help="another build's libchord.so (chord_kernels.load_library): each row also times its "
                             "call through the same chord_kernels functions (on our packed weights, checked the "
                             "same way), rep by rep with ours and the anchor (one clock); a before / after "
                             "comparison in one process")
    parser.add_argument("--set", choices=("suite", "generalization", "formats"), default="suite",
                        help="what to run: the suite (default), the generalization set of shapes/suite.json "
                             "(decode rows of other models: time against the read floor and the chosen config) "
                             "or the formats set (bench/formats.py: the Qwen3-30B-A3B and EP8 shapes under group "
                             "32 / 128, zero points and FP16, against the checkpoint format's read floor); with "
                             "the two sets --only, --quick and --library apply (and --fixed-blocks with formats, "
                             "whose rows are always timed rep by rep; --against with both; --peers and --capacity "
                             "with generalization; with "
                             "generalization --only takes a comma-separated list, any of which the scenario "
                             "contains), the other options do not")
    parser.add_argument("--capacity", choices=("tight", "vllm"), default="tight",
                        help="indexed rows: sorted_ids' length past the padded routes: 2 blocks (tight) or "
                             "vLLM's max_num_tokens_padded (vllm: routes + experts x (block - 1), at most "
                             "routes x block); masked rows (also the generalization set's): max_m, twice the mean rows per group (tight) or "
                             "vLLM's default batched buffer (vllm: 256 x the EP ranks); the GEMM's grid covers the "
                             "extra slots and rows with CTAs that exit")
    parser.add_argument("--reps", type=int, default=None,
                        help="--set generalization / formats: timed reps per row (default 50 / 100)")
    parser.add_argument("--peers", default=None, type=peer_names,
                        help="comma-separated peers to time on the same weights and inputs, rep by rep with ours, "
                             "checked against the same reference: humming (inclusionAI's Humming, as vLLM 0.33 "
                             "calls it; installed by scripts/peer-wheels.sh into .peer-site or PEER_SITE; "
                             "indexed, contiguous and INT4 offsets rows), marlin (vLLM 0.33's Marlin MoE, as "
                             "fused_marlin_moe calls it; built by scripts/peer-marlin.sh into .peer-marlin or "
                             "PEER_MARLIN; indexed and INT4 offsets rows). Rows gain <peer>_us, vs_<peer> (peer time / ours) and "
                             "<peer>_check ('not run' where the peer does not serve the row, 'ERROR: ...' where "
                             "it raised); a peer that is not installed is left out, saying so. With --set "
                             "generalization: its indexed INT4 calls (Marlin where vLLM would run it on the "
                             "layer), masked and NF4 calls say 'not run'. Not with --set formats")
    args = parser.parse_args(argv)
    if args.peers and args.set == "formats":
        parser.error("--peers runs with the suite and --set generalization, not --set formats")
    if args.set == "formats" and args.interleaved:
        parser.error("--set formats: its rows are always interleaved")
    if args.sweep and (args.quick or args.set == "formats"):
        parser.error("--sweep replaces the rows' sweeps: not with --quick or --set formats")
    if args.reps is None:
        args.reps = 100 if args.set == "formats" else 50
    return args


def sweep_values(text):
    """--sweep: positive integers separated by commas."""
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"--sweep takes positive integers separated by commas, not '{text}'")
    return values


def row_values(args):
    """What the row builders take as `quick`: --sweep's values, else whether --quick is set
    (shapes.sweep)."""
    return args.sweep or args.quick


def apply_options(args):
    """The options the row builders read as module settings (--capacity)."""
    global CAPACITY
    CAPACITY = args.capacity


def main():
    args = parse_args()
    apply_options(args)
    loaded_peers, missing_peers = load_peers(args.peers)
    os.makedirs(args.out, exist_ok=True)
    stop_on_sigterm()
    meta = dict(gpu=torch.cuda.get_device_name(), torch=torch.__version__, commit=commit_label(),
                date=time.strftime("%Y-%m-%d"), command=command_line(args),
                env={k: v for k, v in sorted(os.environ.items()) if k.startswith("CHORD_")},
                l2_flush="write" if WRITE_FLUSH else "read", flush_passes=FLUSH_PASSES)
    if loaded_peers:
        import peers as peer_adapters
        meta["peers"] = {name: peer_adapters.peer_version(p) for name, p in loaded_peers.items()}
    if missing_peers:
        meta["peers_missing"] = missing_peers
    if args.set == "generalization":
        return run_set(args, meta, "generalization", lambda a, out: run_generalization(a, loaded_peers, out),
                       generalization_summary, list(loaded_peers), missing_peers)
    if args.set == "formats":
        import formats
        return run_set(args, meta, "formats", run_formats, formats.summary)
    rows = []
    failures = run_rows_until_stopped(meta, lambda out: run(args, loaded_peers, out).failures, rows)
    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump(dict(meta=meta, rows=rows), f, indent=1)
    if not rows:
        print(f"no suite row matches --only {args.only!r} (scenario names: docs/shapes.md)", file=sys.stderr)
        return 1
    draw(rows, os.path.join(args.out, "bench.png"))
    peer_note = f" (peers: {count_peer_failures(rows, loaded_peers)} failed checks)" if loaded_peers else ""
    if loaded_peers:
        import peers_chart
        if peers_chart.draw(rows, os.path.join(args.out, "peers.png"), meta):
            peer_note += "; peers.png"
    if missing_peers:
        peer_note += f" (not run, not installed: {', '.join(missing_peers)})"
    print(f"\n{len(rows)} rows, {failures} failed checks{peer_note}; JSON and PNG in {args.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
