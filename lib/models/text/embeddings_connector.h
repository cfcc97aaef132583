// LTX's Embeddings1DConnector: text features [B, T, inner] (valid tokens first) -> context.
//
// Pad rows are replaced by learnable registers (row i takes register i mod 128), after which every
// row attends to every row; then N pre-norm blocks (unweighted RMS norm -> self-attention with
// biased q/k/v/out projections, learned RMS q/k norms over the full inner dim, split 1-D RoPE over
// positions 0..T-1, optional per-head sigmoid gate; unweighted RMS norm -> gelu(tanh) MLP 4x), and
// a final unweighted RMS norm.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "io/configs/text_projection_config.h"
#include "io/weights.h"
#include "ops/rope.h"

namespace ltx2 {

class EmbeddingsConnector {
 public:
  // `w`: window onto one connector ("video_embeddings_connector." / "audio_embeddings_connector."),
  // loaded in `dtype` on `device`.
  EmbeddingsConnector(const ConnectorConfig& config, const WeightView& w, DType dtype = DType::F32,
                      Device device = Device::cpu());

  const ConnectorConfig& config() const { return config_; }
  // x [B, T, inner] in the weights' dtype on their device, mask [B, T] int64 (0 = pad row to
  // replace; read on the host). T must be a multiple of the register count.
  Tensor forward(const Tensor& x, const Tensor& mask) const;

 private:
  struct Block {
    Tensor to_q_w, to_q_b, to_k_w, to_k_b, to_v_w, to_v_b, out_w, out_b, q_norm, k_norm;
    Tensor gate_w, gate_b;  // gated attention only
    Tensor ff_in_w, ff_in_b, ff_out_w, ff_out_b;
  };
  ConnectorConfig config_;
  Tensor registers_;  // [registers, inner]
  std::vector<Block> blocks_;

  Tensor attention(const Block& blk, const Tensor& x, const ops::RopeTables& rope) const;
};

}  // namespace ltx2
