// rooflab-seed-audit: is every analytic question asked of inputs drawn from the seed?
//
// A question asked only of published inputs (the GPUs of data/gpus.json, the models of data/models.json,
// FP8's two formats, a fixed list of sizes) can be answered by a table typed in from the handout, keyed by
// name, and earns full points without the arithmetic it teaches. The audit finds such questions in a lab's
// tests without reading them: it runs the lab's analytic tests against the reference answers twice, with
// two seeds, in a binary whose answers file reports which answer function each check was about
// (seed_audit_hooks.cpp). A question is seeded when the second run expects at least one answer the first
// never did: its inputs moved with the seed, so no table written before the seed was known holds them.
// A question whose answers are few (a yes/no, blocks per SM: at most 64 distinct values) is seeded when
// the order of its answers moved with the seed. (A question asked of a seeded choice among published inputs
// with few answers therefore passes: the audit is a floor, not a proof.) Every function the answers object defines (a question) must be seeded.
//
//   rooflab-seed-audit --lab 06 --binary lab06_seed_audit --object answers.cpp.o [--seed-a 1 --seed-b 2]
//
// Exit 0: every question seeded; 1: a question is not (the table says which); 2: usage or run error.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <rooflab/detail/command.hpp>

namespace fs = std::filesystem;

namespace {

struct Args {
  std::string lab, binary, object;
  std::string seed_a = "20261122", seed_b = "7";
};

using rooflab::detail::command_output;
using rooflab::detail::shell_quoted;

// The functions the answers object defines with external linkage in the lab's namespace: its questions.
std::set<std::string> questions(const Args& a) {
  int status = 0;
  const std::string out = command_output("nm --defined-only -C " + shell_quoted(a.object), &status);
  if (status != 0) throw std::runtime_error("nm failed on " + a.object);
  std::set<std::string> names;
  std::istringstream lines(out);
  const std::string prefix = "lab" + a.lab + "::";
  for (std::string line; std::getline(lines, line);) {
    // "0000000000000040 T lab06::gqa_saving(rooflab::ModelSpec const&)"
    if (line.size() < 20 || line[17] != 'T') continue;
    const std::string name = line.substr(19);
    if (name.rfind(prefix, 0) == 0) names.insert(name);
  }
  return names;
}

// question -> the values its checks expected, as text at 12 significant digits (float noise is not a new input).
using Expected = std::map<std::string, std::vector<std::string>>;

Expected run_with_seed(const Args& a, const std::string& seed, const fs::path& dir) {
  const fs::path out = dir / ("seed-" + seed + ".json");
  int status = 0;
  const std::string log = command_output(fmt::format("ROOFLAB_SEED={} ROOFLAB_SEED_AUDIT_OUT={} {} --gtest_brief=1 2>&1", seed,
                                          shell_quoted(out.string()), shell_quoted(a.binary)),
                              &status);
  if (status != 0) {
    throw std::runtime_error(fmt::format("the reference answers fail their own tests with seed {}:\n{}", seed, log));
  }
  std::ifstream in(out);
  if (!in) throw std::runtime_error(fmt::format("{} wrote no audit ({}): is it an audit binary?", a.binary, out.string()));
  const nlohmann::json j = nlohmann::json::parse(in);
  Expected e;
  for (const auto& [name, values] : j.items()) {
    auto& v = e[name];
    for (const auto& x : values) v.push_back(x.is_number() ? fmt::format("{:.12g}", x.get<double>()) : x.dump());
  }
  return e;
}

constexpr std::size_t kFewAnswers = 64;

// Why a question is not seeded, or "" when it is: `a` and `b` are its expected answers under the two seeds.
std::string unseeded(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (b.empty()) return "no test checks its answer";
  const std::set<std::string> seen(a.begin(), a.end());
  for (const auto& v : b) {
    if (!seen.count(v)) return "";
  }
  std::set<std::string> all(seen);
  all.insert(b.begin(), b.end());
  // Few possible answers (blocks per SM, a yes/no): new values cannot be asked for, a new order can.
  if (all.size() <= kFewAnswers && a != b) return "";
  return "every answer the second seed asked for, the first asked for too: a table typed in from published "
         "inputs passes";
}

int audit(const Args& a) {
  const std::set<std::string> qs = questions(a);
  if (qs.empty()) throw std::runtime_error("no lab" + a.lab + ":: function defined in " + a.object);
  const fs::path dir = fs::temp_directory_path() / fmt::format("rooflab-seed-audit-{}-{}", a.lab, ::getpid());
  fs::create_directories(dir);
  const Expected first = run_with_seed(a, a.seed_a, dir);
  const Expected second = run_with_seed(a, a.seed_b, dir);
  fs::remove_all(dir);

  int failures = 0;
  fmt::print("lab {}: {} questions, seeds {} and {}\n", a.lab, qs.size(), a.seed_a, a.seed_b);
  for (const auto& q : qs) {
    static const std::vector<std::string> none;
    const auto fa = first.find(q), fb = second.find(q);
    const auto& va = fa == first.end() ? none : fa->second;
    const auto& vb = fb == second.end() ? none : fb->second;
    const std::string why = fb == second.end() ? "no test asks it" : unseeded(va, vb);
    const std::set<std::string> distinct(vb.begin(), vb.end());
    fmt::print("  {:<8} {:>5} checks {:>5} distinct  {}{}\n", why.empty() ? "seeded" : "NOT", vb.size(), distinct.size(),
               q, why.empty() ? "" : "\n           " + why);
    failures += !why.empty();
  }
  if (failures > 0) {
    fmt::print("lab {}: {} of {} questions are asked only of inputs a student can look up: ask each of inputs drawn "
               "from the seed too (rooflab/testing/synthetic.hpp: synthetic GPUs, models and number formats)\n",
               a.lab, failures, qs.size());
    return 1;
  }
  fmt::print("lab {}: every question is asked of inputs drawn from the seed\n", a.lab);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args a;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--lab") a.lab = v;
    else if (k == "--binary") a.binary = v;
    else if (k == "--object") a.object = v;
    else if (k == "--seed-a") a.seed_a = v;
    else if (k == "--seed-b") a.seed_b = v;
    else {
      fmt::print(stderr, "usage: rooflab-seed-audit --lab NN --binary AUDIT_BINARY --object ANSWERS_OBJECT [--seed-a A --seed-b B]\n");
      return 2;
    }
  }
  if (a.lab.empty() || a.binary.empty() || a.object.empty()) {
    fmt::print(stderr, "usage: rooflab-seed-audit --lab NN --binary AUDIT_BINARY --object ANSWERS_OBJECT [--seed-a A --seed-b B]\n");
    return 2;
  }
  try {
    return audit(a);
  } catch (const std::exception& e) {
    fmt::print(stderr, "rooflab-seed-audit: {}\n", e.what());
    return 2;
  }
}
