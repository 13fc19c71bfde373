// api/chunk_channel.h — a bounded queue of byte chunks between an I/O strand
// and a worker thread: request bodies flow session → handler, streamed
// response bodies flow handler → session.
//
// The worker side blocks (push_wait/pop_wait); the I/O side never blocks: it
// asks try_pop()/full() and, when it must wait, registers a one-shot callback
// with wait_for_data()/wait_for_space(), which the worker side invokes (from
// its own thread) when the state changes. Memory is bounded by `capacity`
// chunks (the non-blocking push() may exceed it by one chunk; the I/O side
// then stops reading until there is space).
//
// close(OK) marks the end of the stream; close(error) fails it (client gone,
// body limit, handler gave up) and wakes every waiter.
// Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "core/status.h"

namespace tcl::api {

class ChunkChannel {
 public:
  explicit ChunkChannel(std::size_t capacity = 16) : capacity_(capacity) {}

  // Worker side. push_wait: false when the channel was closed (stop
  // producing). pop_wait: false at the end (status() OK) or on failure.
  bool push_wait(std::string chunk);
  bool pop_wait(std::string* chunk);

  // I/O side.
  void push(std::string chunk);
  enum class Pop { kChunk, kEmpty, kEnd };
  Pop try_pop(std::string* chunk);
  bool full() const;
  // Registers `ready` to run once when data (or the end) arrives; returns
  // false without registering when there is data or the end already.
  bool wait_for_data(std::function<void()> ready);
  // Registers `ready` to run once when space frees (or the channel closes);
  // returns false without registering when there is space already.
  bool wait_for_space(std::function<void()> ready);

  // Either side.
  void close(Status status = Status::ok());
  bool closed() const;
  Status status() const;

 private:
  void notify(std::unique_lock<std::mutex>& lock);

  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> chunks_;   // guarded by mu_
  bool closed_ = false;              // guarded by mu_
  Status status_;                    // guarded by mu_
  std::function<void()> ready_;      // guarded by mu_; one-shot
};

}  // namespace tcl::api
