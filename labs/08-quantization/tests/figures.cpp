// Lab 08's figures a handout may mark (`<!-- fig: lab08::model_bytes(llama-3-8b, q4_0) in GB -->`): adapters
// from a mark's text arguments to this lab's API, checked against the reference answers by the grader's
// handout figures test (rooflab/testing/figures.hpp says how).
#include "lab.hpp"

#include <rooflab/testing/figures.hpp>

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

using rooflab::testing::FigureArgs;

namespace {

// A weight format by the short name the marks use (the formats' own names are the handout's long ones).
const lab08::BlockFormat& block_format(const std::string& s) {
  static constexpr std::pair<std::string_view, const lab08::BlockFormat*> kNames[] = {
      {"fp16", &lab08::kFp16}, {"q8_0", &lab08::kQ8_0},           {"q4_0", &lab08::kQ4_0},
      {"q4_1", &lab08::kQ4_1}, {"int4_g128", &lab08::kInt4G128}, {"gptq4_g128", &lab08::kGptq4G128}};
  for (const auto& [name, format] : kNames) {
    if (name == s) return *format;
  }
  throw std::invalid_argument("unknown weight format " + s);
}

}  // namespace

ROOFLAB_FIGURES({
    {"bits_per_weight", [](const FigureArgs& a) { return lab08::bits_per_weight(block_format(a.name(0))); }},
    {"model_bytes", [](const FigureArgs& a) { return lab08::model_bytes(a.model(0), block_format(a.name(1))); }},
    {"decode_floor_s",
     [](const FigureArgs& a) { return lab08::decode_floor_s(a.model(0), a.gpu(1), block_format(a.name(2))); }},
    {"int8_ridge", [](const FigureArgs& a) { return lab08::int8_ridge(a.gpu(0)); }},
});
