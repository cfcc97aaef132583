// The engine-independent Communicator checks (see comm_suite.h).
#include "support/comm_suite.h"

#include <thread>

#include "support/catch.h"
#include "support/test_util.h"

namespace ltx2::test {
namespace {

using namespace std::chrono_literals;

void require_all_ok(const std::vector<RankOutcome>& out) {
  for (size_t r = 0; r < out.size(); ++r) {
    INFO("rank " << r << ": " << out[r].error);
    REQUIRE(out[r].error.empty());
  }
}

// Elements rank r sends to rank p in the all_to_all cases.
int64_t a2a_count(int r, int p, int64_t scale) {
  return ((r + 2 * p) % 3) * scale;
}
float a2a_value(int r, int p, int64_t k) {
  return static_cast<float>(r * 100000 + p * 10000 + k);
}

void check_all_to_all(CommHarness& h, int64_t scale) {
  const int world = h.world();
  auto out = h.run(world, 5000ms, [&](comm::Communicator& c) {
    const int r = c.rank();
    std::vector<int64_t> send_counts(world), recv_counts(world);
    std::vector<float> values;
    for (int p = 0; p < world; ++p) {
      send_counts[p] = a2a_count(r, p, scale);
      recv_counts[p] = a2a_count(p, r, scale);
      for (int64_t k = 0; k < send_counts[p]; ++k) values.push_back(a2a_value(r, p, k));
    }
    Tensor send = Tensor::from_vector(values, {static_cast<int64_t>(values.size())});
    return c.all_to_all(send, send_counts, recv_counts);
  });
  require_all_ok(out);
  for (int r = 0; r < world; ++r) {
    std::vector<float> expected;
    for (int p = 0; p < world; ++p)
      for (int64_t k = 0; k < a2a_count(p, r, scale); ++k) expected.push_back(a2a_value(p, r, k));
    REQUIRE(out[r].value.dim() == 1);
    REQUIRE(out[r].value.to_vector() == expected);
  }
}

}  // namespace

void comm_suite_all_to_all(CommHarness& h) {
  check_all_to_all(h, 1);
}

void comm_suite_all_to_all_large(CommHarness& h) {
  check_all_to_all(h, 5000);
}

void comm_suite_all_gather(CommHarness& h) {
  const int world = h.world();
  auto out = h.run(world, 5000ms, [](comm::Communicator& c) {
    Tensor x = Tensor::from_vector_i64({c.rank(), c.rank() * 10, c.rank() * 100, 7, 8, 9}, {2, 3});
    return c.all_gather(x.transpose(0, 1));  // a non-contiguous input is read as if contiguous
  });
  require_all_ok(out);
  for (int r = 0; r < world; ++r) {
    REQUIRE(out[r].value.shape() == Shape{world, 3, 2});
    for (int p = 0; p < world; ++p) {
      REQUIRE(out[r].value.item_i64({p, 0, 0}) == p);
      REQUIRE(out[r].value.item_i64({p, 1, 0}) == p * 10);
      REQUIRE(out[r].value.item_i64({p, 2, 1}) == 9);
    }
  }
}

void comm_suite_all_reduce(CommHarness& h) {
  const int world = h.world();
  const Shape shape{64, 300};  // 76,800 bytes: several rounds on small slots
  auto out = h.run(world, 5000ms, [&](comm::Communicator& c) {
    const int64_t w = c.world_size();
    Tensor exact = Tensor::full({5}, static_cast<float>(c.rank() + 1));
    Tensor sum = c.all_reduce_sum(exact);
    Tensor noisy = c.all_reduce_sum(random_tensor(shape, 11 + c.rank()));
    Tensor ints = c.all_reduce_sum(Tensor::from_vector_i64({c.rank(), 1LL << 40}, {2}));
    // Bodies run on rank threads/processes, where Catch assertions are not allowed: report by throwing.
    if (sum.to_vector() != std::vector<float>(5, static_cast<float>(w * (w + 1) / 2)))
      throw std::runtime_error("f32 sum of ranks is wrong");
    if (ints.to_vector_i64() != std::vector<int64_t>{w * (w - 1) / 2, w << 40})
      throw std::runtime_error("i64 sum is wrong");
    return noisy;
  });
  require_all_ok(out);
  Tensor expected = random_tensor(shape, 11).clone();
  for (int p = 1; p < world; ++p) {
    auto e = expected.data<float>();
    Tensor term = random_tensor(shape, 11 + p);
    for (int64_t i = 0; i < expected.numel(); ++i) e[i] += term.data<float>()[i];
  }
  for (int r = 0; r < world; ++r) REQUIRE(max_abs_diff(out[r].value, out[0].value) == 0.0f);
  REQUIRE(max_abs_diff(out[0].value, expected) <= (h.sums_in_rank_order() ? 0.0f : 1e-5f));
}

void comm_suite_broadcast(CommHarness& h) {
  const int world = h.world();
  auto out = h.run(world, 5000ms, [](comm::Communicator& c) {
    Tensor x = c.rank() == 1 ? random_tensor({40, 50}, 5) : Tensor::zeros({40, 50});
    return c.broadcast(x, 1);
  });
  require_all_ok(out);
  for (int r = 0; r < world; ++r) REQUIRE(max_abs_diff(out[r].value, random_tensor({40, 50}, 5)) == 0.0f);
}

void comm_suite_barrier(CommHarness& h) {
  const int world = h.world();
  auto out = h.run(world, 5000ms, [](comm::Communicator& c) {
    const auto start = std::chrono::steady_clock::now();
    if (c.rank() == c.world_size() - 1) std::this_thread::sleep_for(150ms);
    c.barrier();
    c.barrier();
    return Tensor::scalar(std::chrono::duration<float>(std::chrono::steady_clock::now() - start).count());
  });
  require_all_ok(out);
  for (int r = 0; r < world; ++r) REQUIRE(out[r].value.item() >= 0.14f);
}

void comm_suite_world_of_one(CommHarness& h) {
  auto out = h.run(1, 5000ms, [](comm::Communicator& c) {
    Tensor x = Tensor::from_vector({1, 2, 3}, {3});
    std::vector<int64_t> counts{3};
    Tensor y = c.all_to_all(x, counts, counts);
    c.barrier();
    return c.all_reduce_sum(c.broadcast(y, 0));
  });
  require_all_ok(out);
  REQUIRE(out[0].value.to_vector() == std::vector<float>{1, 2, 3});
}

void comm_suite_missing_peer_times_out(CommHarness& h) {
  const int last = h.world() - 1;
  auto out = h.run(h.world(), 300ms, [last](comm::Communicator& c) {
    if (c.rank() != last) c.all_reduce_sum(Tensor::full({4}, 1.0f));  // the last rank never arrives
    return Tensor::scalar(0);
  });
  REQUIRE(out[last].error.empty());
  int timeouts = 0;
  for (int r = 0; r < last; ++r) {
    INFO("rank " << r << ": " << out[r].error);
    REQUIRE(out[r].comm_error);
    REQUIRE(out[r].seconds < 2.0);
    if (out[r].timeout) {
      ++timeouts;
      REQUIRE(out[r].error.find("rank(s) " + std::to_string(last)) != std::string::npos);
    }
  }
  REQUIRE(timeouts >= 1);
}

void comm_suite_mismatched_collectives_throw(CommHarness& h) {
  auto out = h.run(2, 2000ms, [](comm::Communicator& c) {
    if (c.rank() == 0) return c.all_gather(Tensor::full({4}, 1.0f));
    return c.broadcast(Tensor::full({4}, 1.0f), 0);
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << out[r].error);
    REQUIRE(out[r].comm_error);
    REQUIRE(!out[r].timeout);
  }
}

void comm_suite_mismatched_counts_throw(CommHarness& h) {
  auto out = h.run(2, 2000ms, [](comm::Communicator& c) {
    std::vector<int64_t> send{1, 1}, recv{1, c.rank() == 0 ? 2 : 1};  // rank 0 expects 2 from rank 1
    Tensor got = c.all_to_all(Tensor::full({2}, 1.0f), send, recv);
    c.barrier();  // rank 1 may have completed the all_to_all; it learns of the fault here
    return got;
  });
  REQUIRE(out[0].comm_error);
  REQUIRE(out[0].error.find("rank 1 sends 1 elements to rank 0, which expects 2") != std::string::npos);
  REQUIRE(out[1].comm_error);  // released by rank 0's abort, not by its own timeout
  REQUIRE(!out[1].timeout);
  for (int r = 0; r < 2; ++r) REQUIRE(out[r].seconds < 1.5);
}

}  // namespace ltx2::test
