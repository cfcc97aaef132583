#include "core/error.h"
#include "core/tensor.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;

TEST_CASE("tensor: empty, zeros, shape and strides") {
  Tensor t = Tensor::zeros({2, 3, 4});
  REQUIRE(t.numel() == 24);
  REQUIRE(t.strides() == Shape{12, 4, 1});
  REQUIRE(t.is_contiguous());
  REQUIRE(t.size(-1) == 4);
  REQUIRE(t.item({1, 2, 3}) == 0.f);
  REQUIRE_THROWS_AS(t.size(3), Error);
}

TEST_CASE("tensor: views share storage, slices and permutes address the right elements") {
  Tensor t = Tensor::arange(24).view({2, 3, 4});
  Tensor s = t.slice(2, 1, 3);
  REQUIRE(s.shape() == Shape{2, 3, 2});
  REQUIRE(s.item({1, 2, 0}) == 1 * 12 + 2 * 4 + 1);
  REQUIRE(s.shares_storage(t));
  REQUIRE_FALSE(s.is_contiguous());
  Tensor p = t.permute({2, 0, 1});
  REQUIRE(p.shape() == Shape{4, 2, 3});
  REQUIRE(p.item({3, 1, 2}) == 1 * 12 + 2 * 4 + 3);
  Tensor c = p.contiguous();
  REQUIRE(c.is_contiguous());
  REQUIRE(c.item({3, 1, 2}) == p.item({3, 1, 2}));
  REQUIRE_FALSE(c.shares_storage(t));
  Tensor stepped = t.slice(1, 0, 3, 2);
  REQUIRE(stepped.size(1) == 2);
  REQUIRE(stepped.item({0, 1, 0}) == 8);
  REQUIRE(t.select(0, 1).item({0, 0}) == 12);
}

TEST_CASE("tensor: view infers -1 and refuses mismatches") {
  Tensor t = Tensor::arange(12);
  REQUIRE(t.view({3, -1}).shape() == Shape{3, 4});
  REQUIRE_THROWS_AS(t.view({5, -1}), Error);
  REQUIRE_THROWS_AS(t.view({2, 2}), Error);
  REQUIRE_THROWS_AS(t.view({3, 4}).transpose(0, 1).view({12}), Error);
  REQUIRE(t.view({3, 4}).transpose(0, 1).reshape({12}).item({1}) == 4);
}

TEST_CASE("tensor: dtype conversion rounds bf16 to nearest even") {
  Tensor t = Tensor::from_vector({1.0f, 1.00390625f, 1.01171875f, -3.14159f}, {4});
  Tensor b = t.to(DType::BF16);
  REQUIRE(b.dtype() == DType::BF16);
  Tensor back = b.to(DType::F32);
  REQUIRE(back.item({0}) == 1.0f);
  REQUIRE(back.item({1}) == 1.0f);          // halfway, rounds to even
  REQUIRE(back.item({2}) == 1.015625f);     // halfway, rounds up to even
  REQUIRE(std::abs(back.item({3}) + 3.140625f) < 1e-6f);
  Tensor h = t.to(DType::F16).to(DType::F32);
  REQUIRE(std::abs(h.item({3}) + 3.140625f) < 1e-3f);
  Tensor i = Tensor::from_vector({2.7f, -1.2f}, {2}).to(DType::I64);
  REQUIRE(i.item_i64({0}) == 2);
  REQUIRE(i.item_i64({1}) == -1);
}

TEST_CASE("tensor: expand broadcasts with zero strides, unsqueeze and squeeze") {
  Tensor t = Tensor::from_vector({1, 2, 3}, {3});
  Tensor e = t.unsqueeze(0).expand({4, 3});
  REQUIRE(e.strides()[0] == 0);
  REQUIRE(e.item({3, 2}) == 3);
  REQUIRE(e.contiguous().to_vector().size() == 12);
  REQUIRE(t.unsqueeze(-1).shape() == Shape{3, 1});
  REQUIRE(t.unsqueeze(-1).squeeze(1).shape() == Shape{3});
  REQUIRE_THROWS_AS(t.squeeze(0), Error);
  REQUIRE_THROWS_AS(t.expand({4, 2}), Error);
}

TEST_CASE("tensor: copy_ across strides and dtypes") {
  Tensor src = Tensor::arange(6).view({2, 3});
  Tensor dst = Tensor::zeros({3, 2}, DType::BF16);
  dst.copy_(src.transpose(0, 1));
  REQUIRE(dst.to(DType::F32).item({2, 1}) == 5);
  REQUIRE_THROWS_AS(dst.copy_(src), Error);
}

TEST_CASE("tensor: wrapped memory stays alive through views") {
  auto owner = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4});
  Tensor view;
  {
    Tensor w = Tensor::wrap(owner->data(), {2, 2}, DType::F32, Device::cpu(), owner);
    view = w.select(0, 1);
  }
  owner.reset();
  REQUIRE(view.item({1}) == 4);
}

TEST_CASE("tensor: CUDA tensors need the CUDA backend") {
  if (cuda_built()) return;  // covered by the gpu tests
  REQUIRE_THROWS_WITH(Tensor::empty({2}, DType::F32, Device::cuda(0)),
                      "this ltx2 was built without the CUDA backend");
}

TEST_CASE("device: parse") {
  REQUIRE(Device::parse("cpu").is_cpu());
  REQUIRE(Device::parse("cuda:3").index == 3);
  REQUIRE_THROWS_AS(Device::parse("gpu"), Error);
  REQUIRE_THROWS_AS(Device::parse("cuda:x"), Error);
}

TEST_CASE("error: messages are one line and keep their location") {
  try {
    LTX2_CHECK(1 == 2, "bad {}\nthing", 42);
    FAIL("no throw");
  } catch (const Error& e) {
    REQUIRE(std::string(e.what()) == "bad 42 thing");
    REQUIRE(std::string(e.file()).find("test_tensor.cpp") != std::string::npos);
    REQUIRE(e.line() > 0);
  }
}
