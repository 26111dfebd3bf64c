// <cuda_awbarrier.h> on the CPU backend: not emulated. The toolkit's header needs nvcc (mbarrier instructions); a named
// error instead of its internals' errors. cuda::barrier<cuda::thread_scope_block> (<cuda/barrier>) is supported.
#pragma once
#error "nvcuda::experimental::awbarrier and the __mbarrier primitives (<cuda_awbarrier.h>) are not supported by rooflab's CPU backend: use cuda::barrier<cuda::thread_scope_block> from <cuda/barrier> (docs/cpu-mode.md lists the CCCL subset)"
