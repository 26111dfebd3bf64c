// Lab 06's figures a handout may mark (`<!-- fig: lab06::kv_bytes_per_token(llama-3-8b, 2) in KiB -->`):
// adapters from a mark's text arguments to this lab's API, checked against the reference answers by the
// grader's handout figures test (rooflab/testing/figures.hpp says how).
#include "lab.hpp"

#include <rooflab/testing/figures.hpp>

using rooflab::testing::FigureArgs;

ROOFLAB_FIGURES({
    {"kv_bytes_per_token", [](const FigureArgs& a) { return lab06::kv_bytes_per_token(a.model(0), a.num(1)); }},
    {"kv_gb_per_sequence",
     [](const FigureArgs& a) { return lab06::kv_gb_per_sequence(a.model(0), a.size(1), a.num(2)); }},
    {"max_batch",
     [](const FigureArgs& a) {
       return static_cast<double>(lab06::max_batch(a.model(0), a.gpu(1), a.size(2), a.num(3), a.num(4), a.num(5)));
     }},
    {"kv_gib_for_batch",
     [](const FigureArgs& a) { return lab06::kv_gib_for_batch(a.model(0), a.size(1), a.size(2), a.num(3)); }},
});
