#include "api/model_cache.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>

namespace tcl::api {

namespace {

// "7" → 7; nullopt for anything that is not all digits (an alias name).
std::optional<std::int64_t> as_version_number(std::string_view s) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace

ModelCache::ModelCache(registry::ModelStore& store, ModelCacheOptions options) : store_(store), options_(options) {}

Result<std::shared_ptr<const LoadedModel>> ModelCache::load(const Key& key) {
  const std::int64_t version = key.version;
  const std::string& platform = key.platform;
  const std::string what =
      "model version " + std::to_string(version) + (platform.empty() ? "" : " for platform " + platform);
  auto info = store_.get(version);
  if (!info) return info.status();
  auto blob = store_.weights(version);  // checks the SHA-256
  if (!blob) return blob.status();
  auto adapted = trainer::own_model_platforms(blob->bytes);  // adapters and pinned models
  if (!adapted) return Status::internal(what + " does not load: " + adapted.status().message());
  auto model = trainer::CostModel::load_for_platform(blob->bytes, platform);  // "": the trunk
  if (!model) return Status::internal(what + " does not load: " + model.status().message());
  auto loaded = std::make_shared<LoadedModel>();
  loaded->version = version;
  loaded->platforms = info->platforms;
  loaded->adapter_platforms = std::move(*adapted);
  loaded->adapter_platform = platform;
  loaded->weights_sha256 = blob->sha256;
  if ((*model)->config().kind == trainer::ModelKind::kMamba) {
    trainer::InferenceOptions io;
    io.threads = options_.threads_per_call;
    auto fast = trainer::StudentInference::create(**model, io);
    if (!fast) return Status::internal(what + " has no fast path: " + fast.status().message());
    loaded->fast = std::move(*fast);
  }
  loaded->model = std::move(*model);
  spdlog::info("model_cache: loaded version={}{} kind={} params={} sha256={}", version,
               platform.empty() ? std::string() : " platform=" + platform,
               trainer::model_kind_name(loaded->model->config().kind), loaded->model->num_parameters(),
               loaded->weights_sha256.substr(0, 12));
  return std::shared_ptr<const LoadedModel>(std::move(loaded));
}

Result<std::shared_ptr<const LoadedModel>> ModelCache::get_loaded(const Key& key) {
  {
    core::MutexLock lock(mu_);
    if (auto it = models_.find(key); it != models_.end()) {
      it->second.last_used = ++clock_;
      return it->second.model;
    }
  }
  auto loaded = load(key);
  if (!loaded) return loaded.status();
  core::MutexLock lock(mu_);
  auto [it, inserted] = models_.try_emplace(key, Entry{*loaded, 0});
  it->second.last_used = ++clock_;
  std::shared_ptr<const LoadedModel> model = it->second.model;  // evict_locked may erase other entries
  if (inserted) evict_locked(&key);
  return model;
}

Result<std::shared_ptr<const LoadedModel>> ModelCache::get_version(std::int64_t version, std::string_view platform) {
  auto trunk = get_loaded({.version = version, .platform = {}});
  if (!trunk || platform.empty()) return trunk;
  const auto& adapted = (*trunk)->adapter_platforms;
  if (!std::binary_search(adapted.begin(), adapted.end(), platform)) return trunk;  // the trunk is its model
  return get_loaded({.version = version, .platform = std::string(platform)});
}

void ModelCache::evict_locked(const Key* keep) {
  while (models_.size() > options_.max_versions) {
    auto victim = models_.end();
    for (auto it = models_.begin(); it != models_.end(); ++it) {
      const bool aliased =
          std::any_of(aliases_.begin(), aliases_.end(), [&](const auto& a) { return a.second == it->first.version; });
      if (aliased || pinned_.count(it->first.version) > 0 || (keep != nullptr && it->first == *keep)) continue;
      if (victim == models_.end() || it->second.last_used < victim->second.last_used) victim = it;
    }
    if (victim == models_.end()) return;  // everything loaded is aliased: keep it
    models_.erase(victim);
  }
}

Result<std::shared_ptr<const LoadedModel>> ModelCache::get(std::string_view alias_or_version,
                                                           std::string_view platform) {
  if (auto number = as_version_number(alias_or_version)) return get_version(*number, platform);
  std::int64_t version = 0;
  {
    core::MutexLock lock(mu_);
    if (auto it = aliases_.find(alias_or_version); it != aliases_.end()) version = it->second;
  }
  if (version == 0) {
    // Not heard of yet (its NOTIFY may still be on the way): ask once.
    auto alias = store_.get_alias(alias_or_version);
    if (!alias) {
      if (alias.status().code() == StatusCode::kNotFound && alias_or_version == "production") {
        return Status::not_found(
            "no model version is in production yet: train one first (POST /v1/platforms/{name}/jobs)");
      }
      return alias.status();
    }
    version = alias->version;
    core::MutexLock lock(mu_);
    aliases_.try_emplace(alias->name, version);
  }
  return get_version(version, platform);
}

void ModelCache::pin(std::int64_t version) {
  core::MutexLock lock(mu_);
  ++pinned_[version];
}

void ModelCache::unpin_locked(std::int64_t version) {
  if (--pinned_[version] <= 0) pinned_.erase(version);
}

Status ModelCache::load_every_model(std::int64_t version) {
  auto trunk = get_version(version, {});
  if (!trunk) return trunk.status();
  for (const std::string& platform : (*trunk)->adapter_platforms) {
    if (auto adapted = get_version(version, platform); !adapted) return adapted.status();
  }
  return Status::ok();
}

void ModelCache::on_alias_change(const registry::AliasChange& change) {
  pin(change.version);
  if (Status loaded = load_every_model(change.version); !loaded.is_ok()) {
    spdlog::error("model_cache: alias={} moved to version={} which does not load: {}", change.alias, change.version,
                  loaded.to_string());
  }
  core::MutexLock lock(mu_);
  unpin_locked(change.version);  // aliased from here on
  aliases_[change.alias] = change.version;
  spdlog::info("model_cache: alias={} now version={}", change.alias, change.version);
  evict_locked();
}

Status ModelCache::resync() {
  auto all = store_.list_aliases();
  if (!all) return all.status();
  for (const auto& a : *all) pin(a.version);  // the first ones' models stay while the later ones load
  for (const auto& a : *all) {
    if (Status loaded = load_every_model(a.version); !loaded.is_ok()) {
      spdlog::error("model_cache: alias={} points at version={} which does not load: {}", a.name, a.version,
                    loaded.to_string());
    }
  }
  core::MutexLock lock(mu_);
  for (const auto& a : *all) unpin_locked(a.version);
  aliases_.clear();
  for (const auto& a : *all) aliases_[a.name] = a.version;
  evict_locked();
  return Status::ok();
}

std::int64_t ModelCache::alias_version(std::string_view alias) const {
  core::MutexLock lock(mu_);
  auto it = aliases_.find(alias);
  return it == aliases_.end() ? 0 : it->second;
}

std::map<std::string, std::int64_t, std::less<>> ModelCache::aliases() const {
  core::MutexLock lock(mu_);
  return aliases_;
}

bool ModelCache::production_ready() const {
  core::MutexLock lock(mu_);
  auto it = aliases_.find(std::string_view("production"));
  if (it == aliases_.end()) return true;
  auto trunk = models_.find(Key{.version = it->second, .platform = {}});
  if (trunk == models_.end()) return false;
  for (const std::string& platform : trunk->second.model->adapter_platforms) {
    if (models_.count(Key{.version = it->second, .platform = platform}) == 0) return false;
  }
  return true;
}

std::size_t ModelCache::loaded_count() const {
  core::MutexLock lock(mu_);
  return models_.size();
}

}  // namespace tcl::api
