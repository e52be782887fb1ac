"""Peers that bench/bench_w4a16.py --peers times on the same inputs as chord (issue 29).

humming: inclusionAI's Humming (PyPI humming-kernels, the version vLLM 0.33 pins), installed by
scripts/peer-wheels.sh into a folder of its own (PEER_SITE, default <repo>/.peer-site), never
into site-packages: our wheel ships a top-level `humming` package of its own (the facade vLLM's
Humming backend imports), and the real one must not shadow it.

Import isolation (PeerModules): the real package is loaded from that folder alone, with the
`humming` names of sys.modules swapped out while it loads and while each of its calls runs, and
swapped back afterwards: whoever imports `humming` outside a peer call gets what they got before
(our facade, or nothing). The folder's other packages (jinja2, tabulate, cuda-bindings, ...) are
appended to sys.path, after site-packages, so that they fill gaps and shadow nothing installed.
Nothing here imports torch at module level: tests/python/test_peers_cpu.py checks the isolation
with a fake peer package, on any machine.

The adapter (HummingMoE) follows the call sequence of vLLM 0.33's Humming MoE experts
(fused_humming_moe.py): HummingWeightSchema -> prepare_and_transform_humming_tensors ->
get_heuristics_config -> humming_forward, with routing from moe_align_block_size (indexed) or
expert offsets (grouped_contiguous). Weights: uint4 offset-binary codes (value = code - 8, the
bench's symmetric INT4) with one bf16 scale per 32 along K, no zero point.

marlin: vLLM 0.33's Marlin MoE GEMM (torch.ops._moe_C.moe_wna16_marlin_gemm), with vLLM's
moe_align_block_size and gptq_marlin_repack, compiled from vLLM's source for sm_90a by
scripts/peer-marlin.sh into one small library (PEER_MARLIN, default
<repo>/.peer-marlin/libvllm_marlin_moe_sm90a.so) that torch.ops.load_library loads (libtorch
stable ABI, torch >= 2.11). The adapter (MarlinMoE) follows vLLM 0.33's fused_marlin_moe
(fused_moe/experts/marlin_moe.py): the same weights as GPTQ (K-packed int32 qweight, uint4b8,
g32) -> gptq_marlin_repack per expert, scales [K / 32, N] permuted as marlin_permute_scales
does; its block rule (the first of 8, 16, 32, 48, 64 with M * top_k / E / block < 0.9, M scaled
by E / global experts under EP), moe_align_block_size with the expert map; then
moe_wna16_marlin_gemm with the flags of _fused_marlin_moe (fp32 reduce, no atomic add).
"""
import importlib
import importlib.machinery
import importlib.util
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SITE = os.path.join(REPO, ".peer-site")
KNOWN = ("humming", "marlin")
HOW_TO_INSTALL = ("run scripts/peer-wheels.sh where the package index is reachable, carry .peer-wheels, and "
                  "install it offline with: python3 -m pip install --no-index --no-deps --target .peer-site "
                  ".peer-wheels/*.whl (docs/benchmarking.md, 'Peers')")


class PeerMissing(RuntimeError):
    pass


def parse_peers(value):
    """--peers' value -> the peer names, in order, each once; ValueError naming an unknown one."""
    names = []
    for name in (p.strip() for p in value.split(",")):
        if not name:
            continue
        if name not in KNOWN:
            raise ValueError(f"unknown peer {name!r} (known: {', '.join(KNOWN)})")
        if name not in names:
            names.append(name)
    return names


def load_peer(name):
    """The loaded peer `name` (for the bench's Suite); PeerMissing, saying how to install it."""
    return {"humming": load_humming, "marlin": load_marlin}[name]()


def _owned(name, package):
    return name == package or name.startswith(package + ".")


class PeerModules:
    """The modules of one top-level package loaded from `site` only, kept apart from
    sys.modules: `with peer:` puts them in (moving aside whatever held those names), and takes
    them out again on exit, restoring what was there."""

    def __init__(self, package, site):
        self.package, self.site = package, os.path.abspath(site)
        self.modules = {}
        self._saved = None
        self._known = ()

    def __enter__(self):
        return self._enter(None)

    def __exit__(self, *exc):
        names = [n for n in sys.modules if _owned(n, self.package)]
        self._exit(names)
        return False

    def _enter(self, names):
        if self._saved is not None:
            raise RuntimeError(f"{self.package}: peer modules entered twice")
        if names is None:
            names = [n for n in sys.modules if _owned(n, self.package)]
        self._saved = {n: sys.modules.pop(n) for n in names if n in sys.modules}
        sys.modules.update(self.modules)
        return self

    def _exit(self, names):
        self.modules = {n: sys.modules.pop(n) for n in names if n in sys.modules}
        sys.modules.update(self._saved)
        self._known = tuple(set(self.modules) | set(self._saved))
        self._saved = None

    class _Calling:
        def __init__(self, peer):
            self.peer = peer

        def __enter__(self):
            return self.peer._enter(self.peer._known)

        def __exit__(self, *exc):
            self.peer._exit(self.peer._known)
            return False

    def calling(self):
        """The swap of `with peer:` for a hot call (a timed kernel launch): only the names seen
        at the last full exit are swapped (no scan of sys.modules, which costs far more than
        the launch); a call that imports a new module of the package keeps it in the peer's
        set only if the name was known. Use `with peer:` for anything that may import."""
        return self._Calling(self)

    def load(self, *submodules):
        """Imports the package from `site` (and the submodules, by their full names) into this
        set; returns the top module. PeerMissing if `site` holds no such package."""
        spec = importlib.machinery.PathFinder.find_spec(self.package, [self.site])
        if spec is None or spec.origin is None:
            raise PeerMissing(f"no `{self.package}` package in {self.site}")
        if self.site not in sys.path:
            sys.path.append(self.site)  # its dependencies, after everything installed
        importlib.invalidate_caches()
        with self:
            module = importlib.util.module_from_spec(spec)
            sys.modules[self.package] = module
            try:
                spec.loader.exec_module(module)
                for name in submodules:
                    importlib.import_module(f"{self.package}.{name}")
            except BaseException:
                for name in [n for n in sys.modules if _owned(n, self.package)]:
                    del sys.modules[name]
                raise
        origin = os.path.realpath(getattr(module, "__file__", "") or "")
        if not origin.startswith(os.path.realpath(self.site) + os.sep):
            raise PeerMissing(f"`{self.package}` resolved to {origin}, not under {self.site}")
        return module

    def get(self, name):
        return self.modules[f"{self.package}.{name}" if name else self.package]


def load_humming(site=None):
    """PeerModules of the real Humming package from `site` (PEER_SITE or .peer-site), with the
    submodules the adapter uses loaded. PeerMissing (saying how to install it) if absent, or if
    what is there is chord's own facade."""
    site = site or os.environ.get("PEER_SITE") or DEFAULT_SITE
    peer = PeerModules("humming", site)
    try:
        top = peer.load("dtypes", "config", "schema", "transform", "tune", "forward", "ops")
    except PeerMissing as e:
        raise PeerMissing(f"--peers humming: {e}; {HOW_TO_INSTALL}") from None
    except ImportError as e:
        raise PeerMissing(f"--peers humming: the package in {site} does not import ({e}); {HOW_TO_INSTALL}") \
            from e
    if getattr(top, "BACKEND", None) == "chord":
        raise PeerMissing(f"--peers humming: {site} holds chord's humming facade, not inclusionAI's package; "
                          + HOW_TO_INSTALL)
    return peer


def peer_version(peer):
    if isinstance(peer, MarlinPeer):
        return peer.version
    try:
        return peer.get("_version").__version__
    except (KeyError, AttributeError):
        with peer:
            try:
                return importlib.import_module("humming._version").__version__
            except (ImportError, AttributeError):
                return "unknown"


class HummingMoE:
    """One MoE projection's experts in Humming's layout, built from the bench's weights: codes
    uint8 [E, N, K] (0..15, value code - 8) and bf16 scales [E, N, K / 32]. The weights serve
    every gemm type; each type's tuning (get_heuristics_config) is computed on first use:
    "indexed" (moe_align_block_size routing) and "grouped_contiguous" (rows sorted by expert)."""

    def __init__(self, peer, codes, scales):
        import torch
        self.peer = peer
        e, n, k = codes.shape
        assert scales.shape == (e, n, k // 32) and scales.dtype == torch.bfloat16, scales.shape
        self.experts, self.n, self.k = e, n, k
        with peer:
            ops, schema_mod, transform = peer.get("ops"), peer.get("schema"), peer.get("transform")
            packed = torch.empty(e, n, k // 8, dtype=torch.int32, device=codes.device)
            for i in range(e):  # Humming's own packer, one expert at a time (int32 temporaries)
                packed[i] = ops.pack_weight(codes[i].to(torch.int32), 4)
            schema = schema_mod.HummingWeightSchema(b_dtype="uint4", weight_scale_group_size=32,
                                                    has_zero_point=False)
            self.config, tensors = transform.prepare_and_transform_humming_tensors(
                {"weight": packed, "weight_scale": scales}, shape_n=n, shape_k=k, weight_schema=schema,
                num_experts=e, torch_dtype=torch.bfloat16, device=codes.device)
            del packed
            self.forward = peer.get("forward").humming_forward
        self.tensors = dict(weight=tensors["weight"], weight_scale=tensors.get("weight_scale"),
                            weight_scale_2=tensors.get("weight_scale_2"))
        self.tunings = {}
        self._called = False
        sms = torch.cuda.get_device_properties(codes.device).multi_processor_count
        self.locks = torch.zeros(sms * 8, dtype=torch.int32, device=codes.device)  # as vLLM's create_humming_locks

    def first_experts(self, experts):
        """The same weights' first `experts` experts (a layer config for that many experts and
        the tensors' leading slices), for the bench's EP16 / EP32 subsets."""
        import dataclasses
        sub = object.__new__(HummingMoE)
        sub.__dict__.update(self.__dict__)
        with self.peer:
            sub.config = dataclasses.replace(self.config, num_experts=experts)
        sub.tensors = {name: (t[:experts] if t is not None and t.dim() >= 2 and t.size(0) == self.experts else t)
                       for name, t in self.tensors.items()}
        sub.experts, sub.tunings = experts, {}
        return sub

    def tuning(self, gemm_type):
        if gemm_type not in self.tunings:
            with self.peer:
                kind = self.peer.get("config").GemmType(gemm_type)
                table = self.peer.get("tune").get_heuristics_config(
                    layer_config=self.config, use_f16_accum=False, use_batch_invariant=False, gemm_type=kind)
            compute = dict(use_batch_invariant=False, use_f16_accum=False, gemm_type=gemm_type)
            self.tunings[gemm_type] = (table, json.dumps(table), json.dumps(compute))
        return self.tunings[gemm_type]

    def block_size(self, valid_shape_m, gemm_type="indexed"):
        """The routing block Humming's heuristics give `valid_shape_m` routed rows (vLLM reads
        block_shape[0] of the range lo < m <= hi, 64 where none holds it)."""
        for lo, hi, config in self.tuning(gemm_type)[0]:
            if lo < valid_shape_m <= hi:
                return int(config["block_shape"][0])
        return 64

    def _call(self, gemm_type, a, out, **kwargs):
        _, tuning_str, compute_str = self.tuning(gemm_type)
        # the first call (JIT compile, the launcher's load: lazy imports) swaps with a full scan
        swap = self.peer.calling() if self._called else self.peer
        self._called = True
        with swap:
            return self.forward(self.config, inputs=a, outputs=out, locks=self.locks, compute_config=compute_str,
                                tuning_config=tuning_str, **self.tensors, **kwargs)

    def indexed(self, a, out, sorted_ids, expert_ids, num_tokens_padded, top_k, valid_shape_m):
        """out[route] = a[route // top_k] @ W[expert]^T for the routes of sorted_ids (aligned at
        block_size(valid_shape_m)); out has M * top_k rows."""
        return self._call("indexed", a, out, sorted_ids=sorted_ids, expert_ids=expert_ids,
                          num_tokens_padded=num_tokens_padded, top_k=top_k, valid_shape_m=valid_shape_m)

    def contiguous(self, a, out, expert_layout, valid_shape_m):
        """Rows of `a` sorted by expert; expert_layout int64 [E + 1]: each expert's first row,
        then the total (expert_layout_from_offsets)."""
        return self._call("grouped_contiguous", a, out, expert_layout=expert_layout, valid_shape_m=valid_shape_m)


def expert_layout_from_offsets(offsets):
    """chord's inclusive int32 offsets [E] -> Humming's grouped_contiguous layout, int64 [E + 1]."""
    import torch
    return torch.nn.functional.pad(offsets.long(), (1, 0), value=0)



# -- marlin ----------------------------------------------------------------------------------

MARLIN_LIBRARY = "libvllm_marlin_moe_sm90a.so"
DEFAULT_MARLIN = os.path.join(REPO, ".peer-marlin", MARLIN_LIBRARY)
HOW_TO_BUILD_MARLIN = ("run scripts/peer-marlin.sh where the network, nvcc and torch are (it builds vLLM 0.33's "
                       "Marlin MoE from source for sm_90a into .peer-marlin, under 1 MB) and carry .peer-marlin "
                       "(docs/benchmarking.md, 'Peers')")
MARLIN_OPS = (("_moe_C", "moe_wna16_marlin_gemm"), ("_moe_C", "moe_align_block_size"), ("_C", "gptq_marlin_repack"))


def scalar_type_id(exponent, mantissa, signed, bias, finite_values_only=False, nan_repr=1):
    """vLLM's ScalarType.id: the fields packed from bit 0 up, in widths 8, 8, 1, 32, 1, 8 (the
    layout vllm::ScalarType::from_id reads); nan_repr 1 is NAN_IEEE (vLLM's default)."""
    value, offset = 0, 0
    for field, width in ((exponent, 8), (mantissa, 8), (signed, 1), (bias, 32), (finite_values_only, 1),
                         (nan_repr, 8)):
        value |= (int(field) & ((1 << width) - 1)) << offset
        offset += width
    return value


UINT4B8_ID = scalar_type_id(0, 4, False, 8)  # scalar_types.uint4b8: GPTQ's symmetric INT4 (value = code - 8)


class MarlinPeer:
    """The loaded Marlin library: its path and the BUILD note scripts/peer-marlin.sh wrote."""

    def __init__(self, path, version):
        self.path, self.version = path, version


def load_marlin(path=None):
    """Loads the Marlin MoE library (PEER_MARLIN or .peer-marlin) into torch.ops; PeerMissing
    (saying how to build it) if absent, if it does not load, or if it lacks one of the ops."""
    path = path or os.environ.get("PEER_MARLIN") or DEFAULT_MARLIN
    if not os.path.isfile(path):
        raise PeerMissing(f"--peers marlin: no {path}; {HOW_TO_BUILD_MARLIN}")
    import torch
    try:
        torch.ops.load_library(path)
    except (OSError, RuntimeError) as e:
        cause = e.__cause__ or e
        raise PeerMissing(f"--peers marlin: {path} does not load ({cause}); {HOW_TO_BUILD_MARLIN}") from e
    for namespace, op in MARLIN_OPS:
        if not hasattr(getattr(torch.ops, namespace), op):
            raise PeerMissing(f"--peers marlin: {path} registers no torch.ops.{namespace}.{op}; "
                              + HOW_TO_BUILD_MARLIN)
    note = os.path.join(os.path.dirname(path), "BUILD")
    version = "unknown"
    if os.path.isfile(note):
        with open(note) as f:
            version = f.readline().strip() or version
    return MarlinPeer(path, version)


def gptq_qweight(codes):
    """uint8 codes [N, K] (0..15) -> GPTQ's qweight, int32 [K / 8, N]: word (k / 8, n) holds the
    codes of k .. k + 7 at column n, code k + i in bits 4i .. 4i + 3."""
    import torch
    n, k = codes.shape
    by_k = codes.t().reshape(k // 8, 8, n).to(torch.int64)
    shifts = (4 * torch.arange(8, dtype=torch.int64, device=codes.device)).view(1, 8, 1)
    words = (by_k << shifts).sum(dim=1)  # 0 .. 2^32 - 1, then the int32 of the same bits
    return torch.where(words >= 1 << 31, words - (1 << 32), words).to(torch.int32)


def marlin_scales(scales):
    """Per-group scales [N, K / g] (the bench's layout) -> Marlin's [K / g, N]: GPTQ's [K / g, N],
    each run of 64 along N read as an 8 x 8 block and transposed (position 8 i + j takes
    i + 8 j: the permutation vLLM's marlin_permute_scales applies where group_size < K)."""
    groups, n = scales.shape[1], scales.shape[0]
    assert n % 64 == 0, n
    by_k = scales.t().contiguous()
    return by_k.reshape(-1, 8, 8).transpose(1, 2).reshape(groups, n).contiguous()


def marlin_unserved(hidden, intermediate, group_size=32):
    """Why vLLM 0.33 would not run Marlin MoE on a layer (hidden size, intermediate size per
    partition), or None where it would: check_moe_marlin_supports_layer's shape rule, hidden % 128
    and intermediate % max(64, group) ("moe marlin requires n % 128 == 0 and k % 64 == 0" for
    gate_up (2 x intermediate, hidden) and down (hidden, intermediate)), group -1, 32, 64 or 128.
    Where it would not, vLLM runs another kernel: the bench says 'not run', with this reason."""
    problems = [what for what, bad in (
        (f"hidden {hidden} % 128 != 0", hidden % 128),
        (f"intermediate {intermediate} % {max(64, group_size)} != 0", intermediate % max(64, group_size)),
        (f"group {group_size} not in -1, 32, 64, 128", group_size not in (-1, 32, 64, 128))) if bad]
    if not problems:
        return None
    return "vLLM's check_moe_marlin_supports_layer refuses the layer: " + ", ".join(problems)


def marlin_block_size(tokens, top_k, experts, global_experts=None):
    """vLLM 0.33 fused_marlin_moe's routing block: M = tokens (times experts / global experts
    under EP, rounded up); the first block of 8, 16, 32, 48, 64 with M * top_k / experts / block
    < 0.9, else 64."""
    m = tokens
    if global_experts is not None and global_experts != experts:
        m = -(-tokens * experts // global_experts)
    for block in (8, 16, 32, 48, 64):
        if m * top_k / experts / block < 0.9:
            return block
    return 64


class MarlinMoE:
    """One MoE projection's experts in Marlin's layout, built from the bench's weights: codes
    uint8 [E, N, K] (0..15, value code - 8) and bf16 scales [E, N, K / 32]."""

    def __init__(self, peer, codes, scales):
        import torch
        e, n, k = codes.shape
        assert scales.shape == (e, n, k // 32) and scales.dtype == torch.bfloat16, scales.shape
        assert n % 128 == 0 and k % 64 == 0, (n, k)  # the per-GEMM form of marlin_unserved's rule
        self.peer, self.experts, self.n, self.k = peer, e, n, k
        repack = torch.ops._C.gptq_marlin_repack
        self.weight = torch.empty(e, k // 16, n * 2, dtype=torch.int32, device=codes.device)
        self.scales = torch.empty(e, k // 32, n, dtype=torch.bfloat16, device=codes.device)
        for i in range(e):  # as vLLM's gptq_marlin_moe_repack / marlin_moe_permute_scales: one expert at a time
            self.weight[i] = repack(gptq_qweight(codes[i]), k, n, 4, False)
            self.scales[i] = marlin_scales(scales[i])
        sms = torch.cuda.get_device_properties(codes.device).multi_processor_count
        # vLLM's marlin_make_workspace_new(device, MARLIN_MAX_BLOCKS_PER_SM = 4)
        self.workspace = torch.zeros(sms * 4, dtype=torch.int32, device=codes.device)

    def align(self, topk_ids, block, global_experts, expert_map=None):
        """vLLM's moe_align_block_size(topk_ids, block, global_experts, expert_map,
        ignore_invalid_experts=True): routes to other ranks' experts are left out."""
        import torch
        numel = topk_ids.numel()
        padded = numel + global_experts * (block - 1)
        if numel < global_experts:
            padded = min(numel * block, padded)
        dev = topk_ids.device
        sorted_ids = torch.empty(padded, dtype=torch.int32, device=dev)
        expert_ids = torch.empty(-(-padded // block), dtype=torch.int32, device=dev)
        total = torch.empty(1, dtype=torch.int32, device=dev)
        torch.ops._moe_C.moe_align_block_size(topk_ids, global_experts, block, sorted_ids, expert_ids, total,
                                              expert_map, None)
        return sorted_ids, expert_ids, total

    def indexed(self, a, out, sorted_ids, expert_ids, total, topk_weights, block, top_k, mul_topk_weights):
        """out[route] = a[route // top_k] @ W[expert]^T (times topk_weights[route] with
        mul_topk_weights), as _fused_marlin_moe calls the kernel; out has a.size(0) * top_k rows."""
        import torch
        return torch.ops._moe_C.moe_wna16_marlin_gemm(
            a, out, self.weight, None, self.scales, None, None, None, self.workspace, sorted_ids, expert_ids,
            total, topk_weights, block, top_k, mul_topk_weights, UINT4B8_ID, a.size(0), self.n, self.k,
            False, True, False, -1, -1, -1)
