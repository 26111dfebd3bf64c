// A fixture for grader.structure_catches (never compiled): a helper.
#pragma once

int helper_value();
