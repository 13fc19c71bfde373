// registry/model_store.h — the student lineage and its aliases (tables
// model_versions, aliases, alias_history).
//
// A version is written once, complete: create_version() inserts the row with
// its weights (and Fisher) in one INSERT, in one transaction with anything
// else it does, so no reader ever sees a version without its bytes. The
// weights' SHA-256 is computed here (core/sha256.h) and checked again by the
// database (CHECK constraint in 0001), and weights()/fisher() check it a third
// time on the way out: bytes that do not match are kDataLoss, never returned.
// Versions are numbered by the database in creation order; a failed create
// may leave a gap in the numbers.
//
// Aliases are named pointers into the lineage ("production" is what predict
// uses). Every move is recorded in alias_history in the same transaction
// (from, to, who, why, when); rolling back is moving the alias back, which is
// a new history row. The database NOTIFYs every move on kAliasChannel
// (registry/alias_listener.h) so that every replica reloads.
//
// Thread-safe (every call takes its own pool connection). Does not own
// `pool`; it must outlive the store.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "registry/pg_pool.h"

namespace tcl::registry {

// The alias predict uses when no model is named (DESIGN §8).
inline constexpr std::string_view kProductionAlias = "production";

// The promotion gate's verdict. Stored as text (model_versions.status): names
// never change. Which version serves traffic is decided by aliases only.
enum class VersionStatus { kCandidate, kPromoted, kRejected };
std::string_view version_status_name(VersionStatus s);  // "candidate" | "promoted" | "rejected"
std::optional<VersionStatus> parse_version_status(std::string_view s);

// [a-z0-9][a-z0-9._-]{0,63}, as the schema requires.
bool is_valid_alias_name(std::string_view name);

struct NewVersion {
  std::optional<std::int64_t> parent;        // the teacher (v(k-1)); nullopt for a root
  std::vector<std::string> platforms;        // names of registered platforms, in onboarding order; at least one
  std::string config_json = "{}";            // training config (architecture, losses, seeds); any JSON
  std::string metrics_json = "{}";           // per-platform evaluation; any JSON
  std::string training_summary_json = "{}";  // what the run reports (epochs, losses, wall time); any JSON
  std::string weights;                       // serialized weights; not empty
  std::optional<std::string> fisher;         // EWC diagonal Fisher, if computed
  VersionStatus status = VersionStatus::kCandidate;
};

// An alias pointed at a new version in create_version's transaction.
struct AliasUpdate {
  std::string alias;   // a valid alias name
  std::string actor;   // who, for alias_history (1..256 bytes)
  std::string reason;  // why, for alias_history
};

// The training job (registry/job_queue.h) whose result a version is.
struct JobOwner {
  std::int64_t job_id = 0;
  std::string worker;  // the worker that holds the job (JobQueue::claim)
};

struct CreateVersionOptions {
  // Point `production` at the new version when no production alias exists
  // yet (the first version of a deployment), with a history row by `actor`.
  // Done in the same transaction: two concurrent creators cannot both win.
  bool make_production_if_unset = false;
  std::string actor = "tcld";
  std::string reason = "first version";
  // When make_production_if_unset took effect and this is not empty: the
  // version is stored as promoted with these status reasons (any JSON).
  std::string first_version_reasons_json{};
  // The promotion gate's reasons for NewVersion::status (any JSON; "" = none,
  // status_changed_at stays unset).
  std::string status_reasons_json{};
  // Moved to the new version, in order, each with its history row and NOTIFY.
  std::vector<AliasUpdate> aliases{};
  // The job this version ends: it is finished as succeeded with the version
  // in the same transaction, so a crash leaves all of it or none (issue 45
  // #9: never a version without its job's finish, then a second version from
  // the retried job).
  std::optional<JobOwner> job{};
};

// A version without its bytes.
struct VersionInfo {
  std::int64_t version = 0;
  std::optional<std::int64_t> parent;
  std::vector<std::string> platforms;
  std::string config_json;  // JSON texts as jsonb renders them
  std::string metrics_json;
  std::string training_summary_json;
  std::string weights_sha256;  // 64 lower-case hex
  std::int64_t weights_size = 0;
  std::optional<std::string> fisher_sha256;  // nullopt: no Fisher stored
  std::int64_t fisher_size = 0;
  VersionStatus status = VersionStatus::kCandidate;
  std::string status_reasons_json;   // "{}" until set_status()
  std::string status_changed_at;     // ISO-8601 UTC; "" until set_status()
  std::string created_at;            // ISO-8601 UTC
  std::vector<std::string> aliases;  // names pointing at this version, sorted
  // lineage_summary only: the platform the version's job trained (the first whose standing split
  // says held_out); "" when none, and always "" from the other reads.
  std::string trained_on;
};

// What ModelStore::lineage_summary reads of each version's larger JSON texts; a part left out comes
// back as "{}".
struct SummaryParts {
  bool metrics = true;
  bool status_reasons = true;
  std::vector<std::string> metrics_for;  // metrics of these platforms only; empty: every platform's
};

// Bytes read back, with the checksum they were verified against.
struct Blob {
  std::string bytes;
  std::string sha256;  // 64 lower-case hex
};

struct Alias {
  std::string name;
  std::int64_t version = 0;
  std::string updated_at;  // ISO-8601 UTC
};

// One row of alias_history.
struct AliasMove {
  std::int64_t id = 0;  // increasing: history order
  std::string alias;
  std::optional<std::int64_t> from_version;  // nullopt: the move that created the alias
  std::int64_t to_version = 0;
  std::string actor;  // who (token name)
  std::string reason;
  std::string moved_at;  // ISO-8601 UTC
};

struct SetAliasResult {
  Alias alias;                    // the alias after the call
  bool changed = false;           // false: it already pointed there; nothing recorded, no NOTIFY
  std::optional<AliasMove> move;  // the history row written now (when changed)
};

class ModelStore {
 public:
  explicit ModelStore(PgPool& pool) : pool_(pool) {}

  // Stores a complete version (see top) with its status, its reasons and the
  // alias moves of `options`, all in one transaction. OK: the stored version,
  // with `aliases` (["production"] when make_production_if_unset took
  // effect). kInvalidArgument: no weights, no or repeated platforms, a JSON
  // text that does not parse, an invalid actor or alias name. kNotFound: the
  // parent, a platform or options.job does not exist. kUnavailable: the
  // database is down (nothing stored, or — when the COMMIT's outcome is
  // unknown — maybe everything; with options.job, calling again tells).
  //
  // With options.job: kFailedPrecondition (nothing stored) when the job is
  // not running under that worker, kCancelled (nothing stored) when a cancel
  // was requested or recorded (a heartbeat saw it): the worker then finishes
  // the job with JobQueue::finish(), which records the cancel.
  // A repeat for a job that already succeeded under that worker (a retry
  // after an unknown COMMIT outcome) stores nothing and returns the version
  // the first call stored.
  Result<VersionInfo> create_version(const NewVersion& v, const CreateVersionOptions& options = {});

  // Metadata only (no bytes). kNotFound: no such version.
  Result<VersionInfo> get(std::int64_t version);

  // The weights, verified against the stored SHA-256. kDataLoss: the bytes do
  // not match (corrupted storage); kNotFound: no such version.
  Result<Blob> weights(std::int64_t version);
  // Likewise for the Fisher information. kNotFound also when the version has
  // none.
  Result<Blob> fisher(std::int64_t version);

  // Every version, oldest first, with parent links and aliases.
  Result<std::vector<VersionInfo>> lineage();
  // The same, lighter (what a view of a long lineage needs; the web console's): metrics_json keeps
  // per platform only its standing split (`{"<p>": {"standing_split": {...}}}`; a platform without
  // one keeps its figures; `versus_parent` left out), config_json only kind, model, init and the
  // distill's method and adapter_rank, training_summary_json "{}"; trained_on is set; `parts`
  // leaves out metrics or status reasons. The projection runs in the database, so the full texts
  // never leave it.
  Result<std::vector<VersionInfo>> lineage_summary(const SummaryParts& parts = {});

  // Records the promotion gate's verdict and why (`reasons_json`, any JSON;
  // "" means {}). kNotFound: no such version. kInvalidArgument: bad JSON.
  Status set_status(std::int64_t version, VersionStatus status, std::string_view reasons_json);

  // "production" / "7" → the version number: all digits name a version
  // (which must exist), anything else an alias. kNotFound otherwise.
  Result<std::int64_t> resolve(std::string_view alias_or_version);

  // kNotFound: no such alias.
  Result<Alias> get_alias(std::string_view name);
  // Every alias, by name (the current-version-per-alias gauge, reloads).
  Result<std::vector<Alias>> list_aliases();

  // Points alias `name` at `version` (creating the alias if needed) and
  // records the move by `actor` (not empty) with `reason` in alias_history,
  // in one transaction; the database NOTIFYs it. Concurrent moves of one
  // alias are serialized (row lock), so history has no lost updates.
  // kInvalidArgument: bad alias name or empty actor. kNotFound: no such
  // version.
  Result<SetAliasResult> set_alias(std::string_view name, std::int64_t version, std::string_view actor,
                                   std::string_view reason);

  // Every move of the alias, oldest first. kNotFound: no such alias.
  Result<std::vector<AliasMove>> alias_history(std::string_view name);

 private:
  Result<Blob> read_blob(std::int64_t version, bool fisher);
  PgPool& pool_;
};

}  // namespace tcl::registry
