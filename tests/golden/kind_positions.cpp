// golden_check's runner for "positions" cases: video/audio latent-tool positions and keyframe masks
// per pixel shape, patchify/unpatchify round trips, and RoPE tables built from those positions.
#include <regex>
#include <string>

#include "core/error.h"
#include "golden/kinds.h"
#include "ops/rope.h"
#include "pipeline/latent_tools.h"

namespace ltx2::golden {

namespace {

using nlohmann::json;

void check_shapes(const GoldenCase& c, const Tolerance& tol, Report& report) {
  for (const json& s : c.spec().at("shapes")) {
    const std::string key = std::to_string(s.at("key").get<int64_t>());
    const json& px = s.at("pixel");
    const double fps = px.at("fps").get<double>();
    const int64_t frames = px.at("frames").get<int64_t>();
    const auto grid =
        pipeline::video_latent_grid(frames, px.at("height").get<int64_t>(), px.at("width").get<int64_t>());
    const int64_t batch = s.at("video_latent_shape").at(0).get<int64_t>();
    const std::string v = "out.video" + key, a = "out.audio" + key;
    if (c.has(v + ".positions"))
      report.check(v + ".positions", pipeline::video_positions(batch, grid, fps), c.tensor(v + ".positions"),
                   tol);
    if (c.has(v + ".keyframes_mask"))
      report.check(v + ".keyframes_mask", pipeline::video_keyframes_mask(batch, grid),
                   c.tensor(v + ".keyframes_mask"), tol);
    const int64_t audio_tokens = pipeline::audio_latent_frames(frames, fps);
    if (audio_tokens != s.at("audio_tokens").get<int64_t>())
      report.fail(a + ".tokens", "computed " + std::to_string(audio_tokens) + " audio tokens");
    if (c.has(a + ".positions"))
      report.check(a + ".positions", pipeline::audio_positions(batch, audio_tokens),
                   c.tensor(a + ".positions"), tol);
  }
}

void check_patchify(const GoldenCase& c, const Tolerance& tol, Report& report) {
  const std::string head = "in.patchify.", tail = ".latent";
  for (const std::string& name : c.names(head)) {
    if (name.size() <= head.size() + tail.size() ||
        name.compare(name.size() - tail.size(), tail.size(), tail) != 0)
      continue;
    const std::string what = name.substr(head.size(), name.size() - head.size() - tail.size());
    const std::string out = "out.patchify." + what;
    const Tensor latent = c.tensor(name);
    Tensor tokens, back;
    if (what.rfind("video", 0) == 0) {
      // "video_p<N>": spatial patch N, temporal patch 1 (the reference's VideoLatentPatchifier).
      std::smatch m;
      LTX2_CHECK(std::regex_search(what, m, std::regex("_p(\\d+)$")), "positions case: no patch size in '{}'",
                 name);
      const int64_t p = std::stoll(m[1]);
      tokens = pipeline::patchify_video(latent, {1, p, p});
      back = pipeline::unpatchify_video(tokens, {latent.size(2), latent.size(3), latent.size(4)}, {1, p, p});
    } else {
      tokens = pipeline::patchify_audio(latent);
      back = pipeline::unpatchify_audio(tokens, latent.size(1), latent.size(3));
    }
    report.check(out + ".tokens", tokens, c.tensor(out + ".tokens"), tol);
    report.check(out + ".roundtrip", back, c.tensor(out + ".roundtrip"), tol);
  }
}

std::vector<double> max_pos_of(const std::string& description, std::vector<double> fallback) {
  std::smatch m;
  if (!std::regex_search(description, m, std::regex("max_pos=\\[([^\\]]*)\\]"))) return fallback;
  std::vector<double> v;
  const std::string list = m[1];
  const std::regex number("[0-9.eE+-]+");
  for (std::sregex_iterator it(list.begin(), list.end(), number), end; it != end; ++it)
    v.push_back(std::stod(it->str()));
  return v;
}

// out.rope.<stream>_<layout>_<grid>.{cos,sin}; dims and heads come from the expected tables.
void check_rope(const GoldenCase& c, const Tolerance& tol, Report& report) {
  const json& rope = c.spec().at("rope");
  std::string last_video, last_audio;
  for (const std::string& n : c.names("out.video"))
    if (n.find(".positions") != std::string::npos) last_video = n;
  for (const std::string& n : c.names("out.audio"))
    if (n.find(".positions") != std::string::npos) last_audio = n;
  for (const std::string& name : c.names("out.rope.")) {
    if (name.size() < 4 || name.substr(name.size() - 4) != ".cos") continue;
    const std::string tag = name.substr(9, name.size() - 13);  // e.g. video_split_np64
    const std::string base = "out.rope." + tag;
    const bool video = tag.rfind("video", 0) == 0;
    const bool split = tag.find("_split_") != std::string::npos;
    const std::string desc_key = tag.substr(0, tag.rfind('_'));
    const std::string desc = rope.value(desc_key, std::string());
    const Tensor expected_cos = c.tensor(base + ".cos");
    ops::RopeSpec spec;
    spec.theta = 10000.0;
    spec.layout = split ? ops::RopeLayout::Split : ops::RopeLayout::Interleaved;
    spec.grid = tag.find("np64") != std::string::npos ? ops::RopeGridPrecision::Float64
                                                      : ops::RopeGridPrecision::Float32;
    spec.heads = split ? expected_cos.size(1) : 1;
    spec.dim = split ? 2 * expected_cos.size(1) * expected_cos.size(3) : expected_cos.size(2);
    spec.max_pos = max_pos_of(desc, video ? std::vector<double>{20, 2048, 2048} : std::vector<double>{20});
    const std::string& pos_name = video ? last_video : last_audio;
    LTX2_CHECK(!pos_name.empty(), "positions case: no positions output for {}", name);
    const ops::RopeTables t = ops::rope_tables(c.tensor(pos_name), spec);
    report.check(base + ".cos", t.cos, expected_cos, tol);
    report.check(base + ".sin", t.sin, c.tensor(base + ".sin"), tol);
  }
}

void run_positions(const GoldenCase& c, Report& report) {
  const Tolerance tol = parse_tolerance(c.spec().at("tolerance"));
  check_shapes(c, tol, report);
  check_patchify(c, tol, report);
  check_rope(c, tol, report);
  for (const std::string& name : c.names("out.")) {
    bool compared = false;
    for (const CompareRow& row : report.rows()) compared = compared || row.name == name;
    if (!compared) report.fail(name, "output of a kind this runner does not know");
  }
}

}  // namespace

static const bool registered = register_kind_runner("positions", &run_positions);

}  // namespace ltx2::golden
