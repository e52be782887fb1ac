// Small helpers for the CPU tests: temporary folders, scoped environment variables.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <functional>
#include <grp.h>
#include <optional>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace chord::test {

// Runs `command` in a shell: what it wrote to stdout and stderr; its exit status in *exit_code
// (-1 when it did not exit).
inline std::string run_command(const std::string& command, int* exit_code) {
  std::string output;
  *exit_code = -1;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[4096];
  while (fgets(buffer, sizeof buffer, pipe) != nullptr) output += buffer;
  const int status = pclose(pipe);
  if (WIFEXITED(status)) *exit_code = WEXITSTATUS(status);
  return output;
}

// A fresh folder under /tmp, removed with its contents at scope exit.
class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/chord-test-XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Sets (or unsets, with nullopt) one variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

inline std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    closedir(d);
  }
  return names;
}

// What the process writes to stderr (chord's warnings) while this object lives.
class CaptureStderr {
 public:
  CaptureStderr() : file_(std::tmpfile()) {
    std::fflush(stderr);
    saved_ = dup(2);
    dup2(fileno(file_), 2);
  }
  ~CaptureStderr() {
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    std::fclose(file_);
  }
  std::string text() {
    std::fflush(stderr);
    std::string out;
    std::rewind(file_);
    for (int c; (c = std::fgetc(file_)) != EOF;) out += static_cast<char>(c);
    return out;
  }

 private:
  FILE* file_;
  int saved_ = -1;
};

// The uid / gid that run_as_other_user() switches to ("nobody" on Debian).
constexpr uid_t kOtherUid = 65534;

// Runs body() in a forked child. Returns its exit status (121 if it threw), 128 + the signal
// that killed it, or 122 if fork failed.
inline int run_in_child(const std::function<int()>& body) {
  pid_t pid = fork();
  if (pid < 0) return 122;
  if (pid == 0) {
    int status = 121;
    try {
      status = body();
    } catch (...) {
    }
    _exit(status);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 122;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Runs body() in a child process as another user (kOtherUid), as `setpriv --reuid` would.
// Returns its status as run_in_child does, or -1 when this process may not switch users (it
// is not root, or its container withholds the capability); callers then skip with a message.
inline int run_as_other_user(const std::function<int()>& body) {
  if (geteuid() != 0) return -1;
  const int status = run_in_child([&body] {
    if (setgroups(0, nullptr) != 0 || setresgid(kOtherUid, kOtherUid, kOtherUid) != 0 ||
        setresuid(kOtherUid, kOtherUid, kOtherUid) != 0) {
      return 120;
    }
    return body();
  });
  return status == 120 ? -1 : status;
}

inline bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// Names in a cache folder's kernels/ that end in `suffix`: ".cubin" (entries), ".tmp" (stores
// in flight or orphaned), ".lock" (per-key locks).
inline std::vector<std::string> cache_files(const std::string& cache_dir, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& n : list_dir(cache_dir + "/kernels")) {
    if (ends_with(n, suffix)) out.push_back(n);
  }
  return out;
}

}  // namespace chord::test
