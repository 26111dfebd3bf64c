#include "process.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>

extern char** environ;

namespace rooflab::grader {

namespace {
std::optional<Sandbox> g_scope_sandbox;  // the innermost SandboxScope's
constexpr int kPassedFd = 3;             // where ProcessOptions::pass_fd lands in the child
}  // namespace

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
  // The child's environment: ours, with the overrides.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const auto key = kv.substr(0, kv.find('='));
    if (overrides.count(key) == 0) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : overrides) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  const pid_t pid = fork();
  if (pid < 0) {
    r.failed_to_start = true;
    r.output = std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    // Child: its own process group (so a timeout kills everything it started), output into the pipe.
    setpgid(0, 0);
    dup2(pipefd[1], STDOUT_FILENO);
    dup2(pipefd[1], STDERR_FILENO);
    const int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, STDIN_FILENO);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    if (options.pass_fd >= 0 && options.pass_fd != kPassedFd) {
      if (dup2(options.pass_fd, kPassedFd) < 0) _exit(126);
    } else if (options.pass_fd == kPassedFd) {
      fcntl(kPassedFd, F_SETFD, 0);  // keep it across exec
    }
    if (sandbox) {
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
    execvpe(args[0], args.data(), envp.data());
    const std::string msg = fmt::format("cannot run {}: {}\n", args[0], std::strerror(errno));
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(127);
  }
  setpgid(pid, pid);
  close(pipefd[1]);

  const auto deadline = started + std::chrono::duration<double>(options.timeout_s);
  char buf[65536];
  std::string pending;  // a partial line, for on_line
  bool open_pipe = true;
  bool reaped = false;
  int status = 0;
  while (open_pipe) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd p{pipefd[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready == 0 && waitpid(pid, &status, WNOHANG) == pid) {
      // The child is gone; something it started may still hold the pipe open, so stop reading.
      reaped = true;
      while (poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0) {
        const ssize_t n = read(pipefd[0], buf, sizeof buf);
        if (n <= 0) break;
        r.output.append(buf, static_cast<std::size_t>(n));
      }
      break;
    }
    if (ready <= 0) continue;
    const ssize_t n = read(pipefd[0], buf, sizeof buf);
    if (n <= 0) {
      open_pipe = false;
      break;
    }
    r.output.append(buf, static_cast<std::size_t>(n));
    if (options.echo) (void)!write(STDOUT_FILENO, buf, static_cast<std::size_t>(n));
    if (options.on_line) {
      pending.append(buf, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = pending.find('\n')) != std::string::npos; pending.erase(0, nl + 1)) {
        options.on_line(pending.substr(0, nl));
      }
    }
    if (r.output.size() > 2 * options.max_output_bytes) {
      r.output.erase(0, r.output.size() - options.max_output_bytes);
    }
  }
  close(pipefd[0]);
  if (r.timed_out) kill(-pid, SIGKILL);
  while (!reaped && waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  // Whatever the child left running in its group goes with it.
  kill(-pid, SIGKILL);
  if (r.output.size() > options.max_output_bytes) {
    r.output = "[... output cut ...]\n" + r.output.substr(r.output.size() - options.max_output_bytes);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!r.timed_out) {
    if (WIFSIGNALED(status)) {
      r.signaled = true;
      r.signal = WTERMSIG(status);
    } else if (WIFEXITED(status)) {
      r.exit_code = WEXITSTATUS(status);
      if (r.exit_code == 127 && r.output.find("cannot run") != std::string::npos) r.failed_to_start = true;
      if (r.exit_code == 125 && r.output.find("cannot enter the sandbox") != std::string::npos) r.failed_to_start = true;
    }
  }
  if (sandbox) r.output += sandbox->finish();
  return r;
}

}  // namespace rooflab::grader
