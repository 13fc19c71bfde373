#include "tuner/cost_model.h"

#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "core/random.h"

namespace tcl::tuner {
namespace {

// Ansor's XGBoost settings (python/tvm/auto_scheduler/cost_model/xgb_model.py:
// max_depth 10, gamma 0.001, min_child_weight 0, eta 0.2), with a fixed
// number of rounds (Ansor stops early on its own validation metric) and one
// thread, so that a seed gives the same model everywhere.
constexpr int kBoostRounds = 40;
constexpr const char* kBoosterParams[][2] = {
    {"objective", "reg:squarederror"},
    {"max_depth", "10"},
    {"gamma", "0.001"},
    {"min_child_weight", "0"},
    {"eta", "0.2"},
    {"nthread", "1"},
    {"seed", "0"},
    {"verbosity", "0"},
};

Status xgb_status(int rc, std::string_view what) {
  if (rc == 0) return Status::ok();
  return Status::internal(std::string("xgboost ") + std::string(what) + ": " + XGBGetLastError());
}

// RAII over XGBoost's handles.
struct Matrix {
  DMatrixHandle h = nullptr;
  ~Matrix() {
    if (h) XGDMatrixFree(h);
  }
};
struct Booster {
  BoosterHandle h = nullptr;
  Booster() = default;
  Booster(const Booster&) = delete;
  Booster& operator=(const Booster&) = delete;
  ~Booster() {
    if (h) XGBoosterFree(h);
  }
};

Result<std::unique_ptr<Matrix>> make_matrix(const Space& space, std::span<const Point> points,
                                            std::span<const float> base_margin) {
  std::vector<float> rows;
  std::size_t width = 0;
  for (const Point& p : points) {
    const std::vector<float> f = space.features(p);
    width = f.size();
    rows.insert(rows.end(), f.begin(), f.end());
  }
  auto m = std::make_unique<Matrix>();
  if (Status s = xgb_status(XGDMatrixCreateFromMat(rows.data(), points.size(), width, NAN, &m->h), "matrix"); !s)
    return s;
  if (!base_margin.empty()) {
    if (Status s = xgb_status(XGDMatrixSetFloatInfo(m->h, "base_margin", base_margin.data(), base_margin.size()),
                              "base_margin");
        !s)
      return s;
  }
  return m;
}

// Least squares y ≈ a·x + b; a flat x gives a = 0, b = mean(y).
std::pair<double, double> fit_line(std::span<const double> x, std::span<const double> y) {
  const double n = static_cast<double>(x.size());
  double mx = 0, my = 0;
  for (std::size_t i = 0; i < x.size(); ++i) mx += x[i] / n, my += y[i] / n;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
  const double a = sxx > 0 ? sxy / sxx : 0;
  return {a, my - a * mx};
}

// A program's random score: a function of the seed, the task and the program
// alone (FNV-1a of its key, mixed), not of the calls before. So a resumed run,
// which replays its rounds without scoring, scores as an uninterrupted one.
class RandomModel final : public CostModel {
 public:
  explicit RandomModel(std::uint64_t seed) : seed_(seed) {}
  std::string_view name() const override { return "random"; }
  bool informed() const override { return false; }
  Result<std::vector<double>> score(std::size_t task, const Space& space, std::span<const Point> points) override {
    std::vector<double> out;
    out.reserve(points.size());
    for (const Point& p : points) {
      std::uint64_t h = 0xcbf29ce484222325ULL;
      for (const char c : space.key(p)) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
      const std::uint64_t x = core::splitmix64(h ^ core::splitmix64(seed_ + static_cast<std::uint64_t>(task)));
      out.push_back(static_cast<double>(x >> 11) * 0x1.0p-53);
    }
    return out;
  }
  Status learn(std::size_t, const Space&, std::span<const Point>, std::span<const double>) override {
    return Status::ok();
  }

 private:
  std::uint64_t seed_;
};

class LineageModel final : public CostModel {
 public:
  explicit LineageModel(LineageScorer lineage) : lineage_(std::move(lineage)) {}
  std::string_view name() const override { return "lineage"; }
  Result<std::vector<double>> score(std::size_t, const Space& space, std::span<const Point> points) override {
    std::vector<core::Record> records;
    records.reserve(points.size());
    for (const Point& p : points) records.push_back(space.record(p));
    auto scores = lineage_(records);
    if (scores && scores->size() != points.size()) {
      return Status::internal("the lineage answered " + std::to_string(scores->size()) + " scores for " +
                              std::to_string(points.size()) + " programs");
    }
    return scores;
  }
  Status learn(std::size_t, const Space&, std::span<const Point>, std::span<const double>) override {
    return Status::ok();
  }

 private:
  LineageScorer lineage_;
};

class OnlineModel final : public CostModel {
 public:
  OnlineModel(LineageScorer prior, std::uint64_t seed) : prior_(std::move(prior)), fallback_(seed), lineage_(prior_) {}
  std::string_view name() const override { return prior_ ? "lineage+online" : "online"; }

  Result<std::vector<double>> score(std::size_t task, const Space& space, std::span<const Point> points) override {
    std::vector<double> prior;
    if (prior_) {
      auto p = lineage_.score(task, space, points);
      if (!p) return p.status();
      prior = std::move(*p);
    }
    auto it = tasks_.find(task);
    if (it == tasks_.end() || !it->second.booster) {
      if (prior_) return prior;
      return fallback_.score(task, space, points);  // nothing learned yet: random, as Ansor starts
    }
    const TaskModel& tm = it->second;
    std::vector<float> margin;
    margin.reserve(prior.size());
    for (double s : prior) margin.push_back(static_cast<float>(tm.a * s + tm.b));
    auto m = make_matrix(space, points, margin);
    if (!m) return m.status();
    bst_ulong n = 0;
    const float* out = nullptr;
    if (Status s = xgb_status(XGBoosterPredict(tm.booster->h, (*m)->h, 0, 0, 0, &n, &out), "predict"); !s) return s;
    return std::vector<double>(out, out + n);
  }

  Status learn(std::size_t task, const Space& space, std::span<const Point> points,
               std::span<const double> seconds) override {
    if (points.size() < kMinTrainingPrograms) return Status::ok();
    double best = INFINITY;
    for (double s : seconds) {
      if (s > 0) best = std::min(best, s);
    }
    std::vector<float> labels;
    std::vector<double> y;
    for (double s : seconds) {
      y.push_back(s > 0 && std::isfinite(best) ? best / s : 0.0);
      labels.push_back(static_cast<float>(y.back()));
    }
    TaskModel& tm = tasks_[task];
    std::vector<float> margin;
    if (prior_) {
      auto p = lineage_.score(task, space, points);
      if (!p) return p.status();
      std::tie(tm.a, tm.b) = fit_line(*p, y);
      for (double s : *p) margin.push_back(static_cast<float>(tm.a * s + tm.b));
    }
    auto m = make_matrix(space, points, margin);
    if (!m) return m.status();
    if (Status s = xgb_status(XGDMatrixSetFloatInfo((*m)->h, "label", labels.data(), labels.size()), "label"); !s)
      return s;
    auto booster = std::make_unique<Booster>();
    if (Status s = xgb_status(XGBoosterCreate(&(*m)->h, 1, &booster->h), "create"); !s) return s;
    for (const auto& kv : kBoosterParams) {
      if (Status s = xgb_status(XGBoosterSetParam(booster->h, kv[0], kv[1]), kv[0]); !s) return s;
    }
    for (int i = 0; i < kBoostRounds; ++i) {
      if (Status s = xgb_status(XGBoosterUpdateOneIter(booster->h, i, (*m)->h), "train"); !s) return s;
    }
    tm.booster = std::move(booster);
    return Status::ok();
  }

 private:
  struct TaskModel {
    std::unique_ptr<Booster> booster;
    double a = 0, b = 0;  // the prior's calibration (lineage+online)
  };
  LineageScorer prior_;
  RandomModel fallback_;
  LineageModel lineage_;
  std::map<std::size_t, TaskModel> tasks_;
};

}  // namespace

std::vector<std::string_view> cost_model_names() { return {"random", "lineage", "online", "lineage+online"}; }

bool uses_lineage(std::string_view name) { return name == "lineage" || name == "lineage+online"; }

Result<std::unique_ptr<CostModel>> make_cost_model(std::string_view name, LineageScorer lineage, std::uint64_t seed) {
  if (uses_lineage(name) && !lineage)
    return Status::invalid_argument("the " + std::string(name) + " model needs the lineage");
  if (name == "random") return std::unique_ptr<CostModel>(new RandomModel(seed));
  if (name == "lineage") return std::unique_ptr<CostModel>(new LineageModel(std::move(lineage)));
  if (name == "online") return std::unique_ptr<CostModel>(new OnlineModel(nullptr, seed));
  if (name == "lineage+online") return std::unique_ptr<CostModel>(new OnlineModel(std::move(lineage), seed));
  return Status::invalid_argument("unknown cost model '" + std::string(name) +
                                  "' (random, lineage, online, lineage+online)");
}

}  // namespace tcl::tuner
