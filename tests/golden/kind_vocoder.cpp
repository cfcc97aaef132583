// Check runner for `vocoder` cases (LTX-2.0 generator and LTX-2.3 generator + bandwidth
// extension alike): builds the vocoder from the case's weights and metadata config["vocoder"],
// runs it on in.mel, and compares out.waveform and every mid.* tensor the vocoder reports under
// the same name.
#include <map>

#include "core/error.h"
#include "golden/kinds.h"
#include "io/configs/vocoder_config.h"
#include "models/vocoder/vocoder.h"

namespace ltx2::golden {

namespace {

void run_vocoder(const GoldenCase& c, Report& report) {
  const Tolerance tol = parse_tolerance(c.spec().at("tolerance").at("fp32_reference_vs_fp32_impl"));
  auto weights = c.weights();
  const nlohmann::json& config = weights->config();
  LTX2_CHECK(config.contains("vocoder"), "{}: weights metadata config has no 'vocoder'", c.dir());
  auto model = vocoder::Vocoder::load(parse_vocoder_config(config.at("vocoder")), weights);

  std::map<std::string, Tensor> mids;
  Tensor wave = model.forward(c.tensor("in.mel"), [&](const std::string& name, const Tensor& value) {
    if (c.has("mid." + name)) mids[name] = value.clone();
  });
  report.check("out.waveform", wave, c.tensor("out.waveform"), tol);
  for (const std::string& name : c.names("mid.")) {
    auto it = mids.find(name.substr(4));
    if (it == mids.end()) {
      report.fail(name, "the vocoder reported no such intermediate");
    } else {
      report.check(name, it->second, c.tensor(name), tol);
    }
  }
}

const bool registered = register_kind_runner("vocoder", &run_vocoder);

}  // namespace

}  // namespace ltx2::golden
