// Check runner for `sp_padding` cases: for each combo (T tokens, world size, optional user mask)
// pads the video tokens, shards them per rank and compares counts, offsets, rank ranges and the
// padded tensors; case.json "compute_sequence_partition(a, b)" entries must be refused.
#include <regex>

#include "core/error.h"
#include "golden/kinds.h"
#include "golden/parallel_case_util.h"
#include "parallel/sequence_partition.h"

namespace ltx2::golden {

namespace {

parallel::TokenSequence read_tokens(const GoldenCase& c, const std::string& prefix, int64_t tokens) {
  parallel::TokenSequence seq;
  if (!c.has(prefix + "latent")) {  // sizes only: a placeholder sequence of the right length
    seq.latent = Tensor::zeros({1, tokens, 1});
    return seq;
  }
  return read_token_sequence(c, prefix);
}

void run_combo(const GoldenCase& c, Report& report, const nlohmann::json& combo) {
  const std::string tag = fmt::format("c{}", combo.at("index").get<int>());
  const int64_t tokens = combo.at("T").get<int64_t>();
  const int ws = combo.at("world_size").get<int>();
  parallel::TokenSequence seq = read_tokens(c, "in." + tag + ".", tokens);
  LTX2_CHECK(seq.num_tokens() == tokens, "{}: in.{}.latent has {} tokens, case.json says {}", c.name(), tag,
             seq.num_tokens(), tokens);

  parallel::PaddedSequence padded = parallel::pad_for_uniform_sharding(seq, ws);
  parallel::SequencePartition part = parallel::sequence_partition(padded.tokens.num_tokens(), ws);
  std::vector<int64_t> ranges;
  for (int r = 0; r < ws; ++r) {
    parallel::TokenSequence shard = parallel::shard_for_rank(padded.tokens, r, ws);
    const int64_t start = part.offsets[r];
    ranges.insert(ranges.end(), {start, start + shard.num_tokens(), shard.num_tokens()});
  }
  check_output(c, report, tag + ".t_orig_t_padded_pad",
               i64_tensor({padded.original_tokens, padded.tokens.num_tokens(), padded.pad}, {3}), {});
  check_output(c, report, tag + ".token_counts", i64_tensor(part.counts, {ws}), {});
  check_output(c, report, tag + ".offsets", i64_tensor(part.offsets, {ws}), {});
  check_output(c, report, tag + ".rank_ranges", i64_tensor(ranges, {ws, 3}), {});

  const std::string out = tag + ".padded_";
  const std::pair<const char*, const Tensor*> fields[] = {{"latent", &padded.tokens.latent},
                                                          {"timesteps", &padded.tokens.timesteps},
                                                          {"positions", &padded.tokens.positions},
                                                          {"keyframes_mask", &padded.tokens.keyframes_mask},
                                                          {"attention_mask", &padded.tokens.attention_mask}};
  for (const auto& [field, tensor] : fields) {
    const bool expected = c.has("out." + out + field);
    if (expected || (tensor->defined() && combo.value("tensors_saved", false)))
      check_output(c, report, out + field, *tensor, {});
  }
}

void run_sp_padding(const GoldenCase& c, Report& report) {
  for (const auto& combo : c.spec().at("combos")) run_combo(c, report, combo);
  // Entries like "compute_sequence_partition(10, 4)": "ValueError: ..." must be refused.
  static const std::regex call(R"(compute_sequence_partition\((\d+),\s*(\d+)\))");
  for (const auto& [key, value] : c.spec().items()) {
    std::smatch m;
    if (!std::regex_match(key, m, call)) continue;
    CompareRow row;
    row.name = "refuses " + key;
    try {
      parallel::sequence_partition(std::stoll(m[1]), std::stoi(m[2]));
      row.note = "accepted; reference: " + value.get<std::string>();
    } catch (const Error&) {
      row.pass = true;
    }
    report.add(row);
  }
}

}  // namespace

static const bool registered = register_kind_runner("sp_padding", &run_sp_padding);

}  // namespace ltx2::golden
