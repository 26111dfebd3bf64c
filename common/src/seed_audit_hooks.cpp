// The seed audit's half inside a test binary (see seed_audit.cpp for the other half and why).
//
// The answers file is compiled with -finstrument-functions, so the compiler calls the two hooks below on
// entry to and exit from each of its functions. A call that starts from test code (depth 0) is a question
// being asked; when it returns, that question is "the last one answered". Every check a test makes
// (grading::near, same, record_answer) passes the value it expects to rooflab_seed_audit_check, which files
// it under that question. At exit the binary writes, per question, the values its checks expected, to the
// file named by ROOFLAB_SEED_AUDIT_OUT. Nothing here changes what a test computes or decides.
#include <cxxabi.h>
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#define ROOFLAB_NO_INSTRUMENT __attribute__((no_instrument_function))

namespace {

struct Log {
  std::mutex mutex;
  std::map<void*, std::vector<double>> expected;  // question -> values its checks expected, in order
};

ROOFLAB_NO_INSTRUMENT Log& log() {
  static Log* l = new Log;  // never destroyed: checks may run from other static destructors
  return *l;
}

thread_local int depth = 0;
thread_local void* last_answered = nullptr;

// The demangled name of a function of this executable (linked with -rdynamic, so dladdr finds it).
ROOFLAB_NO_INSTRUMENT std::string name_of(void* fn) {
  Dl_info info{};
  if (dladdr(fn, &info) == 0 || info.dli_sname == nullptr) return "?";
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(info.dli_sname, nullptr, nullptr, &status), std::free);
  return status == 0 && d ? d.get() : info.dli_sname;
}

ROOFLAB_NO_INSTRUMENT void json_string(std::FILE* f, const std::string& s) {
  std::fputc('"', f);
  for (const char c : s) {
    if (c == '"' || c == '\\') std::fputc('\\', f);
    std::fputc(c, f);
  }
  std::fputc('"', f);
}

struct Writer {
  ROOFLAB_NO_INSTRUMENT ~Writer() {
    const char* path = std::getenv("ROOFLAB_SEED_AUDIT_OUT");
    if (path == nullptr) return;
    std::FILE* f = std::fopen(path, "w");
    if (f == nullptr) return;
    Log& l = log();
    const std::lock_guard lock(l.mutex);
    std::fputs("{", f);
    bool first = true;
    for (const auto& [fn, values] : l.expected) {
      std::fputs(first ? "\n" : ",\n", f);
      first = false;
      json_string(f, name_of(fn));
      std::fputs(": [", f);
      for (std::size_t i = 0; i < values.size(); ++i) {
        // JSON has no inf or NaN: those travel as text.
        std::fprintf(f, std::isfinite(values[i]) ? "%s%.17g" : "%s\"%g\"", i ? ", " : "", values[i]);
      }
      std::fputs("]", f);
    }
    std::fputs("\n}\n", f);
    std::fclose(f);
  }
};
Writer writer;

}  // namespace

extern "C" {

ROOFLAB_NO_INSTRUMENT void __cyg_profile_func_enter(void* fn, void*) {
  if (depth++ == 0) {
    Log& l = log();
    const std::lock_guard lock(l.mutex);
    l.expected.try_emplace(fn);  // asked, even if no check follows
  }
}

ROOFLAB_NO_INSTRUMENT void __cyg_profile_func_exit(void* fn, void*) {
  if (--depth == 0) last_answered = fn;
}

ROOFLAB_NO_INSTRUMENT void rooflab_seed_audit_check(double want) {
  if (last_answered == nullptr) return;
  Log& l = log();
  const std::lock_guard lock(l.mutex);
  l.expected[last_answered].push_back(want);
}

}  // extern "C"
