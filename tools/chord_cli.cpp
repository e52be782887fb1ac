// The `chord` command line: precompile kernels into the disk cache, describe the install, show
// the config the resolver picks for a GEMM shape.
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <climits>
#include <map>
#include <memory>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <filesystem>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

#include "chord/chord.h"
#include "core/arch.hpp"
#include "core/env.hpp"
#include "core/error.hpp"
#include "core/safe_file.hpp"
#include "jit/compiler.hpp"
#include "jit/cuda_headers.hpp"
#include "jit/kernel_source.hpp"
#include "launcher/driver_api.hpp"
#include "ops/w4a16.hpp"
#include "ops/w4a16_search.hpp"
#include "precompile/kernel_sets.hpp"
#include "runtime/runtime.hpp"
#include "tuning_tables/w4a16_resolver.hpp"

namespace {

// The command line's shape is wrong (an unknown, repeated or missing option, a stray argument,
// a --mode or --weight that is none of its words): exit 2 with one line naming it and the
// usage. A value out of range (an arch, a kernel set, a number; the message lists what is
// accepted) and what fails after (a shape the resolver rejects) are chord::Errors: exit 1.
struct UsageError {
  std::string message;
};

// An option's value by its name ("--arch"); absent when not given.
using Args = std::map<std::string, std::string>;

struct Option {
  const char* name;   // "--arch"
  const char* value;  // "ARCH", how the help writes the value; "" for a flag, which takes none
  bool required;
  std::string help;
};

struct Command {
  const char* name;
  const char* summary;  // one line in `chord --help`
  std::string about;    // the start of `chord <name> --help`
  std::vector<Option> options;
  std::string notes;    // the end of `chord <name> --help`
  int (*run)(const Args&);
  std::string choice = "";  // options of which exactly one is given, for the synopsis: "(--a X | --b Y)"
};

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

std::vector<std::string> arch_names() {
  std::vector<std::string> names;
  for (const char* const* a = chord::supported_arch_names(); *a != nullptr; ++a) names.push_back(*a);
  return names;
}

// Words of `text` in lines of at most `width` columns, every line after the first indented
// by `indent` spaces.
std::string wrap(const std::string& text, size_t indent, size_t width = 100) {
  std::string out, line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
    }
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

// "chord config --arch ARCH ... [options]": the required options, then the others as one.
std::string synopsis(const Command& c) {
  std::string out = std::string("chord ") + c.name;
  bool optional = false;
  for (const auto& o : c.options) {
    if (o.required) out += std::string(" ") + o.name + " " + o.value;
    else optional = true;
  }
  if (!c.choice.empty()) out += " " + c.choice;
  return optional ? out + " [options]" : out;
}

void print_help(const Command& c) {
  std::printf("usage: %s\n\n%s\n\noptions:\n", synopsis(c).c_str(), wrap(c.about, 0).c_str());
  const size_t column = 22;
  auto row = [column](const std::string& left, const std::string& help) {
    std::printf("  %-*s%s\n", static_cast<int>(column - 2), left.c_str(), wrap(help, column).c_str());
  };
  for (const auto& o : c.options) {
    row(std::string(o.name) + (*o.value ? " " : "") + o.value, o.help + (o.required ? " (required)" : ""));
  }
  row("-h, --help", "this help");
  if (!c.notes.empty()) std::printf("\n%s", c.notes.c_str());
}

const std::vector<Command>& commands();

void print_main_help() {
  std::printf("usage: chord <command> [options]\n\n"
              "chord %s: MoE GEMM kernels with 4-bit weights, compiled at run time by NVRTC.\n"
              "Compiling needs no GPU; running the kernels does.\n\ncommands:\n",
              chord_version());
  for (const auto& c : commands()) std::printf("  %-12s%s\n", c.name, c.summary);
  std::printf("\n  chord <command> --help  a command's options\n"
              "  chord --version         the version\n\n"
              "arches:      %s\nkernel sets: %s (chord precompile --profile NAME; any model's MoE layer: --moe E,H,I)\n",
              join(arch_names()).c_str(), join(chord::kernel_set_names()).c_str());
}

// Reads `--name value` and `--name=value` pairs against the command's options.
Args parse(const Command& c, int argc, char** argv) {
  Args args;
  for (int i = 0; i < argc; ++i) {
    std::string name = argv[i], value;
    const size_t eq = name.find('=');
    const bool inline_value = name.rfind("--", 0) == 0 && eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const Option* option = nullptr;
    for (const auto& o : c.options) {
      if (name == o.name) option = &o;
    }
    if (option == nullptr) {
      throw UsageError{name[0] == '-' ? "unknown option '" + name + "'" : "unexpected argument '" + name + "'"};
    }
    if (*option->value == '\0') {  // a flag
      if (inline_value) throw UsageError{name + " takes no value"};
      if (!args.emplace(name, "1").second) throw UsageError{name + " is given twice"};
      continue;
    }
    // A following option is not taken as the value: `--arch --profile x` names the missing ARCH.
    if (!inline_value && i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) value = argv[++i];
    if (value.empty()) throw UsageError{name + " needs a value (" + option->value + ")"};
    if (!args.emplace(name, value).second) throw UsageError{name + " is given twice"};
  }
  std::vector<std::string> missing;
  for (const auto& o : c.options) {
    if (o.required && args.count(o.name) == 0) missing.push_back(std::string(o.name) + " " + o.value);
  }
  if (!missing.empty()) throw UsageError{"missing " + join(missing)};
  return args;
}

void usage_error(const std::string& where, const std::string& message, const std::string& usage,
                 const std::string& hint) {
  std::fprintf(stderr, "%s: %s\nusage: %s (%s)\n", where.c_str(), message.c_str(), usage.c_str(), hint.c_str());
}

void progress(size_t done, size_t total, const std::string& what) {
  const int width = 30;
  int filled = total == 0 ? width : static_cast<int>(width * done / total);
  std::fprintf(stderr, "\r[%s%s] %zu/%zu %-48.48s", std::string(filled, '#').c_str(),
               std::string(width - filled, ' ').c_str(), done, total, what.c_str());
  if (done == total) std::fprintf(stderr, "\n");
}

// An integer option in [least, most] (defined with the config command's options below).
long long number(const Args& args, const char* name, long long fallback, long long least, long long most);

// --moe E,HIDDEN,INTERMEDIATE: three decimal integers.
chord::MoeLayerShape moe_shape(const std::string& text) {
  chord::MoeLayerShape shape;
  int* fields[] = {&shape.experts, &shape.hidden, &shape.intermediate};
  size_t start = 0;
  for (size_t i = 0; i < 3; ++i) {
    const size_t end = i < 2 ? text.find(',', start) : text.size();
    const std::string field = end == std::string::npos ? "" : text.substr(start, end - start);
    if (field.empty() || field.size() > 9 || field.find_first_not_of("0123456789") != std::string::npos) {
      throw UsageError{"--moe needs three decimal integers E,HIDDEN,INTERMEDIATE of at most 9 digits, not '" +
                       text + "'"};
    }
    *fields[i] = std::stoi(field);
    start = end + 1;
  }
  return shape;
}

int precompile(const Args& args) {
  if (args.count("--profile") == args.count("--moe")) throw UsageError{"give one of --profile NAME, --moe E,H,I"};
  for (const char* option : {"--nf4", "--top-k", "--sms"}) {
    if (args.count(option) && !args.count("--moe")) {
      throw UsageError{std::string(option) + " only applies to --moe (a kernel set fixes its own)"};
    }
  }
  // Absolute, so that the folder the summary names can go into CHORD_CACHE_READONLY_DIRS as
  // printed (that variable takes absolute paths only, docs/environment.md).
  std::string out_dir = args.count("--out") ? args.at("--out") : "";
  if (!out_dir.empty() && out_dir.front() != '/') {
    std::error_code error;
    const std::filesystem::path absolute = std::filesystem::absolute(out_dir, error);
    if (error) throw UsageError{"--out " + out_dir + ": no absolute path for it (" + error.message() + ")"};
    // Without "." parts and a trailing "/"; ".." stays, as it means the parent of what a
    // symlink before it points to.
    std::filesystem::path clean;
    for (const auto& part : absolute) {
      if (part != "." && !part.empty()) clean /= part;
    }
    out_dir = clean.string();
  }
  const chord::Arch arch = chord::parse_arch(args.at("--arch"));
  std::string set;
  std::vector<chord::KernelDescriptor> descriptors;
  if (args.count("--profile")) {
    set = "kernel set '" + args.at("--profile") + "'";
    descriptors = chord::kernel_set_descriptors(args.at("--profile"), arch);
  } else {
    chord::MoeLayerShape shape = moe_shape(args.at("--moe"));
    shape.nf4 = args.count("--nf4") != 0;
    shape.top_k = static_cast<int>(number(args, "--top-k", 8, 1, 64));
    shape.sm_count = static_cast<int>(number(args, "--sms", 132, 1, 4096));
    set = fmt::format("the MoE layer {} x [{} x {}, {} x {}], top-{} on {} SMs{}", shape.experts,
                      2LL * shape.intermediate, shape.hidden, shape.hidden, shape.intermediate, shape.top_k,
                      shape.sm_count, shape.nf4 ? ", with NF4" : "");
    try {
      descriptors = chord::moe_kernel_descriptors(shape, arch);
    } catch (const chord::Error& e) {  // the shape is the option's: name it, as its syntax errors do
      throw UsageError{"--moe " + args.at("--moe") + ": " + e.what()};
    }
  }
  // --out builds a layer of its own: no read-only layers under it, nothing from the user's cache.
  std::unique_ptr<chord::JitRuntime> shared;
  if (!out_dir.empty()) shared = std::make_unique<chord::JitRuntime>(out_dir, std::vector<std::string>{},
                                                                      chord::FolderRole::kShared);
  auto& runtime = shared ? *shared : chord::JitRuntime::global();
  // A precompile is for the folder: one the cache refused (its warning above says why) would
  // keep nothing, so fail before minutes of compiling into memory. A folder that is read but
  // not written may hold every kernel already: the count below judges it.
  if (runtime.disk_cache().memory_only() && !runtime.disk_cache().reads_layer(runtime.disk_cache().dir())) {
    std::fprintf(stderr, "chord precompile: %s is unusable as a cache folder (the warning above says why): none of "
                 "the %zu kernels would be kept; nothing compiled\n", runtime.disk_cache().dir().c_str(),
                 descriptors.size());
    return 1;
  }
  auto start = std::chrono::steady_clock::now();
  uint64_t compiles_before = chord::nvrtc_compile_count();
  size_t missing = 0;  // kernels no cache folder holds afterwards
  std::vector<std::string> unreadable;  // --out: what others could not read (made before this run)
  auto readable_by_others = [](const std::string& path, mode_t need) {
    struct stat st{};
    return ::stat(path.c_str(), &st) == 0 && (st.st_mode & need) == need;
  };
  if (shared && !runtime.disk_cache().memory_only()) {  // a refused folder has its own warning
    for (const std::string& folder : {out_dir, out_dir + "/kernels"}) {
      if (!readable_by_others(folder, S_IROTH | S_IXOTH)) unreadable.push_back(folder);
    }
  }
  for (size_t i = 0; i < descriptors.size(); ++i) {
    std::string name = chord::generate_kernel_source(descriptors[i]).name;
    progress(i, descriptors.size(), name);
    const auto kernel = runtime.compile(descriptors[i]);
    const std::string entry = runtime.disk_cache().entry_path(kernel->key);
    struct stat st{};
    const bool stored = ::stat(entry.c_str(), &st) == 0 && S_ISREG(st.st_mode);
    if (kernel->entry_path.empty() && !stored) ++missing;
    if (shared && stored && (st.st_mode & S_IROTH) == 0) unreadable.push_back(entry);
  }
  progress(descriptors.size(), descriptors.size(), "done");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("precompiled %zu kernels of %s for %s in %.1f s (%llu compiled, %llu from cache) into %s\n",
              descriptors.size(), set.c_str(), arch.name().c_str(), seconds,
              static_cast<unsigned long long>(chord::nvrtc_compile_count() - compiles_before),
              static_cast<unsigned long long>(runtime.stats().disk_hits), runtime.disk_cache().dir().c_str());
  // --out keeps the modes of what was there before (a folder or entries made 0700 / 0600 as a
  // user cache): the layer is for others, so say what they cannot read.
  if (!unreadable.empty()) {
    std::fprintf(stderr,
                 "chord precompile: warning: %zu of the layer's folders and entries are not readable by others "
                 "(e.g. %s); for them to use it: chmod 0755 the folders, 0644 the entries\n",
                 unreadable.size(), unreadable.front().c_str());
  }
  // A precompile is for the folder: one that ends without every kernel in it (a folder that
  // became unusable, a full disk, a name another file holds) failed, whatever it compiled.
  if (missing > 0) {
    std::fprintf(stderr, "chord precompile: %zu of %zu kernels are not in %s (the warnings above say why)\n", missing,
                 descriptors.size(), runtime.disk_cache().dir().c_str());
    return 1;
  }
  return 0;
}

// Writes `bytes` to the output file `path`, as a shell redirection would (a device or pipe,
// such as /dev/stdout or >(cuobjdump -), is written to, not replaced), with guards for a
// folder other users can write (/tmp): a FIFO without a reader fails at once instead of
// blocking; every symlink on the way (the name's, then its target's, ...) is followed only if
// this user or root made it (the rule of Linux's protected_symlinks, which not every host
// turns on), each judged and then resolved by hand; a new name is created exclusively; an
// existing file is opened without following links and must be the file judged (a name
// swapped meanwhile is refused), with no other hard link (one could be another user's file,
// which protected_hardlinks does not always stop), and is truncated only then. /proc's fd
// links (/dev/stdout's target) name open files, not paths: opened as they are. Returns "" or
// why not.
std::string write_output_file(const std::string& path, const std::vector<char>& bytes, int links = 0) {
  constexpr int kFlags = O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  if (links > 8) return std::string(std::strerror(ELOOP));
  int fd = -1;
  struct stat named{};
  if (::lstat(path.c_str(), &named) != 0) {
    if (errno != ENOENT) return std::string(std::strerror(errno));
    fd = ::open(path.c_str(), kFlags | O_CREAT | O_EXCL | O_NOFOLLOW, 0644);
    if (fd < 0) return errno == EEXIST ? "it appeared while it was being created" : std::string(std::strerror(errno));
  } else if (S_ISLNK(named.st_mode)) {
    if (named.st_uid != ::geteuid() && named.st_uid != 0) {
      return fmt::format("it is a symlink made by uid {}, not by you or root", named.st_uid);
    }
    if (path.rfind("/proc/", 0) == 0) {
      fd = ::open(path.c_str(), kFlags);  // an open file of a process: no name to judge
      if (fd < 0) return std::string(std::strerror(errno));
    } else {
      std::vector<char> target(PATH_MAX);
      const ssize_t n = ::readlink(path.c_str(), target.data(), target.size() - 1);
      if (n <= 0) return std::string(std::strerror(n < 0 ? errno : ENOENT));
      std::string next(target.data(), static_cast<size_t>(n));
      if (next.front() != '/') {
        const size_t slash = path.rfind('/');
        next = (slash == std::string::npos ? std::string(".") : path.substr(0, slash)) + "/" + next;
      }
      return write_output_file(next, bytes, links + 1);
    }
  } else {
    fd = ::open(path.c_str(), kFlags | O_NOFOLLOW);
    if (fd < 0) return std::string(std::strerror(errno));
    struct stat opened{};
    if (::fstat(fd, &opened) != 0 || opened.st_dev != named.st_dev || opened.st_ino != named.st_ino) {
      ::close(fd);
      return "it changed while it was being opened";
    }
    if (S_ISREG(opened.st_mode) && opened.st_nlink > 1) {
      ::close(fd);
      return fmt::format("it has {} hard links (another name of it may be someone else's file)", opened.st_nlink);
    }
    if (S_ISREG(opened.st_mode) && ::ftruncate(fd, 0) != 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return why;
    }
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);  // a pipe with a reader: block as a write does
  std::string why;
  if (!chord::write_all(fd, bytes.data(), bytes.size())) why = std::strerror(errno);
  if (::close(fd) != 0 && why.empty()) why = std::strerror(errno);
  return why;
}

// Compiles `source` without the cache, with ptxas's verbose report (registers, spills, stack,
// wgmma serialization notes), writes the cubin to `path` and prints the report.
int write_cubin(const chord::KernelSource& source, const chord::Arch& arch, const std::string& path) {
  std::vector<std::string> options = source.options;
  options.push_back("--ptxas-options=-v");
  std::string log;
  const std::vector<char> cubin =
      chord::compile_to_cubin(chord::CompileRequest{source.name, source.text, arch, options}, "", &log);
  if (const std::string why = write_output_file(path, cubin); !why.empty()) {
    std::fprintf(stderr, "chord config: cannot write '%s': %s\n", path.c_str(), why.c_str());
    return 1;
  }
  std::printf("%s", log.c_str());
  std::printf("cubin: %s (%zu bytes)\n", path.c_str(), cubin.size());
  return 0;
}

// A whole number in [least, most] (digits only), or `fallback` when the option is absent: a
// value past the field's type is an error, not wrapped.
long long number(const Args& args, const char* name, long long fallback, long long least = 0,
                 long long most = INT32_MAX) {
  const auto it = args.find(name);
  if (it == args.end()) return fallback;
  const std::string& text = it->second;
  const bool digits = text.size() <= 18 && text.find_first_not_of("0123456789") == std::string::npos;
  const long long v = digits ? std::stoll(text) : -1;
  if (v < least || v > most) {
    chord::fail(CHORD_ERROR_INVALID_ARGUMENT, "{} needs an integer in [{}, {}], not '{}'", name, least, most, text);
  }
  return v;
}

const std::pair<const char*, chord::W4A16WeightKind> kWeights[] = {
    {"int4", chord::kW4A16WeightInt4}, {"int4-fp16", chord::kW4A16WeightInt4Fp16}, {"nf4", chord::kW4A16WeightNF4},
    {"nf4-fp16", chord::kW4A16WeightNF4Fp16}, {"int4-zp", chord::kW4A16WeightInt4Zp},
    {"int4-zp-fp16", chord::kW4A16WeightInt4ZpFp16}, {"int4-g128", chord::kW4A16WeightInt4G128},
    {"int4-g128-fp16", chord::kW4A16WeightInt4G128Fp16}, {"int4-zp-g128", chord::kW4A16WeightInt4ZpG128},
    {"int4-zp-g128-fp16", chord::kW4A16WeightInt4ZpG128Fp16}};
const chord::W4A16Mode kModes[] = {chord::kW4A16Contiguous, chord::kW4A16Masked, chord::kW4A16Offsets,
                                   chord::kW4A16Indexed};

std::vector<std::string> mode_names() {
  std::vector<std::string> names;
  for (chord::W4A16Mode m : kModes) names.push_back(chord::w4a16_mode_name(m));
  return names;
}

std::vector<std::string> weight_names() {
  std::vector<std::string> names;
  for (const auto& weight : kWeights) names.push_back(weight.first);
  return names;
}

// The W4A16 config for a shape, as the operators would resolve it (CHORD_W4A16_* included).
int config(const Args& args) {
  chord::W4A16Problem p;
  const std::string mode = args.at("--mode");
  const std::string weight = args.count("--weight") ? args.at("--weight") : "int4";
  bool mode_ok = false, weight_ok = false;
  for (chord::W4A16Mode m : kModes) {
    if (mode == chord::w4a16_mode_name(m)) {
      p.mode = m;
      mode_ok = true;
    }
  }
  for (const auto& [name, w] : kWeights) {
    if (weight == name) {
      p.weight = w;
      weight_ok = true;
    }
  }
  if (!mode_ok) throw UsageError{"--mode is one of " + join(mode_names()) + ", not '" + mode + "'"};
  if (!weight_ok) throw UsageError{"--weight is one of " + join(weight_names()) + ", not '" + weight + "'"};
  p.arch = chord::parse_arch(args.at("--arch"));
  // Every bound below is the operators' (ops/w4a16.hpp; the indexed block as
  // moe_align_block_size makes it): a config for a call no operator takes would not be the one
  // it runs.
  p.n = static_cast<int>(number(args, "--n", 0, chord::kW4A16PackN, chord::kW4A16MaxNK));
  p.k = static_cast<int>(number(args, "--k", 0, chord::kW4A16PackK, chord::kW4A16MaxNK));
  p.experts = static_cast<int>(number(args, "--experts", 0, 1, chord::kW4A16MaxExperts));
  // NF4 packing bounds the weight's elements (ops/nf4.cpp).
  if (chord::w4a16_is_nf4(p.weight) && static_cast<long long>(p.k) > (1LL << 40) / p.experts / p.n) {
    chord::fail(CHORD_ERROR_INVALID_ARGUMENT, "--experts x --n x --k = {} x {} x {} is over the NF4 weight's 2^40 "
                "elements", p.experts, p.n, p.k);
  }
  if (chord::w4a16_is_g128(p.weight) && p.k % chord::kW4A16Group128 != 0) {
    throw UsageError{"--k must be a multiple of 128 for --weight " + weight + " (one scale row per 128 k)"};
  }
  p.rows_per_expert = number(args, "--rows", 0, 0, int64_t{1} << 40);
  constexpr long long kMaxRows = chord::kW4A16MaxRows;
  p.a_rows = static_cast<int>(number(args, "--a-rows", 0, 0, kMaxRows));
  p.num_groups = static_cast<int>(number(args, "--groups", 0, 0, p.experts));
  p.max_m = static_cast<int>(number(args, "--max-m", 0, 0, kMaxRows));
  p.capacity = static_cast<int>(number(args, "--capacity", 0, 0, kMaxRows));
  p.top_k = static_cast<int>(number(args, "--top-k", 0, 1, 1024));  // absent: 0, the call's routes unknown
  p.block_size = static_cast<int>(number(args, "--block-size", 0, 8, 1024));
  if (p.block_size % 8 != 0) throw UsageError{"--block-size must be a multiple of 8 (as moe_align_block_size makes it)"};
  if (static_cast<long long>(p.num_groups) * p.max_m > kMaxRows) {
    throw UsageError{"--groups x --max-m must be at most " + std::to_string(kMaxRows) + " rows"};
  }
  if (p.top_k > 0 && p.a_rows > kMaxRows / p.top_k) {
    throw UsageError{"--a-rows x --top-k must be at most " + std::to_string(kMaxRows) + " routes"};
  }
  p.sm_count = static_cast<int>(number(args, "--sms", 132, 1));
  const std::string cubin_path = args.count("--cubin") ? args.at("--cubin") : "";
  if (p.mode == chord::kW4A16Indexed && p.block_size <= 0) p.block_size = 128;
  // The form the call runs on its grid (masked: docs/kernels.md).
  const chord::W4A16GemmConfig c = chord::resolve_w4a16_launch_config(p);
  const char* engine = chord::w4a16_engine_name(c.engine);
  // group_sums and n_run show where they are not the default (CHORD_W4A16_GROUP_SUMS,
  // CHORD_W4A16_N_RUN and the short-K rule).
  const std::string group_sums = std::string(c.group_sums != 0 ? " group_sums=" + std::to_string(c.group_sums) : "") +
                                 (c.n_run > 1 ? " n_run=" + std::to_string(c.n_run) : "");
  std::printf("engine=%s block_m=%d block_n=%d block_k=%d stages=%d warps_m=%d warps_n=%d warpgroups=%d split_k=%d%s "
              "threads=%d smem=%d kernel=%s\n",
              engine, c.block_m, c.block_n, c.block_k, c.stages, c.warps_m, c.warps_n, c.warpgroups, c.split_k,
              group_sums.c_str(), c.threads(), c.smem_bytes(), c.source().name.c_str());
  if (args.count("--candidates")) {
    std::printf("candidates, best first (* the best one the call can run):\n");
    bool taken = false;
    for (const auto& candidate : chord::w4a16_candidates(p)) {
      const chord::W4A16GemmConfig& k = candidate.runs;
      const bool best = !taken && candidate.rejected == nullptr;
      taken |= best;
      std::printf("%s %s: %s bm%d bn%d bk%d s%d", best ? "*" : " ",
                  chord::w4a16_candidate_source(candidate).c_str(), chord::w4a16_engine_name(k.engine), k.block_m,
                  k.block_n, k.block_k, k.stages);
      if (k.wgmma()) std::printf(" wg%d", k.warpgroups);
      else std::printf(" w%dx%d", k.warps_m, k.warps_n);
      std::printf("%s%s\n", candidate.rejected ? ": rejected, " : "", candidate.rejected ? candidate.rejected : "");
    }
    // On a GPU the first call of a decode shape may run another tile (docs/tuning.md).
    if (const auto plan = chord::w4a16_search_plan(p, c, chord::env()); plan && plan->candidates.size() > 1) {
      std::printf("decode tile search (on a GPU, at this shape's first call; the fastest by 3%% runs):\n");
      for (const auto& k : plan->candidates) std::printf("  %s\n", chord::w4a16_search_entry(k).c_str());
    }
  }
  if (!cubin_path.empty()) return write_cubin(c.source(), p.arch, cubin_path);
  return 0;
}

// Bytes and number of the entries (<key>.cubin) in a kernels folder.
uint64_t directory_bytes(const std::string& dir, size_t* files) {
  uint64_t total = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return 0;
  while (dirent* entry = readdir(d)) {
    struct stat st;
    const std::string name = entry->d_name;
    const std::string path = dir + "/" + name;
    if (name[0] != '.' && name.size() > 6 && name.compare(name.size() - 6, 6, ".cubin") == 0 &&
        lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      total += static_cast<uint64_t>(st.st_size);
      ++*files;
    }
  }
  closedir(d);
  return total;
}

int info(const Args&) {
  std::printf("chord %s (C API %d)\n", chord_version(), chord_api_version());
  std::printf("NVRTC %s\n", chord::nvrtc_version().c_str());
  const auto& headers = chord::cuda_headers();
  std::printf("CUDA headers: %s%s%s\n", headers.origin.c_str(), headers.include_dir.empty() ? "" : " at ",
              headers.include_dir.c_str());
  const auto& environment = chord::env();
  const auto& cache = chord::JitRuntime::global().disk_cache();  // warns about folders it refuses
  auto folder = [](const char* label, const std::string& dir, const char* note) {
    size_t files = 0;
    const uint64_t bytes = directory_bytes(dir + "/kernels", &files);
    std::printf("%s: %s (%zu entries, %.1f MiB)%s\n", label, dir.empty() ? "(none)" : dir.c_str(), files,
                bytes / 1048576.0, note);
  };
  folder("cache", environment.cache_dir, cache.memory_only() ? " (not written: memory only)" : "");
  for (const std::string& dir : environment.cache_readonly_dirs) {
    folder("read-only cache", dir, cache.reads_layer(dir) ? "" : " (not used: see the warning above)");
  }
  std::string why;
  if (!chord::driver_available(&why)) {
    std::printf("GPUs: none (%s)\n", why.c_str());
    return 0;
  }
  const auto& d = chord::driver();
  int driver_version = 0, count = 0;
  d.cuDriverGetVersion(&driver_version);
  d.cuDeviceGetCount(&count);
  std::printf("driver: CUDA %d.%d\nGPUs: %s\n", driver_version / 1000, (driver_version % 1000) / 10,
              count == 0 ? "none" : "");
  for (int i = 0; i < count; ++i) {
    CUdevice device;
    char name[256] = {0};
    int major = 0, minor = 0, sms = 0;
    d.cuDeviceGet(&device, i);
    d.cuDeviceGetName(name, sizeof name, device);
    d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device);
    d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device);
    d.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
    std::printf("  %d: %s, compute capability %d.%d, %d SMs\n", i, name, major, minor, sms);
  }
  return 0;
}

const std::vector<Command>& commands() {
  static const std::vector<Command> list = [] {
    std::string sets = "kernel sets (the GEMM shapes are those of shapes/suite.json's splits):\n";
    for (const auto& name : chord::kernel_set_names()) {
      sets += "  " + name + std::string(name.size() < 10 ? 10 - name.size() : 1, ' ') +
              wrap(chord::kernel_set_summary(name), 12) + "\n";
    }
    const std::string arches = "the GPU target: " + join(arch_names());
    return std::vector<Command>{
        {"precompile",
         "compile a kernel set into the kernel cache (or into a folder for others)",
         "Compiles a kernel set, or the kernels of a model's MoE layer, ahead of time, so that a server's first "
         "call does not wait for NVRTC. "
         "Needs no GPU. The cache is CHORD_CACHE_DIR, by default $XDG_CACHE_HOME/chord or ~/.cache/chord. "
         "Exits 1 if a kernel ends up in no cache folder it searches (the warnings say why).",
         {{"--arch", "ARCH", true, arches},
          {"--profile", "NAME", false, "the kernel set: " + join(chord::kernel_set_names())},
          {"--moe", "E,H,I", false,
           "instead of a kernel set, a model's MoE layer as one GPU holds it: local experts, hidden size, expert "
           "intermediate size on the GPU (gate_up is 2I x H, down H x I): every INT4 kind (group 128 where K % 128 "
           "== 0), mode, pack and routing-check kernel a kernel set has"},
          {"--nf4", "", false, "with --moe: the NF4 kernels too (bitsandbytes checkpoints)"},
          {"--top-k", "K", false,
           "with --moe: routes per token (default 8); the offsets and indexed kernels are those of 1, 2, 4, every "
           "multiple of 8 to 512, 1024, 2048 and 4096 tokens routed top-K"},
          {"--sms", "SMS", false,
           "with --moe: the GPU's SM count (default 132, an H100 / H200); other geometries compile at their first "
           "call"},
          {"--out", "DIR", false,
           "compile into DIR instead of the cache: a folder for others to read through CHORD_CACHE_READONLY_DIRS "
           "(new folders 0755, new entries 0644; an existing folder not yours, or writable by group or others, is "
           "refused; a relative DIR is taken from the current folder and printed absolute)"}},
         sets,
         precompile,
         "(--profile NAME | --moe E,H,I)"},
        {"info", "versions, CUDA headers, cache folders, visible GPUs",
         "Prints the chord and NVRTC versions, where the CUDA headers come from, the cache folders with their "
         "sizes, and the GPUs the driver sees.",
         {},
         "",
         info},
        {"config",
         "the W4A16 config and kernel the resolver picks for a GEMM shape",
         "Prints the config (engine, tile, stages, split-K, a group-sums form other than 0) and kernel name that the operators would pick for "
         "this shape, CHORD_W4A16_* overrides included. Needs no GPU.",
         {{"--arch", "ARCH", true, arches},
          {"--mode", "MODE", true, join(mode_names())},
          {"--n", "N", true, "output columns per expert"},
          {"--k", "K", true, "reduction length"},
          {"--experts", "E", true, "number of experts, at least 1"},
          {"--rows", "R", true,
           "expected rows per expert, as the operator derives it: contiguous m / E, offsets S / E, masked "
           "expected_m or max_m, indexed M * top_k / E"},
          {"--weight", "W", false, join(weight_names()) + " (default int4)"},
          {"--a-rows", "S", false, "the call's rows of A: contiguous m, offsets S, indexed M (the split-K choice needs the call's rows)"},
          {"--groups", "G", false,
           "masked: number of groups (the narrow tiles' BN counts them; with --max-m, whether the buffer "
           "takes a looping tile)"},
          {"--max-m", "M", false,
           "masked: rows per group of the buffer (with --groups: a buffer over twice the tiles of --rows "
           "takes a tile that loops over the groups' tiles, as vLLM's batched buffers do; without them, "
           "the one-tile kernels)"},
          {"--capacity", "C", false, "indexed: the length of sorted_ids"},
          {"--top-k", "T", false, "indexed: routes per row of A (with --a-rows: the routed rows the decode rule spreads)"},
          {"--block-size", "B", false, "indexed: the routing block (default 128)"},
          {"--sms", "SMS", false, "SM count of the GPU (default 132, an H100 / H200)"},
          {"--cubin", "FILE", false,
           "also compile the kernel (no cache), write its cubin to FILE (for nvdisasm) and print ptxas's report"},
          {"--candidates", "", false,
           "also list the configs the resolver considered, best first: the tuning table's rows that apply, the "
           "WGMMA defaults, the heuristic; each with where it comes from and why the call cannot run it; for "
           "a decode call, also the tiles the decode tile search times at the shape's first call on a GPU"}},
         "",
         config},
    };
  }();
  return list;
}

}  // namespace

int run_cli(int argc, char** argv) {
  try {
    if (argc < 2) throw UsageError{"missing command: one of precompile, info, config"};
    const std::string name = argv[1];
    if (name == "-h" || name == "--help") {
      print_main_help();
      return 0;
    }
    if (name == "--version") {
      if (argc > 2) throw UsageError{std::string("unexpected argument '") + argv[2] + "'"};
      std::printf("chord %s\n", chord_version());
      return 0;
    }
    const Command* command = nullptr;
    for (const auto& c : commands()) {
      if (name == c.name) command = &c;
    }
    if (command == nullptr) {
      throw UsageError{(name[0] == '-' ? "unknown option '" : "unknown command '") + name + "'"};
    }
    for (int i = 2; i < argc; ++i) {
      if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
        print_help(*command);
        return 0;
      }
    }
    try {
      return command->run(parse(*command, argc - 2, argv + 2));
    } catch (const UsageError& e) {
      usage_error(std::string("chord ") + command->name, e.message, synopsis(*command),
                  std::string("'chord ") + command->name + " --help' lists the options");
      return 2;
    }
  } catch (const UsageError& e) {
    usage_error("chord", e.message, "chord <command> [options]", "'chord --help' lists the commands");
    return 2;
  } catch (const chord::Error& e) {
    std::fprintf(stderr, "chord: error: %s\n", e.what());
    return 1;
  }
}

int main(int argc, char** argv) {
  const int status = run_cli(argc, argv);
  // What the command printed is its answer (a config line, a cubin report): an output that
  // could not take it (a full disk, a closed pipe) is a failure, not a silent success.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "chord: error: cannot write the output (a full disk, or a closed pipe)\n");
    return status != 0 ? status : 1;
  }
  return status;
}
