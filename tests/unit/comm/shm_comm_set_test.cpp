// The fleet's communicator block (ShmCommSet): which cuts a world and its nodes get, where their
// regions lie, group communicators that reach their own group only, and an abort that releases
// the collectives of every group as well as the world's. Ranks are threads over one buffer.
#include "comm/shm_comm_set.h"

#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "support/catch.h"

using namespace ltx2;
using Catch::Matchers::Contains;
using comm::ShmCommSet;

namespace {

constexpr size_t kSlot = 4096;

struct Block {
  explicit Block(const ShmCommSet& set)
      : data(std::aligned_alloc(64, (set.bytes() + 63) / 64 * 64), &std::free) {
    set.format(data.get());
  }
  std::unique_ptr<void, decltype(&std::free)> data;
};

// Runs body(rank) on `world` threads and joins them.
template <class Body>
void on_ranks(int world, Body body) {
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) threads.emplace_back(body, r);
  for (auto& t : threads) t.join();
}

}  // namespace

TEST_CASE("comm set: the cuts are 2, 3 or 4 groups that divide the world and fit in a node") {
  struct Case {
    int world, node_ranks;
    std::vector<int> cuts;
  };
  for (const Case& c :
       {Case{1, 1, {}}, Case{2, 2, {}}, Case{4, 4, {2}}, Case{4, 2, {2}}, Case{4, 1, {}}, Case{6, 6, {2, 3}},
        Case{8, 8, {2, 4}}, Case{8, 4, {2, 4}}, Case{8, 2, {4}}, Case{12, 3, {4}}, Case{12, 12, {2, 3, 4}}}) {
    INFO(c.world << " ranks, " << c.node_ranks << " a node");
    const ShmCommSet set(c.world, kSlot, c.node_ranks);
    CHECK(set.cuts() == c.cuts);
    // The regions follow one another without overlap and fill the block.
    size_t end = set.world_region().bytes;
    CHECK(set.world_region().offset == 0);
    CHECK(set.world_region().world == c.world);
    for (int groups : set.cuts())
      for (int g = 0; g < groups; ++g) {
        const auto r = set.group_region(groups, g);
        REQUIRE(r.has_value());
        CHECK(r->offset == end);
        CHECK(r->offset % 64 == 0);
        CHECK(r->world == c.world / groups);
        end = r->offset + r->bytes;
      }
    CHECK(end == set.bytes());
    CHECK_FALSE(set.group_region(5, 0).has_value());
  }
}

TEST_CASE("comm set: ranks a node that do not divide the world are refused") {
  REQUIRE_THROWS_WITH(ShmCommSet(6, kSlot, 4), Contains("4 ranks a node do not divide a world of 6"));
  REQUIRE_THROWS_WITH(ShmCommSet(4, kSlot, 0), Contains("0 ranks a node"));
  REQUIRE_THROWS_WITH(ShmCommSet(4, kSlot, 8), Contains("8 ranks a node"));
  REQUIRE_THROWS_WITH(ShmCommSet(8, kSlot, 4).group_region(2, 2), Contains("group 2 outside a cut into 2"));
}

TEST_CASE("comm set: a group's communicator reaches its own consecutive ranks only") {
  const int world = 6;
  const ShmCommSet set(world, kSlot, world);
  Block block(set);
  std::vector<std::vector<float>> by_two(world), by_three(world);
  std::vector<int> group_rank(world, -1), group_size(world, -1);
  // char, not bool: the ranks write their own elements at once, and vector<bool> packs its
  // elements into shared words.
  std::vector<char> has_four(world, true), split_four(world, true), same(world, false);
  std::vector<std::string> errors(world);
  on_ranks(world, [&](int r) {
    try {
      comm::ShmCommGroups groups(block.data.get(), set, r, std::chrono::seconds(20));
      comm::Communicator* two = groups.split(2);    // 2 groups of 3
      comm::Communicator* three = groups.split(3);  // 3 groups of 2
      group_rank[r] = two->rank();
      group_size[r] = two->world_size();
      same[r] = groups.split(2) == two;  // kept, not made again
      has_four[r] = groups.has_cut(4);
      split_four[r] = groups.split(4) != nullptr;
      by_two[r] = two->all_gather(Tensor::full({1}, float(r))).to_vector();
      by_three[r] = three->all_gather(Tensor::full({1}, float(10 * r))).to_vector();
    } catch (const std::exception& e) {
      errors[r] = e.what();
    }
  });
  for (int r = 0; r < world; ++r) {
    INFO("rank " << r << ": " << errors[r]);
    REQUIRE(errors[r].empty());
    CHECK(group_rank[r] == r % 3);
    CHECK(group_size[r] == 3);
    CHECK(same[r]);
    CHECK_FALSE(has_four[r]);  // 4 does not divide 6
    CHECK_FALSE(split_four[r]);
    const float g2 = float(r / 3 * 3), g3 = float(r / 2 * 2);
    CHECK(by_two[r] == std::vector<float>{g2, g2 + 1, g2 + 2});
    CHECK(by_three[r] == std::vector<float>{10 * g3, 10 * (g3 + 1)});
  }
}

TEST_CASE("comm set: an abort releases the collectives of every group and of the world") {
  const int world = 4;
  const ShmCommSet set(world, kSlot, world);
  Block block(set);
  std::vector<std::string> errors(world);
  on_ranks(world, [&](int r) {
    try {
      comm::ShmCommGroups groups(block.data.get(), set, r, std::chrono::seconds(60));
      comm::ShmCommunicator world_comm(block.data.get(), set.world_region().bytes, r,
                                       std::chrono::seconds(60));
      if (r == 3) {  // rank 3 fails before its group's collective
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        set.abort(block.data.get(), "rank 3 failed");
        return;
      }
      // Ranks 0 and 1 complete their group's collective and wait in the world's; rank 2 waits in
      // its group's for rank 3.
      groups.split(2)->all_gather(Tensor::full({1}, 1.0f));
      world_comm.all_gather(Tensor::full({1}, 1.0f));
    } catch (const comm::CommError& e) {
      errors[r] = e.what();
    }
  });
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r);
    CHECK_THAT(errors[r], Contains("communicator aborted: rank 3 failed"));
  }
  CHECK(errors[3].empty());
}

TEST_CASE(
    "comm set: every region keeps the first abort's reason, whichever region a later abort reached first") {
  const ShmCommSet set(4, kSlot, 4);
  Block block(set);
  auto* base = static_cast<uint8_t*>(block.data.get());
  // A rank released by the first abort aborts again with its own reason, before or after the first
  // abort reached a group: every region names the first.
  comm::ShmCommunicator::abort(base, "rank 3 failed");  // the world's region, as set.abort begins
  set.abort(base, "rank 2 failed");
  set.abort(base, "rank 3 failed");
  CHECK(comm::ShmCommunicator::abort_reason(base) == "rank 3 failed");
  for (int groups : set.cuts())
    for (int g = 0; g < groups; ++g) {
      INFO(groups << " groups, group " << g);
      CHECK(comm::ShmCommunicator::abort_reason(base + set.group_region(groups, g)->offset) ==
            "rank 3 failed");
    }
  const ShmCommSet fresh(2, kSlot, 2);
  Block untouched(fresh);
  CHECK(comm::ShmCommunicator::abort_reason(untouched.data.get()).empty());
}

TEST_CASE("comm groups: a strategy's group communicator, none for groups of one, an error without one") {
  const int world = 4;
  const ShmCommSet set(world, kSlot, 2);  // nodes of 2 ranks: only the cut into 2 groups
  Block block(set);
  comm::ShmCommGroups groups(block.data.get(), set, 0, std::chrono::seconds(5));
  CHECK(comm::has_cut(&groups, 2));
  CHECK_FALSE(comm::has_cut(&groups, 4));
  CHECK_FALSE(comm::has_cut(nullptr, 2));
  // 4 groups of one rank: each rank runs its part alone.
  CHECK(comm::group_communicator(&groups, 4, world, 0, "tdp") == nullptr);
  CHECK(comm::group_communicator(nullptr, 4, world, 0, "tdp") == nullptr);
  // 2 groups of 2 with no groups at all, or a cut that was not prepared: one line naming the caller.
  REQUIRE_THROWS_WITH(comm::group_communicator(nullptr, 2, world, 1, "guidance parallel"),
                      Contains("guidance parallel: rank 1 has no communicator among 2 groups"));
  const ShmCommSet one_node_each(world, kSlot, 1);  // no cut fits a node of one rank
  Block lone(one_node_each);
  comm::ShmCommGroups none(lone.data.get(), one_node_each, 0, std::chrono::seconds(5));
  REQUIRE_THROWS_WITH(comm::group_communicator(&none, 2, world, 0, "tiled data parallel"),
                      Contains("tiled data parallel: rank 0 has no communicator among 2 groups"));
}
