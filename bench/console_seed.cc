// bench/console_seed.cc — a big lineage for the console's benchmark (bench/console_render.sh): N
// platforms and M versions written through the registry (PlatformStore, ModelStore) into a migrated
// database, shaped as tcld's jobs write them: a chain of promoted distills, each adding a platform
// until all are in, every third one a refused candidate branching off; each version carries, per
// platform it covers, the figures a job writes (its judged set's, its standing split's, and the
// paired comparison with its parent), and its gate's reasons. The weights are a few bytes of filler
// (the console never reads them); no alias is set, so tcld loads no model.
//
//   bench_console_seed postgresql://... [--versions 1000] [--platforms 50]
// Prints what it wrote and the seconds it took.
#include <boost/json.hpp>

#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench/lib/flags.h"
#include "registry/migrations.h"
#include "registry/model_store.h"
#include "registry/pg_pool.h"
#include "registry/platform_store.h"

namespace json = boost::json;
using namespace tcl;

namespace {

json::object figures(std::mt19937& rng, double level) {
  std::uniform_real_distribution<double> noise(-0.03, 0.03);
  const auto f = [&](double x) { return std::min(1.0, std::max(0.0, x + noise(rng))); };
  return json::object{{"top1", f(level)},
                      {"top1_sum_ratio", f(level + 0.05)},
                      {"top5", f(level + 0.12)},
                      {"top5_sum_ratio", f(level + 0.14)},
                      {"random_top1", f(0.45)},
                      {"random_top5", f(0.62)},
                      {"pairwise_accuracy", f(0.55 + level / 4)},
                      {"tuning_proxy", f(1.2 - level)},
                      {"random_tuning_proxy", f(0.63)},
                      {"eval_tasks", 24},
                      {"eval_programs", 4096}};
}

// `count` platforms, CPUs and GPUs in turn; their names. Empty on a failure (printed).
std::vector<std::string> create_platforms(registry::PgPool& pool, int count) {
  registry::PlatformStore platform_store(pool);
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    registry::NewPlatform p;
    p.name = (i % 2 ? "gpu-" : "cpu-") + std::to_string(i);
    p.target = i % 2 ? "cuda -keys=cuda,gpu -arch=sm_80 -max_num_threads=1024 -thread_warp_size=32" : "llvm -keys=cpu";
    p.hardware_params = i % 2 ? std::array<std::int64_t, 8>{-1, 16, 64, 49152, 2147483647, 1024, 8, 32}
                              : std::array<std::int64_t, 8>{8 + i, 64, 64, 0, 0, 0, 0, 0};
    p.description = "bench platform " + std::to_string(i);
    if (auto c = platform_store.create(p); !c) {
      std::fprintf(stderr, "platform %s: %s\n", p.name.c_str(), c.status().to_string().c_str());
      return {};
    }
    names.push_back(p.name);
  }
  return names;
}

// Version k's metrics: each platform's figures and standing split, and (after
// the first) the gate's comparison with the parent, `judged` the platform it learned.
json::object version_metrics(std::mt19937& rng, int k, int versions, const std::vector<std::string>& platforms,
                             const std::string& judged, bool refused) {
  json::object metrics, versus;
  for (const std::string& p : platforms) {
    const double level = 0.6 + 0.3 * static_cast<double>(k) / versions;
    json::object m = figures(rng, level);
    json::object standing = figures(rng, level);
    standing["held_out"] = true;
    m["standing_split"] = std::move(standing);
    metrics[p] = std::move(m);
    if (k > 0) {
      versus[p] = json::object{{"tasks", 24},
                               {"judged_on", "standing split"},
                               {"parent_top1", 0.7},
                               {"top1", p == judged ? (refused ? 0.69 : 0.74) : 0.7},
                               {"change", 0.0},
                               {"change_se", 0.01},
                               {"parent_top1_sum_ratio", 0.75},
                               {"top1_sum_ratio", 0.75},
                               {"sum_change", 0.0},
                               {"sum_change_se", 0.01},
                               {"parent_tuning_proxy", 0.5},
                               {"tuning_proxy", 0.5},
                               {"tuning_tasks", 24},
                               {"tuning_log_change_se", 0.02}};
    }
  }
  if (k > 0) metrics["versus_parent"] = std::move(versus);
  return metrics;
}

// The gate's verdict as a version stores it.
std::string status_reasons(const std::vector<std::string>& platforms, const std::string& judged, bool refused) {
  json::array reasons, blocking;
  for (const std::string& p : platforms) {
    reasons.push_back(json::string(p + ": 24 tasks (standing split); top-1 mean 0.7000 -> 0.7000; kept"));
  }
  if (refused) {
    blocking.push_back(json::string(
        judged + " (new): top-1 mean 0.690 on 24 held-out tasks, not above the teacher's zero-shot 0.700"));
  }
  return json::serialize(json::object{{"promote", !refused}, {"reasons", reasons}, {"blocking", blocking}});
}

// `versions` versions over `names`: every third a refused candidate, a new
// platform every 20 (and in the last 50). False on a failure (printed).
bool create_versions(registry::PgPool& pool, const std::vector<std::string>& names, int versions) {
  registry::ModelStore models(pool);
  std::mt19937 rng(1);
  std::optional<std::int64_t> production;
  std::vector<std::string> covered;
  for (int k = 0; k < versions; ++k) {
    const bool refused = k > 0 && k % 3 == 2;
    registry::NewVersion v;
    v.parent = production;
    v.platforms = covered;
    std::string added;
    if (!refused && covered.size() < names.size() && (k == 0 || k % 20 == 1 || versions - k < 50)) {
      added = names[covered.size()];
      v.platforms.push_back(added);
    }
    if (v.platforms.empty()) v.platforms.push_back(names[0]);
    const std::string judged = added.empty() ? v.platforms.back() : added;
    v.metrics_json = json::serialize(version_metrics(rng, k, versions, v.platforms, judged, refused));
    v.config_json = json::serialize(json::object{
        {"kind", k == 0 ? "train" : "distill"},
        {"model", "mamba"},
        {"epochs", k == 0 ? 3 : 24},
        {"init", nullptr},
        {"distill", k == 0 ? json::value(nullptr)
                           : json::value(json::object{{"method", "adapter"}, {"adapter_rank", 4}, {"margin", 0.01}})}});
    v.training_summary_json =
        json::serialize(json::object{{"job", k + 1}, {"epochs_done", 24}, {"epochs_planned", 24}});
    v.weights = std::string(64, 'w');
    v.status = refused ? registry::VersionStatus::kCandidate : registry::VersionStatus::kPromoted;
    registry::CreateVersionOptions options;
    options.status_reasons_json = status_reasons(v.platforms, judged, refused);
    auto created = models.create_version(v, options);
    if (!created) {
      std::fprintf(stderr, "version %d: %s\n", k + 1, created.status().to_string().c_str());
      return false;
    }
    if (!refused) {
      production = created->version;
      covered = v.platforms;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> urls;
  int versions = 1000, platforms = 50;
  bench::Flags flags;
  flags.positional("url", &urls, 1).value("versions", &versions).value("platforms", &platforms);
  if (!flags.parse(argc, argv)) return 2;
  const auto t0 = std::chrono::steady_clock::now();
  registry::PgPool pool(registry::PgPoolOptions{urls.at(0), 2});
  if (auto m = registry::apply_migrations(pool, registry::embedded_migrations()); !m) {
    std::fprintf(stderr, "migrations: %s\n", m.status().to_string().c_str());
    return 1;
  }
  const std::vector<std::string> names = create_platforms(pool, platforms);
  if (names.empty() || !create_versions(pool, names, versions)) return 1;
  std::printf("console_seed: %d platforms, %d versions in %.1f s\n", platforms, versions,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}
