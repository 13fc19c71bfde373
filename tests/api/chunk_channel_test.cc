// tests/api/chunk_channel_test.cc — the bounded chunk queue between an I/O
// strand and a worker (api/chunk_channel.h): order, capacity, the end and a
// failure, the one-shot callbacks, and two threads passing many chunks through
// a channel of capacity 1 (a lost wakeup there hangs one side: the test bounds
// every wait and fails instead of hanging).
#include "api/chunk_channel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tcl::api {
namespace {

using namespace std::chrono_literals;

TEST(ChunkChannelTest, ChunksComeOutInOrderAndTheEndAfterTheLast) {
  ChunkChannel ch(4);
  ASSERT_TRUE(ch.push_wait("a"));
  ch.push("b");
  ch.close();
  EXPECT_TRUE(ch.closed());
  std::string chunk;
  ASSERT_TRUE(ch.pop_wait(&chunk));
  EXPECT_EQ(chunk, "a");
  ASSERT_EQ(ch.try_pop(&chunk), ChunkChannel::Pop::kChunk);  // a clean end keeps what was queued
  EXPECT_EQ(chunk, "b");
  EXPECT_EQ(ch.try_pop(&chunk), ChunkChannel::Pop::kEnd);
  EXPECT_FALSE(ch.pop_wait(&chunk));
  EXPECT_TRUE(ch.status().is_ok());
}

TEST(ChunkChannelTest, EmptyIsNotTheEnd) {
  ChunkChannel ch;
  std::string chunk;
  EXPECT_EQ(ch.try_pop(&chunk), ChunkChannel::Pop::kEmpty);
  EXPECT_FALSE(ch.closed());
}

TEST(ChunkChannelTest, FullAtCapacityAndTheNonBlockingPushMayExceedIt) {
  ChunkChannel ch(2);
  EXPECT_FALSE(ch.full());
  ch.push("1");
  EXPECT_FALSE(ch.full());
  ch.push("2");
  EXPECT_TRUE(ch.full());
  ch.push("3");  // the I/O side's one chunk over
  EXPECT_TRUE(ch.full());
  std::string chunk;
  ASSERT_EQ(ch.try_pop(&chunk), ChunkChannel::Pop::kChunk);
  EXPECT_TRUE(ch.full());
  ASSERT_EQ(ch.try_pop(&chunk), ChunkChannel::Pop::kChunk);
  EXPECT_FALSE(ch.full());
  ch.close();
  EXPECT_FALSE(ch.full());  // a closed channel never asks the reader to wait
}

TEST(ChunkChannelTest, AFailureDropsQueuedChunksAndStopsBothSides) {
  ChunkChannel ch(4);
  ch.push("x");
  ch.close(Status::cancelled("client gone"));
  std::string chunk;
  EXPECT_FALSE(ch.pop_wait(&chunk));
  EXPECT_EQ(ch.try_pop(&chunk), ChunkChannel::Pop::kEnd);
  EXPECT_FALSE(ch.push_wait("y"));
  EXPECT_EQ(ch.status().code(), StatusCode::kCancelled);
  EXPECT_EQ(ch.status().message(), "client gone");
}

TEST(ChunkChannelTest, TheFirstCloseWins) {
  ChunkChannel ch;
  ch.close(Status::resource_exhausted("body over 10 bytes"));
  ch.close();
  EXPECT_EQ(ch.status().code(), StatusCode::kResourceExhausted);
}

TEST(ChunkChannelTest, PushAfterCloseIsDropped) {
  ChunkChannel ch;
  ch.close();
  ch.push("late");
  std::string chunk;
  EXPECT_EQ(ch.try_pop(&chunk), ChunkChannel::Pop::kEnd);
}

TEST(ChunkChannelTest, WaitForDataRegistersOnlyWhenEmptyAndRunsOnce) {
  ChunkChannel ch(4);
  int calls = 0;
  ASSERT_TRUE(ch.wait_for_data([&] { ++calls; }));
  ASSERT_TRUE(ch.push_wait("a"));
  EXPECT_EQ(calls, 1);
  ASSERT_TRUE(ch.push_wait("b"));
  EXPECT_EQ(calls, 1);                               // one-shot
  EXPECT_FALSE(ch.wait_for_data([&] { ++calls; }));  // data is there already
  ch.close();
  EXPECT_FALSE(ch.wait_for_data([&] { ++calls; }));  // and so is the end
  EXPECT_EQ(calls, 1);
}

TEST(ChunkChannelTest, WaitForSpaceRunsWhenTheWorkerTakesAChunk) {
  ChunkChannel ch(1);
  int calls = 0;
  EXPECT_FALSE(ch.wait_for_space([&] { ++calls; }));  // space already
  ch.push("a");
  ASSERT_TRUE(ch.wait_for_space([&] { ++calls; }));
  std::string chunk;
  ASSERT_TRUE(ch.pop_wait(&chunk));
  EXPECT_EQ(calls, 1);
}

TEST(ChunkChannelTest, CloseRunsTheWaitingCallback) {
  ChunkChannel ch;
  int calls = 0;
  ASSERT_TRUE(ch.wait_for_data([&] { ++calls; }));
  ch.close(Status::cancelled("handler gave up"));
  EXPECT_EQ(calls, 1);
}

TEST(ChunkChannelTest, CloseWakesABlockedWorker) {
  ChunkChannel ch(1);
  ASSERT_TRUE(ch.push_wait("fills it"));
  auto producer = std::async(std::launch::async, [&] { return ch.push_wait("blocks"); });
  ASSERT_EQ(producer.wait_for(50ms), std::future_status::timeout);  // really blocked on a full channel
  ch.close(Status::cancelled("client gone"));
  ASSERT_EQ(producer.wait_for(5s), std::future_status::ready);
  EXPECT_FALSE(producer.get());
}

// Many chunks through capacity 1, both sides blocking: every chunk arrives once,
// in order; a missed notify leaves a side waiting forever (bounded here).
TEST(ChunkChannelTest, WorkerToWorkerPassesEveryChunkWithoutALostWakeup) {
  constexpr int kChunks = 20000;
  ChunkChannel ch(1);
  auto producer = std::async(std::launch::async, [&] {
    for (int i = 0; i < kChunks; ++i) {
      if (!ch.push_wait(std::to_string(i))) return i;
    }
    ch.close();
    return kChunks;
  });
  auto consumer = std::async(std::launch::async, [&] {
    std::vector<std::string> got;
    std::string chunk;
    while (ch.pop_wait(&chunk)) got.push_back(chunk);
    return got;
  });
  const bool done =
      producer.wait_for(30s) == std::future_status::ready && consumer.wait_for(30s) == std::future_status::ready;
  if (!done) ch.close(Status::internal("test timed out"));  // unblock both before failing
  ASSERT_TRUE(done) << "a side is still waiting: lost wakeup";
  EXPECT_EQ(producer.get(), kChunks);
  const std::vector<std::string> got = consumer.get();
  ASSERT_EQ(got.size(), static_cast<std::size_t>(kChunks));
  for (int i = 0; i < kChunks; ++i) ASSERT_EQ(got[i], std::to_string(i));
}

// The server's shape: a worker produces with push_wait, the I/O side never
// blocks but polls try_pop and, when empty, parks on wait_for_data (the
// worker's push must run the callback). The I/O side here is a thread that
// sleeps on the callback's signal, bounded.
TEST(ChunkChannelTest, WorkerToIoSideWakesTheParkedReaderEveryTime) {
  constexpr int kChunks = 20000;
  ChunkChannel ch(1);
  auto producer = std::async(std::launch::async, [&] {
    for (int i = 0; i < kChunks; ++i) {
      if (!ch.push_wait(std::to_string(i))) return;
    }
    ch.close();
  });
  std::vector<std::string> got;
  bool hung = false;
  std::string chunk;
  for (;;) {
    const ChunkChannel::Pop p = ch.try_pop(&chunk);
    if (p == ChunkChannel::Pop::kChunk) {
      got.push_back(chunk);
      continue;
    }
    if (p == ChunkChannel::Pop::kEnd) break;
    auto woken = std::make_shared<std::promise<void>>();
    std::future<void> signal = woken->get_future();
    if (!ch.wait_for_data([woken] { woken->set_value(); })) continue;  // data or end came meanwhile
    if (signal.wait_for(10s) != std::future_status::ready) {
      hung = true;
      ch.close(Status::internal("test timed out"));
      break;
    }
  }
  producer.wait();
  ASSERT_FALSE(hung) << "the parked reader was never woken: lost wakeup after " << got.size() << " chunks";
  ASSERT_EQ(got.size(), static_cast<std::size_t>(kChunks));
  for (int i = 0; i < kChunks; ++i) ASSERT_EQ(got[i], std::to_string(i));
}

// The other direction: the I/O side produces with push (never blocking) and,
// when full(), parks on wait_for_space; the worker's pop_wait must wake it.
TEST(ChunkChannelTest, IoSideToWorkerWakesTheParkedWriterEveryTime) {
  constexpr int kChunks = 20000;
  ChunkChannel ch(1);
  auto consumer = std::async(std::launch::async, [&] {
    std::vector<std::string> got;
    std::string chunk;
    while (ch.pop_wait(&chunk)) got.push_back(chunk);
    return got;
  });
  bool hung = false;
  for (int i = 0; i < kChunks && !hung;) {
    if (!ch.full()) {
      ch.push(std::to_string(i++));
      continue;
    }
    auto woken = std::make_shared<std::promise<void>>();
    std::future<void> signal = woken->get_future();
    if (!ch.wait_for_space([woken] { woken->set_value(); })) continue;
    if (signal.wait_for(10s) != std::future_status::ready) hung = true;
  }
  ch.close(hung ? Status::internal("test timed out") : Status::ok());
  const std::vector<std::string> got = consumer.get();
  ASSERT_FALSE(hung) << "the parked writer was never woken: lost wakeup";
  ASSERT_EQ(got.size(), static_cast<std::size_t>(kChunks));
  for (int i = 0; i < kChunks; ++i) ASSERT_EQ(got[i], std::to_string(i));
}

}  // namespace
}  // namespace tcl::api
