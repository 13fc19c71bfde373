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

#include <cstddef>
#include <deque>
#include <functional>
#include <string>

#include "core/mutex.h"
#include "core/status.h"

namespace tcl::api {

class ChunkChannel {
 public:
  explicit ChunkChannel(std::size_t capacity = 16) : capacity_(capacity) {}

  // Worker side. push_wait: false when the channel was closed (stop
  // producing). pop_wait: false at the end (status() OK) or on failure.
  bool push_wait(std::string chunk) EXCLUDES(mu_);
  bool pop_wait(std::string* chunk) EXCLUDES(mu_);

  // I/O side.
  void push(std::string chunk) EXCLUDES(mu_);
  enum class Pop { kChunk, kEmpty, kEnd };
  Pop try_pop(std::string* chunk) EXCLUDES(mu_);
  bool full() const EXCLUDES(mu_);
  // Registers `ready` to run once when data (or the end) arrives; returns
  // false without registering when there is data or the end already.
  bool wait_for_data(std::function<void()> ready) EXCLUDES(mu_);
  // Registers `ready` to run once when space frees (or the channel closes);
  // returns false without registering when there is space already.
  bool wait_for_space(std::function<void()> ready) EXCLUDES(mu_);

  // Either side.
  void close(Status status = Status::ok()) EXCLUDES(mu_);
  bool closed() const EXCLUDES(mu_);
  Status status() const EXCLUDES(mu_);

 private:
  // The waiting callback, taken (one-shot); the caller runs it through
  // wake() after unlocking.
  std::function<void()> take_ready() REQUIRES(mu_);
  void wake(const std::function<void()>& ready) EXCLUDES(mu_);

  const std::size_t capacity_;
  mutable core::Mutex mu_;
  core::CondVar cv_;
  std::deque<std::string> chunks_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
  Status status_ GUARDED_BY(mu_);
  std::function<void()> ready_ GUARDED_BY(mu_);  // one-shot
};

}  // namespace tcl::api
