"""The MoE activation pass between the gate_up and down GEMMs, as a torch operator.

    out = moe_activation(gate_up, "binary_split", "(a / (1.f + expf(-a))) * b")   # SiLU-and-mul

The expression is CUDA C++ in `float a, b`; the library compiles it into the kernel on
first use (NVRTC) and keeps the cubin in its cache, keyed by the text. One pass reads each
input row once and writes each output row once; nothing synchronizes the host, so the call
can be captured in a CUDA Graph. Layouts: every row (optionally bounded by a device-side
row count), a scatter of each row to its destination rows, or equal per-expert blocks of
which only the first group_rows[g] rows are valid.
"""
from typing import Optional

import torch

from ._native import lib as _C
from ._native import native as _native
from ._ops import _check_device, _compiling, _define_op, _fail, _leading, _raw_stream, _run_on

KINDS = {
    "unary": int(_C.ACTIVATION_UNARY),
    "binary_split": int(_C.ACTIVATION_BINARY_SPLIT),
    "binary_interleaved": int(_C.ACTIVATION_BINARY_INTERLEAVED),
}
_DTYPES = {torch.bfloat16: 0, torch.float16: 1}


def _check_index(t, name):
    if t is None:
        return
    if t.dtype != torch.int32 or not t.is_contiguous():
        _fail(f"'{name}' must be a contiguous int32 tensor, got {t.dtype} with strides {t.stride()}")


def _check_args(inputs, kind, expression, out, scatter_idx, group_rows, num_valid):
    if kind not in KINDS.values():
        _fail(f"activation kind {kind} is unknown; known: {KINDS}")
    if "\x00" in expression:  # the library takes a C string: the text would end there, unchecked
        _fail("the activation expression contains a NUL character")
    if inputs.dtype not in _DTYPES or out.dtype != inputs.dtype:
        _fail(f"inputs and out must both be bfloat16 or float16, got {inputs.dtype} and {out.dtype}")
    if inputs.dim() != 2 or out.dim() != 2 or not inputs.is_contiguous() or not out.is_contiguous():
        _fail(f"inputs and out must be contiguous 2-D tensors, got shapes {tuple(inputs.shape)} and "
              f"{tuple(out.shape)}")
    # The library's shape rules (ops/activation.cpp), here too so that a traced call is refused
    # while torch.compile traces it rather than when the graph first runs.
    if kind != KINDS["unary"] and inputs.shape[1] % 2:
        _fail(f"a binary activation needs an even number of input columns, got {inputs.shape[1]}")
    n = inputs.shape[1] if kind == KINDS["unary"] else inputs.shape[1] // 2
    if n % 8:
        _fail(f"the activation's output width {n} (input columns {inputs.shape[1]}) must be a multiple of 8")
    if out.shape[1] != n:
        _fail(f"out must have {n} columns for inputs of {inputs.shape[1]}, got {out.shape[1]}")
    for t, name in ((scatter_idx, "scatter_idx"), (group_rows, "group_rows"), (num_valid, "num_valid")):
        _check_index(t, name)
    if scatter_idx is not None and group_rows is not None:
        _fail("scatter_idx and group_rows are exclusive layouts")
    rows = inputs.shape[0]
    if scatter_idx is None and out.shape[0] < rows:
        _fail(f"out has {out.shape[0]} rows, fewer than the input's {rows}")
    if scatter_idx is not None and rows:
        # [rows, C] or flat [rows * C]; a [C, rows] tensor has the count but not the layout.
        if scatter_idx.dim() not in (1, 2) or (scatter_idx.dim() == 2 and scatter_idx.shape[0] != rows) or \
                scatter_idx.numel() == 0 or scatter_idx.numel() % rows:
            _fail(f"scatter_idx must be [{rows}, C] or [{rows} * C] with C >= 1, got shape {tuple(scatter_idx.shape)}")
        if scatter_idx.numel() // rows > 1024:
            _fail(f"scatter_idx has {scatter_idx.numel() // rows} columns; at most 1024")
    if group_rows is not None and rows and (group_rows.dim() != 1 or group_rows.numel() == 0 or rows % group_rows.numel()):
        _fail(f"group_rows must be [G] with G >= 1 dividing the {rows} input rows, got shape {tuple(group_rows.shape)}")
    if num_valid is not None and num_valid.numel() != 1:
        _fail(f"num_valid must hold one count, got shape {tuple(num_valid.shape)}")


def _launch(inputs, kind, expression, out, scatter_idx, group_rows, num_valid, native=_C):
    _check_args(inputs, kind, expression, out, scatter_idx, group_rows, num_valid)
    extra = [t for t in (scatter_idx, group_rows, num_valid) if t is not None]
    dev = _check_device(inputs, out, *extra)
    rows = inputs.shape[0]
    scatter_cols = scatter_idx.numel() // rows if scatter_idx is not None and rows else 0
    _run_on(dev, native.moe_activation, kind, expression, _DTYPES[inputs.dtype], inputs.data_ptr(), rows,
            inputs.shape[1], out.data_ptr(), out.shape[0], scatter_idx.data_ptr() if scatter_idx is not None else 0,
            scatter_cols, group_rows.data_ptr() if group_rows is not None else 0,
            group_rows.numel() if group_rows is not None else 0,
            num_valid.data_ptr() if num_valid is not None else 0, _raw_stream(dev))


_define_op("moe_activation(Tensor inputs, int kind, str expression, Tensor(a!) out, Tensor? scatter_idx, "
           "Tensor? group_rows, Tensor? num_valid) -> ()", _launch, _check_args)


def moe_activation(inputs: torch.Tensor, kind: str, expression: str, out: Optional[torch.Tensor] = None,
                   scatter_idx: Optional[torch.Tensor] = None, group_rows: Optional[torch.Tensor] = None,
                   num_valid: Optional[torch.Tensor] = None, out_rows: Optional[int] = None, *,
                   library=None) -> torch.Tensor:
    """out[dst, j] = f(a, b) over the rows of `inputs` [rows, cols] (bf16 or fp16).

    kind: "unary" (a = in[r, j]), "binary_split" (a = in[r, j], b = in[r, n + j]) or
    "binary_interleaved" (a = in[r, 2j], b = in[r, 2j + 1]); n = out's width, a multiple of 8.
    scatter_idx int32 [rows, C] (or flat [rows * C]): row r goes to every scatter_idx[r, c] in
    [0, out's rows); other entries are skipped (device data the host does not read). Without
    scatter_idx, dst = r.
    group_rows int32 [G]: rows are G equal blocks; row i of block g is written if
    i < group_rows[g]. num_valid int32 [1]: rows (destinations, with a scatter) from
    num_valid[0] on are skipped. Rows not written keep out's contents (new out: uninitialized).
    library: another build's libchord.so from load_library (eager calls only).
    """
    if kind not in KINDS:
        _fail(f"activation kind '{kind}' is unknown; known: {', '.join(KINDS)}")
    if not isinstance(expression, str):
        raise TypeError(f"chord_kernels: the activation expression must be a str, got {type(expression).__name__}")
    code = KINDS[kind]
    if out is None:
        _leading(inputs, "inputs", 2)
        n = inputs.shape[-1] if kind == "unary" else inputs.shape[-1] // 2
        rows = out_rows if out_rows is not None else (
            scatter_idx.numel() if scatter_idx is not None else inputs.shape[0])
        out = torch.empty((rows, n), dtype=inputs.dtype, device=inputs.device)
    if _compiling(library):
        torch.ops.chord.moe_activation(inputs, code, expression, out, scatter_idx, group_rows, num_valid)
    else:
        _launch(inputs, code, expression, out, scatter_idx, group_rows, num_valid, _native(library))
    return out
