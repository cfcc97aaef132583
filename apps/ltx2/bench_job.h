// The benches that run on a fleet: one job submitted and its ranks' terminal values awaited.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "runtime/controller.h"

namespace ltx2 {

// Submits `params` to the started fleet `c` and returns the Done event's data (every rank's
// value); throws, naming `bench`, when the job does not end within `limit`.
inline nlohmann::json run_bench_job(runtime::Controller& c, const nlohmann::json& params,
                                    std::chrono::minutes limit, const char* bench) {
  c.submit(params);
  for (;;) {
    auto ev = c.next(limit);
    LTX2_CHECK(ev.has_value(), "{}: no result within {} minutes", bench, limit.count());
    if (ev->kind == runtime::JobEvent::Kind::Done) return ev->data;
  }
}

}  // namespace ltx2
