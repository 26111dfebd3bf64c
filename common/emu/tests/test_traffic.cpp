// The traffic model's self-tests: access patterns whose GPU counts are known in closed form (sectors per
// request of strided and vector reads, L2 reuse within and beyond the cache), and the recording leaves
// every result as a plain run computes it.
#include "traffic_kernels.hpp"

#include <rooflab/emu/traffic.hpp>
#include <rooflab/testing/buffer.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

namespace {

using rooflab::DeviceBuffer;
namespace traffic = rooflab::emu::traffic;

std::vector<float> iota_floats(std::size_t n) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), 1.0f);
  return v;
}

// The one launch a call made, recorded with an L2 of `l2` bytes (big enough by default to hold everything).
template <typename Call>
traffic::KernelTraffic record_one(Call call, std::size_t l2 = std::size_t{64} << 20) {
  traffic::Options options;
  options.l2_bytes = l2;
  traffic::Recording recording(options);
  call();
  std::vector<traffic::KernelTraffic> launches = recording.stop();
  EXPECT_EQ(launches.size(), 1u);
  return launches.empty() ? traffic::KernelTraffic{} : launches.front();
}

TEST(Traffic, KernelsAreInstrumented) { EXPECT_TRUE(traffic::available()); }

// A warp reading 32 floats `stride` apart touches min(stride, 8) sectors per 32 bytes it uses: 4 x that
// per request (stride 1: 128 bytes in 4 sectors), and uses 4 of every 32 bytes from stride 8 on.
TEST(Traffic, StridedReadSectorsPerRequest) {
  const int n = 4096;
  for (int stride : {1, 2, 4, 8, 16, 32}) {
    const std::vector<float> host = iota_floats(static_cast<std::size_t>(n) * stride);
    DeviceBuffer<float> in{std::span<const float>(host)};
    DeviceBuffer<float> out(n);
    const auto k = record_one([&] { traffictest::strided_read(in.data(), out.data(), n, stride); });
    const double per_sector = std::min(stride, 8);
    EXPECT_EQ(k.load_requests, static_cast<unsigned long long>(n / 32)) << "stride " << stride;
    EXPECT_DOUBLE_EQ(k.sectors_per_load_request(), 4 * per_sector) << "stride " << stride;
    EXPECT_DOUBLE_EQ(k.load_efficiency(), 1.0 / per_sector) << "stride " << stride;
    EXPECT_DOUBLE_EQ(k.sectors_per_store_request(), 4.0) << "stride " << stride;
    EXPECT_EQ(k.widest_load, 4u);
    // Every fetched sector comes from DRAM once: 32 bytes per sector touched.
    EXPECT_DOUBLE_EQ(k.dram_read_bytes, 32.0 * double(k.load_sectors)) << "stride " << stride;
    EXPECT_DOUBLE_EQ(k.dram_write_bytes, 4.0 * n) << "stride " << stride;
    const std::vector<float> got = out.download();
    for (int i = 0; i < n; i += 97) ASSERT_EQ(got[i], host[static_cast<std::size_t>(i) * stride]) << "stride " << stride;
    // The load's site is named by its line in the .cu.
    const traffic::Site* waste = traffic::most_wasteful_site(k);
    if (stride > 1) {
      ASSERT_NE(waste, nullptr);
      EXPECT_FALSE(waste->store);
      // 32 lanes use 128 bytes, 4 sectors' worth: the site fetches min(stride, 8) times that.
      EXPECT_DOUBLE_EQ(double(waste->sectors) / double(waste->min_sectors), per_sector) << "stride " << stride;
      EXPECT_NE(waste->where.find("traffic_kernels.cu:"), std::string::npos) << waste->where;
    }
  }
}

// float4: one 16-byte access per lane, 512 bytes per request in 16 sectors of 4 lines: 4 sectors per 128 B.
TEST(Traffic, Float4CoalescedRead) {
  const int n4 = 2048;
  const std::vector<float> host = iota_floats(4 * static_cast<std::size_t>(n4));
  DeviceBuffer<float4> in(n4);
  ROOFLAB_CUDA_CHECK(cudaMemcpy(in.data(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  DeviceBuffer<float4> out(n4);
  const auto k = record_one([&] { traffictest::copy_vec4(in.data(), out.data(), n4); });
  EXPECT_EQ(k.widest_load, 16u);
  EXPECT_EQ(k.widest_store, 16u);
  EXPECT_EQ(k.load_requests, static_cast<unsigned long long>(n4 / 32));
  EXPECT_DOUBLE_EQ(k.sectors_per_load_request(), 16.0);
  EXPECT_DOUBLE_EQ(k.load_efficiency(), 1.0);
  for (const auto& s : k.sites) EXPECT_EQ(s.lines * 4, s.sectors) << s.where;
  EXPECT_DOUBLE_EQ(k.dram_read_bytes, 16.0 * n4);
  EXPECT_DOUBLE_EQ(k.dram_write_bytes, 16.0 * n4);
  std::vector<float> got(host.size());
  ROOFLAB_CUDA_CHECK(cudaMemcpy(got.data(), out.data(), got.size() * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT_EQ(got, host);
}

// An asynchronous copy is its thread's read of the source and write of the shared destination: the model counts
// the bytes a cp.async reads (none of a zero-filled part) and the wavefronts it writes, at the copy's site.
TEST(Traffic, AsyncCopiesCountTheirBytes) {
  const int n4 = 1024;
  const std::vector<float> host = iota_floats(4 * static_cast<std::size_t>(n4));
  DeviceBuffer<float4> in(n4);
  ROOFLAB_CUDA_CHECK(cudaMemcpy(in.data(), host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice));
  DeviceBuffer<float4> out(n4);
  const auto k = record_one([&] { traffictest::copy_async(in.data(), out.data(), n4); });
  const unsigned long long warps = static_cast<unsigned long long>(n4 / 32), blocks = warps / 4;
  EXPECT_EQ(k.load_requests, warps);
  EXPECT_EQ(k.widest_load, 16u);
  // Three warps of a block read 512 bytes each (16 sectors), the fourth 8 bytes of each 16 (still 16 sectors, half
  // used).
  EXPECT_EQ(k.bytes_loaded, blocks * (3 * 512 + 256));
  EXPECT_DOUBLE_EQ(k.sectors_per_load_request(), 16.0);
  EXPECT_EQ(k.shared_store_requests, warps);
  EXPECT_EQ(k.shared_store_wavefronts, 4 * warps);  // 512 contiguous bytes a warp: 4, the ideal
  EXPECT_EQ(k.shared_load_wavefronts, 4 * warps);
  const std::vector<float4> got = out.download();
  for (int i = 0; i < n4; ++i) {
    const bool half = i % 128 >= 96;
    ASSERT_EQ(got[i].x, host[4 * i]) << i;
    ASSERT_EQ(got[i].y, host[4 * i + 1]) << i;
    ASSERT_EQ(got[i].z, half ? 0.0f : host[4 * i + 2]) << i;
    ASSERT_EQ(got[i].w, half ? 0.0f : host[4 * i + 3]) << i;
  }
}

// Every input chunk is read twice, about 1.5 inputs' worth of traffic apart: an L2 four times the input
// keeps it (DRAM reads = the input once), one a quarter of the input does not (twice).
TEST(Traffic, InputReadTwiceBeyondTheL2) {
  const int n = 1 << 18;
  const double input = 4.0 * n;
  const std::vector<float> host = iota_floats(n);
  DeviceBuffer<float> in{std::span<const float>(host)};
  DeviceBuffer<float> out(n);
  const auto fits = record_one([&] { traffictest::read_twice(in.data(), out.data(), n); }, static_cast<std::size_t>(4 * input));
  const auto spills = record_one([&] { traffictest::read_twice(in.data(), out.data(), n); }, static_cast<std::size_t>(input / 4));
  EXPECT_NEAR(fits.dram_read_bytes / input, 1.0, 0.01);
  EXPECT_NEAR(spills.dram_read_bytes / input, 2.0, 0.05);
  EXPECT_NEAR(fits.dram_write_bytes / input, 1.0, 0.01);
  EXPECT_NEAR(spills.dram_write_bytes / input, 1.0, 0.01);
  EXPECT_GT(fits.l2_hit_rate(), 0.4);
  const std::vector<float> got = out.download();
  for (int i = 0; i < n; i += 1013) ASSERT_EQ(got[i], host[i] + host[(i + n / 2) % n]);
}

// The model places a launch's arrays where a GPU's allocator would, not where the host's happened to put them
// this run: the same kernel over arrays at other host addresses (shifted by an allocation of an odd size before
// them) meets the same L2 sets, so every figure is the same. An L2 near the input's size makes the hits depend on
// which sets the two streams share.
TEST(Traffic, FiguresDoNotDependOnTheHostAddresses) {
  const int n = 1 << 16;
  const std::vector<float> host = iota_floats(n);
  const auto run = [&] {
    DeviceBuffer<float> in{std::span<const float>(host)};
    DeviceBuffer<float> out(n);
    return record_one([&] { traffictest::read_twice(in.data(), out.data(), n); }, std::size_t{5} * n);
  };
  const auto first = run();
  std::vector<traffic::KernelTraffic> shifted;
  for (const std::size_t pad : {4096u * 7 + 48, 4096u * 33 + 144, 4096u * 129 + 16}) {
    DeviceBuffer<unsigned char> before(pad);  // the next arrays lie elsewhere in host memory
    shifted.push_back(run());
  }
  for (const auto& k : shifted) {
    EXPECT_EQ(k.l2_hits, first.l2_hits);
    EXPECT_EQ(k.l2_misses, first.l2_misses);
    EXPECT_EQ(k.dram_read_bytes, first.dram_read_bytes);
    EXPECT_EQ(k.dram_write_bytes, first.dram_write_bytes);
  }
  EXPECT_GT(first.l2_hits, 0u);
  EXPECT_GT(first.dram_read_bytes, 4.0 * n);  // the L2 does not hold it all: where the arrays fall matters
}

// Shared-memory traffic is on the SM: only the global load and store count.
TEST(Traffic, SharedMemoryIsNotGlobalTraffic) {
  const int n = 8192;
  const std::vector<float> host = iota_floats(n);
  DeviceBuffer<float> in{std::span<const float>(host)};
  DeviceBuffer<float> out(n);
  const auto k = record_one([&] { traffictest::copy_via_shared(in.data(), out.data(), n); });
  EXPECT_EQ(k.bytes_loaded, 4ull * n);
  EXPECT_EQ(k.bytes_stored, 4ull * n);
  EXPECT_EQ(k.sites.size(), 2u);
  EXPECT_EQ(out.download(), host);
}

// Shared memory in wavefronts: 32 lanes at a stride of `stride` words share gcd(stride, 32) to a bank, and each
// bank delivers one word per wavefront (what Nsight Compute counts as an n-way bank conflict).
TEST(Traffic, SharedMemoryBankConflicts) {
  for (const int stride : {1, 2, 4, 8, 16, 32, 33, 17}) {
    DeviceBuffer<float> out(32);
    const auto k = record_one([&] { traffictest::shared_strided(out.data(), stride); });
    const unsigned ways = std::gcd(stride, 32);
    EXPECT_EQ(k.shared_load_requests, 1u) << "stride " << stride;
    EXPECT_EQ(k.shared_store_requests, 1u) << "stride " << stride;
    EXPECT_EQ(k.shared_load_wavefronts, ways) << "stride " << stride;
    EXPECT_EQ(k.shared_store_wavefronts, ways) << "stride " << stride;
    EXPECT_DOUBLE_EQ(k.shared_load_ways(), ways) << "stride " << stride;
    const traffic::Site* conflicted = traffic::most_conflicted_site(k);
    if (ways == 1) {
      EXPECT_EQ(conflicted, nullptr) << "stride " << stride;
    } else {
      ASSERT_NE(conflicted, nullptr) << "stride " << stride;
      EXPECT_DOUBLE_EQ(conflicted->conflict_ways(), ways) << "stride " << stride;
    }
    ASSERT_EQ(k.shared_sites.size(), 2u) << "stride " << stride;
    for (const auto& site : k.shared_sites) {
      EXPECT_NE(site.where.find("traffic_kernels.cu:"), std::string::npos) << site.where;
      EXPECT_EQ(site.widest, 4u);
    }
    // Shared memory is not global traffic: only the 128 bytes of out.
    EXPECT_EQ(k.bytes_stored, 128u) << "stride " << stride;
    EXPECT_EQ(k.bytes_loaded, 0u) << "stride " << stride;
    const std::vector<float> got = out.download();
    for (int l = 0; l < 32; ++l) ASSERT_EQ(got[l], static_cast<float>(l)) << "stride " << stride;
  }
  // 16 bytes a lane: 512 bytes need 4 wavefronts at best; at a stride of two float4s each bank in use holds 8
  // of the words, so 8 (2-way).
  for (const int stride : {1, 2}) {
    DeviceBuffer<float4> out(32);
    const auto k = record_one([&] { traffictest::shared_vec4(out.data(), stride); });
    EXPECT_EQ(k.shared_load_ideal, 4u) << "float4 stride " << stride;
    EXPECT_EQ(k.shared_load_wavefronts, 4u * stride) << "float4 stride " << stride;
    EXPECT_EQ(k.shared_store_wavefronts, 4u * stride) << "float4 stride " << stride;
    EXPECT_EQ(k.shared_sites.front().widest, 16u);
  }
  // 16 bytes a lane are served 8 lanes at a time (128 bytes): a conflict is between lanes of one group. An ldmatrix's
  // rows 32 bytes apart conflict 2-way inside each matrix (8 wavefronts), where over the warp no bank holds more than
  // 4 words; rows 48 bytes apart do not (4).
  for (const auto& [row_floats, want] : {std::pair{8, 8u}, std::pair{12, 4u}}) {
    DeviceBuffer<float4> out(32);
    const auto k = record_one([&] { traffictest::shared_rows16(out.data(), row_floats); });
    EXPECT_EQ(k.shared_load_ideal, 4u) << "rows " << row_floats << " floats apart";
    EXPECT_EQ(k.shared_load_wavefronts, want) << "rows " << row_floats << " floats apart";
    EXPECT_EQ(k.shared_store_wavefronts, want) << "rows " << row_floats << " floats apart";
  }
  // Every lane reading one word: a broadcast, one wavefront; the one lane that stores it, one.
  DeviceBuffer<float> out(32);
  const auto k = record_one([&] { traffictest::shared_broadcast(out.data()); });
  EXPECT_EQ(k.shared_load_wavefronts, 1u);
  EXPECT_EQ(k.shared_store_wavefronts, 1u);
  EXPECT_EQ(out.download()[31], 73.0f);
  // The table says it.
  const std::string text = traffic::table({k});
  EXPECT_NE(text.find("shared loads"), std::string::npos) << text;
  EXPECT_NE(text.find("1.00-way bank conflicts"), std::string::npos) << text;
}

// Launches outside a recording are not recorded; several inside are, in order.
TEST(Traffic, OneEntryPerLaunch) {
  const int n = 1024;
  const std::vector<float> host = iota_floats(4 * n);
  DeviceBuffer<float> in{std::span<const float>(host)};
  DeviceBuffer<float> out(n);
  traffictest::strided_read(in.data(), out.data(), n, 1);
  traffic::Recording recording;
  traffictest::strided_read(in.data(), out.data(), n, 1);
  traffictest::strided_read(in.data(), out.data(), n, 4);
  const auto launches = recording.stop();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_DOUBLE_EQ(launches[0].sectors_per_load_request(), 4.0);
  EXPECT_DOUBLE_EQ(launches[1].sectors_per_load_request(), 16.0);
  EXPECT_NE(launches[0].kernel.find("strided_read_kernel"), std::string::npos) << launches[0].kernel;
  EXPECT_NE(traffic::table(launches).find("traffic_kernels.cu:"), std::string::npos);
}

}  // namespace
