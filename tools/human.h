// tools/human.h — tclctl's text for people (every command's default; --json
// gives the API's JSON instead): aligned summaries of the objects tcld
// answers with, and the one-line progress of a job.
// Thread-safety: pure functions, and ProgressLine is single-threaded.
#pragma once

#include <boost/json/value.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tcl::tools {

// "label   value" lines, the values in one column after the widest label.
using Fields = std::vector<std::pair<std::string, std::string>>;
std::string aligned(const Fields& fields);

// A number for reading: integers as they are, others to 4 significant digits
// ("0.8731", "3.156", "1.5e-05"); null and missing as "-".
std::string readable(const boost::json::value* v);
// Seconds as "42s", "3m05s", "1h02m".
std::string duration(double seconds);
// Seconds since an API timestamp ("2026-11-27T17:35:44Z") on this machine's
// clock; nullopt when `iso` is empty or not of that form.
std::optional<double> seconds_since(const std::string& iso);

// GET /v1/platforms/{name}: name, target, hardware, description, the counts
// and the onboarding state. Also POST /v1/platforms' answer (no counts).
std::string platform_summary(const boost::json::value& platform);
// GET /v1/jobs/{id}: kind, platform, state, options, progress, error,
// result, attempts, times.
std::string job_summary(const boost::json::value& job);
// POST /v1/platforms/{name}/sample-requests: the request's fields (pool,
// picked, strategy, model, timings), then one row per pick (rank, R, D, U,
// score, task) when `with_picks`.
std::string sample_summary(const boost::json::value& request, bool with_picks);

// GET /v1/models as a table: version, parent, status, aliases, platforms,
// created, and per platform its top-1 on the platform's standing split
// (metrics.<platform>.standing_split: the same programs for every version,
// so a model that did not change reads the same figure on every row). Under
// the table: why each candidate is one (its status_reasons' first
// "blocking" line, or the first reason shortened, or "not judged by the
// promotion gate"), and what the figures are on, with a note for each mark
// used: "*" a figure not on the standing split (a version from before it,
// or a platform without one), "+" a model trained on those tasks, "<" below
// random order on them.
std::string lineage_table(const boost::json::value& models);

// What an onboarding ended with, for people: `version` (GET /v1/models/{v})
// made for `platform` (GET /v1/platforms/{name}, its counts), production
// now being version `production` (0: none). Promoted: that it serves the
// platform now, with its model's top-1 on the platform's standing split
// beside random order's. A candidate: that it stays one, why (the gate's
// first blocking line), the same figures, below random said plainly, the
// platform's measurements, and what to do (measure more, onboard again).
std::string onboard_verdict(const boost::json::value& version, const boost::json::value& platform,
                            std::int64_t production);

// The job's progress as one line: phase (or final state), epoch k/n, steps,
// loss, validation top-1 and tuning proxy when the job reports them,
// elapsed and ETA (from the time per epoch so far).
std::string progress_text(const boost::json::value& job, double elapsed_s);

// Shows a job's progress while it runs. On a terminal the line is redrawn in
// place (carriage return, clear line) at every update; otherwise a line is
// written when the job's state or progress changed, so a log gets one line
// per change. A terminal line is cut at `width` columns (0: no limit), so
// that it never wraps (a wrapped line cannot be cleared in place).
class ProgressLine {
 public:
  ProgressLine(std::FILE* out, bool terminal, std::size_t width = 0);
  void update(const boost::json::value& job);
  // Ends the line in place on a terminal; nothing otherwise.
  void finish();

 private:
  double elapsed(const boost::json::value& job);
  std::FILE* out_;
  bool terminal_;
  std::size_t width_;
  bool drawn_ = false;
  std::string last_;  // state and progress of the last line, as JSON
  std::chrono::steady_clock::time_point watching_since_ = std::chrono::steady_clock::now();
};

}  // namespace tcl::tools
