// The safetensors reader's validation: every malformed header gives a one-line error naming the
// file (and the tensor where there is one), never a crash; the writer, streamed or from tensors.
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "io/safetensors.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;
using Catch::Matchers::Contains;

namespace {

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>(n >> (8 * i));
  return s;
}

std::string file_with(const std::string& header, size_t data_bytes) {
  return le64(header.size()) + header + std::string(data_bytes, '\x01');
}

std::string error_of(const std::string& path) {
  try {
    SafetensorsFile::open(path);
  } catch (const Error& e) {
    std::string msg = e.what();
    REQUIRE(msg.find('\n') == std::string::npos);
    return msg;
  }
  return "";
}

}  // namespace

TEST_CASE("safetensors: write then read round-trips tensors, dtypes and metadata") {
  test::ScratchDir dir("st_roundtrip");
  Tensor a = test::random_tensor({3, 5}, 1);
  Tensor b = Tensor::from_vector_i64({1, -2, 3}, {3});
  Tensor c = a.to(DType::BF16);
  Tensor empty = Tensor::empty({0, 4});
  write_safetensors(dir.file("x.safetensors"), {{"a", a.transpose(0, 1)}, {"b", b}, {"c", c}, {"e", empty}},
                    {{"k", "v"}});
  auto f = SafetensorsFile::open(dir.file("x.safetensors"));
  REQUIRE(f->tensors().size() == 4);
  REQUIRE(f->metadata_value("k") == "v");
  REQUIRE(f->metadata_value("absent").empty());
  REQUIRE(test::max_abs_diff(f->tensor("a"), a.transpose(0, 1)) == 0.f);
  REQUIRE(f->tensor("b").to_vector_i64() == std::vector<int64_t>{1, -2, 3});
  REQUIRE(f->tensor("c").dtype() == DType::BF16);
  REQUIRE(f->tensor("e").shape() == Shape{0, 4});
  REQUIRE_THROWS_WITH(f->info("nope"), Contains("no tensor named 'nope'"));
}

TEST_CASE("safetensors: malformed files give clear one-line errors") {
  test::ScratchDir dir("st_bad");
  auto write = [&](const std::string& name, const std::string& bytes) {
    test::write_bytes(dir.file(name), bytes);
    return dir.file(name);
  };
  std::string good = R"({"t":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";

  SECTION("missing file") {
    REQUIRE_THAT(error_of(dir.file("absent.safetensors")), Contains("cannot open"));
  }
  SECTION("shorter than the length field") {
    REQUIRE_THAT(error_of(write("short", "abc")), Contains("shorter than the 8-byte header length"));
  }
  SECTION("absurd header size") {
    REQUIRE_THAT(error_of(write("huge", le64(1ull << 60) + "{}")), Contains("exceeds"));
  }
  SECTION("header longer than the file") {
    REQUIRE_THAT(error_of(write("long", le64(1000) + "{}")), Contains("runs past the end"));
  }
  SECTION("truncated data") {
    std::string path = write("trunc", file_with(good, 8));
    REQUIRE_THAT(error_of(path), Contains("tensor 't'") && Contains("truncated"));
  }
  SECTION("bad JSON") {
    REQUIRE_THAT(error_of(write("json", file_with("{\"t\": [1,", 0))), Contains("not valid JSON"));
  }
  SECTION("not an object") {
    REQUIRE_THAT(error_of(write("arr", file_with("[1, 2]", 0))), Contains("not a JSON object"));
  }
  SECTION("wrong byte count") {
    std::string h = R"({"t":{"dtype":"F32","shape":[2,3],"data_offsets":[0,16]}})";
    REQUIRE_THAT(error_of(write("count", file_with(h, 16))), Contains("needs 24 bytes") && Contains("'t'"));
  }
  SECTION("overlapping tensors") {
    std::string h = R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},)"
                    R"("b":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})";
    REQUIRE_THAT(error_of(write("overlap", file_with(h, 16))), Contains("overlap"));
  }
  SECTION("reversed offsets") {
    std::string h = R"({"a":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})";
    REQUIRE_THAT(error_of(write("rev", file_with(h, 16))), Contains("reversed"));
  }
  SECTION("unsupported dtype") {
    std::string h = R"({"a":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}})";
    REQUIRE_THAT(error_of(write("f64", file_with(h, 8))), Contains("unsupported dtype 'F64'"));
  }
  SECTION("negative or fractional shape entries") {
    std::string h = R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})";
    REQUIRE_THAT(error_of(write("neg", file_with(h, 4))), Contains("not a non-negative integer"));
    std::string h2 = R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})";
    REQUIRE_THAT(error_of(write("frac", file_with(h2, 4))), Contains("not a non-negative integer"));
  }
  SECTION("shape whose element count overflows") {
    std::string h = R"({"a":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,4]}})";
    REQUIRE_THAT(error_of(write("ovf", file_with(h, 4))), Contains("needs too many bytes"));
  }
  SECTION("non-string metadata") {
    std::string h = R"({"__metadata__":{"k":1}})";
    REQUIRE_THAT(error_of(write("meta", file_with(h, 0))), Contains("metadata value of 'k'"));
  }
  SECTION("missing fields") {
    std::string h = R"({"a":{"shape":[1],"data_offsets":[0,4]}})";
    REQUIRE_THAT(error_of(write("nodtype", file_with(h, 4))), Contains("\"dtype\""));
  }
  SECTION("a key given twice") {
    // (nlohmann's parser would keep the second one without a word)
    std::string h = R"({"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                    R"("t":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})";
    REQUIRE_THAT(error_of(write("dup", file_with(h, 8))),
                 Contains(dir.file("dup")) && Contains("tensor 't' appears twice"));
    std::string h2 = R"({"t":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    REQUIRE_THAT(error_of(write("dup2", file_with(h2, 4))), Contains("key 'dtype' appears twice"));
    std::string h3 = R"({"__metadata__":{"k":"a","k":"b"}})";
    REQUIRE_THAT(error_of(write("dup3", file_with(h3, 0))), Contains("key 'k' appears twice"));
    // The same key in two different objects is fine.
    std::string h4 = R"({"__metadata__":{"t":"x"},"t":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    REQUIRE(error_of(write("dup4", file_with(h4, 4))).empty());
  }
  SECTION("a folder is not a file") {
    REQUIRE_THAT(error_of(dir.path()), Contains("not a regular file"));
  }
}

TEST_CASE("safetensors: every golden weights file opens") {
  for (const char* c : {"transformer_19b", "video_vae_decoder", "vocoder_bwe", "gemma3_tiny"}) {
    auto f = SafetensorsFile::open(test::golden_dir(c) + "/weights.safetensors");
    REQUIRE(f->tensors().size() > 0);
    REQUIRE_FALSE(f->metadata_value("config").empty());
  }
}

namespace {

std::string read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  REQUIRE(f != nullptr);
  std::string bytes;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) bytes.append(buf, n);
  std::fclose(f);
  return bytes;
}

}  // namespace

TEST_CASE("safetensors: the streamed writer writes the in-memory writer's bytes, whatever the chunk size") {
  test::ScratchDir dir("st_streamed");
  // Mixed dtypes and sizes, an empty tensor in the middle: pieces of one chunk span tensors, and
  // one tensor spans chunks.
  const std::vector<std::pair<std::string, Tensor>> tensors = {
      {"z.first", test::random_tensor({7, 3}, 1)},
      {"a.bf16", test::random_tensor({5, 11}, 2).to(DType::BF16)},
      {"m.empty", Tensor::empty({0, 4})},
      {"b.i64", Tensor::from_vector_i64({1, -2, 3}, {3})},
      {"c.big", test::random_tensor({1000}, 3)}};
  const std::map<std::string, std::string> metadata = {{"config", "{\"x\": 1}"}};
  write_safetensors(dir.file("memory.safetensors"), tensors, metadata);
  const std::string expected = read_file(dir.file("memory.safetensors"));

  std::vector<TensorSpec> specs;
  for (const auto& [name, t] : tensors) specs.push_back({name, t.dtype(), t.shape()});
  uint64_t total = 0;
  for (const TensorSpec& s : specs) total += s.nbytes();
  REQUIRE(safetensors_file_size(specs, metadata) == expected.size());
  for (size_t chunk : {size_t{8}, size_t{24}, size_t{4000}, size_t{64} << 20}) {
    uint64_t produced = 0;
    write_safetensors_streamed(
        dir.file("streamed.safetensors"), specs, metadata,
        [&](size_t i, uint64_t offset, uint8_t* out, size_t bytes) {
          REQUIRE(bytes <= chunk);
          REQUIRE(offset + bytes <= specs[i].nbytes());
          std::memcpy(out, static_cast<const uint8_t*>(tensors[i].second.data_ptr()) + offset, bytes);
          produced += bytes;
        },
        chunk);
    CHECK(produced == total);
    CHECK(read_file(dir.file("streamed.safetensors")) == expected);
  }
}

TEST_CASE("safetensors: a failing producer leaves no file and keeps the one it would replace") {
  test::ScratchDir dir("st_streamed_fail");
  const std::string path = dir.file("x.safetensors");
  write_safetensors(path, {{"old", test::random_tensor({2}, 1)}});
  const std::string before = read_file(path);
  const std::vector<TensorSpec> specs = {{"a", DType::BF16, {4096}}, {"b", DType::BF16, {4096}}};
  int calls = 0;
  auto fill = [&](size_t, uint64_t, uint8_t* out, size_t bytes) {
    if (++calls == 3) LTX2_FAIL("producer failed");
    std::memset(out, 0, bytes);
  };
  REQUIRE_THROWS_WITH(write_safetensors_streamed(path, specs, {}, fill, 1024), "producer failed");
  CHECK(read_file(path) == before);
  for (const auto& entry : std::filesystem::directory_iterator(dir.path()))
    CHECK(entry.path().filename() == "x.safetensors");
  REQUIRE_THROWS_WITH(write_safetensors_streamed(path, specs, {}, fill, 12), Contains("multiple of 8"));
}
