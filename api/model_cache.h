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
// alias switches only after its new version has loaded, the trunk and every
// adapted platform's model: a request sees the old model or the new one,
// never a missing one, and no platform's first request waits for a load. An alias the map does not
// know yet (a NOTIFY still in flight) is looked up in the database once.
//
// A version whose checkpoint keeps per-platform adapters (a distill with
// "method": "adapter"; trainer/cost_model.h) or pinned models ("method":
// "best-of") has one model per such platform besides its trunk.
// get(name, platform) gives the platform's model: its pinned model or the
// trunk with that platform's adapter folded in, loaded once per
// (version, platform) with its own fast path; the trunk for every platform
// without an adapter. get(name) is the trunk (for what does not depend on
// the platform: the config, the version's metadata).
//
// At most `max_versions` models stay loaded (a version's trunk and its
// adapted platforms count one each); the least recently used one whose
// version no alias points at is dropped first. Aliased versions' models are
// never dropped, nor those of a version an alias move or a resync is still
// loading, so with many adapted platforms under aliases the count can exceed
// max_versions.
//
// Thread-safety: every method may be called from any thread; loading runs
// outside the lock (two requests may load the same version at once; one
// copy wins). Does not own `store`; it must outlive the cache.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <compare>
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
  // Those it keeps a model of their own for: an adapter, or a pinned model
  // (a best-of distill; trainer::own_model_platforms). Sorted; empty for most.
  std::vector<std::string> adapter_platforms;
  std::string adapter_platform;  // whose own model `model` is (adapter folded in, or pinned); "" = the trunk
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

  // The model for an alias name or a version number ("production", "7"):
  // platform `platform`'s (its adapter folded in when the version keeps
  // one), or the trunk for "". kNotFound for an unknown alias or version;
  // kDataLoss when the stored weights fail their checksum; kInternal when
  // they do not load.
  Result<std::shared_ptr<const LoadedModel>> get(std::string_view alias_or_version, std::string_view platform = {})
      EXCLUDES(mu_);

  // A NOTIFY from the AliasListener: loads the version (its trunk and every
  // adapted platform's model), then moves the alias.
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
  // Whether the version `production` points at is loaded, its trunk and
  // every adapted platform's model (true when no version exists yet): a
  // readiness check.
  bool production_ready() const EXCLUDES(mu_);
  // Models loaded: trunks and adapted platforms' models.
  std::size_t loaded_count() const EXCLUDES(mu_);

 private:
  // A version's trunk (platform "") or one adapted platform's model.
  struct Key {
    std::int64_t version = 0;
    std::string platform;
    // clang-tidy 14 takes the 0 that a defaulted <=> compares with for a
    // null pointer (llvm/llvm-project#53961; fixed in 18).
    auto operator<=>(const Key&) const = default;  // NOLINT(modernize-use-nullptr)
  };
  Result<std::shared_ptr<const LoadedModel>> load(const Key& key) EXCLUDES(mu_);
  Result<std::shared_ptr<const LoadedModel>> get_loaded(const Key& key) EXCLUDES(mu_);
  Result<std::shared_ptr<const LoadedModel>> get_version(std::int64_t version, std::string_view platform) EXCLUDES(mu_);
  // Loads a version's trunk and each adapted platform's model (what an alias
  // move waits for, so that no platform's first request pays a load).
  Status load_every_model(std::int64_t version) EXCLUDES(mu_);
  // Drops least recently used entries of versions neither aliased nor
  // pinned until at most max_versions remain (fewer cannot be when those
  // hold more); `keep`, when given, is never dropped (the entry a caller
  // just added).
  void evict_locked(const Key* keep = nullptr) REQUIRES(mu_);
  // A pinned version's models are not evicted: an alias move or a resync
  // pins what it loads until the alias points at it. Pins nest.
  void pin(std::int64_t version) EXCLUDES(mu_);
  void unpin_locked(std::int64_t version) REQUIRES(mu_);

  registry::ModelStore& store_;
  const ModelCacheOptions options_;
  mutable core::Mutex mu_;
  std::map<std::string, std::int64_t, std::less<>> aliases_ GUARDED_BY(mu_);
  struct Entry {
    std::shared_ptr<const LoadedModel> model;
    std::uint64_t last_used = 0;
  };
  std::map<Key, Entry> models_ GUARDED_BY(mu_);
  std::map<std::int64_t, int> pinned_ GUARDED_BY(mu_);  // version → loads in progress that pin it
  std::uint64_t clock_ GUARDED_BY(mu_) = 0;             // bumps on every use, for LRU
};

}  // namespace tcl::api
