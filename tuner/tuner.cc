#include "tuner/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <optional>
#include <unordered_set>

#include <boost/json.hpp>

#include "core/json_write.h"
#include "core/sha256.h"
#include "measure/measurer.h"
#include "tuner/run_dir.h"

namespace tcl::tuner {
namespace {

using Clock = std::chrono::steady_clock;

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// What the run knows of one task.
struct TaskState {
  Space space;
  std::vector<Point> points;    // measured, in order
  std::vector<double> seconds;  // mean cost, or −1 when the measurement failed
  std::unordered_set<std::string> keys;
  std::optional<core::Record> best;
  double best_seconds = INFINITY;

  // Measured programs, fastest first (failed ones left out).
  std::vector<Point> best_first() const {
    std::vector<std::size_t> order;
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (seconds[i] > 0) order.push_back(i);
    }
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return seconds[a] < seconds[b]; });
    std::vector<Point> out;
    out.reserve(order.size());
    for (std::size_t i : order) out.push_back(points[i]);
    return out;
  }

  // Adds a measured record; false when it is not a program of this task's space.
  bool add(const core::Record& r) {
    auto p = space.decode(r.steps);
    if (!p) return false;
    keys.insert(space.key(*p));
    points.push_back(*p);
    const bool ok = r.error_no == 0 && !r.costs.empty();
    const double s = ok ? core::mean_cost(r) : -1.0;
    seconds.push_back(s);
    if (ok && s < best_seconds) best_seconds = s, best = r;
    return true;
  }
};

std::string task_name(const measure::Workload& w) {
  std::string s(measure::op_kind_name(w.kind));
  for (std::size_t i = 0; i < w.args.size(); ++i) s += (i ? "x" : "_") + std::to_string(w.args[i]);
  return s;
}

std::string settings_json(const TuneOptions& o) {
  boost::json::object j;
  j["network"] = o.network;
  boost::json::array tasks;
  for (const measure::Task& t : o.tasks) tasks.push_back({measure::encode_workload_key(t.workload), t.weight});
  j["tasks"] = std::move(tasks);
  j["target"] = o.hardware.target;
  j["model"] = o.model;
  j["scheduler"] = std::string(scheduler_rule_name(o.scheduler));
  j["seed"] = o.seed;
  j["per_round"] = o.per_round;
  // Only when not Ansor's: a folder written before the rule existed stays the same run.
  if (o.search.pick != PickRule::kTop) j["pick"] = std::string(pick_rule_name(o.search.pick));
  if (first_round_size(o) != o.per_round) j["warmup"] = o.warmup;
  // Only when it changes a round's search: a folder of whole rounds of 16 written before the rule stays the same run.
  const int smallest = std::min(o.per_round, first_round_size(o));
  if (population_size(o.search, smallest) < o.search.population)
    j["population_per_pick"] = o.search.population_per_pick;
  return core::write_json(j) + "\n";
}

double network_seconds(const TuneOptions& o, const std::vector<TaskState>& tasks) {
  double sum = 0;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    if (!std::isfinite(tasks[i].best_seconds)) return NAN;
    sum += o.tasks[i].weight * tasks[i].best_seconds;
  }
  return sum;
}

RoundReport report_of(const RoundRow& r) {
  return RoundReport{
      r.round,        r.task,           r.measured,      r.valid,           r.network_seconds, r.task_best_seconds,
      r.wall_seconds, r.search_seconds, r.learn_seconds, r.measure_seconds, r.upload_seconds};
}

std::vector<core::Record> measure_here(std::span<const core::Record> records) {
  measure::MeasureOptions m;
  m.programs_per_unit = 8;  // a round of 16 builds as two units, one per core of a small machine
  measure::Measurer measurer(m);
  return measurer.measure(records);
}

// The run under way: the options, the hooks, the folder and every task's state.
class Run {
 public:
  Run(const TuneOptions& o, const TuneHooks& h, RunDir& dir, CostModel& model, std::vector<TaskState> tasks)
      : o_(o), h_(h), dir_(dir), model_(model), tasks_(std::move(tasks)), scheduler_(o.scheduler, weights(o)) {}

  Status replay(const std::vector<RoundRow>& rows, const std::vector<core::Record>& records);
  Status run_round();
  bool done() const { return measured_ >= o_.budget || scheduler_.next() == TaskScheduler::kNone; }
  TuneResult result() const;

 private:
  static std::vector<int> weights(const TuneOptions& o) {
    std::vector<int> w;
    for (const measure::Task& t : o.tasks) w.push_back(t.weight);
    return w;
  }
  void upload_pending(RoundRow& row);

  const TuneOptions& o_;
  const TuneHooks& h_;
  RunDir& dir_;
  CostModel& model_;
  std::vector<TaskState> tasks_;
  TaskScheduler scheduler_;
  std::vector<core::Record> log_;  // every measured record, in order
  std::vector<int> round_end_;     // per round: log_.size() after it
  int rounds_ = 0, measured_ = 0, resumed_ = 0;
  double wall_offset_ = 0;
  Clock::time_point started_ = Clock::now();
  std::string upload_error_;
};

Status Run::replay(const std::vector<RoundRow>& rows, const std::vector<core::Record>& records) {
  std::size_t next = 0;
  for (const RoundRow& row : rows) {
    if (row.task >= tasks_.size()) return Status::data_loss("rounds.csv names task " + std::to_string(row.task));
    const std::size_t end = static_cast<std::size_t>(row.measured);
    for (; next < end; ++next) {
      if (!tasks_[row.task].add(records[next])) {
        return Status::data_loss("measurements.jsonl: record " + std::to_string(next + 1) + " is not a program of " +
                                 row.task_name);
      }
      log_.push_back(records[next]);
    }
    round_end_.push_back(static_cast<int>(log_.size()));
    scheduler_.record(row.task, tasks_[row.task].best_seconds);
    wall_offset_ = row.wall_seconds;
    if (h_.progress) h_.progress(report_of(row), true);
  }
  rounds_ = resumed_ = static_cast<int>(rows.size());
  measured_ = static_cast<int>(log_.size());
  for (std::size_t t = 0; t < tasks_.size(); ++t) {
    TaskState& s = tasks_[t];
    if (s.points.empty()) continue;
    if (Status st = model_.learn(t, s.space, s.points, s.seconds); !st) return st;
  }
  return Status::ok();
}

void Run::upload_pending(RoundRow& row) {
  const int from = dir_.uploaded_rounds();
  if (!h_.upload || from >= rounds_) return;
  const Clock::time_point t0 = Clock::now();
  const int first = from == 0 ? 0 : round_end_[static_cast<std::size_t>(from - 1)];
  const std::span<const core::Record> pending(log_.data() + first, log_.size() - static_cast<std::size_t>(first));
  const std::string key = "tune-" + sha256_hex(settings_json(o_)).substr(0, 16) + "-rounds-" + std::to_string(from) +
                          "-" + std::to_string(rounds_ - 1);
  if (Status s = h_.upload(pending, key); s) {
    const Status w = dir_.set_uploaded_rounds(rounds_);
    upload_error_ = w ? "" : w.message();
  } else {
    upload_error_ = s.message();
  }
  row.upload_seconds = since(t0);
}

Status Run::run_round() {
  const std::size_t t = scheduler_.next();
  TaskState& task = tasks_[t];
  const int round_size = scheduler_.rounds(t) == 0 ? first_round_size(o_) : o_.per_round;
  const int count = std::min(round_size, o_.budget - measured_);
  core::SplitMix64 rng(core::splitmix64(o_.seed * 0x100000001B3ULL + static_cast<std::uint64_t>(rounds_)));
  RoundRow row;
  row.round = rounds_;
  row.task = t;
  row.task_name = task_name(task.space.workload());

  Clock::time_point t0 = Clock::now();
  auto picks = search_round(task.space, t, model_, task.keys, task.best_first(), count, o_.search, rng);
  if (!picks) return picks.status();
  if (picks->empty()) {  // every program of a small space measured: the task is done
    scheduler_.exhaust(t);
    return Status::ok();
  }
  row.search_seconds = since(t0);
  std::vector<core::Record> records;
  for (const Point& p : *picks) records.push_back(task.space.record(p));

  t0 = Clock::now();
  std::vector<core::Record> measured = h_.measure ? h_.measure(records) : measure_here(records);
  row.measure_seconds = since(t0);
  if (measured.size() != records.size()) return Status::internal("the measurer returned a different count");
  for (const core::Record& r : measured) {
    if (!task.add(r)) return Status::internal("a measured record is not a program of its task");
    row.valid += r.error_no == 0 ? 1 : 0;
    log_.push_back(r);
  }
  t0 = Clock::now();
  if (Status s = model_.learn(t, task.space, task.points, task.seconds); !s) return s;
  row.learn_seconds = since(t0);

  ++rounds_;
  measured_ = static_cast<int>(log_.size());
  round_end_.push_back(measured_);
  scheduler_.record(t, task.best_seconds);
  row.measured = measured_;
  row.task_best_seconds = task.best_seconds;
  row.network_seconds = network_seconds(o_, tasks_);
  upload_pending(row);
  row.wall_seconds = wall_offset_ + since(started_);
  if (Status s = dir_.append(row, measured); !s) return s;
  std::vector<core::Record> best;
  for (const TaskState& s : tasks_) {
    if (s.best) best.push_back(*s.best);
  }
  if (Status s = dir_.write_best(best); !s) return s;
  if (Status s = dir_.write_curve_svg(o_.network + " (" + o_.model + ")"); !s) return s;
  if (h_.progress) h_.progress(report_of(row), false);
  return Status::ok();
}

TuneResult Run::result() const {
  TuneResult r;
  r.rounds = rounds_;
  r.measured = measured_;
  r.resumed_rounds = resumed_;
  r.network_seconds = network_seconds(o_, tasks_);
  for (const TaskState& s : tasks_) r.task_best_seconds.push_back(s.best_seconds);
  r.pending_upload = h_.upload ? rounds_ - dir_.uploaded_rounds() : 0;
  r.last_upload_error = upload_error_;
  return r;
}

}  // namespace

int first_round_size(const TuneOptions& o) { return o.warmup > 0 ? o.warmup : o.per_round; }

std::string run_name(const TuneOptions& o) {
  std::string model = o.model;
  std::replace(model.begin(), model.end(), '+', '-');
  std::string name = o.network + "-" + model;
  if (o.search.pick != PickRule::kTop) name += "-pick-" + std::string(pick_rule_name(o.search.pick));
  if (first_round_size(o) != o.per_round) name += "-warmup-" + std::to_string(o.warmup);
  return name + "-s" + std::to_string(o.seed);
}

Result<TuneResult> tune(const TuneOptions& options, const TuneHooks& hooks) {
  if (options.tasks.empty()) return Status::invalid_argument("the network has no tasks");
  if (options.per_round < 1) return Status::invalid_argument("per_round must be at least 1");
  if (options.warmup < 0) return Status::invalid_argument("warmup must be 0 (per_round) or more");
  if (options.budget < 1) return Status::invalid_argument("budget must be at least 1");
  if (options.search.population < 1) return Status::invalid_argument("population must be at least 1");
  if (options.search.population_per_pick < 0)
    return Status::invalid_argument("population_per_pick must be 0 (always population) or more");
  std::vector<TaskState> tasks;
  for (const measure::Task& t : options.tasks) {
    auto space = Space::create(t.workload, options.hardware);
    if (!space) return space.status();
    tasks.push_back(TaskState{std::move(*space), {}, {}, {}, std::nullopt, INFINITY});
  }
  auto model = make_cost_model(options.model, hooks.lineage, options.seed);
  if (!model) return model.status();
  auto dir = RunDir::open(options.dir, settings_json(options));
  if (!dir) return dir.status();
  std::vector<core::Record> records;
  auto rows = (*dir)->read(&records);
  if (!rows) return rows.status();
  Run run(options, hooks, **dir, **model, std::move(tasks));
  if (Status s = run.replay(*rows, records); !s) return s;
  while (!run.done()) {
    if (Status s = run.run_round(); !s) return s;
  }
  return run.result();
}

}  // namespace tcl::tuner
