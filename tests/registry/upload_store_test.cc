#include "registry/upload_store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/sha256.h"
#include "registry/platform_store.h"
#include "tests/registry/registry_test_env.h"

namespace tcl::registry {
namespace {

using namespace std::chrono_literals;
using testing::exec_sql;
using testing::query_text;
using testing::UploadLockHolder;

// A measurement row of task `task`, program `program` (its steps depend on
// the number only, so equal numbers give equal programs).
UploadRow row(int task, int program, std::int64_t timestamp, std::vector<double> costs, std::int32_t error_no = 0) {
  UploadRow r;
  r.workload_key = "[\"task" + std::to_string(task) + "\",[1,64,56,56],[64,64,3,3]]";
  const std::string steps = "[[\"SP\",2,0,1024,[" + std::to_string(program) + ",4],1],[\"AN\",2,0,3]]";
  r.program_id = sha256_hex(r.workload_key + "\n" + steps);
  r.costs = std::move(costs);
  r.error_no = error_no;
  r.all_cost = 0.25;
  r.timestamp = timestamp;
  r.record = "{\"i\": [[" + r.workload_key + ", \"llvm\"], [[], " + steps + "]], \"r\": [[...], " +
             std::to_string(error_no) + ", 0.25, " + std::to_string(timestamp) + "], \"v\": \"v0.6\"}";
  return r;
}

std::string body_hash(const std::string& tag) { return sha256_hex(tag); }

// Whether `done` turns true within `tries` polls 10 ms apart (the other
// session's state is only seen through the database).
bool eventually(const std::function<bool()>& done, int tries = 500) {
  for (int i = 0; i < tries; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// Sessions of this test's database waiting for a lock.
std::string lock_waiters(const std::string& url) {
  return query_text(url,
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock'");
}

// A make_report that records what it was given.
struct ReportSpy {
  std::int64_t upload_id = -1;
  UploadCounts counts;
  int calls = 0;
  std::function<std::string(std::int64_t, const UploadCounts&)> fn() {
    return [this](std::int64_t id, const UploadCounts& c) {
      ++calls;
      upload_id = id;
      counts = c;
      return "{\"upload_id\": " + std::to_string(id) + ", \"accepted\": " + std::to_string(c.inserted) +
             ", \"duplicates\": " + std::to_string(c.duplicates) + ", \"failed\": " + std::to_string(c.failed) +
             ", \"rejected\": []}";
    };
  }
};

class UploadStoreTest : public testing::MigratedDbTest {
 protected:
  void SetUp() override {
    MigratedDbTest::SetUp();
    store_ = std::make_unique<UploadStore>(*pool_);
    PlatformStore platforms(*pool_);
    for (const char* name : {"cpu", "gpu"}) {
      NewPlatform p;
      p.name = name;
      p.target = "llvm";
      auto created = platforms.create(p);
      ASSERT_TRUE(created.is_ok()) << created.status().to_string();
      (std::string(name) == "cpu" ? cpu_ : gpu_) = created->id;
    }
  }

  // Uploads `rows` in one writer; fails the test on any error.
  CommittedUpload upload(std::int64_t platform, UploadKind kind, const std::vector<UploadRow>& rows,
                         const std::string& key, const std::string& body, ReportSpy* spy = nullptr) {
    ReportSpy local;
    ReportSpy& s = spy != nullptr ? *spy : local;
    auto writer = store_->begin(platform, kind);
    EXPECT_TRUE(writer.is_ok()) << writer.status().to_string();
    if (!writer) return {};
    for (const UploadRow& r : rows) {
      Status st = (*writer)->add(r);
      EXPECT_TRUE(st.is_ok()) << st.to_string();
    }
    auto done = (*writer)->commit(key, body_hash(body), s.fn());
    EXPECT_TRUE(done.is_ok()) << done.status().to_string();
    return done ? *done : CommittedUpload{};
  }

  std::vector<StoredRecord> records(std::int64_t platform, UploadKind kind, int batch = 2000) {
    std::vector<StoredRecord> out;
    Status s = store_->for_each_record(
        platform, kind,
        [&](const StoredRecord& r) {
          out.push_back(r);
          return true;
        },
        batch);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
    return out;
  }

  std::string count(const std::string& table) { return query_text(url_, "SELECT count(*) FROM " + table); }

  void expect_nothing_stored() {
    for (const char* table : {"uploads", "tasks", "programs", "measurements", "candidates"}) {
      EXPECT_EQ(count(table), "0") << table;
    }
  }

  std::unique_ptr<UploadStore> store_;
  std::int64_t cpu_ = 0;
  std::int64_t gpu_ = 0;
};

TEST_F(UploadStoreTest, KindNames) {
  EXPECT_EQ(upload_kind_name(UploadKind::kMeasurements), "measurements");
  EXPECT_EQ(upload_kind_name(UploadKind::kCandidates), "candidates");
}

TEST_F(UploadStoreTest, CommittedRowsReadBackByteExactInOrder) {
  std::vector<UploadRow> rows;
  for (int i = 0; i < 50; ++i) rows.push_back(row(i % 3, 49 - i, 1600000000 + i, {1e-5 * (i + 1), 0.1 + 0.2}));
  // Bytes that COPY's text format must escape, and multi-byte UTF-8.
  rows[0].record = "{\"tab\":\"a\tb\", \"bs\":\"C:\\\\dir\\\\N\", \"nul-like\":\"\\N\", \"cr\":\"x\ry\"}";
  rows[1].record = "{\"utf8\":\"\xc3\xa9t\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x9a\x80\", \"esc\":\"\\u00e9\\\"q\\\"\"}";
  rows[2].record = std::string("{\"bell\":\"\x07\", \"vt\":\"\x0b\", \"ff\":\"\x0c\", \"del\":\"\x7f\"}");
  rows[3].record = "";

  ReportSpy spy;
  CommittedUpload done = upload(cpu_, UploadKind::kMeasurements, rows, "", "body-1", &spy);
  EXPECT_GT(done.upload_id, 0);
  EXPECT_FALSE(done.replayed);
  EXPECT_EQ(spy.calls, 1);
  EXPECT_EQ(spy.upload_id, done.upload_id);
  EXPECT_EQ(spy.counts.staged, 50);
  EXPECT_EQ(spy.counts.inserted, 50);
  EXPECT_EQ(spy.counts.duplicates, 0);
  EXPECT_EQ(spy.counts.failed, 0);
  // The report comes back as stored (jsonb's rendering of make_report's text).
  EXPECT_EQ(done.report_json, query_text(url_, "SELECT report::text FROM uploads"));
  EXPECT_EQ(query_text(url_, "SELECT report->>'accepted' FROM uploads"), "50");

  std::vector<StoredRecord> got = records(cpu_, UploadKind::kMeasurements);
  ASSERT_EQ(got.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(got[i].record, rows[i].record) << i;
    EXPECT_EQ(got[i].program_id, rows[i].program_id) << i;
  }

  // The other columns, and the rows around them.
  EXPECT_EQ(count("tasks"), "3");
  EXPECT_EQ(count("programs"), "50");
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM measurements WHERE upload_id = " + std::to_string(done.upload_id) +
                                 " AND platform_id = " + std::to_string(cpu_)),
            "50");
  // A row's program, and the program's task (the steps are in the record).
  EXPECT_EQ(query_text(url_,
                       "SELECT count(*) FROM programs p JOIN tasks t ON t.id = p.task_id "
                       "JOIN measurements m ON m.program_id = p.id "
                       "WHERE m.record = (SELECT record FROM measurements ORDER BY id OFFSET 10 LIMIT 1) "
                       "AND p.id = '" +
                           rows[10].program_id + "' AND t.workload_key = '" + rows[10].workload_key + "'"),
            "1");
  const pqxx::result m = exec_sql(url_, "SELECT costs, error_no, all_cost, timestamp FROM measurements ORDER BY id");
  ASSERT_EQ(m.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    // Doubles survive exactly: parse the stored array text back.
    std::string text = m[static_cast<int>(i)][0].as<std::string>();
    ASSERT_GE(text.size(), 2u);
    text = text.substr(1, text.size() - 2);
    std::vector<double> costs;
    for (std::size_t pos = 0; pos <= text.size();) {
      const std::size_t comma = std::min(text.find(',', pos), text.size());
      double v = 0;
      std::from_chars(text.data() + pos, text.data() + comma, v);
      costs.push_back(v);
      pos = comma + 1;
    }
    EXPECT_EQ(costs, rows[i].costs) << i;
    EXPECT_EQ(m[static_cast<int>(i)][1].as<int>(), 0);
    EXPECT_EQ(m[static_cast<int>(i)][2].as<double>(), 0.25);
    EXPECT_EQ(m[static_cast<int>(i)][3].as<std::int64_t>(), rows[i].timestamp);
  }
  EXPECT_EQ(pool_->stats().in_use, 0);
}

TEST_F(UploadStoreTest, WriterDestroyedWithoutCommitLeavesNoRows) {
  {
    auto writer = store_->begin(cpu_, UploadKind::kMeasurements);
    ASSERT_TRUE(writer.is_ok()) << writer.status().to_string();
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE((*writer)->add(row(i % 7, i, 1600000000, {0.5})).is_ok());
    EXPECT_EQ(pool_->stats().in_use, 1);
  }
  expect_nothing_stored();
  EXPECT_EQ(pool_->stats().in_use, 0);
  // The connection went back clean: the next upload on it works.
  upload(cpu_, UploadKind::kMeasurements, {row(1, 1, 1, {0.5})}, "", "after");
  EXPECT_EQ(count("measurements"), "1");
}

TEST_F(UploadStoreTest, WriterOfCandidatesDestroyedWithoutCommitLeavesNoRows) {
  {
    auto writer = store_->begin(cpu_, UploadKind::kCandidates);
    ASSERT_TRUE(writer.is_ok());
    ASSERT_TRUE((*writer)->add(row(1, 1, 0, {})).is_ok());
  }
  expect_nothing_stored();
}

// Terminates the backend of the one writer open in this test's database
// (the only connection in a transaction).
void kill_writer_backend(const std::string& url) {
  const pqxx::result r = exec_sql(url,
                                  "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                                  "WHERE datname = current_database() AND pid <> pg_backend_pid() "
                                  "AND xact_start IS NOT NULL");
  ASSERT_EQ(r.size(), 1u);
  ASSERT_TRUE(r[0][0].as<bool>());
}

TEST_F(UploadStoreTest, ConnectionKilledWhileAddingIsUnavailableAndStoresNothing) {
  auto writer = store_->begin(cpu_, UploadKind::kMeasurements);
  ASSERT_TRUE(writer.is_ok());
  for (int i = 0; i < 100; ++i) ASSERT_TRUE((*writer)->add(row(1, i, 1, {0.5})).is_ok());
  kill_writer_backend(url_);
  // Rows are written a slice at a time, so add() notices when one goes out.
  Status failure;
  for (int i = 100; i < 200000 && failure.is_ok(); ++i) failure = (*writer)->add(row(1, i, 1, {0.5}));
  ASSERT_FALSE(failure.is_ok()) << "add() never noticed the dead connection";
  EXPECT_EQ(failure.code(), StatusCode::kUnavailable) << failure.to_string();
  // The writer is dead: commit returns the same error.
  auto done = (*writer)->commit("", body_hash("x"), [](std::int64_t, const UploadCounts&) { return "{}"; });
  ASSERT_FALSE(done.is_ok());
  EXPECT_EQ(done.status().code(), StatusCode::kUnavailable);
  writer->reset();
  expect_nothing_stored();
  EXPECT_EQ(pool_->stats().in_use, 0);
  // The pool dropped the dead connection; the next upload works.
  upload(cpu_, UploadKind::kMeasurements, {row(1, 1, 1, {0.5})}, "", "after");
  EXPECT_EQ(count("measurements"), "1");
}

TEST_F(UploadStoreTest, ConnectionKilledBeforeCommitIsUnavailableAndStoresNothing) {
  for (UploadKind kind : {UploadKind::kMeasurements, UploadKind::kCandidates}) {
    auto writer = store_->begin(cpu_, kind);
    ASSERT_TRUE(writer.is_ok());
    for (int i = 0; i < 10; ++i) ASSERT_TRUE((*writer)->add(row(1, i, 1, {0.5})).is_ok());
    kill_writer_backend(url_);
    auto done = (*writer)->commit("key", body_hash("x"), [](std::int64_t, const UploadCounts&) { return "{}"; });
    ASSERT_FALSE(done.is_ok());
    EXPECT_EQ(done.status().code(), StatusCode::kUnavailable) << done.status().to_string();
    EXPECT_FALSE((*writer)->add(row(1, 1, 1, {0.5})).is_ok());
    writer->reset();
    expect_nothing_stored();
  }
  EXPECT_EQ(pool_->stats().in_use, 0);
}

TEST_F(UploadStoreTest, DuplicatesAreCountedWithinAndAcrossUploads) {
  const UploadRow a = row(1, 1, 1600000000, {0.5, 0.25});
  const UploadRow b = row(1, 2, 1600000000, {0.5});
  UploadRow a_rerun = a;  // the same program measured again: a new run
  a_rerun.timestamp += 60;
  UploadRow a_other_costs = a;
  a_other_costs.costs = {0.5, 0.26};
  UploadRow a_reformatted = a;  // the same run in another record version
  a_reformatted.record = "{\"v\": \"v0.5\"}";

  ReportSpy first;
  upload(cpu_, UploadKind::kMeasurements, {a, b, a, a_rerun, a_other_costs, a_reformatted}, "", "first", &first);
  EXPECT_EQ(first.counts.staged, 6);
  EXPECT_EQ(first.counts.inserted, 4);
  EXPECT_EQ(first.counts.duplicates, 2);
  // The first of equal rows is the one kept.
  std::vector<StoredRecord> got = records(cpu_, UploadKind::kMeasurements);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].record, a.record);
  EXPECT_EQ(got[1].record, b.record);
  EXPECT_EQ(got[2].record, a_rerun.record);
  EXPECT_EQ(got[3].record, a_other_costs.record);

  ReportSpy second;
  UploadRow c = row(2, 3, 1600000000, {0.125});
  upload(cpu_, UploadKind::kMeasurements, {b, c, a}, "", "second", &second);
  EXPECT_EQ(second.counts.staged, 3);
  EXPECT_EQ(second.counts.inserted, 1);
  EXPECT_EQ(second.counts.duplicates, 2);
  EXPECT_EQ(count("measurements"), "5");
  EXPECT_EQ(count("programs"), "3");
  EXPECT_EQ(count("tasks"), "2");
  EXPECT_EQ(count("uploads"), "2");

  // A whole upload of duplicates is still recorded, with its counts.
  ReportSpy third;
  CommittedUpload done = upload(cpu_, UploadKind::kMeasurements, {a, b}, "", "third", &third);
  EXPECT_EQ(third.counts.inserted, 0);
  EXPECT_EQ(third.counts.duplicates, 2);
  EXPECT_EQ(query_text(url_, "SELECT report->>'duplicates' FROM uploads WHERE id = " + std::to_string(done.upload_id)),
            "2");
}

TEST_F(UploadStoreTest, FailedMeasurementsAreStoredAndCounted) {
  const std::vector<UploadRow> rows = {
      row(1, 1, 1, {0.5}),          // ok
      row(1, 2, 1, {0.5}, 4),       // error_no
      row(1, 3, 1, {0.5, 0.0}),     // a zero cost
      row(1, 4, 1, {-1.0}),         // a negative cost
      row(1, 5, 1, {}),             // no costs
      row(1, 6, 1, {1e9}, 0),       // ok
      row(1, 7, 1, {0.5}, 123456),  // an error_no TVM does not know yet
  };
  ReportSpy spy;
  upload(cpu_, UploadKind::kMeasurements, rows, "", "failed", &spy);
  EXPECT_EQ(spy.counts.inserted, 7);
  EXPECT_EQ(spy.counts.failed, 5);
  EXPECT_EQ(query_text(url_, "SELECT string_agg(failed::text, ',' ORDER BY id) FROM measurements"),
            "false,true,true,true,true,false,true");
  EXPECT_EQ(query_text(url_, "SELECT error_no FROM measurements ORDER BY id DESC LIMIT 1"), "123456");
  EXPECT_EQ(records(cpu_, UploadKind::kMeasurements).size(), 7u);
  // Failed duplicates are duplicates, not failures.
  ReportSpy again;
  upload(cpu_, UploadKind::kMeasurements, rows, "", "failed-again", &again);
  EXPECT_EQ(again.counts.inserted, 0);
  EXPECT_EQ(again.counts.failed, 0);
  EXPECT_EQ(again.counts.duplicates, 7);
}

TEST_F(UploadStoreTest, CandidatesDedupPerPlatformAndProgram) {
  UploadRow p1 = row(1, 1, 0, {});
  UploadRow p1_again = p1;
  p1_again.record = "{\"another\": \"line for the same program\"}";
  const UploadRow p2 = row(1, 2, 0, {});

  ReportSpy first;
  upload(cpu_, UploadKind::kCandidates, {p1, p2, p1_again}, "", "c1", &first);
  EXPECT_EQ(first.counts.inserted, 2);
  EXPECT_EQ(first.counts.duplicates, 1);
  EXPECT_EQ(first.counts.failed, 0);
  std::vector<StoredRecord> got = records(cpu_, UploadKind::kCandidates);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].record, p1.record);
  EXPECT_EQ(got[1].record, p2.record);

  ReportSpy second;
  upload(cpu_, UploadKind::kCandidates, {p2, row(1, 3, 0, {})}, "", "c2", &second);
  EXPECT_EQ(second.counts.inserted, 1);
  EXPECT_EQ(second.counts.duplicates, 1);

  // Another platform has its own pool; the programs are shared.
  ReportSpy gpu;
  upload(gpu_, UploadKind::kCandidates, {p1, p2}, "", "c1", &gpu);
  EXPECT_EQ(gpu.counts.inserted, 2);
  EXPECT_EQ(count("candidates"), "5");
  EXPECT_EQ(count("programs"), "3");
  EXPECT_EQ(records(gpu_, UploadKind::kCandidates).size(), 2u);
  // Candidates are not measurements.
  EXPECT_TRUE(records(cpu_, UploadKind::kMeasurements).empty());
  EXPECT_EQ(count("measurements"), "0");
}

TEST_F(UploadStoreTest, SameProgramOnTwoPlatformsIsOneProgram) {
  const UploadRow r = row(1, 1, 1600000000, {0.5});
  upload(cpu_, UploadKind::kMeasurements, {r}, "", "same");
  upload(gpu_, UploadKind::kMeasurements, {r}, "", "same");  // same body, other platform: not a retry
  EXPECT_EQ(count("programs"), "1");
  EXPECT_EQ(count("tasks"), "1");
  EXPECT_EQ(count("measurements"), "2");
  EXPECT_EQ(count("uploads"), "2");
  EXPECT_EQ(records(cpu_, UploadKind::kMeasurements).size(), 1u);
  EXPECT_EQ(records(gpu_, UploadKind::kMeasurements).size(), 1u);
}

TEST_F(UploadStoreTest, IdempotencyByKey) {
  auto none = store_->find_previous(cpu_, UploadKind::kMeasurements, "key-1", body_hash("b1"));
  ASSERT_TRUE(none.is_ok()) << none.status().to_string();
  EXPECT_FALSE(none->has_value());

  const std::vector<UploadRow> rows = {row(1, 1, 1, {0.5}), row(1, 2, 1, {0.5})};
  CommittedUpload first = upload(cpu_, UploadKind::kMeasurements, rows, "key-1", "b1");
  EXPECT_EQ(query_text(url_, "SELECT idempotency_key FROM uploads"), "key-1");

  auto found = store_->find_previous(cpu_, UploadKind::kMeasurements, "key-1", body_hash("b1"));
  ASSERT_TRUE(found.is_ok()) << found.status().to_string();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->upload_id, first.upload_id);
  EXPECT_EQ((*found)->report_json, first.report_json);
  EXPECT_TRUE((*found)->replayed);

  // Before the body is read its hash is unknown: the key alone answers.
  auto by_key_only = store_->find_previous(cpu_, UploadKind::kMeasurements, "key-1", "");
  ASSERT_TRUE(by_key_only.is_ok()) << by_key_only.status().to_string();
  ASSERT_TRUE(by_key_only->has_value());
  EXPECT_EQ((*by_key_only)->upload_id, first.upload_id);
  auto nothing = store_->find_previous(cpu_, UploadKind::kMeasurements, "", "");
  ASSERT_TRUE(nothing.is_ok());
  EXPECT_FALSE(nothing->has_value());

  // A retry that raced past find_previous is answered inside commit().
  ReportSpy spy;
  auto writer = store_->begin(cpu_, UploadKind::kMeasurements);
  ASSERT_TRUE(writer.is_ok());
  ASSERT_TRUE((*writer)->add(rows[0]).is_ok());
  ASSERT_TRUE((*writer)->add(row(9, 9, 9, {0.5})).is_ok());  // would be new
  auto replay = (*writer)->commit("key-1", body_hash("b1"), spy.fn());
  ASSERT_TRUE(replay.is_ok()) << replay.status().to_string();
  EXPECT_TRUE(replay->replayed);
  EXPECT_EQ(replay->upload_id, first.upload_id);
  EXPECT_EQ(replay->report_json, first.report_json);
  EXPECT_EQ(spy.calls, 0);
  EXPECT_FALSE((*writer)->add(rows[0]).is_ok());  // finished
  writer->reset();
  EXPECT_EQ(count("uploads"), "1");
  EXPECT_EQ(count("measurements"), "2");
  EXPECT_EQ(count("programs"), "2");
  EXPECT_EQ(count("tasks"), "1");

  // The key on another platform is another upload.
  CommittedUpload gpu = upload(gpu_, UploadKind::kMeasurements, rows, "key-1", "b1");
  EXPECT_FALSE(gpu.replayed);
  EXPECT_NE(gpu.upload_id, first.upload_id);
}

TEST_F(UploadStoreTest, ReusedKeyWithAnotherBodyOrKindIsFailedPrecondition) {
  upload(cpu_, UploadKind::kMeasurements, {row(1, 1, 1, {0.5})}, "key-1", "b1");

  auto other_body = store_->find_previous(cpu_, UploadKind::kMeasurements, "key-1", body_hash("b2"));
  ASSERT_FALSE(other_body.is_ok());
  EXPECT_EQ(other_body.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(other_body.status().message().find("key-1"), std::string::npos) << other_body.status().message();
  for (const std::string& hash : {body_hash("b1"), std::string()}) {
    auto other_kind = store_->find_previous(cpu_, UploadKind::kCandidates, "key-1", hash);
    ASSERT_FALSE(other_kind.is_ok());
    EXPECT_EQ(other_kind.status().code(), StatusCode::kFailedPrecondition);
  }

  for (UploadKind kind : {UploadKind::kMeasurements, UploadKind::kCandidates}) {
    auto writer = store_->begin(cpu_, kind);
    ASSERT_TRUE(writer.is_ok());
    ASSERT_TRUE((*writer)->add(row(2, 2, 2, {0.5})).is_ok());
    auto done = (*writer)->commit("key-1", body_hash("b2"), [](std::int64_t, const UploadCounts&) { return "{}"; });
    ASSERT_FALSE(done.is_ok());
    EXPECT_EQ(done.status().code(), StatusCode::kFailedPrecondition) << done.status().to_string();
  }
  EXPECT_EQ(count("uploads"), "1");
  EXPECT_EQ(count("programs"), "1");
}

TEST_F(UploadStoreTest, IdempotencyByBodyHashWithoutKey) {
  const std::vector<UploadRow> rows = {row(1, 1, 1, {0.5})};
  CommittedUpload first = upload(cpu_, UploadKind::kMeasurements, rows, "", "body");
  EXPECT_EQ(query_text(url_, "SELECT idempotency_key IS NULL FROM uploads"), "t");
  EXPECT_EQ(query_text(url_, "SELECT body_sha256 FROM uploads"), body_hash("body"));

  auto found = store_->find_previous(cpu_, UploadKind::kMeasurements, "", body_hash("body"));
  ASSERT_TRUE(found.is_ok());
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->upload_id, first.upload_id);
  EXPECT_EQ((*found)->report_json, first.report_json);
  // Same body, other kind or platform: not a retry.
  for (auto [platform, kind] : {std::pair{cpu_, UploadKind::kCandidates}, std::pair{gpu_, UploadKind::kMeasurements}}) {
    auto other = store_->find_previous(platform, kind, "", body_hash("body"));
    ASSERT_TRUE(other.is_ok());
    EXPECT_FALSE(other->has_value());
  }

  CommittedUpload again = upload(cpu_, UploadKind::kMeasurements, rows, "", "body");
  EXPECT_TRUE(again.replayed);
  EXPECT_EQ(again.upload_id, first.upload_id);
  EXPECT_EQ(again.report_json, first.report_json);
  EXPECT_EQ(count("uploads"), "1");

  // With a key, the key decides: the same body under a new key is a new upload.
  CommittedUpload keyed = upload(cpu_, UploadKind::kMeasurements, rows, "new-key", "body");
  EXPECT_FALSE(keyed.replayed);
  EXPECT_EQ(count("uploads"), "2");
}

// Two writers commit the same upload at once. A third connection holds
// uploads locked so that both are inside commit() before either can insert;
// exactly one upload must be stored and the other writer gets its report.
void race_two_commits(const std::string& url, UploadStore& store, std::int64_t platform, const std::string& key) {
  const std::vector<UploadRow> rows = {row(1, 1, 1, {0.5}), row(1, 2, 1, {0.25})};
  std::unique_ptr<UploadWriter> writers[2];
  for (auto& w : writers) {
    auto begun = store.begin(platform, UploadKind::kMeasurements);
    ASSERT_TRUE(begun.is_ok()) << begun.status().to_string();
    w = std::move(*begun);
    for (const UploadRow& r : rows) ASSERT_TRUE(w->add(r).is_ok());
  }

  pqxx::connection blocker_conn(url);
  pqxx::work blocker(blocker_conn);
  blocker.exec0("LOCK TABLE uploads IN EXCLUSIVE MODE");

  std::optional<Result<CommittedUpload>> results[2];
  std::thread threads[2];
  for (int i = 0; i < 2; ++i) {
    threads[i] = std::thread([&, i] {
      ReportSpy spy;
      results[i].emplace(writers[i]->commit(key, body_hash("race"), spy.fn()));
    });
  }
  // Wait until both commits are blocked (one on uploads, one on the other).
  EXPECT_TRUE(eventually([&] { return lock_waiters(url) == "2"; }));
  blocker.commit();
  for (auto& t : threads) t.join();

  ASSERT_TRUE(results[0]->is_ok()) << results[0]->status().to_string();
  ASSERT_TRUE(results[1]->is_ok()) << results[1]->status().to_string();
  const CommittedUpload& a = **results[0];
  const CommittedUpload& b = **results[1];
  EXPECT_NE(a.replayed, b.replayed);
  EXPECT_EQ(a.upload_id, b.upload_id);
  EXPECT_EQ(a.report_json, b.report_json);
  EXPECT_EQ(query_text(url, "SELECT count(*) FROM uploads"), "1");
  EXPECT_EQ(query_text(url, "SELECT count(*) FROM measurements"), "2");
  EXPECT_EQ(query_text(url, "SELECT count(*) FROM programs"), "2");
}

TEST_F(UploadStoreTest, ConcurrentCommitsWithTheSameKeyStoreOnce) {
  race_two_commits(url_, *store_, cpu_, "race-key");
  EXPECT_EQ(query_text(url_, "SELECT idempotency_key FROM uploads"), "race-key");
}

TEST_F(UploadStoreTest, ConcurrentCommitsWithTheSameBodyAndNoKeyStoreOnce) {
  race_two_commits(url_, *store_, cpu_, "");
}

TEST_F(UploadStoreTest, ConcurrentUploadsOfSharedProgramsToTwoPlatforms) {
  // Both commits insert the same new tasks and programs (in opposite add()
  // order); neither may deadlock or fail.
  std::vector<UploadRow> forward;
  for (int i = 0; i < 2000; ++i) forward.push_back(row(i % 50, i, 1, {0.5}));
  std::vector<UploadRow> backward(forward.rbegin(), forward.rend());
  for (int round = 0; round < 3; ++round) {
    exec_sql(url_,
             "DELETE FROM measurements; DELETE FROM candidates; DELETE FROM uploads; DELETE FROM programs; DELETE FROM "
             "tasks");
    std::optional<Result<CommittedUpload>> results[2];
    std::thread a([&] {
      auto w = store_->begin(cpu_, UploadKind::kMeasurements);
      if (!w) return results[0].emplace(w.status()), void();
      for (const auto& r : forward) EXPECT_TRUE((*w)->add(r).is_ok());
      results[0].emplace((*w)->commit("", body_hash("f"), [](std::int64_t, const UploadCounts&) { return "{}"; }));
    });
    std::thread b([&] {
      auto w = store_->begin(gpu_, UploadKind::kMeasurements);
      if (!w) return results[1].emplace(w.status()), void();
      for (const auto& r : backward) EXPECT_TRUE((*w)->add(r).is_ok());
      results[1].emplace((*w)->commit("", body_hash("b"), [](std::int64_t, const UploadCounts&) { return "{}"; }));
    });
    a.join();
    b.join();
    ASSERT_TRUE(results[0]->is_ok()) << results[0]->status().to_string();
    ASSERT_TRUE(results[1]->is_ok()) << results[1]->status().to_string();
    EXPECT_EQ(count("programs"), "2000");
    EXPECT_EQ(count("tasks"), "50");
    EXPECT_EQ(count("measurements"), "4000");
  }
}

TEST_F(UploadStoreTest, ConcurrentCommitsOfBothKindsWithOneKeyStoreOne) {
  // The key is unique per platform whatever the kind; the two kinds do not
  // share the commit lock, so the loser finds the key taken at its INSERT.
  std::unique_ptr<UploadWriter> writers[2];
  const UploadKind kinds[2] = {UploadKind::kMeasurements, UploadKind::kCandidates};
  for (int i = 0; i < 2; ++i) {
    auto begun = store_->begin(cpu_, kinds[i]);
    ASSERT_TRUE(begun.is_ok());
    writers[i] = std::move(*begun);
    ASSERT_TRUE(writers[i]->add(row(1, i, 1, {0.5})).is_ok());
  }
  pqxx::connection blocker_conn(url_);
  pqxx::work blocker(blocker_conn);
  blocker.exec0("LOCK TABLE uploads IN EXCLUSIVE MODE");
  std::optional<Result<CommittedUpload>> results[2];
  std::thread threads[2];
  for (int i = 0; i < 2; ++i) {
    threads[i] = std::thread([&, i] {
      results[i].emplace(
          writers[i]->commit("shared-key", body_hash("b"), [](std::int64_t, const UploadCounts&) { return "{}"; }));
    });
  }
  EXPECT_TRUE(eventually([&] { return lock_waiters(url_) == "2"; }));
  blocker.commit();
  for (auto& t : threads) t.join();
  const int ok = (results[0]->is_ok() ? 1 : 0) + (results[1]->is_ok() ? 1 : 0);
  EXPECT_EQ(ok, 1);
  for (auto& r : results) {
    if (!r->is_ok()) {
      EXPECT_EQ(r->status().code(), StatusCode::kFailedPrecondition) << r->status().to_string();
    }
  }
  for (auto& w : writers) w.reset();
  EXPECT_EQ(count("uploads"), "1");
  EXPECT_EQ(count("programs"), "1");
}

TEST_F(UploadStoreTest, ForEachRecordInSmallBatchesAndEarlyStop) {
  std::vector<UploadRow> rows;
  for (int i = 0; i < 23; ++i) rows.push_back(row(i % 4, i, 1600000000 + i, {0.5}));
  upload(cpu_, UploadKind::kMeasurements, rows, "", "m");
  upload(gpu_, UploadKind::kMeasurements, {row(1, 100, 1, {0.5})}, "", "other platform");
  upload(cpu_, UploadKind::kCandidates, {row(1, 200, 0, {})}, "", "candidate");

  for (int batch : {1, 3, 5, 23, 100}) {
    std::vector<StoredRecord> got = records(cpu_, UploadKind::kMeasurements, batch);
    ASSERT_EQ(got.size(), rows.size()) << batch;
    for (std::size_t i = 0; i < rows.size(); ++i) EXPECT_EQ(got[i].record, rows[i].record) << batch << " " << i;
  }

  int calls = 0;
  Status s = store_->for_each_record(
      cpu_, UploadKind::kMeasurements,
      [&](const StoredRecord& r) {
        EXPECT_EQ(r.record, rows[static_cast<std::size_t>(calls)].record);
        return ++calls < 7;
      },
      3);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_EQ(calls, 7);
  EXPECT_EQ(pool_->stats().in_use, 0);

  Status bad = store_->for_each_record(
      cpu_, UploadKind::kMeasurements, [](const StoredRecord&) { return true; }, 0);
  EXPECT_EQ(bad.code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(records(12345, UploadKind::kMeasurements).empty());  // unknown platform: nothing, OK
  std::vector<StoredRecord> candidates = records(cpu_, UploadKind::kCandidates, 1);
  ASSERT_EQ(candidates.size(), 1u);
  EXPECT_EQ(candidates[0].program_id, row(1, 200, 0, {}).program_id);
}

TEST_F(UploadStoreTest, CommitTwiceOrAddAfterCommitIsFailedPrecondition) {
  auto writer = store_->begin(cpu_, UploadKind::kMeasurements);
  ASSERT_TRUE(writer.is_ok());
  ASSERT_TRUE((*writer)->add(row(1, 1, 1, {0.5})).is_ok());
  auto make = [](std::int64_t, const UploadCounts&) { return std::string("{}"); };
  ASSERT_TRUE((*writer)->commit("", body_hash("x"), make).is_ok());
  EXPECT_EQ((*writer)->add(row(1, 2, 1, {0.5})).code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ((*writer)->commit("", body_hash("y"), make).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(pool_->stats().in_use, 1);  // until the writer dies
  writer->reset();
  EXPECT_EQ(pool_->stats().in_use, 0);
  EXPECT_EQ(count("measurements"), "1");
}

TEST_F(UploadStoreTest, EmptyUploadIsRecorded) {
  ReportSpy spy;
  CommittedUpload done = upload(cpu_, UploadKind::kMeasurements, {}, "", "empty", &spy);
  EXPECT_GT(done.upload_id, 0);
  EXPECT_EQ(spy.counts.staged, 0);
  EXPECT_EQ(spy.counts.inserted, 0);
  EXPECT_EQ(count("uploads"), "1");
}

TEST_F(UploadStoreTest, RowTheCallerFailedToValidateFailsTheWholeUpload) {
  UploadRow bad = row(1, 2, 1, {0.5});
  bad.program_id = "not-hex";
  auto writer = store_->begin(cpu_, UploadKind::kMeasurements);
  ASSERT_TRUE(writer.is_ok());
  ASSERT_TRUE((*writer)->add(row(1, 1, 1, {0.5})).is_ok());
  ASSERT_TRUE((*writer)->add(bad).is_ok());
  auto done = (*writer)->commit("", body_hash("bad"), [](std::int64_t, const UploadCounts&) { return "{}"; });
  ASSERT_FALSE(done.is_ok());
  EXPECT_EQ(done.status().code(), StatusCode::kInvalidArgument) << done.status().to_string();
  writer->reset();
  expect_nothing_stored();

  // Bytes that are not UTF-8 are refused by the server (at a later add() or
  // at commit()).
  {
    UploadRow latin1 = row(1, 3, 1, {0.5});
    latin1.record = "{\"name\": \"caf\xe9\"}";
    auto w = store_->begin(cpu_, UploadKind::kMeasurements);
    ASSERT_TRUE(w.is_ok());
    Status s = (*w)->add(latin1);
    for (int i = 0; i < 20000 && s.is_ok(); ++i) s = (*w)->add(row(1, 4 + i, 1, {0.5}));
    Status end = s;
    if (s.is_ok()) {
      end = (*w)->commit("", body_hash("latin1"), [](std::int64_t, const UploadCounts&) { return "{}"; }).status();
    }
    ASSERT_FALSE(end.is_ok());
    EXPECT_TRUE(end.code() == StatusCode::kInvalidArgument || end.code() == StatusCode::kInternal) << end.to_string();
    w->reset();
    expect_nothing_stored();
  }

  // A report that is not JSON is a caller bug too, and stores nothing.
  auto w2 = store_->begin(cpu_, UploadKind::kMeasurements);
  ASSERT_TRUE(w2.is_ok());
  ASSERT_TRUE((*w2)->add(row(1, 1, 1, {0.5})).is_ok());
  auto done2 = (*w2)->commit("", body_hash("bad"), [](std::int64_t, const UploadCounts&) { return "not json"; });
  ASSERT_FALSE(done2.is_ok());
  EXPECT_EQ(done2.status().code(), StatusCode::kInvalidArgument);
  w2->reset();
  expect_nothing_stored();
}

// --- Slices, the upload lock, and integrity without foreign keys ------------
//
// A writer writes rows a slice (a few thousand rows) at a time; the uploads
// below are large enough for several slices.

constexpr int kManyRows = 9000;

// Every stored row has its platform, program and upload, and every program
// its task: the bulk tables have no foreign keys (migrations/0004), so this
// is UploadStore's job. And every program has a row (its steps are only in
// the record lines).
void expect_no_orphans(const std::string& url) {
  for (const char* sql : {
           "SELECT count(*) FROM measurements m WHERE NOT EXISTS (SELECT FROM programs p WHERE p.id = m.program_id)",
           "SELECT count(*) FROM measurements m WHERE NOT EXISTS (SELECT FROM uploads u WHERE u.id = m.upload_id "
           "AND u.platform_id = m.platform_id AND u.kind = 'measurements')",
           "SELECT count(*) FROM measurements m WHERE NOT EXISTS (SELECT FROM platforms p WHERE p.id = m.platform_id)",
           "SELECT count(*) FROM candidates c WHERE NOT EXISTS (SELECT FROM programs p WHERE p.id = c.program_id)",
           "SELECT count(*) FROM candidates c WHERE NOT EXISTS (SELECT FROM uploads u WHERE u.id = c.upload_id "
           "AND u.platform_id = c.platform_id AND u.kind = 'candidates')",
           "SELECT count(*) FROM candidates c WHERE NOT EXISTS (SELECT FROM platforms p WHERE p.id = c.platform_id)",
           "SELECT count(*) FROM programs p WHERE NOT EXISTS (SELECT FROM tasks t WHERE t.id = p.task_id)",
           "SELECT count(*) FROM programs p WHERE NOT EXISTS (SELECT FROM measurements m WHERE m.program_id = p.id) "
           "AND NOT EXISTS (SELECT FROM candidates c WHERE c.program_id = p.id)",
       }) {
    EXPECT_EQ(query_text(url, sql), "0") << sql;
  }
}

// Upload locks (two-key advisory locks) in this test's database, granted
// or waiting.
std::string upload_locks(const std::string& url, bool granted) {
  return query_text(url, std::string("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 "
                                     "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
                                     "AND ") +
                             (granted ? "granted" : "NOT granted"));
}

// Rows [first, last) of a long upload: 13 tasks; program i measured at
// timestamp 1600000000 + i, with the row of every 10th program repeated
// right after it (a repeat within the upload).
std::vector<UploadRow> many_rows(int first, int last) {
  std::vector<UploadRow> rows;
  for (int i = first; i < last; ++i) {
    rows.push_back(row(i % 13, i, 1600000000 + i, {1e-5 * (i % 97 + 1), 2e-5}, i % 31 == 0 ? 7 : 0));
    if (i % 10 == 0) rows.push_back(rows.back());
  }
  return rows;
}

// The records of `rows` without repeats, first one kept.
std::vector<std::string> unique_records(const std::vector<UploadRow>& rows) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const UploadRow& r : rows) {
    if (seen.insert(r.record).second) out.push_back(r.record);
  }
  return out;
}

TEST_F(UploadStoreTest, LongUploadIsStoredInOrderWithRepeatsDropped) {
  const std::vector<UploadRow> rows = many_rows(0, kManyRows);
  ReportSpy spy;
  upload(cpu_, UploadKind::kMeasurements, rows, "", "long", &spy);
  const std::vector<std::string> expected = unique_records(rows);
  EXPECT_EQ(spy.counts.staged, static_cast<std::int64_t>(rows.size()));
  EXPECT_EQ(spy.counts.inserted, kManyRows);
  EXPECT_EQ(spy.counts.duplicates, static_cast<std::int64_t>(rows.size()) - kManyRows);
  EXPECT_EQ(spy.counts.failed, (kManyRows + 30) / 31);
  EXPECT_EQ(query_text(url_, "SELECT count(*) FROM measurements WHERE failed"), std::to_string(spy.counts.failed));
  std::vector<StoredRecord> got = records(cpu_, UploadKind::kMeasurements);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].record, expected[i]) << i;
  EXPECT_EQ(count("programs"), std::to_string(kManyRows));
  EXPECT_EQ(count("tasks"), "13");
  expect_no_orphans(url_);
}

TEST_F(UploadStoreTest, RowsStoredBeforeAreFoundInEverySlice) {
  // The second upload overlaps the first by 3000 rows (its first slice is
  // partly stored, so the optimistic COPY is rolled back and the rows are
  // looked up), then has only new rows; the third has none.
  ReportSpy first, second, third;
  upload(cpu_, UploadKind::kMeasurements, many_rows(0, 6000), "", "a", &first);
  const std::vector<UploadRow> overlap = many_rows(3000, 3000 + kManyRows);
  upload(cpu_, UploadKind::kMeasurements, overlap, "", "b", &second);
  EXPECT_EQ(first.counts.inserted, 6000);
  EXPECT_EQ(second.counts.inserted, kManyRows - 3000);
  EXPECT_EQ(second.counts.duplicates, static_cast<std::int64_t>(overlap.size()) - (kManyRows - 3000));
  std::int64_t failed_new = 0;
  for (int i = 6000; i < 3000 + kManyRows; ++i) failed_new += i % 31 == 0 ? 1 : 0;
  EXPECT_EQ(second.counts.failed, failed_new);
  upload(cpu_, UploadKind::kMeasurements, many_rows(0, 3000 + kManyRows), "", "c", &third);
  EXPECT_EQ(third.counts.inserted, 0);

  // Stored in order: the first upload's rows, then the second's new ones.
  std::vector<UploadRow> all = many_rows(0, 6000);
  for (int i = 6000; i < 3000 + kManyRows; ++i)
    all.push_back(row(i % 13, i, 1600000000 + i, {1e-5 * (i % 97 + 1), 2e-5}, i % 31 == 0 ? 7 : 0));
  const std::vector<std::string> expected = unique_records(all);
  std::vector<StoredRecord> got = records(cpu_, UploadKind::kMeasurements);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].record, expected[i]) << i;

  // The same programs on the other platform: programs known, rows new.
  ReportSpy gpu;
  upload(gpu_, UploadKind::kMeasurements, overlap, "", "b", &gpu);
  EXPECT_EQ(gpu.counts.inserted, kManyRows);
  EXPECT_EQ(count("programs"), std::to_string(3000 + kManyRows));

  // Candidates: a program is in a pool once.
  ReportSpy c1, c2;
  upload(cpu_, UploadKind::kCandidates, many_rows(0, 5000), "", "c1", &c1);
  upload(cpu_, UploadKind::kCandidates, many_rows(2000, 12000), "", "c2", &c2);
  EXPECT_EQ(c1.counts.inserted, 5000);
  EXPECT_EQ(c2.counts.inserted, 12000 - 5000);
  EXPECT_EQ(count("candidates"), "12000");
  EXPECT_EQ(count("programs"), std::to_string(3000 + kManyRows));
  expect_no_orphans(url_);
}

TEST_F(UploadStoreTest, DedupKeyIsTheSqlFunctionOfProgramTimestampAndCosts) {
  std::vector<UploadRow> rows = {
      row(1, 1, 1600000000, {0.5, 0.25}),
      row(1, 2, -5, {1e-300, 1e300, 0.1 + 0.2, 5e-324}),
      row(1, 3, 0, {}),
      row(1, 4, 1600000000, std::vector<double>(40, 3.25e-5)),
      row(1, 5, 1600000000, {0.0}),
  };
  UploadRow negative_zero = rows[4];  // -0 and 0 are one cost, as they compared before
  negative_zero.costs = {-0.0};
  negative_zero.record += " ";
  rows.push_back(negative_zero);
  ReportSpy spy;
  upload(cpu_, UploadKind::kMeasurements, rows, "", "keys", &spy);
  EXPECT_EQ(spy.counts.inserted, 5);
  EXPECT_EQ(query_text(url_,
                       "SELECT count(*) FROM measurements "
                       "WHERE dedup_key = tcl_measurement_dedup_key(platform_id, program_id, timestamp, costs)"),
            "5");
}

TEST_F(UploadStoreTest, UploadWaitingForTheLockIsStagedAndMovedAtCommit) {
  // Another commit holds the upload lock (the test's, here). Writers A and
  // B (the other platform, sharing some programs and tasks with A) stream
  // into their staging tables; their commits wait for the lock, then move
  // their rows one after the other.
  UploadLockHolder committing(url_);
  auto a = store_->begin(cpu_, UploadKind::kMeasurements);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  for (const UploadRow& r : many_rows(0, 5000)) ASSERT_TRUE((*a)->add(r).is_ok());
  ReportSpy a_spy;
  std::optional<Result<CommittedUpload>> a_done;
  std::thread a_commit([&] { a_done.emplace((*a)->commit("", body_hash("a"), a_spy.fn())); });
  EXPECT_TRUE(eventually([&] { return upload_locks(url_, false) == "1"; }))
      << "writer A's commit did not wait for the lock";

  std::vector<UploadRow> b_rows = many_rows(2000, 2000 + kManyRows);
  b_rows.push_back(b_rows.front());  // a repeat across slices
  auto b = store_->begin(gpu_, UploadKind::kMeasurements);
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  for (const UploadRow& r : b_rows) ASSERT_TRUE((*b)->add(r).is_ok());
  ReportSpy b_spy;
  std::optional<Result<CommittedUpload>> b_done;
  std::thread b_commit([&] { b_done.emplace((*b)->commit("", body_hash("b"), b_spy.fn())); });
  EXPECT_TRUE(eventually([&] { return upload_locks(url_, false) == "2"; }))
      << "writer B's commit did not wait for the lock";
  EXPECT_EQ(count("measurements"), "0");  // nothing committed yet
  committing.release();
  a_commit.join();
  b_commit.join();
  ASSERT_TRUE(a_done->is_ok()) << a_done->status().to_string();
  ASSERT_TRUE(b_done->is_ok()) << b_done->status().to_string();

  EXPECT_EQ(a_spy.counts.inserted, 5000);
  EXPECT_EQ(b_spy.counts.inserted, kManyRows);
  EXPECT_EQ(b_spy.counts.duplicates, static_cast<std::int64_t>(b_rows.size()) - kManyRows);
  std::int64_t b_failed = 0;
  for (int i = 2000; i < 2000 + kManyRows; ++i) b_failed += i % 31 == 0 ? 1 : 0;
  EXPECT_EQ(b_spy.counts.failed, b_failed);
  const std::vector<std::string> expected = unique_records(b_rows);
  std::vector<StoredRecord> got = records(gpu_, UploadKind::kMeasurements);
  ASSERT_EQ(got.size(), expected.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].record, expected[i]) << i;
  EXPECT_EQ(count("programs"), std::to_string(2000 + kManyRows));
  EXPECT_EQ(count("tasks"), "13");
  EXPECT_EQ(query_text(url_,
                       "SELECT count(*) FROM measurements "
                       "WHERE dedup_key <> tcl_measurement_dedup_key(platform_id, program_id, timestamp, costs)"),
            "0");
  expect_no_orphans(url_);
}

// Issue 45, finding 5: a writer that has streamed slices (a slow client's
// upload, left open) holds no upload lock, so another platform's upload
// commits meanwhile. Before, the first slice took the lock and held it to
// the writer's commit: B's commit waited for A's whole life.
TEST_F(UploadStoreTest, AnOpenUploadDoesNotHoldUpAnotherUploadsCommit) {
  auto a = store_->begin(cpu_, UploadKind::kMeasurements);
  ASSERT_TRUE(a.is_ok()) << a.status().to_string();
  for (const UploadRow& r : many_rows(0, 5000)) ASSERT_TRUE((*a)->add(r).is_ok());
  // A's slices reach the database (its connection goes idle in its transaction).
  ASSERT_TRUE(eventually(
      [&] {
        return query_text(url_,
                          "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                          "AND state = 'idle in transaction'") == "1";
      },
      1000))
      << "writer A's slices never reached the database";
  EXPECT_EQ(upload_locks(url_, true), "0");

  std::atomic<bool> b_finished{false};
  std::optional<Result<CommittedUpload>> b_done;
  std::thread b_commit([&] {
    auto b = store_->begin(gpu_, UploadKind::kMeasurements);
    if (!b) {
      b_done.emplace(b.status());
    } else {
      for (const UploadRow& r : many_rows(0, 10)) (void)(*b)->add(r);
      ReportSpy spy;
      b_done.emplace((*b)->commit("", body_hash("b"), spy.fn()));
    }
    b_finished = true;
  });
  EXPECT_TRUE(eventually([&] { return b_finished.load(); }, 1000))
      << "B's commit waited for A, which is still streaming";
  ReportSpy a_spy;
  auto a_done = (*a)->commit("", body_hash("a"), a_spy.fn());  // unblocks B when the lock was A's
  b_commit.join();
  ASSERT_TRUE(a_done.is_ok()) << a_done.status().to_string();
  ASSERT_TRUE(b_done->is_ok()) << b_done->status().to_string();
  EXPECT_EQ(a_spy.counts.inserted, 5000);
  EXPECT_EQ(count("measurements"), "5010");
  expect_no_orphans(url_);
}

TEST_F(UploadStoreTest, NoOrphanRowsWhateverHappensToAnUpload) {
  // Committed, abandoned after slices were written, failed in a late slice,
  // replayed: only committed uploads leave rows, and those are complete.
  upload(cpu_, UploadKind::kMeasurements, many_rows(0, 5000), "k1", "committed");
  {
    auto w = store_->begin(cpu_, UploadKind::kMeasurements);
    ASSERT_TRUE(w.is_ok());
    for (const UploadRow& r : many_rows(4000, 4000 + kManyRows)) ASSERT_TRUE((*w)->add(r).is_ok());
    std::this_thread::sleep_for(200ms);  // slices are in the tables, uncommitted
  }
  {
    auto w = store_->begin(gpu_, UploadKind::kMeasurements);
    ASSERT_TRUE(w.is_ok());
    std::vector<UploadRow> rows = many_rows(20000, 20000 + kManyRows);
    rows.push_back(row(99, 99999, 1, {0.5}));
    rows.back().workload_key = std::string(3000, 'x');  // a new task over tasks' limit, in the last slice
    Status s;
    for (const UploadRow& r : rows) {
      if (s = (*w)->add(r); !s) break;
    }
    if (s.is_ok())
      s = (*w)->commit("", body_hash("bad"), [](std::int64_t, const UploadCounts&) { return "{}"; }).status();
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
  }
  CommittedUpload replay = upload(cpu_, UploadKind::kMeasurements, many_rows(0, 5000), "k1", "committed");
  EXPECT_TRUE(replay.replayed);
  upload(gpu_, UploadKind::kCandidates, many_rows(0, 7000), "", "candidates");
  EXPECT_EQ(count("uploads"), "2");
  EXPECT_EQ(count("measurements"), "5000");
  EXPECT_EQ(count("candidates"), "7000");
  EXPECT_EQ(count("programs"), "7000");
  expect_no_orphans(url_);
  EXPECT_EQ(pool_->stats().in_use, 0);
}

TEST_F(UploadStoreTest, DatabaseDownIsUnavailable) {
  testing::ClusterRestartGuard guard;
  tcl::testing::PgCluster::shared().stop();
  auto writer = store_->begin(cpu_, UploadKind::kMeasurements);
  ASSERT_FALSE(writer.is_ok());
  EXPECT_EQ(writer.status().code(), StatusCode::kUnavailable) << writer.status().to_string();
  auto found = store_->find_previous(cpu_, UploadKind::kMeasurements, "", body_hash("x"));
  EXPECT_EQ(found.status().code(), StatusCode::kUnavailable);
  Status s = store_->for_each_record(cpu_, UploadKind::kMeasurements, [](const StoredRecord&) { return true; });
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  tcl::testing::PgCluster::shared().start();
  // The pool heals: begin() replaces the dead idle connections.
  upload(cpu_, UploadKind::kMeasurements, {row(1, 1, 1, {0.5})}, "", "after restart");
  EXPECT_EQ(count("measurements"), "1");
}

}  // namespace
}  // namespace tcl::registry
