// Job/result records: round trips, and rejection (never a crash) of corrupt bytes.
#include "runtime/record.h"

#include <cstring>
#include <random>

#include "core/error.h"
#include "support/catch.h"
#include "support/test_util.h"

namespace {

using namespace ltx2;
using ltx2::runtime::decode_record;
using ltx2::runtime::EncodedRecord;

std::vector<uint8_t> sample() {
  return EncodedRecord({{"prompt", "a calm forest"}, {"seed", 10}},
                       {{"image", test::random_tensor({3, 5, 7}, 1)},
                        {"ids", Tensor::from_vector_i64({1, 2, 3}, {3})},
                        {"empty", Tensor::zeros({0, 4})},
                        {"scalar", Tensor::scalar(2.5f)}})
      .bytes();
}

TEST_CASE("record: tensors and fields survive a round trip") {
  const auto bytes = sample();
  REQUIRE(bytes.size() % 64 == 0);
  auto rec = decode_record(bytes.data(), bytes.size(), "job record");
  REQUIRE(rec.meta["prompt"] == "a calm forest");
  REQUIRE(rec.meta["seed"] == 10);
  REQUIRE_FALSE(rec.meta.contains("tensors"));
  REQUIRE(rec.tensors.size() == 4);
  REQUIRE(test::max_abs_diff(rec.tensor("image"), test::random_tensor({3, 5, 7}, 1)) == 0.0f);
  REQUIRE(rec.tensor("ids").to_vector_i64() == std::vector<int64_t>{1, 2, 3});
  REQUIRE(rec.tensor("empty").shape() == Shape{0, 4});
  REQUIRE(rec.tensor("scalar").item() == 2.5f);
  REQUIRE_THROWS_WITH(rec.tensor("nope"), Catch::Matchers::Contains("no tensor 'nope'"));
}

TEST_CASE("record: the 'tensors' key is reserved and headers must be objects") {
  REQUIRE_THROWS_WITH(EncodedRecord({{"tensors", 1}}, {}), Catch::Matchers::Contains("reserved"));
  REQUIRE_THROWS_WITH(EncodedRecord(nlohmann::json::array(), {}), Catch::Matchers::Contains("JSON object"));
}

TEST_CASE("record: every truncation is rejected with a message") {
  const auto bytes = sample();
  for (size_t n = 0; n < bytes.size(); ++n) {
    INFO("length " << n);
    REQUIRE_THROWS_WITH(decode_record(bytes.data(), n, "job record"), Catch::Matchers::Contains("corrupt job record"));
  }
}

TEST_CASE("record: specific corruptions name the fault") {
  auto with_header = [](const std::string& header, size_t payload) {
    std::vector<uint8_t> b(16 + header.size() + 64 + payload, 0);
    const uint32_t magic = 0x4352584cu, hl = static_cast<uint32_t>(header.size());
    const uint64_t pl = payload;
    std::memcpy(b.data(), &magic, 4);
    std::memcpy(b.data() + 4, &hl, 4);
    std::memcpy(b.data() + 8, &pl, 8);
    std::memcpy(b.data() + 16, header.data(), header.size());
    b.resize((16 + header.size() + 63) / 64 * 64 + payload);
    return b;
  };
  auto decode = [](const std::vector<uint8_t>& b) { decode_record(b.data(), b.size(), "job record"); };
  REQUIRE_NOTHROW(decode(with_header(R"({"tensors":[]})", 0)));
  REQUIRE_THROWS_WITH(decode(with_header(R"([1,2])", 0)), Catch::Matchers::Contains("not a JSON object"));
  REQUIRE_THROWS_WITH(decode(with_header(R"({"a":1})", 0)), Catch::Matchers::Contains("no 'tensors' list"));
  REQUIRE_THROWS_WITH(
      decode(
          with_header(R"({"tensors":[{"name":"x","dtype":"f64","shape":[2],"offset":0,"bytes":16}]})", 64)),
      Catch::Matchers::Contains("unknown dtype"));
  REQUIRE_THROWS_WITH(
      decode(
          with_header(R"({"tensors":[{"name":"x","dtype":"f32","shape":[-2],"offset":0,"bytes":8}]})", 64)),
      Catch::Matchers::Contains("bad shape"));
  REQUIRE_THROWS_WITH(
      decode(with_header(R"({"tensors":[{"name":"x","dtype":"f32","shape":[3],"offset":0,"bytes":8}]})", 64)),
      Catch::Matchers::Contains("has 8 bytes for shape"));
  REQUIRE_THROWS_WITH(
      decode(
          with_header(R"({"tensors":[{"name":"x","dtype":"f32","shape":[32],"offset":0,"bytes":128}]})", 64)),
      Catch::Matchers::Contains("outside the 64-byte payload"));
  REQUIRE_THROWS_WITH(
      decode(with_header(R"({"tensors":[{"name":"x","dtype":"f32","shape":[1],"offset":4,"bytes":4}]})", 64)),
      Catch::Matchers::Contains("outside"));
  REQUIRE_THROWS_WITH(decode(with_header(R"({"tensors":[{"name":"x"}]})", 0)),
                      Catch::Matchers::Contains("malformed tensor"));
  auto bad_magic = with_header(R"({"tensors":[]})", 0);
  bad_magic[0] ^= 1;
  REQUIRE_THROWS_WITH(decode(bad_magic), Catch::Matchers::Contains("bad magic"));
}

TEST_CASE("record: random byte corruption is decoded or rejected, never crashes") {
  const auto good = sample();
  std::mt19937 rng(7);
  int rejected = 0;
  for (int i = 0; i < 2000; ++i) {
    auto b = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) b[rng() % 512] = static_cast<uint8_t>(rng());  // header and first tensor
    try {
      decode_record(b.data(), b.size(), "job record");
    } catch (const Error&) {
      ++rejected;
    }
  }
  REQUIRE(rejected > 100);
}

}  // namespace
