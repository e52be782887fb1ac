"""The calls of the generalization set (shapes/suite.json, section `generalization`), in pure
Python: the routing draws, each call's geometry, the config the resolver picks for it (through
`chord config`) and its read floor. No torch here, so that lab/generalization_configs.py lists,
without a GPU, exactly the calls that `bench/bench_w4a16.py --set generalization` times.
"""
import functools
import os
import random
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import shapes  # noqa: E402

STREAM_BYTES_PER_S = 4.47e12   # docs/shapes.md, measured on the H200
BF16_FLOP_PER_S = 790e12
SEED = 2029
SKEW = 1.2          # the skewed draw: expert popularity 1 / rank^SKEW (Zipf)
EXTRA_BLOCKS = 2    # sorted_ids over-allocation past the padded routes, as the suite's bench
ARCH, SMS = "sm_90a", 132  # the H200 the bench runs on


def rng_for(scenario, x):
    """One generator per (row, sweep value): a row's draw does not depend on which other rows run."""
    return random.Random(f"{SEED}:{scenario}:{x}")


def draw_topk(rng, tokens, experts, top_k, draw):
    """[tokens][top_k] distinct expert ids in [0, experts). uniform: every expert equally likely;
    skewed: a random popularity ranking, weights 1 / rank^SKEW, top_k drawn without replacement
    (smallest Exp(1) / weight), so that a batch touches a few hot experts many times."""
    if draw == "uniform":
        return [rng.sample(range(experts), top_k) for _ in range(tokens)]
    if draw != "skewed":
        raise ValueError(f"draw '{draw}' is not uniform or skewed")
    ranking = list(range(experts))
    rng.shuffle(ranking)
    weight = [0.0] * experts
    for rank, e in enumerate(ranking):
        weight[e] = 1.0 / (rank + 1) ** SKEW
    out = []
    for _ in range(tokens):
        keys = sorted(range(experts), key=lambda e: rng.expovariate(1.0) / weight[e])
        out.append(keys[:top_k])
    return out


def masked_counts(rng, groups, tokens_per_expert):
    """masked_m: uniform in [t / 2, 1.5 t] per group, as the suite's masked rows."""
    t = tokens_per_expert
    return [rng.randint(t // 2, t + t // 2) for _ in range(groups)]


def padded_routes(topk_ids, experts, block):
    """(routes per expert, padded route count) of moe_align_block_size with this block."""
    counts = [0] * experts
    for ids in topk_ids:
        for e in ids:
            counts[e] += 1
    return counts, sum((c + block - 1) // block * block for c in counts)


def weight_bytes(n, k, weight):
    """Packed bytes of one expert: 4-bit codes plus INT4's BF16 group-32 scales or NF4's FP32
    absmax per 64 (as the kernels read them)."""
    return n * (k // 2 + (2 * k // 32 if weight == "int4" else 4 * k // 64))


def selected(scenario, only):
    """--only for the set: no filter, or a comma-separated list of texts, any of which the
    scenario's name contains ("dsv3,q235" runs both models' rows)."""
    return not only or any(part in scenario for part in only.split(",") if part)


def routing_block(routed_rows, experts):
    """The moe_align_block_size block a serving engine takes for our indexed kernels where no
    tuning table holds the shape: the rows our `humming` facade hands vLLM (humming.tune
    heuristic_rows), 16 / 32 / 64 by the routed rows per local expert with 1.5x headroom for
    skew. The block bounds the M tile, so a fixed 16 would make every expert's weights stream
    once per 16 of its rows. Written out here so that the set needs no torch;
    tests/python/test_humming_tuning.py keeps it equal to the facade's rows."""
    for block in (16, 32):
        if routed_rows <= int(block * experts / 1.5):
            return block
    return 64


def calls(section=None, quick=False, only=None, fixed_blocks=False, masked_max_m=None):
    """Every call of the set, in run order (split by split, so that the bench holds one split's
    weights at a time). Each is a dict: what the bench records, plus the routing it runs.
    Indexed calls align their routes at routing_block's block, or at the row's `routing_block`
    with fixed_blocks (--fixed-blocks). Masked calls hold twice their mean rows per group, or
    masked_max_m(tokens_per_expert, ep_ranks) rows (bench_w4a16.py --capacity)."""
    section = section or shapes.Section("generalization")
    by_split = {}
    for row in section.rows:
        if not selected(row["scenario"], only):
            continue
        by_split.setdefault(row["split"], []).append(row)
    out = []
    for split_name, rows in by_split.items():
        split, model = section.splits[split_name], section.model(split_name)
        experts = split["experts_local"]
        for row in rows:
            for x in section.sweep(row, quick):
                rng = rng_for(row["scenario"], x)
                base = dict(scenario=row["scenario"], model=model["name"], split=split_name, mode=row["mode"],
                            weight=row.get("weight", "int4"), draw=row.get("draw"), x=x, experts=experts,
                            model_experts=model["experts"])
                if row["mode"] == "masked":
                    masked_m = masked_counts(rng, experts, x)
                    max_m = masked_max_m(x, split.get("ep", 1)) if masked_max_m else 2 * x
                    routing = dict(masked_m=masked_m, max_m=max_m, expected_m=x)
                else:  # indexed, offsets: tokens routed over this GPU's experts (decode)
                    topk_ids = draw_topk(rng, x, experts, model["top_k"], row["draw"])
                    routing = dict(topk_ids=topk_ids, tokens=x, top_k=model["top_k"])
                for proj in ("gate_up", "down"):
                    call = dict(base, proj=proj, n=split[proj]["n"], k=split[proj]["k"], **routing)
                    block = row.get("routing_block")
                    if row["mode"] == "indexed" and not fixed_blocks:
                        block = routing_block(x * model["top_k"], experts)
                    geometry(call, block)
                    out.append(call)
    return out


def geometry(call, block):
    """Adds the call's routed rows, active experts, A rows and the operator's problem (what
    `chord config` needs: rows per expert as ops/w4a16.cpp derives it, capacity, groups)."""
    e, n, k = call["experts"], call["n"], call["k"]
    if call["mode"] == "masked":
        masked_m = call["masked_m"]
        routed = sum(masked_m)
        call.update(routed_rows=routed, active_experts=sum(1 for m in masked_m if m > 0), a_rows=routed,
                    rows_per_expert=min(call["expected_m"], call["max_m"]), groups=e)
    else:
        counts, padded = padded_routes(call["topk_ids"], e, block or 1)
        routed = sum(counts)
        call.update(routed_rows=routed, active_experts=sum(1 for c in counts if c > 0))
        if call["mode"] == "indexed":
            # gate_up reads the tokens' rows (top_k routes each); down reads one row per route.
            m, top_k = (call["tokens"], call["top_k"]) if call["proj"] == "gate_up" else (routed, 1)
            call.update(a_rows=m, kernel_top_k=top_k, block_size=block, capacity=padded + EXTRA_BLOCKS * block,
                        rows_per_expert=max(1, m * top_k // e))
        else:  # offsets: the routes grouped by expert
            call.update(a_rows=routed, rows_per_expert=max(1, routed // e))
    # Read floor: the touched experts' weights and scales, the activations once, the outputs once.
    act_rows = call["a_rows"]
    moved = (call["active_experts"] * weight_bytes(n, k, call["weight"]) + act_rows * k * 2 + routed * n * 2)
    flop = 2.0 * routed * n * k
    call.update(bytes=moved, flop=flop,
                floor_us=max(moved / STREAM_BYTES_PER_S, flop / BF16_FLOP_PER_S) * 1e6)
    return call


@functools.lru_cache(maxsize=1)
def default_section():
    return shapes.Section("generalization")


PEER_MODES = {"marlin": ("indexed",), "humming": ("indexed",)}  # the set's modes each --peers peer runs


def peer_note(call, peer, section=None):
    """None where the --peers peer `peer` runs this call; else why not: "" where it has no form
    for the call (masked: vLLM's batched forms are not wired; NF4: neither peer reads it), or the
    reason vLLM would not run it on this layer (Marlin: bench/peers.marlin_unserved, the layer's
    hidden size = gate_up's K and intermediate size = down's K)."""
    if call["mode"] not in PEER_MODES.get(peer, ()) or call["weight"] != "int4":
        return ""
    if peer == "marlin":
        import peers
        split = (section or default_section()).splits[call["split"]]
        return peers.marlin_unserved(split["gate_up"]["k"], split["down"]["k"])
    return None


def config_args(call, arch=ARCH, sms=SMS):
    args = ["config", "--arch", arch, "--sms", str(sms), "--mode", call["mode"], "--n", str(call["n"]),
            "--k", str(call["k"]), "--experts", str(call["experts"]), "--rows", str(call["rows_per_expert"]),
            "--weight", call["weight"], "--a-rows", str(call["a_rows"])]
    if call["mode"] == "masked":
        args += ["--groups", str(call["groups"]), "--max-m", str(call["max_m"])]
    if call["mode"] == "indexed":
        args += ["--capacity", str(call["capacity"]), "--block-size", str(call["block_size"]),
                 "--top-k", str(call["kernel_top_k"])]
    return args


def default_cli():
    """The installed wheel's `chord` (the library the bench runs), by the interpreter running us."""
    return [sys.executable, "-m", "chord_kernels_cli"]


def resolve_configs(call_list, cli=None, arch=ARCH, sms=SMS, jobs=8):
    """Sets call["config"] (chord config's key=value fields) on every call; one process per
    distinct problem, `jobs` at a time."""
    cli = cli or default_cli()
    keys = {tuple(config_args(c, arch, sms)) for c in call_list}

    def query(key):
        done = subprocess.run(cli + list(key) + ["--candidates"], capture_output=True, text=True)
        if done.returncode != 0:
            return dict(error=(done.stderr or done.stdout).strip().splitlines()[-1:] or ["failed"])
        lines = done.stdout.splitlines()
        answer = dict(re.findall(r"(\w+)=(\S+)", lines[0]))
        # Where the pick comes from: a table row, the WGMMA defaults or the heuristic.
        best = next((line[2:].split(":")[0].strip() for line in lines if line.startswith("* ")), None)
        answer["source"] = best or "override"
        return answer

    with ThreadPoolExecutor(jobs) as pool:
        answers = dict(zip(keys, pool.map(query, keys)))
    for c in call_list:
        c["config"] = answers[tuple(config_args(c, arch, sms))]
    return call_list


def config_label(config):
    """One short string: engine, tile, stages, split-K, n-block run (what the rule picked)."""
    if "error" in config:
        return "ERROR " + " ".join(config["error"])
    engine = config.get("engine", "?")
    tile = f"bm{config.get('block_m')} bn{config.get('block_n')} bk{config.get('block_k')} s{config.get('stages')}"
    warps = f"wg{config.get('warpgroups')}" if engine.startswith("wgmma") else f"w{config.get('warps_m')}x{config.get('warps_n')}"
    split = config.get("split_k", "1")
    run = config.get("n_run", "1")
    return (f"{engine} {tile} {warps}" + (f" sk{split}" if split not in ("1", None) else "") +
            (f" nr{run}" if run not in ("1", None) else ""))
