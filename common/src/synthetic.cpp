// GPUs and models drawn from the test seed (rooflab/testing/synthetic.hpp).
#include <rooflab/testing/random.hpp>
#include <rooflab/testing/synthetic.hpp>

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace rooflab {

namespace {

constexpr const char* kNote = "drawn from the test seed (rooflab/testing/synthetic.hpp): plausible, but not a real part";

template <typename T, std::size_t N>
T pick(Rng& rng, const T (&choices)[N]) {
  return choices[rng.below(N)];
}

double round_to(double x, double step) { return std::round(x / step) * step; }

// A real GPU's architecture (compute capability, FP32 lanes per SM, register file, allocation units) with its
// size, clocks, peaks, memory and shared-memory and block limits drawn anew: a question about any of those
// cannot be looked up.
GpuSpec draw_gpu(Rng& rng, int k, std::uint64_t seed) {
  const auto& published = gpus();
  const GpuSpec& base = published[rng.below(published.size())];
  GpuSpec g = base;
  g.id = fmt::format("synthetic-gpu-{}", k);
  g.name = fmt::format("Synthetic GPU {} (seed {}, {} architecture)", k, seed, base.arch());
  g.cuda_names.clear();
  g.match_tokens = {g.id};
  g.exclude_tokens.clear();
  g.sms = 8 + static_cast<int>(rng.below(185));
  g.boost_clock_mhz = round_to(rng.uniform(900, 2400), 5);
  g.tensor_clock_mhz.reset();  // every peak below is quoted at the boost clock
  g.fp32_tflops = 2.0 * *g.sms * g.fp32_lanes_per_sm * *g.boost_clock_mhz * 1e6 / 1e12;
  // The other units keep their ratio to the base part's, scaled as a whole: tensor peaks far above FP32.
  const double scale = rng.uniform(0.3, 3.0);
  for (auto* peak : {&g.fp64_tflops, &g.tf32_tflops, &g.fp16_tflops, &g.bf16_tflops, &g.fp8_tflops, &g.int8_tops,
                     &g.fp16_nontensor_tflops}) {
    if (*peak) *peak = round_to(**peak * scale, 0.1);
  }
  g.bandwidth_gbps = round_to(rng.uniform(150, 9000), 1);
  g.memory_gb = round_to(rng.uniform(4, 200), 0.1);
  g.l2_mb = round_to(rng.uniform(1, 128), 0.5);
  const double opt_in_gap = base.smem_per_sm_kb - base.smem_max_per_block_kb;  // what a block may not take
  g.smem_per_sm_kb = 64 + 4.0 * static_cast<double>(rng.below(49));
  g.smem_max_per_block_kb = std::max(48.0, g.smem_per_sm_kb - std::max(opt_in_gap, 0.0));
  g.max_threads_per_sm = pick(rng, {1024, 1536, 2048});
  g.max_warps_per_sm = g.max_threads_per_sm / 32;
  g.max_blocks_per_sm = pick(rng, {16, 24, 32});
  g.notes = kNote;
  g.sources = {{"*", kNote}};
  return g;
}

// A decoder-only transformer with its shapes drawn anew and its parameter count computed from them.
ModelSpec draw_model(Rng& rng, int k, std::uint64_t seed) {
  ModelSpec m;
  m.id = fmt::format("synthetic-model-{}", k);
  m.name = fmt::format("Synthetic model {} (seed {})", k, seed);
  m.layers = 2 + static_cast<int>(rng.below(95));
  m.head_dim = pick(rng, {64, 80, 96, 112, 128, 256});
  m.kv_heads = 1 << rng.below(5);
  m.heads = m.kv_heads * pick(rng, {1, 2, 3, 4, 6, 8});
  // Most models have hidden = heads x head_dim; some (Gemma) do not.
  m.hidden = rng.below(4) == 0 ? static_cast<int>(256 * (1 + rng.below(48))) : m.heads * m.head_dim;
  m.ffn = static_cast<int>(round_to(m.hidden * rng.uniform(2.5, 4.0), 128));
  m.vocab = 32000 + 1000 * static_cast<int>(rng.below(225));
  m.tie_word_embeddings = rng.below(2) == 0;
  m.qkv_bias = rng.below(2) == 0;
  if (rng.below(4) == 0) {
    m.experts = pick(rng, {8, 16, 64});
    m.experts_per_token = std::min(m.experts, pick(rng, {1, 2, 8}));
  }
  if (rng.below(3) == 0) m.sliding_window = 512 << rng.below(6);
  const double h = m.hidden, q = static_cast<double>(m.heads) * m.head_dim, kv = 2.0 * m.kv_heads * m.head_dim;
  const double attention = h * q + h * kv + q * h + (m.qkv_bias ? q + kv : 0.0);
  const double mlp = 3.0 * h * m.ffn;  // gate, up and down projections
  const double embeddings = static_cast<double>(m.vocab) * h * (m.tie_word_embeddings ? 1 : 2);
  const auto params = [&](int experts) { return m.layers * (attention + experts * mlp + 2 * h) + embeddings + h; };
  m.params_b = params(m.experts) / 1e9;
  if (m.experts > 1) m.active_params_b = params(m.experts_per_token) / 1e9;
  m.source = kNote;
  m.notes = kNote;
  return m;
}

// `n` entries drawn by `draw` from their own stream of `seed` (not the one the tests' own data comes from).
template <typename Draw>
auto draw_all(std::uint64_t seed, std::uint64_t stream, int n, Draw draw) {
  Rng rng(seed ^ stream);
  std::vector<decltype(draw(rng, 1, seed))> out;
  for (int k = 1; k <= n; ++k) out.push_back(draw(rng, k, seed));
  return out;
}

// The published entries, then four drawn from test_seed().
template <typename Spec>
std::vector<Spec> with_synthetic(const std::vector<Spec>& published, std::vector<Spec> synthetic) {
  std::vector<Spec> all = published;
  for (auto& s : synthetic) all.push_back(std::move(s));
  return all;
}

}  // namespace

std::vector<GpuSpec> synthetic_gpus(std::uint64_t seed, int n) { return draw_all(seed, 0x6770752d73706563ull, n, draw_gpu); }

std::vector<ModelSpec> synthetic_models(std::uint64_t seed, int n) {
  return draw_all(seed, 0x6d6f64656c2d7370ull, n, draw_model);
}

const std::vector<GpuSpec>& graded_gpus() {
  static const std::vector<GpuSpec> all = with_synthetic(gpus(), synthetic_gpus(test_seed(), 4));
  return all;
}

const std::vector<ModelSpec>& graded_models() {
  static const std::vector<ModelSpec> all = with_synthetic(models(), synthetic_models(test_seed(), 4));
  return all;
}

bool is_synthetic(const GpuSpec& g) { return g.id.rfind("synthetic-", 0) == 0; }
bool is_synthetic(const ModelSpec& m) { return m.id.rfind("synthetic-", 0) == 0; }

}  // namespace rooflab
