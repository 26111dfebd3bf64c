#include "watch.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

namespace rooflab::grader {

namespace fs = std::filesystem;

namespace {

// An inotify watch on the graded labs' folders: a save (write, or an editor's rename over the file) of a
// student file is an event. No polling: the process sleeps in read().
class StudentFileWatch {
 public:
  StudentFileWatch(const GradeArgs& a, const GradePlan& plan, const fs::path& root) : fd_(inotify_init1(IN_CLOEXEC)) {
    if (fd_ < 0) return;
    std::vector<fs::path> dirs;
    for (const Lab* lab : plan.labs) dirs.push_back(root / lab->dir_name());
    if (a.submission && plan.labs.size() == 1) dirs.push_back(root);  // one lab's files may sit at its top
    for (const Lab* lab : plan.labs) names_.insert(lab->student_files.begin(), lab->student_files.end());
    for (const auto& dir : dirs) {
      const int wd = inotify_add_watch(fd_, dir.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE);
      if (wd < 0) {
        std::cerr << "rooflab: cannot watch " << dir << ": " << std::strerror(errno) << "\n";
      } else {
        watched_[wd] = dir;
      }
    }
  }
  ~StudentFileWatch() {
    if (fd_ >= 0) close(fd_);
  }
  StudentFileWatch(const StudentFileWatch&) = delete;
  StudentFileWatch& operator=(const StudentFileWatch&) = delete;
  bool ok() const { return fd_ >= 0; }

  // Waits for a save; the student files it names (empty when the watch ended).
  std::set<std::string> next_save() {
    std::set<std::string> changed;
    while (changed.empty()) {
      alignas(inotify_event) char buf[4096];
      const ssize_t n = read(fd_, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return {};
      student_files_in(buf, n, changed);
    }
    // Editors write in bursts (a backup, a rename, the file): let the burst end, then drain it.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    pollfd p{fd_, POLLIN, 0};
    while (poll(&p, 1, 0) > 0) {
      alignas(inotify_event) char drain[4096];
      const ssize_t n = read(fd_, drain, sizeof drain);
      if (n <= 0) break;
      student_files_in(drain, n, changed);
    }
    return changed;
  }

 private:
  // The student files a batch of inotify events names, by path.
  void student_files_in(const char* buf, ssize_t n, std::set<std::string>& out) const {
    for (ssize_t off = 0; off < n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
      if (ev->len > 0 && names_.count(ev->name) != 0) {
        const auto dir = watched_.find(ev->wd);
        out.insert(dir == watched_.end() ? std::string(ev->name) : (dir->second / ev->name).string());
      }
      off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
    }
  }

  int fd_;
  std::set<std::string> names_;
  std::map<int, fs::path> watched_;  // inotify's watch descriptor -> the folder, to say which file changed
};

}  // namespace

int watch_and_regrade(const GradeArgs& a, GradePlan& plan, const std::function<void()>& grade_once) {
  // A submission is watched where it is (the grade copies it into the build tree), labs/ in place.
  const fs::path root = a.submission ? fs::absolute(*a.submission) : plan.student_dir;
  StudentFileWatch watch(a, plan, root);
  if (!watch.ok()) {
    std::cerr << "rooflab: --watch needs inotify: " << std::strerror(errno) << "\n";
    return kExitUsage;
  }
  for (;;) {
    fmt::print("\nrooflab: watching the student files in {} (save one to grade again; Ctrl-C to stop) ...\n",
               root.string());
    std::fflush(stdout);
    const std::set<std::string> changed = watch.next_save();
    if (changed.empty()) return kExitOk;
    fmt::print("\nrooflab: {} changed at {}; grading again ...\n", fmt::join(changed, ", "), local_clock());
    std::fflush(stdout);
    retake_student_files(a, plan);  // a submission copied again, checked again; a fixed file no longer refused
    grade_once();
  }
}

}  // namespace rooflab::grader
