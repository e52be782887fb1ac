"""Decode rows of the suite (docs/shapes.md) through the real library path (JIT), one process per
config override, so configs can be compared on the same draws without the whole bench.

    python3 lab/kernel_check/decode_sweep.py [--out DIR] [--setting NAME=ENV,ENV ...]

A setting is a name and CHORD_W4A16_* assignments, e.g. `bk256=CHORD_W4A16_BK=256`;
`default` (no override) always runs first. Rows: indexed EP8 decode T=20, masked EP8 8
tokens/expert, Qwen3 offsets T=1, 8 and 64 (INT4 and NF4); each row is checked against torch as
in the bench. `--rows kimi|qwen3|nf4|all` limits the rows (default all), `--tokens 1,8,64` sets
the Qwen3 token counts. `--rows prefill` runs the indexed EP8 prefill rows instead, at the token
counts of `--prefill-tokens` (default 1024,2048,4096), each seeded by its token count; a row a
setting cannot run is recorded with the library's message; `--rows tp8` runs the indexed TP8 rows
(384 experts, all local) the same way. CHORD_W4A16_ENGINE with the tile
variables sweeps their WGMMA configs.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def child(out_path, rows, tokens, prefill_tokens):
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import torch
    import bench_w4a16 as b
    gen = torch.Generator(device="cuda")
    gen.manual_seed(b.SEED)
    suite = b.Suite(None, True)  # None: chord_kernels' own libchord
    if rows in ("prefill", "tp8"):
        if rows == "prefill":
            e_all, n_up, k_up, n_down, k_down = b.MODELS["kimi"]
            e_local, scenario = b.shapes.SPLITS["ep8"]["experts_local"], "indexed EP8 prefill"
        else:
            e_all, n_up, k_up, n_down, k_down = b.MODELS["tp8"]
            e_local, scenario = e_all, "indexed TP8"
        up = b.ExpertWeights(None, e_local, n_up, k_up, gen)
        down = b.ExpertWeights(None, e_local, n_down, k_down, gen)
        ids = torch.arange(e_all, device="cuda")
        local = torch.where(ids < e_local, ids, torch.full_like(ids, -1)).to(torch.int32)
        for t in prefill_tokens:
            # Draws seeded per token count, so that a setting that a row rejects (e.g. a forced
            # BLOCK_M that does not divide that row's routing block) leaves the others' draws as
            # in every other setting; the rejected row is recorded with the library's message.
            gen.manual_seed(b.SEED + t)
            try:
                suite.indexed(scenario, t, up, down, t, e_all, 8, local, 64, gen)
            except (RuntimeError, ValueError) as e:
                suite.rows.append(dict(scenario=scenario, x=t, proj="rejected", chord_us=None,
                                       check=str(e)[:80]))
        del up, down
        torch.cuda.empty_cache()
    if rows in ("all", "kimi"):
        _, n_up, k_up, n_down, k_down = b.MODELS["kimi"]
        e_local = b.shapes.SPLITS["ep8"]["experts_local"]
        up = b.ExpertWeights(None, e_local, n_up, k_up, gen)
        down = b.ExpertWeights(None, e_local, n_down, k_down, gen)
        local_only = torch.arange(e_local, dtype=torch.int32, device="cuda")
        over, top_k, block = b.shapes.routing("indexed EP8 decode")
        suite.indexed("indexed EP8 decode", 20, up, down, 20, over, top_k, local_only, block, gen)
        for suite.proj, w in (("gate_up", up), ("down", down)):
            suite.masked("masked EP8", 8, w, 8, 8, gen)
        del up, down
        torch.cuda.empty_cache()
    e_q, n_up, k_up, n_down, k_down = b.MODELS["qwen3"]
    kinds = {"all": (False, True), "qwen3": (False,), "nf4": (True,)}.get(rows, ())
    for nf4 in kinds:
        make = b.NF4ExpertWeights if nf4 else b.ExpertWeights
        up = make(None, e_q, n_up, k_up, gen)
        down = make(None, e_q, n_down, k_down, gen)
        for suite.proj, w in (("gate_up", up), ("down", down)):
            for t in tokens:
                suite.offsets_mode(f"offsets Qwen3 {'NF4' if nf4 else 'INT4'}", t, w, t, 8, gen, nf4=nf4)
        del up, down
        torch.cuda.empty_cache()
    with open(out_path, "w") as f:
        json.dump(dict(rows=suite.rows, failures=suite.failures), f, indent=1)
    return 1 if suite.failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument("--setting", action="append", default=[])
    ap.add_argument("--child", default=None)
    ap.add_argument("--rows", default="all", choices=("all", "kimi", "qwen3", "nf4", "prefill", "tp8"))
    ap.add_argument("--tokens", default="1,8,64", help="Qwen3 token counts, comma-separated")
    ap.add_argument("--prefill-tokens", default="1024,2048,4096", help="--rows prefill / tp8: token counts")
    args = ap.parse_args()
    if args.child:
        sys.exit(child(args.child, args.rows, [int(t) for t in args.tokens.split(",")],
                       [int(t) for t in args.prefill_tokens.split(",")]))
    os.makedirs(args.out, exist_ok=True)
    settings = [("default", {})]
    for s in args.setting:
        name, _, assigns = s.partition("=")
        env = dict(a.split("=", 1) for a in assigns.split(",") if a)
        settings.append((name, env))
    results, rc = {}, 0
    for name, env in settings:
        path = os.path.join(args.out, f"sweep_{name}.json")
        e = dict(os.environ)
        e.update(env)
        print(f"== {name} {env}", flush=True)
        r = subprocess.run([sys.executable, __file__, "--child", path, "--rows", args.rows, "--tokens", args.tokens,
                            "--prefill-tokens", args.prefill_tokens], env=e)
        rc |= r.returncode
        if os.path.exists(path):
            results[name] = json.load(open(path))["rows"]
    keys = [(r["scenario"], r["x"], r["proj"]) for r in next(iter(results.values()), [])]
    print("\n| scenario | x | proj | " + " | ".join(f"{n} us" for n in results) + " |")
    print("| --- | --- | --- | " + " | ".join("---" for _ in results) + " |")
    for k in keys:
        cells = []
        for rows in results.values():
            m = [r for r in rows if (r["scenario"], r["x"], r["proj"]) == k]
            cells.append(f"{m[0]['chord_us']} ({m[0]['check']})" if m else "-")
        print(f"| {k[0]} | {k[1]} | {k[2]} | " + " | ".join(cells) + " |")
    sys.exit(rc)


if __name__ == "__main__":
    main()
