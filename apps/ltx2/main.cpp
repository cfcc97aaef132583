// `ltx2`: the engine's tool: inspect checkpoints, make tiny and full-size random model sets,
// benchmarks (CUDA kernels, the fleet). Parity against the reference's fixtures is a test program
// (tests/golden), not part of the product.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "bench_command.h"
#include "bench_encode_command.h"
#include "bench_fleet.h"
#include "bench_pipeline_command.h"
#include "bench_scaling_command.h"
#include "bench_sp_command.h"
#include "bench_transformer_command.h"
#include "bench_vae_command.h"
#include "core/error.h"
#include "core/log.h"
#include "inspect_command.h"
#include "make_random_command.h"
#include "make_tiny_command.h"
#include "runtime/worker.h"

int main(int argc, char** argv) {
  if (auto rc = ltx2::runtime::run_worker_if_requested(argc, argv)) return *rc;  // a fleet worker
  ltx2::init_logging();
  CLI::App app{"ltx2: native engine for the LTX-2 audio+video diffusion models"};
  app.require_subcommand(1);

  std::vector<std::string> inspect_paths;
  bool inspect_json = false;
  auto* inspect = app.add_subcommand("inspect",
                                     "Show the components, configs, tensor counts, bytes "
                                     "and dtypes of checkpoint files or model folders");
  inspect->add_option("paths", inspect_paths, "safetensors files or Hugging Face model folders")->required();
  inspect->add_flag("--json", inspect_json, "Print JSON");

  ltx2::BenchOptions bench_opt;
  auto* bench = ltx2::add_bench_command(app, bench_opt);
  ltx2::BenchFleetOptions bench_fleet_opt;
  auto* bench_fleet = ltx2::add_bench_fleet_command(bench, &bench_fleet_opt);
  ltx2::BenchSpOptions bench_sp_opt;
  auto* bench_sp = ltx2::add_bench_sp_command(bench, &bench_sp_opt);
  ltx2::BenchTransformerOptions bench_transformer_opt;
  auto* bench_transformer = ltx2::add_bench_transformer_command(bench, &bench_transformer_opt);
  ltx2::BenchScalingOptions bench_scaling_opt;
  auto* bench_scaling = ltx2::add_bench_scaling_command(bench, &bench_scaling_opt);
  ltx2::BenchPipelineOptions bench_pipeline_opt;
  auto* bench_pipeline = ltx2::add_bench_pipeline_command(bench, &bench_pipeline_opt);
  ltx2::BenchVaeOptions bench_vae_opt;
  auto* bench_vae = ltx2::add_bench_vae_command(bench, &bench_vae_opt);
  ltx2::BenchEncodeOptions bench_encode_opt;
  auto* bench_encode = ltx2::add_bench_encode_command(bench, &bench_encode_opt);
  ltx2::MakeTinyOptions make_tiny_opt;
  auto* make_tiny = ltx2::add_make_tiny_command(app, make_tiny_opt);
  ltx2::MakeRandomOptions make_random_opt;
  auto* make_random = ltx2::add_make_random_command(app, make_random_opt);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage mistake is one line naming the flag and exits 2.
    if (e.get_exit_code() == 0) return app.exit(e);
    std::fprintf(stderr, "ltx2: error: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    if (*inspect) return ltx2::run_inspect(inspect_paths, inspect_json);
    if (*bench_fleet) return ltx2::run_bench_fleet(bench_fleet_opt);
    if (*bench_sp) return ltx2::run_bench_sp(bench_sp_opt);
    if (*bench_transformer) return ltx2::run_bench_transformer(bench_transformer_opt);
    if (*bench_scaling) return ltx2::run_bench_scaling(bench_scaling_opt);
    if (*bench_pipeline) return ltx2::run_bench_pipeline(bench_pipeline_opt);
    if (*bench_vae) return ltx2::run_bench_vae(bench_vae_opt);
    if (*bench_encode) return ltx2::run_bench_encode(bench_encode_opt);
    if (*bench) return ltx2::run_bench(*bench, bench_opt);
    if (*make_tiny) return ltx2::run_make_tiny(make_tiny_opt);
    if (*make_random) return ltx2::run_make_random(make_random_opt);
  } catch (const ltx2::Error& e) {
    ltx2::log_debug("{}", e.located());
    std::fprintf(stderr, "ltx2: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ltx2: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
