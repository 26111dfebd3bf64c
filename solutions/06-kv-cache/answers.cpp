// Lab 06: KV-cache sizing - the analytic questions. Handout: README.md, "Sizing the cache" and "Paging".
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>
#include <cmath>

namespace lab06 {

double kv_bytes_per_token(const rooflab::ModelSpec& m, double elem_bytes) {
  // STUDENT BEGIN (lab06.q1)
  // K and V, for every layer and every KV head: the query heads do not matter, only the heads cached.
  return 2.0 * m.layers * m.kv_heads * m.head_dim * elem_bytes;
  // STUDENT END
}

double kv_gb_per_sequence(const rooflab::ModelSpec& m, std::size_t context, double elem_bytes) {
  // STUDENT BEGIN (lab06.q2)
  // A sliding window caps what is kept (Q5), so ask tokens_cached rather than using the context itself.
  return static_cast<double>(tokens_cached(m, context)) * kv_bytes_per_token(m, elem_bytes) / 1e9;
  // STUDENT END
}

double kv_gib_for_batch(const rooflab::ModelSpec& m, std::size_t batch, std::size_t context, double elem_bytes) {
  // STUDENT BEGIN (lab06.q3)
  return static_cast<double>(batch) * kv_gb_per_sequence(m, context, elem_bytes) * 1e9 / static_cast<double>(1ull << 30);
  // STUDENT END
}

double gqa_saving(const rooflab::ModelSpec& m) {
  // STUDENT BEGIN (lab06.q4)
  return static_cast<double>(m.heads) / m.kv_heads;
  // STUDENT END
}

std::size_t tokens_cached(const rooflab::ModelSpec& m, std::size_t context) {
  // STUDENT BEGIN (lab06.q5)
  return m.sliding_window ? std::min(context, static_cast<std::size_t>(*m.sliding_window)) : context;
  // STUDENT END
}

std::size_t max_batch(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t context,
                      double weight_bytes, double elem_bytes, double reserve_gb) {
  // STUDENT BEGIN (lab06.q6)
  // What is left after the weights and the reserve, in whole sequences (floor: half a sequence is no use).
  const double free_bytes = gpu.memory_gb * 1e9 - m.params_b * 1e9 * weight_bytes - reserve_gb * 1e9;
  const double per_sequence = kv_gb_per_sequence(m, context, elem_bytes) * 1e9;
  return free_bytes <= 0 ? 0 : static_cast<std::size_t>(std::floor(free_bytes / per_sequence));
  // STUDENT END
}

std::size_t max_context(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t batch,
                        double weight_bytes, double elem_bytes, double reserve_gb) {
  // STUDENT BEGIN (lab06.q7)
  const double free_bytes = gpu.memory_gb * 1e9 - m.params_b * 1e9 * weight_bytes - reserve_gb * 1e9;
  if (free_bytes <= 0) return 0;
  const double tokens = std::floor(free_bytes / (static_cast<double>(batch) * kv_bytes_per_token(m, elem_bytes)));
  // With a sliding window, a sequence that holds a full window never grows: if the windows fit, every
  // context does.
  if (m.sliding_window && tokens >= *m.sliding_window) return kUnlimited;
  return static_cast<std::size_t>(tokens);
  // STUDENT END
}

std::size_t blocks_for_budget_gib(const rooflab::ModelSpec& m, double budget_gib, std::size_t block_tokens,
                                  double elem_bytes) {
  // STUDENT BEGIN (lab06.q8)
  const double block_bytes = static_cast<double>(block_tokens) * kv_bytes_per_token(m, elem_bytes);
  return static_cast<std::size_t>(std::floor(budget_gib * static_cast<double>(1ull << 30) / block_bytes));
  // STUDENT END
}

Waste reserved_but_unused(std::span<const std::size_t> lengths, std::size_t max_len, std::size_t block_tokens) {
  // STUDENT BEGIN (lab06.q9)
  // Contiguous: every sequence holds max_len slots whatever its length. Paged: only its last block is
  // partly empty, so at most block_tokens - 1 slots per sequence are lost.
  Waste w;
  for (const std::size_t len : lengths) {
    w.contiguous_tokens += max_len - len;
    const std::size_t blocks = (len + block_tokens - 1) / block_tokens;
    w.paged_tokens += blocks * block_tokens - len;
  }
  return w;
  // STUDENT END
}

double kv_share_of_gpu(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t batch,
                       std::size_t context, double elem_bytes) {
  // STUDENT BEGIN (lab06.q10)
  return static_cast<double>(batch) * kv_gb_per_sequence(m, context, elem_bytes) / gpu.memory_gb;
  // STUDENT END
}

double decode_attention_bytes(std::span<const std::size_t> lengths, int kv_heads, int head_dim, double elem_bytes) {
  // STUDENT BEGIN (lab06.q11)
  double tokens = 0;
  for (const std::size_t len : lengths) tokens += static_cast<double>(len);
  return 2.0 * tokens * kv_heads * head_dim * elem_bytes;
  // STUDENT END
}

}  // namespace lab06
