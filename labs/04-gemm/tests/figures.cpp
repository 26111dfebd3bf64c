// Lab 04's figures a handout may mark (`<!-- fig: lab04::ideal_intensity(4096, 4096, 4096, 2, 2) -->`):
// adapters from a mark's text arguments to this lab's API, checked against the reference answers by the
// grader's handout figures test (rooflab/testing/figures.hpp says how).
#include "lab.hpp"

#include <rooflab/testing/figures.hpp>

using rooflab::testing::FigureArgs;

namespace {

// The GEMM shape M, N, K: a mark's first three arguments.
lab04::Shape shape(const FigureArgs& a) { return {a.size(0), a.size(1), a.size(2)}; }

}  // namespace

ROOFLAB_FIGURES({
    {"smem_per_block",
     [](const FigureArgs& a) {
       return static_cast<double>(
           lab04::smem_per_block(a.size(0), a.size(1), a.size(2), a.size(3), static_cast<int>(a.num(4))));
     }},
    {"ideal_intensity", [](const FigureArgs& a) { return lab04::ideal_intensity(shape(a), a.size(3), a.size(4)); }},
    {"tiled_intensity",
     [](const FigureArgs& a) {
       return lab04::tiled_intensity(shape(a), a.size(3), a.size(4), a.size(5), a.size(6));
     }},
    // FLOPs done over FLOPs needed when the shape is padded to a multiple.
    {"padding_waste_factor",
     [](const FigureArgs& a) {
       return (lab04::flops(shape(a)) + lab04::padding_waste_flops(shape(a), a.size(3))) / lab04::flops(shape(a));
     }},
});
