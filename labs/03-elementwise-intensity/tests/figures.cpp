// Lab 03's figures a handout may mark (`<!-- fig: lab03::gelu_intensity(2) -->`): adapters from a mark's text
// arguments to this lab's API, checked against the reference answers by the grader's handout figures test
// (rooflab/testing/figures.hpp says how).
#include "lab.hpp"

#include <rooflab/testing/figures.hpp>

using rooflab::testing::FigureArgs;

namespace {

// LayerNorm over [b, l, d] at e bytes per element: a mark's first four arguments.
lab03::Cost layernorm(const FigureArgs& a) { return lab03::layernorm(a.size(0), a.size(1), a.size(2), a.size(3)); }

// An elementwise kernel's intensity does not depend on its length: the marks give the element size only.
constexpr std::size_t kAnyLength = std::size_t{1} << 20;

}  // namespace

ROOFLAB_FIGURES({
    {"layernorm_flops", [](const FigureArgs& a) { return layernorm(a).flops; }},
    {"layernorm_bytes", [](const FigureArgs& a) { return layernorm(a).bytes; }},
    {"layernorm_intensity", [](const FigureArgs& a) { return lab03::intensity(layernorm(a)); }},
    {"layernorm_time_s",
     [](const FigureArgs& a) { return lab03::predicted_time_s(layernorm(a), a.gpu(4), a.dtype(5)); }},
    {"gelu_intensity", [](const FigureArgs& a) { return lab03::intensity(lab03::gelu(kAnyLength, a.size(0))); }},
    {"add_intensity", [](const FigureArgs& a) { return lab03::intensity(lab03::add(kAnyLength, a.size(0))); }},
});
