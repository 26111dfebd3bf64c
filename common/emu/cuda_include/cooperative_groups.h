// <cooperative_groups.h> for a .cu file compiled by the CPU backend: this directory comes before the
// toolkit's on emu targets (cmake/RooflabEmu.cmake). The toolkit's header needs nvcc; the backend's
// subset is in rooflab/emu/cooperative_groups.hpp.
#pragma once
#include <rooflab/emu/cooperative_groups.hpp>
