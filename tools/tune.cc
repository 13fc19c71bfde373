// tools/tune.cc — `tclctl tune`: tunes a network on this machine with the
// tuner (tuner/tuner.h), the lineage's model served by tcld (POST
// /v1/predict) and every round's measurements uploaded to the platform.
#include <unistd.h>

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "core/files.h"
#include "core/record.h"
#include "core/sha256.h"
#include "measure/hardware.h"
#include "measure/measurer.h"
#include "measure/operators.h"
#include "tools/commands.h"
#include "tools/commands_internal.h"
#include "tools/local_lab.h"
#include "tuner/cost_model.h"
#include "tuner/tuner.h"

namespace tcl::tools {
namespace json = boost::json;
namespace {

constexpr std::size_t kPredictBatch = 4096;

// --network NAME, or --task KEY[*WEIGHT] given once per task.
Result<std::vector<measure::Task>> network_tasks(const Args& a, std::string* name) {
  std::vector<measure::Task> tasks;
  for (const auto& [flag, value] : a.flags) {
    if (flag != "task") continue;
    const std::size_t star = value.rfind('*');
    auto w = measure::decode_workload_key(value.substr(0, star == std::string::npos ? value.size() : star));
    if (!w) return Status::invalid_argument("--task " + value + ": " + w.status().message());
    int weight = 1;
    if (star != std::string::npos) {
      try {
        weight = std::stoi(value.substr(star + 1));
      } catch (const std::exception&) {
        weight = 0;
      }
      if (weight < 1) return Status::invalid_argument("--task " + value + ": the weight after * must be ≥ 1");
    }
    tasks.push_back({*w, weight});
  }
  if (!tasks.empty()) {
    *name = a.flag("network", "custom");
    return tasks;
  }
  *name = a.flag("network");
  if (name->empty()) return Status::invalid_argument("give --network resnet50|mobilenet_v2|bert or --task KEY[*W]...");
  return measure::model_tasks(*name);
}

// The lineage's scores through POST /v1/predict.
tuner::LineageScorer predict_scorer(ApiClient& api, const std::string& platform, const std::string& model) {
  return [&api, platform, model](std::span<const core::Record> records) -> Result<std::vector<double>> {
    std::vector<double> scores;
    for (std::size_t begin = 0; begin < records.size(); begin += kPredictBatch) {
      json::array lines;
      std::string line;
      for (std::size_t i = begin; i < std::min(records.size(), begin + kPredictBatch); ++i) {
        line.clear();
        core::write_record(records[i], &line);
        lines.emplace_back(line);
      }
      const json::object body{{"platform", platform}, {"model", model}, {"records", std::move(lines)}};
      auto r = api.call("POST", "/v1/predict", json::serialize(body));
      if (!r) return r.status();
      if (r->status != 200) return Status::unavailable("predict: " + r->error_text());
      const json::value answer = r->json();
      const json::array* got =
          answer.is_object() && answer.as_object().contains("scores") && answer.at("scores").is_array()
              ? &answer.at("scores").as_array()
              : nullptr;
      if (got == nullptr) return Status::internal("predict answered without scores: " + r->body.substr(0, 300));
      for (const json::value& s : *got) {
        if (!s.is_number())
          return Status::internal("predict answered a score that is not a number: " + r->body.substr(0, 300));
        scores.push_back(s.to_number<double>());
      }
    }
    return scores;
  };
}

// Whether the lineage's model MODEL has learned PLATFORM: POST /v1/predict with no records answers
// platform_covered (the version was trained on the platform's own measurements).
Result<bool> lineage_covers(ApiClient& api, const std::string& platform, const std::string& model) {
  const json::object body{{"platform", platform}, {"model", model}, {"records", json::array{}}};
  auto r = api.call("POST", "/v1/predict", json::serialize(body));
  if (!r) return r.status();
  if (r->status != 200) return Status::unavailable("predict: " + r->error_text());
  const json::value answer = r->json();
  const json::value* covered = answer.is_object() ? answer.as_object().if_contains("platform_covered") : nullptr;
  if (covered == nullptr || !covered->is_bool())
    return Status::internal("predict answered without platform_covered: " + r->body.substr(0, 300));
  return covered->as_bool();
}

// The warm-up of a run folder already started (run.json's "warmup"; absent: a whole round), or
// nullopt when DIR holds no run. An unreadable run.json reads as a whole round: the run folder's own
// check (tuner/run_dir.h) then refuses it.
std::optional<int> started_warmup(const std::string& dir) {
  std::string text;
  if (!core::read_file(dir + "/run.json", &text)) return std::nullopt;
  boost::system::error_code ec;
  const json::value settings = json::parse(text, ec);
  const json::value* w = !ec && settings.is_object() ? settings.as_object().if_contains("warmup") : nullptr;
  return w != nullptr && w->is_int64() ? static_cast<int>(w->as_int64()) : 0;
}

// The folder a run of `o` uses: --dir, else tcl-tune-NETWORK-MODEL[...]-sSEED.
std::string run_folder(const Args& a, const tuner::TuneOptions& o) {
  return a.flag("dir", "tcl-tune-" + tuner::run_name(o));
}

// --warmup auto (the default) sets o->warmup and says why in *why: kKnownPlatformWarmup programs in
// each task's first round when the lineage's model has learned this platform, a whole round
// otherwise (and for online and random). docs/tuning.md "The warm-up": warm-up 2 tuned sooner with
// a lineage that learned the platform (this CPU, 3 of 3 seeds) and slower with one that never saw it
// (this CPU, 3 of 3); on the H200 it also tuned sooner with a lineage that learned only the sibling
// H100, a case auto cannot see and gives whole rounds. A run folder already started keeps its own
// warm-up, so that the same command resumes it after the lineage has learned the platform mid-run
// (its own uploads, distilled); when both default folders exist the lineage decides between them.
constexpr int kKnownPlatformWarmup = 2;
int choose_warmup(ApiClient& api, const Args& a, const std::string& platform, tuner::TuneOptions* o, std::string* why) {
  const bool lineage = tuner::uses_lineage(o->model);
  const int known = std::min(kKnownPlatformWarmup, o->per_round);
  std::vector<std::pair<std::string, int>> started;  // folder, its warm-up
  for (const int w : lineage ? std::vector<int>{0, known} : std::vector<int>{0}) {
    tuner::TuneOptions candidate = *o;
    candidate.warmup = w;
    const std::string dir = run_folder(a, candidate);
    if (auto kept = started_warmup(dir); kept && (started.empty() || started[0].first != dir))
      started.emplace_back(dir, *kept);
  }
  if (started.size() == 1) {
    o->warmup = started[0].second;
    *why = "the run in " + started[0].first + " started so";
    return 0;
  }
  if (!lineage) {
    *why = "the " + o->model + " model has no lineage to start from";
    return 0;
  }
  auto covers = lineage_covers(api, platform, a.flag("lineage-model", "production"));
  if (!covers) return fail("the lineage's model for " + platform + ": " + covers.status().message());
  o->warmup = *covers ? known : 0;
  *why = (*covers ? "the lineage has learned " : "the lineage has not learned ") + platform;
  return 0;
}

// A round's records to POST /v1/platforms/P/measurements, under the tuner's key.
auto measurement_uploader(ApiClient& api, const std::string& platform) {
  return [&api, platform](std::span<const core::Record> records, const std::string& key) -> Status {
    std::string body;
    for (const core::Record& r : records) {
      core::write_record(r, &body);
      body.push_back('\n');
    }
    auto r = api.call("POST", "/v1/platforms/" + platform + "/measurements", body,
                      {{"Content-Type", "application/x-ndjson"}, {"Idempotency-Key", key}});
    if (!r) return r.status();
    if (r->status != 201 && r->status != 200) return Status::unavailable("upload: " + r->error_text());
    return Status::ok();
  };
}

// The run itself to PUT /v1/platforms/P/tuning-runs/ID after every round it uploads, so that the
// console draws its curve. ID: "tune-" and the first 16 hex of run.json's SHA-256 (a resumed run
// updates its row). A refused PUT is reported, never fatal: the run folder keeps the curve.
class RunReporter {
 public:
  RunReporter(ApiClient& api, std::string platform, const tuner::TuneOptions& o)
      : api_(api), platform_(std::move(platform)), o_(o) {}

  void add(const tuner::RoundReport& r) {
    rounds_.emplace_back(json::object{
        {"measured", r.measured},
        {"network_seconds", std::isfinite(r.network_seconds) ? json::value(r.network_seconds) : json::value(nullptr)},
        {"wall_seconds", r.wall_seconds}});
  }

  void send() {
    if (id_.empty()) {
      std::string settings;
      if (!core::read_file(o_.dir + "/run.json", &settings)) return warn("cannot read " + o_.dir + "/run.json");
      id_ = "tune-" + sha256_hex(settings).substr(0, 16);
    }
    const json::object body{{"network", o_.network},
                            {"model", o_.model},
                            {"seed", static_cast<std::int64_t>(o_.seed)},
                            {"rounds", rounds_}};
    auto r = api_.call("PUT", "/v1/platforms/" + platform_ + "/tuning-runs/" + id_, json::serialize(body));
    if (!r) return warn(r.status().message());
    if (r->status != 200 && r->status != 201) return warn(r->error_text());
  }

 private:
  void warn(const std::string& why) {
    std::fprintf(stderr, "\ntune: the run's curve was not stored in tcld (%s); the run goes on\n", why.c_str());
  }
  ApiClient& api_;
  const std::string platform_;
  const tuner::TuneOptions& o_;
  std::string id_;
  json::array rounds_;
};

std::string ms(double seconds) {
  if (std::isnan(seconds)) return "-";
  if (std::isinf(seconds)) return "failed";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g ms", seconds * 1e3);
  return buf;
}

std::string clock_text(double s) {
  char buf[32];
  const long t = std::lround(s);
  if (t >= 3600) {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, t / 60 % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  }
  return buf;
}

// One progress line on stderr, redrawn in place on a terminal.
struct ProgressLine {
  const tuner::TuneOptions& o;
  bool tty = ::isatty(2) != 0;
  void operator()(const tuner::RoundReport& r, bool replayed) const {
    const double round = r.search_seconds + r.learn_seconds + r.measure_seconds + r.upload_seconds;
    const double search_share = round > 0 ? 100 * (r.search_seconds + r.learn_seconds) / round : 0;
    std::fprintf(stderr, "%stune %s (%s): round %d%s  task %zu/%zu  measured %d/%d  network %s  search %.0f%%  %s%s",
                 tty ? "\r\033[K" : "", o.network.c_str(), o.model.c_str(), r.round + 1, replayed ? " (resumed)" : "",
                 r.task + 1, o.tasks.size(), r.measured, o.budget, ms(r.network_seconds).c_str(), search_share,
                 clock_text(r.wall_seconds).c_str(), tty ? "" : "\n");
    std::fflush(stderr);
  }
};

void print_summary(const tuner::TuneOptions& o, const tuner::TuneResult& r, const std::string& warmup_why) {
  std::printf("network       %s (%zu tasks) on %s\n", o.network.c_str(), o.tasks.size(), o.hardware.target.c_str());
  std::printf("model         %s, scheduler %s, pick %s, seed %llu\n", o.model.c_str(),
              std::string(tuner::scheduler_rule_name(o.scheduler)).c_str(),
              std::string(tuner::pick_rule_name(o.search.pick)).c_str(), static_cast<unsigned long long>(o.seed));
  const std::string warmup =
      tuner::first_round_size(o) != o.per_round ? std::to_string(o.warmup) + " a task" : "a whole round";
  std::printf("warm-up       %s (%s)\n", warmup.c_str(), warmup_why.c_str());
  std::printf("measured      %d in %d rounds%s\n", r.measured, r.rounds,
              r.resumed_rounds ? (" (" + std::to_string(r.resumed_rounds) + " resumed)").c_str() : "");
  std::printf("latency       %s\n\n", ms(r.network_seconds).c_str());
  std::printf("%-4s %-44s %6s %12s %10s\n", "TASK", "WORKLOAD", "WEIGHT", "BEST", "GFLOP/S");
  for (std::size_t i = 0; i < o.tasks.size(); ++i) {
    const double best = r.task_best_seconds[i];
    const double gflops = std::isfinite(best) ? measure::flop_count(o.tasks[i].workload) / best / 1e9 : 0;
    std::printf("%-4zu %-44s %6d %12s %10.1f\n", i + 1, measure::encode_workload_key(o.tasks[i].workload).c_str(),
                o.tasks[i].weight, ms(best).c_str(), gflops);
  }
  std::printf("\nfiles         %s/{best.jsonl,rounds.csv,curve.svg,curve-time.svg,measurements.jsonl}\n",
              o.dir.c_str());
  if (r.pending_upload > 0) {
    std::printf("uploads       %d rounds not yet accepted (%s); a rerun sends them\n", r.pending_upload,
                r.last_upload_error.c_str());
  }
}

// The curve as text: network latency at ten points of the run.
void print_curve(const std::string& dir) {
  std::FILE* f = std::fopen((dir + "/rounds.csv").c_str(), "r");
  if (!f) return;
  std::vector<std::pair<int, double>> points;
  char line[1024];
  while (std::fgets(line, sizeof line, f)) {
    std::stringstream in(line);
    std::vector<std::string> cells;
    for (std::string c; std::getline(in, c, ',');) cells.push_back(c);
    if (cells.size() < 6 || cells[0] == "round" || cells[5].empty()) continue;
    points.emplace_back(std::stoi(cells[3]), std::stod(cells[5]));
  }
  std::fclose(f);
  if (points.empty()) return;
  std::printf("\n%-13s %s\n", "MEASUREMENTS", "NETWORK LATENCY");
  const std::size_t step = std::max<std::size_t>(1, points.size() / 10);
  for (std::size_t i = 0; i < points.size(); i += step) {
    if (i + step >= points.size()) i = points.size() - 1;
    std::printf("%-13d %s\n", points[i].first, ms(points[i].second).c_str());
  }
}

int parse_numbers(const Args& a, tuner::TuneOptions* o) {
  try {
    o->budget = std::stoi(a.flag("budget", "1000"));
    o->per_round = std::stoi(a.flag("per-round", "16"));
    if (const std::string w = a.flag("warmup", "auto"); w != "auto") o->warmup = std::stoi(w);
    o->seed = std::stoull(a.flag("seed", "1"));
    o->search.population = std::stoi(a.flag("population", "2048"));
    o->search.population_per_pick =
        std::stoi(a.flag("population-per-pick", std::to_string(tuner::SearchOptions{}.population_per_pick)));
  } catch (const std::exception&) {
    return fail(
        "--budget, --per-round, --warmup (or auto), --seed, --population and --population-per-pick take numbers");
  }
  return 0;
}

}  // namespace

int tune_command(ApiClient& api, const Args& a) {
  tuner::TuneOptions o;
  auto tasks = network_tasks(a, &o.network);
  if (!tasks) return fail(tasks.status().message());
  o.tasks = std::move(*tasks);
  o.hardware = measure::local_hardware();
  o.model = a.flag("model", "lineage+online");  // docs/tuning.md: best at 3 seeds on the H200, and the
  // only lineage model that did not lose to random on a CPU the lineage never saw
  auto rule = tuner::scheduler_rule(a.flag("scheduler", "gradient"));
  if (!rule) return fail(rule.status().message());
  o.scheduler = *rule;
  auto pick = tuner::pick_rule(a.flag("pick", "top"));
  if (!pick) return fail(pick.status().message());
  o.search.pick = *pick;
  if (o.model == "random" && o.search.pick != tuner::PickRule::kTop)
    return fail("--model random samples without a search: --pick has nothing to choose among");
  if (parse_numbers(a, &o) != 0) return 1;
  const std::string platform = a.flag("platform");
  const bool upload = a.flag("upload", "1") != "0";
  const bool needs_lineage = tuner::uses_lineage(o.model);
  if (platform.empty() && (upload || needs_lineage))
    return fail("--platform P is needed to upload (or give --upload 0) and by the lineage's models");
  if (!platform.empty() && ensure_local_platform(api, platform, local_hardware()) != 0) return 1;
  std::string warmup_why = "--warmup";
  if (a.flag("warmup", "auto") == "auto" && choose_warmup(api, a, platform, &o, &warmup_why) != 0) return 1;
  o.dir = run_folder(a, o);

  tuner::TuneHooks hooks;
  if (needs_lineage) hooks.lineage = predict_scorer(api, platform, a.flag("lineage-model", "production"));
  if (upload) hooks.upload = measurement_uploader(api, platform);
  std::optional<RunReporter> reporter;
  if (upload) reporter.emplace(api, platform, o);
  hooks.progress = [&reporter, line = ProgressLine{o}](const tuner::RoundReport& r, bool replayed) {
    line(r, replayed);
    if (!reporter) return;
    reporter->add(r);
    if (!replayed) reporter->send();
  };
  auto result = tuner::tune(o, hooks);
  if (ProgressLine{o}.tty) std::fputc('\n', stderr);
  if (!result) return fail(result.status().message());
  print_summary(o, *result, warmup_why);
  print_curve(o.dir);
  return 0;
}

}  // namespace tcl::tools
