// rooflab_emu_branches FILE.cu NVCC_HOST.ii NVCC_DEVICE.ii BACKEND.ii [--contexts W.contexts] [--arch sm_80]
// [--name NAME]:
// the segments of FILE.cu's conditional directives that nvcc and the CPU backend do not both compile, and the
// names it uses outside them whose value differs between the two (branches.hpp), one per line on standard output,
// named NAME:first-last (NAME: the file's own name unless given).
// Each .ii is a compilation's preprocessed text (`-E -fdirectives-only`): nvcc's host pass, nvcc's device pass for
// ARCH, and the CPU backend's wrapper of the file; W.contexts, written beside that wrapper by the rewriter,
// lists where each directive stands. Nothing printed: the compilations keep the same code. Exit status 0 either
// way; 2 when an input cannot be read or names FILE.cu nowhere (a capture that went wrong is not a clean result).
#include "branches.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

namespace fs = std::filesystem;
namespace br = rooflab::emu::branches;

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  std::string arch = "sm_80", name, contexts_file;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--arch" || a == "--name" || a == "--contexts") && i + 1 < argc) {
      (a == "--arch" ? arch : a == "--name" ? name : contexts_file) = argv[++i];
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 4) {
    std::cerr << "usage: rooflab_emu_branches FILE.cu NVCC_HOST.ii NVCC_DEVICE.ii BACKEND.ii [--contexts W.contexts] "
                 "[--arch sm_80] [--name NAME]\n";
    return 2;
  }
  const fs::path source = fs::weakly_canonical(positional[0]);
  if (name.empty()) name = source.filename().string();
  std::ifstream in(source);
  if (!in) {
    std::cerr << "rooflab_emu_branches: cannot read " << source << "\n";
    return 2;
  }
  const std::vector<std::string> lines = br::split_lines(in);
  const int max_line = static_cast<int>(lines.size());
  std::map<std::string, bool> seen;  // a marker's name, resolved once (a header's appears at every return to it)
  const auto same_file = [&](const std::string& marker) {
    const auto [it, fresh] = seen.try_emplace(marker, false);
    if (fresh) {
      std::error_code ec;
      it->second = fs::weakly_canonical(marker, ec) == source && !ec;
    }
    return it->second;
  };
  std::set<int> kept[3];
  for (int k = 0; k < 3; ++k) {
    std::ifstream ii(positional[static_cast<std::size_t>(k + 1)]);
    if (!ii) {
      std::cerr << "rooflab_emu_branches: cannot read " << positional[static_cast<std::size_t>(k + 1)] << "\n";
      return 2;
    }
    kept[k] = br::kept_lines(ii, same_file, max_line);
    if (kept[k].empty() && max_line > 0) {
      std::cerr << "rooflab_emu_branches: " << positional[static_cast<std::size_t>(k + 1)] << " holds no line of "
                << source << "\n";
      return 2;
    }
  }
  br::Contexts contexts;
  if (!contexts_file.empty()) {
    std::ifstream w(contexts_file);
    if (!w) {
      std::cerr << "rooflab_emu_branches: cannot read " << contexts_file << "\n";
      return 2;
    }
    contexts = br::directive_contexts(w);
  }
  const auto segments = br::conditional_segments(lines);
  for (const std::string& d : br::differences(name, lines, segments, kept[0], kept[1], kept[2], arch, contexts)) {
    std::cout << d << "\n";
  }
  // The macros nvcc's host pass and the backend end with, for the names the file uses outside its conditionals.
  std::ifstream host_ii(positional[1]), backend_ii(positional[3]);
  const auto host_macros = br::macros_at_end(host_ii), backend_macros = br::macros_at_end(backend_ii);
  for (const std::string& d : br::macro_value_differences(name, lines, host_macros, backend_macros)) {
    std::cout << d << "\n";
  }
  return 0;
}
