#include "sandbox.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace rooflab::grader {

namespace fs = std::filesystem;

namespace {

// ---- the Landlock ABI ----
// Debian 12's <linux/landlock.h> stops at ABI 2 while the kernel may offer more; the ABI is stable, so the
// later rights and the longer ruleset attribute are spelled out here. The system call numbers are the same
// on every architecture.
#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

constexpr __u64 kFsTruncate = 1ULL << 14;              // ABI 3
constexpr __u64 kFsIoctlDev = 1ULL << 15;              // ABI 5
constexpr __u64 kNetBindTcp = 1ULL << 0;               // ABI 4
constexpr __u64 kNetConnectTcp = 1ULL << 1;            // ABI 4
constexpr __u64 kScopeAbstractUnixSocket = 1ULL << 0;  // ABI 6
constexpr __u64 kScopeSignal = 1ULL << 1;              // ABI 6

struct RulesetAttr {
  __u64 handled_access_fs = 0;
  __u64 handled_access_net = 0;  // ABI 4
  __u64 scoped = 0;              // ABI 6
};

constexpr __u64 kRead = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr __u64 kExecute = LANDLOCK_ACCESS_FS_EXECUTE;
// The rights that make sense on a file rather than a directory (others make landlock_add_rule fail).
constexpr __u64 kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                              LANDLOCK_ACCESS_FS_READ_FILE | kFsTruncate | kFsIoctlDev;

// Every filesystem right the kernel's ABI knows: all of them are denied unless a rule allows them.
__u64 handled_fs(int abi) {
  __u64 fs = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: EXECUTE ... MAKE_SYM
  if (abi >= 2) fs |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) fs |= kFsTruncate;
  if (abi >= 5) fs |= kFsIoctlDev;
  return fs;
}

std::size_t ruleset_size(int abi) {
  if (abi >= 6) return sizeof(RulesetAttr);
  if (abi >= 4) return offsetof(RulesetAttr, scoped);
  return offsetof(RulesetAttr, handled_access_net);
}

// Adds the rule `rights` beneath the path `fd` is open on, then closes `fd`: 0, or the errno. No allocation
// and no exception, so that the child may call it between fork and exec.
int add_rule(int ruleset, int fd, __u64 rights) {
  landlock_path_beneath_attr rule{};
  rule.allowed_access = rights;
  rule.parent_fd = fd;
  const long rc = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0);
  const int err = errno;
  close(fd);
  return rc == 0 ? 0 : err;
}

// A rule: `rights` beneath `path` (on a file, only the file rights apply). A path that does not exist
// here (no /lib32, no GPU) is left out.
void allow(int ruleset, const fs::path& path, __u64 rights) {
  const int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return;
  struct stat st{};
  if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) rights &= kFileRights;
  if (const int err = add_rule(ruleset, fd, rights); err != 0) {
    throw std::runtime_error(fmt::format("sandbox: cannot allow {}: {}", path.string(), std::strerror(err)));
  }
}

// Copies one regular file without following a link (the process may still be swapping files in its
// scratch when a child of it survived the kill).
bool copy_regular(const fs::path& from, const fs::path& to) {
  const int in = open(from.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (in < 0) return false;
  struct stat st{};
  bool ok = fstat(in, &st) == 0 && S_ISREG(st.st_mode);
  int out = -1;
  if (ok) {
    std::error_code ec;
    fs::create_directories(to.parent_path(), ec);
    out = open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    ok = out >= 0;
  }
  char buf[65536];
  for (ssize_t n; ok && (n = read(in, buf, sizeof buf)) != 0;) {
    ok = n > 0 && write(out, buf, static_cast<std::size_t>(n)) == n;
  }
  close(in);
  if (out >= 0) close(out);
  return ok;
}

constexpr std::uintmax_t kMaxCollectedFile = 64u << 20;

}  // namespace

const LandlockSupport& landlock_support() {
  static const LandlockSupport support = [] {
    LandlockSupport s;
    const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi > 0) {
      s.abi = static_cast<int>(abi);
    } else if (errno == ENOSYS) {
      s.unavailable = "this kernel has no Landlock (it needs Linux 5.13 or later built with CONFIG_SECURITY_LANDLOCK)";
    } else if (errno == EOPNOTSUPP) {
      s.unavailable = "Landlock is built into this kernel but not enabled (add landlock to its lsm= boot parameter)";
    } else {
      s.unavailable = fmt::format("Landlock cannot be used here: {}", std::strerror(errno));
    }
    return s;
  }();
  return support;
}

// ---- policies ----

std::vector<fs::path> readable_source_entries(const fs::path& source_dir) {
  std::vector<fs::path> out;
  for (const auto& top : fs::directory_iterator(source_dir)) {
    const std::string name = top.path().filename().string();
    // A Gradescope package's reference/ (the values it recorded from the solutions) and hidden-tests/ (a grade's
    // build is given its hidden tests on their own: GradingTree::readable)
    if (name == "solutions" || name == "reference" || name == "hidden-tests" || name == "build" || name == ".git") {
      continue;
    }
    out.push_back(top.path());
  }
  return out;
}

std::vector<fs::path> default_devices() {
  std::vector<fs::path> out = {"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"};
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/dev", ec)) {
    if (e.path().filename().string().rfind("nvidia", 0) == 0) out.push_back(e.path());  // nvidia0, -uvm, -caps/
  }
  return out;
}

namespace {

std::vector<fs::path> system_dirs() {
  std::vector<fs::path> out = {"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin",
                               "/etc", "/opt", "/proc", "/sys", "/dev"};
#if defined(ROOFLAB_CUDA_DIR)
  out.emplace_back(ROOFLAB_CUDA_DIR);  // where this build found the toolkit (it may live outside /usr and /opt)
#endif
  // The packages `./rooflab deps` unpacked for a user without root: the compiler and the tests load them.
  if (const char* deps = std::getenv("ROOFLAB_DEPS_PREFIX"); deps != nullptr && *deps == '/') out.emplace_back(deps);
  return out;
}

Sandbox common_sandbox(const GradingTree& tree) {
  Sandbox s;
  s.read_exec = system_dirs();
  s.read = readable_source_entries(tree.source_dir);
  // labs/ is already there.
  if (!tree.student_dir.empty() && tree.student_dir != tree.source_dir / "labs") s.read.push_back(tree.student_dir);
  s.read.insert(s.read.end(), tree.readable.begin(), tree.readable.end());
  s.devices = default_devices();
  s.scratch_root = tree.scratch_root;
  return s;
}

}  // namespace

Sandbox build_sandbox(const GradingTree& tree) {
  Sandbox s = common_sandbox(tree);
  s.write.push_back(tree.build_dir);
  s.read_exec.insert(s.read_exec.end(), tree.build_tools.begin(), tree.build_tools.end());
  return s;
}

Sandbox test_sandbox(const GradingTree& tree) {
  Sandbox s = common_sandbox(tree);
  s.read_exec.push_back(tree.build_dir);
  return s;
}

// ---- one process's sandbox ----

PreparedSandbox::PreparedSandbox(const Sandbox& sandbox, const std::vector<std::string>& argv,
                                 std::map<std::string, std::string>& env)
    : unshare_network_(sandbox.unshare_network), collect_(sandbox.collect) {
  if (sandbox.scratch_root.empty()) throw std::runtime_error("sandbox: no scratch directory given");
  fs::create_directories(sandbox.scratch_root);
  std::string pattern = (sandbox.scratch_root / "p-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error(fmt::format("sandbox: cannot make a scratch directory in {}: {}",
                                         sandbox.scratch_root.string(), std::strerror(errno)));
  }
  scratch_ = pattern;
  for (const char* var : {"TMPDIR", "TMP", "TEMP", "HOME"}) env[var] = scratch_.string();
  for (const auto& [var, dest] : collect_) {
    const fs::path dir = scratch_ / "collect" / var;
    fs::create_directories(dir);
    env[var] = dir.string();
  }

  const int abi = landlock_support().abi;
  if (abi <= 0) return;  // the caller says so once, in the grade header
  RulesetAttr attr;
  attr.handled_access_fs = handled_fs(abi);
  if (abi >= 4) attr.handled_access_net = kNetBindTcp | kNetConnectTcp;  // no rule allows a port: all refused
  if (abi >= 6) attr.scoped = kScopeAbstractUnixSocket | kScopeSignal;
  const long fd = syscall(SYS_landlock_create_ruleset, &attr, ruleset_size(abi), 0);
  if (fd < 0) throw std::runtime_error(fmt::format("sandbox: landlock_create_ruleset: {}", std::strerror(errno)));
  ruleset_fd_ = static_cast<int>(fd);  // close-on-exec: the program itself never holds it

  const __u64 all = attr.handled_access_fs;
  own_proc_rights_ = (kRead | LANDLOCK_ACCESS_FS_WRITE_FILE | kFsTruncate) & all;
  for (const auto& p : sandbox.read_exec) allow(ruleset_fd_, p, (kRead | kExecute) & all);
  for (const auto& p : sandbox.read) allow(ruleset_fd_, p, kRead & all);
  for (const auto& p : sandbox.write) allow(ruleset_fd_, p, all);
  for (const auto& p : sandbox.devices) {
    allow(ruleset_fd_, p, (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | kFsTruncate | kFsIoctlDev) & all);
  }
  // The scratch: everything but executing what was written there, and links (nothing needs them, and the
  // grader copies collected files out of it).
  allow(ruleset_fd_, scratch_, all & ~(kExecute | LANDLOCK_ACCESS_FS_MAKE_SYM));
  // The report files it is told to write exist before it starts, so that one rule can name each.
  for (const auto& arg : argv) {
    for (const auto& prefix : sandbox.output_arg_prefixes) {
      if (arg.rfind(prefix, 0) != 0) continue;
      const fs::path file = arg.substr(prefix.size());
      if (!file.is_absolute()) continue;
      const int f = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (f < 0) continue;  // the process will fail to write it, visibly
      close(f);
      allow(ruleset_fd_, file, (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | kFsTruncate) & all);
    }
  }
}

PreparedSandbox::~PreparedSandbox() {
  if (ruleset_fd_ >= 0) close(ruleset_fd_);
  if (!scratch_.empty()) {
    std::error_code ec;
    fs::remove_all(scratch_, ec);
  }
}

int PreparedSandbox::enter() const noexcept {
  // A network namespace of its own (only loopback, down) needs CAP_SYS_ADMIN: without it, Landlock's TCP
  // rules below still refuse bind and connect.
  if (unshare_network_) (void)unshare(CLONE_NEWNET);
  // Run as root, the program would keep every capability across exec (reading any file, mounting,
  // loading modules): empty the bounding, ambient and inheritable sets. Without CAP_SETPCAP (not root)
  // there is nothing to drop and these fail harmlessly.
  (void)prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  for (int cap = 0; cap < 64; ++cap) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL) break;  // past the last capability
  }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  if (ruleset_fd_ < 0) return 0;
  // The CUDA driver opens files of its own process's /proc/<pid> for writing as it starts: without this rule
  // every CUDA call fails with cudaErrorOperatingSystem (an H100, driver 580.159, 2026-11-24; /proc read-only
  // was the only difference, and write plus truncate there the least that fixes it). Only here, in the child,
  // does /proc/self name the program's own pid (exec keeps it): the rule covers its threads' task/ folders
  // and no other process's files. open and syscall are safe between fork and exec.
  if (const int self = open("/proc/self", O_PATH | O_CLOEXEC); self >= 0) {
    if (const int err = add_rule(ruleset_fd_, self, own_proc_rights_); err != 0) return err;
  }
  if (syscall(SYS_landlock_restrict_self, ruleset_fd_, 0) != 0) return errno;
  return 0;
}

std::string PreparedSandbox::finish() {
  std::string notes;
  for (const auto& [var, dest] : collect_) {
    const fs::path dir = scratch_ / "collect" / var;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
      const auto status = it->symlink_status(ec);
      if (ec || fs::is_directory(status)) continue;
      const fs::path rel = fs::relative(it->path(), dir, ec);
      if (!fs::is_regular_file(status)) {
        notes += fmt::format("rooflab: {} was not kept: not a regular file\n", rel.string());
      } else if (it->file_size(ec) > kMaxCollectedFile) {
        notes += fmt::format("rooflab: {} was not kept: larger than {} MiB\n", rel.string(), kMaxCollectedFile >> 20);
      } else if (!copy_regular(it->path(), dest / rel)) {
        notes += fmt::format("rooflab: {} could not be copied to {}\n", rel.string(), dest.string());
      }
    }
  }
  std::error_code ec;
  fs::remove_all(scratch_, ec);
  scratch_.clear();
  return notes;
}

}  // namespace rooflab::grader
