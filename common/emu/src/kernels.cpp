// Which kernels a binary holds and which of them ran: the bookkeeping behind "code no test ran".
//
// A launcher that dispatches on a parameter (a template instance per GQA group, per batch, per head dim)
// holds code that only some values reach. The grader can only vouch for code a test ran, so the backend
// knows both sides:
//   - defined: every kernel instance compiled into the process. The rewriter registers the names of the
//     __global__ functions each .cu file declares (register_kernels, from the end of each generated
//     wrapper); the instances are the function symbols of the executable with one of those names. A
//     template instance has a symbol as soon as a launch site takes its address, whether or not it runs.
//   - launched: every kernel started, by name, with the launch count at its latest launch, so that a
//     window (KernelWatch, a static test's launcher call) can ask which kernels it started.
#include "internal.hpp"

#include <rooflab/emu/launch.hpp>

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cctype>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace rooflab::emu {

namespace {

struct Registry {
  std::mutex mutex;
  std::set<std::string> kernel_names;  // unqualified names of __global__ functions, from every wrapper
  std::map<std::string, unsigned long long> last_launch;  // kernel name -> launch number of its latest launch
  std::vector<std::string> launch_order;                    // names in order of first launch
  unsigned long long launches = 0;
  int shape_scopes = 0;             // LaunchShapes alive: launches are recorded and not run
  std::vector<LaunchShape> shapes;  // what they recorded
};

Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: wrappers register from static initializers
  return *r;
}

// The mangled names of the function symbols in an ELF file's full symbol table (.symtab), or none.
std::vector<std::string> function_symbols(const char* file) {
  std::vector<std::string> out;
  const int fd = open(file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  struct stat st {};
  if (fstat(fd, &st) == 0 && static_cast<std::size_t>(st.st_size) > sizeof(Elf64_Ehdr)) {
    const auto size = static_cast<std::size_t>(st.st_size);
    void* map = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
      const auto* base = static_cast<const unsigned char*>(map);
      const auto* eh = reinterpret_cast<const Elf64_Ehdr*>(base);
      const bool elf64 = std::memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 && eh->e_ident[EI_CLASS] == ELFCLASS64;
      if (elf64 && eh->e_shoff + static_cast<std::size_t>(eh->e_shnum) * sizeof(Elf64_Shdr) <= size) {
        const auto* sh = reinterpret_cast<const Elf64_Shdr*>(base + eh->e_shoff);
        for (int i = 0; i < eh->e_shnum; ++i) {
          if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum) continue;
          const Elf64_Shdr& strs = sh[sh[i].sh_link];
          if (sh[i].sh_offset + sh[i].sh_size > size || strs.sh_offset + strs.sh_size > size) continue;
          const auto* syms = reinterpret_cast<const Elf64_Sym*>(base + sh[i].sh_offset);
          for (std::size_t k = 0; k < sh[i].sh_size / sizeof(Elf64_Sym); ++k) {
            if (ELF64_ST_TYPE(syms[k].st_info) != STT_FUNC || syms[k].st_shndx == SHN_UNDEF) continue;
            if (syms[k].st_name >= strs.sh_size) continue;
            out.emplace_back(reinterpret_cast<const char*>(base + strs.sh_offset + syms[k].st_name));
          }
        }
      }
      munmap(map, size);
    }
  }
  close(fd);
  return out;
}

}  // namespace

namespace detail {

int register_kernels(const char* /*file*/, const char* names) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  for (const char* p = names; *p != '\0';) {
    const std::size_t length = std::strcspn(p, ",");
    if (length > 0) r.kernel_names.emplace(p, length);
    p += length;
    if (*p == ',') ++p;
  }
  return 0;
}

void note_kernel_launch(const std::string& name) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  const auto [it, first] = r.last_launch.try_emplace(name, 0);
  it->second = ++r.launches;
  if (first) r.launch_order.push_back(name);
}

bool recording_launch_shapes() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.shape_scopes > 0;
}

bool note_launch_shape(const std::string& name, dim3 grid, dim3 block, std::size_t dynamic_smem) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.shape_scopes == 0) return false;
  ArgumentFacts arguments = take_argument_facts();
  r.shapes.push_back({name, grid, block, dynamic_smem, std::move(arguments.reach), std::move(arguments.scalars)});
  return true;
}

std::string kernel_base_name(const std::string& demangled) {
  // "void ns::k<8>(float const*, int)" -> "k"; "ns::(anonymous namespace)::k(float*)" -> "k". A symbol that
  // is not the function itself (a lambda or a local inside it, a compiler clone) has text after the
  // parameter list, and no base name.
  std::string s = demangled;
  for (std::size_t at; (at = s.find("(anonymous namespace)::")) != std::string::npos;) s.erase(at, 23);
  if (s.find("[clone") != std::string::npos) return "";
  int angles = 0;
  std::size_t open = std::string::npos;
  for (std::size_t i = 0; i < s.size() && open == std::string::npos; ++i) {
    if (s[i] == '<') ++angles;
    if (s[i] == '>') --angles;
    if (s[i] == '(' && angles == 0) open = i;
  }
  if (open == std::string::npos || open == 0 || s.back() != ')') return "";
  int depth = 0;
  for (std::size_t i = open; i < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && --depth == 0 && i + 1 != s.size()) return "";
  }
  std::size_t end = open;
  if (s[end - 1] == '>') {  // a template instance: back over its argument list
    int d = 0;
    for (std::size_t i = end; i-- > 0;) {
      if (s[i] == '>') ++d;
      if (s[i] == '<' && --d == 0) {
        end = i;
        break;
      }
    }
  }
  std::size_t begin = end;
  while (begin > 0 && (std::isalnum(static_cast<unsigned char>(s[begin - 1])) != 0 || s[begin - 1] == '_')) --begin;
  return s.substr(begin, end - begin);
}

}  // namespace detail

std::vector<std::string> kernels_defined() {
  std::set<std::string> names;
  {
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    names = r.kernel_names;
  }
  std::vector<std::string> out;
  if (names.empty()) return out;
  for (const std::string& symbol : function_symbols("/proc/self/exe")) {
    std::string name = demangle(symbol.c_str());
    if (names.count(detail::kernel_base_name(name)) == 0) continue;
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> kernels_launched_since(unsigned long long launches) {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<std::string> out;
  for (const std::string& name : r.launch_order) {
    if (r.last_launch.at(name) > launches) out.push_back(name);
  }
  return out;
}

unsigned long long kernel_launch_count() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.launches;
}

LaunchShapes::LaunchShapes() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  if (r.shape_scopes++ == 0) r.shapes.clear();
}

LaunchShapes::~LaunchShapes() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  --r.shape_scopes;
}

std::vector<LaunchShape> LaunchShapes::taken() const {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.shapes;
}

std::vector<std::string> kernels_never_launched() {
  const std::vector<std::string> ran = kernels_launched_since(0);
  std::vector<std::string> out;
  for (const std::string& k : kernels_defined()) {
    if (std::find(ran.begin(), ran.end(), k) == ran.end()) out.push_back(k);
  }
  return out;
}

}  // namespace rooflab::emu

// For code that links the backend only sometimes (the test binaries' main(), common/src/test_main.cpp): a
// weak reference to these finds them exactly when the backend is in the process. Newline-separated names.
extern "C" const char* rooflab_emu_kernels_defined() {
  static std::string text;
  text.clear();
  for (const auto& k : rooflab::emu::kernels_defined()) text += k + "\n";
  return text.c_str();
}
extern "C" const char* rooflab_emu_kernels_launched() {
  static std::string text;
  text.clear();
  for (const auto& k : rooflab::emu::kernels_launched_since(0)) text += k + "\n";
  return text.c_str();
}
