#include "api/chunk_channel.h"

namespace tcl::api {

void ChunkChannel::notify(std::unique_lock<std::mutex>& lock) {
  std::function<void()> ready = std::move(ready_);
  ready_ = nullptr;
  lock.unlock();
  cv_.notify_all();
  if (ready) ready();
}

bool ChunkChannel::push_wait(std::string chunk) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return closed_ || chunks_.size() < capacity_; });
  if (closed_) return false;
  chunks_.push_back(std::move(chunk));
  notify(lock);
  return true;
}

bool ChunkChannel::pop_wait(std::string* chunk) {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return closed_ || !chunks_.empty(); });
  if (!chunks_.empty() && status_.is_ok()) {
    *chunk = std::move(chunks_.front());
    chunks_.pop_front();
    notify(lock);
    return true;
  }
  return false;
}

void ChunkChannel::push(std::string chunk) {
  std::unique_lock lock(mu_);
  if (closed_) return;
  chunks_.push_back(std::move(chunk));
  lock.unlock();
  cv_.notify_all();
}

ChunkChannel::Pop ChunkChannel::try_pop(std::string* chunk) {
  std::unique_lock lock(mu_);
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
  std::lock_guard lock(mu_);
  return !closed_ && chunks_.size() >= capacity_;
}

bool ChunkChannel::wait_for_data(std::function<void()> ready) {
  std::lock_guard lock(mu_);
  if (closed_ || !chunks_.empty()) return false;
  ready_ = std::move(ready);
  return true;
}

bool ChunkChannel::wait_for_space(std::function<void()> ready) {
  std::lock_guard lock(mu_);
  if (closed_ || chunks_.size() < capacity_) return false;
  ready_ = std::move(ready);
  return true;
}

void ChunkChannel::close(Status status) {
  std::unique_lock lock(mu_);
  if (closed_) return;
  closed_ = true;
  status_ = std::move(status);
  if (!status_.is_ok()) chunks_.clear();
  notify(lock);
}

bool ChunkChannel::closed() const {
  std::lock_guard lock(mu_);
  return closed_;
}

Status ChunkChannel::status() const {
  std::lock_guard lock(mu_);
  return status_;
}

}  // namespace tcl::api
