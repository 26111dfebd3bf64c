// The performance model's limiters on small kernels whose answer is known by construction: hand-written PTX
// bodies, so that each test states the code it is about and no compiler version moves its figures.
#include <rooflab/inspect.hpp>
#include <rooflab/perf_model.hpp>
#include <rooflab/specs.hpp>
#include <rooflab/testing/ptx.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

using rooflab::perf::analyze;
using rooflab::perf::predict;

const rooflab::GpuSpec& h100() { return rooflab::gpu("h100-sxm"); }
const rooflab::GpuSpec& h200() { return rooflab::gpu("h200-sxm"); }

// A grid-stride copy whose loop loads `loads` floats before it stores the first of them.
std::string copy_loop(int loads) {
  std::string body = "\tmov.u32 \t%r1, %tid.x;\n$L__BB0_1:\n";
  for (int i = 0; i < loads; ++i) body += "\tld.global.nc.f32 \t%f" + std::to_string(i + 1) + ", [%rd" + std::to_string(i + 10) + "];\n";
  for (int i = 0; i < loads; ++i) body += "\tst.global.f32 \t[%rd" + std::to_string(i + 20) + "], %f" + std::to_string(i + 1) + ";\n";
  body += "\tadd.s64 \t%rd10, %rd10, %rd3;\n\tsetp.lt.u64 \t%p1, %rd10, %rd4;\n\t@%p1 bra \t$L__BB0_1;\n\tret;\n";
  return body;
}

rooflab::perf::Work copy_work(int blocks_per_sm) {
  rooflab::perf::Work w;
  w.bytes = 8.0 * (1 << 26);
  w.block = 256;
  w.blocks_per_sm = blocks_per_sm;
  return w;
}

TEST(PerfModel, OneLoadPerTripVersusFour) {
  const auto one = analyze(copy_loop(1));
  const auto four = analyze(copy_loop(4));
  ASSERT_EQ(one.loops.size(), 1u);
  EXPECT_EQ(one.loops[0].load_bytes_before_use, 4);
  EXPECT_EQ(four.loops[0].load_bytes_before_use, 16);
  EXPECT_EQ(four.loops[0].global_loads, 4);
  EXPECT_EQ(four.loops[0].store_bytes, 16);
  const auto c = rooflab::perf::constants_for(h100());
  const auto p1 = predict(copy_work(8), one, h100(), c);
  const auto p4 = predict(copy_work(8), four, h100(), c);
  // 8 KB in flight per SM (4 B x 2048 threads): the H100 run's 80%; 32 KB: about 97%.
  EXPECT_EQ(p1.limiter, "loads in flight");
  EXPECT_NEAR(p1.fraction, 0.80, 0.02);
  EXPECT_NEAR(p4.fraction, 0.97, 0.02);
  EXPECT_EQ(p1.roof, "copy ceiling");
  // The same code on an H200 needs 1.43x the bytes in flight: a lower fraction of its own ceiling.
  const auto on_h200 = predict(copy_work(8), one, h200(), rooflab::perf::constants_for(h200()));
  EXPECT_LT(on_h200.fraction, p1.fraction - 0.05);
}

// Within 2% of its roof a kernel is limited by the roof, not by the measure that costs it the last percent: eight
// loads a trip (64 KB in flight per SM) is DRAM bandwidth, where four (32 KB, about 97%) and one are loads in flight.
TEST(PerfModel, AKernelWithinTwoPercentOfItsRoofIsLimitedByTheRoof) {
  const auto c = rooflab::perf::constants_for(h100());
  const auto eight = predict(copy_work(8), analyze(copy_loop(8)), h100(), c);
  EXPECT_GE(eight.fraction, 0.98);
  EXPECT_EQ(eight.limiter, "DRAM bandwidth");
  EXPECT_EQ(eight.advice, "at the roof");
  const auto four = predict(copy_work(8), analyze(copy_loop(4)), h100(), c);
  EXPECT_LT(four.fraction, 0.98);
  EXPECT_EQ(four.limiter, "loads in flight");
}

// A trip that may go two ways, as fetch_piece in Lab 07 and the tile loads of Lab 04's vectorized rung: a row's
// piece as one 128-bit load where it lies inside the row, else as eight guarded 2-byte loads that the next
// instruction packs. At the timed sizes the wide way runs. Counted as one trip with both ways, the slow way's
// instructions would be issue slots the loop never spends, and its pack (a use of its loads) would end the wide
// loads in flight of the rows after it: 20 B in flight where four rows give 64 B.
std::string two_way_rows(int rows) {
  std::string body = "\tmov.u32 \t%r1, %tid.x;\n$L__BB0_1:\n";
  for (int r = 0; r < rows; ++r) {
    const std::string R = std::to_string(r), slow = "$L__BB0_slow" + R, join = "$L__BB0_join" + R;
    body += "\tsetp.ge.s32 \t%p" + R + "0, %r2, %r3;\n\t@%p" + R + "0 bra \t" + slow + ";\n";
    body += "\tld.global.nc.v4.u32 \t{%r" + R + "10, %r" + R + "11, %r" + R + "12, %r" + R + "13}, [%rd" + R + "0];\n";
    body += "\tbra.uni \t" + join + ";\n" + slow + ":\n";
    for (int j = 0; j < 8; ++j) {
      body += "\tld.global.nc.u16 \t%rs" + R + std::to_string(j) + ", [%rd" + R + "1+" + std::to_string(2 * j) + "];\n";
    }
    for (int j = 0; j < 4; ++j) {
      body += "\tmov.b32 \t%r" + R + std::to_string(10 + j) + ", {%rs" + R + std::to_string(2 * j) + ", %rs" + R +
              std::to_string(2 * j + 1) + "};\n";
    }
    body += join + ":\n";
  }
  // The math uses the rows' pieces after every row's load is issued.
  for (int r = 0; r < rows; ++r) body += "\tadd.s32 \t%r90, %r90, %r" + std::to_string(r) + "10;\n";
  body += "\tadd.s64 \t%rd3, %rd3, 16;\n\tsetp.lt.u64 \t%p1, %rd3, %rd4;\n\t@%p1 bra \t$L__BB0_1;\n\tret;\n";
  return body;
}

TEST(PerfModel, ATripThatMayGoTwoWaysIsCountedAlongTheWideWay) {
  const auto code = analyze(two_way_rows(4));
  ASSERT_EQ(code.loops.size(), 1u);
  const auto& t = code.loops[0];
  EXPECT_EQ(t.global_loads, 4) << "the four 128-bit loads; not the 32 guarded 2-byte loads of the slow way";
  EXPECT_EQ(t.load_bytes, 64);
  EXPECT_EQ(t.load_bytes_before_use, 64) << "the slow way's pack is not a use on the way that runs";
  // Per row: the compare, its branch, the load and the jump over the slow way; then four adds and the loop's three.
  EXPECT_EQ(t.instructions, 4 * 4 + 4 + 3);
  // A guard around the work is a way that does less: the trip takes the work (every guard passes at the timed size).
  const auto guarded = analyze(
      "\tmov.u32 \t%r1, %tid.x;\n$L__BB0_1:\n\tsetp.ge.s32 \t%p2, %r2, %r3;\n\t@%p2 bra \t$L__BB0_2;\n"
      "\tld.global.nc.f32 \t%f1, [%rd10];\n\tst.global.f32 \t[%rd20], %f1;\n$L__BB0_2:\n"
      "\tadd.s64 \t%rd10, %rd10, %rd3;\n\tsetp.lt.u64 \t%p1, %rd10, %rd4;\n\t@%p1 bra \t$L__BB0_1;\n\tret;\n");
  ASSERT_EQ(guarded.loops.size(), 1u);
  EXPECT_EQ(guarded.loops[0].load_bytes, 4);
  EXPECT_EQ(guarded.loops[0].store_bytes, 4);
  EXPECT_EQ(guarded.loops[0].instructions, 7);
}

// nvcc may unswitch such a loop on a condition that holds for the whole loop (k % 8 == 0): a copy of guarded 2-byte
// loads and a copy of 128-bit ones, the same bytes per trip. The hot loop is the copy with fewer instructions.
TEST(PerfModel, OfTwoCopiesOfALoopTheOneWithFewerInstructionsRuns) {
  std::string body = "\tmov.u32 \t%r1, %tid.x;\n\tsetp.ne.s32 \t%p9, %r5, 0;\n\t@%p9 bra \t$L__BB0_3;\n$L__BB0_1:\n";
  for (int j = 0; j < 8; ++j) body += "\tld.global.nc.u16 \t%rs" + std::to_string(j) + ", [%rd1+" + std::to_string(2 * j) + "];\n";
  for (int j = 0; j < 4; ++j) {
    body += "\tmov.b32 \t%r" + std::to_string(10 + j) + ", {%rs" + std::to_string(2 * j) + ", %rs" + std::to_string(2 * j + 1) + "};\n";
  }
  body += "\tadd.s64 \t%rd1, %rd1, 16;\n\tsetp.lt.u64 \t%p1, %rd1, %rd4;\n\t@%p1 bra \t$L__BB0_1;\n\tbra.uni \t$L__BB0_4;\n";
  body += "$L__BB0_3:\n\tld.global.nc.v4.u32 \t{%r10, %r11, %r12, %r13}, [%rd2];\n";
  body += "\tadd.s64 \t%rd2, %rd2, 16;\n\tsetp.lt.u64 \t%p2, %rd2, %rd4;\n\t@%p2 bra \t$L__BB0_3;\n$L__BB0_4:\n\tret;\n";
  const auto code = analyze(body);
  ASSERT_EQ(code.loops.size(), 2u);
  EXPECT_EQ(code.loops[0].load_bytes, code.loops[1].load_bytes);
  ASSERT_EQ(code.hot, 1) << "the 128-bit copy: four instructions a trip, not fifteen";
  EXPECT_EQ(code.loops[1].instructions, 4);
}

TEST(PerfModel, ACalibratedCopyCeilingIsTheMemoryRoof) {
  // Without one, the datasheet bandwidth times the share the H100 reached; with one, that ceiling: half of it
  // takes twice as long, at the same fraction (loads in flight per SM against half the bandwidth per SM: a
  // higher fraction, in fact, as the knee scales with it).
  const auto code = analyze(copy_loop(4));
  const auto c = rooflab::perf::constants_for(h100());
  auto w = copy_work(8);
  const auto datasheet = predict(w, code, h100(), c);
  EXPECT_NEAR(datasheet.roof_time_s, w.bytes / (3350e9 * c.copy_fraction), 1e-12);
  w.copy_ceiling_gbps = 3350 * c.copy_fraction / 2;
  const auto half = predict(w, code, h100(), c);
  EXPECT_NEAR(half.roof_time_s, 2 * datasheet.roof_time_s, 1e-12);
  EXPECT_GE(half.fraction, datasheet.fraction);
}

TEST(PerfModel, FewerResidentThreadsFewerLoadsInFlight) {
  const auto code = analyze(copy_loop(4));
  const auto c = rooflab::perf::constants_for(h100());
  EXPECT_LT(predict(copy_work(1), code, h100(), c).fraction, predict(copy_work(8), code, h100(), c).fraction - 0.2);
}

// Waves: a grid of whole waves predicts what an unknown grid does (every SM full for the whole run); a grid that
// fills a third of the slots has a third of the loads in flight; a last wave of a few blocks leaves SMs idle.
TEST(PerfModel, TheGridsWavesSetTheFill) {
  const auto code = analyze(copy_loop(1));
  const auto c = rooflab::perf::constants_for(h100());
  const double slots = 132.0 * 8;
  const auto unknown = predict(copy_work(8), code, h100(), c);
  auto w = copy_work(8);
  w.grid = static_cast<unsigned long long>(2 * slots);
  const auto whole = predict(w, code, h100(), c);
  EXPECT_DOUBLE_EQ(whole.time_s, unknown.time_s);
  EXPECT_EQ(whole.limiter, unknown.limiter);
  // A third of the slots: 1/3 of the loads in flight per SM, the fraction the curve gives there; the limiter is
  // still the loads in flight (a fuller grid is the fix, and the evidence says so).
  w.grid = static_cast<unsigned long long>(slots / 3);
  const auto third = predict(w, code, h100(), c);
  const double b_sm = 3350e9 * c.copy_fraction / 132;
  EXPECT_NEAR(third.fraction, rooflab::perf::in_flight_fraction(4.0 * 256 * 8 / 3, b_sm, c), 1e-6);
  bool said = false;
  for (const auto& e : third.evidence) said = said || e.find("0.33 waves") != std::string::npos;
  EXPECT_TRUE(said) << "the evidence names the grid's waves";
  // One wave and 10 blocks: the full wave moves its share of the bytes as an unknown grid would; the last 10
  // blocks run one per SM on 10 of the 132 SMs, each with 1 KB of loads in flight (256 threads x 4 B).
  w.grid = static_cast<unsigned long long>(slots + 10);
  const auto tail = predict(w, code, h100(), c);
  const double t_roof = w.bytes / (3350e9 * c.copy_fraction);
  const double expected = unknown.time_s * slots / (slots + 10) +
                          t_roof * (10 / (slots + 10)) / (10.0 / 132 * rooflab::perf::in_flight_fraction(1024, b_sm, c));
  EXPECT_NEAR(tail.time_s / expected, 1.0, 1e-9);
  EXPECT_GT(tail.time_s, unknown.time_s * 1.5) << "a last wave of 10 latency-bound blocks";
}

// Compute side: each wave takes as long as its busiest SM. 133 blocks of one per SM on a 132-SM GPU take two
// blocks' time where 132 take one.
TEST(PerfModel, ALastWaveOfOneBlockTakesAWholeWavesTime) {
  std::string body = "$L__BB0_1:\n";
  for (int i = 0; i < 16; ++i) body += "\tfma.rn.f32 \t%f" + std::to_string(i + 1) + ", %f20, %f21, %f" + std::to_string(i + 1) + ";\n";
  body += "\t@%p1 bra \t$L__BB0_1;\n";
  const auto code = analyze(body);
  rooflab::perf::Work w;
  w.flops = 1e12;
  w.block = 1024;
  w.blocks_per_sm = 1;
  const auto c = rooflab::perf::constants_for(h100());
  w.grid = 132;
  const auto one = predict(w, code, h100(), c);
  w.grid = 133;
  const auto more = predict(w, code, h100(), c);
  EXPECT_NEAR(more.time_s / one.time_s, 2.0 * 132 / 133, 1e-9);  // the same FLOPs in 133 blocks: two block times
  EXPECT_EQ(more.limiter, "grid (1.01 waves)");
}

TEST(PerfModel, ARunTimeTripCountLoopHasItsRemainderSeen) {
  // An unrolled loop (four loads per trip) and the remainder loop the compiler adds for the last trips.
  std::string body = copy_loop(4);
  body.resize(body.find("\tret;"));
  body += "$L__BB0_2:\n\tld.global.nc.f32 \t%f9, [%rd30];\n\tst.global.f32 \t[%rd31], %f9;\n"
          "\tsetp.lt.u64 \t%p2, %rd30, %rd4;\n\t@%p2 bra \t$L__BB0_2;\n\tret;\n";
  const auto code = analyze(body);
  ASSERT_EQ(code.loops.size(), 2u);
  EXPECT_FALSE(code.loops[0].remainder);
  EXPECT_TRUE(code.loops[1].remainder);
  EXPECT_EQ(code.loops[1].remainder_of, 0);
  EXPECT_EQ(code.hot, 0) << "a timed problem runs many trips of the unrolled loop";
  const auto p = predict(copy_work(8), code, h100(), rooflab::perf::constants_for(h100()));
  bool named = false;
  for (const auto& e : p.evidence) named = named || e.find("remainder loop") != std::string::npos;
  EXPECT_TRUE(named) << "the evidence names the remainder path";
}

// An FP32 tile loop: global loads, a store to shared memory, a barrier, then `ffma` FMAs fed by shared loads.
std::string gemm_loop(int ffma, int shared_loads) {
  std::string body = "$L__BB0_1:\n\tld.global.nc.f32 \t%f1, [%rd1];\n\tst.shared.f32 \t[%r1], %f1;\n\tbar.sync \t0;\n";
  for (int i = 0; i < shared_loads; ++i) body += "\tld.shared.v4.f32 \t{%f10, %f11, %f12, %f13}, [%r2];\n";
  for (int i = 0; i < ffma; ++i) body += "\tfma.rn.f32 \t%f20, %f10, %f11, %f20;\n";
  body += "\tbar.sync \t0;\n\tadd.s64 \t%rd1, %rd1, %rd3;\n\tsetp.lt.u64 \t%p1, %rd1, %rd4;\n\t@%p1 bra \t$L__BB0_1;\n\tret;\n";
  return body;
}

TEST(PerfModel, OneHundredFiftyRegistersAtTwoHundredFiftySixThreadsIsOneBlockPerSm) {
  // 150 registers x 32 lanes, rounded to 256 per warp = 4864; 8 warps = 38912 of 65536: one block per SM.
  const auto limits = rooflab::inspect::limits_of(h100());
  const auto occ = rooflab::inspect::occupancy(limits, 150, 4096, 0, 256);
  ASSERT_EQ(occ.blocks_per_sm, 1);
  const auto code = analyze(gemm_loop(512, 32));
  EXPECT_EQ(code.loops[0].ffma, 512);
  EXPECT_EQ(code.loops[0].barriers, 2);
  rooflab::perf::Work w;
  w.flops = 2.0 * 4096 * 4096 * 4096;
  w.bytes = 4.0 * 4096 * 4096 * 3;
  w.block = 256;
  w.blocks_per_sm = occ.blocks_per_sm;
  const auto c = rooflab::perf::constants_for(h100());
  const auto one = predict(w, code, h100(), c);
  EXPECT_EQ(one.limiter, "one block per SM");
  w.blocks_per_sm = 2;
  const auto two = predict(w, code, h100(), c);
  EXPECT_NE(two.limiter, "one block per SM");
  EXPECT_GT(two.fraction, one.fraction);
}

TEST(PerfModel, SharedMemoryBoundTileLoop) {
  // Two 32-bit shared loads per FMA: two wavefronts per FMA instruction against four FMA instructions per clock.
  std::string body = "$L__BB0_1:\n";
  for (int i = 0; i < 8; ++i) body += "\tld.shared.f32 \t%f1, [%r1];\n\tld.shared.f32 \t%f2, [%r2];\n\tfma.rn.f32 \t%f3, %f1, %f2, %f3;\n";
  body += "\t@%p1 bra \t$L__BB0_1;\n";
  const auto code = analyze(body);
  EXPECT_EQ(code.loops[0].shared_wavefronts, 16);
  rooflab::perf::Work w;
  w.flops = 1e12;
  w.bytes = 1e6;
  w.block = 256;
  w.blocks_per_sm = 8;
  const auto p = predict(w, code, h100(), rooflab::perf::constants_for(h100()));
  EXPECT_EQ(p.limiter, "shared memory");
  EXPECT_NEAR(p.fraction, 1.0 / 8, 0.01);  // 8 FMA-cycles of math per 16 wavefront-cycles x 4 lanes/clk
}

// A tensor-core k-loop: four 16-byte global loads of the next tiles, staged through registers or by cp.async,
// then ldmatrix and eight m16n8k16 MMAs.
std::string tensor_loop(bool cp_async) {
  std::string body = "$L__BB0_1:\n";
  for (int i = 0; i < 4; ++i) {
    if (cp_async) {
      body += "\tcp.async.cg.shared.global [%r" + std::to_string(10 + i) + "], [%rd" + std::to_string(10 + i) + "], 16;\n";
    } else {
      body += "\tld.global.nc.v4.u32 \t{%r20, %r21, %r22, %r23}, [%rd" + std::to_string(10 + i) + "];\n"
              "\tst.shared.v4.u32 \t[%r" + std::to_string(10 + i) + "], {%r20, %r21, %r22, %r23};\n";
    }
  }
  if (cp_async) body += "\tcp.async.wait_group 1;\n";
  body += "\tbar.sync \t0;\n";
  for (int i = 0; i < 4; ++i) body += "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 \t{%r30, %r31, %r32, %r33}, [%r40];\n";
  for (int i = 0; i < 8; ++i) {
    body += "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 \t{%f1, %f2, %f3, %f4}, {%r30, %r31, %r32, %r33}, "
            "{%r34, %r35}, {%f1, %f2, %f3, %f4};\n";
  }
  body += "\t@%p1 bra \t$L__BB0_1;\n\tret;\n";
  return body;
}

// An FP16 GEMM at 8192^3: its FLOPs and the bytes of A, B and C once.
rooflab::perf::Work fp16_gemm_work(unsigned block, int blocks_per_sm) {
  rooflab::perf::Work w;
  w.flops = 2.0 * 8192 * 8192 * 8192;
  w.bytes = 2.0 * 8192 * 8192 * 3;
  w.dtype = rooflab::DType::fp16;
  w.block = block;
  w.blocks_per_sm = blocks_per_sm;
  return w;
}

TEST(PerfModel, TensorLoopWithAndWithoutCpAsync) {
  const auto staged = analyze(tensor_loop(false));
  const auto async = analyze(tensor_loop(true));
  EXPECT_EQ(staged.loops[0].hmma, 8);
  EXPECT_EQ(async.loops[0].hmma, 8);
  // Through registers, the first shared store waits for the first load: 16 bytes in flight per thread.
  EXPECT_EQ(staged.loops[0].load_bytes_before_use, 16);
  EXPECT_EQ(async.loops[0].cp_async_bytes, 64);
  const rooflab::perf::Work w = fp16_gemm_work(128, 4);
  const auto c = rooflab::perf::constants_for(h100());
  const auto p_staged = predict(w, staged, h100(), c);
  const auto p_async = predict(w, async, h100(), c);
  EXPECT_GE(p_async.fraction, p_staged.fraction);
  // On sm_90 neither passes mma.sync's ceiling; on an A100 (sm_80) the class has no such ceiling.
  EXPECT_LE(p_async.fraction, c.mma_sync_ceiling + 1e-9);
  EXPECT_NE(p_async.roof.find("tensor"), std::string::npos);
  EXPECT_EQ(rooflab::perf::constants_for(rooflab::gpu("a100-80gb-sxm4")).mma_sync_ceiling, 1);
}

// The math side runs on the pipe the loop uses, not the one the declared type names. A memory-bound kernel
// declared FP32 whose loop does its few FLOPs on the tensor cores (Lab 06's decode: 32 HMMA and one FFMA per page)
// is held to the tensor rate, not read as one FMA per 100 instructions. An FP16 GEMM whose loop has FMAs and no
// tensor instructions (a student's first tensor-core rung) is held to the FP32 pipe, not to the tensor peak: on an
// A100 that pipe takes 2 warp FMAs per clock where 4 could issue, so the issue slots alone would allow twice it.
TEST(PerfModel, TheMathSideRunsOnThePipeTheLoopUses) {
  std::string decode_loop = tensor_loop(true);
  decode_loop.insert(decode_loop.find("\t@%p1 bra"), "\tfma.rn.f32 \t%f20, %f10, %f11, %f20;\n");
  rooflab::perf::Work decode;
  decode.flops = 1e9;  // about 4 FLOP per byte: memory-bound on every pipe
  decode.bytes = 2.5e8;
  decode.block = 128;
  decode.blocks_per_sm = 3;
  const auto on_tensor_cores = predict(decode, analyze(decode_loop), h100(), rooflab::perf::constants_for(h100()));
  EXPECT_EQ(on_tensor_cores.roof, "copy ceiling");
  EXPECT_GT(on_tensor_cores.fraction, 0.5) << on_tensor_cores.limiter;

  const auto& a100 = rooflab::gpu("a100-80gb-sxm4");
  const rooflab::perf::Work gemm = fp16_gemm_work(256, 2);
  const auto on_fmas = predict(gemm, analyze(gemm_loop(512, 4)), a100, rooflab::perf::constants_for(a100));
  const double fp32_over_tensor = a100.fp32_tflops * 1e12 / *rooflab::peak_flops(a100, rooflab::DType::fp16);
  EXPECT_LE(on_fmas.fraction, fp32_over_tensor * 1.0001) << on_fmas.limiter;  // at best the FMA pipe's share
  EXPECT_GT(on_fmas.fraction, fp32_over_tensor * 0.5) << on_fmas.limiter;
}

// A k-loop that loads its tiles, waits at a barrier and computes: while one block waits for its loads, the other
// blocks on the SM compute. With few blocks (here about 65 ns of work per block and trip against 600 ns of latency)
// every round of trips takes a block's work plus the latency, so two blocks do twice the work of one in the same
// time; with enough blocks the latency is covered and the pipes set the pace.
TEST(PerfModel, OtherBlocksCoverABarriersLoadLatency) {
  const auto code = analyze(tensor_loop(false));
  const auto c = rooflab::perf::constants_for(h100());
  auto at = [&](int blocks_per_sm) {
    rooflab::perf::Work w;
    w.flops = 2.0 * 8192 * 8192 * 8192;
    w.bytes = 1e6;
    w.dtype = rooflab::DType::fp16;
    w.block = 128;
    w.blocks_per_sm = blocks_per_sm;
    return predict(w, code, h100(), c);
  };
  const auto one = at(1), two = at(2), sixteen = at(16);
  EXPECT_EQ(one.limiter, "one block per SM");
  EXPECT_EQ(two.limiter, "load latency behind barriers");
  EXPECT_NEAR(one.time_s / two.time_s, 2.0, 1e-9);
  EXPECT_LT(sixteen.time_s, two.time_s / 4);
  for (const auto& e : sixteen.evidence) EXPECT_EQ(e.find("barriers:"), std::string::npos) << e;
}

// The same k-loop with its tiles copied by cp.async into a ring of stages. A trip waits for an older batch of
// copies (cp.async.wait_group N lets the N newest stay in flight): N trips after their issue when the trip issues
// its copies before the wait, N + 1 when after it. Two blocks do about 64 ns of work per round of trips against
// the 600 ns latency: a batch waited for the trip after its issue leaves each round 600 ns long, one waited for two
// trips later 300 ns, and a ring that keeps sixteen trips of copies in flight hides the latency behind the work. The
// copies are of 8 bytes a lane, so that shared memory (their writes and the ldmatrix reads, 24 wavefronts a trip)
// takes less than the latency.
TEST(PerfModel, CpAsyncStagesSpreadABarriersLoadLatency) {
  auto ring = [](int wait, bool wait_first) {
    std::string body = tensor_loop(true);
    for (auto at = body.find("], 16;"); at != std::string::npos; at = body.find("], 16;")) body.replace(at, 6, "], 8;");
    body.erase(body.find("\tcp.async.wait_group 1;\n"), std::string("\tcp.async.wait_group 1;\n").size());
    const std::string w = "\tcp.async.wait_group " + std::to_string(wait) + ";\n";
    body.insert(wait_first ? body.find("\tcp.async.cg") : body.find("\tbar.sync"), w);
    return analyze(body);
  };
  const auto after1 = ring(1, false), before1 = ring(1, true), after0 = ring(0, false), before15 = ring(15, true);
  EXPECT_EQ(after1.loops[0].async_wait, 1);
  EXPECT_FALSE(after1.loops[0].async_wait_before_copies);
  EXPECT_EQ(after1.loops[0].copies_ahead(), 1);
  EXPECT_TRUE(before1.loops[0].async_wait_before_copies);
  EXPECT_EQ(before1.loops[0].copies_ahead(), 2);
  EXPECT_EQ(after0.loops[0].copies_ahead(), 0);
  EXPECT_EQ(before15.loops[0].copies_ahead(), 16);
  EXPECT_EQ(analyze(tensor_loop(false)).loops[0].copies_ahead(), 0);  // no copies: nothing is ahead
  const auto c = rooflab::perf::constants_for(h100());
  auto at = [&](const rooflab::perf::Code& code) {
    rooflab::perf::Work w;
    w.flops = 2.0 * 8192 * 8192 * 8192;
    w.bytes = 1e6;
    w.dtype = rooflab::DType::fp16;
    w.block = 128;
    w.blocks_per_sm = 2;
    return predict(w, code, h100(), c);
  };
  const auto p_after1 = at(after1), p_before1 = at(before1), p_after0 = at(after0), p_before15 = at(before15);
  EXPECT_EQ(p_after1.limiter, "load latency behind barriers");
  EXPECT_EQ(p_before1.limiter, "load latency behind barriers");
  EXPECT_NEAR(p_after1.time_s / p_before1.time_s, 2.0, 1e-9);  // 600 ns a round, then 300
  EXPECT_GT(p_after0.time_s, p_after1.time_s);                  // the work and then the whole latency
  EXPECT_NE(p_before15.limiter, "load latency behind barriers");
  for (const auto& e : p_before15.evidence) EXPECT_EQ(e.find("barriers:"), std::string::npos) << e;
  bool said = false;
  for (const auto& e : p_before1.evidence) said = said || e.find("waited for 2 trips later") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(PerfModel, MufuBoundElementwiseLoop) {
  // At the H100's copy ceiling (22.6 GB/s per SM) an SM streams 2.8 G elements of 8 bytes (load and store) per
  // second, and its 16 MUFU lanes at 1.98 GHz give 31.7 G results: about 11 exponentials per element. With 64
  // the special-function pipe, not DRAM, sets the pace: 11 / 64 of the copy ceiling.
  std::string body = "$L__BB0_1:\n\tld.global.nc.f32 \t%f1, [%rd1];\n";
  for (int i = 0; i < 64; ++i) body += "\tex2.approx.ftz.f32 \t%f1, %f1;\n";
  body += "\tst.global.f32 \t[%rd2], %f1;\n\t@%p1 bra \t$L__BB0_1;\n";
  const auto code = analyze(body);
  EXPECT_EQ(code.loops[0].mufu, 64);
  const auto p = predict(copy_work(8), code, h100(), rooflab::perf::constants_for(h100()));
  EXPECT_EQ(p.limiter, "MUFU and conversions");
  EXPECT_NEAR(p.fraction, 11.2 / 64, 0.01);
}

// Three pointer parameters read and made global: %rd4, %rd5 and %rd6 hold parameters 0, 1 and 2.
const std::string kThreePointers = R"(
	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u64 	%rd2, [k_param_1];
	ld.param.u64 	%rd3, [k_param_2];
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd5, %rd2;
	cvta.to.global.u64 	%rd6, %rd3;
)";

// A bias add: y[i] = x[i] + bias[i % cols], one element of each per trip. Parameters: x, bias, y, rows, cols.
const std::string kBiasAdd = kThreePointers + R"(
	ld.param.u32 	%r2, [k_param_4];
	mov.u32 	%r1, %tid.x;
$L__BB0_1:
	rem.u32 	%r3, %r1, %r2;
	mul.wide.u32 	%rd7, %r1, 4;
	add.s64 	%rd8, %rd4, %rd7;
	ld.global.nc.f32 	%f1, [%rd8];
	mul.wide.u32 	%rd9, %r3, 4;
	add.s64 	%rd10, %rd5, %rd9;
	ld.global.nc.f32 	%f2, [%rd10];
	add.f32 	%f3, %f1, %f2;
	add.s64 	%rd11, %rd6, %rd7;
	st.global.f32 	[%rd11], %f3;
	add.s32 	%r1, %r1, %r4;
	setp.lt.u32 	%p1, %r1, %r5;
	@%p1 bra 	$L__BB0_1;
	ret;
)";

rooflab::perf::Work bias_add_work(double bias_bytes) {
  rooflab::perf::Work w = copy_work(8);  // x read and y written: 256 MiB each
  w.bytes = 2.0 * (1 << 28);
  w.reach = {1 << 28, bias_bytes, 1 << 28, 0, 0};
  return w;
}

TEST(PerfModel, EachLoadsAddressIsTracedToTheParametersItIsComputedFrom) {
  const auto code = analyze(kBiasAdd);
  ASSERT_EQ(code.loops.size(), 1u);
  const auto& t = code.loops[0];
  // x's address from x alone; the bias's from the bias and cols (the remainder); the loaded values carry neither.
  const std::map<std::vector<int>, double> want{{{0}, 4}, {{1, 4}, 4}};
  EXPECT_EQ(t.bytes_by_params(), want);
  EXPECT_EQ(t.bytes_by_params(true), want);
}

TEST(PerfModel, ASmallArrayEveryRowRereadsIsServedByTheCaches) {
  const auto code = analyze(kBiasAdd);
  const auto c = rooflab::perf::constants_for(h100());
  // A 16 KB bias read once per row of 4096: only x's 4 B per thread are DRAM bytes in flight, the copy's 80%
  // (the H100 run: copy 79.6%, this bias add 80.0%), not the 8 B of an add (92%).
  const auto cached = predict(bias_add_work(16384), code, h100(), c);
  EXPECT_NEAR(cached.fraction, 0.80, 0.02);
  EXPECT_EQ(cached.limiter, "loads in flight");
  bool said = false;
  for (const auto& e : cached.evidence) said = said || e.find("reused data: argument 2 reaches 16.0 KB") != std::string::npos;
  EXPECT_TRUE(said);
  // Without the launch's reach every load is a DRAM load.
  auto unknown = bias_add_work(16384);
  unknown.reach.clear();
  EXPECT_NEAR(predict(unknown, code, h100(), c).fraction, 0.92, 0.02);
  // An array as large as x (a residual add's second input) is read once: a stream, not reused data.
  EXPECT_NEAR(predict(bias_add_work(1 << 28), code, h100(), c).fraction, 0.92, 0.02);
  // Reread many times over but larger than half the L2 (50 MiB on the H100): DRAM serves it.
  auto large = bias_add_work(40.0 * (1 << 20));
  large.bytes *= 64;
  EXPECT_NEAR(predict(large, code, h100(), c).fraction, 0.92, 0.02);
}

TEST(PerfModel, EveryGpuInTheDataHasConstants) {
  for (const auto& g : rooflab::load_gpus(rooflab::data_dir() / "gpus.json")) {
    EXPECT_NO_THROW(rooflab::perf::constants_for(g)) << g.id << " (" << g.arch() << ")";
  }
}

TEST(PerfModel, AMissingArchitectureIsNamed) {
  rooflab::GpuSpec g = h100();
  g.cc_major = 6;
  g.cc_minor = 1;
  try {
    rooflab::perf::constants_for(g);
    FAIL() << "sm_61 has no constants";
  } catch (const rooflab::DataError& e) {
    EXPECT_NE(std::string(e.what()).find("architectures.sm_61"), std::string::npos) << e.what();
  }
}

// ---- SASS: nvdisasm's listing of what ptxas made (hand-written here, in nvdisasm's format) ----

using rooflab::perf::analyze_sass;

std::string sass_copy_loop(int loads, bool serial, int label = 1) {
  const std::string top = ".L_x_" + std::to_string(label);
  const std::string after = ".L_x_" + std::to_string(label + 1);
  std::string body = "        /*0000*/                   S2R R0, SR_TID.X ;\n" + top + ":\n";
  int address = 0x10;
  auto line = [&](const std::string& text) {
    char at[16];
    std::snprintf(at, sizeof at, "%04x", address);
    address += 0x10;
    body += std::string("        /*") + at + "*/                   " + text + " ;\n";
  };
  for (int i = 0; i < loads; ++i) {
    line("LDG.E.CONSTANT R" + std::to_string(10 + i) + ", desc[UR4][R2.64+" + std::to_string(4 * i) + "]");
    if (serial) line("STG.E desc[UR4][R4.64+" + std::to_string(4 * i) + "], R" + std::to_string(10 + i));
  }
  if (!serial) {
    for (int i = 0; i < loads; ++i) line("STG.E desc[UR4][R4.64+" + std::to_string(4 * i) + "], R" + std::to_string(10 + i));
  }
  line("IADD3 R2, P0, R2, UR6, RZ");
  line("ISETP.GE.U32.AND P1, PT, R2, UR7, PT");
  line("@!P1 BRA `(" + top + ")");
  line("EXIT");
  line("BRA `(" + after + ")");
  body += after + ":\n";
  line("NOP");
  return body;
}

TEST(PerfModelSass, LoadsBeforeTheirFirstUseAreInFlight) {
  const auto four = analyze_sass(sass_copy_loop(4, false));
  const auto serial = analyze_sass(sass_copy_loop(4, true));
  EXPECT_EQ(four.from, "SASS");
  ASSERT_EQ(four.loops.size(), 1u);
  EXPECT_TRUE(four.loops[0].loop);
  EXPECT_EQ(four.loops[0].global_loads, 4);
  EXPECT_EQ(four.loops[0].load_bytes, 16);
  EXPECT_EQ(four.loops[0].load_bytes_before_use, 16);
  EXPECT_EQ(four.loops[0].store_bytes, 16);
  EXPECT_EQ(four.loops[0].instructions, 11);  // 4 loads, 4 stores, add, compare, branch: not the NOP
  // The same loads, each stored before the next is issued: one in flight, a quarter of the prediction's bytes.
  EXPECT_EQ(serial.loops[0].load_bytes_before_use, 4);
  const auto c = rooflab::perf::constants_for(h100());
  EXPECT_GT(predict(copy_work(8), four, h100(), c).fraction, predict(copy_work(8), serial, h100(), c).fraction + 0.1);
  EXPECT_NE(predict(copy_work(8), four, h100(), c).evidence.front().find("SASS"), std::string::npos);
}

// nvcc moves a shuffle's fallback for a divergent warp out of line, after the kernel's EXIT: BRA.DIV jumps there and
// the fallback jumps back to the instruction after it. That backward jump closes no loop: the code it jumps back to
// cannot reach it without passing the BRA.DIV. Read as a loop, it would hold the real loop, the stores after it and
// the fallback (the H200 run's decode kernel: "SASS lines 234-1641", its stores among a trip's work).
TEST(PerfModelSass, AJumpBackFromADivergentWarpsFallbackIsNoLoop) {
  const std::string body =
      "        /*0000*/                   S2R R0, SR_TID.X ;\n"
      ".L_x_1:\n"
      "        /*0010*/                   LDG.E R2, desc[UR4][R4.64] ;\n"
      "        /*0020*/                   BRA.DIV UR4, `(.L_x_9) ;\n"
      "        /*0030*/                   SHFL.IDX PT, R3, R2, RZ, 0x1f ;\n"
      ".L_x_5:\n"
      "        /*0040*/                   FADD R6, R3, R6 ;\n"
      "        /*0050*/                   IADD3 R4, P0, R4, UR6, RZ ;\n"
      "        /*0060*/              @!P1 BRA `(.L_x_1) ;\n"
      "        /*0070*/                   STG.E desc[UR4][R8.64], R6 ;\n"
      "        /*0080*/                   EXIT ;\n"
      ".L_x_9:\n"
      "        /*0090*/                   WARPSYNC.ALL ;\n"
      "        /*00a0*/                   SHFL.IDX PT, R3, R2, RZ, 0x1f ;\n"
      "        /*00b0*/                   BRA `(.L_x_5) ;\n"
      ".L_x_10:\n"
      "        /*00c0*/                   BRA `(.L_x_10);\n";
  const auto code = analyze_sass(body);
  ASSERT_EQ(code.loops.size(), 1u);
  EXPECT_EQ(code.loops[0].global_loads, 1);
  EXPECT_EQ(code.loops[0].global_stores, 0);
  EXPECT_EQ(code.loops[0].instructions, 6);  // the load, BRA.DIV, the shuffle, the add, the increment, the branch
}

TEST(PerfModelSass, AWideLoadCoversItsRegisters) {
  // LDG.E.128 R20 writes R20..R23: reading R22 is its first use; reading R24 is not.
  const std::string uses_r22 =
      ".L_x_5:\n"
      "        /*0100*/                   LDG.E.128.CONSTANT R20, desc[UR8][R46.64] ;\n"
      "        /*0110*/                   FADD R30, R22, 1 ;\n"
      "        /*0120*/                   LDG.E.64 R24, desc[UR8][R48.64] ;\n"
      "        /*0125*/                   FADD R31, R24, 1 ;\n"
      "        /*0130*/              @!P0 BRA `(.L_x_5) ;\n";
  const std::string uses_r24 =
      ".L_x_5:\n"
      "        /*0100*/                   LDG.E.128.CONSTANT R20, desc[UR8][R46.64] ;\n"
      "        /*0110*/                   FADD R30, R24, 1 ;\n"
      "        /*0120*/                   LDG.E.64 R26, desc[UR8][R48.64] ;\n"
      "        /*0125*/                   FADD R31, R26, 1 ;\n"
      "        /*0130*/              @!P0 BRA `(.L_x_5) ;\n";
  EXPECT_EQ(analyze_sass(uses_r22).loops[0].load_bytes, 24);
  EXPECT_EQ(analyze_sass(uses_r22).loops[0].load_bytes_before_use, 16);
  EXPECT_EQ(analyze_sass(uses_r24).loops[0].load_bytes_before_use, 24);
}

TEST(PerfModelSass, TheTrapAfterTheLastInstructionIsNoLoop) {
  // A kernel without a loop ends with EXIT and the branch to itself ptxas appends: read as one straight trip,
  // not as a loop of one instruction that moves nothing. A branch to itself under a predicate is a loop (a spin).
  const std::string body =
      "        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;\n"
      "        /*0010*/                   FADD R8, R4, R5 ;\n"
      "        /*0020*/                   STG.E desc[UR4][R2.64], R8 ;\n"
      "        /*0030*/                   EXIT ;\n"
      ".L_x_9:\n"
      "        /*0040*/                   BRA `(.L_x_9);\n";
  const auto code = analyze_sass(body);
  ASSERT_EQ(code.loops.size(), 1U);
  EXPECT_FALSE(code.loops[0].loop);
  EXPECT_EQ(code.loops[0].load_bytes, 16);
  const std::string spin =
      ".L_x_3:\n"
      "        /*0000*/                   LDG.E R4, desc[UR4][R2.64] ;\n"
      ".L_x_4:\n"
      "        /*0010*/              @!P0 BRA `(.L_x_4) ;\n";
  EXPECT_TRUE(analyze_sass(spin).loops.at(0).loop);
}

TEST(PerfModelSass, ASubroutineAfterTheKernelIsNotItsWork) {
  // A division's slow path that ptxas places after the kernel's code (called for rare operands) is left out.
  const std::string body =
      "        /*0000*/                   LDG.E.128 R4, desc[UR4][R2.64] ;\n"
      "        /*0010*/                   MUFU.RCP R8, R4 ;\n"
      "        /*0020*/                   EXIT ;\n"
      "        .weak           $__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath\n"
      "        .type           $__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath,@function\n"
      "$__internal_0_$__cuda_sm3x_div_rn_noftz_f32_slowpath:\n"
      "        /*0030*/                   LDG.E R9, desc[UR4][R2.64] ;\n"
      "        /*0040*/                   MUFU.RCP R10, R9 ;\n"
      "        /*0050*/                   RET.REL.NODEC R20 `(_Z6kernelPf) ;\n";
  const auto t = analyze_sass(body).loops.at(0);
  EXPECT_EQ(t.instructions, 3);
  EXPECT_EQ(t.load_bytes, 16);
  EXPECT_EQ(t.mufu, 1);
}

// A call to a subroutine ptxas placed after the kernel (a 64-bit remainder's, Lab 03's bias index i % cols) returns
// with what the subroutine writes computed from what it reads first: here the remainder in R16:R17, from i (R9:R10)
// and cols (UR8:UR9, parameter 2). What R16:R17 held before the call (the output's address, parameter 0, from the
// previous trip's store) is gone, so the bias load's address comes from the bias (1) and cols (2) alone, and the bias
// can be told for reused data. The subroutine reads R17 and R21 after writing them as the high halves of 64-bit
// results (F2I.U64, IMAD.WIDE): they are not its arguments.
TEST(PerfModelSass, ACallReturnsWhatItsSubroutineComputesFromWhatItReads) {
  rooflab::perf::SassParams params;
  params.base = 0x210;
  params.layout = {{0, 8}, {8, 8}, {16, 8}};
  const std::string body =
      "        /*0000*/                   ULDC.64 UR4, c[0x0][0x208] ;\n"
      "        /*0010*/                   ULDC.64 UR6, c[0x0][0x210] ;\n"
      "        /*0020*/                   ULDC.64 UR18, c[0x0][0x218] ;\n"
      "        /*0030*/                   ULDC.64 UR8, c[0x0][0x220] ;\n"
      "        /*0040*/                   S2R R9, SR_TID.X ;\n"
      "        /*0050*/                   MOV R10, RZ ;\n"
      ".L_x_1:\n"
      "        /*0060*/                   MOV R6, 0x80 ;\n"
      "        /*0070*/                   CALL.REL.NOINC `($__internal_0_$__cuda_sm20_rem_u64) ;\n"
      "        /*0080*/                   LEA R12, P0, R16, UR18, 0x2 ;\n"
      "        /*0090*/                   LEA.HI.X R13, R16, UR19, R17, 0x2, P0 ;\n"
      "        /*00a0*/                   LDG.E.CONSTANT R14, desc[UR4][R12.64] ;\n"
      "        /*00b0*/                   IADD3 R16, P0, R9, UR6, RZ ;\n"
      "        /*00c0*/                   IADD3.X R17, R10, UR7, RZ, P0, !PT ;\n"
      "        /*00d0*/                   STG.E desc[UR4][R16.64], R14 ;\n"
      "        /*00e0*/                   IADD3 R9, R9, 0x100, RZ ;\n"
      "        /*00f0*/                   ISETP.GE.U32.AND P1, PT, R9, 0x1000, PT ;\n"
      "        /*0100*/              @!P1 BRA `(.L_x_1) ;\n"
      "        /*0110*/                   EXIT ;\n"
      "        .weak           $__internal_0_$__cuda_sm20_rem_u64\n"
      "        .type           $__internal_0_$__cuda_sm20_rem_u64,@function\n"
      "$__internal_0_$__cuda_sm20_rem_u64:\n"
      "        /*0120*/                   I2F.U64.RP R18, UR8 ;\n"
      "        /*0130*/                   MUFU.RCP R16, R18 ;\n"
      "        /*0140*/                   F2I.U64.TRUNC R16, R16 ;\n"
      "        /*0150*/                   IMAD.WIDE.U32 R20, R16, UR8, RZ ;\n"
      "        /*0160*/                   IMAD R11, R17, UR8, R21 ;\n"
      "        /*0170*/                   IMAD.HI.U32 R16, R11, R9, RZ ;\n"
      "        /*0180*/                   IMAD R16, R16, UR8, R9 ;\n"
      "        /*0190*/                   MOV R17, RZ ;\n"
      "        /*01a0*/                   RET.REL.NODEC R6 `(_Z6kernelPfPKfm) ;\n";
  const auto code = analyze_sass(body, &params);
  ASSERT_EQ(code.loops.size(), 1u);
  EXPECT_EQ(code.loops[0].bytes_by_params(), (std::map<std::vector<int>, double>{{{1, 2}, 4}}));
  EXPECT_EQ(code.loops[0].instructions, 11);  // the subroutine's instructions are not the loop's
}

TEST(PerfModelSass, PipesAsPtxasChoseThem) {
  // Half to float (HADD2.F32 from -RZ), I2F and F2FP are type conversions, at the conversion rate; a constant made
  // by HFMA2.MMA from RZ is a move, not math; MUFU.EX2 is a special function.
  const std::string body =
      ".L_x_7:\n"
      "        /*0100*/                   LDG.E.U16 R2, desc[UR4][R8.64] ;\n"
      "        /*0110*/                   HADD2.F32 R3, -RZ, R2.H0_H0 ;\n"
      "        /*0120*/                   HFMA2.MMA R5, -RZ, RZ, 0, 0 ;\n"
      "        /*0130*/                   I2F.S8 R4, R6 ;\n"
      "        /*0140*/                   F2FP.F16.F32.PACK_AB R7, R3, R4 ;\n"
      "        /*0150*/                   MUFU.EX2 R9, R3 ;\n"
      "        /*0160*/                   FFMA R10, R9, R3, R10 ;\n"
      "        /*0168*/                   HADD2.F32 R11, R10, R9 ;\n"
      "        /*0170*/                   HMMA.16816.F32 R12, R16, R20, R12 ;\n"
      "        /*0180*/                   LDSM.16.M88.4 R16, [R30] ;\n"
      "        /*0190*/                   LDS.128 R24, [R31] ;\n"
      "        /*01a0*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n"
      "        /*01b0*/                   LDGSTS.E.BYPASS.LTC128B.128 [R32], desc[UR4][R34.64] ;\n"
      "        /*01c0*/              @!P0 BRA `(.L_x_7) ;\n";
  const auto t = analyze_sass(body).loops.at(0);
  EXPECT_EQ(t.conversions, 3);
  EXPECT_EQ(t.mufu, 1);
  EXPECT_EQ(t.ffma, 1);
  EXPECT_EQ(t.hfma2, 0);
  EXPECT_EQ(t.hmma, 1);
  EXPECT_EQ(t.shared_wavefronts, 4 + 4 + 4);  // LDSM .4, a 128-bit LDS and LDGSTS.128's write: four wavefronts each
  EXPECT_EQ(t.barriers, 1);
  EXPECT_EQ(t.cp_async_bytes, 16);
  EXPECT_EQ(t.load_bytes, 2);
  EXPECT_EQ(t.load_bytes_before_use, 2);  // HADD2.F32 reads R2
}

// ptxas writes a cp.async whose source size is chosen at run time (a copy, or zeros outside the matrix) as two
// LDGSTS under complementary guards: each lane runs one, so the pair is one copy's bytes and wavefronts. With the
// predicate rewritten between them, or the same guard twice, both count. "@!PT" never runs: an issue slot, no access.
TEST(PerfModelSass, AComplementaryPairIsOneAccessAndANeverGuardNone) {
  const auto trip = [](const std::string& between, const std::string& second_guard) {
    const std::string body =
        ".L_x_3:\n"
        "        /*0100*/                   DEPBAR.LE SB0, 0x1 ;\n"
        "        /*0110*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n"
        "        /*0118*/              @!PT LDS RZ, [RZ] ;\n"
        "        /*0120*/              @!P0 LDGSTS.E.BYPASS.128 [R32], desc[UR4][R34.64], !PT ;\n" +
        between + "        /*0130*/               " + second_guard + " LDGSTS.E.BYPASS.128 [R32], desc[UR4][R34.64] ;\n" +
        "        /*0140*/                   LDGDEPBAR ;\n"
        "        /*0150*/                   LDSM.16.M88.4 R16, [R30] ;\n"
        "        /*0160*/                   HMMA.16816.F32 R12, R16, R20, R12 ;\n"
        "        /*0170*/              @!P1 BRA `(.L_x_3) ;\n";
    return analyze_sass(body).loops.at(0);
  };
  const auto pair = trip("", "@P0");
  EXPECT_EQ(pair.cp_async_bytes, 16);
  EXPECT_EQ(pair.shared_wavefronts, 4 + 4);  // one copy's write, the LDSM's four matrices; not the @!PT LDS
  EXPECT_EQ(pair.instructions, 9);           // every instruction issues, the @!PT one too
  const auto rewritten = trip("        /*0128*/                   ISETP.GE.AND P0, PT, R2, 0x10, PT ;\n", "@P0");
  EXPECT_EQ(rewritten.cp_async_bytes, 32);
  EXPECT_EQ(trip("", "@!P0").cp_async_bytes, 32);
}

TEST(PerfModelSass, ADepbarIsTheWaitForCpAsyncBatches) {
  // nvcc's ring: the wait (DEPBAR.LE SB0, N) and barrier at the top of the trip, the next stage's copies after.
  const std::string body =
      ".L_x_3:\n"
      "        /*0100*/                   DEPBAR.LE SB0, 0x1 ;\n"
      "        /*0110*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;\n"
      "        /*0120*/                   LDGSTS.E.BYPASS.128 [R32], desc[UR4][R34.64] ;\n"
      "        /*0130*/                   LDGDEPBAR ;\n"
      "        /*0140*/                   LDSM.16.M88.4 R16, [R30] ;\n"
      "        /*0150*/                   HMMA.16816.F32 R12, R16, R20, R12 ;\n"
      "        /*0160*/              @!P0 BRA `(.L_x_3) ;\n";
  const auto t = analyze_sass(body).loops.at(0);
  EXPECT_EQ(t.async_wait, 1);
  EXPECT_TRUE(t.async_wait_before_copies);
  EXPECT_EQ(t.copies_ahead(), 2);
}

TEST(PerfModelSass, ARemainderLoopIsTheNextLoopWithAFractionOfTheLoads) {
  // ptxas unrolls a run-time trip count by four and leaves a one-load loop for the trips that are left.
  const auto code = analyze_sass(sass_copy_loop(4, false, 1) + sass_copy_loop(1, false, 3));
  ASSERT_EQ(code.loops.size(), 2u);
  EXPECT_TRUE(code.loops[1].remainder);
  EXPECT_EQ(code.hot, 0);
}

TEST(PerfModelSass, TheListingIsSplitByFunction) {
  const std::string listing =
      "\t.target\tsm_90\n"
      "//--------------------- .text._Z4copyPKfPfi --------------------------\n"
      "\t.section\t.text._Z4copyPKfPfi,\"ax\",@progbits\n"
      "_Z4copyPKfPfi:\n"
      ".text._Z4copyPKfPfi:\n"
      "        /*0000*/                   LDC R1, c[0x0][0x28] ;\n"
      "//--------------------- .text._Z5scalePKfPfi --------------------------\n"
      "        /*0000*/                   EXIT ;\n"
      "//--------------------- SYMBOLS --------------------------\n"
      "\t.type\t\t.nv.reservedSmem.offset0,@object\n";
  const auto f = rooflab::perf::sass_functions(listing);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_NE(f.at("_Z4copyPKfPfi").find("LDC R1"), std::string::npos);
  EXPECT_EQ(f.at("_Z5scalePKfPfi").find("LDC"), std::string::npos);
  // A function's own name and section labels are not loop labels: one straight trip of one instruction.
  const auto code = analyze_sass(f.at("_Z4copyPKfPfi"));
  ASSERT_EQ(code.loops.size(), 1u);
  EXPECT_FALSE(code.loops[0].loop);
  EXPECT_EQ(code.loops[0].instructions, 1);
}

}  // namespace

// The parameters' layout in constant bank 0 from a PTX entry's list: a pointer's ".align 1" is its pointee's,
// a 12-byte struct sits at its own alignment, a 64-bit scalar at 8 (sm_90 listings: 0x210 x, 0x218 bias, 0x220 y,
// 0x228 the struct, 0x234 cols, 0x238 n).
TEST(PerfModelSass, TheParametersLayoutFollowsTheirAlignment) {
  const auto layout = rooflab::ptx::param_layout(
      "\n\t.param .u64 .ptr .align 1 _Z1k_param_0,\n\t.param .u64 .ptr .align 1 _Z1k_param_1,\n"
      "\t.param .u64 .ptr .align 1 _Z1k_param_2,\n\t.param .align 4 .b8 _Z1k_param_3[12],\n"
      "\t.param .u32 _Z1k_param_4,\n\t.param .u64 _Z1k_param_5\n");
  const std::vector<std::pair<int, int>> want{{0, 8}, {8, 8}, {16, 8}, {24, 12}, {36, 4}, {40, 8}};
  EXPECT_EQ(layout, want);
  EXPECT_EQ(rooflab::perf::param_bank_base("sm_89"), 0x160);
  EXPECT_EQ(rooflab::perf::param_bank_base("sm_90"), 0x210);
  EXPECT_EQ(rooflab::perf::param_bank_base("sm_100"), 0x380);
}

// The bias add in nvdisasm's form (sm_90): the pointers come from constant bank 0 through uniform registers, the
// loads' addresses from them; the global-memory descriptor (c[0x0][0x208]) is no parameter.
TEST(PerfModelSass, ALoadIsTracedToItsParameterThroughConstantBankZero) {
  const std::string body =
      "        /*0000*/                   ULDC.64 UR4, c[0x0][0x208] ;\n"
      "        /*0010*/                   ULDC.64 UR6, c[0x0][0x210] ;\n"
      "        /*0020*/                   ULDC.64 UR8, c[0x0][0x218] ;\n"
      "        /*0030*/                   LDC R5, c[0x0][0x234] ;\n"
      "        /*0040*/                   S2R R0, SR_TID.X ;\n"
      ".L_x_1:\n"
      "        /*0050*/                   IMAD.WIDE.U32 R2, R0, 0x4, RZ ;\n"
      "        /*0060*/                   IADD3 R6, P0, R2, UR6, RZ ;\n"
      "        /*0070*/                   IADD3.X R7, R3, UR7, RZ, P0, !PT ;\n"
      "        /*0080*/                   LDG.E.CONSTANT R10, desc[UR4][R6.64] ;\n"
      "        /*0090*/                   IMAD.HI.U32 R4, R0, R5, RZ ;\n"
      "        /*00a0*/                   LEA R8, P0, R4, UR8, 0x2 ;\n"
      "        /*00b0*/                   LEA.HI.X R9, R4, UR9, RZ, 0x2, P0 ;\n"
      "        /*00c0*/                   LDG.E.CONSTANT R11, desc[UR4][R8.64] ;\n"
      "        /*00d0*/                   FADD R12, R10, R11 ;\n"
      "        /*00e0*/                   STG.E desc[UR4][R6.64], R12 ;\n"
      "        /*00f0*/                   IADD3 R0, R0, 0x100, RZ ;\n"
      "        /*0100*/                   ISETP.GE.U32.AND P1, PT, R0, 0x1000, PT ;\n"
      "        /*0110*/              @!P1 BRA `(.L_x_1) ;\n"
      "        /*0120*/                   EXIT ;\n";
  rooflab::perf::SassParams params;
  params.base = 0x210;
  params.layout = {{0, 8}, {8, 8}, {16, 8}, {24, 12}, {36, 4}, {40, 8}};
  const auto traced = analyze_sass(body, &params);
  ASSERT_EQ(traced.loops.size(), 1u);
  const std::map<std::vector<int>, double> want{{{0}, 4}, {{1, 4}, 4}};
  EXPECT_EQ(traced.loops[0].bytes_by_params(), want);
  // Without the layout nothing is traced (every load then counts as DRAM).
  EXPECT_TRUE(analyze_sass(body).loops[0].bytes_by_params().count({}) == 1);
}

// A software-pipelined loop whose first load is of reused data (a GEMV's x): it uses x at once, and loads the next
// trip's weights after that use. With x served by the caches nothing before the first use is DRAM; the weights for
// the next trip (nothing later in this trip reads them) are what is in flight.
TEST(PerfModel, ALoopLeftWithNoDramLoadsBeforeItsFirstUseCountsItsLoadsForTheNextTrip) {
  const std::string body = kThreePointers + R"(
$L__BB0_1:
	mov.f32 	%f10, %f2;
	ld.global.nc.f32 	%f1, [%rd5];
	add.f32 	%f3, %f1, %f10;
	ld.global.nc.v4.f32 	{%f2, %f4, %f5, %f6}, [%rd4];
	st.global.f32 	[%rd6], %f3;
	add.s64 	%rd4, %rd4, 4096;
	setp.lt.u64 	%p1, %rd4, %rd7;
	@%p1 bra 	$L__BB0_1;
	ret;
)";
  const auto code = analyze(body);
  ASSERT_EQ(code.loops.size(), 1u);
  EXPECT_EQ(code.loops[0].load_bytes_before_use, 4);  // x only: the weights come after its use
  const auto c = rooflab::perf::constants_for(h100());
  rooflab::perf::Work w = copy_work(8);
  w.bytes = 1.0 * (1 << 30);
  w.reach = {1 << 30, 16384, 1 << 20};
  const auto p = predict(w, code, h100(), c);
  bool said = false;
  for (const auto& e : p.evidence) said = said || e.find("16 B of loads for the next trip") != std::string::npos;
  EXPECT_TRUE(said);
  // 16 B per thread in flight (2048 threads: 32 KB per SM, about 97%), not none (no limit) and not x's 4 B (80%).
  EXPECT_NEAR(p.fraction, 0.97, 0.02);
}

// A write under a predicate may not happen: the register keeps what it held as well (the trace unions), where an
// unguarded write replaces it. Here the address pair R6:R7 holds x (parameter 0), then is set to the bias
// (parameter 1), with or without a predicate.
TEST(PerfModelSass, AGuardedWriteKeepsTheRegistersOldParameters) {
  rooflab::perf::SassParams params;
  params.base = 0x210;
  params.layout = {{0, 8}, {8, 8}};
  const auto address_of_load = [&](const std::string& guard, const std::string& load_guard = "",
                                    const std::string& between = "") {
    const std::string body =
        "        /*0000*/                   ULDC.64 UR4, c[0x0][0x208] ;\n"
        "        /*0010*/                   ULDC.64 UR6, c[0x0][0x210] ;\n"
        "        /*0020*/                   ULDC.64 UR8, c[0x0][0x218] ;\n"
        "        /*0030*/                   IADD3 R6, P0, R2, UR6, RZ ;\n"
        "        /*0040*/                   IADD3.X R7, R3, UR7, RZ, P0, !PT ;\n"
        "        /*0050*/                   " + guard + "IADD3 R6, P0, R2, UR8, RZ ;\n"
        "        /*0060*/                   " + guard + "IADD3.X R7, R3, UR9, RZ, P0, !PT ;\n" + between +
        "        /*0070*/                   " + load_guard + "LDG.E R10, desc[UR4][R6.64] ;\n"
        "        /*0080*/                   EXIT ;\n";
    return analyze_sass(body, &params).loops.at(0).bytes_by_params();
  };
  using ByParams = std::map<std::vector<int>, double>;
  EXPECT_EQ(address_of_load(""), (ByParams{{{1}, 4}}));
  EXPECT_EQ(address_of_load("@P1 "), (ByParams{{{0, 1}, 4}}));
  EXPECT_EQ(address_of_load("@PT "), (ByParams{{{1}, 4}}));  // always true: a plain write
  // A load under the same guard runs only where the guarded writes did, and sees only what they wrote: ptxas
  // predicates a parameter's address computation with the load it feeds (Lab 08's GEMVs' x).
  EXPECT_EQ(address_of_load("@!P1 ", "@!P1 "), (ByParams{{{1}, 4}}));
  EXPECT_EQ(address_of_load("@!P1 ", "@P1 "), (ByParams{{{0, 1}, 4}}));  // the other polarity: the old value
  // The predicate written again between the two: the guard no longer says where the write happened.
  const std::string rewrite_p1 = "        /*0068*/                   ISETP.GE.AND P1, PT, R2, 0x10, PT ;\n";
  EXPECT_EQ(address_of_load("@!P1 ", "@!P1 ", rewrite_p1), (ByParams{{{0, 1}, 4}}));
}

// Declared bytes far past what the launch's arrays hold (a tiled GEMM's strips read again by every block) are
// rereads the L2 serves on a GPU: DRAM moves the arrays at least once, the L2 every declared byte, and the memory
// roof is the slower of the two at the architecture's L2 rate (data/perf_model.json). Where the architecture has no
// L2 rate, every declared byte is read at DRAM's rate, and the evidence says so. Bytes near the arrays' size (a
// stream read once) say nothing of it, nor does a launch without reach.
TEST(PerfModel, DeclaredBytesFarPastTheArraysAreRereadsTheL2Serves) {
  const auto code = analyze(kBiasAdd);
  const auto c = rooflab::perf::constants_for(h100());
  ASSERT_GT(c.l2_bytes_per_clock, 0);
  auto said = [](const rooflab::perf::Prediction& p) {
    for (const auto& e : p.evidence) {
      if (e.rfind("rereads: ", 0) == 0) return e;
    }
    return std::string();
  };
  auto tiled = bias_add_work(1 << 28);  // three arrays of 256 MiB, 256 MiB each: 805 MB
  const double footprint = 3.0 * (1 << 28);
  tiled.bytes = 16 * footprint;
  const auto at_l2 = predict(tiled, code, h100(), c);
  const std::string line = said(at_l2);
  EXPECT_NE(line.find("are 16.0x the 805 MB the launch's arrays hold"), std::string::npos) << line;
  EXPECT_NE(line.find("the slower, the L2's, is the memory roof"), std::string::npos) << line;
  EXPECT_EQ(at_l2.roof, "L2 roof");
  // The L2's rate: its bytes per clock at the boost clock, at the copy ceiling's share of DRAM's.
  const double l2_bw = c.l2_bytes_per_clock * *h100().boost_clock_mhz * 1e6 * c.copy_fraction;
  EXPECT_NEAR(at_l2.roof_time_s, tiled.bytes / l2_bw, 1e-9);

  // The same kernel with no L2 rate: every declared byte at DRAM's rate, the slow end.
  auto no_l2 = c;
  no_l2.l2_bytes_per_clock = 0;
  const auto at_dram = predict(tiled, code, h100(), no_l2);
  EXPECT_NE(said(at_dram).find("the model has no L2 rate for sm_90"), std::string::npos) << said(at_dram);
  EXPECT_EQ(at_dram.roof, "copy ceiling");
  const double copy_bw = h100().bandwidth_gbps * 1e9 * c.copy_fraction;
  EXPECT_NEAR(at_dram.roof_time_s, tiled.bytes / copy_bw, 1e-9);
  EXPECT_GT(at_dram.time_s, 2 * at_l2.time_s);

  // Rereads of 2.5x: the L2 moves them faster than DRAM moves the arrays once, and DRAM's once is the roof.
  tiled.bytes = 2.5 * footprint;
  const auto once = predict(tiled, code, h100(), c);
  EXPECT_NE(said(once).find("the slower, DRAM's, is the memory roof"), std::string::npos) << said(once);
  EXPECT_EQ(once.roof, "copy ceiling");
  EXPECT_NEAR(once.roof_time_s, footprint / copy_bw, 1e-9);

  EXPECT_EQ(said(predict(bias_add_work(1 << 28), code, h100(), c)), "");
  tiled.reach.clear();
  EXPECT_EQ(said(predict(tiled, code, h100(), c)), "");
}

// A kernel that reads its input in two passes, as the softmax that ran on both GPUs did (its max and sum, then its
// outputs): loop 1 reads 16 B of x a trip, loop 2 reads the same 16 B and writes 16 B of y. Parameters: x, y, n.
// `tail`: a third loop after the second reads x 4 B a trip (the elements the vectorized loop left). `copies`: the
// first loop's exit jumps past the second (two copies of one loop for two cases, as nvcc unswitches one: one runs).
std::string two_passes(bool tail = false, bool copies = false) {
  std::string body = R"(
	ld.param.u64 	%rd1, [k_param_0];
	ld.param.u64 	%rd2, [k_param_1];
	cvta.to.global.u64 	%rd4, %rd1;
	cvta.to.global.u64 	%rd6, %rd2;
	mov.u32 	%r1, %tid.x;
$L__BB0_1:
	mul.wide.u32 	%rd7, %r1, 16;
	add.s64 	%rd8, %rd4, %rd7;
	ld.global.nc.v4.f32 	{%f1, %f2, %f3, %f4}, [%rd8];
	max.f32 	%f10, %f10, %f1;
	max.f32 	%f10, %f10, %f2;
	max.f32 	%f10, %f10, %f3;
	max.f32 	%f10, %f10, %f4;
	add.s32 	%r1, %r1, 32;
	setp.lt.u32 	%p1, %r1, %r5;
	@%p1 bra 	$L__BB0_1;
)";
  if (copies) body += "\tbra.uni \t$L__BB0_9;\n";
  body += R"(	mov.u32 	%r2, %tid.x;
$L__BB0_2:
	mul.wide.u32 	%rd9, %r2, 16;
	add.s64 	%rd10, %rd4, %rd9;
	ld.global.nc.v4.f32 	{%f5, %f6, %f7, %f8}, [%rd10];
	sub.f32 	%f11, %f5, %f10;
	ex2.approx.f32 	%f11, %f11;
	sub.f32 	%f12, %f6, %f10;
	ex2.approx.f32 	%f12, %f12;
	add.s64 	%rd11, %rd6, %rd9;
	st.global.v4.f32 	[%rd11], {%f11, %f12, %f11, %f12};
	add.s32 	%r2, %r2, 32;
	setp.lt.u32 	%p2, %r2, %r5;
	@%p2 bra 	$L__BB0_2;
)";
  if (tail) {
    body += R"($L__BB0_3:
	mul.wide.u32 	%rd12, %r3, 4;
	add.s64 	%rd13, %rd4, %rd12;
	ld.global.nc.f32 	%f20, [%rd13];
	add.s64 	%rd14, %rd6, %rd12;
	st.global.f32 	[%rd14], %f20;
	add.s32 	%r3, %r3, 1;
	setp.lt.u32 	%p3, %r3, %r6;
	@%p3 bra 	$L__BB0_3;
)";
  }
  return body + "$L__BB0_9:\n\tret;\n";
}

// x and y of 256 MiB each; `grid` blocks of 256 threads, 8 per SM.
rooflab::perf::Work two_pass_work(unsigned long long grid) {
  rooflab::perf::Work w = copy_work(8);
  w.bytes = 2.0 * (1 << 28);
  w.reach = {1 << 28, 1 << 28, 0};
  w.grid = grid;
  return w;
}

std::string said_of(const rooflab::perf::Prediction& p, const std::string& what) {
  for (const auto& e : p.evidence) {
    if (e.find(what) != std::string::npos) return e;
  }
  return {};
}

TEST(PerfModel, ASecondPassOverTheInputAddsItsWorkAndItsDramRead) {
  const auto code = analyze(two_passes());
  ASSERT_EQ(code.loops.size(), 2u);
  ASSERT_EQ(code.hot, 1) << "the pass that reads x and writes y does the most work of its own";
  ASSERT_EQ(code.passes, std::vector<int>{0});
  const auto c = rooflab::perf::constants_for(h100());
  // 16 trips a thread (4096 blocks): between its two reads of an element the GPU's 270336 resident threads read
  // 69 MB of x, past half the H100's 50 MiB L2: the second read comes from DRAM, 48 B a trip where 32 B are declared.
  const auto far = predict(two_pass_work(4096), code, h100(), c);
  EXPECT_EQ(far.limiter, "second read from DRAM");
  const std::string pass = said_of(far, "a pass beside it");
  EXPECT_NE(pass.find("the pass's 10 instructions"), std::string::npos) << pass;
  const std::string dram = said_of(far, "resident threads read");
  EXPECT_NE(dram.find("270336 resident threads read 69.2 MB of the array (16.0 trips a thread"), std::string::npos) << dram;
  EXPECT_NE(dram.find("DRAM serves the second read"), std::string::npos) << dram;
  EXPECT_NE(said_of(far, "per trip and thread: 22 instructions").find("1 stores (16 B)"), std::string::npos)
      << "the pass's 10 instructions added to the loop's 12, its load of x not added as bytes";
  // One trip a thread (65536 blocks): 4.3 MB read in between, which the L2 holds: no DRAM bytes beyond the declared.
  const auto near = predict(two_pass_work(65536), code, h100(), c);
  EXPECT_NE(said_of(near, "resident threads read").find("the L2 serves the second read"), std::string::npos);
  EXPECT_NEAR(far.fraction, near.fraction * 32 / 48, 0.02) << "a third more DRAM bytes, at the same rate";
  // Without a grid, how much is read in between is unknown: the L2 is taken to serve it, and it says so.
  const auto unknown = predict(two_pass_work(0), code, h100(), c);
  EXPECT_NE(said_of(unknown, "no grid is known"), "");
  EXPECT_NEAR(unknown.fraction, near.fraction, 0.01) << "(the grid of 65536 blocks ends in a partial wave)";
}

TEST(PerfModel, ATailLoopOrAnotherCopyOfTheLoopIsNoPass) {
  const auto c = rooflab::perf::constants_for(h100());
  // The tail reads 4 B of x a trip where the hot loop reads 16 B: it covers what the vectorized loop left, not the
  // whole array again.
  const auto tail = analyze(two_passes(true));
  ASSERT_EQ(tail.loops.size(), 3u);
  const auto with_tail = predict(two_pass_work(4096), tail, h100(), c);
  std::vector<std::string> passes;
  for (const auto& e : with_tail.evidence) {
    if (e.find("a pass beside it") != std::string::npos) passes.push_back(e);
  }
  ASSERT_EQ(passes.size(), 1u) << "the first loop is a pass, the tail is not";
  EXPECT_NE(passes[0].find("lines 7-17"), std::string::npos) << passes[0];
  // Two copies of one loop, the first jumping past the second: one runs, and neither is the other's pass.
  const auto copies = analyze(two_passes(false, true));
  ASSERT_EQ(copies.loops.size(), 2u);
  EXPECT_TRUE(copies.passes.empty());
  const auto p = predict(two_pass_work(4096), copies, h100(), c);
  EXPECT_EQ(said_of(p, "a pass beside it"), "");
  EXPECT_NE(p.limiter, "second read from DRAM");
}

// A tensor k-loop (64 columns a trip up to the parameter k) that stages a batch's rows first, in a loop of its own
// whose trip count comes from the parameter `batch`: each lane loads a 16-byte piece and stores it to shared memory
// before it loads the next, pieces lane, lane + 32, ... below batch x 8.
std::string staged_tensor_loop() {
  std::string body =
      "\tld.param.u64 \t%rd1, [_Z1kPKvS0_Pviii_param_0];\n"
      "\tld.param.u32 \t%r1, [_Z1kPKvS0_Pviii_param_4];\n"
      "\tld.param.u32 \t%r2, [_Z1kPKvS0_Pviii_param_5];\n"
      "\tcvta.to.global.u64 \t%rd4, %rd1;\n"
      "\tmov.u32 \t%r3, %tid.x;\n"
      "\tand.b32 \t%r4, %r3, 31;\n"
      "\tshl.b32 \t%r5, %r2, 3;\n"
      "\tmov.u32 \t%r6, 0;\n"
      "$L__BB0_1:\n"
      "\tmov.u32 \t%r7, %r4;\n"
      "\tsetp.ge.s32 \t%p1, %r7, %r5;\n"
      "\t@%p1 bra \t$L__BB0_3;\n"
      "$L__BB0_2:\n"
      "\tmul.wide.s32 \t%rd2, %r7, 16;\n"
      "\tadd.s64 \t%rd3, %rd4, %rd2;\n"
      "\tld.global.nc.v4.u32 \t{%r10, %r11, %r12, %r13}, [%rd3];\n"
      "\tst.shared.v4.u32 \t[%r8], {%r10, %r11, %r12, %r13};\n"
      "\tadd.s32 \t%r7, %r7, 32;\n"
      "\tsetp.lt.s32 \t%p2, %r7, %r5;\n"
      "\t@%p2 bra \t$L__BB0_2;\n"
      "$L__BB0_3:\n"
      "\tbar.sync \t0;\n"
      "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 \t{%r30, %r31, %r32, %r33}, [%r40];\n";
  for (int i = 0; i < 8; ++i) {
    body += "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 \t{%f1, %f2, %f3, %f4}, {%r30, %r31, %r32, %r33}, "
            "{%r34, %r35}, {%f1, %f2, %f3, %f4};\n";
  }
  body +=
      "\tbar.sync \t0;\n"
      "\tadd.s32 \t%r6, %r6, 64;\n"
      "\tsetp.lt.s32 \t%p3, %r6, %r1;\n"
      "\t@%p3 bra \t$L__BB0_1;\n"
      "\tret;\n";
  return body;
}

rooflab::perf::Work staged_work(std::optional<long long> batch) {
  rooflab::perf::Work w;
  w.dtype = rooflab::DType::fp16;
  w.block = 128;
  w.blocks_per_sm = 2;
  w.grid = 264;  // one wave on the H100's 132 SMs
  w.reach = {1 << 20, 0, 0, 0, 0, 0};
  w.scalars = {std::nullopt, std::nullopt, std::nullopt, std::nullopt, 16384, batch};
  // 8 HMMA.16816 (4096 FLOPs each) a warp and trip; 256 trips (k = 16384) for each of the grid's 1056 warps.
  w.flops = 4096.0 * 8 * 256 * 264 * 4;
  w.bytes = 1e6;
  return w;
}

TEST(PerfModel, AStagingLoopsTripsComeFromTheLaunchsArguments) {
  auto code = analyze(staged_tensor_loop());
  ASSERT_EQ(code.loops.size(), 2u);
  ASSERT_EQ(code.spans.size(), 2u);
  const int staging = code.hot == 0 ? 1 : 0;
  ASSERT_GT(code.loops[static_cast<std::size_t>(code.hot)].hmma, 0) << "the k-loop is the hot loop";
  // Batch 64: 512 pieces, 16 for lane 0 of each k-step; 256 k-steps.
  rooflab::perf::count_trips(code, staged_tensor_loop(), staged_work(64));
  EXPECT_EQ(code.trips.head_runs[static_cast<std::size_t>(code.hot)], 256);
  EXPECT_EQ(code.trips.head_runs[static_cast<std::size_t>(staging)], 256 * 16);
  EXPECT_EQ(code.trips.round_trips, 16) << "the staging loop's 16 trips, each a load used by the next instruction";
  EXPECT_EQ(code.trips.hot_trips, 256);
  EXPECT_NE(code.trips.round_trips_why.find("16 a trip (the loads of PTX line 16 (16 times)"), std::string::npos)
      << code.trips.round_trips_why;
  // Batch 9: 72 pieces, 3 for lane 0 (0, 32, 64).
  rooflab::perf::count_trips(code, staged_tensor_loop(), staged_work(9));
  EXPECT_EQ(code.trips.round_trips, 3);
  // Batch unknown: the first branch on it ends the run, and nothing is counted.
  rooflab::perf::count_trips(code, staged_tensor_loop(), staged_work(std::nullopt));
  EXPECT_EQ(code.trips.round_trips, 0);
  EXPECT_EQ(code.trips.head_runs[static_cast<std::size_t>(code.hot)], 0);
}

TEST(PerfModel, StagingLoadsUsedOneAfterAnotherAreAChainOfRoundTrips) {
  const auto c = rooflab::perf::constants_for(h100());
  auto code = analyze(staged_tensor_loop());
  rooflab::perf::count_trips(code, staged_tensor_loop(), staged_work(64));
  const auto p = predict(staged_work(64), code, h100(), c);
  EXPECT_EQ(p.limiter, "round trips one after another");
  // 4096 round trips of the loaded latency (600 ns on sm_90) in one wave: 2.46 ms, far past the math; behind the
  // barrier each of the 256 trips is its work and then its 16 round trips.
  EXPECT_GT(p.time_s, 4096 * c.barrier_latency_ns * 1e-9);
  EXPECT_NE(said_of(p, "round trips: 16 a trip").find("4096 for a thread's run"), std::string::npos);
  EXPECT_NE(said_of(p, "barriers:").find("(16 round trips one after another, 600 ns each)"), std::string::npos)
      << said_of(p, "barriers:");
  // Each round trip a trip waits for costs the latency once a trip, whatever the work: 8 fewer save 256 x 8 x 600 ns
  // in the one wave, twice what 4 fewer save.
  const auto with_rounds = [&](double rounds) {
    auto fewer = code;
    fewer.trips.round_trips = rounds;
    return predict(staged_work(64), fewer, h100(), c).time_s;
  };
  EXPECT_NEAR(p.time_s - with_rounds(8), 256 * 8 * c.barrier_latency_ns * 1e-9, 1e-9);
  EXPECT_NEAR(p.time_s - with_rounds(8), 2 * (p.time_s - with_rounds(12)), 1e-9);
  // Two waves of blocks: a slot runs two blocks one after another.
  auto two = staged_work(64);
  two.grid = 528;
  two.flops *= 2;
  EXPECT_NEAR(predict(two, code, h100(), c).time_s, 2 * p.time_s, 1e-9);
  // Without the trips (the batch not recorded) there is no chain to see.
  auto unknown = analyze(staged_tensor_loop());
  rooflab::perf::count_trips(unknown, staged_tensor_loop(), staged_work(std::nullopt));
  const auto q = predict(staged_work(std::nullopt), unknown, h100(), c);
  EXPECT_NE(q.limiter, "round trips one after another");
  EXPECT_EQ(said_of(q, "round trips:"), "");
  EXPECT_LT(q.time_s, p.time_s / 10);
}

// The run's integer arithmetic follows PTX's types: a 32-bit unsigned comparison sees -1 as 4294967295, a shift right
// of an unsigned value brings in zeros, and mul.wide keeps the high half a 32-bit product would lose.
TEST(PerfModel, TheTripCountRunComputesAsPtxsTypesSay) {
  const std::string body =
      "\tld.param.u32 \t%r1, [_Z1kPfi_param_1];\n"
      "\tmov.u32 \t%r2, -1;\n"
      "\tsetp.gt.u32 \t%p1, %r2, 5;\n"    // unsigned: 4294967295 > 5
      "\t@!%p1 bra \t$L__BB0_9;\n"
      "\tadd.s32 \t%r3, %r1, 7;\n"
      "\tshr.u32 \t%r4, %r3, 3;\n"       // (1000 + 7) / 8 = 125
      "\tmul.wide.u32 \t%rd1, %r1, 8388608;\n"  // 1000 x 2^23: past 32 bits
      "\tsetp.ne.s64 \t%p2, %rd1, 8388608000;\n"
      "\t@%p2 bra \t$L__BB0_9;\n"
      "\tmov.u32 \t%r5, 0;\n"
      "$L__BB0_1:\n"
      "\tld.global.f32 \t%f1, [%rd2];\n"
      "\tst.global.f32 \t[%rd3], %f1;\n"
      "\tadd.s32 \t%r5, %r5, 1;\n"
      "\tsetp.lt.u32 \t%p3, %r5, %r4;\n"
      "\t@%p3 bra \t$L__BB0_1;\n"
      "$L__BB0_9:\n"
      "\tret;\n";
  auto code = analyze(body);
  ASSERT_EQ(code.loops.size(), 1u);
  rooflab::perf::Work w;
  w.block = 256;
  w.grid = 1;
  w.reach = {4096, 0};
  w.scalars = {std::nullopt, 1000};
  rooflab::perf::count_trips(code, body, w);
  EXPECT_EQ(code.trips.head_runs[0], 125) << "a wrong comparison or shift skips the loop or runs it otherwise";
  EXPECT_EQ(code.trips.round_trips, 1) << "a load, then the store that uses it: one round trip a trip";
  EXPECT_NE(code.trips.trips_why.find("runs 125 trips for thread 0 of block 0"), std::string::npos) << code.trips.trips_why;
}

// A k-loop that stages one or two 16-byte pieces per thread before its barrier, the second behind a branch on the
// piece count (an unrolled loop's remainder: `skip_stores`, the branch skips the second piece's load and its store)
// or behind a bounds guard around its load alone (the store runs either way), then FMAs on shared memory.
std::string staged_pieces(bool skip_stores) {
  std::string body =
      "\tld.param.u64 \t%rd1, [_Z1kPKfPfii_param_0];\n"
      "\tld.param.u32 \t%r1, [_Z1kPKfPfii_param_2];\n"
      "\tld.param.u32 \t%r2, [_Z1kPKfPfii_param_3];\n"
      "\tcvta.to.global.u64 \t%rd2, %rd1;\n"
      "\tmov.u32 \t%r3, %tid.x;\n"
      "\tmov.u32 \t%r4, 0;\n"
      "$L__BB0_1:\n"
      "\tmul.wide.u32 \t%rd3, %r3, 16;\n"
      "\tadd.s64 \t%rd4, %rd2, %rd3;\n"
      "\tld.global.nc.v4.f32 \t{%f1, %f2, %f3, %f4}, [%rd4];\n"
      "\tst.shared.v4.f32 \t[%r5], {%f1, %f2, %f3, %f4};\n"
      "\tsetp.lt.s32 \t%p1, %r2, 2;\n"
      "\t@%p1 bra \t$L__BB0_3;\n"
      "\tld.global.nc.v4.f32 \t{%f5, %f6, %f7, %f8}, [%rd4+4096];\n";
  const std::string second_store = "\tst.shared.v4.f32 \t[%r5+4096], {%f5, %f6, %f7, %f8};\n";
  body += skip_stores ? second_store + "$L__BB0_3:\n" : "$L__BB0_3:\n" + second_store;
  body += "\tbar.sync \t0;\n\tld.shared.f32 \t%f9, [%r6];\n";
  for (int i = 0; i < 64; ++i) body += "\tfma.rn.f32 \t%f10, %f9, %f9, %f10;\n";
  body +=
      "\tbar.sync \t0;\n"
      "\tadd.s32 \t%r4, %r4, 1;\n"
      "\tsetp.lt.s32 \t%p2, %r4, %r1;\n"
      "\t@%p2 bra \t$L__BB0_1;\n"
      "\tret;\n";
  return body;
}

rooflab::perf::Work pieces_work(long long pieces) {
  rooflab::perf::Work w;
  w.block = 256;
  w.blocks_per_sm = 2;
  w.grid = 264;
  w.reach = {1 << 24, 1 << 20, 0, 0};
  w.scalars = {std::nullopt, std::nullopt, 512, pieces};
  w.flops = 2.0 * 64 * 512 * 264 * 256;
  w.bytes = 1e6;
  return w;
}

// Round trips along the path that runs, as ptxas will issue the loads: a second piece behind a branch that skips its
// store waits for the first (two round trips a trip), one behind a guard around its load alone does not (ptxas
// predicates the load and issues it with the first), and a piece the run does not take costs nothing. Behind the
// barrier each round trip is a loaded latency per trip.
TEST(PerfModel, APieceLoadedAfterAStoreBehindABranchIsASecondRoundTrip) {
  const auto c = rooflab::perf::constants_for(h100());
  const auto rounds = [&](bool skip_stores, long long pieces) {
    auto code = analyze(staged_pieces(skip_stores));
    rooflab::perf::count_trips(code, staged_pieces(skip_stores), pieces_work(pieces));
    return code;
  };
  const auto two = rounds(true, 2);
  EXPECT_EQ(two.trips.head_runs[0], 512);
  EXPECT_EQ(two.trips.round_trips, 2) << two.trips.round_trips_why;
  EXPECT_EQ(two.trips.hot_trips, 512);
  EXPECT_NE(two.trips.round_trips_why.find("the loads of PTX lines 10, 14,"), std::string::npos) << two.trips.round_trips_why;
  EXPECT_EQ(rounds(true, 1).trips.round_trips, 1) << "the branch is taken: the second piece is not loaded";
  EXPECT_EQ(rounds(false, 2).trips.round_trips, 1) << "a guard around a load alone: issued with the first";
  // Behind the barrier: the trip's work, then 2 x 600 ns, where one piece waits 600 ns.
  const auto p = predict(pieces_work(2), two, h100(), c);
  EXPECT_NE(said_of(p, "barriers:").find("about 1200 ns of load latency per trip (2 round trips one after another"),
            std::string::npos)
      << said_of(p, "barriers:");
  EXPECT_EQ(p.limiter, "round trips one after another");
  const auto q = predict(pieces_work(2), rounds(false, 2), h100(), c);
  EXPECT_NE(q.limiter, "round trips one after another");
  EXPECT_GT(p.time_s, q.time_s * 1.2);
}

// A load whose address comes from a loaded value (a page table's entry, then the page) waits for it, whatever lies
// between; a load that nothing in the trip reads (the next trip's, in a software-pipelined loop) waits for none.
TEST(PerfModel, ADependentLoadIsARoundTripAndALoadForTheNextTripIsNone) {
  const std::string body =
      "\tld.param.u64 \t%rd1, [_Z1kPKjPKfPfi_param_0];\n"
      "\tld.param.u64 \t%rd2, [_Z1kPKjPKfPfi_param_1];\n"
      "\tld.param.u32 \t%r1, [_Z1kPKjPKfPfi_param_3];\n"
      "\tmov.u32 \t%r2, 0;\n"
      "$L__BB0_1:\n"
      "\tmul.wide.u32 \t%rd3, %r2, 4;\n"
      "\tadd.s64 \t%rd4, %rd1, %rd3;\n"
      "\tld.global.nc.u32 \t%r3, [%rd4];\n"
      "\tmul.wide.u32 \t%rd5, %r3, 4;\n"
      "\tadd.s64 \t%rd6, %rd2, %rd5;\n"
      "\tld.global.nc.f32 \t%f1, [%rd6];\n"
      "\tadd.f32 \t%f2, %f2, %f1;\n"
      "\tadd.f32 \t%f3, %f3, %f4;\n"
      "\tbar.sync \t0;\n"
      "\tld.global.nc.f32 \t%f4, [%rd4+4];\n"
      "\tadd.s32 \t%r2, %r2, 1;\n"
      "\tsetp.lt.s32 \t%p1, %r2, %r1;\n"
      "\t@%p1 bra \t$L__BB0_1;\n"
      "\tret;\n";
  auto code = analyze(body);
  rooflab::perf::Work w;
  w.block = 128;
  w.grid = 1;
  w.reach = {4096, 4096, 4096, 0};
  w.scalars = {std::nullopt, std::nullopt, std::nullopt, 10};
  rooflab::perf::count_trips(code, body, w);
  EXPECT_EQ(code.trips.head_runs[0], 10);
  EXPECT_EQ(code.trips.round_trips, 2) << code.trips.round_trips_why;
  EXPECT_NE(code.trips.round_trips_why.find("the loads of PTX lines 8, 11,"), std::string::npos)
      << code.trips.round_trips_why;
}

namespace {

// A kernel that sets up with `setup`, then runs a loop of `body` as many trips as its second argument says (%r1;
// %r5 counts them).
std::string tile_loop(const std::string& setup, const std::string& body) {
  return "\tld.param.u32 \t%r1, [_Z1kPfi_param_1];\n" + setup + "\tmov.u32 \t%r5, 0;\n$L__BB0_1:\n" + body +
         "\tadd.s32 \t%r5, %r5, 1;\n\tsetp.lt.s32 \t%p1, %r5, %r1;\n\t@%p1 bra \t$L__BB0_1;\n\tret;\n";
}

// A loop that reads one float a trip from a row of a shared tile per lane (tile[lane][k]): a column of the tile, the
// lanes `pitch` bytes apart. At a pitch of 32 floats every lane's word is in one bank (a 32-way conflict: 32
// wavefronts where the width gives 1); padded to 33 floats each lane has a bank of its own.
std::string column_read(int pitch) {
  return tile_loop("\tmov.u32 \t%r2, %tid.x;\n"
                   "\tmov.u32 \t%r3, _ZZ1kPfiE4tile;\n"
                   "\tmad.lo.s32 \t%r4, %r2, " + std::to_string(pitch) + ", %r3;\n",
                   "\tshl.b32 \t%r6, %r5, 2;\n"
                   "\tadd.s32 \t%r7, %r4, %r6;\n"
                   "\tld.shared.f32 \t%f1, [%r7];\n"
                   "\tfma.rn.f32 \t%f2, %f1, %f1, %f2;\n");
}

rooflab::perf::Work tile_work() {
  rooflab::perf::Work w;
  w.block = 128;
  w.blocks_per_sm = 8;
  w.flops = 1e12;
  w.bytes = 1e6;
  w.reach = {4096, 0};
  w.scalars = {std::nullopt, 4};
  return w;
}

// A kernel's code with the trips and bank conflicts of its run at tile_work's launch.
rooflab::perf::Code counted(const std::string& body) {
  auto code = analyze(body);
  rooflab::perf::count_trips(code, body, tile_work());
  return code;
}

}  // namespace

TEST(PerfModel, AColumnOfASharedTileIsABankConflictAndPaddingRemovesIt) {
  const auto w = tile_work();
  const auto unpadded = counted(column_read(128));
  EXPECT_EQ(unpadded.trips.conflict_wavefronts, 31) << unpadded.trips.conflict_why;
  EXPECT_NE(unpadded.trips.conflict_why.find("32.0-way"), std::string::npos) << unpadded.trips.conflict_why;
  const auto padded = counted(column_read(132));
  EXPECT_EQ(padded.trips.conflict_wavefronts, 0) << padded.trips.conflict_why;
  EXPECT_NE(padded.trips.conflict_why.find("no bank conflicts"), std::string::npos) << padded.trips.conflict_why;
  // The prediction reads the conflicted trip's 32 wavefronts: shared memory limits it, where the padded loop's one
  // wavefront leaves it to the issue slots (7 instructions a trip).
  const auto c = rooflab::perf::constants_for(h100());
  const auto slow = predict(w, unpadded, h100(), c);
  const auto fast = predict(w, padded, h100(), c);
  EXPECT_EQ(slow.limiter, "shared memory");
  EXPECT_NE(fast.limiter, "shared memory");
  const auto said = [](const rooflab::perf::Prediction& p, const std::string& what) {
    return std::any_of(p.evidence.begin(), p.evidence.end(),
                       [&](const std::string& e) { return e.find(what) != std::string::npos; });
  };
  EXPECT_TRUE(said(slow, "shared memory: 32 wavefronts per trip"));
  EXPECT_TRUE(said(fast, "shared memory: 1 wavefronts per trip"));
  EXPECT_GT(slow.time_s, 10 * fast.time_s);
}

namespace {

// Four float loads a lane at +0, +4, +8 and +12 from a base 16 bytes apart per lane: ptxas issues them as one
// 128-bit load (a float4 a lane: 4 wavefronts, no conflict), which the count reads as one request. Read as four
// 32-bit requests, each would be 4-way (lanes 8 apart share a bank: 12 wavefronts more). With the base 4 bytes past
// 16, only the middle two are aligned for one (64-bit) load: 4 wavefronts where its width gives 2, and the outer two
// 4-way, 8 more in all.
std::string four_loads(int base) {
  return tile_loop("\tmov.u32 \t%r2, %tid.x;\n"
                   "\tmov.u32 \t%r3, _ZZ1kPfiE4tile;\n"
                   "\tmad.lo.s32 \t%r4, %r2, 16, %r3;\n"
                   "\tadd.s32 \t%r4, %r4, " + std::to_string(base) + ";\n",
                   "\tld.shared.f32 \t%f1, [%r4];\n"
                   "\tld.shared.f32 \t%f2, [%r4+4];\n"
                   "\tld.shared.f32 \t%f3, [%r4+8];\n"
                   "\tld.shared.f32 \t%f4, [%r4+12];\n"
                   "\tadd.f32 \t%f5, %f1, %f2;\n"
                   "\tadd.f32 \t%f6, %f3, %f4;\n");
}

}  // namespace

TEST(PerfModel, AdjacentSharedLoadsPtxasMergesAreOneRequest) {
  const auto merged = counted(four_loads(0));
  EXPECT_EQ(merged.trips.conflict_wavefronts, 0) << merged.trips.conflict_why;
  const auto apart = counted(four_loads(4));
  EXPECT_EQ(apart.trips.conflict_wavefronts, 8) << apart.trips.conflict_why;
  EXPECT_NE(apart.trips.conflict_why.find("4.0-way"), std::string::npos) << apart.trips.conflict_why;
}

namespace {

// ldmatrix .x4: lane l names a 16-byte row, lanes 8i .. 8i + 7 the 8 rows of matrix i. Rows 64 bytes apart (a tile
// of 32 halves a row) put two of every 8 rows' words in one set of four banks: 16 wavefronts for 512 bytes where the
// width gives 4 (4-way). Padded by 16 bytes (80 apart) the 8 rows of a matrix cover the 32 banks once: 4.
std::string ldmatrix_read(int pitch) {
  return tile_loop("\tmov.u32 \t%r2, %tid.x;\n"
                   "\tmov.u32 \t%r3, _ZZ1kPfiE4tile;\n"
                   "\tmad.lo.s32 \t%r4, %r2, " + std::to_string(pitch) + ", %r3;\n",
                   "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 \t{%r10, %r11, %r12, %r13}, [%r4];\n");
}

}  // namespace

TEST(PerfModel, LdmatrixRowsThatShareBanksAreABankConflict) {
  const auto unpadded = counted(ldmatrix_read(64));
  EXPECT_EQ(unpadded.trips.conflict_wavefronts, 12) << unpadded.trips.conflict_why;
  EXPECT_NE(unpadded.trips.conflict_why.find("4.0-way"), std::string::npos) << unpadded.trips.conflict_why;
  const auto padded = counted(ldmatrix_read(80));
  EXPECT_EQ(padded.trips.conflict_wavefronts, 0) << padded.trips.conflict_why;
  EXPECT_NE(padded.trips.conflict_why.find("4 wavefronts a trip where the accesses' widths alone take 4"),
            std::string::npos)
      << padded.trips.conflict_why;
}

namespace {

// A WMMA A fragment (16 x 16 halves) loaded from a shared tile of `ldm_a` halves a row, and an FP32 accumulator
// stored to one of `ldm_d` floats a row, as ptxas makes them: one ldmatrix .x4 (16 rows of 32 bytes) and four
// requests of 8 bytes a lane (rows lane / 4 and 8 on, columns 2 (lane % 4) and 8 on).
std::string wmma_tiles(int ldm_a, int ldm_d) {
  return tile_loop("\tmov.u32 \t%r3, _ZZ1kPfiE1a;\n"
                   "\tmov.u32 \t%r4, _ZZ1kPfiE1d;\n"
                   "\tmov.u32 \t%r6, " + std::to_string(ldm_a) + ";\n"
                   "\tmov.u32 \t%r7, " + std::to_string(ldm_d) + ";\n",
                   "\twmma.load.a.sync.aligned.row.m16n16k16.shared.f16 \t{%r10, %r11, %r12, %r13, %r14, %r15, %r16, "
                   "%r17}, [%r3], %r6;\n"
                   "\twmma.store.d.sync.aligned.row.m16n16k16.shared.f32 \t[%r4], {%f1, %f2, %f3, %f4, %f5, %f6, %f7, "
                   "%f8}, %r7;\n");
}

double wmma_conflicts(int ldm_a, int ldm_d) {
  const auto code = counted(wmma_tiles(ldm_a, ldm_d));
  EXPECT_FALSE(code.trips.conflict_why.empty());
  return code.trips.conflict_wavefronts;
}

}  // namespace

TEST(PerfModel, WmmaFragmentsAreTheRequestsTheirSassMakes) {
  // A: each of the ldmatrix's four matrices is 8 rows of 16 bytes, served together. Rows of 32 halves (64 bytes): rows
  // r and r + 2 of a matrix fall in the same 4 banks, 4-way, 16 wavefronts where the width gives 4. Rows of 16 halves
  // (the tile contiguous, 32 bytes a row): rows r and r + 4 share banks, 2-way, 8 wavefronts, though over the warp's
  // 512 bytes each bank holds only 4 words. Rows of 40 halves (80 bytes): 4.
  EXPECT_EQ(wmma_conflicts(32, 20), 12);
  EXPECT_EQ(wmma_conflicts(16, 20), 4);
  EXPECT_EQ(wmma_conflicts(40, 20), 0);
  // D: rows of 16 floats (64 bytes): the 8 rows of a request share 8 banks by twos, 4 wavefronts for 256 bytes where
  // the width gives 2, in each of the four requests; rows of 20 floats: 2 each.
  EXPECT_EQ(wmma_conflicts(40, 16), 8);
}

TEST(PerfModel, ACpAsyncCopyWritesSharedMemoryAndItsRowsMayConflict) {
  // 16 bytes a lane into shared memory: a cp.async's write takes the 4 wavefronts of 512 bytes (the static count has
  // them), lanes 16 bytes apart no more; lanes 64 bytes apart put 16 lanes' words in the same 4 banks: 16 (4-way).
  const auto copy = [](int pitch) {
    return counted(tile_loop("\tmov.u32 \t%r2, %tid.x;\n"
                             "\tmov.u32 \t%r3, _ZZ1kPfiE4tile;\n"
                             "\tmad.lo.s32 \t%r4, %r2, " + std::to_string(pitch) + ", %r3;\n",
                             "\tcp.async.cg.shared.global \t[%r4], [%rd1], 16;\n"));
  };
  const auto packed = copy(16), apart = copy(64);
  EXPECT_EQ(packed.loops.at(0).shared_wavefronts, 4);
  EXPECT_EQ(packed.trips.conflict_wavefronts, 0) << packed.trips.conflict_why;
  EXPECT_EQ(apart.trips.conflict_wavefronts, 12) << apart.trips.conflict_why;
}
