// `ltx2 bench pipeline` (see bench_pipeline_command.h). The models load once (and once more first
// from a cold page cache with --cold); then `repeat` jobs run back to back, as a --jobs file would.
// Output files go to a scratch folder that is removed afterwards.
#include "bench_pipeline_command.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "common/engine_factory.h"
#include "common/generation_cli.h"
#include "common/phase_clock.h"
#include "common/run_request.h"
#include "core/cuda/events.h"
#include "core/cuda/memory.h"
#include "core/error.h"
#include "model_sets/tiny_model.h"
#include "pipeline/request_fields.h"

namespace ltx2 {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr double kGB = 1e9, kGiB = 1073741824.0;

// Every file the paths name (a Gemma folder's safetensors shards included).
std::vector<std::string> model_files(const ModelPaths& p) {
  std::vector<std::string> out;
  for (const std::string* f :
       {&p.checkpoint, &p.transformer, &p.text_encoder, &p.video_vae, &p.audio_vae, &p.spatial_upsampler})
    if (!f->empty()) out.push_back(*f);
  for (const LoraFile& l : p.distilled_loras) out.push_back(l.path);
  if (fs::is_regular_file(p.gemma_root)) out.push_back(p.gemma_root);
  if (fs::is_directory(p.gemma_root))
    for (const auto& e : fs::directory_iterator(p.gemma_root))
      if (e.is_regular_file() && e.path().extension() == ".safetensors") out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

uint64_t total_bytes(const std::vector<std::string>& files) {
  uint64_t n = 0;
  for (const auto& f : files) n += fs::file_size(f);
  return n;
}

int open_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  LTX2_CHECK(fd >= 0, "{}: cannot open: {}", path, std::strerror(errno));
  return fd;
}

// A plain sequential read of every file (one thread, read() into one 64 MiB buffer): what the
// storage and the page cache give a simple reader, the yardstick for the loader.
double sequential_read_seconds(const std::vector<std::string>& files) {
  std::vector<char> buffer(64u << 20);
  const auto start = cli::PhaseClock::Clock::now();
  for (const auto& f : files) {
    const int fd = open_file(f);
    ssize_t n = 0;
    while ((n = ::read(fd, buffer.data(), buffer.size())) > 0) {
    }
    ::close(fd);
    LTX2_CHECK(n == 0, "{}: read failed: {}", f, std::strerror(errno));
  }
  return cli::seconds_since(start);
}

// Drops the files' pages from the page cache (a no-op for RAM-backed files such as tmpfs).
void evict_from_page_cache(const std::vector<std::string>& files) {
  for (const auto& f : files) {
    const int fd = open_file(f);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

// The fraction of the files' pages in the page cache now (mincore over a mapping of each file).
double cached_fraction(const std::vector<std::string>& files) {
  const auto page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t cached = 0, pages = 0;
  for (const auto& f : files) {
    const uint64_t size = fs::file_size(f);
    if (size == 0) continue;
    const int fd = open_file(f);
    void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (map == MAP_FAILED) continue;
    std::vector<unsigned char> resident((size + page - 1) / page);
    if (mincore(map, size, resident.data()) == 0) {
      for (unsigned char r : resident) cached += r & 1;
      pages += resident.size();
    }
    munmap(map, size);
  }
  return pages ? static_cast<double>(cached) / static_cast<double>(pages) : 0.0;
}

struct Loaded {
  std::unique_ptr<pipeline::GenerationEngine> engine;
  double seconds = 0;
};

Loaded load_models(PipelineKind kind, const ModelPaths& paths, const pipeline::PipelineOptions& options) {
  Loaded out;
  const auto start = cli::PhaseClock::Clock::now();
  out.engine = pipeline::make_local_engine(kind, paths, options);
  if (options.device.is_cuda()) cuda_synchronize(options.device.index);  // every upload has landed
  out.seconds = cli::seconds_since(start);
  return out;
}

// --pipeline's values: the generation programs' names without "ltx2-".
const std::map<std::string, PipelineKind>& bench_pipelines() {
  static const std::map<std::string, PipelineKind> names = {{"distilled", PipelineKind::Distilled},
                                                            {"ti2vid", PipelineKind::TwoStage},
                                                            {"ti2vid-hq", PipelineKind::Hq},
                                                            {"one-stage", PipelineKind::OneStage},
                                                            {"keyframes", PipelineKind::Keyframes}};
  return names;
}

GenerationRequest bench_request(const BenchPipelineOptions& opt, PipelineKind kind, bool tiny,
                                const fs::path& dir) {
  GenerationRequest r = default_request(kind);  // the guided pipelines' negative prompt and guidance
  r.prompt = "A calm forest with mist, birds calling in the distance";
  r.height = opt.height;
  r.width = opt.width;
  r.num_frames = opt.num_frames;
  r.num_inference_steps = opt.steps;
  for (GuidanceParams* g : {&r.video_guidance, &r.audio_guidance})
    if (tiny && !g->stg_blocks.empty()) g->stg_blocks = {g == &r.video_guidance ? 1 : 0};  // 2 blocks
  r.output_path = (dir / ("out." + opt.output)).string();
  return r;
}

// The generation programs' model-path fields, every pipeline's flags at once (--pipeline picks one
// after parsing): the two-stage pipeline's and the distilled one's checkpoint alias.
fields::FieldList bench_model_path_fields(ModelPaths& paths) {
  fields::FieldList list = model_path_fields(paths, PipelineKind::TwoStage);
  for (fields::Field& f : list)
    if (f.key == "checkpoint") f.flags.push_back("--distilled-checkpoint-path");
  return list;
}

}  // namespace

CLI::App* add_bench_pipeline_command(CLI::App* bench, BenchPipelineOptions* opt) {
  auto* cmd = bench->add_subcommand(
      "pipeline",
      "A whole job per phase (load, text encode, stage 1, upsample, stage 2, decode, audio, file), with the "
      "GPU memory peak of each, on the model files given or the embedded tiny model");
  std::vector<std::string> names;
  for (const auto& [name, kind] : bench_pipelines()) names.push_back(name);
  cmd->add_option("--pipeline", opt->pipeline, "distilled, ti2vid, ti2vid-hq, one-stage or keyframes")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  ModelPaths help_only;
  cli::add_field_flags(*cmd, bench_model_path_fields(help_only), *opt->model_flags);
  cmd->add_option("--height", opt->height, "Height (multiple of 64; of 32 for one-stage)")
      ->capture_default_str();
  cmd->add_option("--width", opt->width, "Width (multiple of 64; of 32 for one-stage)")
      ->capture_default_str();
  cmd->add_option("--num-frames", opt->num_frames, "Frames (8k+1)")->capture_default_str();
  cmd->add_option("--num-inference-steps", opt->steps, "Stage-1 steps (the guided pipelines)")
      ->capture_default_str();
  cmd->add_option("--repeat", opt->repeat, "Jobs after the load (the first pays nothing extra either)")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmd->add_option("--device", opt->device,
                  "auto, cpu, cuda or cuda:N (auto: the first GPU when one is visible)")
      ->capture_default_str();
  cmd->add_option("--gpu-memory", opt->gpu_memory, "GiB of the GPU to use (as the generation programs' flag)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag(
      "--cold", opt->cold,
      "Also time a load after evicting the model files from the page cache (no effect on RAM-backed "
      "files; the cached fraction is printed)");
  cmd->add_option("--output", opt->output, "File format written: mp4 or y4m")
      ->check(CLI::IsMember({"mp4", "y4m"}))
      ->capture_default_str();
  cmd->add_option("--json", opt->json_path, "Also write the results as JSON to this file");
  return cmd;
}

int run_bench_pipeline(const BenchPipelineOptions& opt) {
  const PipelineKind kind = bench_pipelines().at(opt.pipeline);
  ModelPaths paths;
  cli::set_fields_from_flags(bench_model_path_fields(paths), *opt.model_flags);
  const bool tiny = model_sets::use_tiny_model_when_unset(paths, kind);
  validate_model_paths(paths, kind);

  // The generation programs' device rule, run in this process on the first device it gives.
  cli::GenerationFlags flags;
  flags.device = opt.device;
  cli::EnginePlacement placement = cli::plan_placement(flags);
  placement.devices.resize(1);
  placement.fleet = false;
  const Device device = placement.devices[0];

  const fs::path dir = fs::temp_directory_path() / ("ltx2-bench-pipeline." + std::to_string(getpid()));
  fs::create_directories(dir);
  const GenerationRequest r = bench_request(opt, kind, tiny, dir);
  validate_request(r, kind, pipeline::read_model_facts(paths));
  const pipeline::PipelineOptions options =
      cli::local_engine_options(placement, paths, {pipeline::request_shape(r, kind)}, opt.gpu_memory);

  const std::vector<std::string> files = model_files(paths);
  const uint64_t bytes = total_bytes(files);
  json doc = {{"bench", "pipeline"},       {"pipeline", opt.pipeline}, {"device", device.str()},
              {"tiny_model", tiny},        {"height", r.height},       {"width", r.width},
              {"num_frames", r.num_frames}};
  if (pipeline_traits(kind).guided) doc["num_inference_steps"] = r.num_inference_steps;
  std::printf("ltx2 bench pipeline: %s, %s, %dx%d, %d frames, on %s\n", opt.pipeline.c_str(),
              tiny            ? "tiny model"
              : paths.split() ? paths.transformer.c_str()
                              : paths.checkpoint.c_str(),
              r.width, r.height, r.num_frames, placement.describe().c_str());
  if (options.residency) std::printf("  memory: %s\n", options.residency->describe().c_str());

  std::vector<cli::RunResult> jobs;
  Loaded engine;
  try {
    json load_doc = {{"files", files.size()}, {"bytes", bytes}};
    if (opt.cold) {
      evict_from_page_cache(files);
      const double cached = cached_fraction(files);
      const double cold = load_models(kind, paths, options).seconds;
      std::printf("  load, cold page cache (%.0f%% of the files still cached): %.2f s, %.2f GB/s\n",
                  100 * cached, cold, bytes / kGB / cold);
      load_doc["cold_s"] = cold;
      load_doc["cold_cached_fraction"] = cached;
    }
    const double read = sequential_read_seconds(files);
    engine = load_models(kind, paths, options);
    std::printf(
        "  load, warm page cache: %.2f s, %.2f GB/s (%.1f GB in %zu files; a plain sequential read of "
        "them: %.2f s, %.2f GB/s; the load at %.0f%% of it)\n",
        engine.seconds, bytes / kGB / engine.seconds, bytes / kGB, files.size(), read, bytes / kGB / read,
        100 * read / engine.seconds);
    load_doc["warm_s"] = engine.seconds;
    load_doc["sequential_read_s"] = read;
    if (device.is_cuda()) {
      const CudaMemoryStats m = cuda_memory_stats(device.index);
      load_doc["resident_gib"] = m.allocated / kGiB;
      std::printf("  resident on %s after the load: %.1f GiB\n", device.str().c_str(), m.allocated / kGiB);
    }
    doc["load"] = load_doc;
    for (int i = 0; i < opt.repeat; ++i) jobs.push_back(cli::run_request(*engine.engine, r, nullptr, device));
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  fs::remove_all(dir);
  if (device.is_cuda()) {  // the driver's view: the context and every library's memory included
    const CudaDeviceMemory m = cuda_device_memory(device.index);
    const double used = static_cast<double>(m.total - m.free) / kGiB;
    std::printf("  %s in use after the jobs (driver's view, cached blocks included): %.1f of %.1f GiB\n",
                device.str().c_str(), used, m.total / kGiB);
    doc["device_used_gib"] = used;
  }

  const auto phase = [](const cli::RunResult& j, const std::string& name) {
    for (const cli::PhaseTime& p : j.phases)
      if (p.name == name) return p;
    return cli::PhaseTime{name, 0, -1};
  };
  const double first_step = engine.seconds + phase(jobs[0], "text encode").seconds;
  std::printf(
      "  the first denoising step starts %.2f s after the load began (load %.2f + text encode %.2f)\n",
      first_step, engine.seconds, phase(jobs[0], "text encode").seconds);
  doc["first_step_s"] = first_step;
  json per_job = json::array();
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::string line;
    json p = json::object();
    for (const cli::PhaseTime& t : jobs[i].phases) {
      line += fmt::format(" {} {:.2f}", t.name, t.seconds);
      p[t.name] = {{"s", t.seconds}};
      if (t.peak_gib >= 0) p[t.name]["peak_gib"] = t.peak_gib;
    }
    std::printf("  job %zu: %.2f s:%s\n", i + 1, jobs[i].total_seconds, line.c_str());
    per_job.push_back({{"total_s", jobs[i].total_seconds}, {"phases", p}});
  }
  doc["jobs"] = per_job;

  // The median over the jobs after the first (a --jobs file's steady state), or the one job.
  const size_t first = jobs.size() > 1 ? 1 : 0;
  std::printf("  median of job%s %zu-%zu:\n", jobs.size() > 1 ? "s" : "", first + 1, jobs.size());
  json phases = json::object();
  std::vector<std::string> names;
  for (const cli::PhaseTime& p : jobs[first].phases) names.push_back(p.name);
  names.push_back("total");
  for (const std::string& name : names) {
    std::vector<double> v;
    double peak = -1;
    for (size_t i = first; i < jobs.size(); ++i) {
      const cli::PhaseTime p =
          name == "total" ? cli::PhaseTime{name, jobs[i].total_seconds, -1} : phase(jobs[i], name);
      v.push_back(p.seconds);
      peak = std::max(peak, p.peak_gib);
    }
    std::sort(v.begin(), v.end());
    const double median = v[v.size() / 2];
    std::printf("  %-12s %8.3f s  (min %.3f, max %.3f)%s\n", name.c_str(), median, v.front(), v.back(),
                peak >= 0 ? fmt::format("  peak {:.1f} GiB", peak).c_str() : "");
    phases[name] = {{"median_s", median}, {"min_s", v.front()}, {"max_s", v.back()}};
    if (peak >= 0) phases[name]["peak_gib"] = peak;
  }
  doc["phases"] = phases;
  if (!opt.json_path.empty()) {
    std::ofstream out(opt.json_path);
    LTX2_CHECK(out, "--json {}: cannot write", opt.json_path);
    out << doc.dump(2) << "\n";
  }
  return 0;
}

}  // namespace ltx2
