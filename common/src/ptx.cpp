#include <rooflab/testing/ptx.hpp>

#include <cxxabi.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace rooflab::ptx {

std::string demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

std::vector<Resources> parse_ptxas_report(std::string_view text) {
  // ptxas -v prints, per kernel:
  //   ptxas info    : Compiling entry function '_Z...' for 'sm_80'
  //   ptxas info    : Function properties for _Z...
  //       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
  //   ptxas info    : Used 10 registers, used 1 barriers, 4096 bytes smem, 380 bytes cmem[0]
  static const std::regex entry(R"(Compiling entry function '([^']+)' for '(sm_\d+a?)')");
  static const std::regex frame(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex barriers(R"(used (\d+) barriers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  static const std::regex cmem(R"((\d+) bytes cmem\[0\])");
  std::vector<Resources> out;
  std::istringstream in{std::string(text)};
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, entry)) {
      Resources r;
      r.mangled = m[1];
      r.name = demangle(r.mangled);
      r.arch = m[2];
      out.push_back(r);
      continue;
    }
    if (out.empty()) continue;
    Resources& r = out.back();
    if (std::regex_search(line, m, frame)) {
      r.stack_bytes = std::stoi(m[1]);
      r.spill_store_bytes = std::stoi(m[2]);
      r.spill_load_bytes = std::stoi(m[3]);
    }
    if (std::regex_search(line, m, used)) {
      r.registers = std::stoi(m[1]);
      if (std::regex_search(line, m, barriers)) r.barriers = std::stoi(m[1]);
      if (std::regex_search(line, m, smem)) r.smem_bytes = std::stoi(m[1]);
      if (std::regex_search(line, m, cmem)) r.cmem0_bytes = std::stoi(m[1]);
    }
  }
  return out;
}

std::vector<Kernel> parse_ptx(std::string_view text) {
  std::vector<Kernel> out;
  std::size_t pos = 0;
  while ((pos = text.find(".entry ", pos)) != std::string_view::npos) {
    const std::size_t name_begin = pos + 7;
    const std::size_t name_end = text.find_first_of("( \n", name_begin);
    const std::size_t open = text.find('{', name_end);
    if (name_end == std::string_view::npos || open == std::string_view::npos) break;
    // The body ends at the brace that closes the entry's opening one.
    int depth = 0;
    std::size_t close = open;
    for (; close < text.size(); ++close) {
      if (text[close] == '{') ++depth;
      if (text[close] == '}' && --depth == 0) break;
    }
    Kernel k;
    k.mangled = std::string(text.substr(name_begin, name_end - name_begin));
    k.name = demangle(k.mangled);
    k.body = std::string(text.substr(open + 1, close - open - 1));
    if (const std::size_t lp = text.find('(', name_end); lp != std::string_view::npos && lp < open) {
      if (const std::size_t rp = text.find(')', lp); rp != std::string_view::npos && rp < open) {
        k.params = std::string(text.substr(lp + 1, rp - lp - 1));
        // The performance directives between the parameters and the body: `.maxntid 256, 1, 1` (the most threads
        // a block of this kernel may have, from __launch_bounds__).
        const std::string_view directives = text.substr(rp + 1, open - rp - 1);
        if (const std::size_t at = directives.find(".maxntid"); at != std::string_view::npos) {
          std::istringstream dims{std::string(directives.substr(at + 8, directives.find('\n', at) - at - 8))};
          int threads = 1;
          for (std::string d; std::getline(dims, d, ',');) threads *= std::max(1, std::atoi(d.c_str()));
          k.max_threads = threads;
        }
      }
    }
    out.push_back(std::move(k));
    pos = close;
  }
  return out;
}

std::vector<std::pair<int, int>> param_layout(std::string_view params) {
  std::vector<std::pair<int, int>> out;
  int offset = 0;
  std::stringstream decls{std::string(params)};
  for (std::string decl; std::getline(decls, decl, ',');) {
    std::istringstream words(decl);
    int size = 0, align = 0, count = 1;
    bool pointer = false;
    for (std::string w; words >> w;) {
      if (w == ".ptr") pointer = true;
      if (w == ".align" && !pointer && words >> w) align = std::stoi(w);
      if (w.starts_with('.') && access_bits(w) > 0) size = access_bits(w) / 8;  // .u64, .b8, .f32 ...
      if (const auto lb = w.find('['); lb != std::string::npos && w.find("_param_") != std::string::npos) {
        count = std::stoi(w.substr(lb + 1));
      }
    }
    if (size == 0) continue;  // not a declaration
    if (align == 0) align = size;
    offset = (offset + align - 1) / align * align;
    out.emplace_back(offset, size * count);
    offset += size * count;
  }
  return out;
}

int access_bits(std::string_view opcode) {
  int vector = 1;
  int bits = 0;
  std::size_t start = 0;
  while (start <= opcode.size()) {
    const std::size_t dot = opcode.find('.', start);
    const std::string_view part = opcode.substr(start, dot == std::string_view::npos ? opcode.npos : dot - start);
    if (part == "v2") vector = 2;
    if (part == "v4") vector = 4;
    if (part == "v8") vector = 8;
    if (part.size() >= 2 && (part[0] == 'f' || part[0] == 'b' || part[0] == 'u' || part[0] == 's') &&
        part.find_first_not_of("0123456789", 1) == std::string_view::npos) {
      bits = std::stoi(std::string(part.substr(1)));
    }
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return vector * bits;
}

int Facts::count(std::string_view opcode_prefix) const {
  int n = 0;
  for (std::size_t pos = body.find(opcode_prefix); pos != std::string::npos;
       pos = body.find(opcode_prefix, pos + 1)) {
    // Count instructions only: the prefix must start a token (inline-asm blocks put a '{' before it).
    if (pos == 0 || body[pos - 1] == ' ' || body[pos - 1] == '\t' || body[pos - 1] == '{') ++n;
  }
  return n;
}

Facts facts(const Kernel& kernel) {
  Facts f;
  f.body = kernel.body;
  static const std::regex op(R"((?:^|\s)((?:ld|st)\.global[\w.:]*))");
  for (auto it = std::sregex_iterator(kernel.body.begin(), kernel.body.end(), op); it != std::sregex_iterator();
       ++it) {
    const std::string opcode = (*it)[1];
    const int bits = access_bits(opcode);
    if (opcode.rfind("ld.", 0) == 0) {
      ++f.global_loads;
      f.widest_global_load_bits = std::max(f.widest_global_load_bits, bits);
    } else {
      ++f.global_stores;
      f.widest_global_store_bits = std::max(f.widest_global_store_bits, bits);
    }
  }
  f.uses_shared = kernel.body.find(".shared") != std::string::npos;
  f.uses_tensor_cores = f.count("wmma.") > 0 || f.count("mma.sync") > 0 || f.count("wgmma.") > 0;
  f.fma_f32 = f.count("fma.rn.f32");
  return f;
}

namespace {
template <typename T>
const T& find_by_name(const std::vector<T>& all, std::string_view needle, const char* what) {
  const T* found = nullptr;
  std::string names;
  for (const auto& k : all) {
    names += "\n  " + k.name;
    if (k.name.find(needle) == std::string::npos) continue;
    if (found != nullptr) throw std::runtime_error(fmt::format("several {} match '{}':{}", what, needle, names));
    found = &k;
  }
  if (found == nullptr) {
    // Usually not a grader error: a template kernel is compiled only once a launcher instantiates it, so a
    // stub launcher leaves no trace of it in the PTX.
    throw NotCompiled(fmt::format("{} is {}. The {}s found:{}", needle, kNotCompiledWhy, what,
                                  names.empty() ? std::string(" none") : names));
  }
  return *found;
}
}  // namespace

const Kernel& find_kernel(const std::vector<Kernel>& kernels, std::string_view needle) {
  return find_by_name(kernels, needle, "PTX kernel");
}

bool touches_global_memory(const Facts& f) {
  return f.global_loads > 0 || f.global_stores > 0 || f.count("atom.global") > 0 || f.count("red.global") > 0;
}

const Kernel& find_written_kernel(const std::vector<Kernel>& kernels, std::string_view needle) {
  const Kernel& k = find_kernel(kernels, needle);
  if (!touches_global_memory(facts(k))) {
    throw std::runtime_error(
        fmt::format("{} is not implemented yet: {}. Write it first; this hint checks its code then", needle, kNoWorkWhy));
  }
  return k;
}

const Resources& find_resources(const std::vector<Resources>& all, std::string_view needle) {
  return find_by_name(all, needle, "ptxas entry");
}

namespace {
// "void ns::(anonymous namespace)::k<64, 64>(__half const*, ...)" -> "ns::k<64, 64>": the instance's
// qualified name, without what nvcc and the host compiler may spell differently.
std::string instance_key(std::string_view demangled) {
  std::string s(demangled);
  for (std::size_t at; (at = s.find("(anonymous namespace)::")) != std::string::npos;) s.erase(at, 23);
  int angles = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<') ++angles;
    if (s[i] == '>') --angles;
    if (s[i] == '(' && angles == 0) {
      s.resize(i);
      break;
    }
  }
  if (s.rfind("void ", 0) == 0) s.erase(0, 5);
  // nvcc's namespace for internal linkage: _INTERNAL_<hash>_<file>::
  while (s.rfind("_INTERNAL", 0) == 0 && s.find("::") != std::string::npos) s.erase(0, s.find("::") + 2);
  return s;
}
}  // namespace

bool same_kernel(std::string_view ptx_name, std::string_view launched_name) {
  return instance_key(ptx_name) == instance_key(launched_name);
}

const Kernel& find_kernel_launched(const std::vector<Kernel>& kernels, std::string_view needle,
                                   const std::vector<std::string>& launched) {
  for (const auto& name : launched) {
    for (const auto& k : kernels) {
      if (k.name.find(needle) != std::string::npos && same_kernel(k.name, name)) return k;
    }
  }
  // None of the launch names is one of the instances: where several match, say what the launches must name (a run's
  // file that names a kernel by the registry's name, "lab04::hgemm_wmma_kernel", cannot tell its instances apart).
  std::string instances;
  int matches = 0;
  for (const auto& k : kernels) {
    if (k.name.find(needle) == std::string::npos) continue;
    ++matches;
    instances += "\n  " + k.name;
  }
  if (matches > 1 && !launched.empty()) {
    std::string names;
    for (const auto& name : launched) names += "\n  " + name;
    throw std::runtime_error(fmt::format("several instances of {} were compiled and none of them was launched:{}\n"
                                         "the launches:{}\n(a file of launches names each by its kernel's demangled "
                                         "instance, \"ns::kernel<64, 64, true>\", as the CPU backend does)",
                                         needle, instances, names));
  }
  return find_kernel(kernels, needle);
}

const Resources& resources_of(const std::vector<Resources>& all, const Kernel& kernel) {
  for (const auto& r : all) {
    if (r.mangled == kernel.mangled) return r;
  }
  return find_resources(all, kernel.name);
}

const Kernel& find_launched_kernel(const std::vector<Kernel>& kernels, std::string_view needle, const Launched& launched) {
  const Kernel& k = find_kernel_launched(kernels, needle, launched.kernels);
  for (const auto& name : launched.kernels) {
    if (same_kernel(k.name, name)) return k;
  }
  std::string ran;
  for (const auto& name : launched.kernels) ran += "\n  " + name;
  throw std::runtime_error(fmt::format("{} was compiled but never launched by {}: a hint about its code would be about "
                                       "code that never runs. The kernels it launched:{}",
                                       needle, launched.launcher, ran.empty() ? std::string(" none") : ran));
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace rooflab::ptx
