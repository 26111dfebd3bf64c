// A fixture for grader.structure_catches (never compiled): a command.
#pragma once

int cmd_thing();
