#include "common/engine_factory.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "ops/attention.h"
#include "pipeline/pipeline_models.h"
#include "runtime/fleet_engine.h"
#include "runtime/launcher.h"
#include "runtime/nodes.h"

namespace ltx2::cli {

namespace {

runtime::FleetEngineOptions fleet_options(const GenerationFlags& flags, const EnginePlacement& placement) {
  runtime::FleetEngineOptions o;
  if (placement.on_gpu()) {
    for (const Device& d : placement.devices) o.gpus.push_back(d.index);
  } else {
    o.ranks = static_cast<int>(placement.devices.size());
  }
  static_cast<runtime::RankSettings&>(o) = flags.settings;
  o.retries = flags.retries;
  if (flags.job_time_limit) o.job_timeout = *flags.job_time_limit;
  return o;
}
}  // namespace

std::string EnginePlacement::describe() const {
  if (nodes > 1) {
    EnginePlacement one = *this;
    one.nodes = 1;
    return fmt::format("{} nodes (MPI), each: {}", nodes, one.describe());
  }
  const std::string why = reason.empty() ? "" : " (" + reason + ")";
  if (!on_gpu()) {
    if (!fleet) return "the CPU in this process, float32" + why;
    return fmt::format("{} CPU worker process{}, float32{}", devices.size(), devices.size() == 1 ? "" : "es",
                       why);
  }
  if (!fleet) return devices[0].str() + " in this process, bf16" + why;
  std::string list;
  for (const Device& d : devices) list += (list.empty() ? "" : ",") + std::to_string(d.index);
  return fmt::format("{} GPU{} (cuda:{}), one worker process each, bf16{}", devices.size(),
                     devices.size() == 1 ? "" : "s", list, why);
}

EnginePlacement plan_placement(const GenerationFlags& flags, bool cuda_built, int visible_gpus) {
  EnginePlacement p;
  const std::string& device = flags.device;
  LTX2_CHECK(device == "auto" || device == "cpu" || device == "cuda" || device.rfind("cuda:", 0) == 0,
             "--device must be auto, cpu, cuda or cuda:N, got '{}'", device);
  if (flags.ranks > 0) {
    LTX2_CHECK(flags.gpus.empty(), "--ranks (CPU workers) and --gpus cannot be combined");
    LTX2_CHECK(device == "auto" || device == "cpu",
               "--ranks runs CPU workers; it cannot be combined with --device {}", device);
    p.devices.assign(static_cast<size_t>(flags.ranks), Device::cpu());
    p.fleet = true;
    p.reason = "--ranks";
    return p;
  }
  // Worker processes for several GPUs, and for --retries and --job-timeout (a crashed or stuck
  // worker can be killed and restarted; this process cannot).
  p.fleet = flags.retries > 0 || flags.job_time_limit.has_value();
  if (device == "cpu") {
    LTX2_CHECK(flags.gpus.empty(), "--device cpu and --gpus cannot be combined");
    p.devices = {Device::cpu()};
    p.reason = "--device cpu";
    return p;
  }
  std::vector<int> gpus;
  if (!flags.gpus.empty()) {
    LTX2_CHECK(device == "auto" || device == "cuda", "--gpus and --device {} cannot be combined", device);
    gpus = runtime::parse_gpu_list(flags.gpus);
    p.reason = "--gpus";
  } else if (device.rfind("cuda:", 0) == 0) {
    gpus = {Device::parse(device).index};
    p.reason = "--device " + device;
  } else if (cuda_built && visible_gpus > 0) {
    for (int g = 0; g < visible_gpus; ++g) gpus.push_back(g);
    p.reason = device == "cuda" ? "--device cuda" : "every visible GPU";
  } else {
    LTX2_CHECK(device == "auto", "--device {}: {}", device,
               cuda_built ? "no GPU is visible (CUDA_VISIBLE_DEVICES or driver)"
                          : "this ltx2 was built without the CUDA backend");
    p.devices = {Device::cpu()};
    p.reason = cuda_built ? "no GPU visible" : "built without CUDA";
    return p;
  }
  const char* flag = flags.gpus.empty() ? "--device" : "--gpus";
  LTX2_CHECK(cuda_built, "{}: this ltx2 was built without the CUDA backend", flag);
  for (int g : gpus)
    LTX2_CHECK(g >= 0 && g < visible_gpus, "{}: GPU {} is not visible ({} visible)", flag, g, visible_gpus);
  for (int g : gpus) p.devices.push_back(Device::cuda(g));
  p.fleet = p.fleet || gpus.size() > 1;
  return p;
}

EnginePlacement plan_placement(const GenerationFlags& flags) {
  EnginePlacement p = plan_placement(flags, cuda_built(), runtime::visible_gpu_count());
  // Across nodes every node runs worker processes of one fleet, even one device each.
  p.nodes = runtime::node_count();
  if (p.nodes > 1) p.fleet = true;
  return p;
}

void check_engine_available(const GenerationFlags& flags, const EnginePlacement& placement) {
  if (placement.fleet) runtime::fleet_devices(fleet_options(flags, placement));  // names the flag at fault
}

pipeline::PipelineOptions local_engine_options(const EnginePlacement& placement, const ModelPaths& paths,
                                               const std::vector<pipeline::RequestShape>& shapes,
                                               double gpu_memory_gib) {
  pipeline::PipelineOptions o = pipeline::PipelineOptions::on_device(placement.devices[0]);
  if (o.device.is_cuda() && !shapes.empty())
    o.residency =
        pipeline::plan_residency(paths, o, shapes, pipeline::device_memory_budget(o.device, gpu_memory_gib));
  return o;
}

std::unique_ptr<pipeline::GenerationEngine> make_engine(PipelineKind kind, const ModelPaths& paths,
                                                        const GenerationFlags& flags,
                                                        const EnginePlacement& placement,
                                                        pipeline::PipelineOptions local_options,
                                                        const std::vector<pipeline::RequestShape>& shapes) {
  if (placement.fleet) {
    runtime::FleetEngineOptions o = fleet_options(flags, placement);
    o.plan_shapes = shapes;
    return runtime::make_fleet_engine(kind, paths, o);
  }
  ops::set_attention_precision(flags.settings.attention_precision);  // the workers set theirs at setup
  return pipeline::make_local_engine(kind, paths, std::move(local_options));
}

}  // namespace ltx2::cli
