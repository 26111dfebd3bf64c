// Lab 02's figures a handout may mark (`<!-- fig: lab02::ridge_point(a100-80gb-sxm4, fp16) -->`): adapters
// from a mark's text arguments to this lab's API, checked against the reference answers by the grader's
// handout figures test (rooflab/testing/figures.hpp says how).
#include "lab.hpp"

#include <rooflab/testing/figures.hpp>

using rooflab::testing::FigureArgs;

ROOFLAB_FIGURES({
    {"ridge_point", [](const FigureArgs& a) { return lab02::ridge_point(a.gpu(0), a.dtype(1)).value(); }},
    {"attainable_flops",
     [](const FigureArgs& a) { return lab02::attainable_flops(a.num(0), a.gpu(1), a.dtype(2)); }},
    {"fraction_of_peak",
     [](const FigureArgs& a) { return lab02::fraction_of_peak(a.num(0), a.gpu(1), a.dtype(2)); }},
    {"decode_step_s",
     [](const FigureArgs& a) {
       return lab02::decode_step_s(a.num(0), a.num(1), static_cast<int>(a.size(2)), a.gpu(3), a.dtype(4));
     }},
    {"fp32_peak_flops",
     [](const FigureArgs& a) {
       return lab02::fp32_peak_flops(static_cast<int>(a.num(0)), static_cast<int>(a.num(1)), a.num(2));
     }},
});
