// --jobs FILE.jsonl: one generation per line, each a JSON object whose fields override the command
// line's request. The fields are the request's, read by their own readers (pipeline/request_fields.h):
// prompt, negative_prompt, output_path, no_audio (true or false), seed, height, width, num_frames,
// frame_rate, num_inference_steps, images ([[PATH, FRAME, STRENGTH(, CRF)], ...] or objects with
// path/frame/strength/crf), video_guidance / audio_guidance (objects with any of cfg_scale,
// stg_scale, rescale_scale, modality_scale, skip_step, stg_blocks). Blank lines are skipped.
#pragma once

#include <string>
#include <vector>

#include "pipeline/request.h"

namespace ltx2::cli {

struct JobLine {
  int line = 0;               // 1-based line number in the file
  GenerationRequest request;  // valid when error is empty
  std::string error;          // why the line cannot run (malformed JSON, unknown field, bad value)
  std::string skipped;        // why a line that could run does not (batch.h: its output exists)
};

// Reads the file (throws ltx2::Error naming --jobs when it cannot) and parses and validates every
// line against `kind` and the model (validate_request); a bad line gets its error and does not
// stop the others.
std::vector<JobLine> read_jobs_file(const std::string& path, const GenerationRequest& defaults,
                                    PipelineKind kind, const ModelFacts& model = {});

// Marks each line still without an error that puts in place a file or folder (media::clip_outputs:
// a .y4m's .wav, a sequence's folder too; compared as absolute paths, symlinks resolved) that an
// earlier such line writes: the later output would silently replace the earlier one.
void refuse_shared_outputs(std::vector<JobLine>& jobs);

}  // namespace ltx2::cli
