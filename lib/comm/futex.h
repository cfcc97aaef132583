// Process-shared wait/wake on a 32-bit word in shared memory (Linux futex), with a timeout.
//
// Used by the shared-memory communicator and the fleet channel: a waiter reads the word, checks its
// condition, and sleeps only while the word still holds the value it read; every writer that changes
// a condition bumps the word and wakes all waiters. A dead peer can never hold anything here: there is
// no lock, only words each process writes on its own behalf, so waits end by condition or timeout.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace ltx2::comm {

using Clock = std::chrono::steady_clock;

// Sleeps while *word == expected, at most `timeout` (spurious wake-ups allowed).
void futex_wait(std::atomic<uint32_t>* word, uint32_t expected, std::chrono::nanoseconds timeout);
// Wakes every process waiting on `word`.
void futex_wake_all(std::atomic<uint32_t>* word);
// Increments `word` and wakes all waiters: the "something changed" signal.
inline void bump_and_wake(std::atomic<uint32_t>* word) {
  word->fetch_add(1, std::memory_order_acq_rel);
  futex_wake_all(word);
}

}  // namespace ltx2::comm
