"""Decode calls of the generalization set and the suite, each once inside an NVTX range "prof",
for ncu (`--nvtx --nvtx-include prof/`); every kernel is compiled and warmed up first.

    python3 lab/kernel_check/decode_ncu.py ID_TEXT [ID_TEXT ...]

ID_TEXT selects the calls whose id (lab/kernel_check/decode_explore.py's "SCENARIO|x=X|PROJ")
contains it, e.g. "dsv3_ep8 indexed uniform|x=1|gate_up". Prints each selected call's config."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench"))
import torch  # noqa: E402
import bench_w4a16 as b  # noqa: E402
import decode_explore as de  # noqa: E402
import generalization as g  # noqa: E402
import one_call  # noqa: E402


def main(texts):
    calls = [c for c in de.decode_calls() if any(t in c["id"] for t in texts)]
    if not calls:
        print("decode_ncu: no call matches", texts)
        return 2
    g.resolve_configs(calls, jobs=4)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(b.SEED)
    fns = []
    for c in calls:
        w = b.generalization_weights(None, c, gen)
        fn, check = b.generalization_call(None, c, w, gen)
        fn()
        ok, err = check()
        print(f"{c['id']}: {g.config_label(c['config'])}, floor {c['floor_us']:.1f} us, check ok={ok} err={err:.2e}")
        fns.append(fn)
    one_call.profile_once(fns)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
