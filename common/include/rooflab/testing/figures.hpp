// The figures a handout may mark, lab by lab. A handout (labs/NN-*/README.md) or a chapter of docs/ marks a
// computed number with `<!-- fig: lab02::ridge_point(a100-80gb-sxm4, fp16) -->`, and the grader's handout
// figures test (grader/tests/test_handout_figures.cpp) recomputes it with the lab's reference answers. Each
// lab says which figures it offers in its own tests/figures.cpp, a table of adapters from the mark's text
// arguments to its functions:
//
//   #include "lab.hpp"
//   #include <rooflab/testing/figures.hpp>
//   using rooflab::testing::FigureArgs;
//   ROOFLAB_FIGURES({
//       {"ridge_point", [](const FigureArgs& a) { return lab02::ridge_point(a.gpu(0), a.dtype(1)).value(); }},
//   });
//
// rooflab_add_lab (cmake/RooflabLab.cmake) compiles that file with the lab's solutions/NN-*/answers.cpp into
// the figures test, and gives it ROOFLAB_LAB_ID: the marks name the figure `lab02::ridge_point`. A lab
// without the file offers no figures. The adapters only call the lab's API (lab.hpp); the answers stay in
// solutions/.
#pragma once

#include <rooflab/specs.hpp>

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

namespace rooflab::testing {

// One argument of a mark: a number, or a name (a GPU or model id of data/*.json, a data type, an enum value).
struct FigureArg {
  double num = 0;
  std::string name;  // empty for a number
};

// A mark's arguments, read by position; a wrong kind or a missing argument throws std::invalid_argument, which
// the test reports as a mark it cannot evaluate.
class FigureArgs {
 public:
  std::vector<FigureArg> v;

  double num(std::size_t i) const;
  std::size_t size(std::size_t i) const;          // a number rounded to a count
  const std::string& name(std::size_t i) const;
  const GpuSpec& gpu(std::size_t i) const;        // a GPU id of data/gpus.json
  const ModelSpec& model(std::size_t i) const;    // a model id of data/models.json
  DType dtype(std::size_t i) const;               // fp64, fp32, tf32, fp16, bf16, fp8, int8 or fp16_nontensor
};

// A plain function pointer (a lambda without captures converts to one): no std::function to compile per
// adapter.
using FigureFn = double (*)(const FigureArgs&);

struct Figure {
  const char* name;  // the function's name within its lab: "ridge_point" is marked lab02::ridge_point
  FigureFn fn;
};

struct FigureLab {
  std::string id;  // "02"
  std::vector<Figure> figures;
};

// Every lab's table linked into this binary, in the order their objects initialize.
std::vector<FigureLab>& figure_labs();

// One lab's table, added to figure_labs() when its object initializes (ROOFLAB_FIGURES).
struct RegisterFigures {
  RegisterFigures(const char* lab_id, std::initializer_list<Figure> figures);
};

// The functions above are defined by the figures test, the one binary the tables are linked into: a lab's
// object then holds its adapters and nothing else to compile.

}  // namespace rooflab::testing

// A lab's figure table, in its tests/figures.cpp; the lab id comes from the build (its folder's name).
#define ROOFLAB_FIGURES(...) \
  static const ::rooflab::testing::RegisterFigures rooflab_figures_of_this_lab{ROOFLAB_LAB_ID, __VA_ARGS__}
