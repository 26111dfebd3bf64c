// The one CUDA include of the project. Under the CPU backend (ROOFLAB_EMU) the backend's prelude must come
// before any CUDA header (it defines __global__, __shared__ ... before the toolkit headers see them).
#pragma once

#if defined(ROOFLAB_EMU)
#include <rooflab/emu/runtime.hpp>
#else
#include <cuda_runtime.h>
#endif
