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
//
// Every C API call goes through a table of function pointers (Api). The module-level
// functions use the table of the libchord this module is linked with; a Library opens
// another build's libchord.so by path (dlopen, RTLD_LOCAL: a second copy with its own JIT
// memo, cache and errors) and offers the same functions as methods on its own table, so
// that two builds run in one process on the same tensors (bench/bench_w4a16.py --against).
#include <dlfcn.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "chord/chord.h"

namespace nb = nanobind;

namespace {

// The entry points the module calls. Those marked REQUIRED must exist in any library a
// Library opens (they report errors and the version check); an optional one that a build
// lacks (e.g. chord_moe_activation, added after API version 1 was set) is an error only
// when it is called.
#define CHORD_API_REQUIRED(X) X(chord_api_version) X(chord_last_error) X(chord_status_string)
#define CHORD_API_OPTIONAL(X)                                                                               \
  X(chord_version) X(chord_w4a16_layout_version) X(chord_w4a16_weight_bytes) X(chord_w4a16_scale_bytes)   \
  X(chord_w4a16_contiguous_alignment) X(chord_w4a16_pack) X(chord_w4a16_dequantize)                       \
  X(chord_w4a16_contiguous) X(chord_w4a16_masked) X(chord_w4a16_offsets) X(chord_w4a16_indexed)           \
  X(chord_moe_activation) X(chord_nf4_layout_version) X(chord_nf4_weight_bytes) X(chord_nf4_absmax_bytes) \
  X(chord_nf4_pack) X(chord_nf4_dequantize) X(chord_nf4_offsets) X(chord_w4a16_tuning_json)               \
  X(chord_get_jit_stats) X(chord_w4a16_zp_scale_bytes) X(chord_w4a16_pack_zp)                            \
  X(chord_w4a16_format_scale_bytes) X(chord_w4a16_last_kernel)
#define CHORD_API_ALL(X) CHORD_API_REQUIRED(X) CHORD_API_OPTIONAL(X)

struct Api {
#define CHORD_API_FIELD(name) decltype(&::name) name = nullptr;
  CHORD_API_ALL(CHORD_API_FIELD)
#undef CHORD_API_FIELD
  std::string origin;  // names the library in errors
};

Api linked_table() {
  Api api;
#define CHORD_API_LINKED(name) api.name = &::name;
  CHORD_API_ALL(CHORD_API_LINKED)
#undef CHORD_API_LINKED
  api.origin = "the linked libchord";
  return api;
}

// The table of the libchord this module links, filled once at import.
const Api linked_api = linked_table();

[[noreturn]] void raise(PyObject* type, const std::string& message) {
  PyErr_SetString(type, message.c_str());
  throw nb::python_error();
}

// An entry point of `api`, or NotImplementedError naming the build that lacks it.
template <typename Fn>
Fn entry(Fn fn, const Api& api, const char* name) {
  if (fn == nullptr) {
    raise(PyExc_NotImplementedError, std::string("chord: ") + api.origin + " has no " + name +
                                         " (the build predates this entry point)");
  }
  return fn;
}
#define CHORD_ENTRY(api, name) entry((api).name, (api), #name)

void* ptr(uintptr_t address) { return reinterpret_cast<void*>(address); }

// Maps a failed status onto the Python exception a caller can act on: bad arguments are
// ValueError, unsupported shapes NotImplementedError, everything else RuntimeError. The
// message is the calling library's (chord_last_error is per library and thread).
void check(const Api& api, chord_status_t status) {
  if (status == CHORD_SUCCESS) return;
  std::string message = std::string("chord: ") + api.chord_status_string(status) + ": " + api.chord_last_error();
  PyObject* type = PyExc_RuntimeError;
  if (status == CHORD_ERROR_INVALID_ARGUMENT) type = PyExc_ValueError;
  if (status == CHORD_ERROR_UNSUPPORTED) type = PyExc_NotImplementedError;
  raise(type, message);
}

// Runs one C API call with the GIL released (a first call may compile for a second) and
// turns its status into a Python exception.
template <typename Call>
void call_without_gil(const Api& api, Call&& call) {
  chord_status_t status;
  {
    nb::gil_scoped_release release;
    status = call();
  }
  check(api, status);
}

// The tag arrives as seven integers; out-of-range values must reach the library's tag
// check rather than wrap silently on the narrowing to uint32.
uint32_t tag_field(int64_t value, const char* name) {
  if (value < 0 || value > static_cast<int64_t>(UINT32_MAX)) {
    raise(PyExc_ValueError, std::string("chord: packed weight tag field '") + name + "' = " + std::to_string(value) +
                                " is out of range");
  }
  return static_cast<uint32_t>(value);
}

using Tag = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

chord_w4a16_weight_t from_tag(const Tag& t, uintptr_t weight_dev, uintptr_t scales_dev) {
  chord_w4a16_weight_t w{};
  w.magic = tag_field(std::get<0>(t), "magic");
  w.format = tag_field(std::get<1>(t), "format");
  w.layout_version = tag_field(std::get<2>(t), "layout_version");
  w.group_size = tag_field(std::get<3>(t), "group_size");
  w.experts = std::get<4>(t);
  w.n = std::get<5>(t);
  w.k = std::get<6>(t);
  w.weight_dev = ptr(weight_dev);
  w.scales_dev = ptr(scales_dev);
  return w;
}

Tag to_tag(const chord_w4a16_weight_t& w) {
  return Tag{w.magic, w.format, w.layout_version, w.group_size, w.experts, w.n, w.k};
}

// Another build's libchord.so. Never closed: its kernels, cache and threads live until the
// process ends, as the linked library's do.
struct Library {
  Api api;
  std::string path;
  std::vector<std::string> missing;  // optional entry points this build lacks

  explicit Library(const std::string& library_path) : path(library_path) {
    dlerror();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* why = dlerror();
      raise(PyExc_OSError, "chord: cannot open " + path + ": " + (why ? why : "dlopen failed"));
    }
    api.origin = path;
    std::vector<std::string> absent_required;
#define CHORD_API_REQUIRE(name) \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name)); \
  if (api.name == nullptr) absent_required.push_back(#name);
    CHORD_API_REQUIRED(CHORD_API_REQUIRE)
#undef CHORD_API_REQUIRE
#define CHORD_API_LOOKUP(name) \
  api.name = reinterpret_cast<decltype(api.name)>(dlsym(handle, #name)); \
  if (api.name == nullptr) missing.push_back(#name);
    CHORD_API_OPTIONAL(CHORD_API_LOOKUP)
#undef CHORD_API_LOOKUP
    if (!absent_required.empty()) {
      std::string names;
      for (const auto& name : absent_required) names += (names.empty() ? "" : ", ") + name;
      dlclose(handle);
      raise(PyExc_ImportError, "chord: " + path + " is not a chord library (no " + names + ")");
    }
    const int version = api.chord_api_version();
    if (version != CHORD_API_VERSION) {
      dlclose(handle);
      raise(PyExc_ImportError, "chord: " + path + " has C API version " + std::to_string(version) +
                                   "; this module is built for version " + std::to_string(CHORD_API_VERSION));
    }
  }
};

// Binds `fn` twice: as a module function on the linked table and as a Library method on
// the library's own table. `extra` (argument names) applies to both.
template <typename R, typename... Args, typename... Extra>
void def_api(nb::module_& m, nb::class_<Library>& library, const char* name, R (*fn)(const Api&, Args...),
             const Extra&... extra) {
  m.def(name, [fn](Args... args) -> R { return fn(linked_api, std::forward<Args>(args)...); }, extra...);
  library.def(
      name, [fn](const Library& self, Args... args) -> R { return fn(self.api, std::forward<Args>(args)...); },
      extra...);
}

// -- the calls, each on a given table ------------------------------------------------------

int api_version(const Api& api) { return api.chord_api_version(); }
std::string version(const Api& api) { return CHORD_ENTRY(api, chord_version)(); }
int64_t layout_version(const Api& api) { return CHORD_ENTRY(api, chord_w4a16_layout_version)(); }
int64_t weight_bytes(const Api& api, int64_t E, int64_t N, int64_t K) {
  return CHORD_ENTRY(api, chord_w4a16_weight_bytes)(E, N, K);
}
int64_t scale_bytes(const Api& api, int64_t E, int64_t N, int64_t K) {
  return CHORD_ENTRY(api, chord_w4a16_scale_bytes)(E, N, K);
}
int64_t zp_scale_bytes(const Api& api, int64_t E, int64_t N, int64_t K) {
  return CHORD_ENTRY(api, chord_w4a16_zp_scale_bytes)(E, N, K);
}
int64_t format_scale_bytes(const Api& api, uint32_t format, int64_t E, int64_t N, int64_t K) {
  return CHORD_ENTRY(api, chord_w4a16_format_scale_bytes)(format, E, N, K);
}
int64_t contiguous_alignment(const Api& api) { return CHORD_ENTRY(api, chord_w4a16_contiguous_alignment)(); }

nb::dict jit_stats(const Api& api) {
  chord_jit_stats_t s{};
  CHORD_ENTRY(api, chord_get_jit_stats)(&s);
  nb::dict d;
  d["nvrtc_compiles"] = s.nvrtc_compiles;
  d["disk_hits"] = s.disk_hits;
  d["disk_rebuilds"] = s.disk_rebuilds;
  d["memory_hits"] = s.memory_hits;
  return d;
}

// Returns the tag the library filled in, so Python never invents tag values itself.
Tag pack(const Api& api, uintptr_t src, int src_format, uintptr_t scales, int64_t E, int64_t N, int64_t K,
         uintptr_t weight_out, uintptr_t scales_out, uintptr_t stream) {
  auto fn = CHORD_ENTRY(api, chord_w4a16_pack);
  chord_w4a16_weight_t w{};
  call_without_gil(api, [&] {
    return fn(ptr(src), src_format, ptr(scales), E, N, K, ptr(weight_out), ptr(scales_out), &w, ptr(stream));
  });
  return to_tag(w);
}

Tag pack_zp(const Api& api, uintptr_t src, int src_format, uintptr_t scales, uintptr_t zero_points, int64_t E,
            int64_t N, int64_t K, uintptr_t weight_out, uintptr_t scales_out, uintptr_t stream) {
  auto fn = CHORD_ENTRY(api, chord_w4a16_pack_zp);
  chord_w4a16_weight_t w{};
  call_without_gil(api, [&] {
    return fn(ptr(src), src_format, ptr(scales), ptr(zero_points), E, N, K, ptr(weight_out), ptr(scales_out), &w,
              ptr(stream));
  });
  return to_tag(w);
}

void dequantize(const Api& api, const Tag& tag, uintptr_t weight, uintptr_t scales, uintptr_t out, uintptr_t stream) {
  auto fn = CHORD_ENTRY(api, chord_w4a16_dequantize);
  chord_w4a16_weight_t w = from_tag(tag, weight, scales);
  call_without_gil(api, [&] { return fn(&w, ptr(out), ptr(stream)); });
}

void contiguous(const Api& api, uintptr_t a, int64_t m, const Tag& tag, uintptr_t weight, uintptr_t scales,
                uintptr_t m_indices, uintptr_t out, uintptr_t stream) {
  auto fn = CHORD_ENTRY(api, chord_w4a16_contiguous);
  chord_w4a16_weight_t w = from_tag(tag, weight, scales);
  call_without_gil(api, [&] {
    return fn(ptr(a), m, &w, static_cast<const int32_t*>(ptr(m_indices)), ptr(out), ptr(stream));
  });
}

void masked(const Api& api, uintptr_t a, int64_t groups, int64_t max_m, const Tag& tag, uintptr_t weight,
            uintptr_t scales, uintptr_t masked_m, int64_t expected_m, uintptr_t out, uintptr_t stream) {
  auto fn = CHORD_ENTRY(api, chord_w4a16_masked);
  chord_w4a16_weight_t w = from_tag(tag, weight, scales);
  call_without_gil(api, [&] {
    return fn(ptr(a), groups, max_m, &w, static_cast<const int32_t*>(ptr(masked_m)), expected_m, ptr(out),
              ptr(stream));
  });
}

void offsets(const Api& api, uintptr_t a, int64_t s, const Tag& tag, uintptr_t weight, uintptr_t scales,
             uintptr_t offsets, uintptr_t out, uintptr_t stream) {
  auto fn = CHORD_ENTRY(api, chord_w4a16_offsets);
  chord_w4a16_weight_t w = from_tag(tag, weight, scales);
  call_without_gil(api, [&] {
    return fn(ptr(a), s, &w, static_cast<const int32_t*>(ptr(offsets)), ptr(out), ptr(stream));
  });
}

void indexed(const Api& api, uintptr_t a, int64_t M, const Tag& tag, uintptr_t weight, uintptr_t scales,
             uintptr_t sorted_ids, int64_t capacity, uintptr_t expert_ids, uintptr_t num_tokens_padded, int64_t top_k,
             int64_t block_size, uintptr_t out, uintptr_t stream) {
  auto fn = CHORD_ENTRY(api, chord_w4a16_indexed);
  chord_w4a16_weight_t w = from_tag(tag, weight, scales);
  call_without_gil(api, [&] {
    return fn(ptr(a), M, &w, static_cast<const int32_t*>(ptr(sorted_ids)), capacity,
              static_cast<const int32_t*>(ptr(expert_ids)), static_cast<const int32_t*>(ptr(num_tokens_padded)),
              top_k, block_size, ptr(out), ptr(stream));
  });
}

void moe_activation(const Api& api, int kind, const std::string& expression, int dtype, uintptr_t in, int64_t rows,
                    int64_t in_cols, uintptr_t out, int64_t out_rows, uintptr_t scatter_idx, int64_t scatter_cols,
                    uintptr_t group_rows, int64_t groups, uintptr_t num_valid, uintptr_t stream) {
  auto fn = CHORD_ENTRY(api, chord_moe_activation);
  call_without_gil(api, [&] {
    return fn(kind, expression.c_str(), dtype, ptr(in), rows, in_cols, ptr(out), out_rows,
              static_cast<const int32_t*>(ptr(scatter_idx)), scatter_cols,
              static_cast<const int32_t*>(ptr(group_rows)), groups, static_cast<const int32_t*>(ptr(num_valid)),
              ptr(stream));
  });
}

int64_t nf4_layout_version(const Api& api) { return CHORD_ENTRY(api, chord_nf4_layout_version)(); }
int64_t nf4_weight_bytes(const Api& api, int64_t E, int64_t N, int64_t K) {
  return CHORD_ENTRY(api, chord_nf4_weight_bytes)(E, N, K);
}
int64_t nf4_absmax_bytes(const Api& api, int64_t E, int64_t N, int64_t K) {
  return CHORD_ENTRY(api, chord_nf4_absmax_bytes)(E, N, K);
}

// nested_absmax = nested_code = 0 for an FP32 absmax; returns the tag the library filled in.
Tag nf4_pack(const Api& api, uintptr_t packed, uintptr_t absmax, uintptr_t nested_absmax, uintptr_t nested_code,
             float offset, int64_t E, int64_t N, int64_t K, uintptr_t weight_out, uintptr_t absmax_out,
             uintptr_t stream) {
  auto fn = CHORD_ENTRY(api, chord_nf4_pack);
  chord_w4a16_weight_t w{};
  call_without_gil(api, [&] {
    return fn(ptr(packed), ptr(absmax), ptr(nested_absmax), ptr(nested_code), offset, E, N, K, ptr(weight_out),
              ptr(absmax_out), &w, ptr(stream));
  });
  return to_tag(w);
}

void nf4_dequantize(const Api& api, const Tag& tag, uintptr_t weight, uintptr_t absmax, int dtype, uintptr_t out,
                    uintptr_t stream) {
  auto fn = CHORD_ENTRY(api, chord_nf4_dequantize);
  chord_w4a16_weight_t w = from_tag(tag, weight, absmax);
  call_without_gil(api, [&] { return fn(&w, dtype, ptr(out), ptr(stream)); });
}

void nf4_offsets(const Api& api, uintptr_t x, int dtype, int64_t s, const Tag& tag, uintptr_t weight,
                 uintptr_t absmax, uintptr_t offsets, uintptr_t out, uintptr_t stream) {
  auto fn = CHORD_ENTRY(api, chord_nf4_offsets);
  chord_w4a16_weight_t w = from_tag(tag, weight, absmax);
  call_without_gil(api, [&] {
    return fn(ptr(x), dtype, s, &w, static_cast<const int32_t*>(ptr(offsets)), ptr(out), ptr(stream));
  });
}

// A C API text answer (its length with no buffer, then the text into one that fits); None
// when it is empty, ValueError with the library's message when the call refuses.
template <typename Call>
std::optional<std::string> read_text(const Api& api, Call call) {
  const int64_t length = call(nullptr, 0);
  if (length < 0) raise(PyExc_ValueError, std::string("chord: ") + api.chord_last_error());
  if (length == 0) return std::nullopt;
  std::string text(static_cast<size_t>(length) + 1, '\0');
  call(text.data(), length + 1);
  text.resize(static_cast<size_t>(length));
  return text;
}

// The W4A16 tuning table of a shape as JSON rows (chord_w4a16_tuning_json); None when no
// table holds the shape, so callers fall back to their own rule. arch None = "sm_90a".
std::optional<std::string> tuning_json(const Api& api, std::optional<std::string> arch, int64_t E, int64_t N,
                                       int64_t K, int64_t top_k) {
  auto fn = CHORD_ENTRY(api, chord_w4a16_tuning_json);
  const char* name = arch ? arch->c_str() : nullptr;
  return read_text(api, [&](char* buffer, int64_t capacity) { return fn(name, E, N, K, top_k, buffer, capacity); });
}

// The kernel that served this thread's last W4A16 GEMM call (chord_w4a16_last_kernel); None
// before the thread's first call.
std::optional<std::string> last_kernel(const Api& api) {
  return read_text(api, CHORD_ENTRY(api, chord_w4a16_last_kernel));
}

}  // namespace

NB_MODULE(_chord, m) {
  m.doc() = "chord C API over raw device addresses (see chord_kernels for the torch operators)";

  m.attr("API_VERSION") = CHORD_API_VERSION;
  m.attr("W4A16_MAGIC") = static_cast<int64_t>(CHORD_W4A16_MAGIC);
  m.attr("FORMAT_INT4_G32") = CHORD_FORMAT_INT4_G32;
  m.attr("FORMAT_NF4") = CHORD_FORMAT_NF4;
  m.attr("FORMAT_INT4_G32_FP16") = CHORD_FORMAT_INT4_G32_FP16;
  m.attr("FORMAT_INT4_G32_ZP") = CHORD_FORMAT_INT4_G32_ZP;
  m.attr("FORMAT_INT4_G32_ZP_FP16") = CHORD_FORMAT_INT4_G32_ZP_FP16;
  m.attr("FORMAT_INT4_G128") = CHORD_FORMAT_INT4_G128;
  m.attr("FORMAT_INT4_G128_FP16") = CHORD_FORMAT_INT4_G128_FP16;
  m.attr("FORMAT_INT4_G128_ZP") = CHORD_FORMAT_INT4_G128_ZP;
  m.attr("FORMAT_INT4_G128_ZP_FP16") = CHORD_FORMAT_INT4_G128_ZP_FP16;
  m.attr("W4A16_SRC_SCALES_FP16") = CHORD_W4A16_SRC_SCALES_FP16;
  m.attr("W4A16_SRC_GROUP_128") = CHORD_W4A16_SRC_GROUP_128;
  m.attr("DTYPE_BF16") = CHORD_DTYPE_BF16;
  m.attr("DTYPE_FP16") = CHORD_DTYPE_FP16;
  m.attr("ACTIVATION_UNARY") = CHORD_ACTIVATION_UNARY;
  m.attr("ACTIVATION_BINARY_SPLIT") = CHORD_ACTIVATION_BINARY_SPLIT;
  m.attr("ACTIVATION_BINARY_INTERLEAVED") = CHORD_ACTIVATION_BINARY_INTERLEAVED;

  // Library objects live until the process ends (chord_kernels caches one per file, as the
  // library itself stays loaded); nanobind would report those still alive at exit as leaks.
  nb::set_leak_warnings(false);
  nb::class_<Library> library(m, "Library",
                              "Another build's libchord.so, opened by path, with the module's functions as methods");
  library.def(nb::init<const std::string&>(), nb::arg("path"));
  library.def_ro("path", &Library::path);
  library.def_ro("missing", &Library::missing, "entry points this build lacks (an error when called)");

  def_api(m, library, "api_version", &api_version);
  def_api(m, library, "version", &version);
  def_api(m, library, "layout_version", &layout_version);
  def_api(m, library, "weight_bytes", &weight_bytes, nb::arg("E"), nb::arg("N"), nb::arg("K"));
  def_api(m, library, "scale_bytes", &scale_bytes, nb::arg("E"), nb::arg("N"), nb::arg("K"));
  def_api(m, library, "contiguous_alignment", &contiguous_alignment);
  def_api(m, library, "jit_stats", &jit_stats);
  def_api(m, library, "pack", &pack, nb::arg("src"), nb::arg("src_format"), nb::arg("scales"), nb::arg("E"),
          nb::arg("N"), nb::arg("K"), nb::arg("weight_out"), nb::arg("scales_out"), nb::arg("stream"));
  def_api(m, library, "zp_scale_bytes", &zp_scale_bytes, nb::arg("E"), nb::arg("N"), nb::arg("K"));
  def_api(m, library, "format_scale_bytes", &format_scale_bytes, nb::arg("format"), nb::arg("E"), nb::arg("N"),
          nb::arg("K"));
  def_api(m, library, "pack_zp", &pack_zp, nb::arg("src"), nb::arg("src_format"), nb::arg("scales"),
          nb::arg("zero_points"), nb::arg("E"), nb::arg("N"), nb::arg("K"), nb::arg("weight_out"),
          nb::arg("scales_out"), nb::arg("stream"));
  def_api(m, library, "dequantize", &dequantize, nb::arg("tag"), nb::arg("weight"), nb::arg("scales"),
          nb::arg("out"), nb::arg("stream"));
  def_api(m, library, "contiguous", &contiguous, nb::arg("a"), nb::arg("m"), nb::arg("tag"), nb::arg("weight"),
          nb::arg("scales"), nb::arg("m_indices"), nb::arg("out"), nb::arg("stream"));
  def_api(m, library, "masked", &masked, nb::arg("a"), nb::arg("G"), nb::arg("max_m"), nb::arg("tag"),
          nb::arg("weight"), nb::arg("scales"), nb::arg("masked_m"), nb::arg("expected_m"), nb::arg("out"),
          nb::arg("stream"));
  def_api(m, library, "offsets", &offsets, nb::arg("a"), nb::arg("S"), nb::arg("tag"), nb::arg("weight"),
          nb::arg("scales"), nb::arg("offsets"), nb::arg("out"), nb::arg("stream"));
  def_api(m, library, "indexed", &indexed, nb::arg("a"), nb::arg("M"), nb::arg("tag"), nb::arg("weight"),
          nb::arg("scales"), nb::arg("sorted_ids"), nb::arg("capacity"), nb::arg("expert_ids"),
          nb::arg("num_tokens_padded"), nb::arg("top_k"), nb::arg("block_size"), nb::arg("out"), nb::arg("stream"));
  def_api(m, library, "moe_activation", &moe_activation, nb::arg("kind"), nb::arg("expression"), nb::arg("dtype"),
          nb::arg("in_"), nb::arg("rows"), nb::arg("in_cols"), nb::arg("out"), nb::arg("out_rows"),
          nb::arg("scatter_idx"), nb::arg("scatter_cols"), nb::arg("group_rows"), nb::arg("groups"),
          nb::arg("num_valid"), nb::arg("stream"));

  // NF4 (bitsandbytes format). The absmax buffer travels in the weight's scales slot.
  def_api(m, library, "nf4_layout_version", &nf4_layout_version);
  def_api(m, library, "nf4_weight_bytes", &nf4_weight_bytes, nb::arg("E"), nb::arg("N"), nb::arg("K"));
  def_api(m, library, "nf4_absmax_bytes", &nf4_absmax_bytes, nb::arg("E"), nb::arg("N"), nb::arg("K"));
  def_api(m, library, "nf4_pack", &nf4_pack, nb::arg("packed"), nb::arg("absmax"), nb::arg("nested_absmax"),
          nb::arg("nested_code"), nb::arg("offset"), nb::arg("E"), nb::arg("N"), nb::arg("K"),
          nb::arg("weight_out"), nb::arg("absmax_out"), nb::arg("stream"));
  def_api(m, library, "nf4_dequantize", &nf4_dequantize, nb::arg("tag"), nb::arg("weight"), nb::arg("absmax"),
          nb::arg("dtype"), nb::arg("out"), nb::arg("stream"));
  def_api(m, library, "nf4_offsets", &nf4_offsets, nb::arg("x"), nb::arg("dtype"), nb::arg("S"), nb::arg("tag"),
          nb::arg("weight"), nb::arg("absmax"), nb::arg("offsets"), nb::arg("out"), nb::arg("stream"));
  def_api(m, library, "last_kernel", &last_kernel);
  def_api(m, library, "tuning_json", &tuning_json, nb::arg("arch").none(), nb::arg("E"), nb::arg("N"), nb::arg("K"),
          nb::arg("top_k"));
}
