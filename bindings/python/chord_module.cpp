// chord_kernels._chord: the C API (include/chord/chord.h) for Python.
//
// Tensors cross as raw device addresses plus shapes, not as DLPack capsules: a torch
// tensor's data_ptr() is one attribute read, while exporting a DLPack capsule per tensor
// costs microseconds of host time on every GEMM call. The Python layer checks dtypes,
// shapes, devices and contiguity from tensor metadata before it calls in here; the
// library then checks every argument again and launches nothing on error.
//
// A packed weight crosses as its tag fields (magic, format, layout version, group size,
// E, N, K) plus the two buffer addresses; the chord_w4a16_weight_t is rebuilt per call on
// the stack so that the library's own tag check runs on exactly what Python holds.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>

#include "chord/chord.h"

namespace nb = nanobind;

namespace {

void* ptr(uintptr_t address) { return reinterpret_cast<void*>(address); }

// Maps a failed status onto the Python exception a caller can act on: bad arguments are
// ValueError, unsupported shapes NotImplementedError, everything else RuntimeError.
void check(chord_status_t status) {
  if (status == CHORD_SUCCESS) return;
  std::string message = std::string("chord: ") + chord_status_string(status) + ": " + chord_last_error();
  PyObject* type = PyExc_RuntimeError;
  if (status == CHORD_ERROR_INVALID_ARGUMENT) type = PyExc_ValueError;
  if (status == CHORD_ERROR_UNSUPPORTED) type = PyExc_NotImplementedError;
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

// Runs one C API call with the GIL released (a first call may compile for a second) and
// turns its status into a Python exception.
template <typename Call>
void call_without_gil(Call&& call) {
  chord_status_t status;
  {
    nb::gil_scoped_release release;
    status = call();
  }
  check(status);
}

// The tag arrives as seven integers; out-of-range values must reach the library's tag
// check rather than wrap silently on the narrowing to uint32.
uint32_t tag_field(int64_t value, const char* name) {
  if (value < 0 || value > static_cast<int64_t>(UINT32_MAX)) {
    std::string message =
        std::string("chord: packed weight tag field '") + name + "' = " + std::to_string(value) + " is out of range";
    PyErr_SetString(PyExc_ValueError, message.c_str());
    throw nb::python_error();
  }
  return static_cast<uint32_t>(value);
}

chord_w4a16_weight_t make_weight(int64_t magic, int64_t format, int64_t layout_version, int64_t group_size,
                                 int64_t experts, int64_t n, int64_t k, uintptr_t weight_dev, uintptr_t scales_dev) {
  chord_w4a16_weight_t w{};
  w.magic = tag_field(magic, "magic");
  w.format = tag_field(format, "format");
  w.layout_version = tag_field(layout_version, "layout_version");
  w.group_size = tag_field(group_size, "group_size");
  w.experts = experts;
  w.n = n;
  w.k = k;
  w.weight_dev = ptr(weight_dev);
  w.scales_dev = ptr(scales_dev);
  return w;
}

using Tag = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

chord_w4a16_weight_t from_tag(const Tag& t, uintptr_t weight_dev, uintptr_t scales_dev) {
  return make_weight(std::get<0>(t), std::get<1>(t), std::get<2>(t), std::get<3>(t), std::get<4>(t), std::get<5>(t),
                     std::get<6>(t), weight_dev, scales_dev);
}

}  // namespace

NB_MODULE(_chord, m) {
  m.doc() = "chord C API over raw device addresses (see chord_kernels for the torch operators)";

  m.attr("API_VERSION") = CHORD_API_VERSION;
  m.attr("W4A16_MAGIC") = static_cast<int64_t>(CHORD_W4A16_MAGIC);
  m.attr("FORMAT_INT4_G32") = CHORD_FORMAT_INT4_G32;
  m.attr("FORMAT_NF4") = CHORD_FORMAT_NF4;
  m.attr("DTYPE_BF16") = CHORD_DTYPE_BF16;
  m.attr("DTYPE_FP16") = CHORD_DTYPE_FP16;

  m.def("api_version", &chord_api_version);
  m.def("version", [] { return std::string(chord_version()); });
  m.def("layout_version", [] { return static_cast<int64_t>(chord_w4a16_layout_version()); });
  m.def("weight_bytes", &chord_w4a16_weight_bytes, nb::arg("E"), nb::arg("N"), nb::arg("K"));
  m.def("scale_bytes", &chord_w4a16_scale_bytes, nb::arg("E"), nb::arg("N"), nb::arg("K"));
  m.def("contiguous_alignment", &chord_w4a16_contiguous_alignment);

  m.def("jit_stats", [] {
    chord_jit_stats_t s{};
    chord_get_jit_stats(&s);
    nb::dict d;
    d["nvrtc_compiles"] = s.nvrtc_compiles;
    d["disk_hits"] = s.disk_hits;
    d["disk_rebuilds"] = s.disk_rebuilds;
    d["memory_hits"] = s.memory_hits;
    return d;
  });

  // Returns the tag the library filled in, so Python never invents tag values itself.
  m.def(
      "pack",
      [](uintptr_t src, int src_format, uintptr_t scales, int64_t E, int64_t N, int64_t K, uintptr_t weight_out,
         uintptr_t scales_out, uintptr_t stream) {
        chord_w4a16_weight_t w{};
        call_without_gil([&] {
          return chord_w4a16_pack(ptr(src), src_format, ptr(scales), E, N, K, ptr(weight_out), ptr(scales_out), &w,
                                  ptr(stream));
        });
        return Tag{w.magic, w.format, w.layout_version, w.group_size, w.experts, w.n, w.k};
      },
      nb::arg("src"), nb::arg("src_format"), nb::arg("scales"), nb::arg("E"), nb::arg("N"), nb::arg("K"),
      nb::arg("weight_out"), nb::arg("scales_out"), nb::arg("stream"));

  m.def(
      "dequantize",
      [](const Tag& tag, uintptr_t weight, uintptr_t scales, uintptr_t out, uintptr_t stream) {
        chord_w4a16_weight_t w = from_tag(tag, weight, scales);
        call_without_gil([&] { return chord_w4a16_dequantize(&w, ptr(out), ptr(stream)); });
      },
      nb::arg("tag"), nb::arg("weight"), nb::arg("scales"), nb::arg("out"), nb::arg("stream"));

  m.def(
      "contiguous",
      [](uintptr_t a, int64_t m, const Tag& tag, uintptr_t weight, uintptr_t scales, uintptr_t m_indices,
         uintptr_t out, uintptr_t stream) {
        chord_w4a16_weight_t w = from_tag(tag, weight, scales);
        call_without_gil([&] {
          return chord_w4a16_contiguous(ptr(a), m, &w, static_cast<const int32_t*>(ptr(m_indices)), ptr(out),
                                        ptr(stream));
        });
      },
      nb::arg("a"), nb::arg("m"), nb::arg("tag"), nb::arg("weight"), nb::arg("scales"), nb::arg("m_indices"),
      nb::arg("out"), nb::arg("stream"));

  m.def(
      "masked",
      [](uintptr_t a, int64_t groups, int64_t max_m, const Tag& tag, uintptr_t weight, uintptr_t scales,
         uintptr_t masked_m, int64_t expected_m, uintptr_t out, uintptr_t stream) {
        chord_w4a16_weight_t w = from_tag(tag, weight, scales);
        call_without_gil([&] {
          return chord_w4a16_masked(ptr(a), groups, max_m, &w, static_cast<const int32_t*>(ptr(masked_m)), expected_m,
                                    ptr(out), ptr(stream));
        });
      },
      nb::arg("a"), nb::arg("G"), nb::arg("max_m"), nb::arg("tag"), nb::arg("weight"), nb::arg("scales"),
      nb::arg("masked_m"), nb::arg("expected_m"), nb::arg("out"), nb::arg("stream"));

  m.def(
      "offsets",
      [](uintptr_t a, int64_t s, const Tag& tag, uintptr_t weight, uintptr_t scales, uintptr_t offsets,
         uintptr_t out, uintptr_t stream) {
        chord_w4a16_weight_t w = from_tag(tag, weight, scales);
        call_without_gil([&] {
          return chord_w4a16_offsets(ptr(a), s, &w, static_cast<const int32_t*>(ptr(offsets)), ptr(out), ptr(stream));
        });
      },
      nb::arg("a"), nb::arg("S"), nb::arg("tag"), nb::arg("weight"), nb::arg("scales"), nb::arg("offsets"),
      nb::arg("out"), nb::arg("stream"));

  m.def(
      "indexed",
      [](uintptr_t a, int64_t M, const Tag& tag, uintptr_t weight, uintptr_t scales, uintptr_t sorted_ids,
         int64_t capacity, uintptr_t expert_ids, uintptr_t num_tokens_padded, int64_t top_k, int64_t block_size,
         uintptr_t out, uintptr_t stream) {
        chord_w4a16_weight_t w = from_tag(tag, weight, scales);
        call_without_gil([&] {
          return chord_w4a16_indexed(ptr(a), M, &w, static_cast<const int32_t*>(ptr(sorted_ids)), capacity,
                                     static_cast<const int32_t*>(ptr(expert_ids)),
                                     static_cast<const int32_t*>(ptr(num_tokens_padded)), top_k, block_size, ptr(out),
                                     ptr(stream));
        });
      },
      nb::arg("a"), nb::arg("M"), nb::arg("tag"), nb::arg("weight"), nb::arg("scales"), nb::arg("sorted_ids"),
      nb::arg("capacity"), nb::arg("expert_ids"), nb::arg("num_tokens_padded"), nb::arg("top_k"),
      nb::arg("block_size"), nb::arg("out"), nb::arg("stream"));
  m.attr("ACTIVATION_UNARY") = CHORD_ACTIVATION_UNARY;
  m.attr("ACTIVATION_BINARY_SPLIT") = CHORD_ACTIVATION_BINARY_SPLIT;
  m.attr("ACTIVATION_BINARY_INTERLEAVED") = CHORD_ACTIVATION_BINARY_INTERLEAVED;
  m.def(
      "moe_activation",
      [](int kind, const std::string& expression, int dtype, uintptr_t in, int64_t rows, int64_t in_cols,
         uintptr_t out, int64_t out_rows, uintptr_t scatter_idx, int64_t scatter_cols, uintptr_t group_rows,
         int64_t groups, uintptr_t num_valid, uintptr_t stream) {
        call_without_gil([&] {
          return chord_moe_activation(kind, expression.c_str(), dtype, ptr(in), rows, in_cols, ptr(out), out_rows,
                                      static_cast<const int32_t*>(ptr(scatter_idx)), scatter_cols,
                                      static_cast<const int32_t*>(ptr(group_rows)), groups,
                                      static_cast<const int32_t*>(ptr(num_valid)), ptr(stream));
        });
      },
      nb::arg("kind"), nb::arg("expression"), nb::arg("dtype"), nb::arg("in_"), nb::arg("rows"), nb::arg("in_cols"),
      nb::arg("out"), nb::arg("out_rows"), nb::arg("scatter_idx"), nb::arg("scatter_cols"), nb::arg("group_rows"),
      nb::arg("groups"), nb::arg("num_valid"), nb::arg("stream"));

  // NF4 (bitsandbytes format). The absmax buffer travels in the weight's scales slot.
  m.def("nf4_layout_version", [] { return static_cast<int64_t>(chord_nf4_layout_version()); });
  m.def("nf4_weight_bytes", &chord_nf4_weight_bytes, nb::arg("E"), nb::arg("N"), nb::arg("K"));
  m.def("nf4_absmax_bytes", &chord_nf4_absmax_bytes, nb::arg("E"), nb::arg("N"), nb::arg("K"));

  // nested_absmax = nested_code = 0 for an FP32 absmax; returns the tag the library filled in.
  m.def(
      "nf4_pack",
      [](uintptr_t packed, uintptr_t absmax, uintptr_t nested_absmax, uintptr_t nested_code, float offset,
         int64_t E, int64_t N, int64_t K, uintptr_t weight_out, uintptr_t absmax_out, uintptr_t stream) {
        chord_w4a16_weight_t w{};
        call_without_gil([&] {
          return chord_nf4_pack(ptr(packed), ptr(absmax), ptr(nested_absmax), ptr(nested_code), offset, E, N, K,
                                ptr(weight_out), ptr(absmax_out), &w, ptr(stream));
        });
        return Tag{w.magic, w.format, w.layout_version, w.group_size, w.experts, w.n, w.k};
      },
      nb::arg("packed"), nb::arg("absmax"), nb::arg("nested_absmax"), nb::arg("nested_code"), nb::arg("offset"),
      nb::arg("E"), nb::arg("N"), nb::arg("K"), nb::arg("weight_out"), nb::arg("absmax_out"), nb::arg("stream"));

  m.def(
      "nf4_dequantize",
      [](const Tag& tag, uintptr_t weight, uintptr_t absmax, int dtype, uintptr_t out, uintptr_t stream) {
        chord_w4a16_weight_t w = from_tag(tag, weight, absmax);
        call_without_gil([&] { return chord_nf4_dequantize(&w, dtype, ptr(out), ptr(stream)); });
      },
      nb::arg("tag"), nb::arg("weight"), nb::arg("absmax"), nb::arg("dtype"), nb::arg("out"), nb::arg("stream"));

  m.def(
      "nf4_offsets",
      [](uintptr_t x, int dtype, int64_t s, const Tag& tag, uintptr_t weight, uintptr_t absmax, uintptr_t offsets,
         uintptr_t out, uintptr_t stream) {
        chord_w4a16_weight_t w = from_tag(tag, weight, absmax);
        call_without_gil([&] {
          return chord_nf4_offsets(ptr(x), dtype, s, &w, static_cast<const int32_t*>(ptr(offsets)), ptr(out),
                                   ptr(stream));
        });
      },
      nb::arg("x"), nb::arg("dtype"), nb::arg("S"), nb::arg("tag"), nb::arg("weight"), nb::arg("absmax"),
      nb::arg("offsets"), nb::arg("out"), nb::arg("stream"));

  // The W4A16 tuning table of a shape as JSON rows (chord_w4a16_tuning_json); None when no
  // table holds the shape, so callers fall back to their own rule. arch None = "sm_90a".
  m.def(
      "tuning_json",
      [](std::optional<std::string> arch, int64_t E, int64_t N, int64_t K, int64_t top_k) -> std::optional<std::string> {
        const char* name = arch ? arch->c_str() : nullptr;
        const int64_t length = chord_w4a16_tuning_json(name, E, N, K, top_k, nullptr, 0);
        if (length < 0) {
          PyErr_SetString(PyExc_ValueError, (std::string("chord: ") + chord_last_error()).c_str());
          throw nb::python_error();
        }
        if (length == 0) return std::nullopt;
        std::string text(static_cast<size_t>(length) + 1, '\0');
        chord_w4a16_tuning_json(name, E, N, K, top_k, text.data(), length + 1);
        text.resize(static_cast<size_t>(length));
        return text;
      },
      nb::arg("arch").none(), nb::arg("E"), nb::arg("N"), nb::arg("K"), nb::arg("top_k"));
}
