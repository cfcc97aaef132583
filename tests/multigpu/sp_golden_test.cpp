// Sequence parallelism across GPUs through NCCL equals one GPU: the golden transformer cases run in
// bf16 on a fleet of one GPU and on a fleet of every visible GPU (SP), through the runner below.
// Judged like the single-GPU golden test: the SP result's error against the fixture's float32
// out.* may be at most twice the one-GPU result's error plus 1e-3 (both are bf16 computations of
// the same thing; SP changes the GEMMs' row counts and so their rounding, not the math).
#include <cmath>
#include <map>

#include "fleet/fleet_support.h"
#include "io/safetensors.h"
#include "io/weights.h"
#include "models/transformer/transformer.h"
#include "multigpu_support.h"
#include "parallel/sequence_parallel.h"
#include "runtime/runner.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using namespace std::chrono_literals;
namespace tr = models::transformer;

namespace {

// job {"case": name}: every rank loads the case's transformer (bf16, its GPU) and inputs, runs
// one forward (SP when the world has several ranks); rank 0 outputs "out" {video, audio} (f32).
class SpGoldenRunner : public runtime::Runner {
 public:
  void setup(const nlohmann::json&, const runtime::RunnerContext& ctx) override { ctx_ = ctx; }

  nlohmann::json run(const runtime::Job& job, runtime::ResultSink& out) override {
    const std::string dir = test::golden_dir(job.params.at("case"));
    auto io = SafetensorsFile::open(dir + "/io.safetensors");
    const tr::Transformer model =
        tr::Transformer::load(WeightSet::open({dir + "/weights.safetensors"}),
                              std::make_shared<tr::LocalAttention>(), DType::BF16, ctx_.device);
    auto modality = [&](const std::string& s) {
      return tr::modality_from_fields([&](const std::string& n) -> Tensor {
        const std::string key = "in." + s + "_" + n;
        if (!io->contains(key)) return Tensor();
        const Tensor t = io->tensor(key).clone().to(ctx_.device);
        return n == "latent" || n == "context" ? t.to(DType::BF16) : t;
      });
    };
    const tr::Modality video = modality("video"), audio = modality("audio");
    tr::TransformerOutput result;
    if (ctx_.world_size == 1) {
      result = model.forward(&video, &audio);
    } else {
      parallel::SequenceParallelTransformer sp(model.config(), model.weights(), *ctx_.comm);
      result = sp.forward(&video, &audio);
    }
    if (ctx_.rank == 0)
      out.output("out", {},
                 {{"video", result.video.to(Device::cpu()).to(DType::F32)},
                  {"audio", result.audio.to(Device::cpu()).to(DType::F32)}});
    return nlohmann::json::object();
  }

 private:
  runtime::RunnerContext ctx_;
};

const bool registered =
    runtime::register_runner("test.sp_golden", [] { return std::make_unique<SpGoldenRunner>(); });

const std::vector<std::string> kCases = {"transformer_19b", "transformer_22b", "transformer_25",
                                         "transformer_19b_legacy", "transformer_22b_kv"};

// Case -> {"video", "audio"} from a fleet of `gpus` GPUs.
std::map<std::string, std::map<std::string, Tensor>> run_cases(int gpus) {
  std::map<std::string, std::map<std::string, Tensor>> results;
  {
    runtime::Controller c(test::gpu_fleet_options(gpus, "test.sp_golden"));
    c.start();
    for (const std::string& name : kCases) {
      c.submit({{"case", name}});
      auto out = test::finish_job(c, 120s);
      INFO(name << " on " << gpus << " GPU(s): " << out.error);
      REQUIRE(out.done);
      for (const auto& ev : out.events)
        if (ev.kind == runtime::JobEvent::Kind::Output && ev.name == "out")
          for (const auto& t : ev.tensors) results[name][t.name] = t.tensor;
      REQUIRE(results[name].size() == 2);
    }
  }
  test::require_clean();
  return results;
}

double max_error(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  double m = 0;
  const float *pa = a.data<float>(), *pb = b.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = std::fabs(double(pa[i]) - double(pb[i]));
    if (std::isnan(d)) return INFINITY;
    m = std::max(m, d);
  }
  return m;
}

}  // namespace

TEST_CASE("nccl fleet: sequence parallel on every GPU equals one GPU on the golden transformer cases") {
  const int gpus = test::require_gpus(2);
  const auto one = run_cases(1);
  const auto all = run_cases(gpus);
  for (const std::string& name : kCases) {
    auto io = SafetensorsFile::open(test::golden_dir(name) + "/io.safetensors");
    for (const std::string stream : {"video", "audio"}) {
      const Tensor ref = io->tensor("out." + stream);
      const Tensor &single = one.at(name).at(stream), &sp = all.at(name).at(stream);
      const double single_err = max_error(single, ref), sp_err = max_error(sp, ref);
      INFO(name << " out." << stream << " on " << gpus << " GPUs: SP error " << sp_err << ", one-GPU error "
                << single_err << ", |SP - one GPU| " << max_error(sp, single));
      REQUIRE(std::isfinite(single_err));
      CHECK(sp_err <= 2 * single_err + 1e-3);
    }
  }
}
