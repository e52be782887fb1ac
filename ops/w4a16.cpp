#include "ops/w4a16.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <system_error>
#include <thread>

#include <fmt/format.h>

#include "jit/families/l2_flush.hpp"
#include "jit/families/w4a16.hpp"
#include "kernels_src/l2_flush_args.cuh"
#include "kernels_src/nf4_args.cuh"
#include "runtime/runtime.hpp"
#include "core/env.hpp"
#include "launcher/device_context.hpp"
#include "launcher/driver_api.hpp"
#include "launcher/tensor_map.hpp"
#include "ops/nf4.hpp"
#include "ops/routing_check.hpp"
#include "ops/pack_launch.hpp"
#include "ops/validate.hpp"
#include "ops/w4a16_search.hpp"
#include "tuning_tables/w4a16_resolver.hpp"

namespace chord {
namespace {

void require_weight_shape(int64_t experts, int64_t n, int64_t k) {
  require_range(experts, "E", 1, kW4A16MaxExperts);
  require_range(n, "N", kW4A16PackN, kW4A16MaxNK);
  require_range(k, "K", kW4A16PackK, kW4A16MaxNK);
  require_multiple(n, "N", kW4A16PackN);
  require_multiple(k, "K", kW4A16PackK);
}

const char* format_name(uint32_t format) {
  switch (format) {
    case CHORD_FORMAT_INT4_G32: return "INT4 group-32";
    case CHORD_FORMAT_INT4_G32_FP16: return "INT4 group-32 FP16";
    case CHORD_FORMAT_INT4_G32_ZP: return "INT4 group-32 with zero points";
    case CHORD_FORMAT_INT4_G32_ZP_FP16: return "INT4 group-32 FP16 with zero points";
    case CHORD_FORMAT_INT4_G128: return "INT4 group-128";
    case CHORD_FORMAT_INT4_G128_FP16: return "INT4 group-128 FP16";
    case CHORD_FORMAT_INT4_G128_ZP: return "INT4 group-128 with zero points";
    case CHORD_FORMAT_INT4_G128_ZP_FP16: return "INT4 group-128 FP16 with zero points";
    case CHORD_FORMAT_NF4: return "NF4";
  }
  return "unknown";
}

bool is_g128_format(uint32_t format) {
  return format == CHORD_FORMAT_INT4_G128 || format == CHORD_FORMAT_INT4_G128_FP16 ||
         format == CHORD_FORMAT_INT4_G128_ZP || format == CHORD_FORMAT_INT4_G128_ZP_FP16;
}

bool is_int4_format(uint32_t format) {
  return format == CHORD_FORMAT_INT4_G32 || format == CHORD_FORMAT_INT4_G32_FP16 ||
         format == CHORD_FORMAT_INT4_G32_ZP || format == CHORD_FORMAT_INT4_G32_ZP_FP16 || is_g128_format(format);
}

// The GEMM weight kind of an INT4 format (checked by is_int4_format).
W4A16WeightKind int4_kind(uint32_t format) {
  switch (format) {
    case CHORD_FORMAT_INT4_G32_FP16: return kW4A16WeightInt4Fp16;
    case CHORD_FORMAT_INT4_G32_ZP: return kW4A16WeightInt4Zp;
    case CHORD_FORMAT_INT4_G32_ZP_FP16: return kW4A16WeightInt4ZpFp16;
    case CHORD_FORMAT_INT4_G128: return kW4A16WeightInt4G128;
    case CHORD_FORMAT_INT4_G128_FP16: return kW4A16WeightInt4G128Fp16;
    case CHORD_FORMAT_INT4_G128_ZP: return kW4A16WeightInt4ZpG128;
    case CHORD_FORMAT_INT4_G128_ZP_FP16: return kW4A16WeightInt4ZpG128Fp16;
  }
  return kW4A16WeightInt4;
}

// The INT4 format of a packed (zero points, FP16 scales, group 128) combination.
uint32_t int4_format(bool zero_point, bool fp16, bool g128) {
  if (g128) {
    return zero_point ? (fp16 ? CHORD_FORMAT_INT4_G128_ZP_FP16 : CHORD_FORMAT_INT4_G128_ZP)
                      : (fp16 ? CHORD_FORMAT_INT4_G128_FP16 : CHORD_FORMAT_INT4_G128);
  }
  return zero_point ? (fp16 ? CHORD_FORMAT_INT4_G32_ZP_FP16 : CHORD_FORMAT_INT4_G32_ZP)
                    : (fp16 ? CHORD_FORMAT_INT4_G32_FP16 : CHORD_FORMAT_INT4_G32);
}

// Group 128 reads one scale row per 128 k: K % 128 == 0 on top of the packed layout's rules.
void require_g128_shape(int64_t k) {
  CHORD_REQUIRE(k % kW4A16Group128 == 0,
                "argument 'K' = {} is invalid: the group-128 formats need K % 128 == 0 (repeat the scales per 32 "
                "and pack without CHORD_W4A16_SRC_GROUP_128 instead)",
                k);
}

}  // namespace

// The tag check every operator does before anything else.
void require_w4a16_weight(const chord_w4a16_weight_t* w, uint32_t format) {
  CHORD_REQUIRE(w != nullptr, "argument 'weight' is a null pointer");
  CHORD_REQUIRE(w->magic == CHORD_W4A16_MAGIC, "argument 'weight' is not a chord W4A16 packed weight (bad magic 0x{:08x})",
                w->magic);
  CHORD_REQUIRE(w->format == format, "argument 'weight' has format {} ({}); this operator needs {} ({})", w->format,
                format_name(w->format), format_name(format), format);
  const uint32_t version = format == CHORD_FORMAT_NF4 ? kNF4LayoutVersion : kW4A16LayoutVersion;  // INT4: both scale types
  const uint32_t group = format == CHORD_FORMAT_NF4 ? kNF4BlockSize
                         : is_g128_format(format)   ? kW4A16Group128
                                                    : kW4A16GroupSize;
  CHORD_REQUIRE(w->layout_version == version,
                "argument 'weight' has packed layout version {}; this library reads version {} (re-pack the weights)",
                w->layout_version, version);
  CHORD_REQUIRE(w->group_size == group, "argument 'weight' has group size {}; supported: {}", w->group_size, group);
  try {
    require_weight_shape(w->experts, w->n, w->k);
    if (is_g128_format(format)) require_g128_shape(w->k);
    // NF4's own bound (E*N*K <= 2^40, as chord_nf4_pack makes them): past it the buffer sizes
    // the overlap checks need are unknown (nf4_weight_bytes < 0).
    if (format == CHORD_FORMAT_NF4 && nf4_weight_bytes(w->experts, w->n, w->k) < 0) {
      fail(CHORD_ERROR_INVALID_ARGUMENT, "E*N*K = {}*{}*{} is more than an NF4 weight holds (2^40)", w->experts, w->n,
           w->k);
    }
  } catch (const Error& e) {  // the operator has no E/N/K arguments: say they come from the tag
    fail(CHORD_ERROR_INVALID_ARGUMENT, "argument 'weight' has an unsupported shape: {}", e.what());
  }
  require_pointer(w->weight_dev, "weight.weight_dev", 16);
  require_pointer(w->scales_dev, "weight.scales_dev", 16);
}

W4A16WeightKind require_int4_weight(const chord_w4a16_weight_t* w) {
  CHORD_REQUIRE(w != nullptr, "argument 'weight' is a null pointer");
  // The format names the activation / output type the call must be given (the C API takes no
  // dtype for INT4: the pointers are untyped), so a mismatch can only be caught where the
  // dtype is known (the Python layer checks it against the tag).
  CHORD_REQUIRE(w->magic != CHORD_W4A16_MAGIC || is_int4_format(w->format),
                "argument 'weight' has format {} ({}); this operator needs {} ({}: BF16 activations) or {} ({}: "
                "FP16 activations), their zero-point forms {} / {}, or the group-128 forms {} / {} / {} / {}",
                w->format, format_name(w->format), format_name(CHORD_FORMAT_INT4_G32), CHORD_FORMAT_INT4_G32,
                format_name(CHORD_FORMAT_INT4_G32_FP16), CHORD_FORMAT_INT4_G32_FP16, CHORD_FORMAT_INT4_G32_ZP,
                CHORD_FORMAT_INT4_G32_ZP_FP16, CHORD_FORMAT_INT4_G128, CHORD_FORMAT_INT4_G128_FP16,
                CHORD_FORMAT_INT4_G128_ZP, CHORD_FORMAT_INT4_G128_ZP_FP16);
  require_w4a16_weight(w, is_int4_format(w->format) ? w->format : CHORD_FORMAT_INT4_G32);
  return int4_kind(w->format);
}

namespace {

struct Launch {
  DeviceContext device;
  W4A16GemmConfig config;
  const LoadedKernel* kernel;
};

bool stream_capturing(CUstream stream);

// The call's arguments on synthetic routing (w4a16_synthetic_routing): its routing arrays and an
// output of its own on the device, so that no timed launch writes a row the call would not.
class SyntheticCall {
 public:
  SyntheticCall(const W4A16SyntheticRouting& routing, const W4A16Args& call, CUstream stream);
  ~SyntheticCall();
  SyntheticCall(const SyntheticCall&) = delete;
  SyntheticCall& operator=(const SyntheticCall&) = delete;
  W4A16Args args;

 private:
  const void* upload(const std::vector<int32_t>& values);
  void release();
  CUstream stream_;
  std::vector<CUdeviceptr> owned_;
};

struct RoutingSpread {
  int active = 0;     // experts (masked: groups) holding rows
  int64_t rows = 0;   // the rows they hold
};
RoutingSpread routing_spread(const W4A16Args& args, CUstream stream);
std::vector<double> time_configs(const DeviceContext& device, const std::vector<W4A16GemmConfig>& configs,
                                 const W4A16Args& args, CUstream stream);

Launch prepare(W4A16Problem problem, const W4A16Args& args, const chord_w4a16_weight_t* w, CUstream stream,
               W4A16WeightKind weight) {
  Launch l;
  problem.a_rows = args.a_rows;
  problem.num_groups = args.num_groups;
  problem.max_m = args.max_m;
  problem.capacity = args.capacity;
  problem.top_k = args.top_k;
  l.device = current_device_context(stream);
  problem.n = static_cast<int>(w->n);
  problem.k = static_cast<int>(w->k);
  problem.experts = static_cast<int>(w->experts);
  problem.arch = l.device.arch;
  problem.sm_count = l.device.sm_count;
  problem.weight = weight;
  l.config = resolve_w4a16_config(problem);
  // The decode tile search (ops/w4a16_search.hpp): after a shape's first call, one lookup.
  if (w4a16_search_applies(problem, l.config, env())) {
    if (const W4A16GemmConfig* known = w4a16_search_known(w4a16_search_key(problem, l.config))) {
      l.config = *known;
    } else if (auto plan = w4a16_search_plan(problem, l.config, env())) {
      const auto timer = [&](const std::vector<W4A16GemmConfig>& configs) {
        try {
          const RoutingSpread spread = routing_spread(args, stream);
          if (w4a16_routing_representative(problem, spread.active, spread.rows)) {
            return time_configs(l.device, configs, args, stream);
          }
          const std::optional<W4A16SyntheticRouting> routing = w4a16_synthetic_routing(problem);
          if (!routing) return std::vector<double>{};  // decide at a later call
          const SyntheticCall synthetic(*routing, args, stream);
          w4a16_search_count_synthetic();
          return time_configs(l.device, configs, synthetic.args, stream);
        } catch (const std::exception& e) {
          // The rule's tile needs none of what failed here: nothing timed, so this process runs
          // the rule's tile for the shape (ops/w4a16_search.hpp), and says why.
          warn(fmt::format("the decode tile search failed ({}); this shape runs the rule's tile", e.what()));
          return std::vector<double>(configs.size(), std::numeric_limits<double>::infinity());
        }
      };
      l.config = w4a16_searched_config(*plan, stream_capturing(stream), timer, JitRuntime::global().disk_cache());
    }
  }
  l.config = w4a16_config_for_masked_grid(l.config, args);
  l.kernel = &JitRuntime::global().kernel(l.config.descriptor(l.device.arch), l.device.context);
  return l;
}

// A GEMM's output against everything the call reads: activations, the packed weight's two
// buffers (INT4 or NF4 sizes) and the routing arrays.
void require_out_disjoint(const void* out, int64_t out_rows, const void* a, int64_t a_rows,
                          const chord_w4a16_weight_t* w, W4A16WeightKind kind, std::initializer_list<Buffer> routing) {
  const Buffer out_buffer{out, out_rows * w->n * 2, "out"};
  const int64_t scale_bytes = w4a16_is_nf4(kind) ? nf4_absmax_bytes(w->experts, w->n, w->k)
                                                 : w4a16_format_scale_bytes(w->format, w->experts, w->n, w->k);
  require_disjoint({out_buffer}, {{a, a_rows * w->k * 2, "a"},
                                  {w->weight_dev, w->experts * w->n * (w->k / 2), "weight"},
                                  {w->scales_dev, scale_bytes, "scales"}});
  require_disjoint({out_buffer}, routing);
}

W4A16Args base_args(const void* a, const chord_w4a16_weight_t* w, void* out, W4A16Mode mode) {
  W4A16Args args{};
  args.a = a;
  args.w = w->weight_dev;
  args.scales = w->scales_dev;
  args.out = out;
  args.lda = w->k;
  args.ldc = w->n;
  args.n = static_cast<int>(w->n);
  args.k = static_cast<int>(w->k);
  args.num_experts = static_cast<int>(w->experts);
  args.mode = mode;
  return args;
}

static_assert(sizeof(CUtensorMap) == sizeof(W4A16TmaMap), "the kernel's TMA map holds a CUtensorMap");

void set_map(W4A16TmaMap* dst, const CUtensorMap& map) { std::memcpy(dst, &map, sizeof map); }

CUtensorMap packed_map(const void* base, const W4A16MapShape& s) {
  const CUtensorMapDataType type = s.element_bytes == 4 ? CU_TENSOR_MAP_DATA_TYPE_UINT32 : CU_TENSOR_MAP_DATA_TYPE_UINT16;
  return make_tensor_map_2d(base, type, static_cast<uint64_t>(s.rows), static_cast<uint64_t>(s.cols),
                            static_cast<uint64_t>(s.cols), s.box_rows, s.box_cols, CU_TENSOR_MAP_SWIZZLE_NONE);
}

// The warp-specialized kernel's TMA maps: the packed weight and scales (one box of each per
// stage), and in contiguous, masked and offsets mode A, BLOCK_M rows x 64 elements (128 bytes:
// one swizzle span) per box, as the kernel's shared-memory stage lays them out.
void set_tma_maps(const Launch& l, W4A16Args* args) {
  if (!l.config.warp_specialized()) return;
  const int bn = l.config.block_n;
  set_map(&args->w_map, packed_map(args->w, w4a16_weight_map_shape(args->num_experts, args->n, args->k, bn)));
  set_map(&args->s_map,
          packed_map(args->scales, w4a16_scale_map_shape(args->num_experts, args->n, args->k, bn, l.config.nf4(),
                                                         l.config.zero_point(), l.config.g128())));
  if (!w4a16_tma_activations(args->mode)) return;
  const long long rows = w4a16_a_total_rows(args->mode, args->a_rows, args->num_groups, args->max_m);
  set_map(&args->a_map, make_tensor_map_2d(args->a, CU_TENSOR_MAP_DATA_TYPE_UINT16, static_cast<uint64_t>(rows),
                                           static_cast<uint64_t>(args->k), static_cast<uint64_t>(args->lda),
                                           l.config.block_m, kW4A16WgmmaBlockK, CU_TENSOR_MAP_SWIZZLE_128B));
}

// The config of the last W4A16 GEMM call this thread made (w4a16_last_kernel): the decode tile
// search may run another tile than the rule's, and only the call knows which. Every call's
// launch passes here last (a search's timed candidates before it), so the call's own config
// is the one kept; a call that fails before its launch leaves the last one's.
thread_local std::optional<W4A16GemmConfig> t_last_config;

// check_routing: CHORD_VALIDATE_ROUTING's check before the GEMM; the search's timed launches
// check the routing once before the first of them, so that the check is not inside their
// timings.
void launch(const Launch& l, const W4A16Args& in_args, CUstream stream, bool check_routing = true) {
  W4A16Args args = in_args;
  // A masked grid follows the hint only where the kernel loops over tiles; every other kernel
  // takes one tile per CTA and gets a grid over the whole buffer (masked decode calls far below
  // the buffer's rows go to a kernel that loops: the resolver's rejection).
  if (args.mode == kW4A16Masked) {
    const bool follows = w4a16_masked_grid_follows_hint(l.config, args);
    // An mma.sync kernel's form must match its grid: the one-tile form on a hint-sized grid
    // would leave tiles undone.
    CHORD_REQUIRE(l.config.wgmma() || l.config.masked_loop == follows,
                  "masked launch of {} on a {} grid", l.config.source().name, follows ? "hint-sized" : "buffer-wide");
    if (!follows) args.expected_m = 0;
  }
  set_tma_maps(l, &args);
  // w4a16_grid truncates to 32 bits: a row count x N that large would silently drop tiles. The
  // bound is every tile's (masked: the buffer's, which its CTAs may loop up to).
  const long long ctas = w4a16_m_tiles(args.mode, l.config.block_m, args.a_rows, args.num_experts, args.num_groups,
                                       args.max_m, args.capacity) *
                         w4a16_n_runs(args.n, l.config.block_n, l.config.n_run) * l.config.split_k;
  CHORD_REQUIRE(ctas <= INT_MAX, "rows x N too large: the grid would need {} CTAs (at most {})", ctas, INT_MAX);
  const std::string beyond = w4a16_offset_limit_error(l.config, args, ctas, l.device.sm_count);
  CHORD_REQUIRE(beyond.empty(), "{}", beyond);
  W4A16Dim3 grid = w4a16_grid(args, l.config.block_m, l.config.block_n, l.config.n_run);
  if (grid.x == 0) {  // no rows: nothing to launch, the kernel named all the same (chord.h)
    t_last_config = l.config;
    return;
  }
  grid.x *= l.config.split_k;  // split-K: each tile is a cluster of split_k CTAs
  // The warp-specialized kernel loops over tiles (CTA b: b, b + grid, ...): one CTA per SM.
  if (l.config.warp_specialized() && grid.x > static_cast<unsigned int>(l.device.sm_count)) {
    grid.x = static_cast<unsigned int>(l.device.sm_count);
  }
  if (check_routing && env().validate_routing) enqueue_routing_check(args, stream);
  l.kernel->launch(LaunchGrid{grid.x, grid.y, grid.z}, stream, &args);
  t_last_config = l.config;  // only a kernel that was launched
}

// Whether the stream is being captured into a CUDA Graph (unknown counts as yes: the search
// then times nothing).
bool stream_capturing(CUstream stream) {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (driver().cuStreamIsCapturing(stream, &status) != CUDA_SUCCESS) return true;
  return status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// How the call's routing spreads its rows over this GPU's experts, read back after the
// stream's work (the search synchronizes anyway).
RoutingSpread routing_spread(const W4A16Args& args, CUstream stream) {
  const DriverApi& d = driver();
  CHORD_CU(d.cuStreamSynchronize(stream));
  auto read = [&](const void* src, size_t count) {
    std::vector<int32_t> v(count);
    if (count > 0) CHORD_CU(d.cuMemcpyDtoH(v.data(), reinterpret_cast<CUdeviceptr>(src), count * sizeof(int32_t)));
    return v;
  };
  RoutingSpread r;
  if (args.mode == kW4A16Masked) {
    for (int32_t rows : read(args.masked_m, static_cast<size_t>(args.num_groups))) {
      const int32_t valid = std::clamp(rows, 0, args.max_m);
      r.active += valid > 0;
      r.rows += valid;
    }
  } else if (args.mode == kW4A16Offsets) {
    int32_t end = 0;
    for (int32_t next : read(args.offsets, static_cast<size_t>(args.num_experts))) {
      next = std::min(next, args.a_rows);
      r.active += next > end;
      end = std::max(end, next);
    }
    r.rows = end;
  } else if (args.mode == kW4A16Indexed) {
    // Blocks of the valid prefix whose expert is one of this GPU's; their route ids that are
    // real routes (the others pad the block).
    const int32_t padded = std::clamp(read(args.num_tokens_padded, 1)[0], 0, args.capacity);
    const int block = std::max(args.block_size, 1);
    const std::vector<int32_t> experts = read(args.expert_ids, static_cast<size_t>(padded / block));
    const std::vector<int32_t> ids = read(args.sorted_ids, static_cast<size_t>(padded));
    const int64_t routes = int64_t(args.a_rows) * std::max(args.top_k, 1);
    std::vector<char> seen(static_cast<size_t>(std::max(args.num_experts, 0)), 0);
    for (size_t b = 0; b < experts.size(); ++b) {
      const int32_t e = experts[b];
      if (e < 0 || e >= args.num_experts) continue;
      for (int i = 0; i < block; ++i) r.rows += ids[b * block + i] >= 0 && ids[b * block + i] < routes;
      if (!seen[e]) {
        seen[e] = 1;
        ++r.active;
      }
    }
  }
  return r;
}

SyntheticCall::SyntheticCall(const W4A16SyntheticRouting& routing, const W4A16Args& call, CUstream stream)
    : args(call), stream_(stream) {
  const DriverApi& d = driver();
  owned_.reserve(5);  // so that recording an allocation never throws
  try {
    CUdeviceptr out = 0;
    const size_t out_bytes = static_cast<size_t>(std::max<int64_t>(routing.out_rows, 1)) *
                             static_cast<size_t>(call.ldc) * sizeof(uint16_t);  // BF16 / FP16 rows
    CHORD_CU(d.cuMemAlloc(&out, out_bytes));
    owned_.push_back(out);
    args.out = reinterpret_cast<void*>(out);
    if (call.mode == kW4A16Masked) {
      args.masked_m = upload(routing.masked_m);
      args.max_m = routing.max_m;
    }
    if (call.mode == kW4A16Offsets) args.offsets = upload(routing.offsets);
    if (call.mode == kW4A16Indexed) {
      args.sorted_ids = upload(routing.sorted_ids);
      args.expert_ids = upload(routing.expert_ids);
      args.num_tokens_padded = upload({routing.num_tokens_padded});
    }
  } catch (...) {
    release();
    throw;
  }
}

SyntheticCall::~SyntheticCall() { release(); }

// The stream's launches may still read the buffers (a search that failed part-way).
void SyntheticCall::release() {
  const DriverApi& d = driver();
  if (!owned_.empty()) d.cuStreamSynchronize(stream_);
  for (CUdeviceptr p : owned_) d.cuMemFree(p);
  owned_.clear();
}

// On the call's stream: a copy on the legacy stream would not be ordered before the launches of
// a non-blocking stream. A pageable source is staged before the call returns.
const void* SyntheticCall::upload(const std::vector<int32_t>& values) {
  const DriverApi& d = driver();
  CUdeviceptr p = 0;
  CHORD_CU(d.cuMemAlloc(&p, std::max<size_t>(values.size(), 1) * sizeof(int32_t)));
  owned_.push_back(p);
  if (!values.empty()) CHORD_CU(d.cuMemcpyHtoDAsync(p, values.data(), values.size() * sizeof(int32_t), stream_));
  return reinterpret_cast<const void*>(p);
}

// What one search allocates, released however it ends.
struct SearchResources {
  std::vector<CUevent> events;
  CUdeviceptr flush = 0;
  ~SearchResources() {
    const DriverApi& d = driver();
    for (CUevent e : events) d.cuEventDestroy(e);
    if (flush != 0) d.cuMemFree(flush);
  }
};

// The decode tile search's timer (ops/w4a16_search.hpp): the candidates compiled in parallel,
// then one warm-up round and kSearchReps timed rounds, candidates interleaved, each launch on
// the call's own inputs after a read of twice the L2 (a call in a model finds its weights in
// DRAM), between two events. Returns each candidate's median in us (infinity: it failed).
// The output is written by every launch; the call's own launch comes after.
std::vector<double> time_configs(const DeviceContext& device, const std::vector<W4A16GemmConfig>& candidates,
                                 const W4A16Args& args, CUstream stream) {
  constexpr int kSearchReps = 5;
  const DriverApi& d = driver();
  const size_t n = candidates.size();
  // Each candidate as these arguments run it (a masked grid that follows the hint loops).
  std::vector<W4A16GemmConfig> configs;
  configs.reserve(n);
  for (const W4A16GemmConfig& c : candidates) configs.push_back(w4a16_config_for_masked_grid(c, args));
  JitRuntime& jit = JitRuntime::global();
  {
    const auto compile = [&jit, &configs, &device](size_t i) {
      try {
        jit.compile(configs[i].descriptor(device.arch));
      } catch (...) {  // the load below reports it as a failed candidate
      }
    };
    std::vector<std::thread> compiles;
    for (size_t i = 0; i < n; ++i) {
      try {
        compiles.emplace_back(compile, i);
      } catch (const std::system_error&) {  // no thread to spare (a process limit): compile it here
        compile(i);
      }
    }
    for (auto& t : compiles) t.join();
  }
  std::vector<const LoadedKernel*> kernels(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    try {
      kernels[i] = &jit.kernel(configs[i].descriptor(device.arch), device.context);
    } catch (const Error&) {
    }
  }
  SearchResources res;
  int l2_bytes = 0;
  CHORD_CU(d.cuDeviceGetAttribute(&l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device.device));
  const size_t flush_words = (2 * static_cast<size_t>(std::max(l2_bytes, 1 << 20)) + 15) / 16;
  // No memory to spare: time with a warm L2 rather than not at all.
  if (d.cuMemAlloc(&res.flush, flush_words * 16) != CUDA_SUCCESS) res.flush = 0;
  L2FlushArgs flush{};
  const LoadedKernel* flusher = nullptr;
  if (res.flush != 0) {
    CHORD_CU(d.cuMemsetD8Async(res.flush, 0, flush_words * 16, stream));
    flush.buffer = reinterpret_cast<const void*>(res.flush);
    flush.sink = reinterpret_cast<void*>(res.flush);
    flush.count = static_cast<long long>(flush_words);
    flush.never = 0xffffffffu;
    flusher = &jit.kernel(L2FlushConfig{}.descriptor(device.arch), device.context);
  }
  res.events.resize(2 * n * kSearchReps);
  for (CUevent& e : res.events) CHORD_CU(d.cuEventCreate(&e, CU_EVENT_DEFAULT));
  std::vector<bool> ok(n);
  for (size_t i = 0; i < n; ++i) ok[i] = kernels[i] != nullptr;
  const LaunchGrid flush_grid{static_cast<uint32_t>(4 * device.sm_count), 1, 1};
  if (env().validate_routing) enqueue_routing_check(args, stream);
  for (int r = -1; r < kSearchReps; ++r) {
    for (size_t i = 0; i < n; ++i) {
      if (!ok[i]) continue;
      if (flusher != nullptr) flusher->launch(flush_grid, stream, &flush);
      const size_t at = 2 * (static_cast<size_t>(r < 0 ? 0 : r) * n + i);
      if (r >= 0) CHORD_CU(d.cuEventRecord(res.events[at], stream));
      try {
        launch(Launch{device, configs[i], kernels[i]}, args, stream, /*check_routing=*/false);
      } catch (const Error&) {
        ok[i] = false;
      }
      if (r >= 0) CHORD_CU(d.cuEventRecord(res.events[at + 1], stream));
    }
  }
  CHORD_CU(d.cuStreamSynchronize(stream));
  std::vector<double> medians(n, std::numeric_limits<double>::infinity());
  for (size_t i = 0; i < n; ++i) {
    if (!ok[i]) continue;
    std::vector<double> us;
    for (int r = 0; r < kSearchReps; ++r) {
      float ms = 0;
      CHORD_CU(d.cuEventElapsedTime(&ms, res.events[2 * (r * n + i)], res.events[2 * (r * n + i) + 1]));
      us.push_back(1000.0 * ms);
    }
    std::nth_element(us.begin(), us.begin() + kSearchReps / 2, us.end());
    medians[i] = us[kSearchReps / 2];
  }
  // No candidate ran (each failed to compile, load or launch): the shape stays on the rule's
  // tile for this process (w4a16_searched_config). Say so, as a thrown error would.
  if (n > 0 && std::none_of(ok.begin(), ok.end(), [](bool ran) { return ran; })) {
    warn("the decode tile search could run none of its candidates; this shape runs the rule's tile");
  }
  return medians;
}

}  // namespace

int64_t w4a16_weight_bytes(int64_t experts, int64_t n, int64_t k) {
  return size_if_valid([&] { require_weight_shape(experts, n, k); }, [&] { return experts * n * k / 2; });
}
int64_t w4a16_scale_bytes(int64_t experts, int64_t n, int64_t k) {
  return size_if_valid([&] { require_weight_shape(experts, n, k); },
                       [&] { return experts * n * (k / kW4A16GroupSize) * 2; });
}
int64_t w4a16_zp_scale_bytes(int64_t experts, int64_t n, int64_t k) {
  return size_if_valid([&] { require_weight_shape(experts, n, k); },
                       [&] { return experts * n * (k / kW4A16GroupSize) * 4; });
}
int64_t w4a16_format_scale_bytes(uint32_t format, int64_t experts, int64_t n, int64_t k) {
  if (!is_int4_format(format)) return -1;
  const W4A16WeightKind kind = int4_kind(format);
  const bool g128 = w4a16_is_g128(kind);
  return size_if_valid(
      [&] {
        require_weight_shape(experts, n, k);
        if (g128) require_g128_shape(k);
      },
      [&] { return experts * n * (k / w4a16_scale_group(kind)) * (w4a16_has_zero_point(kind) ? 4 : 2); });
}

// chord_w4a16_pack's src_format is the enum value itself, with the FP16 flag in a bit of its own.
static_assert(CHORD_W4A16_SRC_CODES == kInt4Codes && CHORD_W4A16_SRC_COMPRESSED == kInt4Compressed,
              "src_format values are Int4SourceFormat");
static_assert((CHORD_W4A16_SRC_SCALES_FP16 & (kInt4Codes | kInt4Compressed)) == 0,
              "the FP16 scales flag is apart from the format");
static_assert((CHORD_W4A16_SRC_GROUP_128 & (kInt4Codes | kInt4Compressed | CHORD_W4A16_SRC_SCALES_FP16)) == 0,
              "the group-128 flag is apart from the format and the FP16 flag");

namespace {

// The source checks both INT4 pack entry points make (zero_point: the asymmetric pack, whose
// zero_points must then be given); returns the packer's config (source form, with the FP16 flag the FP16 element, with
// the group-128 flag group 128).
W4A16PackConfig checked_pack_source(const void* src, int src_format_flags, const void* scales, bool zero_point,
                                    const void* zero_points, int64_t experts, int64_t n, int64_t k, void* weight_out,
                                    void* scales_out, const chord_w4a16_weight_t* weight) {
  const bool fp16 = (src_format_flags & CHORD_W4A16_SRC_SCALES_FP16) != 0;
  const bool g128 = (src_format_flags & CHORD_W4A16_SRC_GROUP_128) != 0;
  const int src_format = src_format_flags & ~(CHORD_W4A16_SRC_SCALES_FP16 | CHORD_W4A16_SRC_GROUP_128);
  CHORD_REQUIRE(src_format == kInt4Codes || src_format == kInt4Compressed,
                "argument 'src_format' = {} is invalid: 0 (uint8 codes) or 1 (compressed-tensors int32), optionally "
                "OR CHORD_W4A16_SRC_SCALES_FP16 ({}) and / or CHORD_W4A16_SRC_GROUP_128 ({})",
                src_format_flags, CHORD_W4A16_SRC_SCALES_FP16, CHORD_W4A16_SRC_GROUP_128);
  require_weight_shape(experts, n, k);
  if (g128) require_g128_shape(k);
  require_pointer(src, "src", src_format == kInt4Codes ? 1 : 4);
  require_pointer(scales, "scales", 2);
  require_pointer(weight_out, "weight_out", 16);
  require_pointer(scales_out, "scales_out", 16);
  CHORD_REQUIRE(weight != nullptr, "argument 'weight' is a null pointer");
  if (zero_point) require_pointer(zero_points, "zero_points", 1);
  const int64_t groups = experts * n * (k / (g128 ? kW4A16Group128 : kW4A16GroupSize));
  require_disjoint(
      {{weight_out, w4a16_weight_bytes(experts, n, k), "weight_out"},
       {scales_out, w4a16_format_scale_bytes(int4_format(zero_point, fp16, g128), experts, n, k), "scales_out"}},
      {{src, src_format == kInt4Codes ? experts * n * k : experts * n * k / 2, "src"},
       {scales, groups * 2, "scales"},
       {zero_points, groups, "zero_points"}});
  W4A16PackConfig config;
  config.source_format = static_cast<Int4SourceFormat>(src_format);
  config.element = fp16 ? kNF4FP16 : kNF4BF16;
  config.group = g128 ? kW4A16Group128 : kW4A16GroupSize;
  return config;
}

}  // namespace

void w4a16_pack(const void* src, int src_format_flags, const void* scales, int64_t experts, int64_t n, int64_t k,
                void* weight_out, void* scales_out, chord_w4a16_weight_t* weight, CUstream stream) {
  W4A16PackConfig config = checked_pack_source(src, src_format_flags, scales, false, nullptr, experts, n, k,
                                               weight_out, scales_out, weight);
  const bool fp16 = config.element == kNF4FP16;
  config.element = kNF4BF16;  // the scales are copied as 16-bit patterns: one kernel for both types
  W4A16PackArgs args{src, scales, weight_out, scales_out, static_cast<int>(experts), static_cast<int>(n),
                     static_cast<int>(k), 0};
  launch_pack_grid(config, args, stream);
  // The format records which type the scales hold, and their group.
  const uint32_t format = int4_format(false, fp16, config.group == kW4A16Group128);
  *weight = chord_w4a16_weight_t{CHORD_W4A16_MAGIC, format, kW4A16LayoutVersion, static_cast<uint32_t>(config.group),
                                 experts, n, k, weight_out, scales_out};
}

void w4a16_pack_zp(const void* src, int src_format_flags, const void* scales, const void* zero_points,
                   int64_t experts, int64_t n, int64_t k, void* weight_out, void* scales_out,
                   chord_w4a16_weight_t* weight, CUstream stream) {
  W4A16PackConfig config = checked_pack_source(src, src_format_flags, scales, true, zero_points, experts, n, k,
                                               weight_out, scales_out, weight);
  config.zero_point = true;  // config.element: the type the bias is written in
  const W4A16PackZpArgs args{{src, scales, weight_out, scales_out, static_cast<int>(experts), static_cast<int>(n),
                              static_cast<int>(k), 0},
                             zero_points};
  DeviceContext device = current_device_context(stream);
  const LoadedKernel& kernel = JitRuntime::global().kernel(config.descriptor(device.arch), device.context);
  const W4A16Dim3 grid = w4a16_pack_grid(args.base.num_experts, args.base.n, args.base.k);
  kernel.launch(LaunchGrid{grid.x, grid.y, grid.z}, stream, &args);
  const uint32_t format = int4_format(true, config.element == kNF4FP16, config.group == kW4A16Group128);
  *weight = chord_w4a16_weight_t{CHORD_W4A16_MAGIC, format, kW4A16LayoutVersion, static_cast<uint32_t>(config.group),
                                 experts, n, k, weight_out, scales_out};
}

void w4a16_dequantize(const chord_w4a16_weight_t* weight, void* out, CUstream stream) {
  const W4A16WeightKind kind = require_int4_weight(weight);
  require_pointer(out, "out", 16);
  require_out_disjoint(out, weight->experts * weight->k, nullptr, 0, weight, kind, {});
  W4A16PackConfig config;
  config.unpack = true;
  config.zero_point = w4a16_has_zero_point(kind);
  config.element = static_cast<NF4Element>(w4a16_element(kind));
  config.group = w4a16_scale_group(kind);
  W4A16UnpackArgs args{weight->weight_dev, weight->scales_dev, out, static_cast<int>(weight->experts),
                       static_cast<int>(weight->n), static_cast<int>(weight->k), 0};
  launch_pack_grid(config, args, stream);
}

void w4a16_contiguous(const void* a, int64_t m, const chord_w4a16_weight_t* weight, const int32_t* m_indices,
                      void* out, CUstream stream) {
  const W4A16WeightKind kind = require_int4_weight(weight);
  require_range(m, "m", 0, kW4A16MaxRows);
  if (m == 0) return;
  require_pointer(a, "a", 16);
  require_pointer(m_indices, "m_indices", 4);
  require_pointer(out, "out", 16);
  require_out_disjoint(out, m, a, m, weight, kind, {{m_indices, m * 4, "m_indices"}});
  W4A16Problem problem;
  problem.mode = kW4A16Contiguous;
  problem.rows_per_expert = std::max<int64_t>(1, m / weight->experts);
  W4A16Args args = base_args(a, weight, out, kW4A16Contiguous);
  args.m_indices = m_indices;
  args.a_rows = static_cast<int>(m);
  launch(prepare(problem, args, weight, stream, kind), args, stream);
}

void w4a16_masked(const void* a, int64_t groups, int64_t max_m, const chord_w4a16_weight_t* weight,
                  const int32_t* masked_m, int64_t expected_m, void* out, CUstream stream) {
  const W4A16WeightKind kind = require_int4_weight(weight);
  require_range(groups, "G", 0, weight->experts);
  require_range(max_m, "max_m", 0, kW4A16MaxRows);
  CHORD_REQUIRE(groups * max_m <= kW4A16MaxRows, "G*max_m = {} exceeds {}", groups * max_m, kW4A16MaxRows);
  if (groups == 0 || max_m == 0) return;
  require_pointer(a, "a", 16);
  require_pointer(masked_m, "masked_m", 4);
  require_pointer(out, "out", 16);
  require_out_disjoint(out, groups * max_m, a, groups * max_m, weight, kind, {{masked_m, groups * 4, "masked_m"}});
  W4A16Problem problem;
  problem.mode = kW4A16Masked;
  problem.rows_per_expert = expected_m > 0 ? std::min(expected_m, max_m) : max_m;
  W4A16Args args = base_args(a, weight, out, kW4A16Masked);
  args.masked_m = masked_m;
  args.num_groups = static_cast<int>(groups);
  args.max_m = static_cast<int>(max_m);
  args.expected_m = static_cast<int>(problem.rows_per_expert);  // the grid's slots (w4a16_masked_tiles)
  launch(prepare(problem, args, weight, stream, kind), args, stream);
}

void w4a16_offsets(const void* a, int64_t s_rows, const chord_w4a16_weight_t* weight, const int32_t* offsets,
                   void* out, CUstream stream) {
  w4a16_offsets_kind(a, s_rows, weight, require_int4_weight(weight), offsets, out, stream);
}

void w4a16_offsets_kind(const void* a, int64_t s_rows, const chord_w4a16_weight_t* weight, W4A16WeightKind kind,
                        const int32_t* offsets, void* out, CUstream stream) {
  require_range(s_rows, "S", 0, kW4A16MaxRows);
  if (s_rows == 0) return;
  require_pointer(a, "a", 16);
  require_pointer(offsets, "offsets", 4);
  require_pointer(out, "out", 16);
  require_out_disjoint(out, s_rows, a, s_rows, weight, kind, {{offsets, weight->experts * 4, "offsets"}});
  W4A16Problem problem;
  problem.mode = kW4A16Offsets;
  problem.rows_per_expert = std::max<int64_t>(1, s_rows / weight->experts);
  W4A16Args args = base_args(a, weight, out, kW4A16Offsets);
  args.offsets = offsets;
  args.a_rows = static_cast<int>(s_rows);
  launch(prepare(problem, args, weight, stream, kind), args, stream);
}

void w4a16_indexed(const void* a, int64_t m, const chord_w4a16_weight_t* weight, const int32_t* sorted_ids,
                   int64_t capacity, const int32_t* expert_ids, const int32_t* num_tokens_padded, int64_t top_k,
                   int64_t block_size, void* out, CUstream stream) {
  const W4A16WeightKind kind = require_int4_weight(weight);
  require_range(top_k, "top_k", 1, 1024);
  require_range(m, "M", 0, kW4A16MaxRows / top_k);
  require_range(capacity, "capacity", 0, kW4A16MaxRows);
  require_range(block_size, "block_size", 8, 1024);
  require_multiple(block_size, "block_size", 8);
  if (m == 0 || capacity == 0) return;
  require_pointer(a, "a", 16);
  require_pointer(sorted_ids, "sorted_ids", 4);
  require_pointer(expert_ids, "expert_ids", 4);
  require_pointer(num_tokens_padded, "num_tokens_padded", 4);
  require_pointer(out, "out", 16);
  require_out_disjoint(out, m * top_k, a, m, weight, kind,
                       {{sorted_ids, capacity * 4, "sorted_ids"},
                        {expert_ids, (capacity + block_size - 1) / block_size * 4, "expert_ids"},
                        {num_tokens_padded, 4, "num_tokens_padded"}});
  W4A16Problem problem;
  problem.mode = kW4A16Indexed;
  problem.block_size = static_cast<int>(block_size);
  // Routed rows per active expert, assuming the routes spread over the experts.
  problem.rows_per_expert = std::max<int64_t>(1, m * top_k / weight->experts);
  W4A16Args args = base_args(a, weight, out, kW4A16Indexed);
  args.sorted_ids = sorted_ids;
  args.expert_ids = expert_ids;
  args.num_tokens_padded = num_tokens_padded;
  args.a_rows = static_cast<int>(m);
  args.top_k = static_cast<int>(top_k);
  args.block_size = static_cast<int>(block_size);
  args.capacity = static_cast<int>(capacity);
  launch(prepare(problem, args, weight, stream, kind), args, stream);
}

std::string w4a16_last_kernel() { return t_last_config ? t_last_config->source().name : std::string(); }

}  // namespace chord
