// Lab 05's figures a handout may mark (`<!-- fig: lab05::intensity(32, 4096, 128, flash, 2) -->`): adapters
// from a mark's text arguments to this lab's API, checked against the reference answers by the grader's
// handout figures test (rooflab/testing/figures.hpp says how).
#include "lab.hpp"

#include <rooflab/testing/figures.hpp>

#include <stdexcept>
#include <string>

using rooflab::testing::FigureArgs;

namespace {

lab05::Path attention_path(const std::string& s) {
  if (s == "naive") return lab05::Path::naive;
  if (s == "flash") return lab05::Path::flash;
  throw std::invalid_argument("unknown attention path " + s);
}

// The attention shape batch_heads, L, d: a mark's first three arguments.
lab05::Shape shape(const FigureArgs& a) { return {a.size(0), a.size(1), a.size(2), false}; }

// The smallest L at which Flash attention (head dim d, FP16) is compute-bound on a GPU: the lab's own
// compute_bound, searched upward (its intensity grows with L, so the first L found is the crossover).
double flash_crossover_len(const rooflab::GpuSpec& gpu, std::size_t d) {
  for (std::size_t len = 1; len <= (std::size_t{1} << 24); ++len) {
    if (lab05::compute_bound({1, len, d, false}, lab05::Path::flash, 2.0, gpu)) return static_cast<double>(len);
  }
  return 0;
}

}  // namespace

ROOFLAB_FIGURES({
    {"naive_over_flash_bytes",
     [](const FigureArgs& a) { return lab05::naive_bytes(shape(a), a.num(3)) / lab05::flash_bytes(shape(a), a.num(3)); }},
    // The L x L scores matrix over Q, K, V and O together.
    {"scores_over_qkvo_bytes",
     [](const FigureArgs& a) {
       return lab05::naive_extra_bytes(shape(a), a.num(3)) / lab05::flash_bytes(shape(a), a.num(3));
     }},
    {"naive_extra_bytes", [](const FigureArgs& a) { return lab05::naive_extra_bytes(shape(a), a.num(3)); }},
    {"intensity",
     [](const FigureArgs& a) { return lab05::intensity(shape(a), attention_path(a.name(3)), a.num(4)); }},
    // How many GPUs of data/gpus.json hold the scores matrices: batch_heads, L and the element size.
    {"gpus_holding_scores",
     [](const FigureArgs& a) {
       double n = 0;
       for (const auto& g : rooflab::gpus()) n += lab05::longest_fitting_len(a.size(0), a.num(2), g) >= a.size(1);
       return n;
     }},
    {"flash_crossover_len", [](const FigureArgs& a) { return flash_crossover_len(a.gpu(0), a.size(1)); }},
});
