#include <rooflab/detail/loaded_libraries.hpp>

#include <nlohmann/json.hpp>

#include <link.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace rooflab::loaded_libraries {

namespace {

bool same_name(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

std::string basename_of(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// What the loader knows of one object: its SONAME and the objects it was linked against (DT_NEEDED).
struct DynamicInfo {
  std::string path;
  std::string soname;
  std::vector<std::string> needed;
};

// The object's dynamic section, read in memory. The loader relocates DT_STRTAB in place on most targets;
// where it cannot (the vDSO, read-only dynamic sections) the entry is still the link-time address.
DynamicInfo dynamic_info(const dl_phdr_info& info) {
  DynamicInfo out{info.dlpi_name ? info.dlpi_name : "", "", {}};
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    if (info.dlpi_phdr[i].p_type == PT_DYNAMIC) {
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info.dlpi_addr + info.dlpi_phdr[i].p_vaddr);
    }
  }
  if (dyn == nullptr) return out;
  ElfW(Addr) strtab = 0;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_STRTAB) strtab = d->d_un.d_ptr;
  }
  if (strtab == 0) return out;
  if (strtab < info.dlpi_addr) strtab += info.dlpi_addr;
  const char* strings = reinterpret_cast<const char*>(strtab);
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    if (d->d_tag == DT_NEEDED) out.needed.emplace_back(strings + d->d_un.d_val);
    if (d->d_tag == DT_SONAME) out.soname = strings + d->d_un.d_val;
  }
  return out;
}

std::vector<DynamicInfo> every_object() {
  std::vector<DynamicInfo> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, std::size_t, void* data) {
        static_cast<std::vector<DynamicInfo>*>(data)->push_back(dynamic_info(*info));
        return 0;
      },
      &out);
  return out;
}

std::string canonical(const std::string& path) {
  std::error_code ec;
  const auto c = std::filesystem::canonical(path, ec);
  return ec ? path : c.string();
}

// A file as the kernel knows it, whatever path reached it.
using FileId = std::pair<unsigned long long, unsigned long long>;  // device, inode

std::optional<FileId> file_id(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

struct MappedFile {
  std::string path;
  FileId id;
};

// The files mapped into the process, each once, with the path and device:inode the kernel gives them.
std::vector<MappedFile> mapped_files() {
  std::ifstream maps("/proc/self/maps");
  std::vector<MappedFile> out;
  std::set<std::string> seen;
  // "start-end perms offset major:minor inode   path" (path absent for anonymous memory, [heap], [vdso])
  for (std::string line; std::getline(maps, line);) {
    std::istringstream fields(line);
    std::string range, perms, offset, dev, path;
    unsigned long long inode = 0;
    if (!(fields >> range >> perms >> offset >> dev >> inode) || inode == 0) continue;
    std::getline(fields >> std::ws, path);
    if (path.ends_with(" (deleted)")) path.resize(path.size() - 10);  // replaced on disk since it was mapped
    if (path.empty() || path.front() != '/' || !seen.insert(path).second) continue;
    const auto colon = dev.find(':');
    if (colon == std::string::npos) continue;
    const unsigned major = std::stoul(dev.substr(0, colon), nullptr, 16);
    const unsigned minor = std::stoul(dev.substr(colon + 1), nullptr, 16);
    out.push_back({std::move(path), FileId{makedev(major, minor), inode}});
  }
  return out;
}

bool in(const std::set<std::string>& names, const DynamicInfo& o) {
  return names.count(basename_of(o.path)) > 0 || (!o.soname.empty() && names.count(o.soname) > 0);
}

}  // namespace

std::vector<std::string> shared_object_prefixes(std::string_view library) {
  // The CUDA libraries a lab may forbid that come as shared objects; the header-only ones have none.
  static const std::vector<std::pair<std::string_view, std::string_view>> table = {
      {"cuBLAS", "libcublas"},     {"cuBLASLt", "libcublasLt"}, {"cuDNN", "libcudnn"},
      {"cuSPARSE", "libcusparse"}, {"cuFFT", "libcufft"},       {"cuRAND", "libcurand"},
      {"cuSOLVER", "libcusolver"}, {"cuTENSOR", "libcutensor"}, {"NCCL", "libnccl"}};
  std::vector<std::string> out;
  for (const auto& [name, prefix] : table) {
    if (same_name(name, library)) out.emplace_back(prefix);
  }
  return out;
}

std::vector<std::string> forbidden_in_rubric(const std::string& rubric_path) {
  std::ifstream in(rubric_path);
  const auto j = nlohmann::json::parse(in, nullptr, false);
  std::vector<std::string> out;
  if (j.is_discarded() || !j.is_object() || !j.contains("forbidden_symbols")) return out;
  for (const auto& e : j.at("forbidden_symbols")) {
    if (e.is_object() && e.contains("library") && e.at("library").is_string()) out.push_back(e.at("library"));
  }
  return out;
}

std::vector<LoadedObject> loaded_objects() {
  const std::vector<DynamicInfo> objects = every_object();
  // The first object is the executable: what it needs, and what those need, the loader mapped before main.
  std::set<std::string> closure;
  if (!objects.empty()) closure.insert(objects.front().needed.begin(), objects.front().needed.end());
  for (std::size_t size = 0; size != closure.size();) {
    size = closure.size();
    for (const auto& o : objects) {
      if (in(closure, o)) closure.insert(o.needed.begin(), o.needed.end());
    }
  }
  std::vector<LoadedObject> out;
  // The loader's list by path and by device:inode (an overlay filesystem may show either differently).
  std::set<std::string> known;
  std::set<FileId> known_ids;
  for (std::size_t i = 0; i < objects.size(); ++i) {
    out.push_back({objects[i].path, i == 0 || in(closure, objects[i]), objects[i].soname});
    const std::string path = canonical(i == 0 ? "/proc/self/exe" : objects[i].path);
    known.insert(path);
    if (const auto id = file_id(path)) known_ids.insert(*id);
  }
  for (const auto& m : mapped_files()) {
    if (known.count(m.path) == 0 && known_ids.count(m.id) == 0) {
      known.insert(m.path);
      out.push_back({m.path, false, ""});
    }
  }
  return out;
}

std::vector<std::string> forbidden_loaded(const std::vector<LoadedObject>& loaded,
                                          const std::vector<std::string>& forbidden) {
  std::vector<std::string> out;
  for (const auto& o : loaded) {
    if (o.linked) continue;
    const std::string name = basename_of(o.path);
    for (const auto& library : forbidden) {
      for (const auto& prefix : shared_object_prefixes(library)) {
        if (name.starts_with(prefix)) {
          out.push_back(name + " (" + library + ", " + o.path + ")");
        } else if (o.soname.starts_with(prefix)) {
          out.push_back(o.soname + " (" + library + ", a copy named " + o.path + ")");
        }
      }
    }
  }
  return out;
}

void LoadedLibraryCheck::OnTestEnd(const ::testing::TestInfo&) {
  if (forbidden_.empty()) return;
  for (const auto& line : forbidden_loaded(loaded_objects(), forbidden_)) {
    if (!reported_.insert(line).second) continue;
    ADD_FAILURE() << "refused: a library this lab forbids was loaded into the test process while this test ran: "
                  << line << ". The test binary is not linked against it, so the code under test loaded it at run "
                             "time (dlopen or a route like it). Write the kernels yourself: the lab grades your "
                             "code, not a library's.";
  }
}

}  // namespace rooflab::loaded_libraries
