// Lab 06: KV-cache sizing - the analytic questions. Handout: README.md, "Sizing the cache" and "Paging".
#include "lab.hpp"

#include <rooflab/stub.hpp>

#include <algorithm>
#include <cmath>

namespace lab06 {

double kv_bytes_per_token(const rooflab::ModelSpec& m, double elem_bytes) {
  // STUDENT BEGIN (lab06.q1)
  // TODO(lab06.q1): K and V, every layer, every cached head. (1 line)
  ROOFLAB_TODO("lab06.q1", m, elem_bytes);
  // STUDENT END
}

double kv_gb_per_sequence(const rooflab::ModelSpec& m, std::size_t context, double elem_bytes) {
  // STUDENT BEGIN (lab06.q2)
  // TODO(lab06.q2): decimal GB; a sliding window caps the tokens kept (Q5). (1 line)
  ROOFLAB_TODO("lab06.q2", m, context, elem_bytes);
  // STUDENT END
}

double kv_gib_for_batch(const rooflab::ModelSpec& m, std::size_t batch, std::size_t context, double elem_bytes) {
  // STUDENT BEGIN (lab06.q3)
  // TODO(lab06.q3): GiB this time (2^30 bytes). (1 line)
  ROOFLAB_TODO("lab06.q3", m, batch, context, elem_bytes);
  // STUDENT END
}

double gqa_saving(const rooflab::ModelSpec& m) {
  // STUDENT BEGIN (lab06.q4)
  // TODO(lab06.q4): MHA caches one KV head per query head. (1 line)
  ROOFLAB_TODO("lab06.q4", m);
  // STUDENT END
}

std::size_t tokens_cached(const rooflab::ModelSpec& m, std::size_t context) {
  // STUDENT BEGIN (lab06.q5)
  // TODO(lab06.q5): m.sliding_window is empty for models without one. (1 line)
  ROOFLAB_TODO("lab06.q5", m, context);
  // STUDENT END
}

std::size_t max_batch(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t context,
                      double weight_bytes, double elem_bytes, double reserve_gb) {
  // STUDENT BEGIN (lab06.q6)
  // TODO(lab06.q6): memory left after weights and reserve, in whole sequences. (3 lines)
  ROOFLAB_TODO("lab06.q6", m, gpu, context, weight_bytes, elem_bytes, reserve_gb);
  // STUDENT END
}

std::size_t max_context(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t batch,
                        double weight_bytes, double elem_bytes, double reserve_gb) {
  // STUDENT BEGIN (lab06.q7)
  // TODO(lab06.q7): the same budget, tokens per sequence; mind the sliding window (lab.hpp). (5 lines)
  ROOFLAB_TODO("lab06.q7", m, gpu, batch, weight_bytes, elem_bytes, reserve_gb);
  // STUDENT END
}

std::size_t blocks_for_budget_gib(const rooflab::ModelSpec& m, double budget_gib, std::size_t block_tokens,
                                  double elem_bytes) {
  // STUDENT BEGIN (lab06.q8)
  // TODO(lab06.q8): whole blocks only. (2 lines)
  ROOFLAB_TODO("lab06.q8", m, budget_gib, block_tokens, elem_bytes);
  // STUDENT END
}

Waste reserved_but_unused(std::span<const std::size_t> lengths, std::size_t max_len, std::size_t block_tokens) {
  // STUDENT BEGIN (lab06.q9)
  // TODO(lab06.q9): contiguous reserves max_len per sequence; paged holds whole blocks. (8 lines)
  ROOFLAB_TODO("lab06.q9", lengths, max_len, block_tokens);
  // STUDENT END
}

double kv_share_of_gpu(const rooflab::ModelSpec& m, const rooflab::GpuSpec& gpu, std::size_t batch,
                       std::size_t context, double elem_bytes) {
  // STUDENT BEGIN (lab06.q10)
  // TODO(lab06.q10): a fraction in [0, 1] of the listed memory. (1 line)
  ROOFLAB_TODO("lab06.q10", m, gpu, batch, context, elem_bytes);
  // STUDENT END
}

double decode_attention_bytes(std::span<const std::size_t> lengths, int kv_heads, int head_dim, double elem_bytes) {
  // STUDENT BEGIN (lab06.q11)
  // TODO(lab06.q11): every cached K and V element once. (3 lines)
  ROOFLAB_TODO("lab06.q11", lengths, kv_heads, head_dim, elem_bytes);
  // STUDENT END
}

}  // namespace lab06
