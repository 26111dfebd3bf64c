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
// grader. They are compiled once more into this binary (grader/CMakeLists.txt); each lab's functions live in
// its own namespace, so the eight files link side by side. Each mark name below is a thin adapter from text
// arguments (numbers, GPU and model ids of data/*.json, enum names) to one of those functions.
#include "../../labs/01-memory-bandwidth/lab.hpp"
#include "../../labs/02-ridge-point/lab.hpp"
#include "../../labs/03-elementwise-intensity/lab.hpp"
#include "../../labs/04-gemm/lab.hpp"
#include "../../labs/05-attention/lab.hpp"
#include "../../labs/06-kv-cache/lab.hpp"
#include "../../labs/07-decode-batching/lab.hpp"
#include "../../labs/08-quantization/lab.hpp"

#include <rooflab/specs.hpp>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// ---- arguments: a number, or a name (a GPU, a model, a data type, an enum value) ----

struct Arg {
  double num = 0;
  std::string name;  // empty for a number
};

struct Args {
  std::vector<Arg> v;
  double num(std::size_t i) const {
    at(i);
    if (!v[i].name.empty()) throw std::invalid_argument("argument " + std::to_string(i + 1) + " must be a number, not " + v[i].name);
    return v[i].num;
  }
  std::size_t size(std::size_t i) const { return static_cast<std::size_t>(std::llround(num(i))); }
  const std::string& name(std::size_t i) const {
    at(i);
    if (v[i].name.empty()) throw std::invalid_argument("argument " + std::to_string(i + 1) + " must be a name");
    return v[i].name;
  }
  const rooflab::GpuSpec& gpu(std::size_t i) const { return rooflab::gpu(name(i)); }
  const rooflab::ModelSpec& model(std::size_t i) const { return rooflab::model(name(i)); }
  rooflab::DType dtype(std::size_t i) const {
    static const std::map<std::string, rooflab::DType> types = {
        {"fp64", rooflab::DType::fp64}, {"fp32", rooflab::DType::fp32}, {"tf32", rooflab::DType::tf32},
        {"fp16", rooflab::DType::fp16}, {"bf16", rooflab::DType::bf16}, {"fp8", rooflab::DType::fp8},
        {"int8", rooflab::DType::int8}};
    const auto it = types.find(name(i));
    if (it == types.end()) throw std::invalid_argument("unknown data type " + name(i));
    return it->second;
  }
  void at(std::size_t i) const {
    if (i >= v.size()) throw std::invalid_argument("too few arguments");
  }
};

using Figure = std::function<double(const Args&)>;

lab01::StreamOp stream_op(const std::string& s) {
  static const std::map<std::string, lab01::StreamOp> ops = {
      {"copy", lab01::StreamOp::copy}, {"scale", lab01::StreamOp::scale}, {"add", lab01::StreamOp::add},
      {"triad", lab01::StreamOp::triad}};
  const auto it = ops.find(s);
  if (it == ops.end()) throw std::invalid_argument("unknown STREAM kernel " + s);
  return it->second;
}

lab05::Path attention_path(const std::string& s) {
  if (s == "naive") return lab05::Path::naive;
  if (s == "flash") return lab05::Path::flash;
  throw std::invalid_argument("unknown attention path " + s);
}

const lab08::BlockFormat& block_format(const std::string& s) {
  static const std::map<std::string, const lab08::BlockFormat*> formats = {
      {"fp16", &lab08::kFp16}, {"q8_0", &lab08::kQ8_0}, {"q4_0", &lab08::kQ4_0}, {"q4_1", &lab08::kQ4_1},
      {"int4_g128", &lab08::kInt4G128}, {"gptq4_g128", &lab08::kGptq4G128}};
  const auto it = formats.find(s);
  if (it == formats.end()) throw std::invalid_argument("unknown weight format " + s);
  return *it->second;
}

// Lab 05's shapes: batch_heads, L, d.
lab05::Shape attention_shape(const Args& a) { return {a.size(0), a.size(1), a.size(2), false}; }

// The smallest L at which Flash attention (head dim d, FP16) is compute-bound on a GPU: Lab 05's own
// compute_bound, searched upward (its intensity grows with L, so the first L found is the crossover).
double flash_crossover_len(const rooflab::GpuSpec& gpu, std::size_t d) {
  for (std::size_t len = 1; len <= (1u << 24); ++len) {
    if (lab05::compute_bound({1, len, d, false}, lab05::Path::flash, 2.0, gpu)) return static_cast<double>(len);
  }
  return 0;
}

// The figures a mark may name. Names are the lab's function where there is one; a few combine functions
// (named for what they count) where a sentence states a ratio or a count over the data.
const std::map<std::string, Figure>& figures() {
  static const std::map<std::string, Figure> table = {
      // data/*.json, as the labs read it
      {"gpu::bandwidth_gbps", [](const Args& a) { return a.gpu(0).bandwidth_gbps; }},
      {"gpu::peak_tflops", [](const Args& a) { return rooflab::peak_flops(a.gpu(0), a.dtype(1)).value() / 1e12; }},
      {"gpu::count", [](const Args&) { return static_cast<double>(rooflab::gpus().size()); }},
      {"model::params_b", [](const Args& a) { return a.model(0).params_b; }},
      // Lab 01
      {"lab01::stream_bytes",
       [](const Args& a) { return lab01::stream_bytes(stream_op(a.name(0)), a.size(1), a.size(2)); }},
      {"lab01::time_floor_s",
       [](const Args& a) { return lab01::time_floor_s(stream_op(a.name(0)), a.size(1), a.gpu(2)); }},
      {"lab01::achieved_gbps", [](const Args& a) { return lab01::achieved_gbps(a.num(0), a.num(1)); }},
      {"lab01::strided_dram_bytes",
       [](const Args& a) { return lab01::strided_dram_bytes(a.size(0), a.size(1), a.size(2), a.size(3)); }},
      {"lab01::strided_efficiency",
       [](const Args& a) { return lab01::strided_efficiency(a.size(0), a.size(1), a.size(2)); }},
      {"lab01::gb_to_gib", [](const Args& a) { return lab01::gb_to_gib(a.num(0)); }},
      // Lab 02
      {"lab02::ridge_point", [](const Args& a) { return lab02::ridge_point(a.gpu(0), a.dtype(1)).value(); }},
      {"lab02::attainable_flops",
       [](const Args& a) { return lab02::attainable_flops(a.num(0), a.gpu(1), a.dtype(2)); }},
      {"lab02::fraction_of_peak",
       [](const Args& a) { return lab02::fraction_of_peak(a.num(0), a.gpu(1), a.dtype(2)); }},
      {"lab02::fp32_peak_flops",
       [](const Args& a) { return lab02::fp32_peak_flops(static_cast<int>(a.num(0)), static_cast<int>(a.num(1)), a.num(2)); }},
      // Lab 03: LayerNorm [b, l, d] at e bytes
      {"lab03::layernorm_flops",
       [](const Args& a) { return lab03::layernorm(a.size(0), a.size(1), a.size(2), a.size(3)).flops; }},
      {"lab03::layernorm_bytes",
       [](const Args& a) { return lab03::layernorm(a.size(0), a.size(1), a.size(2), a.size(3)).bytes; }},
      {"lab03::layernorm_intensity",
       [](const Args& a) { return lab03::intensity(lab03::layernorm(a.size(0), a.size(1), a.size(2), a.size(3))); }},
      {"lab03::layernorm_time_s", [](const Args& a) {
         return lab03::predicted_time_s(lab03::layernorm(a.size(0), a.size(1), a.size(2), a.size(3)), a.gpu(4), a.dtype(5));
       }},
      {"lab03::gelu_intensity", [](const Args& a) { return lab03::intensity(lab03::gelu(1 << 20, a.size(0))); }},
      {"lab03::add_intensity", [](const Args& a) { return lab03::intensity(lab03::add(1 << 20, a.size(0))); }},
      // Lab 04
      {"lab04::smem_per_block", [](const Args& a) {
         return static_cast<double>(lab04::smem_per_block(a.size(0), a.size(1), a.size(2), a.size(3), static_cast<int>(a.num(4))));
       }},
      {"lab04::ideal_intensity", [](const Args& a) {
         return lab04::ideal_intensity({a.size(0), a.size(1), a.size(2)}, a.size(3), a.size(4));
       }},
      {"lab04::tiled_intensity", [](const Args& a) {
         return lab04::tiled_intensity({a.size(0), a.size(1), a.size(2)}, a.size(3), a.size(4), a.size(5), a.size(6));
       }},
      {"lab04::padding_waste_factor", [](const Args& a) {  // FLOPs done over FLOPs needed
         const lab04::Shape s{a.size(0), a.size(1), a.size(2)};
         return (lab04::flops(s) + lab04::padding_waste_flops(s, a.size(3))) / lab04::flops(s);
       }},
      // Lab 05
      {"lab05::naive_over_flash_bytes", [](const Args& a) {
         return lab05::naive_bytes(attention_shape(a), a.num(3)) / lab05::flash_bytes(attention_shape(a), a.num(3));
       }},
      {"lab05::scores_over_qkvo_bytes", [](const Args& a) {  // the L x L matrix over Q, K, V and O together
         return lab05::naive_extra_bytes(attention_shape(a), a.num(3)) / lab05::flash_bytes(attention_shape(a), a.num(3));
       }},
      {"lab05::naive_extra_bytes",
       [](const Args& a) { return lab05::naive_extra_bytes(attention_shape(a), a.num(3)); }},
      {"lab05::intensity", [](const Args& a) {
         return lab05::intensity(attention_shape(a), attention_path(a.name(3)), a.num(4));
       }},
      {"lab05::gpus_holding_scores", [](const Args& a) {  // GPUs of the data whose memory holds the matrices
         double n = 0;
         for (const auto& g : rooflab::gpus()) n += lab05::longest_fitting_len(a.size(0), a.num(2), g) >= a.size(1);
         return n;
       }},
      {"lab05::flash_crossover_len", [](const Args& a) { return flash_crossover_len(a.gpu(0), a.size(1)); }},
      // Lab 06
      {"lab06::kv_bytes_per_token", [](const Args& a) { return lab06::kv_bytes_per_token(a.model(0), a.num(1)); }},
      {"lab06::kv_gb_per_sequence",
       [](const Args& a) { return lab06::kv_gb_per_sequence(a.model(0), a.size(1), a.num(2)); }},
      {"lab06::max_batch", [](const Args& a) {
         return static_cast<double>(lab06::max_batch(a.model(0), a.gpu(1), a.size(2), a.num(3), a.num(4), a.num(5)));
       }},
      {"lab06::kv_gib_for_batch",
       [](const Args& a) { return lab06::kv_gib_for_batch(a.model(0), a.size(1), a.size(2), a.num(3)); }},
      // Lab 07
      {"lab07::weight_bytes", [](const Args& a) { return lab07::weight_bytes(a.model(0), a.num(1)); }},
      {"lab07::linear_intensity",
       [](const Args& a) { return lab07::linear_intensity(a.size(0), a.size(1), a.size(2), a.num(3)); }},
      {"lab07::crossover_batch", [](const Args& a) {
         return static_cast<double>(lab07::crossover_batch(a.size(0), a.size(1), a.gpu(2), a.dtype(3), a.num(4)));
       }},
      {"lab07::tokens_per_s", [](const Args& a) {
         return lab07::tokens_per_s(a.model(0), a.gpu(1), a.size(2), a.size(3), a.num(4), a.num(5), a.dtype(6));
       }},
      {"lab07::moe_batch1_floor_s",
       [](const Args& a) { return lab07::moe_batch1_floor_s(a.model(0), a.gpu(1), a.num(2)); }},
      // Lab 08
      {"lab08::bits_per_weight", [](const Args& a) { return lab08::bits_per_weight(block_format(a.name(0))); }},
      {"lab08::model_bytes", [](const Args& a) { return lab08::model_bytes(a.model(0), block_format(a.name(1))); }},
      {"lab08::decode_floor_s",
       [](const Args& a) { return lab08::decode_floor_s(a.model(0), a.gpu(1), block_format(a.name(2))); }},
      {"lab08::int8_ridge", [](const Args& a) { return lab08::int8_ridge(a.gpu(0)); }},
  };
  return table;
}

// ---- the expression of a mark: calls, numbers (2^28, 1.85e-3) and + - * / with parentheses ----

class Parser {
 public:
  explicit Parser(std::string text) : s_(std::move(text)) {}
  double parse() {
    const double v = sum();
    skip();
    if (i_ != s_.size()) fail("unexpected text");
    return v;
  }

 private:
  std::string s_;
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
    const auto it = figures().find(id);
    if (it == figures().end()) fail("no figure named " + id + " (test_handout_figures.cpp lists them)");
    return it->second(arguments());
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
  Args arguments() {
    Args a;
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
double evaluate(const std::string& mark) {
  static const std::regex in_unit(R"(^([\s\S]*\S)\s+in\s+(\S+)\s*$)");
  std::smatch m;
  if (std::regex_match(mark, m, in_unit)) return Parser(m[1]).parse() / unit_scale(m[2]);
  return Parser(mark).parse();
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

// "" when the mark holds, else why not.
std::string check(const Mark& m) {
  if (m.printed.empty()) return "a mark with no number before it (or, after a code block, a figure the block lacks): " + m.expr;
  try {
    return compare(m.printed, evaluate(m.expr));
  } catch (const std::exception& e) {
    return std::string("cannot evaluate: ") + e.what();
  }
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

// The checker itself: a right figure passes, a wrong one, a misrounded one, an unknown name and a number the
// block lacks each fail.
TEST(HandoutFigures, TheCheckCanFail) {
  const auto one = [](const std::string& text) {
    const auto marks = find_marks(text);
    EXPECT_EQ(marks.size(), 1u) << text;
    return marks.empty() ? std::string("no mark") : check(marks[0]);
  };
  EXPECT_EQ(one("ridge 153<!-- fig: lab02::ridge_point(a100-80gb-sxm4, fp16) --> FLOP/byte"), "");
  EXPECT_EQ(one("ridge 153.0 <!-- fig: lab02::ridge_point(a100-80gb-sxm4, fp16) -->"), "");
  EXPECT_NE(one("ridge 154<!-- fig: lab02::ridge_point(a100-80gb-sxm4, fp16) -->"), "");
  EXPECT_NE(one("ridge 153.5<!-- fig: lab02::ridge_point(a100-80gb-sxm4, fp16) -->"), "");
  EXPECT_EQ(one("128<!-- fig: lab06::kv_bytes_per_token(llama-3-8b, 2) in KiB --> KiB"), "");
  EXPECT_NE(one("74.5<!-- fig: lab06::kv_bytes_per_token(llama-3-8b, 2) in KiB --> KiB"), "");
  EXPECT_NE(one("1,536 MiB<!-- fig: 3 * 2^29 in MiB -->"), "") << "the mark must follow the number itself";
  EXPECT_EQ(one("1,536<!-- fig: 3 * 2^29 in MiB --> MiB"), "");
  EXPECT_EQ(one("65<!-- fig: (4096 + 64) / 64 -->"), "");
  EXPECT_NE(one("65<!-- fig: lab02::no_such_figure(1) -->"), "");
  EXPECT_NE(one("x <!-- fig: 1 -->"), "");
  EXPECT_TRUE(find_marks("write `154<!-- fig: lab02::ridge_point(a100-80gb-sxm4, fp16) -->`").empty());
  EXPECT_EQ(one("```\nfloor = 1.58 ms\n```\n<!-- fig 1.58: lab01::time_floor_s(triad, 2^28, a100-80gb-sxm4) in ms -->"), "");
  EXPECT_NE(one("```\nfloor = 1.59 ms\n```\n<!-- fig 1.58: lab01::time_floor_s(triad, 2^28, a100-80gb-sxm4) in ms -->"), "");
  EXPECT_NE(one("```\nfloor = 1.58 ms\n```\ntext\n<!-- fig 1.58: lab01::time_floor_s(triad, 2^28, a100-80gb-sxm4) in ms -->"), "");
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
  for (const auto& f : files) {
    for (const auto& m : find_marks(read(f))) {
      const std::string why = check(m);
      EXPECT_EQ(why, "") << fs::relative(f, root).string() << ":" << m.line << ": " << why;
      ++marks_per_file[fs::relative(f, root).string()];
    }
  }
  for (const char* f : {"labs/01-memory-bandwidth/README.md", "labs/02-ridge-point/README.md",
                        "labs/03-elementwise-intensity/README.md", "labs/04-gemm/README.md", "labs/05-attention/README.md",
                        "labs/06-kv-cache/README.md", "labs/07-decode-batching/README.md",
                        "labs/08-quantization/README.md", "docs/roofline.md"}) {
    EXPECT_GT(marks_per_file[f], 0u) << f << " has no figure marks";
  }
}
