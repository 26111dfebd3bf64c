// `rooflab new-lab NN NAME`: scaffolds a lab from the one template kept in the repository (templates/lab/):
// labs/NN-NAME/ and solutions/NN-NAME/, and the one line in labs/CMakeLists.txt that registers it. What it
// writes builds, grades (the stub scores 0, "not implemented"; the scaffolded solution full marks) and passes
// its selftest; docs/adding-a-lab.md says which files to fill in next.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace rooflab::grader {

struct NewLabArgs {
  std::string id;     // "09": two digits
  std::string name;   // "scale-demo": lower-case letters, digits and single dashes
  std::string title;  // for the grader's tables; default: the name in words ("Scale demo")
  std::filesystem::path root;  // the course's top folder (labs/, solutions/, templates/)
};

// What new-lab refuses, in words, or "" when the id and name are fine for this course: not two digits, a
// name outside [a-z0-9-], an id or name a lab already has (in labs/, solutions/ or labs/CMakeLists.txt).
std::string new_lab_refusal(const NewLabArgs& args);

// The template's placeholders and what they become for this lab: @LAB_ID@ 09, @LAB_NAME@ scale-demo,
// @LAB_DIR@ 09-scale-demo, @LAB_NS@ lab09, @LAB_SUITE@ Lab09, @LAB_TITLE@ the title.
std::map<std::string, std::string> new_lab_placeholders(const NewLabArgs& args);

// `text` with every placeholder replaced; throws std::runtime_error naming `where` when an @LAB_...@ is left
// (a placeholder the template uses that new-lab does not know).
std::string fill_placeholders(const std::string& text, const std::map<std::string, std::string>& values,
                              const std::string& where);

// labs/CMakeLists.txt with `add_subdirectory(dir)` inserted in course order (after the last lab with a
// smaller id); throws std::runtime_error when the file has no add_subdirectory line to place it by.
std::string with_registration(const std::string& labs_cmake, const std::string& dir);

// Scaffolds the lab; prints what it made and what to fill in. Throws std::invalid_argument (a usage error)
// with new_lab_refusal's reason; on any other failure removes what it wrote and rethrows.
int cmd_new_lab(const NewLabArgs& args);

}  // namespace rooflab::grader
