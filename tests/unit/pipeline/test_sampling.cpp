// Schedulers, guiders and diffusion steps: properties the golden cases do not pin down directly.
#include <cmath>

#include "core/error.h"
#include "ops/elementwise.h"
#include "pipeline/diffusion_steps.h"
#include "pipeline/guiders.h"
#include "pipeline/schedulers.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

TEST_CASE("schedulers: LTX2 shift, terminal stretch and the default 30-step values") {
  pipeline::Ltx2SchedulerParams p;
  REQUIRE(std::fabs(pipeline::ltx2_sigma_shift(4096, p) - 2.05) < 1e-12);
  REQUIRE(std::fabs(pipeline::ltx2_sigma_shift(1024, p) - 0.95) < 1e-12);
  REQUIRE(pipeline::latent_tokens({1, 128, 16, 16, 24}) == 6144);
  const auto s = pipeline::ltx2_sigmas(30, 0);
  REQUIRE(s.size() == 31);
  // Not exactly 1: the float32 shift and stretch leave 1 - 1ulp, as in the reference.
  REQUIRE(std::fabs(s.front() - 1.0f) < 1e-6f);
  REQUIRE(s.back() == 0.0f);
  REQUIRE(std::fabs(s[29] - 0.1f) < 1e-6f);
  REQUIRE(std::fabs(s[1] - 0.994957f) < 1e-6f);
  REQUIRE(std::fabs(s[28] - 0.26612f) < 1e-6f);
  for (size_t i = 1; i < s.size(); ++i) REQUIRE(s[i] < s[i - 1]);
  REQUIRE_THROWS_WITH(pipeline::ltx2_sigmas(0, 0), Contains("steps"));
  REQUIRE_THROWS_WITH(pipeline::ltx2_sigmas(1, 0), Contains("1 step"));
  p.stretch = false;
  const auto one = pipeline::ltx2_sigmas(1, 0, p);
  REQUIRE(one.size() == 2);
  REQUIRE(std::fabs(one[0] - 1.0f) < 1e-6f);
  REQUIRE(one[1] == 0.0f);
}

TEST_CASE("schedulers: the distilled stage-1 list is the 8-step linear-quadratic schedule") {
  const auto lq = pipeline::linear_quadratic_sigmas(8);
  const auto& d = pipeline::distilled_sigmas();
  REQUIRE(lq.size() == d.size());
  for (size_t i = 0; i < d.size(); ++i) REQUIRE(std::fabs(lq[i] - d[i]) < 1e-7f);
  const auto& s2 = pipeline::stage2_distilled_sigmas();
  REQUIRE(std::vector<float>(d.end() - 4, d.end()) == s2);
  const auto beta = pipeline::beta_sigmas(8);
  REQUIRE(beta.front() == 1.0f);
  REQUIRE(beta.back() == 0.0f);
  REQUIRE(beta.size() <= 9);
}

TEST_CASE("guiders: the factory picks the smallest bin >= sigma, skip steps") {
  std::map<double, pipeline::MultiModalGuiderParams> bins;
  bins[0.9].cfg_scale = 5;
  bins[0.5].cfg_scale = 3;
  const auto f = pipeline::MultiModalGuiderFactory::from_bins(bins);
  REQUIRE(f.params_for_sigma(2.0).cfg_scale == 5);
  REQUIRE(f.params_for_sigma(0.9).cfg_scale == 5);
  REQUIRE(f.params_for_sigma(0.6).cfg_scale == 5);
  REQUIRE(f.params_for_sigma(0.5).cfg_scale == 3);
  REQUIRE(f.params_for_sigma(0.0).cfg_scale == 3);
  pipeline::MultiModalGuiderParams c;
  c.cfg_scale = 4;
  REQUIRE(pipeline::MultiModalGuiderFactory::constant(c).params_for_sigma(1e9).cfg_scale == 4);
  pipeline::MultiModalGuiderParams skip;
  skip.skip_step = 2;
  const pipeline::MultiModalGuider g(skip);
  REQUIRE_FALSE(g.should_skip_step(0));
  REQUIRE(g.should_skip_step(1));
  REQUIRE(g.should_skip_step(2));
  REQUIRE_FALSE(g.should_skip_step(3));
}

TEST_CASE("guiders: the passes a step runs are the union over both modalities") {
  pipeline::MultiModalGuiderParams video, audio;
  REQUIRE(pipeline::guidance_passes(pipeline::MultiModalGuider(video), pipeline::MultiModalGuider(audio))
              .count() == 1);
  video.cfg_scale = 3;
  audio.stg_scale = 1;
  auto p = pipeline::guidance_passes(pipeline::MultiModalGuider(video), pipeline::MultiModalGuider(audio));
  REQUIRE(p.uncond);
  REQUIRE(p.perturbed);
  REQUIRE_FALSE(p.isolated_modality);
  audio.modality_scale = 3;
  p = pipeline::guidance_passes(pipeline::MultiModalGuider(video), pipeline::MultiModalGuider(audio));
  REQUIRE(p.isolated_modality);
  REQUIRE(p.count() == 4);
}

TEST_CASE("guiders: full rescale restores the conditional std, passes not run count as zero") {
  const Tensor cond = test::random_tensor({1, 8, 4}, 1), uncond = test::random_tensor({1, 8, 4}, 2);
  pipeline::MultiModalGuiderParams p;
  p.cfg_scale = 3;
  p.rescale_scale = 1;
  const Tensor pred = pipeline::MultiModalGuider(p).calculate(cond, uncond, {}, {});
  auto stdev = [](const Tensor& t) {
    auto v = t.to_vector();
    double m = 0, s = 0;
    for (float x : v) m += x;
    m /= v.size();
    for (float x : v) s += (x - m) * (x - m);
    return std::sqrt(s / (v.size() - 1));
  };
  REQUIRE(std::fabs(stdev(pred) - stdev(cond)) < 1e-5);
  pipeline::MultiModalGuiderParams stg_only;
  stg_only.stg_scale = 0.5f;
  // With no perturbed pass the STG term is 0.5 * (c - 0).
  REQUIRE(test::max_abs_diff(pipeline::MultiModalGuider(stg_only).calculate(cond, {}, {}, {}),
                             ops::mul(cond, 1.5f)) < 1e-6f);
  REQUIRE_THROWS_WITH(
      pipeline::MultiModalGuider(p).calculate(cond, test::random_tensor({1, 8, 3}, 3), {}, {}),
      Contains("shapes differ"));
}

TEST_CASE("diffusion steps: Euler reaches x0 at sigma 0, ancestral needs noise, loops keep clean tokens") {
  const Tensor x = test::random_tensor({1, 6, 2}, 1), x0 = test::random_tensor({1, 6, 2}, 2);
  const std::vector<float> sigmas = {1.0f, 0.5f, 0.0f};
  REQUIRE(test::max_abs_diff(pipeline::EulerStep{}.step(x, x0, sigmas, 1), x0) < 1e-6f);
  REQUIRE_THROWS_WITH(pipeline::EulerStep{}.step(x, x0, sigmas, 2), Contains("step 2"));
  REQUIRE_THROWS_WITH(pipeline::EulerAncestralStep{}.step(x, x0, sigmas, 0), Contains("needs noise"));
  REQUIRE(test::max_abs_diff(pipeline::EulerAncestralStep{}.step(x, x0, sigmas, 1), x0) == 0.0f);

  const Tensor clean = test::random_tensor({1, 6, 2}, 3);
  const Tensor mask = Tensor::from_vector({1, 1, 0, 1, 0, 1}, {1, 6, 1});
  const Tensor target = test::random_tensor({1, 6, 2}, 4);
  int calls = 0;
  auto denoiser = [&](const std::vector<Tensor>& latents, int) {
    ++calls;
    REQUIRE(latents.size() == 1);
    return std::vector<Tensor>{target};
  };
  std::vector<pipeline::DenoiseState> states = {{x, clean, mask}};
  pipeline::euler_denoising_loop(pipeline::distilled_sigmas(), states, denoiser);
  REQUIRE(calls == 8);
  const Tensor expected = pipeline::blend_with_clean(target, clean, mask);
  REQUIRE(test::max_abs_diff(states[0].latent, expected) < 1e-5f);

  std::vector<pipeline::DenoiseState> anc = {{x, clean, mask}};
  int draws = 0;
  pipeline::euler_ancestral_denoising_loop(pipeline::distilled_sigmas(), anc, denoiser,
                                           [&](const Shape& s, int, size_t) {
                                             ++draws;
                                             return test::random_tensor(s, 100 + draws);
                                           });
  REQUIRE(draws == 7);
  REQUIRE(test::max_abs_diff(anc[0].latent, expected) == 0.0f);
}

TEST_CASE("diffusion steps: the res_2s noise is standardised over the draw, then per batch item") {
  // Two batch items of different scale and offset: after the global pass each item is still off,
  // after the per-item pass each has mean 0 and unbiased std 1.
  std::vector<float> v;
  for (int i = 0; i < 12; ++i) v.push_back(static_cast<float>(i * i % 7));
  for (int i = 0; i < 12; ++i) v.push_back(100.0f + 3.0f * static_cast<float>(i % 5));
  const Tensor draw = Tensor::from_vector(v, {2, 3, 4});
  const std::vector<float> out = pipeline::res2s_sde_noise(draw).to_vector();
  REQUIRE(out.size() == 24);
  for (int item = 0; item < 2; ++item) {
    double sum = 0, squares = 0;
    for (int i = 0; i < 12; ++i) sum += out[item * 12 + i];
    const double mean = sum / 12;
    for (int i = 0; i < 12; ++i) squares += (out[item * 12 + i] - mean) * (out[item * 12 + i] - mean);
    CHECK(std::fabs(mean) < 1e-6);
    CHECK(std::fabs(std::sqrt(squares / 11) - 1.0) < 1e-5);
  }
  // Within an item the order of the values is kept (a positive affine map).
  CHECK(out[12 + 4] > out[12 + 3]);
  CHECK(out[0] < out[1]);
  REQUIRE_THROWS_WITH(pipeline::res2s_sde_noise(Tensor::from_vector({1.0f, 2.0f}, {2})),
                      Contains("has no last two axes"));
}
