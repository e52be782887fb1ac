"""Decode config exploration: every decode call (<= 64 rows per expert; indexed, masked, offsets
INT4 / NF4) of the generalization set and of the suite, timed under a grid of forced mma.sync
configs, one JSON for lab/kernel_check/decode_explore_report.py.

    python3 lab/kernel_check/decode_explore.py --out DIR [--grid small|medium|full]
        [--budget-s 190] [--reps 10] [--max-settings N] [--prewarm 12] [--only TEXT]
    python3 lab/kernel_check/decode_explore.py --plan [--grid ...]   (CPU: rows and settings)

Rows are bench/generalization.py's calls (its routing draws, geometry and read floor), plus the
suite's decode rows put through the same code (uniform draws; the indexed EP8 prefill rows whose
routes fall mostly off-rank are left out). CHORD_W4A16_* is read once per library copy, so each
setting (forced CHORD_W4A16_ENGINE=mma_sync + BM/BN/BK/STAGES/SPLIT_K[/WARPS_N]) runs through its
own copy of the wheel's libchord.so (chord_kernels.load_library, RTLD_LOCAL), loaded with that
setting's environment; `default` (no override, this package's own library) is the current rule,
timed first and again last (drift). Prewarm processes (--prewarm, niced) compile every setting's
four kernels (indexed, masked, offsets INT4, offsets NF4) on tiny problems into a shared
CHORD_CACHE_DIR while the timing process builds the weights, so timing meets disk hits only.
Settings run in priority order until --budget-s of timing is spent (the rest are listed as not
run). Timing: events around each call after warm-up, the bench's 256 MiB L2 flush (reading it)
before each rep, median of --reps. A config a call cannot run is recorded with the library's
message (ok=false, us=null). Correctness: each setting's first call of each kind is checked
against torch on that kind's smallest row. `--mode env` (the fallback when a library copy cannot
be opened) runs one process per setting instead, with the environment set.
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import generalization as g  # noqa: E402
import shapes  # noqa: E402

DECODE_MAX_ROWS = 64
ENV_KEYS = ("BM", "BN", "BK", "STAGES", "WARPS_N", "SPLIT_K", "GROUP_SUMS")


# ---------------------------------------------------------------- rows (CPU)

def suite_section():
    """The suite's indexed / masked / offsets rows in the generalization row format."""
    sec = shapes.Section("suite")
    rows = []
    for r in sec.rows:
        if r["mode"] not in ("indexed", "masked", "offsets"):
            continue
        split = sec.splits[r["split"]]
        if r["mode"] == "indexed" and r.get("routed_over") == "model_experts" and \
                sec.model(r["split"])["experts"] != split["experts_local"]:
            continue  # routes mostly off-rank: not in generalization.geometry's model
        rows.append(dict(r, draw=r.get("draw", "uniform"), scenario="suite " + r["scenario"]))
    sec.rows = rows
    return sec


def expert_rows(call):
    """Rows of each expert that has any (what the M tiles cover)."""
    if call["mode"] == "masked":
        return [m for m in call["masked_m"] if m > 0]
    counts = [0] * call["experts"]
    for ids in call["topk_ids"]:
        for e in ids:
            counts[e] += 1
    return [c for c in counts if c > 0]


def decode_calls(only=None, quick=False, min_floor_us=0.0):
    out = []
    for set_name, section in (("generalization", None), ("suite", suite_section())):
        for c in g.calls(section=section, quick=quick, only=only):
            if c["rows_per_expert"] > DECODE_MAX_ROWS or c["floor_us"] < min_floor_us:
                continue
            c["set"] = set_name
            c["id"] = f"{c['scenario']}|x={c['x']}|{c['proj']}"
            c["expert_rows"] = expert_rows(c)
            out.append(c)
    return out


def row_record(c):
    keys = ("id", "set", "scenario", "model", "split", "mode", "weight", "draw", "x", "proj", "n", "k", "experts",
            "active_experts", "routed_rows", "a_rows", "rows_per_expert", "block_size", "bytes", "floor_us")
    r = {k: c.get(k) for k in keys}
    r["rows_per_active_expert"] = round(c["routed_rows"] / max(1, c["active_experts"]), 2)
    r["max_expert_rows"] = max(c["expert_rows"] or [0])
    r["expert_rows"] = sorted(c["expert_rows"], reverse=True)
    r["sms"] = g.SMS
    return r


def ctas(row, cfg):
    """Useful CTAs of a config on a row: M tiles over the active experts' rows x N tiles x split-K."""
    bm, bn, sk = int(cfg["block_m"]), int(cfg["block_n"]), int(cfg.get("split_k") or 1)
    m_tiles = sum((r + bm - 1) // bm for r in row["expert_rows"])
    return m_tiles * ((row["n"] + bn - 1) // bn) * sk


# ---------------------------------------------------------------- settings (CPU)

def grid(level):
    """Settings in priority order: split-K x BN x BK at BM 8 around the rule's decode picks first,
    then stages 4, BM 16, BM 32, then other warps_n."""
    out, seen = [], set()

    def add(bm, bn, bk, st, sk, wn=None, gs=0):
        s = dict(BM=bm, BN=bn, BK=bk, STAGES=st, SPLIT_K=sk)
        if wn:
            s["WARPS_N"] = wn
        if gs:
            s["GROUP_SUMS"] = gs
        key = tuple(sorted(s.items()))
        if key not in seen:
            seen.add(key)
            out.append(s)

    sks, bns, bks = (1, 2, 4, 8), (64, 128, 256), (64, 128, 256)

    def block(bm, stages):  # split-K x BN x BK at these BM and stages
        for st in stages:
            for sk in sks:
                for bn in bns:
                    for bk in bks:
                        add(bm, bn, bk, st, sk)

    if level == "fit":  # the staged tiles the decode rule chooses between
        block(8, (3, 4))
        block(16, (3, 4))
        return out
    if level == "gs":  # the staged decode tiles in each group-sum form, pairs adjacent
        for bm in (8, 16):
            for bn in (128, 256, 64):
                for bk in (128, 256):
                    for sk in (1, 2, 4):
                        add(bm, bn, bk, 3, sk)
                        add(bm, bn, bk, 3, sk, gs=1)
        return out
    if level == "warps":  # the rule's staged tiles with 8 warps along N against its 4
        for bm in (8, 16):
            for bn in (128, 256):
                for bk in (128, 256):
                    for st in (3, 4):
                        for sk in (1, 2, 4):
                            add(bm, bn, bk, st, sk)
                            add(bm, bn, bk, st, sk, 8)
        return out
    block(8, (2, 3))
    if level == "small":
        return out
    block(8, (4,))
    block(16, (2, 3, 4))
    if level == "medium":
        return out
    block(32, (2, 3, 4))
    for bm in (8, 16):
        for st in (2, 3):
            for sk in sks:
                for bk in bks:
                    add(bm, 64, bk, st, sk, 2)
                    for bn in (128, 256):
                        add(bm, bn, bk, st, sk, 8)
    return out


def setting_name(s):
    if not s:
        return "default"
    name = f"m{s['BM']}n{s['BN']}k{s['BK']}s{s['STAGES']}"
    if "WARPS_N" in s:
        name += f"w{s['WARPS_N']}"
    return name + f"sk{s['SPLIT_K']}" + (f"gs{s['GROUP_SUMS']}" if "GROUP_SUMS" in s else "")


def setting_env(s):
    if not s:
        return {}
    env = {f"CHORD_W4A16_{k}": str(v) for k, v in s.items()}
    env["CHORD_W4A16_ENGINE"] = "mma_sync"
    return env


def config_of(s):
    return dict(engine="mma_sync", block_m=s["BM"], block_n=s["BN"], block_k=s["BK"], stages=s["STAGES"],
                split_k=s["SPLIT_K"], warps_n=s.get("WARPS_N"), group_sums=s.get("GROUP_SUMS", 0))


# ---------------------------------------------------------------- device side

CLEAR = [f"CHORD_W4A16_{k}" for k in ENV_KEYS + ("ENGINE", "PROFILE", "PORTABLE")] + ["CHORD_SM90_DECODE"]


def with_env(env, fn):
    saved = {k: os.environ.get(k) for k in CLEAR + list(env)}
    for k in CLEAR:
        os.environ.pop(k, None)
    os.environ.update(env)
    try:
        return fn()
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def wheel_libchord():
    """The libchord.so this process loaded with chord_kernels (from /proc/self/maps)."""
    import chord_kernels  # noqa: F401
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1]
            if "libchord" in os.path.basename(path) and path.endswith(".so"):
                return path
    import chord_kernels as ck
    found = glob.glob(os.path.join(os.path.dirname(ck.__file__), "**", "libchord*.so*"), recursive=True)
    if not found:
        raise RuntimeError("decode_explore: the wheel's libchord.so was not found")
    return found[0]


class Copies:
    """One libchord copy per setting, each opened and first used with its setting's environment."""

    def __init__(self, folder):
        import chord_kernels as ck
        self.ck, self.folder, self.src, self.libs = ck, folder, wheel_libchord(), {}
        os.makedirs(folder, exist_ok=True)

    def get(self, s):
        name = setting_name(s)
        if not s:
            return None
        if name not in self.libs:
            path = os.path.join(self.folder, f"libchord_{name}.so")
            if not os.path.exists(path):
                shutil.copyfile(self.src, path + ".tmp")
                os.replace(path + ".tmp", path)
            self.libs[name] = with_env(setting_env(s), lambda: self.ck.load_library(path))
        return self.libs[name]


def first_use(lib, s, fn):
    """A library copy reads CHORD_* at its first use: make every call of a setting with its env."""
    if lib is None:  # this package's library (default setting, or --mode env: the parent set the env)
        return fn()
    return with_env(setting_env(s), fn)


def prewarm(args):
    """Compiles each assigned setting's kernels on tiny problems (shared disk cache)."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import bench_w4a16 as b
    settings = json.load(open(args.settings_file))[args.worker::args.workers]
    gen = torch.Generator(device="cuda")
    gen.manual_seed(7)
    e, n, k = 4, 512, 1024
    wi = b.ExpertWeights(None, e, n, k, gen)
    wn = b.NF4ExpertWeights(None, e, n, k, gen)
    problems = []
    for mode, weight in (("indexed", "int4"), ("masked", "int4"), ("offsets", "int4"), ("offsets", "nf4")):
        c = dict(mode=mode, weight=weight, experts=e, n=n, k=k, proj="gate_up", x=4)
        if mode == "masked":
            c.update(masked_m=[2, 0, 3, 1], max_m=8, expected_m=2)
        else:
            c.update(topk_ids=[[0, 1], [1, 2], [3, 0], [2, 1]], tokens=4, top_k=2)
        g.geometry(c, 32 if mode == "indexed" else None)
        problems.append((c, wn if weight == "nf4" else wi))
    copies = Copies(args.lib_dir)
    for s in settings:
        lib = copies.get(s)
        for c, w in problems:
            try:
                fn, _ = b.generalization_call(lib, c, w, gen)
                first_use(lib, s, fn)
            except (RuntimeError, ValueError):
                pass
        torch.cuda.synchronize()
        open(os.path.join(args.lib_dir, f"warm_{setting_name(s)}"), "w").close()
    return 0


def time_call(torch, fn, flush, reps, warmup):
    import bench_w4a16 as b
    for _ in range(warmup):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)]
    for s, e in ev:
        b.flush_l2(flush)  # the bench's flush (a read, or CHORD_BENCH_FLUSH=write's zeroing)
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    t = sorted(s.elapsed_time(e) * 1000.0 for s, e in ev)
    return t[len(t) // 2]


def run(args):
    import torch
    sys.path.insert(0, os.path.join(ROOT, "bench"))
    import bench_w4a16 as b
    t_start = time.perf_counter()
    calls = decode_calls(args.only, args.quick, args.min_floor_us)
    settings = json.load(open(args.settings_file))
    rows = [row_record(c) for c in calls]
    g.resolve_configs(calls, jobs=4)  # the current rule's config per row
    for r, c in zip(rows, calls):
        r["rule_config"] = g.config_label(c["config"])
        r["rule"] = {k: c["config"].get(k) for k in ("engine", "block_m", "block_n", "block_k", "stages",
                                                       "warps_n", "split_k", "source")}
    gen = torch.Generator(device="cuda")
    gen.manual_seed(b.SEED)
    # Weights of every split, packed once; BF16 copies kept only for each kind's check row.
    kinds = {}
    for c in calls:
        key = (c["mode"], c["weight"])
        size = c["experts"] * c["n"] * c["k"]
        if key not in kinds or size < kinds[key][0]:
            kinds[key] = (size, c["id"])
    check_ids = {v[1] for v in kinds.values()}
    check_w = {(c["split"], c["proj"], c["weight"]) for c in calls if c["id"] in check_ids}
    weights = {}
    for c in calls:
        wk = (c["split"], c["proj"], c["weight"])
        if wk not in weights:
            weights[wk] = b.generalization_weights(None, c, gen)
            if wk not in check_w:
                weights[wk].bf16 = None
    torch.cuda.synchronize()
    print(f"{len(calls)} decode calls, {len(weights)} weights in {time.perf_counter() - t_start:.1f} s", flush=True)
    flush = b.l2_flush_buffer()
    b.settle_clocks()
    copies = Copies(args.lib_dir) if args.mode == "copies" else None
    results, not_run, t_timing = [], [], time.perf_counter()
    order = [{}] + settings + [{}]
    for idx, s in enumerate(order):
        name = setting_name(s) + ("@end" if idx == len(order) - 1 and idx else "")
        if idx not in (0, len(order) - 1) and time.perf_counter() - t_timing > args.budget_s:
            not_run.append(setting_name(s))
            continue
        t_set = time.perf_counter()
        lib = copies.get(s) if copies else None
        checked, n_ok, n_rej, n_fail = set(), 0, 0, 0
        for c in calls:
            res = dict(row=c["id"], setting=name, us=None, ok=False)
            try:
                fn, check = b.generalization_call(lib, c, weights[(c["split"], c["proj"], c["weight"])], gen)
                first_use(lib, s, fn)  # compile or disk hit, under the setting's env
                kind = (c["mode"], c["weight"])
                if c["id"] in check_ids and kind not in checked:
                    torch.cuda.synchronize()
                    good, err = check()
                    checked.add(kind)
                    res.update(checked=True, rel_error=float(err))
                    if not good:
                        res["error"] = f"check failed (rel error {err:.3g})"
                        n_fail += 1
                        results.append(res)
                        continue
                us = time_call(torch, fn, flush, args.reps, args.warmup)
                res.update(us=round(us, 2), ok=True, pct_floor=round(100.0 * c["floor_us"] / us, 1))
                n_ok += 1
            except (RuntimeError, ValueError) as e:
                res["error"] = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
                n_rej += 1
            results.append(res)
        print(f"[{idx}/{len(order) - 1}] {name:22s} {n_ok} timed, {n_rej} rejected, {n_fail} failed checks, "
              f"{time.perf_counter() - t_set:.1f} s", flush=True)
        if args.mode == "env":
            break
    meta = dict(arch=g.ARCH, sms=g.SMS, reps=args.reps, warmup=args.warmup, grid=args.grid, mode=args.mode,
                seconds=round(time.perf_counter() - t_start, 1), timing_seconds=round(time.perf_counter() - t_timing, 1),
                budget_s=args.budget_s, not_run=not_run, torch=torch.__version__,
                gpu=torch.cuda.get_device_name(), decode_max_rows=DECODE_MAX_ROWS,
                l2_flush="write" if b.WRITE_FLUSH else "read")
    doc = dict(meta=meta, settings={setting_name(s): (config_of(s) if s else None) for s in order},
               rows=rows, results=results)
    with open(args.json_out, "w") as f:
        json.dump(doc, f)
    return 0


# ---------------------------------------------------------------- driver

def plan(args):
    calls = decode_calls(args.only, args.quick, args.min_floor_us)
    settings = grid(args.grid)[:args.max_settings or None]
    by = {}
    for c in calls:
        by.setdefault((c["set"], c["mode"], c["weight"]), 0)
        by[(c["set"], c["mode"], c["weight"])] += 1
    print(f"{len(calls)} decode calls: " + ", ".join(f"{k}: {v}" for k, v in sorted(by.items())))
    print(f"grid '{args.grid}': {len(settings)} settings (+ default twice); first: "
          + " ".join(setting_name(s) for s in settings[:6]))
    per_setting = len(calls) * (args.reps + args.warmup) * 0.13e-3 + 0.3
    print(f"estimated timing: {per_setting:.2f} s per setting -> {len(settings) * per_setting:.0f} s unbudgeted; "
          f"--budget-s {args.budget_s} keeps about {int(args.budget_s / per_setting)} settings")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/chord-out"))
    ap.add_argument("--grid", choices=("small", "medium", "full", "fit", "warps", "gs"), default="medium",
                    help="fit: BM 8 and 16 at 3 and 4 stages only (the staged tiles the decode rule picks from); "
                         "warps: BM 8 / 16, BN 128 / 256 staged tiles with 4 and with 8 warps along N; "
                         "gs: BM 8 / 16 staged tiles at 3 stages in both group-sum forms (CHORD_W4A16_GROUP_SUMS)")
    ap.add_argument("--min-floor-us", type=float, default=0.0,
                    help="leave out calls whose read floor is under this (the 85%% target excepts those under 10 us)")
    ap.add_argument("--max-settings", type=int, default=0, help="keep the first N settings of the grid (0: all)")
    ap.add_argument("--budget-s", type=float, default=190.0, help="timing seconds before the remaining settings are skipped")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--prewarm", type=int, default=12, help="compile processes (0: none)")
    ap.add_argument("--mode", choices=("copies", "env"), default="copies")
    ap.add_argument("--only", default=None, help="scenario substring filter")
    ap.add_argument("--quick", action="store_true", help="the sets' quick sweeps")
    ap.add_argument("--plan", action="store_true", help="CPU: count rows and settings, estimate time")
    # internal
    ap.add_argument("--role", choices=("driver", "prewarm", "run"), default="driver")
    ap.add_argument("--settings-file")
    ap.add_argument("--lib-dir")
    ap.add_argument("--json-out")
    ap.add_argument("--worker", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    args = ap.parse_args()
    if args.plan:
        return plan(args)
    if args.role == "prewarm":
        return prewarm(args)
    if args.role == "run":
        return run(args)
    os.makedirs(args.out, exist_ok=True)
    tmp = os.environ.get("DECODE_EXPLORE_TMP", "/tmp/decode_explore")
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    os.environ.setdefault("CHORD_CACHE_DIR", os.path.join(tmp, "cache"))
    settings = grid(args.grid)[:args.max_settings or None]
    sfile = os.path.join(tmp, "settings.json")
    json.dump(settings, open(sfile, "w"))
    lib_dir = os.path.join(tmp, "libs")
    os.makedirs(lib_dir)
    base = [sys.executable, os.path.abspath(__file__), "--settings-file", sfile, "--lib-dir", lib_dir,
            "--grid", args.grid, "--reps", str(args.reps), "--warmup", str(args.warmup)]
    if args.only:
        base += ["--only", args.only]
    if args.quick:
        base += ["--quick"]
    if args.min_floor_us:
        base += ["--min-floor-us", str(args.min_floor_us)]
    out_json = os.path.join(args.out, "decode_explore.json")
    t0 = time.perf_counter()
    if args.mode == "copies":
        warm = [subprocess.Popen(["nice", "-n", "10"] + base + ["--role", "prewarm", "--worker", str(i),
                                                               "--workers", str(args.prewarm)],
                                 stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, f"prewarm{i}.log"), "w"))
                for i in range(args.prewarm)]
        rc = subprocess.call(base + ["--role", "run", "--mode", "copies", "--json-out", out_json,
                                     "--budget-s", str(args.budget_s)])
        for p in warm:
            if p.poll() is None:
                p.terminate()
            p.wait()
        if rc == 0:
            print(f"decode_explore: {out_json} in {time.perf_counter() - t0:.0f} s")
            return 0
        print(f"decode_explore: library copies failed (rc {rc}); falling back to one process per setting", flush=True)
    # env mode: one process per setting, within what is left of the budget.
    budget_end = time.perf_counter() + args.budget_s
    merged = None
    for s in [{}] + settings:
        if time.perf_counter() > budget_end:
            merged["meta"]["not_run"].append(setting_name(s))
            continue
        part = os.path.join(tmp, f"part_{setting_name(s)}.json")
        json.dump([], open(sfile, "w"))
        env = dict(os.environ)
        for k in CLEAR:
            env.pop(k, None)
        env.update(setting_env(s))
        args_s = base + ["--role", "run", "--mode", "env", "--json-out", part, "--budget-s", "1e9"]
        if subprocess.call(args_s, env=env) != 0 or not os.path.exists(part):
            continue
        doc = json.load(open(part))
        for r in doc["results"]:
            r["setting"] = setting_name(s)
        if merged is None:
            merged = doc
            merged["settings"] = {}
        else:
            merged["results"] += doc["results"]
        merged["settings"][setting_name(s)] = config_of(s) if s else None
    if merged is None:
        print("decode_explore: no setting ran")
        return 1
    merged["meta"]["mode"] = "env"
    with open(out_json, "w") as f:
        json.dump(merged, f)
    print(f"decode_explore: {out_json} (env mode) in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
