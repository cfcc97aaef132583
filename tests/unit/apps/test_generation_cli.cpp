// apps/common: the --jobs file reader, the tiny model's flag defaults and the per-phase clock.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/generation_cli.h"
#include "common/jobs_file.h"
#include "common/phase_clock.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using namespace ltx2::cli;

namespace {

GenerationRequest defaults(const test::ScratchDir& dir) {
  GenerationRequest r;
  r.prompt = "from the command line";
  r.height = 64;
  r.width = 128;
  r.num_frames = 9;
  r.seed = 7;
  r.output_path = dir.file("default.mp4");
  return r;
}

std::string write_jobs(const test::ScratchDir& dir, const std::string& text) {
  const std::string path = dir.file("jobs.jsonl");
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("jobs file: fields override the command line's request, line by line") {
  test::ScratchDir dir("jobs_file");
  const std::string out = dir.file("a.mp4");
  const std::string path =
      write_jobs(dir, "{\"prompt\": \"a cat\", \"seed\": 3, \"output_path\": \"" + out +
                          "\"}\n\n{\"width\": 192, \"images\": [[\"x.png\", 0, 0.5, 0]]}\n");
  const auto jobs = read_jobs_file(path, defaults(dir), PipelineKind::Distilled);
  REQUIRE(jobs.size() == 2);
  REQUIRE(jobs[0].line == 1);
  REQUIRE(jobs[0].error.empty());
  REQUIRE(jobs[0].request.prompt == "a cat");
  REQUIRE(jobs[0].request.seed == 3);
  REQUIRE(jobs[0].request.output_path == out);
  REQUIRE(jobs[0].request.width == 128);
  REQUIRE(jobs[1].line == 3);  // the blank line is skipped but counted
  REQUIRE(jobs[1].request.prompt == "from the command line");
  REQUIRE(jobs[1].request.width == 192);
  // The image does not exist: validation reports it on that line only.
  REQUIRE_THAT(jobs[1].error, Catch::Matchers::Contains("--image x.png"));
}

TEST_CASE("jobs file: a bad line gets its own error and the others are kept") {
  test::ScratchDir dir("jobs_file_bad");
  const std::string path = write_jobs(dir,
                                      "not json\n"
                                      "{\"colour\": 1}\n"
                                      "{\"seed\": \"x\"}\n"
                                      "{\"num_frames\": 10}\n"
                                      "{\"video_guidance\": {\"cfg_scale\": 2, \"stg_blocks\": [1]}}\n"
                                      "{\"frame_rate\": 1e309}\n"
                                      "{\"prompt\": \"fine\"}\n");
  const auto jobs = read_jobs_file(path, defaults(dir), PipelineKind::TwoStage);
  REQUIRE(jobs.size() == 7);
  // The parser's own message, without nlohmann's exception id.
  REQUIRE_THAT(jobs[0].error, Catch::Matchers::StartsWith("not a JSON object: parse error") &&
                                  Catch::Matchers::Contains("syntax error while parsing value"));
  REQUIRE(jobs[1].error == "unknown field 'colour'");
  REQUIRE_THAT(jobs[2].error, Catch::Matchers::Contains("field 'seed'"));
  REQUIRE_THAT(jobs[3].error, Catch::Matchers::Contains("--num-frames"));
  REQUIRE(jobs[4].error.empty());
  REQUIRE(jobs[4].request.video_guidance.cfg_scale == 2.0);
  REQUIRE(jobs[4].request.video_guidance.stg_blocks == std::vector<int>{1});
  // A number beyond double's range is that line's error (it used to end the whole batch).
  REQUIRE_THAT(jobs[5].error, Catch::Matchers::Contains("number overflow"));
  REQUIRE(jobs[6].error.empty());
  REQUIRE(jobs[6].request.prompt == "fine");
}

TEST_CASE("jobs file: numbers are never narrowed: non-integers and out-of-range values name the field") {
  test::ScratchDir dir("jobs_file_numbers");
  const std::string path = write_jobs(dir,
                                      "{\"height\": 4294967360}\n"          // 2^32 + 64: used to become 64
                                      "{\"seed\": 1.5}\n"                   // used to become 1
                                      "{\"seed\": 1e30}\n"                  // undefined behaviour
                                      "{\"seed\": 18446744073709551615}\n"  // 2^64 - 1
                                      "{\"num_frames\": -9}\n"
                                      "{\"images\": [[\"x.png\", 0.5, 1]]}\n"
                                      "{\"video_guidance\": {\"stg_blocks\": [28, 2.5]}}\n"
                                      "{\"width\": true}\n"
                                      "{\"height\": 128.0, \"seed\": -3}\n"  // whole numbers are fine
                                      "{\"height\": 16384}\n"
                                      "{\"num_frames\": 4097}\n"
                                      "{\"height\": 8192, \"width\": 8192, \"num_frames\": 129}\n");
  const auto jobs = read_jobs_file(path, defaults(dir), PipelineKind::TwoStage);
  REQUIRE(jobs.size() == 12);
  using Catch::Matchers::Contains;
  CHECK_THAT(jobs[0].error, Contains("field 'height': 4294967360 is out of range [-2147483648, 2147483647]"));
  CHECK_THAT(jobs[1].error, Contains("field 'seed': must be an integer, got 1.5"));
  CHECK_THAT(jobs[2].error, Contains("field 'seed'") && Contains("out of range"));
  CHECK_THAT(jobs[3].error, Contains("field 'seed': 18446744073709551615 is out of range"));
  CHECK_THAT(jobs[4].error, Contains("--num-frames must be 8k+1"));
  CHECK_THAT(jobs[5].error, Contains("field 'images FRAME': must be an integer, got 0.5"));
  CHECK_THAT(jobs[6].error, Contains("field 'video_guidance.stg_blocks': must be an integer, got 2.5"));
  CHECK_THAT(jobs[7].error, Contains("field 'width': must be an integer, got boolean"));
  CHECK(jobs[8].error.empty());
  CHECK(jobs[8].request.height == 128);
  CHECK(jobs[8].request.seed == -3);
  CHECK_THAT(jobs[9].error, Contains("--height must be at most 8192, got 16384"));
  CHECK_THAT(jobs[10].error, Contains("--num-frames must be at most 2049, got 4097"));
  CHECK_THAT(jobs[11].error, Contains("8192x8192x129 is 1114112 video tokens at full size; at most 1048576"));
}

TEST_CASE("jobs file: a line writing an earlier line's output is refused, naming that line") {
  test::ScratchDir dir("jobs_file_shared");
  std::filesystem::create_directory_symlink(dir.path(), dir.file("link"));
  const std::string b = dir.file("b.mp4");
  const auto line = [](const std::string& out, const std::string& more = "") {
    return "{\"output_path\": \"" + out + "\"" + more + "}\n";
  };
  const std::string path =
      write_jobs(dir, line(dir.file("a.mp4")) + line(dir.path() + "/./a.mp4") + line(dir.file("link/a.mp4")) +
                          line(b, ", \"num_frames\": 10") + line(b) + line(dir.file("a.y4m")));
  auto jobs = read_jobs_file(path, defaults(dir), PipelineKind::Distilled);
  refuse_shared_outputs(jobs);
  REQUIRE(jobs.size() == 6);
  REQUIRE(jobs[0].error.empty());
  REQUIRE(jobs[1].error == "output_path " + dir.path() + "/./a.mp4: line 1 writes it already");
  REQUIRE(jobs[2].error == "output_path " + dir.file("link/a.mp4") + ": line 1 writes it already");
  // A line that cannot run claims no file.
  REQUIRE_THAT(jobs[3].error, Catch::Matchers::Contains("--num-frames"));
  REQUIRE(jobs[4].error.empty());
  REQUIRE(jobs[5].error.empty());
}

TEST_CASE("jobs file: no_audio per line, and outputs that share a file or folder are refused") {
  test::ScratchDir dir("jobs_file_outputs");
  const auto line = [](const std::string& out, const std::string& more = "") {
    return "{\"output_path\": \"" + out + "\"" + more + "}\n";
  };
  const std::string path = write_jobs(
      dir,
      line(dir.file("a.y4m")) + line(dir.file("a.wav")) + line(dir.file("b.y4m"), ", \"no_audio\": true") +
          line(dir.file("b.wav")) + line(dir.file("f/%05d.png")) + line(dir.file("f/x%d.png")) +
          line(dir.file("c.wav"), ", \"no_audio\": true") + line(dir.file("d.mp4"), ", \"no_audio\": 1"));
  auto jobs = read_jobs_file(path, defaults(dir), PipelineKind::Distilled);
  refuse_shared_outputs(jobs);
  REQUIRE(jobs.size() == 8);
  REQUIRE(jobs[0].error.empty());
  REQUIRE_FALSE(jobs[0].request.no_audio);
  // a.y4m's audio is a.wav: line 2 would replace it.
  REQUIRE(jobs[1].error == "output_path " + dir.file("a.wav") + ": line 1 writes it already");
  // b.y4m without audio writes no b.wav.
  REQUIRE(jobs[2].error.empty());
  REQUIRE(jobs[2].request.no_audio);
  REQUIRE(jobs[3].error.empty());
  REQUIRE(jobs[4].error.empty());
  REQUIRE(jobs[5].error ==
          "output_path " + dir.file("f/x%d.png") + ": line 5 writes " + dir.file("f") + " already");
  REQUIRE_THAT(jobs[6].error, Catch::Matchers::Contains("--no-audio: --output-path"));
  REQUIRE(jobs[7].error == "field 'no_audio': must be true or false, got number");
}

TEST_CASE("jobs file: a missing or empty file is an error naming --jobs") {
  test::ScratchDir dir("jobs_file_missing");
  REQUIRE_THROWS_WITH(read_jobs_file(dir.file("none.jsonl"), defaults(dir), PipelineKind::Distilled),
                      Catch::Matchers::Contains("--jobs"));
  REQUIRE_THROWS_WITH(read_jobs_file(write_jobs(dir, "\n"), defaults(dir), PipelineKind::Distilled),
                      Catch::Matchers::Contains("no jobs"));
}

TEST_CASE("tiny model defaults: only the size flags the user left unset change") {
  CLI::App app;
  GenerationFlags flags;
  add_generation_flags(app, flags, PipelineKind::TwoStage);
  const char* argv[] = {"prog", "--prompt", "x", "--height", "256", "--video-stg-blocks", "0"};
  app.parse(7, const_cast<char**>(argv));
  finish_generation_flags(flags, PipelineKind::TwoStage);
  REQUIRE(wants_tiny_model(flags.paths));
  apply_tiny_model_defaults(app, flags.request, PipelineKind::TwoStage);
  REQUIRE(flags.request.height == 256);
  REQUIRE(flags.request.width == kTinyWidth);
  REQUIRE(flags.request.num_frames == kTinyNumFrames);
  REQUIRE(flags.request.num_inference_steps == kTinyInferenceSteps);
  REQUIRE(flags.request.video_guidance.stg_blocks == std::vector<int>{0});
  REQUIRE(flags.request.audio_guidance.stg_blocks == std::vector<int>{0});
  flags.paths.checkpoint = "model.safetensors";
  REQUIRE_FALSE(wants_tiny_model(flags.paths));
}

TEST_CASE("phase clock: the phases in order, encoding counted apart, adding up to the total") {
  PhaseClock clock;
  clock.on_progress("text_encode", 0, 1);
  clock.on_progress("stage1", 0, 2);  // not the last step: the stage goes on
  clock.on_progress("stage1", 1, 2);
  clock.on_progress("upsample", 0, 1);
  clock.on_progress("stage2", 0, 1);
  clock.add_encode_seconds(0.0);
  clock.on_progress("video_decode", 0, 1);
  clock.end_run();
  clock.add_encode_seconds(0.25);  // finishing the file after the run
  const auto phases = clock.phases();
  std::vector<std::string> names;
  double sum = 0;
  for (const auto& p : phases) {
    names.push_back(p.name);
    REQUIRE(p.seconds >= 0);
    sum += p.seconds;
  }
  REQUIRE(names == std::vector<std::string>{"text encode", "stage 1", "upsample", "stage 2", "decode",
                                            "audio", "write output"});
  REQUIRE(phases.back().seconds == 0.25);
  for (const auto& p : phases) REQUIRE(p.peak_gib < 0);  // no memory probe
  REQUIRE(clock.total_seconds() == Approx(sum).margin(1e-9));
}

TEST_CASE("phase clock: with a memory probe every phase records its high-water mark") {
  double next = 1.0;
  int calls = 0;
  PhaseClock clock([&] {
    ++calls;
    // A probe takes time (a device query): it belongs to a phase, never to none.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return next++;
  });
  REQUIRE(calls == 1);  // the first phase's mark
  clock.on_progress("text_encode", 0, 1);
  clock.on_progress("stage1", 0, 1);
  clock.end_run();
  const auto phases = clock.phases();
  REQUIRE(phases.size() == 4);
  REQUIRE(phases[0].peak_gib == 2.0);
  REQUIRE(phases[1].peak_gib == 3.0);
  REQUIRE(phases[2].name == "audio");
  REQUIRE(phases[2].peak_gib == 4.0);
  REQUIRE(phases[3].peak_gib < 0);  // encoding runs on the host
  double sum = 0;
  for (const auto& p : phases) sum += p.seconds;
  REQUIRE(clock.total_seconds() == Approx(sum).margin(1e-9));
}

TEST_CASE("job timeout flag: positive seconds, the fleet's default when not given, a bad value named") {
  const auto parse = [](std::vector<std::string> args) {
    CLI::App app;
    GenerationFlags flags;
    add_generation_flags(app, flags, PipelineKind::Distilled);
    args.insert(args.begin(), "prog");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    app.parse(static_cast<int>(argv.size()), argv.data());
    finish_generation_flags(flags, PipelineKind::Distilled);
    return flags;
  };
  REQUIRE_FALSE(parse({}).job_time_limit);
  REQUIRE(parse({"--job-timeout", "90"}).job_time_limit == std::chrono::seconds(90));
  REQUIRE(parse({"--job-timeout", "0.25"}).job_time_limit == std::chrono::milliseconds(250));
  using Catch::Matchers::Contains;
  for (const char* bad : {"0", "-1", "0.0001", "1e10"})
    REQUIRE_THROWS_WITH(
        parse({"--job-timeout", bad}),
        Contains("--job-timeout must be a positive number of seconds up to 1e9, got " + std::string(bad)));
  for (const char* bad : {"abc", "inf", "nan", "60s"})
    REQUIRE_THROWS_WITH(parse({"--job-timeout", bad}),
                        Contains("--job-timeout: '" + std::string(bad) + "' is not a number"));
}
