// Traffic tests (kind `traffic`): a lab's kernels on the CPU backend with their global-memory accesses
// recorded (rooflab/emu/traffic.hpp), compared with the bytes the lab's registry declares.
//
//   const auto launches = rooflab::traffic::record([&] { lab01::copy(a, c, n, nullptr); }, options);
//   const auto& k = rooflab::traffic::only(launches, "lab01::copy_kernel");
//   rooflab::traffic::note_summary("copy", k, decl.bytes(n), decl.flops(n));
//   EXPECT_TRUE(rooflab::traffic::dram_near(k, decl.bytes(n), 0.10));
//   EXPECT_TRUE(rooflab::traffic::coalesced(k));
//
// Messages say which access site moves bytes its threads do not use and by how much, never how to fix it
// (the handouts teach that). Only binaries built with the kernels instrumented (rooflab_emu_add_cu TRAFFIC)
// can record.
#pragma once

#include <rooflab/emu/traffic.hpp>
#include <rooflab/testing/grading.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace rooflab::traffic {

using emu::traffic::KernelTraffic;
using emu::traffic::Options;
using emu::traffic::Site;

// Runs `call` while recording; the launches it made, in order.
template <typename Call>
std::vector<KernelTraffic> record(Call&& call, const Options& options = {}) {
  emu::traffic::Recording recording(options);
  call();
  return recording.stop();
}

// The launches whose kernel name contains `kernel`, merged into one (counts and bytes summed; sites kept
// per launch); throws when there is none.
inline KernelTraffic only(const std::vector<KernelTraffic>& launches, std::string_view kernel) {
  KernelTraffic out;
  bool found = false;
  for (const KernelTraffic& k : launches) {
    if (k.kernel.find(kernel) == std::string::npos) continue;
    if (!found) {
      out = k;
      found = true;
      continue;
    }
    out.load_requests += k.load_requests;
    out.store_requests += k.store_requests;
    out.load_sectors += k.load_sectors;
    out.store_sectors += k.store_sectors;
    out.bytes_loaded += k.bytes_loaded;
    out.bytes_stored += k.bytes_stored;
    out.bytes_requested += k.bytes_requested;
    out.widest_load = std::max(out.widest_load, k.widest_load);
    out.widest_store = std::max(out.widest_store, k.widest_store);
    out.l2_hits += k.l2_hits;
    out.l2_misses += k.l2_misses;
    out.dram_read_bytes += k.dram_read_bytes;
    out.dram_write_bytes += k.dram_write_bytes;
    out.sites.insert(out.sites.end(), k.sites.begin(), k.sites.end());
  }
  if (!found) {
    std::string message = kernel.empty() ? std::string("no kernel launch was recorded")
                                         : std::string("no launch of ").append(kernel).append(" was recorded");
    throw std::runtime_error(message);
  }
  return out;
}

// Every launch `call` makes, merged into one (a launcher's work however it splits it over launches and
// kernels: one that loops over a batch shows each pass's bytes).
template <typename Call>
KernelTraffic record_call(Call&& call, const Options& options = {}) {
  return only(record(std::forward<Call>(call), options), "");
}

inline std::string format(const char* f, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, f, a, b, c, d);
  return buf;
}

// Sectors a site fetches per sector its used bytes need: 1 when its requests are as compact as their bytes
// allow (a broadcast included), 8 for 32 lanes reading floats 32 bytes apart.
inline double waste_factor(const Site& s) { return s.min_sectors ? double(s.sectors) / double(s.min_sectors) : 0; }
inline double ideal_sectors_per_request(const Site& s) {
  return s.requests ? double(s.min_sectors) / double(s.requests) : 0;
}

// "kernels.cu:42 (load): 32.0 sectors/request where 4.0 would hold the bytes its lanes use (8.0x the bytes
// fetched)"
// Built with a stream: GCC 12 warns falsely (-Wrestrict, GCC bug 105651) about operator+ chains with a
// conditional operand at -O3.
inline std::string describe(const Site& s) {
  std::ostringstream out;
  out << s.where << (s.store ? " (store)" : " (load)") << ": "
      << format("%.1f sectors/request where %.1f would hold the bytes its lanes use (%.1fx the bytes fetched)",
                s.sectors_per_request(), ideal_sectors_per_request(s), waste_factor(s));
  return out.str();
}

// One line for the report: analytic against modelled bytes and intensities, coalescing, L2.
inline std::string summary(std::string_view name, const KernelTraffic& k, double analytic_bytes, double flops) {
  std::ostringstream line;
  line << name << ": analytic " << format("%.3g B", analytic_bytes) << ", modelled DRAM "
       << format("%.3g B (%.2fx; read %.3g, written %.3g)", k.dram_bytes(), k.dram_bytes() / analytic_bytes,
                 k.dram_read_bytes, k.dram_write_bytes);
  if (flops > 0) {
    line << format("; intensity %.3g FLOP/B analytic, %.3g modelled", flops / analytic_bytes, flops / k.dram_bytes());
  }
  line << format("; loads %.2f sectors/request at %.0f%%, stores %.2f at %.0f%%", k.sectors_per_load_request(),
                 100 * k.load_efficiency(), k.sectors_per_store_request(), 100 * k.store_efficiency())
       << format("; widest %.0f/%.0f B; L2 hit rate %.0f%% of %.3g B", k.widest_load, k.widest_store,
                 100 * k.l2_hit_rate(), double(k.l2_bytes));
  if (const Site* worst = emu::traffic::most_wasteful_site(k); worst != nullptr && waste_factor(*worst) > 1.25) {
    line << "; the access wasting the most: " << describe(*worst);
  }
  // Shared memory, where its requests take more wavefronts than their bytes need (bank conflicts). The site,
  // not the kernel's total: WMMA's fragment loads and stores count as one lane's (the backend runs them on the
  // lowest lane), many conflict-free requests that would dilute a total.
  if (const Site* conflicted = emu::traffic::most_conflicted_site(k); conflicted != nullptr && conflicted->conflict_ways() > 1.05) {
    line << "; shared memory bank conflicts, the most at " << conflicted->where << (conflicted->store ? " (store)" : " (load)")
         << format(": %.1f wavefronts/request, %.2f-way", double(conflicted->wavefronts) / double(conflicted->requests),
                   conflicted->conflict_ways());
  }
  return line.str();
}

// The summary as a note of the running test (the grade report shows it); with ROOFLAB_TRAFFIC_SITES=1 also
// every access site of the kernel on stdout (emu::traffic::table), for a look at all of them.
inline void note_summary(std::string_view name, const KernelTraffic& k, double analytic_bytes, double flops) {
  grading::note(summary(name, k, analytic_bytes, flops));
  if (const char* sites = std::getenv("ROOFLAB_TRAFFIC_SITES"); sites != nullptr && std::string_view(sites) == "1") {
    std::fputs(emu::traffic::table({k}).c_str(), stdout);
  }
}

// Modelled DRAM bytes within `tolerance` (relative) of the analytic bytes.
inline ::testing::AssertionResult dram_near(const KernelTraffic& k, double analytic_bytes, double tolerance) {
  const double ratio = k.dram_bytes() / analytic_bytes;
  if (ratio >= 1 - tolerance && ratio <= 1 + tolerance) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure();
  failure << k.kernel << " moves " << format("%.3g", k.dram_bytes()) << " bytes to and from DRAM in the model, "
          << format("%.2fx", ratio) << " the " << format("%.3g", analytic_bytes) << " the analysis counts";
  if (const Site* worst = emu::traffic::most_wasteful_site(k); worst != nullptr && waste_factor(*worst) > 1.05) {
    failure << "; the access wasting the most: " << describe(*worst);
  }
  return failure;
}

// A site whose requests touch more than `slack` x the sectors their used bytes need is uncoalesced: its
// lanes are spread over more sectors than their bytes fill. (The slack lets an unaligned but contiguous
// warp, 128 bytes over 5 sectors, pass; a broadcast needs one sector and passes.)
inline bool is_coalesced(const Site& s, double slack = 1.25) { return waste_factor(s) <= slack; }

// Every site whose first access fell in one of `allocations` (the start of a cudaMalloc'd buffer; empty:
// every site) coalesced; otherwise each uncoalesced site, its sectors per request against the ideal, and the
// share of fetched bytes its threads use. Naming the big operands leaves out a small table or a vector that
// every row reads again, which a GPU serves from L1, when the lesson is streaming a cache or the weights.
inline ::testing::AssertionResult coalesced_in(const KernelTraffic& k, const std::vector<const void*>& allocations,
                                               double slack = 1.25) {
  auto failure = ::testing::AssertionFailure();
  bool failed = false;
  for (const Site& s : k.sites) {
    if (allocations.size() != 0 && std::find(allocations.begin(), allocations.end(), s.allocation) == allocations.end()) {
      continue;
    }
    if (is_coalesced(s, slack)) continue;
    failure << (failed ? "; " : "") << describe(s);
    failed = true;
  }
  if (!failed) return ::testing::AssertionSuccess();
  return failure << " (in " << k.kernel << ")";
}

// Every site coalesced.
inline ::testing::AssertionResult coalesced(const KernelTraffic& k, double slack = 1.25) {
  return coalesced_in(k, {}, slack);
}

}  // namespace rooflab::traffic
