// Lab 07's figures a handout may mark (`<!-- fig: lab07::weight_bytes(llama-3-8b, 2) in GB -->`): adapters
// from a mark's text arguments to this lab's API, checked against the reference answers by the grader's
// handout figures test (rooflab/testing/figures.hpp says how).
#include "lab.hpp"

#include <rooflab/testing/figures.hpp>

using rooflab::testing::FigureArgs;

ROOFLAB_FIGURES({
    {"weight_bytes", [](const FigureArgs& a) { return lab07::weight_bytes(a.model(0), a.num(1)); }},
    {"linear_intensity",
     [](const FigureArgs& a) { return lab07::linear_intensity(a.size(0), a.size(1), a.size(2), a.num(3)); }},
    {"crossover_batch",
     [](const FigureArgs& a) {
       return static_cast<double>(lab07::crossover_batch(a.size(0), a.size(1), a.gpu(2), a.dtype(3), a.num(4)));
     }},
    {"tokens_per_s",
     [](const FigureArgs& a) {
       return lab07::tokens_per_s(a.model(0), a.gpu(1), a.size(2), a.size(3), a.num(4), a.num(5), a.dtype(6));
     }},
    {"moe_batch1_floor_s",
     [](const FigureArgs& a) { return lab07::moe_batch1_floor_s(a.model(0), a.gpu(1), a.num(2)); }},
});
