#include "io/configs/vocoder_config.h"

#include <nlohmann/json.hpp>

#include "io/config_reader.h"

namespace ltx2 {

namespace {

using json = nlohmann::json;

std::vector<std::vector<int64_t>> read_dilations(const ConfigReader& r,
                                                 const std::vector<std::vector<int64_t>>& fallback) {
  const char* key = "resblock_dilation_sizes";
  if (!r.has(key)) return fallback;
  const json& v = r.raw().at(key);
  std::vector<std::vector<int64_t>> out;
  if (!v.is_array()) r.fail(key, "is " + v.dump() + ", expected a list of lists of integers");
  for (const json& inner : v) {
    if (!inner.is_array()) r.fail(key, "is " + v.dump() + ", expected a list of lists of integers");
    std::vector<int64_t> row;
    for (const json& e : inner) {
      if (!e.is_number_integer() || e.get<int64_t>() < 1)
        r.fail(key, "is " + v.dump() + ", expected positive integers");
      row.push_back(e.get<int64_t>());
    }
    // ResBlock1 / AMPBlock1 pair three dilated convs with three plain ones.
    if (row.size() != 3) r.fail(key, "is " + v.dump() + "; each entry must hold three dilations");
    out.push_back(row);
  }
  return out;
}

void require_positive(const ConfigReader& r, const char* key, const std::vector<int64_t>& values) {
  if (values.empty()) r.fail(key, "is empty");
  for (int64_t v : values)
    if (v < 1) r.fail(key, "has a non-positive entry");
}

// One generator dict; `resblock` is what the reference asserts for this position.
VocoderGeneratorConfig read_generator(const ConfigReader& r, const std::string& resblock) {
  VocoderGeneratorConfig g;
  g.resblock_kernel_sizes = r.integers("resblock_kernel_sizes", g.resblock_kernel_sizes);
  g.upsample_rates = r.integers("upsample_rates", g.upsample_rates);
  g.upsample_kernel_sizes = r.integers("upsample_kernel_sizes", g.upsample_kernel_sizes);
  g.resblock_dilation_sizes = read_dilations(r, g.resblock_dilation_sizes);
  g.upsample_initial_channel = r.integer("upsample_initial_channel", g.upsample_initial_channel);
  g.output_sampling_rate = r.integer("output_sampling_rate", g.output_sampling_rate);
  g.use_tanh_at_final = r.boolean("use_tanh_at_final", g.use_tanh_at_final);
  g.use_bias_at_final = r.boolean("use_bias_at_final", g.use_bias_at_final);

  // The reference requires these keys to be present with exactly these values.
  if (r.string("resblock") != resblock)
    r.fail("resblock", "is '" + r.string("resblock") + "'; supported: " + resblock);
  if (!r.boolean("stereo")) r.fail("stereo", "is false; only stereo vocoders are supported");
  g.resblock = resblock == "AMP1" ? VocoderResBlock::Amp1 : VocoderResBlock::HifiGan1;
  if (g.resblock == VocoderResBlock::Amp1 && r.string("activation") != "snakebeta")
    r.fail("activation", "is '" + r.string("activation") + "'; supported: snakebeta");

  require_positive(r, "resblock_kernel_sizes", g.resblock_kernel_sizes);
  require_positive(r, "upsample_rates", g.upsample_rates);
  require_positive(r, "upsample_kernel_sizes", g.upsample_kernel_sizes);
  if (g.upsample_kernel_sizes.size() != g.upsample_rates.size())
    r.fail("upsample_kernel_sizes", "must have one entry per upsample rate");
  if (g.resblock_dilation_sizes.size() != g.resblock_kernel_sizes.size())
    r.fail("resblock_dilation_sizes", "must have one entry per resblock kernel size");
  for (size_t i = 0; i < g.upsample_rates.size(); ++i)
    if (g.upsample_kernel_sizes[i] < g.upsample_rates[i])
      r.fail("upsample_kernel_sizes", "has a kernel shorter than its upsample rate");
  // Channels halve at every upsampling layer and must not vanish.
  if (g.upsample_initial_channel < (int64_t{1} << g.upsample_rates.size()))
    r.fail("upsample_initial_channel",
           "is too small for " + std::to_string(g.upsample_rates.size()) + " halvings");
  return g;
}

}  // namespace

int64_t VocoderGeneratorConfig::hop() const {
  int64_t h = 1;
  for (int64_t r : upsample_rates) h *= r;
  return h;
}

VocoderConfig parse_vocoder_config(const json& vocoder) {
  ConfigReader root(vocoder.is_null() ? json::object() : vocoder, "vocoder");
  VocoderConfig c;
  if (!root.has("bwe")) {
    c.generator = read_generator(root, "1");
    return c;
  }
  ConfigReader inner =
      root.has("vocoder") ? root.child("vocoder") : ConfigReader(json::object(), "vocoder.vocoder");
  ConfigReader bwe = root.child("bwe");
  c.generator = read_generator(inner, "AMP1");
  VocoderBweConfig b;
  b.generator = read_generator(bwe, "AMP1");
  b.generator.apply_final_activation = false;
  b.input_sampling_rate = bwe.integer("input_sampling_rate");
  b.output_sampling_rate = bwe.integer("output_sampling_rate");
  b.hop_length = bwe.integer("hop_length");
  b.n_fft = bwe.integer("n_fft");
  b.num_mels = bwe.integer("num_mels");
  // The inner generator runs at the BWE's input rate whatever its own dict says.
  c.generator.output_sampling_rate = b.input_sampling_rate;
  b.generator.output_sampling_rate = b.output_sampling_rate;

  if (b.input_sampling_rate < 1 || b.output_sampling_rate % b.input_sampling_rate != 0 ||
      b.output_sampling_rate < b.input_sampling_rate)
    bwe.fail("output_sampling_rate", "must be a whole multiple of input_sampling_rate");
  if (b.hop_length < 1 || b.hop_length > b.n_fft) bwe.fail("hop_length", "must be in [1, n_fft]");
  if (b.n_fft < 2 || b.n_fft % 2 != 0) bwe.fail("n_fft", "must be even and at least 2");
  if (b.num_mels < 1) bwe.fail("num_mels", "must be positive");
  // The residual (one BWE mel frame -> hop() samples) must line up with the resampled skip.
  if (b.generator.hop() != b.hop_length * (b.output_sampling_rate / b.input_sampling_rate))
    bwe.fail("upsample_rates",
             "give " + std::to_string(b.generator.hop()) + " samples per frame; hop_length x rate ratio is " +
                 std::to_string(b.hop_length * (b.output_sampling_rate / b.input_sampling_rate)));
  c.bwe = b;
  return c;
}

}  // namespace ltx2
