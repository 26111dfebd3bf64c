// Lab 01's figures a handout may mark (`<!-- fig: lab01::time_floor_s(triad, 2^28, a100-80gb-sxm4) in ms -->`):
// adapters from a mark's text arguments to this lab's API, checked against the reference answers by the
// grader's handout figures test (rooflab/testing/figures.hpp says how).
#include "lab.hpp"

#include <rooflab/testing/figures.hpp>

#include <stdexcept>
#include <string>

using rooflab::testing::FigureArgs;

namespace {

// A STREAM kernel by the name the handout uses, lab01::name's inverse.
lab01::StreamOp stream_op(const std::string& s) {
  for (const auto op : lab01::kStreamOps) {
    if (lab01::name(op) == s) return op;
  }
  throw std::invalid_argument("unknown STREAM kernel " + s);
}

}  // namespace

ROOFLAB_FIGURES({
    {"stream_bytes",
     [](const FigureArgs& a) { return lab01::stream_bytes(stream_op(a.name(0)), a.size(1), a.size(2)); }},
    {"time_floor_s",
     [](const FigureArgs& a) { return lab01::time_floor_s(stream_op(a.name(0)), a.size(1), a.gpu(2)); }},
    {"achieved_gbps", [](const FigureArgs& a) { return lab01::achieved_gbps(a.num(0), a.num(1)); }},
    {"strided_dram_bytes",
     [](const FigureArgs& a) { return lab01::strided_dram_bytes(a.size(0), a.size(1), a.size(2), a.size(3)); }},
    {"strided_efficiency",
     [](const FigureArgs& a) { return lab01::strided_efficiency(a.size(0), a.size(1), a.size(2)); }},
    {"gb_to_gib", [](const FigureArgs& a) { return lab01::gb_to_gib(a.num(0)); }},
});
