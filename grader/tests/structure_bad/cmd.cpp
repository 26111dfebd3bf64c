// A fixture for grader.structure_catches (never compiled): a command that uses a helper, as it may.
#include "cmd.hpp"
#include "helper.hpp"

int cmd_thing() { return helper_value(); }
