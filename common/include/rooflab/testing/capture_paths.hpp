// Where a lab's static test binary finds the PTX and ptxas reports the build captured of its kernels.
// rooflab_add_lab generates the definitions for each static binary (one per variant: the solutions, each
// selftest case), so that the lab's static tests themselves compile once for all of them.
#pragma once

namespace rooflab::testing {

const char* capture_dir();    // the folder of kernels.sm_<arch>.ptx and kernels.sm_<arch>.ptxas.txt
const char* capture_archs();  // the architectures captured, as "80,90"

}  // namespace rooflab::testing
