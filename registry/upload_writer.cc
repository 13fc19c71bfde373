// registry/upload_writer.cc — an UploadWriter's two threads: add() formats
// rows into slices in the caller's thread and hands full ones over; the
// writer's thread writes them (upload_staging.cc) while the caller keeps
// parsing. Also the writer's first error, which every later call returns.
#include <exception>
#include <string>
#include <system_error>
#include <thread>
#include <utility>

#include "core/record.h"
#include "registry/copy_codec.h"
#include "registry/pg_pool_internal.h"
#include "registry/upload_writer_internal.h"

namespace tcl::registry {

using internal::begin_tuple;
using internal::DedupKey;
using internal::field_bytes;
using internal::field_float8;
using internal::field_float8_array;
using internal::field_int4;
using internal::field_int8;

UploadWriter::Impl::Impl(PgPool::Lease l, std::int64_t platform, UploadKind k)
    : lease(std::move(l)), platform_id(platform), kind(k), filling(std::make_unique<Slice>()) {}

UploadWriter::Impl::~Impl() {
  // The thread first (it may be using the transaction), then the
  // transaction (rolls back unless committed; swallows errors of a dead
  // connection), then the lease.
  {
    core::MutexLock lock(mu);
    stop = true;
  }
  cv.notify_all();
  if (worker.joinable()) worker.join();
  tx.reset();
}

std::string UploadWriter::Impl::what() const {
  return std::string(upload_kind_name(kind)) + " upload for platform " + std::to_string(platform_id);
}

Status UploadWriter::Impl::fail(std::string_view what_failed) {
  bool lost = false;
  Status s = internal::status_from_current_exception(what_failed, &lost);
  if (lost || !lease.conn().is_open()) {
    lease.discard();
    if (s.code() != StatusCode::kUnavailable) {
      s = Status(StatusCode::kUnavailable, "database connection lost: " + s.message());
    }
  }
  return s;
}

Status UploadWriter::Impl::record(Status s) {
  core::MutexLock lock(mu);
  if (error.is_ok()) {
    error = std::move(s);
    dead = true;
  }
  return error;
}

Status UploadWriter::Impl::usable(std::string_view op) {
  if (dead.load(std::memory_order_acquire)) {
    core::MutexLock lock(mu);
    return error;
  }
  if (finished) return Status::failed_precondition(std::string(op) + ": upload already committed");
  return Status::ok();
}

// --- the caller's thread -----------------------------------------------------

Status UploadWriter::Impl::add(const UploadRow& row) {
  Slice& s = *filling;
  auto [task, new_task] =
      s.task_index.try_emplace(row.workload_key, static_cast<std::uint32_t>(s.workload_keys.size()));
  if (new_task) s.workload_keys.push_back(&task->first);
  auto [program, new_program] =
      s.program_index.try_emplace(row.program_id, static_cast<std::uint32_t>(s.program_ids.size()));
  if (new_program) {
    s.program_ids.push_back(&program->first);
    s.program_task.push_back(task->second);
  }
  s.program.push_back(program->second);

  // One tuple: its field count, then the fields in kCopyMeasurements' or
  // kCopyCandidates' order (upload_direct.cc).
  std::string& out = s.data;
  begin_tuple(out, measurements() ? 9 : 4);
  field_int8(out, platform_id);
  field_bytes(out, row.program_id);
  field_int8(out, upload_id);
  if (measurements()) {
    field_float8_array(out, row.costs);
    field_int4(out, row.error_no);
    field_float8(out, row.all_cost);
    field_int8(out, row.timestamp);
    const DedupKey key =
        internal::measurement_dedup_key(platform_id, row.program_id, row.timestamp, row.costs, key_scratch, hasher);
    field_bytes(out, std::string_view(reinterpret_cast<const char*>(key.data()), key.size()));  // uuid
    s.keys.push_back(key);
    s.failed.push_back(core::measurement_failed(row.error_no, row.costs) ? 1 : 0);
  }
  field_bytes(out, row.record);
  s.ends.push_back(out.size());
  ++staged;
  const bool full = s.rows() >= (submitted == 0 ? internal::kFirstSliceRows : internal::kSliceRows) ||
                    s.data.size() >= internal::kSliceBytes;
  return full ? submit() : Status::ok();
}

Status UploadWriter::Impl::submit() {
  // The thread is the caller's to start and join (only the hand-over is
  // shared), so it starts before the lock is taken.
  if (!worker.joinable()) {
    try {
      worker = std::thread([this] { run(); });
    } catch (const std::system_error& e) {
      return record(Status::internal(std::string("cannot start the upload's writer thread: ") + e.what()));
    }
  }
  core::MutexLock lock(mu);
  while (queued != nullptr && !dead) cv.wait(mu);
  if (dead) return error;
  queued = std::move(filling);
  ++submitted;
  if (spare.empty()) {
    filling = std::make_unique<Slice>();
  } else {
    filling = std::move(spare.back());
    spare.pop_back();
  }
  cv.notify_all();
  return Status::ok();
}

Status UploadWriter::Impl::drain() {
  core::MutexLock lock(mu);
  while (queued != nullptr || busy) cv.wait(mu);
  return error;
}

// --- the writer's thread -------------------------------------------------------

void UploadWriter::Impl::run() {
  for (;;) {
    std::unique_ptr<Slice> slice;
    bool skip = false;
    {
      core::MutexLock lock(mu);
      while (!stop && queued == nullptr) cv.wait(mu);
      if (stop) return;
      slice = std::move(queued);
      busy = true;
      cv.notify_all();  // room for the next slice
      skip = dead;
    }
    Status failure;
    if (!skip) {
      try {
        write_slice(*slice);
      } catch (...) {
        failure = fail("writing rows of " + what());
      }
    }
    slice->clear();
    core::MutexLock lock(mu);
    busy = false;
    spare.push_back(std::move(slice));
    if (!failure.is_ok() && error.is_ok()) {
      error = std::move(failure);
      dead = true;
    }
    cv.notify_all();
  }
}

// --- the public face ------------------------------------------------------------

UploadWriter::UploadWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

UploadWriter::~UploadWriter() = default;

Status UploadWriter::add(const UploadRow& row) {
  Impl& m = *impl_;
  if (Status s = m.usable("add"); !s) return s;
  return m.add(row);
}

}  // namespace tcl::registry
