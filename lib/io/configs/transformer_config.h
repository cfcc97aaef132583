// TransformerConfig: the audio+video diffusion transformer's shape and behaviour, read from a
// checkpoint's metadata config["transformer"]. Every key the reference asserts must be present with
// its one supported value; the keys that shape the model take the reference's code defaults when
// absent; keys we do not know are refused by name (so a new model option is never silently ignored).
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <vector>

namespace ltx2 {

enum class RopeLayout { Split, Interleaved };

struct TransformerConfig {
  int64_t num_layers = 48;
  int64_t video_heads = 32, video_head_dim = 128;
  int64_t audio_heads = 32, audio_head_dim = 64;
  int64_t video_in_channels = 128, video_out_channels = 128;
  int64_t audio_in_channels = 128, audio_out_channels = 128;
  int64_t video_context_dim = 4096;  // cross_attention_dim
  int64_t audio_context_dim = 2048;  // audio_cross_attention_dim (also the A<->V RoPE width)
  // 19B: the caption projection (caption_channels -> inner width) lives in the transformer.
  bool caption_projection = true;
  int64_t caption_channels = 0;
  double norm_eps = 1e-6;
  double rope_theta = 10000.0;
  std::vector<double> video_max_pos = {20, 2048, 2048};
  std::vector<double> audio_max_pos = {20};
  double timestep_scale_multiplier = 1000;
  double av_ca_timestep_scale_multiplier = 1;
  RopeLayout rope_layout = RopeLayout::Split;
  bool rope_float64_grid = false;  // frequencies_precision == "float64"
  bool gated_attention = false;
  bool cross_attention_adaln = false;
  bool prompt_adaln = true;  // only meaningful with cross_attention_adaln
  bool video_ff_bias = true;
  bool audio_ff_bias = true;
  bool keyframe_embedding = false;

  int64_t video_dim() const { return video_heads * video_head_dim; }
  int64_t audio_dim() const { return audio_heads * audio_head_dim; }
  // Rows of each block's AdaLN table: 9 with cross-attention AdaLN, else 6.
  int64_t adaln_rows() const { return cross_attention_adaln ? 9 : 6; }
  bool has_prompt_adaln() const { return cross_attention_adaln && prompt_adaln; }

  // Parses metadata config["transformer"]; throws ltx2::Error naming the key at fault.
  static TransformerConfig parse(const nlohmann::json& transformer);
};

}  // namespace ltx2
