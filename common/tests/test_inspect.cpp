// Occupancy from the toolkit's calculator against hand calculations (sm_80: 64K registers, 2048 threads,
// 32 blocks and 164 KB shared memory per SM, 1 KB reserved per block; registers allocated per warp in
// units of 256).
#include <rooflab/inspect.hpp>
#include <rooflab/perf_model.hpp>
#include <rooflab/testing/ptx.hpp>
#include <rooflab/specs.hpp>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include <unistd.h>

namespace {
rooflab::inspect::Limits a100() {
  rooflab::inspect::Limits l;
  l.cc_major = 8;
  l.cc_minor = 0;
  l.sms = 108;
  l.max_threads_per_sm = 2048;
  l.max_blocks_per_sm = 32;
  l.registers_per_sm = 65536;
  l.smem_per_sm = 164 * 1024;
  l.smem_per_block_optin = 163 * 1024;
  l.reserved_smem_per_block = 1024;
  return l;
}

// The sample kernel's PTX and ptxas report (sm_80), and a memory-bound declaration of it: n FLOPs, 8n bytes.
struct Sample {
  std::string ptx = rooflab::ptx::read_file(std::string(ROOFLAB_TEST_DATA_DIR) + "/sample.sm_80.ptx");
  std::string ptxas = rooflab::ptx::read_file(std::string(ROOFLAB_TEST_DATA_DIR) + "/sample.sm_80.ptxas.txt");
  const rooflab::GpuSpec& a100 = rooflab::gpu("a100-80gb-sxm4");
  rooflab::inspect::KernelDecl decl[1] = {{"vec_kernel", "v", 256, 0, [](double n) { return n; },
                                           [](double n) { return 8 * n; }}};
};
}  // namespace

TEST(Occupancy, RegistersLimitByHand) {
  // 64 registers x 32 threads = 2048 per warp; 8 warps per 256-thread block = 16384 per block;
  // 65536 / 16384 = 4 blocks = 32 warps of 64: 50%, limited by registers.
  const auto o = rooflab::inspect::occupancy(a100(), 64, 0, 0, 256);
  EXPECT_EQ(o.blocks_per_sm, 4);
  EXPECT_EQ(o.warps_per_sm, 32);
  EXPECT_DOUBLE_EQ(o.fraction, 0.5);
  EXPECT_NE(o.limiter.find("registers"), std::string::npos) << o.limiter;
}

TEST(Occupancy, SharedMemoryLimitByHand) {
  // 48 KB static + 1 KB reserved = 49 KB per block; 164 KB / 49 KB = 3 blocks of 4 warps = 12 of 64 warps.
  const auto o = rooflab::inspect::occupancy(a100(), 32, 48 * 1024, 0, 128);
  EXPECT_EQ(o.blocks_per_sm, 3);
  EXPECT_DOUBLE_EQ(o.fraction, 12.0 / 64);
  EXPECT_NE(o.limiter.find("shared memory"), std::string::npos) << o.limiter;
  // The same with the 48 KB as dynamic shared memory.
  EXPECT_EQ(rooflab::inspect::occupancy(a100(), 32, 0, 48 * 1024, 128).blocks_per_sm, 3);
}

TEST(Occupancy, WarpsLimitAndImpossibleBlocks) {
  // Few registers, no shared memory: 2048 threads / 256 = 8 blocks, all 64 warps.
  const auto full = rooflab::inspect::occupancy(a100(), 16, 0, 0, 256);
  EXPECT_EQ(full.blocks_per_sm, 8);
  EXPECT_DOUBLE_EQ(full.fraction, 1.0);
  // 255 registers x 1024 threads cannot fit in 64K registers: the block cannot launch.
  const auto none = rooflab::inspect::occupancy(a100(), 255, 0, 0, 1024);
  EXPECT_EQ(none.blocks_per_sm, 0);
  EXPECT_FALSE(none.error.empty());
}

// A kernel's floor uses the peak of the units it computes on: declared as FP16 tensor work it is bounded by
// the tensor peak, far below the FP32 floor of the same FLOPs.
TEST(Inspect, FloorUsesThePeakOfTheKernelsDataType) {
  const std::string dir = ROOFLAB_TEST_DATA_DIR;
  const std::string ptx = rooflab::ptx::read_file(dir + "/sample.sm_80.ptx");
  const std::string ptxas = rooflab::ptx::read_file(dir + "/sample.sm_80.ptxas.txt");
  const auto& a100 = rooflab::gpu("a100-80gb-sxm4");
  const auto flops = [](double n) { return 1e6 * n; };  // compute-bound by far
  const auto bytes = [](double n) { return n; };
  const rooflab::inspect::KernelDecl fp32[] = {{"vec_kernel", "v", 256, 0, flops, bytes}};
  const rooflab::inspect::KernelDecl fp16[] = {{"vec_kernel", "v", 256, 0, flops, bytes, rooflab::DType::fp16}};
  const double n = 1e6;
  const auto r32 = rooflab::inspect::inspect(fp32, ptx, ptxas, a100, "sm_80", n);
  const auto r16 = rooflab::inspect::inspect(fp16, ptx, ptxas, a100, "sm_80", n);
  ASSERT_EQ(r32.size(), 1u);
  ASSERT_EQ(r16.size(), 1u);
  EXPECT_EQ(r32[0].bound, "compute");
  EXPECT_NEAR(r32[0].floor_s, 1e6 * n / (a100.fp32_tflops * 1e12), 1e-12);
  EXPECT_NEAR(r16[0].floor_s, 1e6 * n / *rooflab::peak_flops(a100, rooflab::DType::fp16), 1e-12);
  EXPECT_LT(r16[0].floor_s, r32[0].floor_s / 10);
}

// What `rooflab calibrate` measured replaces the datasheet roof in the prediction (the CLI passes it for this
// machine's GPU): half the copy ceiling, twice the predicted time of a memory-bound kernel; without it, the
// evidence names the datasheet figure it used. And --sass without nvdisasm reads PTX, saying why.
TEST(Inspect, ACalibratedCopyCeilingAndTheCodeRead) {
  const Sample sample;
  const auto& [ptx, ptxas, a100, decl] = sample;
  const double n = 1e8;
  const auto datasheet = rooflab::inspect::inspect(decl, ptx, ptxas, a100, "sm_80", n);
  const auto fast = rooflab::inspect::inspect(decl, ptx, ptxas, a100, "sm_80", n, nullptr, 1800.0);
  const auto slow = rooflab::inspect::inspect(decl, ptx, ptxas, a100, "sm_80", n, nullptr, 900.0);
  ASSERT_TRUE(datasheet[0].prediction && fast[0].prediction && slow[0].prediction);
  EXPECT_GT(slow[0].prediction->time_s, 1.9 * fast[0].prediction->time_s);
  auto says = [](const rooflab::inspect::Row& r, const std::string& what) {
    for (const auto& e : r.prediction->evidence) {
      if (e.find(what) != std::string::npos) return true;
    }
    return false;
  };
  EXPECT_TRUE(says(fast[0], "1800 GB/s, the copy ceiling calibrate measured"));
  EXPECT_TRUE(says(datasheet[0], "the datasheet's"));
  EXPECT_EQ(datasheet[0].code_from, "PTX");
  rooflab::inspect::Sass none;
  none.why_not = "no nvdisasm here";
  const auto fallback = rooflab::inspect::inspect(decl, ptx, ptxas, a100, "sm_80", n, &none);
  EXPECT_EQ(fallback[0].code_from, "PTX");
  EXPECT_TRUE(says(fallback[0], "PTX, not SASS: ptxas may still reorder; no nvdisasm here"));
}

// A recorded launch hands its arguments' reach to the row (and so to the prediction and the JSON that validation
// fixtures are recorded from): the reused-data rule needs it.
TEST(Inspect, ARecordedLaunchsReachIsInTheRowAndTheJson) {
  const Sample sample;
  const auto& [ptx, ptxas, a100, decl] = sample;
  rooflab::inspect::TimedLaunches launches;
  launches.launches.push_back({"vec_kernel", 432, 256, 0, {4096, 0, 1 << 20}, {std::nullopt, 4096, std::nullopt}});
  const auto rows = rooflab::inspect::inspect(decl, ptx, ptxas, a100, "sm_80", 1e8, nullptr, std::nullopt, &launches);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].grid, 432u);
  EXPECT_EQ(rows[0].reach, (std::vector<std::size_t>{4096, 0, 1 << 20}));
  // Its integer arguments too (the model's trip counts), null in the JSON where an argument is none.
  EXPECT_EQ(rows[0].scalars, (std::vector<std::optional<long long>>{std::nullopt, 4096, std::nullopt}));
  const std::string json = rooflab::inspect::to_json(rows, a100, 1e8);
  EXPECT_NE(json.find("\"reach\": [\n"), std::string::npos);
  EXPECT_NE(json.find("\"args\": [\n        null,\n        4096,\n        null\n      ]"), std::string::npos) << json;
}

// A kernel the compiled code lacks (a template kernel whose stub launcher never instantiates it) is a row that says
// so, and the kernels that are there are still inspected and predicted: a student's half-written lab, and the
// grade's hints for the kernels written. A name that matches several kernels is still an error of the registry.
TEST(Inspect, AKernelNotCompiledYetIsARowThatSaysSoAndTheOthersGoOn) {
  const Sample sample;
  const auto& [ptx, ptxas, a100, decl] = sample;
  const rooflab::inspect::KernelDecl two[] = {{"not_written_kernel", "w", 256, 0, decl[0].flops, decl[0].bytes},
                                              decl[0]};
  const auto rows = rooflab::inspect::inspect(two, ptx, ptxas, a100, "sm_80", 1e8);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_NE(rows[0].missing.find("not in the compiled code yet"), std::string::npos) << rows[0].missing;
  EXPECT_FALSE(rows[0].prediction);
  EXPECT_TRUE(rows[1].missing.empty());
  EXPECT_TRUE(rows[1].prediction);
  const std::string table = rooflab::inspect::table(rows, a100, 1e8);
  EXPECT_NE(table.find("not_written_kernel"), std::string::npos) << table;
  EXPECT_NE(table.find("vec_kernel: "), std::string::npos) << table;
  EXPECT_NE(rooflab::inspect::to_json(rows, a100, 1e8).find("\"missing\": \"not in the compiled code yet"),
            std::string::npos);
  const rooflab::inspect::KernelDecl ambiguous[] = {{"_kernel", "k", 256, 0, decl[0].flops, decl[0].bytes}};
  EXPECT_THROW(rooflab::inspect::inspect(ambiguous, ptx, ptxas, a100, "sm_80", 1e8), std::runtime_error);
}

// A kernel whose compiled code touches no global memory (a stub's empty body) gets no prediction: read as code, it
// moves none of its declared bytes and would be put at the roof (it was: 100% of the copy ceiling for Lab 01's stubs).
TEST(Inspect, AnEmptyBodyIsNotWrittenYetAndGetsNoPrediction) {
  const Sample sample;
  const auto& [ptx, ptxas, a100, decl] = sample;
  const std::string stub_ptx = ptx + R"(
.visible .entry _Z11stub_kernelPKfPfm(
	.param .u64 _Z11stub_kernelPKfPfm_param_0,
	.param .u64 _Z11stub_kernelPKfPfm_param_1,
	.param .u64 _Z11stub_kernelPKfPfm_param_2
)
{
	ret;
}
)";
  const std::string stub_ptxas = ptxas + R"(ptxas info    : Compiling entry function '_Z11stub_kernelPKfPfm' for 'sm_80'
ptxas info    : Function properties for _Z11stub_kernelPKfPfm
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 4 registers, used 0 barriers, 376 bytes cmem[0]
)";
  const rooflab::inspect::KernelDecl two[] = {{"stub_kernel", "s", 256, 0, decl[0].flops, decl[0].bytes}, decl[0]};
  const auto rows = rooflab::inspect::inspect(two, stub_ptx, stub_ptxas, a100, "sm_80", 1e8);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0].missing.empty());  // it is compiled: its registers and occupancy are shown
  EXPECT_EQ(rows[0].registers, 4);
  EXPECT_FALSE(rows[0].prediction);
  EXPECT_NE(rows[0].prediction_error.find("not written yet: its compiled code reads and writes no global memory"),
            std::string::npos) << rows[0].prediction_error;
  EXPECT_TRUE(rows[1].prediction);
}

// Where the toolkit lacks nvdisasm, `./rooflab test` fetches one into build/ci/nvdisasm (NVIDIA's wheel): a static
// binary finds its own build's copy first, else one in a build beside it, and never a file it cannot run.
TEST(Inspect, ANvdisasmFetchedIntoABuildIsFoundFromItsOwnBuildOrOneBeside) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("rooflab-fetched-nvdisasm-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const fs::path exe = root / "build" / "default" / "labs" / "bin" / "lab05_static";
  const auto tool = [&](const std::string& preset, fs::perms mode) {
    const fs::path p = root / "build" / preset / "nvdisasm" / "nvdisasm";
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "#!/bin/sh\n";
    fs::permissions(p, mode);
    return p.string();
  };
  using rooflab::inspect::fetched_nvdisasm;
  EXPECT_EQ(fetched_nvdisasm(exe), "") << "none fetched";
  tool("solutions", fs::perms::owner_read);  // not runnable
  EXPECT_EQ(fetched_nvdisasm(exe), "");
  const std::string ci = tool("ci", fs::perms::owner_all);
  EXPECT_EQ(fetched_nvdisasm(exe), ci) << "the CI build's, beside this one";
  const std::string own = tool("default", fs::perms::owner_all);
  EXPECT_EQ(fetched_nvdisasm(exe), own) << "its own build's first";
  EXPECT_EQ(fetched_nvdisasm(""), "");
  fs::remove_all(root);
}

// The presets' build folders that fetched_nvdisasm names are CMakePresets.json's configure presets, every one (a
// preset added there and not here would leave its fetched copy unseen).
TEST(Inspect, ThePresetBuildFoldersAreCMakePresetsJsons) {
  std::ifstream in(std::string(ROOFLAB_SOURCE_DIR) + "/CMakePresets.json");
  ASSERT_TRUE(in) << "no CMakePresets.json at " << ROOFLAB_SOURCE_DIR;
  const auto presets = nlohmann::json::parse(in);
  std::set<std::string> want;
  for (const auto& p : presets.at("configurePresets")) {
    if (!p.value("hidden", false)) want.insert(p.at("name").get<std::string>());
  }
  const std::set<std::string> named(std::begin(rooflab::inspect::kPresetBuilds), std::end(rooflab::inspect::kPresetBuilds));
  EXPECT_EQ(named, want);
  EXPECT_EQ(named.size(), std::size(rooflab::inspect::kPresetBuilds)) << "each once";
}
