// onboarding/record_source.h — what the job workflows (jobs.h) read: a
// platform's facts and measured share, its unmeasured pool, the old
// platforms' programs, the records the promotion gate judges on, and the
// lineage's versions. tcld reads them from the registry
// (registry_source.h); a bench implements the same calls over its files.
//
// The read policies are the workflow's, not the source's: how large a share
// to keep (share_to_keep) and which programs fall in it (in_share) are
// decided here, and a source applies them as it streams.
//
// Not thread-safe unless an implementation says so; one job reads through
// one source at a time. Torch- and SQL-free.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "core/record.h"
#include "core/status.h"
#include "trainer/train_job.h"

namespace tcl::onboarding {

class JudgedRecords;  // distill.h

// A platform as a job sees it: its hardware and how many records it holds.
struct SourcePlatform {
  std::int64_t id = 0;  // the source's key for it (the registry's platform id)
  std::string name;
  trainer::Platform platform;   // what its model is conditioned on
  std::int64_t measured = 0;    // measurements (failed ones apart)
  std::int64_t failed = 0;      // failed measurements
  std::int64_t candidates = 0;  // candidates uploaded
};

// A stored version of the lineage (its weights apart: weights()).
struct SourceVersion {
  std::int64_t version = 0;
  std::optional<std::int64_t> parent;
  std::vector<std::string> platforms;  // in onboarding order
};

// The share of a stream to keep when `wanted` records of a `kept_fraction`
// are asked of `stored` (records take ~5-8 KB each in memory, so a platform
// far larger than a job trains on is not held whole): 1.25 · wanted /
// kept_fraction / stored, at most 1; 1 (everything) when `wanted` or
// `stored` is 0.
double share_to_keep(double wanted, std::int64_t stored, double kept_fraction = 1.0);

// Whether a program falls in a deterministic share `keep` of all programs
// (by the first 32 bits of its id: the same programs at every read).
bool in_share(std::string_view program_id, double keep);

class RecordSource {
 public:
  virtual ~RecordSource() = default;

  // The platform `name`: kNotFound when unknown.
  virtual Result<SourcePlatform> platform(const std::string& name) = 0;
  // Like platform() where only its hardware is read (the counts may be 0).
  virtual Result<SourcePlatform> find_platform(const std::string& name) = 0;

  // The platform's measurements (failed ones too) whose program falls in
  // in_share(·, keep), parsed; a record that does not parse is left out.
  // `program_ids`, when given, receives the program id of every record returned.
  virtual Result<std::vector<core::Record>> measured_share(const SourcePlatform& platform, double keep,
                                                           std::unordered_set<std::string>* program_ids) = 0;
  // The platform's candidates in in_share(·, keep) whose program is not in
  // `measured` (the distill's inputs without labels).
  virtual Result<std::vector<core::Record>> unmeasured_pool(const SourcePlatform& platform,
                                                            const std::unordered_set<std::string>& measured,
                                                            double keep) = 0;
  // The programs of `platform` in in_share(·, keep): its measurements and
  // candidates, each program once, failed measurements left out, every
  // measurement dropped (costs cleared): nothing old is trained on.
  virtual Result<std::vector<core::Record>> old_programs(const SourcePlatform& platform, double keep) = 0;
  // Every measurement of the platform handed to `judged` (JudgedRecords:
  // it keeps what the gate judges on), with its program id.
  virtual Status judged_records(const SourcePlatform& platform, JudgedRecords* judged) = 0;

  // The version an alias or number names; the store's error when none.
  virtual Result<std::int64_t> resolve(const std::string& alias_or_version) = 0;
  // The version alias `name` points at; kNotFound when it points nowhere.
  virtual Result<std::int64_t> alias(const std::string& name) = 0;
  virtual Result<SourceVersion> version(std::int64_t version) = 0;
  virtual Result<std::string> weights(std::int64_t version) = 0;  // its checkpoint bytes
  virtual Result<std::string> fisher(std::int64_t version) = 0;   // kNotFound: none stored
};

}  // namespace tcl::onboarding
