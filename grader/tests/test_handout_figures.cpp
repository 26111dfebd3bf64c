// Every computed figure a student reads is recomputed here. A handout (labs/*/README.md) or a chapter of docs/
// marks such a figure with an HTML comment right after the number, which Markdown does not show:
//
//     the ridge is 153<!-- fig: lab02::ridge_point(a100-80gb-sxm4, fp16) --> FLOP/byte
//
// and this test evaluates the mark with the labs' own functions and checks that the number printed is the
// value rounded to the digits shown (153 holds any value in [152.5, 153.5]). In a code block, where a comment
// would show, the mark goes on its own line after the block and repeats the figure: `<!-- fig 1.58: ... -->`;
// the figure must then appear in the block just above. docs/adding-a-lab.md describes the syntax.
//
// Why the labs' own functions: the reference answers (solutions/NN-*/answers.cpp) are what every lab's
// analytic tests check against independent formulas, so a handout that agrees with them agrees with the
// grader. Each lab names the figures it offers in its own labs/NN-*/tests/figures.cpp (adapters from a mark's
// text arguments to its functions, rooflab/testing/figures.hpp), and rooflab_add_lab links that file and the
// lab's reference answers into this binary: the labs of this build, and no list of them here. A mark naming a
// lab the build leaves out (ROOFLAB_LABS) is skipped and counted; one naming a figure a built lab does not
// offer fails.
#include "manifest.hpp"
#include "util.hpp"

#include <rooflab/specs.hpp>
#include <rooflab/testing/figures.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fs = std::filesystem;

// ---- rooflab/testing/figures.hpp: the arguments and the registry, defined once, here ----

namespace rooflab::testing {

namespace {

const FigureArg& argument(const FigureArgs& a, std::size_t i) {
  if (i >= a.v.size()) throw std::invalid_argument("too few arguments: argument " + std::to_string(i + 1) + " is missing");
  return a.v[i];
}

}  // namespace

double FigureArgs::num(std::size_t i) const {
  const FigureArg& arg = argument(*this, i);
  if (!arg.name.empty()) throw std::invalid_argument("argument " + std::to_string(i + 1) + " must be a number, not " + arg.name);
  return arg.num;
}

std::size_t FigureArgs::size(std::size_t i) const { return static_cast<std::size_t>(std::llround(num(i))); }

const std::string& FigureArgs::name(std::size_t i) const {
  const FigureArg& arg = argument(*this, i);
  if (arg.name.empty()) throw std::invalid_argument("argument " + std::to_string(i + 1) + " must be a name");
  return arg.name;
}

const GpuSpec& FigureArgs::gpu(std::size_t i) const { return rooflab::gpu(name(i)); }

const ModelSpec& FigureArgs::model(std::size_t i) const { return rooflab::model(name(i)); }

DType FigureArgs::dtype(std::size_t i) const {
  static const std::map<std::string, DType> types = {{"fp64", DType::fp64}, {"fp32", DType::fp32},
                                                     {"tf32", DType::tf32}, {"fp16", DType::fp16},
                                                     {"bf16", DType::bf16}, {"fp8", DType::fp8},
                                                     {"int8", DType::int8},
                                                     {"fp16_nontensor", DType::fp16_nontensor}};
  const auto it = types.find(name(i));
  if (it == types.end()) throw std::invalid_argument("unknown data type " + name(i));
  return it->second;
}

std::vector<FigureLab>& figure_labs() {
  static std::vector<FigureLab> labs;
  return labs;
}

RegisterFigures::RegisterFigures(const char* lab_id, std::initializer_list<Figure> figures) {
  figure_labs().push_back({lab_id, figures});
}

}  // namespace rooflab::testing

namespace {

using rooflab::grader::read_all;
using rooflab::testing::Figure;
using rooflab::testing::FigureArg;
using rooflab::testing::FigureArgs;
using rooflab::testing::FigureFn;
using rooflab::testing::FigureLab;

// ---- which function a mark names ----

// Figures of data/*.json, as the labs read it: no lab's, so they live here.
const std::vector<Figure>& data_figures() {
  static const std::vector<Figure> table = {
      {"gpu::bandwidth_gbps", [](const FigureArgs& a) { return a.gpu(0).bandwidth_gbps; }},
      {"gpu::memory_gb", [](const FigureArgs& a) { return a.gpu(0).memory_gb; }},
      {"gpu::peak_tflops",
       [](const FigureArgs& a) { return rooflab::peak_flops(a.gpu(0), a.dtype(1)).value() / 1e12; }},
      {"gpu::count", [](const FigureArgs&) { return static_cast<double>(rooflab::gpus().size()); }},
      {"model::params_b", [](const FigureArgs& a) { return a.model(0).params_b; }},
  };
  return table;
}

// What a build offers the marks: the figure tables its labs registered, and the ids of the labs it builds
// (a built lab may have no tables: then a mark naming it is wrong, not skipped).
struct Scope {
  const std::vector<FigureLab>& labs;
  std::set<std::string> built;
};

// This binary's: the tables linked in, the labs of this build's build/rooflab/labs.json.
const Scope& this_build() {
  static const Scope scope = [] {
    std::set<std::string> built;
    for (const auto& lab : rooflab::grader::load_manifest(ROOFLAB_BUILD_DIR).labs) built.insert(lab.id);
    return Scope{rooflab::testing::figure_labs(), built};
  }();
  return scope;
}

// A mark names a lab that exists but that this build leaves out: it cannot be checked here.
class LabNotBuilt : public std::runtime_error {
 public:
  explicit LabNotBuilt(const std::string& id) : std::runtime_error("lab " + id + " is not in this build"), lab(id) {}
  std::string lab;
};

// The function a name like lab02::ridge_point or gpu::count stands for. Throws LabNotBuilt for a lab left out
// of the build, std::invalid_argument for anything else it cannot find.
FigureFn find_figure(const std::string& id, const Scope& scope) {
  for (const auto& f : data_figures()) {
    if (id == f.name) return f.fn;
  }
  static const std::regex lab_figure(R"(lab([0-9]{2})::(\w+))");
  std::smatch m;
  if (!std::regex_match(id, m, lab_figure)) throw std::invalid_argument("no figure named " + id);
  const std::string lab = m[1];
  for (const auto& table : scope.labs) {
    if (table.id != lab) continue;
    for (const auto& f : table.figures) {
      if (m[2] == f.name) return f.fn;
    }
    throw std::invalid_argument("no figure named " + id + " (labs/" + lab + "-*/tests/figures.cpp lists them)");
  }
  if (scope.built.count(lab) != 0) {
    throw std::invalid_argument("no figure named " + id + ": lab " + lab +
                                " offers none (it has no tests/figures.cpp)");
  }
  try {
    rooflab::lab_dir(lab);
  } catch (const rooflab::DataError&) {
    throw std::invalid_argument("no figure named " + id + ": there is no lab " + lab);
  }
  throw LabNotBuilt(lab);
}

// ---- the expression of a mark: calls, numbers (2^28, 1.85e-3) and + - * / with parentheses ----

class Parser {
 public:
  Parser(std::string text, const Scope& scope) : s_(std::move(text)), scope_(scope) {}
  double parse() {
    const double v = sum();
    skip();
    if (i_ != s_.size()) fail("unexpected text");
    return v;
  }

 private:
  std::string s_;
  const Scope& scope_;
  std::size_t i_ = 0;

  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument(why + " at \"" + s_.substr(i_) + "\" in \"" + s_ + "\"");
  }
  void skip() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  bool eat(char c) {
    skip();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  double sum() {
    double v = product();
    for (;;) {
      if (eat('+')) v += product();
      else if (eat('-')) v -= product();
      else return v;
    }
  }
  double product() {
    double v = factor();
    for (;;) {
      if (eat('*')) v *= factor();
      else if (eat('/')) v /= factor();
      else return v;
    }
  }
  double factor() {
    skip();
    if (eat('(')) {
      const double v = sum();
      if (!eat(')')) fail("missing )");
      return v;
    }
    if (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.')) return number();
    const std::string id = identifier();
    if (id.empty()) fail("expected a number, a call or (");
    if (!eat('(')) fail("a name alone is not a figure: " + id);
    const FigureFn figure = find_figure(id, scope_);
    return figure(arguments());
  }
  double number() {
    std::size_t used = 0;
    const double v = std::stod(s_.substr(i_), &used);
    i_ += used;
    if (eat('^')) return std::pow(v, number());
    return v;
  }
  std::string identifier() {
    skip();
    const std::size_t start = i_;
    while (i_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' || s_[i_] == '-' ||
                              s_[i_] == ':' || s_[i_] == '.'))
      ++i_;
    return s_.substr(start, i_ - start);
  }
  // Each argument is an expression, or a name (a GPU id such as a100-80gb-sxm4, fp16, triad).
  FigureArgs arguments() {
    FigureArgs a;
    if (eat(')')) return a;
    do {
      skip();
      const std::size_t at = i_;
      const bool is_name = i_ < s_.size() && std::isalpha(static_cast<unsigned char>(s_[i_]));
      if (is_name) {
        const std::string id = identifier();
        skip();
        if (i_ < s_.size() && s_[i_] == '(') {  // a call: parse it as an expression from its start
          i_ = at;
          a.v.push_back({sum(), ""});
        } else {
          a.v.push_back({0, id});
        }
      } else {
        a.v.push_back({sum(), ""});
      }
    } while (eat(','));
    if (!eat(')')) fail("missing ) after the arguments");
    return a;
  }
};

// A unit a mark converts its value to ("in GiB"): the value is divided by the scale ("%": times 100).
double unit_scale(const std::string& unit) {
  static const std::map<std::string, double> units = {
      {"%", 0.01},  {"k", 1e3},    {"M", 1e6},    {"G", 1e9},         {"T", 1e12},   {"KB", 1e3},
      {"MB", 1e6},  {"GB", 1e9},   {"TB", 1e12},  {"KiB", 1024.0},    {"MiB", 1 << 20}, {"GiB", 1 << 30},
      {"ms", 1e-3}, {"us", 1e-6},  {"ns", 1e-9},  {"GB/s", 1e9},      {"TB/s", 1e12}, {"TFLOP/s", 1e12}};
  const auto it = units.find(unit);
  if (it == units.end()) throw std::invalid_argument("unknown unit " + unit);
  return it->second;
}

// The value of a mark's expression, with its optional trailing "in UNIT".
double evaluate(const std::string& mark, const Scope& scope) {
  static const std::regex in_unit(R"(^([\s\S]*\S)\s+in\s+(\S+)\s*$)");
  std::smatch m;
  if (std::regex_match(mark, m, in_unit)) return Parser(m[1], scope).parse() / unit_scale(m[2]);
  return Parser(mark, scope).parse();
}

// A printed figure and the value it claims to round: "1,741" or "62.1" shows the value to the digits after
// the point; "" when it does.
std::string compare(const std::string& printed, double value) {
  std::string digits;
  for (char c : printed) {
    if (c != ',') digits += c;
  }
  const auto point = digits.find('.');
  const int decimals = point == std::string::npos ? 0 : static_cast<int>(digits.size() - point - 1);
  const double shown = std::stod(digits);
  const double half_step = 0.5 * std::pow(10.0, -decimals);
  if (std::isfinite(value) && std::fabs(shown - value) <= half_step * (1 + 1e-9)) return "";
  return fmt::format("prints {} but the figure is {:.{}f} ({:.6g})", printed, value, decimals, value);
}

struct Mark {
  int line = 0;
  std::string printed;  // the number the reader sees
  std::string expr;     // the mark's expression
};

// The marks of a Markdown text. Inline: `NUMBER<!-- fig: EXPR -->` (spaces allowed between). After a code
// block: `<!-- fig NUMBER: EXPR -->`, whose NUMBER must appear in the code block that ends just above.
// A mark whose number cannot be found comes back with printed "" (the check then fails). Inline code
// (`...`) is skipped: it shows a mark rather than hiding one, as docs/adding-a-lab.md does.
std::vector<Mark> find_marks(const std::string& text) {
  static const std::regex inline_mark(R"(([0-9][0-9,]*(?:\.[0-9]+)?)\s*<!--\s*fig:\s*([\s\S]*?)-->)");
  static const std::regex block_mark(R"(<!--\s*fig\s+([0-9][0-9,]*(?:\.[0-9]+)?)\s*:\s*([\s\S]*?)-->)");
  static const std::regex any_mark(R"(<!--\s*fig[\s:])");
  std::vector<Mark> marks;
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> block;  // the lines of the last code block
  bool in_block = false;
  static const std::regex code_span("`[^`]*`");  // shows its text as typed: a mark there is an example
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.rfind("```", 0) == 0) {
      if (!in_block) block.clear();
      in_block = !in_block;
      continue;
    }
    if (in_block) {
      block.push_back(line);
      continue;
    }
    line = std::regex_replace(line, code_span, "``");
    std::size_t found = 0;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), inline_mark); it != std::sregex_iterator(); ++it) {
      marks.push_back({n, (*it)[1], (*it)[2]});
      ++found;
    }
    for (auto it = std::sregex_iterator(line.begin(), line.end(), block_mark); it != std::sregex_iterator(); ++it) {
      const std::string printed = (*it)[1];
      bool shown = false;
      const std::regex as_token("(^|[^0-9.,])" + std::regex_replace(printed, std::regex(R"([.])"), R"(\.)") +
                                "(?![0-9,]|[.][0-9])");
      for (const auto& b : block) shown = shown || std::regex_search(b, as_token);
      marks.push_back({n, shown ? printed : "", (*it)[2]});
      ++found;
    }
    // Any other "<!-- fig" (a mark with no number before it, a typo) is a mark that cannot be checked.
    const auto all = std::distance(std::sregex_iterator(line.begin(), line.end(), any_mark), std::sregex_iterator());
    for (auto k = static_cast<std::size_t>(all); k > found; --k) marks.push_back({n, "", line});
    if (!line.empty() && line.find_first_not_of(" \t") != std::string::npos && line.find("<!--") == std::string::npos)
      block.clear();  // a block mark must follow its code block (blank lines and marks between are fine)
  }
  return marks;
}

struct Verdict {
  std::string why;          // "" when the mark holds, else why not
  std::string skipped_lab;  // the lab left out of this build that the mark names: not checked
};

Verdict check(const Mark& m, const Scope& scope) {
  if (m.printed.empty()) return {"a mark with no number before it (or, after a code block, a figure the block lacks): " + m.expr, ""};
  try {
    return {compare(m.printed, evaluate(m.expr, scope)), ""};
  } catch (const LabNotBuilt& e) {
    return {"", e.lab};
  } catch (const std::exception& e) {
    return {std::string("cannot evaluate: ") + e.what(), ""};
  }
}


// No lab's tables and no lab built: marks of data figures only, in any build.
const Scope& no_labs() {
  static const std::vector<FigureLab> none;
  static const Scope scope{none, {}};
  return scope;
}

// The mark of a one-mark text: its verdict in `scope`.
Verdict one(const std::string& text, const Scope& scope) {
  const auto marks = find_marks(text);
  EXPECT_EQ(marks.size(), 1u) << text;
  return marks.empty() ? Verdict{"no mark", ""} : check(marks[0], scope);
}

}  // namespace

// The checker itself: a right figure passes, a wrong one, a misrounded one, an unknown name and a number the
// block lacks each fail. The data's figures only (A100 80GB: 312 TFLOP/s FP16, 2039 GB/s), so that it checks
// the same in a build of any labs.
TEST(HandoutFigures, TheCheckCanFail) {
  const auto why = [](const std::string& text) { return one(text, no_labs()).why; };
  const std::string ridge = "gpu::peak_tflops(a100-80gb-sxm4, fp16) * 1000 / gpu::bandwidth_gbps(a100-80gb-sxm4)";
  const std::string floor = "3 * 4 * 2^28 / (gpu::bandwidth_gbps(a100-80gb-sxm4) * 1e9) in ms";
  EXPECT_EQ(why("ridge 153<!-- fig: " + ridge + " --> FLOP/byte"), "");
  EXPECT_EQ(why("ridge 153.0 <!-- fig: " + ridge + " -->"), "");
  EXPECT_NE(why("ridge 154<!-- fig: " + ridge + " -->"), "");
  EXPECT_NE(why("ridge 153.5<!-- fig: " + ridge + " -->"), "");
  EXPECT_EQ(why("2,039<!-- fig: gpu::bandwidth_gbps(a100-80gb-sxm4) --> GB/s"), "");
  EXPECT_NE(why("2.04<!-- fig: gpu::bandwidth_gbps(a100-80gb-sxm4) in GB/s --> TB/s"), "") << "GB/s is 1e9";
  EXPECT_NE(why("1,536 MiB<!-- fig: 3 * 2^29 in MiB -->"), "") << "the mark must follow the number itself";
  EXPECT_EQ(why("1,536<!-- fig: 3 * 2^29 in MiB --> MiB"), "");
  EXPECT_EQ(why("65<!-- fig: (4096 + 64) / 64 -->"), "");
  EXPECT_NE(why("65<!-- fig: gpu::no_such_figure(1) -->"), "");
  EXPECT_NE(why("x <!-- fig: 1 -->"), "");
  EXPECT_TRUE(find_marks("write `154<!-- fig: " + ridge + " -->`").empty());
  EXPECT_EQ(why("```\nfloor = 1.58 ms\n```\n<!-- fig 1.58: " + floor + " -->"), "");
  EXPECT_NE(why("```\nfloor = 1.59 ms\n```\n<!-- fig 1.58: " + floor + " -->"), "");
  EXPECT_NE(why("```\nfloor = 1.58 ms\n```\ntext\n<!-- fig 1.58: " + floor + " -->"), "");
}

// A lab's name leads to its own table: its figures evaluate, a name its table lacks fails, a built lab
// without a table fails, a lab that does not exist fails, and a real lab this build leaves out is skipped.
TEST(HandoutFigures, LabMarksUseTheLabsTables) {
  const std::vector<FigureLab> tables = {{"01", {{"answer", [](const FigureArgs&) { return 42.0; }}}}};
  const Scope scope{tables, {"01", "03"}};
  EXPECT_EQ(one("42<!-- fig: lab01::answer() -->", scope).why, "");
  EXPECT_NE(one("41<!-- fig: lab01::answer() -->", scope).why, "");
  EXPECT_NE(one("42<!-- fig: lab01::no_such_figure(1) -->", scope).why.find("no figure named lab01::no_such_figure"),
            std::string::npos);
  EXPECT_NE(one("42<!-- fig: lab03::answer() -->", scope).why.find("lab 03 offers none"), std::string::npos);
  EXPECT_NE(one("42<!-- fig: lab99::answer() -->", scope).why.find("there is no lab 99"), std::string::npos);
  const Verdict left_out = one("153<!-- fig: lab02::ridge_point(a100-80gb-sxm4, fp16) -->", scope);
  EXPECT_EQ(left_out.why, "");
  EXPECT_EQ(left_out.skipped_lab, "02");
}

// The build's wiring (rooflab_add_lab): every built lab whose folder has tests/figures.cpp has its table in
// this binary, once, and no table comes from a lab the build leaves out.
TEST(HandoutFigures, EveryBuiltLabsTableIsLinked) {
  const Scope& scope = this_build();
  std::map<std::string, int> tables;
  for (const auto& t : scope.labs) {
    ++tables[t.id];
    EXPECT_EQ(scope.built.count(t.id), 1u) << "lab " << t.id << " has a figure table but is not in this build";
  }
  for (const auto& lab : rooflab::grader::load_manifest(ROOFLAB_BUILD_DIR).labs) {
    const int want = fs::exists(lab.dir / "tests" / "figures.cpp") ? 1 : 0;
    EXPECT_EQ(tables[lab.id], want) << "lab " << lab.id << ": tables linked into the figures test";
  }
}

// Every mark in every handout and chapter holds, and the paragraphs that once printed wrong figures stay marked.
TEST(HandoutFigures, EveryMarkedFigureIsTrue) {
  const fs::path root = ROOFLAB_SOURCE_DIR;
  std::vector<fs::path> files;
  for (const auto& dir : {root / "labs", root / "docs"}) {
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
      if (e.path().extension() == ".md" && e.path().string().find("/selftest/") == std::string::npos) files.push_back(e.path());
    }
  }
  std::map<std::string, std::size_t> marks_per_file;
  std::size_t checked = 0;
  std::map<std::string, std::size_t> skipped;  // per lab left out of this build
  for (const auto& f : files) {
    const std::string rel = fs::relative(f, root).string();
    for (const auto& m : find_marks(read_all(f))) {
      ++marks_per_file[rel];
      const Verdict v = check(m, this_build());
      if (!v.skipped_lab.empty()) {
        ++skipped["lab" + v.skipped_lab];
        continue;
      }
      EXPECT_EQ(v.why, "") << rel << ":" << m.line << ": " << v.why;
      ++checked;
    }
  }
  std::size_t not_checked = 0;
  for (const auto& [lab, n] : skipped) not_checked += n;
  std::string left_out;
  for (const auto& [lab, n] : skipped) left_out += fmt::format(" {} ({} marks)", lab, n);
  fmt::print("{} figure marks checked in {} files; {} skipped, naming labs not in this build:{}\n", checked,
             marks_per_file.size(), not_checked, left_out.empty() ? " none" : left_out);
  // A lab that offers figures marks some in its handout; the roofline chapter marks its figures.
  std::vector<std::string> must_mark = {"docs/roofline.md"};
  for (const auto& t : this_build().labs) must_mark.push_back(fs::relative(rooflab::lab_dir(t.id), root).string() + "/README.md");
  for (const auto& f : must_mark) EXPECT_GT(marks_per_file[f], 0u) << f << " has no figure marks";
}
