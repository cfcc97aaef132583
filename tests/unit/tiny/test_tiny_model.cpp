// The tiny model set: deterministic files in the real layouts, each loaded by its normal loader
// (not the synthesizer), a prompt encoded and one pass through every model finite; the tokenizer's
// training and special ids; the cache folder made once, also when two callers race.
#include <sentencepiece_processor.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "io/configs/audio_vae_config.h"
#include "io/configs/vocoder_config.h"
#include "io/layout.h"
#include "io/lora.h"
#include "model_sets/tiny_model.h"
#include "model_sets/tiny_tokenizer.h"
#include "models/audio_vae/audio_decoder.h"
#include "models/text/prompt_encoder.h"
#include "models/transformer/transformer.h"
#include "models/upsampler/latent_upsampler.h"
#include "models/video_vae/decoder.h"
#include "models/video_vae/encoder.h"
#include "models/vocoder/vocoder.h"
#include "pipeline/latent_tools.h"
#include "pipeline/lora_fuse.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
namespace fs = std::filesystem;

namespace {

const model_sets::TinyModelPaths& tiny_set() {
  static test::ScratchDir dir("tiny_model_set");
  static const model_sets::TinyModelPaths paths = model_sets::write_tiny_model_set(dir.path() + "/set");
  return paths;
}

std::string read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

float max_abs(const Tensor& t) {
  float m = 0;
  for (float v : t.contiguous().to_vector()) m = std::max(m, std::abs(v));
  return m;
}

// Finite and of a plausible magnitude (random weights must not blow activations up).
bool all_finite(const Tensor& t) {
  for (float v : t.contiguous().to_vector())
    if (!std::isfinite(v) || std::abs(v) > 1e3f) return false;
  return true;
}

std::set<std::string> component_names(const WeightSet& set) {
  std::set<std::string> out;
  for (const auto& s : summarize_components(set)) out.insert(component_name(s.component));
  return out;
}

}  // namespace

TEST_CASE("tiny tokenizer: deterministic training, Gemma's special ids, read by GemmaTokenizer") {
  const std::string model = model_sets::train_tiny_tokenizer();
  CHECK(model_sets::train_tiny_tokenizer() == model);
  sentencepiece::SentencePieceProcessor sp;
  REQUIRE(sp.LoadFromSerializedProto(model).ok());
  CHECK(sp.GetPieceSize() == model_sets::kTinyTokenizerVocab);
  const char* specials[] = {"<pad>",
                            "<eos>",
                            "<bos>",
                            "<unk>",
                            "<start_of_turn>",
                            "<end_of_turn>",
                            "<start_of_image>",
                            "<end_of_image>",
                            "<image_soft_token>"};
  for (int id = 0; id < 9; ++id) CHECK(sp.IdToPiece(id) == specials[id]);

  test::ScratchDir dir("tiny_tokenizer");
  test::write_bytes(dir.file("tokenizer.model"), model);
  GemmaTokenizer tok(dir.path(), 16);
  CHECK(tok.bos_id() == 2);
  CHECK(tok.pad_id() == 0);
  TokenizedPrompt t = tok.encode("  A cat sits by the window.  ");
  REQUIRE(t.ids.size() == 16);
  CHECK(t.num_tokens() >= 3);
  CHECK(t.num_tokens() <= 12);  // common words are whole pieces, not bytes
  CHECK(t.ids[16 - t.num_tokens()] == 2);
  CHECK(t.ids[0] == 0);
  TokenizedPrompt turn = tok.encode("<start_of_turn>7");
  CHECK(turn.ids[13] == 2);
  CHECK(turn.ids[14] == 4);
}

TEST_CASE("tiny model set: two writes give byte-identical files") {
  test::ScratchDir dir("tiny_model_twice");
  model_sets::write_tiny_model_set(dir.path());
  const fs::path first = tiny_set().dir;
  size_t files = 0;
  for (const auto& e : fs::recursive_directory_iterator(first)) {
    if (!e.is_regular_file()) continue;
    ++files;
    const fs::path other = fs::path(dir.path()) / fs::relative(e.path(), first);
    INFO(other.string());
    REQUIRE(fs::exists(other));
    CHECK(read_all(e.path()) == read_all(other));
  }
  CHECK(files == 6);
}

TEST_CASE("tiny model set: every file opens with the components and configs of the real layouts") {
  const auto& p = tiny_set();
  auto ckpt = WeightSet::open({p.checkpoint});
  CHECK(component_names(*ckpt) == std::set<std::string>{"transformer", "text_connector", "video_vae_decoder",
                                                        "video_vae_encoder", "video_vae_statistics",
                                                        "audio_vae_decoder", "audio_vae_statistics",
                                                        "vocoder"});
  CHECK(ckpt->config() == model_sets::tiny_checkpoint_config());
  for (const auto& name : ckpt->names()) CHECK(ckpt->info(name).dtype == DType::BF16);
  auto up = WeightSet::open({p.upsampler});
  CHECK(component_names(*up) == std::set<std::string>{"latent_upsampler"});
  CHECK(up->config() == model_sets::tiny_upsampler_config());
  CHECK(component_names(*WeightSet::open({p.lora})) == std::set<std::string>{"lora"});
  CHECK(component_names(*WeightSet::open_hf_folder(p.gemma)) == std::set<std::string>{"gemma_text_model"});
  uintmax_t bytes = 0;
  for (const auto& e : fs::recursive_directory_iterator(p.dir))
    if (e.is_regular_file()) bytes += e.file_size();
  CHECK(bytes < 12u << 20);
}

TEST_CASE("tiny model set: every model loads from the files and a prompt-to-waveform chain is finite") {
  const auto& p = tiny_set();
  auto ckpt = WeightSet::open({p.checkpoint});
  const nlohmann::json& cfg = ckpt->config();

  PromptEncoder encoder(p.gemma, ckpt, 128);
  EncodedPrompt prompt = encoder.encode({"a cat walks along the beach at sunset"}).at(0);
  CHECK(prompt.tokens.num_tokens() > 1);
  CHECK(prompt.video_context.shape() == Shape({1, 128, 96}));
  CHECK(prompt.audio_context.shape() == Shape({1, 128, 96}));
  CHECK(all_finite(prompt.video_context));
  CHECK(all_finite(prompt.audio_context));

  const auto dit = models::transformer::Transformer::load(ckpt);
  const std::array<int64_t, 3> grid = pipeline::video_latent_grid(9, 128, 192);
  CHECK(grid == std::array<int64_t, 3>{2, 4, 6});
  const int64_t audio_frames = pipeline::audio_latent_frames(9, 25.0);
  models::transformer::Modality video, audio;
  video.latent = pipeline::patchify_video(test::random_tensor({1, 128, grid[0], grid[1], grid[2]}, 1));
  audio.latent = pipeline::patchify_audio(test::random_tensor({1, 8, audio_frames, 16}, 2));
  video.positions = pipeline::video_positions(1, grid, 25.0);
  audio.positions = pipeline::audio_positions(1, audio_frames);
  for (auto* m : {&video, &audio}) {
    m->sigma = Tensor::from_vector({1.f}, {1});
    m->timesteps = Tensor::from_vector({1.f}, {1});
    m->context_mask = prompt.context_mask;
  }
  video.context = prompt.video_context;
  audio.context = prompt.audio_context;
  const auto out = dit.forward(&video, &audio);
  REQUIRE(out.video.shape() == video.latent.shape());
  REQUIRE(out.audio.shape() == audio.latent.shape());
  CHECK(all_finite(out.video));
  CHECK(all_finite(out.audio));

  const Tensor latent = pipeline::unpatchify_video(out.video, grid);
  const auto decoder = video_vae::VideoDecoder::from_weights(ckpt);
  const Tensor frames = decoder.decode(latent);
  CHECK(frames.shape() == Shape({1, 3, 9, 128, 192}));
  CHECK(all_finite(frames));
  const Tensor encoded = video_vae::VideoEncoder::from_weights(ckpt).encode(frames);
  CHECK(encoded.shape() == latent.shape());
  CHECK(all_finite(encoded));
  const auto upsampler = upsampler::LatentUpsampler::from_weights(WeightSet::open({p.upsampler}));
  const Tensor upsampled = upsampler::upsample_video(upsampler, latent, decoder.statistics());
  CHECK(upsampled.shape() == Shape({1, 128, 2, 8, 12}));
  CHECK(all_finite(upsampled));

  const auto audio_decoder =
      audio_vae::AudioDecoder::load(parse_audio_vae_decoder_config(cfg.at("audio_vae")), ckpt);
  const Tensor mel = audio_decoder.forward(pipeline::unpatchify_audio(out.audio, 8, 16));
  CHECK(mel.shape() == Shape({1, 2, 4 * audio_frames - 3, 64}));
  CHECK(all_finite(mel));
  const auto vocoder = vocoder::Vocoder::load(parse_vocoder_config(cfg.at("vocoder")), ckpt);
  CHECK(vocoder.output_sampling_rate() == 24000);
  const Tensor wave = vocoder.forward(mel);
  CHECK(wave.shape() == Shape({1, 2, mel.size(2) * 240}));
  CHECK(all_finite(wave));

  // The LoRA adapts existing transformer weights with matching shapes.
  const auto lora = read_lora_file(p.lora);
  CHECK(lora->pairs.size() >= 2 * 6 * 4);
  pipeline::WeightMap targets;
  for (const auto& [target, pair] : lora->pairs) {
    const std::string name = "model.diffusion_model." + target;
    INFO(name);
    REQUIRE(ckpt->contains(name));
    CHECK(ckpt->info(name).shape == Shape({pair.up.size(0), pair.down.size(1)}));
    targets[target] = ckpt->raw(name).to(DType::F32);
  }
  // Fused at strength 1 it changes every adapted weight, by a fraction of its size.
  const pipeline::WeightMap originals = targets;
  pipeline::LoraFusion fusion;
  CHECK(fusion.apply(targets, {{lora, 1.f}}).size() == lora->pairs.size());
  for (const auto& [target, fused] : targets) {
    const float change = test::max_abs_diff(fused, originals.at(target));
    CHECK(change > 0);
    CHECK(change < max_abs(originals.at(target)));
  }
}

TEST_CASE("tiny model set: the cache folder is made once, atomically, also when two callers race") {
  test::ScratchDir dir("tiny_model_cache");
  const std::string cache = dir.path() + "/cache";
  setenv("LTX2_CACHE_DIR", cache.c_str(), 1);
  CHECK(model_sets::ltx2_cache_dir() == cache);
  model_sets::TinyModelPaths a, b;
  std::thread ta([&] { a = model_sets::ensure_tiny_model_set(); });
  std::thread tb([&] { b = model_sets::ensure_tiny_model_set(); });
  ta.join();
  tb.join();
  CHECK(a.dir == cache + "/" + model_sets::kTinyModelVersion);
  CHECK(b.dir == a.dir);
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(cache)) entries.push_back(e.path().filename().string());
  CHECK(entries == std::vector<std::string>{model_sets::kTinyModelVersion});  // no temporary left behind
  CHECK(read_all(a.checkpoint) == read_all(tiny_set().checkpoint));
  const auto before = fs::last_write_time(a.checkpoint);
  CHECK(model_sets::ensure_tiny_model_set().checkpoint == a.checkpoint);
  CHECK(fs::last_write_time(a.checkpoint) == before);

  // The CLIs' default: no checkpoint flag -> the cached set, which passes the CLIs' validation.
  for (PipelineKind kind : {PipelineKind::Distilled, PipelineKind::TwoStage}) {
    ModelPaths paths;
    REQUIRE(model_sets::use_tiny_model_when_unset(paths, kind));
    CHECK(paths.checkpoint == a.checkpoint);
    CHECK(paths.gemma_root == a.gemma);
    CHECK(paths.spatial_upsampler == a.upsampler);
    CHECK(paths.distilled_loras.size() == (kind == PipelineKind::TwoStage ? 1u : 0u));
    if (kind == PipelineKind::TwoStage) CHECK(paths.distilled_loras[0].path == a.lora);
    CHECK_NOTHROW(validate_model_paths(paths, kind));
  }
  ModelPaths own;
  own.checkpoint = "/models/ltx-2.safetensors";
  CHECK_FALSE(model_sets::use_tiny_model_when_unset(own, PipelineKind::Distilled));
  CHECK(own.gemma_root.empty());
  unsetenv("LTX2_CACHE_DIR");

  setenv("XDG_CACHE_HOME", dir.path().c_str(), 1);
  CHECK(model_sets::ltx2_cache_dir() == dir.path() + "/ltx2");
  unsetenv("XDG_CACHE_HOME");
}
