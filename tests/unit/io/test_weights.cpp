#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/error.h"
#include "io/config_reader.h"
#include "io/layout.h"
#include "io/weights.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

TEST_CASE("weights: a view maps prefixes and names missing or mis-shaped tensors") {
  auto set = WeightSet::open({test::golden_dir("transformer_19b") + "/weights.safetensors"});
  WeightView tr(set, component_prefixes(Component::Transformer), "transformer");
  REQUIRE(tr.has("patchify_proj.weight"));
  Shape s = tr.shape_of("patchify_proj.weight");
  REQUIRE(tr.load("patchify_proj.weight", s).dtype() == DType::F32);
  REQUIRE_THROWS_WITH(tr.load("nope.weight"), Contains("missing tensor 'model.diffusion_model.nope.weight'"));
  REQUIRE_THROWS_WITH(tr.load("patchify_proj.weight", {1, 2}),
                      Contains("'model.diffusion_model.patchify_proj.weight' has shape"));
  WeightView block = tr.sub("transformer_blocks.0.");
  REQUIRE(block.has("attn1.to_q.weight"));
}

TEST_CASE("weights: components of the golden checkpoints are recognised") {
  auto set = WeightSet::open({test::golden_dir("pipeline_distilled") + "/checkpoint.safetensors"});
  std::vector<std::string> found;
  for (const auto& s : summarize_components(*set)) found.push_back(component_name(s.component));
  for (const char* want : {"transformer", "text_connector", "video_vae_decoder", "video_vae_encoder",
                           "audio_vae_decoder", "vocoder"})
    REQUIRE(std::find(found.begin(), found.end(), want) != found.end());
  REQUIRE(std::find(found.begin(), found.end(), "other") == found.end());
}

TEST_CASE("weights: Hugging Face folders, with and without an index") {
  auto gemma = WeightSet::open_hf_folder(test::golden_dir("pipeline_distilled") + "/gemma");
  REQUIRE(gemma->names().size() > 0);

  test::ScratchDir dir("hf_sharded");
  write_safetensors(dir.file("model-00001-of-00002.safetensors"), {{"a", Tensor::zeros({2})}});
  write_safetensors(dir.file("model-00002-of-00002.safetensors"), {{"b", Tensor::zeros({3})}});
  {
    std::ofstream idx(dir.file("model.safetensors.index.json"));
    idx << R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})";
  }
  auto set = WeightSet::open_hf_folder(dir.path());
  REQUIRE(set->contains("a"));
  REQUIRE(set->contains("b"));
  std::filesystem::remove(dir.file("model-00002-of-00002.safetensors"));
  REQUIRE_THROWS_WITH(WeightSet::open_hf_folder(dir.path()),
                      Contains("shard 'model-00002-of-00002.safetensors' named by the index is missing"));
}

TEST_CASE("weights: a tensor in two files is refused") {
  test::ScratchDir dir("dup");
  write_safetensors(dir.file("a.safetensors"), {{"x", Tensor::zeros({2})}});
  write_safetensors(dir.file("b.safetensors"), {{"x", Tensor::zeros({2})}});
  REQUIRE_THROWS_WITH(WeightSet::open({dir.file("a.safetensors"), dir.file("b.safetensors")}),
                      Contains("appears in both"));
}

TEST_CASE("config reader: typed values, choices and names in messages") {
  nlohmann::json j = {{"n", 3}, {"f", 1.5}, {"s", "split"}, {"b", true}, {"l", {1, 2}}};
  ConfigReader r(j, "transformer");
  REQUIRE(r.integer("n") == 3);
  REQUIRE(r.number("f") == 1.5);
  REQUIRE(r.boolean("b"));
  REQUIRE(r.integers("l") == std::vector<int64_t>{1, 2});
  REQUIRE(r.integer("absent", 7) == 7);
  REQUIRE(r.choice("s", {"split", "interleaved"}) == "split");
  REQUIRE_THROWS_WITH(r.choice("s", {"interleaved"}),
                      "transformer config: 's' is 'split'; supported: interleaved");
  REQUIRE_THROWS_WITH(r.integer("f"), Contains("'f' is 1.5, expected an integer"));
  REQUIRE_THROWS_WITH(r.integer("absent"), "transformer config: 'absent' is missing");
  REQUIRE_THROWS_WITH(r.require_equal("n", 4), Contains("only 4 is supported"));
}

TEST_CASE("weights: synthesis records every loaded tensor with its full name, deterministically") {
  auto make = [](uint64_t seed) {
    auto synth = std::make_shared<WeightSynthesizer>(seed);
    WeightView v(synth, "model.diffusion_model.", "transformer");
    WeightView block = v.sub("transformer_blocks.0.");
    Tensor w = block.load("attn1.to_q.weight", {8, 4});
    Tensor n = block.load("attn1.q_norm.weight", {8});
    REQUIRE(block.has("attn1.to_q.weight"));
    REQUIRE_FALSE(block.has("attn1.to_k.weight"));
    REQUIRE_THROWS_WITH(block.load("attn1.to_k.weight"), Contains("without a shape"));
    REQUIRE(synth->tensors().size() == 2);
    REQUIRE(synth->tensors()[0].first == "model.diffusion_model.transformer_blocks.0.attn1.to_q.weight");
    // fan-in scaled weights, norms near one
    for (float x : w.to_vector()) REQUIRE(std::fabs(x) <= std::sqrt(3.f / 4.f));
    for (float x : n.to_vector()) REQUIRE(std::fabs(x - 1.f) <= 0.1f);
    return w;
  };
  Tensor a = make(7), b = make(7), c = make(8);
  REQUIRE(test::max_abs_diff(a, b) == 0.f);
  REQUIRE(test::max_abs_diff(a, c) > 0.f);
}

TEST_CASE("weights: a placed view loads in its dtype by default, sub-views keep the placement") {
  auto set = WeightSet::open({test::golden_dir("video_vae_decoder") + "/weights.safetensors"});
  const WeightView plain(set, component_prefixes(Component::VideoDecoder), "video VAE decoder");
  const WeightView placed = plain.placed(DType::BF16, Device::cpu()).sub("conv_in.");
  REQUIRE(plain.dtype() == DType::F32);
  REQUIRE(placed.dtype() == DType::BF16);
  const Shape s = placed.shape_of("conv.bias");
  const Tensor b = placed.load("conv.bias", s);
  REQUIRE(b.dtype() == DType::BF16);
  REQUIRE(placed.load("conv.bias").dtype() == DType::BF16);
  // An explicit dtype still wins.
  REQUIRE(placed.load("conv.bias", s, DType::F32).dtype() == DType::F32);
  REQUIRE(test::max_abs_diff(b.to(DType::F32),
                             plain.sub("conv_in.").load("conv.bias").to(DType::BF16).to(DType::F32)) == 0.f);
}

TEST_CASE("weights: the synthesized value rule streams the bytes a synthesizer makes") {
  WeightSynthesizer synth(5);
  const std::pair<std::string, Shape> cases[] = {{"blocks.0.attn1.to_q.weight", {6, 40}},
                                                 {"blocks.0.attn1.q_norm.weight", {300}},
                                                 {"blocks.0.scale_shift_table", {6, 8}},
                                                 {"decoder.conv_in.conv.bias", {17}},
                                                 {"per_channel_statistics.std-of-means", {128}}};
  for (const auto& [name, shape] : cases) {
    const Tensor made = synth.make(name, shape).to(DType::BF16);
    const SynthesizedValues values(5, name, shape);
    std::vector<uint16_t> streamed(static_cast<size_t>(made.numel()));
    // in two pieces, as a chunk boundary would cut it
    const int64_t half = made.numel() / 2;
    values.fill_bf16(0, half, streamed.data());
    values.fill_bf16(half, made.numel() - half, streamed.data() + half);
    CHECK(std::memcmp(streamed.data(), made.data_ptr(), made.nbytes()) == 0);
    values.fill_bf16(0, made.numel(), streamed.data(), 0.1f);
    CHECK(bf16_to_f32(streamed[1]) == round_bf16(synth.make(name, shape).to_vector()[1] * 0.1f));
  }
  // A recording synthesizer hands out tensors of the asked shapes and records them the same way.
  WeightSynthesizer shapes(5, /*values=*/false);
  REQUIRE(shapes.make("w", {1 << 14, 1 << 12}).shape() == Shape{1 << 14, 1 << 12});
  REQUIRE(shapes.tensors().size() == 1);
}

TEST_CASE("weights: a checkpoint truncated or rewritten after it was opened is an error naming it") {
  // (Loads used to copy from the mapping: past the new end of the file that is a SIGBUS.)
  test::ScratchDir dir("weights_truncated");
  const std::string path = dir.file("w.safetensors");
  const Tensor a = test::random_tensor({256, 64}, 1), b = test::random_tensor({256, 64}, 2);
  write_safetensors(path, {{"a", a.to(DType::BF16)}, {"b", b}});
  auto set = WeightSet::open({path});
  const WeightView view(set, {""}, "test");
  REQUIRE(test::max_abs_diff(view.load("b"), b) == 0.f);

  std::filesystem::resize_file(path, 4096);
  REQUIRE_THROWS_WITH(view.load("b"),
                      Contains(path) && Contains("'b'") && Contains("truncated while loading"));
  REQUIRE_THROWS_WITH(view.load("a", DType::BF16),
                      Contains(path) && Contains("'a'") && Contains("truncated"));

  // Rewritten in place to its old size: the bytes read fine, the modification time gives it away.
  write_safetensors(path, {{"a", a.to(DType::BF16)}, {"b", b}});
  auto fresh = WeightSet::open({path});
  const WeightView again(fresh, {""}, "test");
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-4, std::ios::end);
    f.write("\0\0\0\0", 4);
  }
  std::filesystem::last_write_time(path, std::filesystem::last_write_time(path) + std::chrono::seconds(5));
  REQUIRE_THROWS_WITH(again.load("a"), Contains(path) && Contains("rewritten while it was loading"));
}

TEST_CASE("weights: NaN or infinite weights are refused, naming the tensor and the file") {
  test::ScratchDir dir("weights_non_finite");
  // In the second 4 MiB chunk the reader scans, to check the element index.
  Tensor big = test::random_tensor({1 << 21}, 1);
  big.data<float>()[1500000] = INFINITY;
  Tensor nan_bf16 = test::random_tensor({4, 8}, 2);
  nan_bf16.data<float>()[5] = NAN;
  Tensor f16 = Tensor::from_vector({1.f, -INFINITY}, {2}).to(DType::F16);
  Tensor e4m3 = Tensor::zeros({3}, DType::F8E4M3), e5m2 = Tensor::zeros({3}, DType::F8E5M2);
  static_cast<uint8_t*>(e4m3.data_ptr())[2] = 0xff;  // e4m3fn's NaN (it has no infinity)
  static_cast<uint8_t*>(e5m2.data_ptr())[1] = 0x7c;  // +inf
  const Tensor scale = Tensor::from_vector({2.f}, {});
  const std::string path = dir.file("w.safetensors");
  write_safetensors(path, {{"big", big},
                           {"nan.weight", nan_bf16.to(DType::BF16)},
                           {"half", f16},
                           {"q.weight", e4m3},
                           {"q.weight_scale", scale},
                           {"r.weight", e5m2},
                           {"r.weight_scale", scale},
                           {"fine.weight", Tensor::from_vector({1.f, 448.f}, {2}).to(DType::F8E4M3)},
                           {"fine.weight_scale", scale},
                           {"ids", Tensor::from_vector_i64({-1, 0x7ff0000000000000}, {2})}});
  const WeightView view(WeightSet::open({path}), {""}, "test");
  REQUIRE_THROWS_WITH(view.load("big"),
                      Contains(path) && Contains("tensor 'big' holds inf (element 1500000 of [2097152])"));
  REQUIRE_THROWS_WITH(view.load("nan.weight"),
                      Contains("tensor 'nan.weight' holds nan (element 5 of [4, 8])"));
  REQUIRE_THROWS_WITH(view.load("half", DType::F16), Contains("tensor 'half' holds -inf (element 1"));
  REQUIRE_THROWS_WITH(view.load("q.weight"), Contains("tensor 'q.weight' holds -nan (element 2 of [3])"));
  REQUIRE_THROWS_WITH(view.load("r.weight"), Contains("tensor 'r.weight' holds inf (element 1"));
  // Finite values at the formats' ends, and integers with any bits, load.
  REQUIRE(view.load("fine.weight").to_vector() == std::vector<float>{2.f, 896.f});
  REQUIRE(view.load("ids", DType::I64).to_vector_i64() == std::vector<int64_t>{-1, 0x7ff0000000000000});
}

TEST_CASE("layout: every tensor of the reference's packed text-encoder file has its component") {
  auto set = WeightSet::open({test::golden_dir("text_encoder_file") + "/text_encoder.safetensors"});
  std::set<std::string> names;
  for (const auto& s : summarize_components(*set)) names.insert(component_name(s.component));
  REQUIRE(names == std::set<std::string>{"text_connector", "gemma_text_model", "gemma_vision", "gemma_assets"});
  REQUIRE(classify_key("tokenizer_json") == Component::TextAssets);
  REQUIRE(classify_key("spiece_model") == Component::TextAssets);
  REQUIRE(classify_key("hf_asset__tokenizer_config.json") == Component::TextAssets);
}
