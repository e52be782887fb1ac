"""Minimal ctypes binding of libchord's C API (include/chord/chord.h) over torch tensors,
used by the benchmark. Every call passes torch's current stream; nothing synchronizes."""
import ctypes
import json
import os

import torch

c_int64, c_void_p, c_uint32, c_int = ctypes.c_int64, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int


class Weight(ctypes.Structure):
    _fields_ = [("magic", c_uint32), ("format", c_uint32), ("layout_version", c_uint32), ("group_size", c_uint32),
                ("experts", c_int64), ("n", c_int64), ("k", c_int64), ("weight_dev", c_void_p),
                ("scales_dev", c_void_p)]


def load(path=None):
    path = path or os.environ.get("CHORD_LIBRARY", os.path.join(os.path.dirname(__file__), "..", "build", "libchord.so"))
    lib = ctypes.CDLL(path)
    lib.chord_last_error.restype = ctypes.c_char_p
    for name in ("chord_w4a16_weight_bytes", "chord_w4a16_scale_bytes"):
        getattr(lib, name).restype = c_int64
        getattr(lib, name).argtypes = [c_int64] * 3
    lib.chord_w4a16_pack.argtypes = [c_void_p, c_int, c_void_p, c_int64, c_int64, c_int64, c_void_p, c_void_p,
                                     ctypes.POINTER(Weight), c_void_p]
    lib.chord_w4a16_dequantize.argtypes = [ctypes.POINTER(Weight), c_void_p, c_void_p]
    lib.chord_w4a16_contiguous.argtypes = [c_void_p, c_int64, ctypes.POINTER(Weight), c_void_p, c_void_p, c_void_p]
    lib.chord_w4a16_masked.argtypes = [c_void_p, c_int64, c_int64, ctypes.POINTER(Weight), c_void_p, c_int64,
                                       c_void_p, c_void_p]
    lib.chord_w4a16_offsets.argtypes = [c_void_p, c_int64, ctypes.POINTER(Weight), c_void_p, c_void_p, c_void_p]
    lib.chord_w4a16_tuning_json.restype = c_int64
    lib.chord_w4a16_tuning_json.argtypes = [ctypes.c_char_p, c_int64, c_int64, c_int64, c_int64, ctypes.c_char_p,
                                            c_int64]
    lib.chord_w4a16_indexed.argtypes = [c_void_p, c_int64, ctypes.POINTER(Weight), c_void_p, c_int64, c_void_p,
                                        c_void_p, c_int64, c_int64, c_void_p, c_void_p]
    for name in ("chord_nf4_weight_bytes", "chord_nf4_absmax_bytes"):
        getattr(lib, name).restype = c_int64
        getattr(lib, name).argtypes = [c_int64] * 3
    lib.chord_nf4_pack.argtypes = [c_void_p, c_void_p, c_void_p, c_void_p, ctypes.c_float, c_int64, c_int64, c_int64,
                                   c_void_p, c_void_p, ctypes.POINTER(Weight), c_void_p]
    lib.chord_nf4_dequantize.argtypes = [ctypes.POINTER(Weight), c_int, c_void_p, c_void_p]
    lib.chord_nf4_offsets.argtypes = [c_void_p, c_int, c_int64, ctypes.POINTER(Weight), c_void_p, c_void_p, c_void_p]
    return lib


DTYPES = {torch.bfloat16: 0, torch.float16: 1}  # CHORD_DTYPE_BF16 / CHORD_DTYPE_FP16


class Chord:
    def __init__(self, path=None):
        self.lib = load(path)

    def _check(self, status):
        if status != 0:
            raise RuntimeError(self.lib.chord_last_error().decode())

    @staticmethod
    def _stream():
        return c_void_p(torch.cuda.current_stream().cuda_stream)

    def routing_block(self, arch, experts, n, k, routed_rows):
        """The moe_align_block_size block our tuning table exports (as vLLM's Humming backend
        reads it: top_k = 1, M = routed rows) for this shape and row count, or None."""
        length = self.lib.chord_w4a16_tuning_json(arch.encode(), experts, n, k, 1, None, 0)
        if length < 0:
            return None
        buf = ctypes.create_string_buffer(length + 1)
        self.lib.chord_w4a16_tuning_json(arch.encode(), experts, n, k, 1, buf, length + 1)
        for first, last, config in json.loads(buf.value.decode()):
            if first <= routed_rows <= last:
                return int(config["block_size_m"])
        return None

    def pack(self, codes, scales):
        """codes uint8 [E, N, K], scales bf16 [E, N, K/32] -> (Weight, buffers kept alive)."""
        e, n, k = codes.shape
        w = torch.empty(self.lib.chord_w4a16_weight_bytes(e, n, k), dtype=torch.uint8, device=codes.device)
        s = torch.empty(self.lib.chord_w4a16_scale_bytes(e, n, k), dtype=torch.uint8, device=codes.device)
        tag = Weight()
        self._check(self.lib.chord_w4a16_pack(codes.data_ptr(), 0, scales.data_ptr(), e, n, k, w.data_ptr(),
                                              s.data_ptr(), ctypes.byref(tag), self._stream()))
        return tag, (w, s)

    def dequantize(self, tag):
        out = torch.empty(tag.experts, tag.n, tag.k, dtype=torch.bfloat16, device="cuda")
        self._check(self.lib.chord_w4a16_dequantize(ctypes.byref(tag), out.data_ptr(), self._stream()))
        return out

    def contiguous(self, a, tag, m_indices, out):
        self._check(self.lib.chord_w4a16_contiguous(a.data_ptr(), a.shape[0], ctypes.byref(tag), m_indices.data_ptr(),
                                                    out.data_ptr(), self._stream()))

    def masked(self, a, tag, masked_m, expected_m, out):
        g, max_m, _ = a.shape
        self._check(self.lib.chord_w4a16_masked(a.data_ptr(), g, max_m, ctypes.byref(tag), masked_m.data_ptr(),
                                                expected_m, out.data_ptr(), self._stream()))

    def offsets(self, a, tag, offsets, out):
        self._check(self.lib.chord_w4a16_offsets(a.data_ptr(), a.shape[0], ctypes.byref(tag), offsets.data_ptr(),
                                                 out.data_ptr(), self._stream()))

    def indexed(self, a, tag, sorted_ids, expert_ids, num_tokens_padded, top_k, block_size, out):
        self._check(self.lib.chord_w4a16_indexed(a.data_ptr(), a.shape[0], ctypes.byref(tag), sorted_ids.data_ptr(),
                                                 sorted_ids.numel(), expert_ids.data_ptr(),
                                                 num_tokens_padded.data_ptr(), top_k, block_size, out.data_ptr(),
                                                 self._stream()))

    # -- NF4 (bitsandbytes QuantState) --------------------------------------------------------
    def nf4_pack(self, packed, absmax, shape, nested_absmax=None, nested_code=None, offset=0.0):
        """packed uint8 [E*N*K/2], absmax FP32 (or uint8 with nested_absmax FP32, nested_code
        FP32 [256], offset) -> (Weight, buffers kept alive)."""
        e, n, k = shape
        w = torch.empty(self.lib.chord_nf4_weight_bytes(e, n, k), dtype=torch.uint8, device=packed.device)
        s = torch.empty(self.lib.chord_nf4_absmax_bytes(e, n, k), dtype=torch.uint8, device=packed.device)
        tag = Weight()
        ptr = lambda t: t.data_ptr() if t is not None else None  # noqa: E731
        self._check(self.lib.chord_nf4_pack(packed.data_ptr(), absmax.data_ptr(), ptr(nested_absmax), ptr(nested_code),
                                            float(offset), e, n, k, w.data_ptr(), s.data_ptr(), ctypes.byref(tag),
                                            self._stream()))
        return tag, (w, s)

    def nf4_dequantize(self, tag, dtype=torch.bfloat16):
        out = torch.empty(tag.experts, tag.n, tag.k, dtype=dtype, device="cuda")
        self._check(self.lib.chord_nf4_dequantize(ctypes.byref(tag), DTYPES[dtype], out.data_ptr(), self._stream()))
        return out

    def nf4_offsets(self, x, tag, offsets, out):
        self._check(self.lib.chord_nf4_offsets(x.data_ptr(), DTYPES[x.dtype], x.shape[0], ctypes.byref(tag),
                                               offsets.data_ptr(), out.data_ptr(), self._stream()))
