// The Ulysses head all-to-alls on forked ranks: scatter_heads gives each rank all tokens of its
// heads, and gather_heads after scatter_heads is a bit-exact identity.
#include <cstring>

#include "forked_ranks.h"
#include "ops/shape.h"
#include "parallel/sequence_parallel.h"
#include "support/catch.h"
#include "support/test_util.h"

using namespace ltx2;

namespace {

const Shape kLocalShape{2, 5, 12, 3};  // [B, n, H, d]: 12 heads split over 1, 2, 3 and 4 ranks

bool bit_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.contiguous().data_ptr(), b.contiguous().data_ptr(), a.nbytes()) == 0;
}

}  // namespace

TEST_CASE("sp: scatter_heads then gather_heads is a bit-exact round trip on 1 to 4 ranks") {
  for (int world = 1; world <= 4; ++world) {
    INFO("world " << world);
    const auto ranks = test::run_forked_ranks(world, [](comm::Communicator& c) {
      const Tensor x = test::random_tensor(kLocalShape, 100 + c.rank());
      const Tensor scattered = parallel::scatter_heads(c, x);
      return test::RankTensors{{"scattered", scattered},
                               {"round_trip", parallel::gather_heads(c, scattered)}};
    });
    std::vector<Tensor> all_tokens;
    for (int r = 0; r < world; ++r) all_tokens.push_back(test::random_tensor(kLocalShape, 100 + r));
    const Tensor global = ops::cat(all_tokens, 1);  // [B, W*n, H, d] in rank-major token order
    const int64_t heads_per_rank = kLocalShape[2] / world;
    for (int r = 0; r < world; ++r) {
      INFO("rank " << r << ": " << ranks[r].error);
      REQUIRE(ranks[r].error.empty());
      REQUIRE(bit_equal(ranks[r].tensors.at("round_trip"), test::random_tensor(kLocalShape, 100 + r)));
      REQUIRE(bit_equal(ranks[r].tensors.at("scattered"),
                        global.narrow(2, r * heads_per_rank, heads_per_rank).contiguous()));
    }
  }
}
