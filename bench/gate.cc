// bench/gate.cc — the promotion gate's comparison on a records file, as a
// distill job makes it for an old platform (onboarding/distill.h): two
// checkpoints (a teacher and a student, or two seeds) scored on the same
// judged records, every task or the standing split's, kJudgedProgramsPerTask
// programs each at most. Prints the gate's reason line, the standing
// split apart, the smallest top-1 loss the comparison resolves (2 se) and
// the time each step took.
//
//   bench_gate RECORDS --teacher CKPT --student CKPT [--platform NAME]
//              [--per-task N] [--standing-split] [--threads T] [--margin M]
//              [--subsets K,...]
// --platform: a checkpoint that keeps per-platform adapters or pinned models
// (tcld's distills) is scored as NAME's model, the trunk when it has none for
// NAME (trainer::platform_checkpoint, as the gate does); default the trunk.
// --subsets (an experiment, not what the gate does): each task's programs
// dealt into K subsets, top-1 taken in each and averaged per task — the
// task-mean difference and its paired se for each K.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/lib/flags.h"
#include "bench/lib/records.h"
#include "core/files.h"
#include "core/program_id.h"
#include "onboarding/distill.h"
#include "onboarding/promotion_gate.h"
#include "trainer/cost_model.h"

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string read_file(const std::string& path) {
  std::string bytes;
  return tcl::core::read_file(path, &bytes) ? bytes : std::string();
}

void print(const tcl::onboarding::PlatformComparison& c, double margin) {
  const auto d = tcl::onboarding::promotion_decision({c}, margin);
  std::printf("%s\n", d.reasons.front().c_str());
  std::printf("  resolves (2 se): top-1 mean %.4f, sum %.4f, tuning proxy %.1f%%\n", 2 * c.top1_mean_se,
              2 * c.top1_sum_se, 200 * c.tuning_log_se);
}

// The task-mean top-1 of both models when each task's programs are dealt
// into k subsets (in input order, i % k) and top-1 is averaged over them.
void print_subsets(const tcl::trainer::ScoredPrograms& s, int k) {
  namespace tr = tcl::trainer;
  std::vector<std::int64_t> groups(s.groups.size());
  std::vector<std::int64_t> seen(s.task_keys.size(), 0);
  for (std::size_t i = 0; i < groups.size(); ++i) {
    const auto g = static_cast<std::size_t>(s.groups[i]);
    groups[i] = s.groups[i] * k + seen[g]++ % k;
  }
  const auto student = tr::per_task_ranking(groups, s.latencies, s.scores[0]);
  const auto teacher = tr::per_task_ranking(groups, s.latencies, s.scores[1]);
  std::vector<double> t_sum(s.task_keys.size()), d_sum(s.task_keys.size()), n(s.task_keys.size());
  for (std::size_t i = 0; i < student.size(); ++i) {
    const auto task = static_cast<std::size_t>(student[i].group / k);
    t_sum[task] += teacher[i].top1();
    d_sum[task] += student[i].top1() - teacher[i].top1();
    n[task] += 1;
  }
  double tm = 0, dm = 0, dd = 0, tasks = 0;
  std::vector<double> d;
  for (std::size_t t = 0; t < n.size(); ++t) {
    if (n[t] == 0) continue;
    tm += t_sum[t] / n[t];
    d.push_back(d_sum[t] / n[t]);
    dm += d.back();
    tasks += 1;
  }
  dm /= tasks;
  for (double x : d) dd += (x - dm) * (x - dm);
  const double se = std::sqrt(dd / (tasks - 1) / tasks);
  std::printf("subsets %d: %.0f tasks, teacher top-1 mean %.4f, change %+.4f ± %.4f se (2 se %.4f)\n", k, tasks,
              tm / tasks, dm, se, 2 * se);
}

}  // namespace

int main(int argc, char** argv) {
  namespace ob = tcl::onboarding;
  std::vector<std::string> files;
  std::string teacher_path, student_path, platform_name;
  std::int64_t per_task = ob::kJudgedProgramsPerTask;
  bool standing_split = false;
  int threads = 0;
  double margin = 0.01;
  std::vector<double> subsets;
  tcl::bench::Flags flags;
  flags.positional("records", &files, 1)
      .value("teacher", &teacher_path)
      .value("student", &student_path)
      .value("platform", &platform_name)
      .value("per-task", &per_task)
      .flag("standing-split", &standing_split)
      .value("threads", &threads)
      .value("margin", &margin)
      .list("subsets", &subsets);
  if (!flags.parse(argc, argv) || files.size() != 1 || teacher_path.empty() || student_path.empty()) {
    std::fprintf(stderr,
                 "usage: bench_gate RECORDS --teacher CKPT --student CKPT [--platform NAME] [--per-task N] "
                 "[--standing-split] [--threads T] [--margin M] [--subsets K,...]\n");
    return 2;
  }
  auto t0 = Clock::now();
  ob::JudgedRecords judged(standing_split, per_task);
  std::int64_t read = 0;
  if (!tcl::bench::for_each_record(files[0], [&](tcl::core::Record& r) {
        ++read;
        judged.add(tcl::core::program_id(r), r);
        return true;
      })) {
    return 1;
  }
  const std::vector<tcl::core::Record> records = judged.take();
  const double read_s = since(t0);
  if (records.empty()) {
    std::fprintf(stderr, "no measured record kept\n");
    return 1;
  }
  auto platform = tcl::trainer::platform_of(records);
  if (!platform) {
    std::fprintf(stderr, "%s\n", platform.status().to_string().c_str());
    return 1;
  }
  t0 = Clock::now();
  // A checkpoint that keeps adapters is scored as --platform's model (the trunk by default).
  const auto as_platform = [&](const std::string& path) {
    auto own = tcl::trainer::platform_checkpoint(read_file(path), platform_name);
    if (!own) std::fprintf(stderr, "%s: %s\n", path.c_str(), own.status().to_string().c_str());
    return own;
  };
  const auto teacher = as_platform(teacher_path), student = as_platform(student_path);
  if (!teacher || !student) return 1;
  auto scores = ob::evaluate_against_teacher(*student, *teacher, records, *platform, threads);
  if (!scores) {
    std::fprintf(stderr, "%s\n", scores.status().to_string().c_str());
    return 1;
  }
  const double score_s = since(t0);
  std::printf(
      "# bench_gate %s: %lld records read, %zu kept (%s, at most %lld per task) in %.1f s; scored by both in "
      "%.1f s\n",
      files[0].c_str(), static_cast<long long>(read), records.size(), standing_split ? "standing split" : "every task",
      static_cast<long long>(per_task), read_s, score_s);
  const std::string judged_text = per_task == ob::kJudgedProgramsPerTask
                                      ? ob::judged_on(standing_split)
                                      : "at most " + std::to_string(per_task) + " programs each (--per-task)";
  print(ob::comparison_of("all", false, judged_text, &*scores), margin);
  const double eval_fraction = tcl::trainer::TrainRequest::default_data_options().eval_fraction;
  print(ob::paired_comparison("standing split", false, "its standing split",
                              ob::standing_split_tasks(*scores, eval_fraction)),
        margin);
  if (!subsets.empty()) {
    const std::string_view checkpoints[] = {*student, *teacher};
    auto scored = tcl::trainer::score_checkpoints(checkpoints, records, *platform, threads);
    if (!scored) return 1;
    for (double k : subsets) print_subsets(*scored, static_cast<int>(k));
  }
  return 0;
}
