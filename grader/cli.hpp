// The command-line options of `grade` and `grade-class`, declared once: main.cpp's subcommands use them, and
// the grader's tests parse to_argv's output with them (grade_args.hpp), so what the grader writes for its own
// child processes is what it reads.
#pragma once

#include "grade_args.hpp"

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace rooflab::grader {

void add_grade_options(CLI::App& grade, GradeArgs& args);
// The options of grade-class (also the Slurm tasks' and the collection step's command line).
void add_class_options(CLI::App& grade_class, ClassArgs& args);

// Parses `argv` (to_argv's form: the subcommand's name first) as the CLI does; CLI::ParseError when it is
// not a valid command line. For the grader's tests.
GradeArgs parse_grade_argv(const std::vector<std::string>& argv);
ClassArgs parse_class_argv(const std::vector<std::string>& argv);

}  // namespace rooflab::grader
