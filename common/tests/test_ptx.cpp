// Reading PTX and the ptxas report: fixtures are real nvcc 13.0 output (data/sample.cu for sm_80).
#include <rooflab/testing/ptx.hpp>

#include <gtest/gtest.h>

namespace {
const std::string kDir = ROOFLAB_TEST_DATA_DIR;
}

TEST(Ptx, AccessBits) {
  EXPECT_EQ(rooflab::ptx::access_bits("ld.global.nc.v4.f32"), 128);
  EXPECT_EQ(rooflab::ptx::access_bits("st.global.v2.f64"), 128);
  EXPECT_EQ(rooflab::ptx::access_bits("ld.global.f32"), 32);
  EXPECT_EQ(rooflab::ptx::access_bits("ld.global.v2.b16"), 32);
  EXPECT_EQ(rooflab::ptx::access_bits("st.global.u8"), 8);
}

TEST(Ptx, ParsesEntriesAndFacts) {
  const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::read_file(kDir + "/sample.sm_80.ptx"));
  ASSERT_EQ(kernels.size(), 2u);
  const auto vec = rooflab::ptx::facts(rooflab::ptx::find_kernel(kernels, "vec_kernel"));
  EXPECT_EQ(vec.widest_global_load_bits, 128);
  EXPECT_EQ(vec.widest_global_store_bits, 128);
  EXPECT_FALSE(vec.uses_shared);
  EXPECT_EQ(vec.fma_f32, 0);
  const auto smem = rooflab::ptx::facts(rooflab::ptx::find_kernel(kernels, "smem_kernel"));
  EXPECT_EQ(smem.widest_global_load_bits, 32);
  EXPECT_EQ(smem.global_loads, 1);
  EXPECT_EQ(smem.global_stores, 1);
  EXPECT_TRUE(smem.uses_shared);
  EXPECT_EQ(smem.fma_f32, 1);
  EXPECT_FALSE(smem.uses_tensor_cores);
  EXPECT_EQ(rooflab::ptx::find_kernel(kernels, "smem_kernel").name, "smem_kernel(float const*, float*)");
  EXPECT_THROW(rooflab::ptx::find_kernel(kernels, "no_such_kernel"), std::runtime_error);
  EXPECT_THROW(rooflab::ptx::find_kernel(kernels, "_kernel"), std::runtime_error);  // ambiguous
}

// __launch_bounds__(256, 6) is `.maxntid 256, 1, 1` (and `.minnctapersm 6`) between an entry's parameters and its
// body: the most threads a block of the kernel may have. A kernel without it has none.
TEST(Ptx, ReadsTheLaunchBoundsThreads) {
  const std::string ptx =
      ".visible .entry bounded(\n\t.param .u64 p\n)\n.maxntid 256, 1, 1\n.minnctapersm 6\n{\n\tret;\n}\n"
      ".visible .entry shaped(\n\t.param .u64 p\n)\n.maxntid 32, 4, 2\n{\n\tret;\n}\n"
      ".visible .entry free(\n\t.param .u64 p\n)\n{\n\tret;\n}\n";
  const auto kernels = rooflab::ptx::parse_ptx(ptx);
  ASSERT_EQ(kernels.size(), 3u);
  EXPECT_EQ(kernels[0].max_threads, 256);
  EXPECT_EQ(kernels[1].max_threads, 256);  // 32 x 4 x 2
  EXPECT_EQ(kernels[2].max_threads, 0);
}

// A stub kernel (nvcc 13.0, sm_80, an empty body): the static hints say it is not written yet.
TEST(Ptx, AStubKernelIsNotImplementedYet) {
  const auto kernels = rooflab::ptx::parse_ptx(R"(.version 9.0
.target sm_80
.address_size 64

	// .globl	_Z11stub_kernelPKfPfm

.visible .entry _Z11stub_kernelPKfPfm(
	.param .u64 _Z11stub_kernelPKfPfm_param_0,
	.param .u64 _Z11stub_kernelPKfPfm_param_1,
	.param .u64 _Z11stub_kernelPKfPfm_param_2
)
{



	ret;

}
)");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(rooflab::ptx::find_kernel(kernels, "stub_kernel").name,
            "stub_kernel(float const*, float*, unsigned long)");
  try {
    rooflab::ptx::find_written_kernel(kernels, "stub_kernel");
    ADD_FAILURE() << "a stub kernel passed as written";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("stub_kernel is not implemented yet"), std::string::npos) << e.what();
  }
  // A kernel that does its work is found as find_kernel finds it.
  const auto written = rooflab::ptx::parse_ptx(rooflab::ptx::read_file(kDir + "/sample.sm_80.ptx"));
  EXPECT_EQ(&rooflab::ptx::find_written_kernel(written, "vec_kernel"),
            &rooflab::ptx::find_kernel(written, "vec_kernel"));
}

// Facts count only for kernels the launcher started: a kernel compiled beside it but never launched by it is
// named as such, whatever its code holds.
TEST(Ptx, AHintLooksOnlyAtKernelsTheLauncherStarted) {
  const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::read_file(kDir + "/sample.sm_80.ptx"));
  const rooflab::ptx::Launched ran_smem{"sample::launch", {"smem_kernel(float const*, float*)"}};
  EXPECT_EQ(&rooflab::ptx::find_launched_kernel(kernels, "smem_kernel", ran_smem),
            &rooflab::ptx::find_kernel(kernels, "smem_kernel"));
  try {
    rooflab::ptx::find_launched_kernel(kernels, "vec_kernel", ran_smem);
    ADD_FAILURE() << "a kernel the launcher never started passed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("vec_kernel was compiled but never launched by sample::launch"),
              std::string::npos) << e.what();
  }
  // The same instance as nvcc and the host compiler spell it: return type, parameters, internal linkage.
  EXPECT_TRUE(rooflab::ptx::same_kernel("void ns::k<64, 64>(__half const*, float*)", "void ns::k<64, 64>(__half const*, float*)"));
  EXPECT_TRUE(rooflab::ptx::same_kernel("_INTERNAL_1a2b_kernels_cu::k(float*)", "(anonymous namespace)::k(float*)"));
  EXPECT_FALSE(rooflab::ptx::same_kernel("void ns::k<64, 64>(__half const*)", "void ns::k<128, 32>(__half const*)"));
}

TEST(Ptx, ParsesThePtxasReport) {
  const auto res = rooflab::ptx::parse_ptxas_report(rooflab::ptx::read_file(kDir + "/sample.sm_80.ptxas.txt"));
  ASSERT_EQ(res.size(), 2u);
  const auto& smem = rooflab::ptx::find_resources(res, "smem_kernel");
  EXPECT_EQ(smem.arch, "sm_80");
  EXPECT_EQ(smem.registers, 12);
  EXPECT_EQ(smem.barriers, 1);
  EXPECT_EQ(smem.smem_bytes, 1024);
  EXPECT_EQ(smem.cmem0_bytes, 368);
  EXPECT_EQ(smem.spill_store_bytes, 0);
  const auto& vec = rooflab::ptx::find_resources(res, "vec_kernel");
  EXPECT_EQ(vec.registers, 14);
  EXPECT_EQ(vec.smem_bytes, 0);
  // A spilling kernel's line, as ptxas prints it.
  const auto spill = rooflab::ptx::parse_ptxas_report(
      "ptxas info    : Compiling entry function '_Z1kv' for 'sm_90'\n"
      "    48 bytes stack frame, 44 bytes spill stores, 40 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 0 barriers, 356 bytes cmem[0]\n");
  ASSERT_EQ(spill.size(), 1u);
  EXPECT_EQ(spill[0].stack_bytes, 48);
  EXPECT_EQ(spill[0].spill_store_bytes, 44);
  EXPECT_EQ(spill[0].spill_load_bytes, 40);
  EXPECT_EQ(spill[0].registers, 255);
}

TEST(Ptx, MissingFileNamesThePath) {
  try {
    rooflab::ptx::read_file("/nonexistent/x.ptx");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.ptx"), std::string::npos);
  }
}

// A template kernel with two instances (data/instances.cu: VEC true and false, as Lab 04's tensor-core rung has):
// its name matches both, the launch says which one ran, and the ptxas entry is that instance's, not the other's.
TEST(Ptx, TheLaunchPicksATemplatesInstance) {
  const auto kernels = rooflab::ptx::parse_ptx(rooflab::ptx::read_file(kDir + "/instances.sm_80.ptx"));
  const auto res = rooflab::ptx::parse_ptxas_report(rooflab::ptx::read_file(kDir + "/instances.sm_80.ptxas.txt"));
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_THROW(rooflab::ptx::find_kernel(kernels, "scale_kernel"), std::runtime_error);  // ambiguous alone
  // As the CPU backend names a launch (the host compiler's demangled symbol).
  const std::vector<std::string> ran_scalar{"void demo::scale_kernel<false>(float const*, float*, unsigned int)"};
  const auto& scalar = rooflab::ptx::find_kernel_launched(kernels, "scale_kernel", ran_scalar);
  EXPECT_NE(scalar.name.find("scale_kernel<false>"), std::string::npos) << scalar.name;
  EXPECT_EQ(rooflab::ptx::resources_of(res, scalar).registers, 8);
  EXPECT_EQ(rooflab::ptx::resources_of(res, scalar).barriers, 1);
  const std::vector<std::string> ran_vec{"lab01::copy_kernel(float const*, float*)",
                                         "demo::scale_kernel<true>(float const*, float*, unsigned int)"};
  const auto& vec = rooflab::ptx::find_kernel_launched(kernels, "scale_kernel", ran_vec);
  EXPECT_NE(vec.name.find("scale_kernel<true>"), std::string::npos) << vec.name;
  EXPECT_EQ(rooflab::ptx::resources_of(res, vec).registers, 14);
  EXPECT_EQ(rooflab::ptx::facts(vec).widest_global_load_bits, 128);
  // The first launch named wins where both ran.
  std::vector<std::string> both = ran_vec;
  both.push_back(ran_scalar.front());
  EXPECT_EQ(&rooflab::ptx::find_kernel_launched(kernels, "scale_kernel", both), &vec);
  // A file that names the kernel by the registry's name cannot tell the instances apart: the error says so.
  try {
    rooflab::ptx::find_kernel_launched(kernels, "scale_kernel", {"demo::scale_kernel"});
    ADD_FAILURE() << "an instance was picked from a name that matches both";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("several instances of scale_kernel were compiled and none of them was launched"),
              std::string::npos) << what;
    EXPECT_NE(what.find("demangled instance"), std::string::npos) << what;
  }
  // A single-instance kernel needs no launch to be found.
  const auto sample = rooflab::ptx::parse_ptx(rooflab::ptx::read_file(kDir + "/sample.sm_80.ptx"));
  EXPECT_EQ(&rooflab::ptx::find_kernel_launched(sample, "vec_kernel", {"demo::scale_kernel"}),
            &rooflab::ptx::find_kernel(sample, "vec_kernel"));
}
