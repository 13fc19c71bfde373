#include "api/chunk_channel.h"

namespace tcl::api {

std::function<void()> ChunkChannel::take_ready() {
  std::function<void()> ready = std::move(ready_);
  ready_ = nullptr;
  return ready;
}

// Outside the lock: the callback may call back into the channel.
void ChunkChannel::wake(const std::function<void()>& ready) {
  cv_.notify_all();
  if (ready) ready();
}

bool ChunkChannel::push_wait(std::string chunk) {
  core::MutexLock lock(mu_);
  while (!closed_ && chunks_.size() >= capacity_) cv_.wait(mu_);
  if (closed_) return false;
  chunks_.push_back(std::move(chunk));
  std::function<void()> ready = take_ready();
  lock.unlock();
  wake(ready);
  return true;
}

bool ChunkChannel::pop_wait(std::string* chunk) {
  core::MutexLock lock(mu_);
  while (!closed_ && chunks_.empty()) cv_.wait(mu_);
  if (!chunks_.empty() && status_.is_ok()) {
    *chunk = std::move(chunks_.front());
    chunks_.pop_front();
    std::function<void()> ready = take_ready();
    lock.unlock();
    wake(ready);
    return true;
  }
  return false;
}

void ChunkChannel::push(std::string chunk) {
  core::MutexLock lock(mu_);
  if (closed_) return;
  chunks_.push_back(std::move(chunk));
  lock.unlock();
  cv_.notify_all();
}

ChunkChannel::Pop ChunkChannel::try_pop(std::string* chunk) {
  core::MutexLock lock(mu_);
  if (!chunks_.empty() && status_.is_ok()) {
    *chunk = std::move(chunks_.front());
    chunks_.pop_front();
    lock.unlock();
    cv_.notify_all();
    return Pop::kChunk;
  }
  return closed_ ? Pop::kEnd : Pop::kEmpty;
}

bool ChunkChannel::full() const {
  core::MutexLock lock(mu_);
  return !closed_ && chunks_.size() >= capacity_;
}

bool ChunkChannel::wait_for_data(std::function<void()> ready) {
  core::MutexLock lock(mu_);
  if (closed_ || !chunks_.empty()) return false;
  ready_ = std::move(ready);
  return true;
}

bool ChunkChannel::wait_for_space(std::function<void()> ready) {
  core::MutexLock lock(mu_);
  if (closed_ || chunks_.size() < capacity_) return false;
  ready_ = std::move(ready);
  return true;
}

void ChunkChannel::close(Status status) {
  core::MutexLock lock(mu_);
  if (closed_) return;
  closed_ = true;
  status_ = std::move(status);
  if (!status_.is_ok()) chunks_.clear();
  std::function<void()> ready = take_ready();
  lock.unlock();
  wake(ready);
}

bool ChunkChannel::closed() const {
  core::MutexLock lock(mu_);
  return closed_;
}

Status ChunkChannel::status() const {
  core::MutexLock lock(mu_);
  return status_;
}

}  // namespace tcl::api
