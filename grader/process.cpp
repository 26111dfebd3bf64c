#include "process.hpp"

#include <fmt/format.h>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

extern char** environ;

namespace rooflab::grader {

namespace {
std::optional<Sandbox> g_scope_sandbox;  // the innermost SandboxScope's
constexpr int kPassedFd = 3;             // where ProcessOptions::pass_fd lands in the child
}  // namespace

// ---- what a child leaves running ----
// The grader is a child subreaper, so a process whose parent dies is re-parented to it (not to init), however it
// detached itself (setsid, a double fork, daemon()). Whatever still descends from the grader when a child has
// ended, apart from the children of other run_process calls, was started by that child. A PID namespace would
// also do (its init's exit kills the rest), but the kernel kills them before anyone can count them, and a test
// process that is PID 1 ignores signals it has no handler for (abort() and death tests would change meaning).

namespace {

std::mutex g_children_mutex;
std::set<pid_t> g_children;  // the children of run_process calls under way, and their descendants

struct ProcInfo {
  pid_t ppid = 0;
  char state = '?';  // Z: a zombie (only reaped, never counted)
};

// Every process's parent and state, from /proc/<pid>/stat (the fields after the last ')', which ends the name).
std::map<pid_t, ProcInfo> process_table() {
  std::map<pid_t, ProcInfo> out;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return out;
  while (const dirent* e = readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/stat");
    std::string stat;
    std::getline(in, stat);
    const std::size_t paren = stat.rfind(')');
    ProcInfo info;
    if (paren == std::string::npos) continue;
    if (std::sscanf(stat.c_str() + paren + 1, " %c %d", &info.state, &info.ppid) != 2) continue;
    out[static_cast<pid_t>(pid)] = info;
  }
  closedir(dir);
  return out;
}

// The processes descending from the grader that no run_process call under way started (zombies too if asked).
std::vector<pid_t> leftovers(const std::map<pid_t, ProcInfo>& table, bool zombies) {
  std::map<pid_t, std::vector<pid_t>> children;
  for (const auto& [pid, info] : table) children[info.ppid].push_back(pid);
  std::vector<pid_t> out, todo;
  {
    const std::lock_guard lock(g_children_mutex);
    for (const pid_t c : children[getpid()]) {
      if (g_children.count(c) == 0) todo.push_back(c);
    }
  }
  while (!todo.empty()) {
    const pid_t p = todo.back();
    todo.pop_back();
    if (zombies || table.at(p).state != 'Z') out.push_back(p);
    for (const pid_t c : children[p]) todo.push_back(c);
  }
  return out;
}

// "pid 123: sleep 600", from its command line (its name when it has none).
std::string describe_process(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  while (!cmd.empty() && cmd.back() == '\0') cmd.pop_back();
  for (char& c : cmd) {
    if (c == '\0' || c == '\n') c = ' ';
  }
  if (cmd.empty()) {
    std::ifstream comm("/proc/" + std::to_string(pid) + "/comm");
    std::getline(comm, cmd);
    cmd = "[" + cmd + "]";
  }
  if (cmd.size() > 100) cmd = cmd.substr(0, 97) + "...";
  return fmt::format("pid {}: {}", pid, cmd);
}

// Stops, lists, kills and reaps what the child that just ended left running. Stopped first, scan after scan
// until a scan finds nothing new, so that a process forking as fast as it can is caught whole.
std::vector<std::string> end_leftovers() {
  if (!leftovers_tracked()) return {};
  // A helper that is about to end by itself (a sanitizer's symbolizer reading the end of its pipe) is given a
  // moment; a daemon is not going to end.
  for (int i = 0; i < 50 && !leftovers(process_table(), false).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::map<pid_t, std::string> stopped;
  for (int round = 0, quiet = 0; round < 200 && quiet < 2; ++round) {
    bool found = false;
    for (const pid_t p : leftovers(process_table(), false)) {
      if (stopped.count(p) != 0) continue;
      kill(p, SIGSTOP);
      stopped[p] = describe_process(p);
      found = true;
    }
    quiet = found ? 0 : quiet + 1;
  }
  for (const auto& [p, what] : stopped) kill(p, SIGKILL);
  // Reaped as they become the grader's children (a killed process's children are re-parented to it).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  for (;;) {
    const auto table = process_table();
    const auto rest = leftovers(table, true);
    if (rest.empty() || std::chrono::steady_clock::now() > deadline) break;
    for (const pid_t p : rest) {
      if (table.at(p).state != 'Z' && stopped.count(p) == 0) {
        stopped[p] = describe_process(p);
        kill(p, SIGKILL);
      }
      if (table.at(p).ppid == getpid()) waitpid(p, nullptr, WNOHANG);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::vector<std::string> out;
  for (const auto& [p, what] : stopped) out.push_back(what);
  return out;
}

}  // namespace

bool leftovers_tracked() {
  static const bool subreaper = prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
  return subreaper;
}

SandboxScope::SandboxScope(std::optional<Sandbox> sandbox) : previous_(std::move(g_scope_sandbox)) {
  g_scope_sandbox = std::move(sandbox);
}

SandboxScope::~SandboxScope() { g_scope_sandbox = std::move(previous_); }

std::string ProcessResult::describe() const {
  if (failed_to_start) return "could not start: " + output;
  if (timed_out) return fmt::format("timed out after {:.0f} s (a hang: a kernel that never finishes, a barrier not all "
                                    "threads reach, or an endless loop)", seconds);
  if (signaled) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  return fmt::format("exit code {}", exit_code);
}

std::string tail_lines(const std::string& text, int lines) {
  std::size_t pos = text.size();
  while (lines-- > 0 && pos > 0) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) return text;
  }
  return text.substr(pos == 0 ? 0 : pos + 1);
}

namespace {

// The child's environment: ours, with the overrides.
std::vector<std::string> child_environment(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const auto key = kv.substr(0, kv.find('='));
    if (overrides.count(key) == 0) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : overrides) env_strings.push_back(k + "=" + v);
  return env_strings;
}

// The child after fork: its own process group (so a timeout kills everything it started), output into the
// pipe, the sandbox entered, then exec. Only system calls here (fork in a process with threads).
[[noreturn]] void exec_child(char* const* args, char* const* envp, int pipe_write, const std::string& cwd,
                             const ProcessOptions& options, PreparedSandbox* sandbox) {
  setpgid(0, 0);
  dup2(pipe_write, STDOUT_FILENO);
  dup2(pipe_write, STDERR_FILENO);
  const int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, STDIN_FILENO);
  if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
  if (options.pass_fd >= 0 && options.pass_fd != kPassedFd) {
    if (dup2(options.pass_fd, kPassedFd) < 0) _exit(126);
  } else if (options.pass_fd == kPassedFd) {
    fcntl(kPassedFd, F_SETFD, 0);  // keep it across exec
  }
  if (sandbox != nullptr) {
    if (const int err = sandbox->enter(); err != 0) {
      constexpr char msg[] = "rooflab: cannot enter the sandbox: ";
      (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
      const char* why = strerrordesc_np(err);
      (void)!write(STDERR_FILENO, why, std::strlen(why));
      (void)!write(STDERR_FILENO, "\n", 1);
      _exit(125);
    }
    // Descriptors the grader holds open would outlive the sandbox's checks (they are made at open).
    close_range(options.pass_fd >= 0 ? kPassedFd + 1 : kPassedFd, ~0U, 0);
  }
  execvpe(args[0], args, envp);
  const std::string msg = fmt::format("cannot run {}: {}\n", args[0], std::strerror(errno));
  (void)!write(STDERR_FILENO, msg.data(), msg.size());
  _exit(127);
}

// One read's bytes: kept (the oldest cut when far over the limit), echoed, and split into lines for on_line.
void take_output(const char* buf, std::size_t n, const ProcessOptions& options, std::string& pending, ProcessResult& r) {
  r.output.append(buf, n);
  if (options.echo) (void)!write(STDOUT_FILENO, buf, n);
  if (options.on_line) {
    pending.append(buf, n);
    for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
      options.on_line(pending.substr(0, nl));
    }
  }
  if (r.output.size() > 2 * options.max_output_bytes) r.output.erase(0, r.output.size() - options.max_output_bytes);
}

// Reads the child's output until the pipe closes, the child is gone or the deadline passes (then the child's
// group is killed). Returns whether the child was reaped here; its wait status in `status`.
bool read_until_done(pid_t pid, int pipe_read, const ProcessOptions& options,
                     std::chrono::steady_clock::time_point deadline, int& status, ProcessResult& r) {
  char buf[65536];
  std::string pending;  // a partial line, for on_line
  long reads = 0;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      return false;
    }
    pollfd p{pipe_read, POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) return false;
    // Checked when the pipe is quiet, and every 64 reads: a process the child left behind that writes without
    // a pause must not keep the grader reading after the child has ended.
    if ((ready == 0 || ++reads % 64 == 0) && waitpid(pid, &status, WNOHANG) == pid) {
      // The child is gone; something it started may still hold the pipe open, so stop reading.
      for (int drained = 0; drained < 64 && poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0; ++drained) {
        const ssize_t n = read(pipe_read, buf, sizeof buf);
        if (n <= 0) break;
        r.output.append(buf, static_cast<std::size_t>(n));
      }
      return true;
    }
    if (ready <= 0) continue;
    const ssize_t n = read(pipe_read, buf, sizeof buf);
    if (n <= 0) return false;
    take_output(buf, static_cast<std::size_t>(n), options, pending, r);
  }
}

// How the child ended, from its wait status (a time-out says it all).
void read_status(int status, ProcessResult& r) {
  if (r.timed_out) return;
  if (WIFSIGNALED(status)) {
    r.signaled = true;
    r.signal = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
    if (r.exit_code == 127 && r.output.find("cannot run") != std::string::npos) r.failed_to_start = true;
    if (r.exit_code == 125 && r.output.find("cannot enter the sandbox") != std::string::npos) r.failed_to_start = true;
  }
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  ProcessResult r;
  const auto started = std::chrono::steady_clock::now();
  int pipefd[2];
  if (argv.empty() || pipe2(pipefd, O_CLOEXEC) != 0) {
    r.failed_to_start = true;
    r.output = argv.empty() ? "empty command" : std::strerror(errno);
    return r;
  }
  // The sandbox is made ready here, so that the child only has to enter it (fork in a process with threads
  // leaves the child able to make system calls, not to allocate).
  std::map<std::string, std::string> overrides = options.env;
  std::unique_ptr<PreparedSandbox> sandbox;
  if (const auto& box = options.sandbox ? options.sandbox : g_scope_sandbox) {
    try {
      sandbox = std::make_unique<PreparedSandbox>(*box, argv, overrides);
    } catch (const std::exception& e) {
      close(pipefd[0]);
      close(pipefd[1]);
      r.failed_to_start = true;
      r.output = e.what();
      return r;
    }
  }
  const std::string cwd = !options.cwd.empty() ? options.cwd.string() : sandbox ? sandbox->scratch().string() : "";
  std::vector<std::string> env_strings = child_environment(overrides);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  (void)leftovers_tracked();  // the subreaper is in place before the first child can leave anything
  std::unique_lock children_lock(g_children_mutex);  // a concurrent scan must not take the new child for a leftover
  const pid_t pid = fork();
  if (pid > 0) g_children.insert(pid);
  children_lock.unlock();
  if (pid < 0) {
    r.failed_to_start = true;
    r.output = std::strerror(errno);
    return r;
  }
  if (pid == 0) exec_child(args.data(), envp.data(), pipefd[1], cwd, options, sandbox.get());
  setpgid(pid, pid);
  close(pipefd[1]);

  int status = 0;
  const bool reaped =
      read_until_done(pid, pipefd[0], options, started + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(options.timeout_s)),
                      status, r);
  if (r.timed_out) kill(-pid, SIGKILL);
  while (!reaped && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  {
    const std::lock_guard lock(g_children_mutex);
    g_children.erase(pid);
  }
  // Whatever the child left running goes with it: listed (a test that leaves any fails), then killed.
  r.left_running = end_leftovers();
  kill(-pid, SIGKILL);
  // Closed only now: a leftover still writing would die of SIGPIPE during the scan's grace period and go
  // uncounted.
  close(pipefd[0]);
  if (r.output.size() > options.max_output_bytes) {
    r.output = "[... output cut ...]\n" + r.output.substr(r.output.size() - options.max_output_bytes);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  read_status(status, r);
  if (sandbox) r.output += sandbox->finish();
  return r;
}
}  // namespace rooflab::grader
