// <cooperative_groups/reduce.h> for the CPU backend (see ../cooperative_groups.h).
#pragma once
#include <rooflab/emu/cooperative_groups_reduce.hpp>
