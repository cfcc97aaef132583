// The Communicator contract as a test suite any engine can instantiate: provide a harness that runs
// a body on `world` ranks at once (threads, processes, GPUs) and returns what each rank produced,
// then write LTX2_COMM_SUITE(MyHarness, "my engine") in a test file.
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "core/tensor.h"

namespace ltx2::test {

// What one rank's body returned (a CPU tensor) or the message of what it threw.
struct RankOutcome {
  Tensor value;
  std::string error;
  bool comm_error = false;  // what it threw was a comm::CommError
  bool timeout = false;     // ... and a comm::CommTimeout
  double seconds = 0;       // wall time of the body
};

// Runs on a rank's thread or process: no Catch assertions inside; throw to report a problem.
using CommBody = std::function<Tensor(comm::Communicator&)>;

class CommHarness {
 public:
  virtual ~CommHarness() = default;
  // Ranks of the multi-rank cases (at least 2; the engine's processes or GPUs may cap it).
  virtual int world() const { return 3; }
  // Whether all_reduce_sum adds in rank order (bit-exact against a sequential sum); every engine
  // must give every rank bit-identical sums either way.
  virtual bool sums_in_rank_order() const { return true; }
  // Runs body on every rank concurrently with fresh communicators whose collectives time out
  // after `timeout`; returns once every rank's body has returned or thrown.
  virtual std::vector<RankOutcome> run(int world, std::chrono::milliseconds timeout,
                                       const CommBody& body) = 0;
};

void comm_suite_all_to_all(CommHarness& h);
void comm_suite_all_to_all_large(CommHarness& h);
void comm_suite_all_gather(CommHarness& h);
void comm_suite_all_reduce(CommHarness& h);
void comm_suite_broadcast(CommHarness& h);
void comm_suite_barrier(CommHarness& h);
void comm_suite_world_of_one(CommHarness& h);
void comm_suite_missing_peer_times_out(CommHarness& h);
void comm_suite_mismatched_collectives_throw(CommHarness& h);
void comm_suite_mismatched_counts_throw(CommHarness& h);

}  // namespace ltx2::test

#define LTX2_COMM_SUITE_CASE(Harness, engine, fn, what) \
  TEST_CASE(engine ": " what) {                         \
    Harness harness;                                    \
    ::ltx2::test::fn(harness);                          \
  }

#define LTX2_COMM_SUITE(Harness, engine)                                                                   \
  LTX2_COMM_SUITE_CASE(Harness, engine, comm_suite_all_to_all, "all_to_all with uneven and zero counts")   \
  LTX2_COMM_SUITE_CASE(Harness, engine, comm_suite_all_to_all_large, "all_to_all larger than one round")   \
  LTX2_COMM_SUITE_CASE(Harness, engine, comm_suite_all_gather, "all_gather stacks ranks in order")         \
  LTX2_COMM_SUITE_CASE(Harness, engine, comm_suite_all_reduce, "all_reduce_sum is exact and identical")    \
  LTX2_COMM_SUITE_CASE(Harness, engine, comm_suite_broadcast, "broadcast from a non-zero root")            \
  LTX2_COMM_SUITE_CASE(Harness, engine, comm_suite_barrier, "barrier waits for the slowest rank")          \
  LTX2_COMM_SUITE_CASE(Harness, engine, comm_suite_world_of_one, "a world of one rank")                    \
  LTX2_COMM_SUITE_CASE(Harness, engine, comm_suite_missing_peer_times_out, "a missing peer times out")     \
  LTX2_COMM_SUITE_CASE(Harness, engine, comm_suite_mismatched_collectives_throw, "mismatched collectives") \
  LTX2_COMM_SUITE_CASE(Harness, engine, comm_suite_mismatched_counts_throw, "mismatched all_to_all counts")
