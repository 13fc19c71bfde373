// api/model_cache.h — the model versions POST /v1/predict answers from, kept
// in memory, and the alias → version map that picks one.
//
// A version is loaded once: its weights are read through ModelStore::weights
// (SHA-256 checked there: a mismatch is kDataLoss, never a silent use),
// turned into a trainer::CostModel, and for a Mamba student also snapshotted
// into the fast path (trainer::StudentInference). Requests hold a
// shared_ptr, so a version that is evicted or replaced stays alive until the
// last request using it returns.
//
// Aliases are read from the database by resync() (at start and whenever the
// owner's AliasListener reconnects) and kept current by on_alias_change()
// (NOTIFY tcl_alias_changed), so resolving an alias costs no query. A moved
// alias switches only after its new version has loaded: a request sees the
// old model or the new one, never a missing one. An alias the map does not
// know yet (a NOTIFY still in flight) is looked up in the database once.
//
// At most `max_versions` versions stay loaded; the least recently used one
// that no alias points at is dropped first.
//
// Thread-safety: every method may be called from any thread; loading runs
// outside the lock (two requests may load the same version at once; one
// copy wins). Does not own `store`; it must outlive the cache.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/mutex.h"
#include "core/status.h"
#include "registry/alias_listener.h"
#include "registry/model_store.h"
#include "trainer/cost_model.h"
#include "trainer/fast_inference.h"

namespace tcl::api {

struct LoadedModel {
  std::int64_t version = 0;
  std::vector<std::string> platforms;  // the platforms the version was trained on
  std::string weights_sha256;
  std::unique_ptr<trainer::CostModel> model;        // always set
  std::unique_ptr<trainer::StudentInference> fast;  // set for a Mamba student
};

struct ModelCacheOptions {
  int threads_per_call = 1;  // fast-path threads per predict call (the caller's included)
  std::size_t max_versions = 8;
};

class ModelCache {
 public:
  ModelCache(registry::ModelStore& store, ModelCacheOptions options);

  // The model for an alias name or a version number ("production", "7").
  // kNotFound for an unknown alias or version; kDataLoss when the stored
  // weights fail their checksum; kInternal when they do not load.
  Result<std::shared_ptr<const LoadedModel>> get(std::string_view alias_or_version) EXCLUDES(mu_);

  // A NOTIFY from the AliasListener: loads the version, then moves the alias.
  // A failed load is logged and the alias is moved anyway (requests then get
  // the load's error rather than a stale model).
  void on_alias_change(const registry::AliasChange& change) EXCLUDES(mu_);
  // Rereads every alias from the database and loads what they point at.
  // kUnavailable when the database cannot be read (the map is kept).
  Status resync() EXCLUDES(mu_);

  // The version an alias points at, as this cache knows it; 0 when unknown.
  std::int64_t alias_version(std::string_view alias) const EXCLUDES(mu_);
  // Every alias this cache knows, with its version (for the alias gauge).
  std::map<std::string, std::int64_t, std::less<>> aliases() const EXCLUDES(mu_);
  // Whether the version `production` points at is loaded (true when no
  // version exists yet): a readiness check.
  bool production_ready() const EXCLUDES(mu_);
  std::size_t loaded_count() const EXCLUDES(mu_);

 private:
  Result<std::shared_ptr<const LoadedModel>> load(std::int64_t version) EXCLUDES(mu_);
  Result<std::shared_ptr<const LoadedModel>> get_version(std::int64_t version) EXCLUDES(mu_);
  void evict_locked() REQUIRES(mu_);

  registry::ModelStore& store_;
  const ModelCacheOptions options_;
  mutable core::Mutex mu_;
  std::map<std::string, std::int64_t, std::less<>> aliases_ GUARDED_BY(mu_);
  struct Entry {
    std::shared_ptr<const LoadedModel> model;
    std::uint64_t last_used = 0;
  };
  std::map<std::int64_t, Entry> versions_ GUARDED_BY(mu_);
  std::uint64_t clock_ GUARDED_BY(mu_) = 0;  // bumps on every use, for LRU
};

}  // namespace tcl::api
