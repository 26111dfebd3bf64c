// <cooperative_groups/scan.h> on the CPU backend: inclusive_scan and exclusive_scan over a thread_block_tile
// (rooflab/emu/cooperative_groups_reduce.hpp).
#pragma once

#include <rooflab/emu/cooperative_groups_reduce.hpp>
