#include "tools/human.h"

#include <boost/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>

#include "core/json_write.h"

namespace tcl::tools {
namespace json = boost::json;

namespace {

const json::value* field(const json::value& o, std::string_view key) {
  const json::object* obj = o.if_object();
  return obj == nullptr ? nullptr : obj->if_contains(key);
}

// A field as text: strings bare, numbers readable, null/missing "-", the rest JSON.
std::string shown(const json::value* v) {
  if (v == nullptr || v->is_null()) return "-";
  if (v->is_string()) return std::string(v->get_string());
  if (v->is_number()) return readable(v);
  if (v->is_bool()) return v->get_bool() ? "yes" : "no";
  return core::write_json(*v);
}

std::string shown(const json::value& o, std::string_view key) { return shown(field(o, key)); }

// {"a": 1, "b": "x"} as "a=1 b=x"; "-" when empty.
std::string pairs(const json::value* v) {
  if (v == nullptr || !v->is_object() || v->get_object().empty()) return "-";
  std::string out;
  for (const auto& [k, x] : v->get_object()) {
    if (!out.empty()) out += ' ';
    out += std::string(k) + "=" + shown(&x);
  }
  return out;
}

std::string joined(const json::value* v, const char* sep) {
  if (v == nullptr || !v->is_array()) return shown(v);
  std::string out;
  for (const auto& x : v->get_array()) out += (out.empty() ? "" : sep) + shown(&x);
  return out;
}

double number_or(const json::value* v, double fallback) {
  return v != nullptr && v->is_number() ? v->to_number<double>() : fallback;
}

// The progress's tuning proxy: its name varies with the trainer (a key that
// mentions "proxy"); nullptr when the job does not report one.
const json::value* tuning_proxy(const json::value* progress) {
  if (progress == nullptr || !progress->is_object()) return nullptr;
  for (const auto& [k, x] : progress->get_object()) {
    if (x.is_number() && std::string_view(k).find("proxy") != std::string_view::npos) return &x;
  }
  return nullptr;
}

// The phase's own count (the phases after training: evaluating, fisher,
// saving, judging): "512/2450 programs (21%)"; "" when the progress has none.
std::string phase_count(const json::value& p) {
  const json::value* done = field(p, "done");
  const json::value* total = field(p, "total");
  if (done == nullptr || total == nullptr || !done->is_number() || !total->is_number()) return "";
  std::string out = readable(done) + "/" + readable(total);
  if (const json::value* unit = field(p, "unit"); unit != nullptr && unit->is_string()) out += " " + shown(unit);
  if (const double t = total->to_number<double>(); t > 0) {
    char pct[16];
    std::snprintf(pct, sizeof pct, " (%.0f%%)", 100 * std::clamp(done->to_number<double>() / t, 0.0, 1.0));
    out += pct;
  }
  return out;
}

// The progress's fields for reading: "training  epoch 2/5  steps 120  loss
// 0.4123  val top-1 0.873  proxy 0.91" (after the epochs a phase's count and
// platform first: "fisher  12/43 batches (28%)  epoch 5/5 ..."), then any
// field not named here.
std::string progress_fields(const json::value* p, bool with_phase) {
  if (p == nullptr || !p->is_object()) return "";
  std::string out;
  const auto add = [&out](const std::string& part) { out += (out.empty() ? "" : "  ") + part; };
  if (with_phase && field(*p, "phase") != nullptr) add(shown(*p, "phase"));
  if (const json::value* platform = field(*p, "platform")) add(shown(platform));
  if (std::string count = phase_count(*p); !count.empty()) add(count);
  if (number_or(field(*p, "epoch"), 0) > 0 && number_or(field(*p, "epochs"), 0) > 0) {
    add("epoch " + readable(field(*p, "epoch")) + "/" + readable(field(*p, "epochs")));
  }
  if (const json::value* s = field(*p, "steps")) add("steps " + readable(s));
  if (const json::value* l = field(*p, "loss")) add("loss " + readable(l));
  if (const json::value* t = field(*p, "val_top1")) add("val top-1 " + readable(t));
  const json::value* proxy = tuning_proxy(p);
  if (proxy != nullptr) add("proxy " + readable(proxy));
  if (!with_phase) return out;
  for (const auto& [k, x] : p->get_object()) {
    static constexpr std::string_view kShown[] = {"phase", "platform", "done",  "total", "unit",
                                                  "epoch", "epochs",   "steps", "loss",  "val_top1"};
    if (&x == proxy || std::find(std::begin(kShown), std::end(kShown), std::string_view(k)) != std::end(kShown)) {
      continue;
    }
    add(std::string(k) + " " + shown(&x));
  }
  return out;
}

}  // namespace

std::string aligned(const Fields& fields) {
  std::size_t width = 0;
  for (const auto& [label, value] : fields) width = std::max(width, label.size());
  std::string out;
  for (const auto& [label, value] : fields) {
    out += label;
    if (!value.empty()) out.append(width + 2 - label.size(), ' ') += value;
    out += '\n';
  }
  return out;
}

std::string readable(const json::value* v) {
  if (v == nullptr || v->is_null()) return "-";
  if (v->is_int64()) return std::to_string(v->get_int64());
  if (v->is_uint64()) return std::to_string(v->get_uint64());
  if (!v->is_double()) return shown(v);
  const double x = v->get_double();
  char buf[32];
  if (x == std::floor(x) && std::fabs(x) < 1e15) {
    std::snprintf(buf, sizeof buf, "%.0f", x);
  } else {
    std::snprintf(buf, sizeof buf, "%.4g", x);
  }
  return buf;
}

std::string duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%lds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", s / 60, s % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", s / 3600, (s % 3600) / 60);
  }
  return buf;
}

std::optional<double> seconds_since(const std::string& iso) {
  std::tm tm{};
  int consumed = 0;
  if (std::sscanf(iso.c_str(), "%4d-%2d-%2dT%2d:%2d:%2dZ%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
                  &tm.tm_min, &tm.tm_sec, &consumed) != 6 ||
      consumed != static_cast<int>(iso.size())) {
    return std::nullopt;
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return std::difftime(std::time(nullptr), ::timegm(&tm));
}

std::string platform_summary(const json::value& p) {
  Fields f{{"name", shown(p, "name")},
           {"target", shown(p, "target")},
           {"hardware", joined(field(p, "hardware_params"), ",") +
                            "  (cores, vector bytes, cache line, shared mem, local mem, threads, vthreads, warp)"},
           {"description", shown(p, "description").empty() ? "-" : shown(p, "description")},
           {"created", shown(p, "created_at")}};
  if (const json::value* c = field(p, "counts")) {
    f.emplace_back("programs", shown(*c, "programs"));
    f.emplace_back("tasks", shown(*c, "tasks"));
    f.emplace_back("measurements", shown(*c, "measurements") + " (+ " + shown(*c, "failed") + " failed)");
    f.emplace_back("candidates", shown(*c, "candidates"));
  }
  if (const json::value* o = field(p, "onboarding")) f.emplace_back("onboarding", shown(*o, "state"));
  return aligned(f);
}

std::string job_summary(const json::value& job) {
  std::string state = shown(job, "state");
  if (const json::value* c = field(job, "cancel_requested");
      c != nullptr && c->is_bool() && c->get_bool() && state != "cancelled") {
    state += " (cancel requested)";
  }
  Fields f{{"job", shown(job, "id")},
           {"kind", shown(job, "kind")},
           {"platform", shown(job, "platform")},
           {"state", state},
           {"options", pairs(field(job, "options"))},
           {"progress", progress_fields(field(job, "progress"), true)}};
  if (f.back().second.empty()) f.back().second = "-";
  if (const json::value* e = field(job, "error"); e != nullptr && !e->is_null()) f.emplace_back("error", shown(e));
  if (const json::value* v = field(job, "result_version"); v != nullptr && !v->is_null()) {
    f.emplace_back("result", "model version " + shown(v));
  }
  f.emplace_back("attempts", shown(job, "attempts") + " of " + shown(job, "max_attempts"));
  f.emplace_back("worker", shown(job, "worker"));
  f.emplace_back("created", shown(job, "created_at"));
  f.emplace_back("started", shown(job, "started_at"));
  f.emplace_back("finished", shown(job, "finished_at"));
  return aligned(f);
}

std::string sample_summary(const json::value& r, bool with_picks) {
  const json::value* params = field(r, "params");
  const json::value* items = field(r, "items");
  const std::size_t picked = items != nullptr && items->is_array() ? items->get_array().size() : 0;
  Fields f{{"sample request", shown(r, "id")},
           {"platform", shown(r, "platform")},
           {"strategy", shown(r, "strategy")},
           {"model", field(r, "model_version") != nullptr && !field(r, "model_version")->is_null()
                         ? "version " + shown(r, "model_version")
                         : "- (none yet: random)"},
           {"picked", std::to_string(picked) + " of a pool of " + (params ? shown(*params, "pool_size") : "-") +
                          " programs" + (params ? " (" + shown(*params, "pool_tasks") + " tasks)" : "")},
           {"status",
            shown(r, "status") + ", " + shown(r, "items_measured") + " of " + shown(r, "items_total") + " measured"}};
  if (params != nullptr) {
    if (const json::value* s = field(*params, "seconds")) f.emplace_back("seconds", pairs(s));
  }
  std::string out = aligned(f);
  if (!with_picks || picked == 0) return out;
  char row[160];
  std::snprintf(row, sizeof row, "\n%5s %8s %8s %8s %8s  %s\n", "RANK", "R", "D", "U", "SCORE", "TASK");
  out += row;
  for (const auto& it : items->get_array()) {
    std::snprintf(row, sizeof row, "%5s %8s %8s %8s %8s  ", shown(it, "rank").c_str(), shown(it, "r").c_str(),
                  shown(it, "d").c_str(), shown(it, "u").c_str(), shown(it, "score").c_str());
    out += row + shown(it, "task") + "\n";
  }
  return out;
}

namespace {

// The reason lines are long (tasks, figures, se, verdict): a table's note keeps this many characters.
constexpr std::size_t kReasonChars = 160;

std::string shortened(std::string line) {
  if (line.size() > kReasonChars) line = line.substr(0, kReasonChars - 3) + "...";
  return line;
}

// Which marks a lineage table used (its notes say what each means).
struct LineageMarks {
  bool judged_set = false, trained_on = false, below_random = false;
};

// One platform's cell: "x86-16c=0.512", with a mark when the figure is not
// on the standing split (*), its model trained on those tasks (+), or it is
// below random order there (<).
std::string top1_cell(const std::string& platform, const json::value& metrics, LineageMarks* marks) {
  const json::value* figure = field(metrics, "standing_split");
  const bool standing = figure != nullptr && field(*figure, "top1") != nullptr;
  if (!standing) figure = &metrics;
  const json::value* top1 = field(*figure, "top1");
  if (top1 == nullptr || !top1->is_number()) return "";
  char buf[48];
  std::snprintf(buf, sizeof buf, "=%.3f", top1->to_number<double>());
  std::string cell = platform + buf;
  if (!standing) {
    cell += "*";
    marks->judged_set = true;
  }
  if (const json::value* h = field(*figure, "held_out"); h != nullptr && h->is_bool() && !h->get_bool()) {
    cell += "+";
    marks->trained_on = true;
  }
  if (const json::value* r = field(*figure, "random_top1");
      standing && r != nullptr && r->is_number() && top1->to_number<double>() < r->to_number<double>()) {
    cell += "<";
    marks->below_random = true;
  }
  return cell;
}

// Why version `v` (a candidate) is one, in a line.
std::string candidate_why(const json::value& v) {
  const json::value* reasons = field(v, "status_reasons");
  const std::string version = shown(v, "version");
  if (reasons != nullptr) {
    if (const json::value* b = field(*reasons, "blocking"); b != nullptr && b->is_array() && !b->get_array().empty()) {
      const auto& all = b->get_array();
      std::string line = "version " + version + " stays a candidate: " + shortened(shown(&all.front()));
      if (all.size() > 1) line += " (and " + std::to_string(all.size() - 1) + " more: tclctl --json lineage)";
      return line;
    }
    if (const json::value* r = field(*reasons, "reasons"); r != nullptr && r->is_array() && !r->get_array().empty()) {
      return "version " + version + " stays a candidate: " + shortened(shown(&r->get_array().front()));
    }
  }
  return "version " + version + " is a candidate: not judged by the promotion gate (a train job's version)";
}

}  // namespace

std::string lineage_table(const json::value& models) {
  std::string out;
  char row[512];
  std::snprintf(row, sizeof row, "%-8s %-8s %-10s %-20s %-24s %-21s %s\n", "VERSION", "PARENT", "STATUS", "ALIASES",
                "PLATFORMS", "CREATED", "TOP-1 ON THE STANDING SPLIT (per platform)");
  out += row;
  LineageMarks marks;
  std::vector<std::string> why;
  const json::value* versions = field(models, "versions");
  if (versions != nullptr && versions->is_array()) {
    for (const auto& v : versions->get_array()) {
      std::string aliases = joined(field(v, "aliases"), ","), platforms = joined(field(v, "platforms"), ",");
      std::string top1;
      const json::value* metrics = field(v, "metrics");
      if (const json::value* names = field(v, "platforms"); names != nullptr && names->is_array() && metrics) {
        for (const auto& name : names->get_array()) {
          const json::value* m = name.is_string() ? field(*metrics, name.get_string()) : nullptr;
          const std::string cell = m != nullptr ? top1_cell(shown(&name), *m, &marks) : "";
          if (!cell.empty()) top1 += (top1.empty() ? "" : " ") + cell;
        }
      }
      std::snprintf(row, sizeof row, "%-8s %-8s %-10s %-20s %-24s %-21s %s\n", shown(v, "version").c_str(),
                    shown(v, "parent").c_str(), shown(v, "status").c_str(), aliases.empty() ? "-" : aliases.c_str(),
                    platforms.c_str(), shown(v, "created_at").c_str(), top1.empty() ? "-" : top1.c_str());
      out += row;
      if (shown(v, "status") == "candidate") why.push_back(candidate_why(v));
    }
  }
  out +=
      "\nTOP-1: per platform, the mean over its standing split's tasks (10% of its tasks, held out by task hash;\n"
      "at most 256 measured programs each, the lowest ids) of best latency / the top-ranked program's: the same\n"
      "programs for every version while the platform's measurements stay the same.\n";
  if (marks.judged_set)
    out += "  * not on the standing split: on the set its job judged (not comparable across versions)\n";
  if (marks.trained_on) out += "  + its model trained on those tasks (the job's eval_fraction was below 0.1)\n";
  if (marks.below_random)
    out += "  < below random order on those tasks (metrics.<platform>.standing_split.random_top1)\n";
  for (const std::string& line : why) out += line + "\n";
  return out;
}

std::string onboard_verdict(const json::value& version, const json::value& platform, std::int64_t production) {
  const std::string v = shown(version, "version"), name = shown(platform, "name");
  const json::value* metrics = field(version, "metrics");
  const json::value* own = metrics != nullptr ? field(*metrics, name) : nullptr;
  const json::value* figure = own != nullptr ? field(*own, "standing_split") : nullptr;
  // "its model of P scores top-1 0.410 on its standing split (3 held-out tasks, 19 measured programs), below
  // random order's 0.452"
  std::string scores;
  bool below_random = false;
  if (figure != nullptr && field(*figure, "top1") != nullptr) {
    const double top1 = number_or(field(*figure, "top1"), 0), random = number_or(field(*figure, "random_top1"), 0);
    below_random = top1 < random;
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "top-1 %.3f on its standing split (%s held-out tasks, %s measured programs), %s %.3f", top1,
                  shown(*figure, "eval_tasks").c_str(), shown(*figure, "eval_programs").c_str(),
                  below_random ? "below random order's" : "random order's", random);
    scores = "its model of " + name + " scores " + buf;
  }
  const std::string status = shown(version, "status");
  if (status != "candidate") {
    std::string out = "version " + v + (std::to_string(production) == v ? " is production now" : " is " + status);
    return out + (scores.empty() ? "" : ": " + scores) + "\n";
  }
  std::string out = "version " + v + " stays a candidate: production is still " +
                    (production > 0 ? "version " + std::to_string(production) : std::string("unset")) +
                    ", which keeps serving " + name + ".\n";
  const json::value* reasons = field(version, "status_reasons");
  const json::value* blocking = reasons != nullptr ? field(*reasons, "blocking") : nullptr;
  if (blocking != nullptr && blocking->is_array() && !blocking->get_array().empty()) {
    out += "  why: " + shortened(shown(&blocking->get_array().front())) + "\n";
  }
  if (!scores.empty()) out += "  " + scores + "\n";
  const json::value* counts = field(platform, "counts");
  const std::string measured = counts != nullptr ? shown(*counts, "measurements") : "-";
  out += "  " + name + " has " + measured + " measurements: " +
         (below_random ? "too few to learn its held-out tasks. " : "too few for the gate to see it learned. ") +
         "Measure more, then onboard again with a new --state\n  (e.g. --budget 60 --rounds 2 --state " +
         "tcl-onboard-" + name + "-2.state.json): another distill judges the new version.\n";
  return out;
}

std::string progress_text(const json::value& job, double elapsed_s) {
  const json::value* p = field(job, "progress");
  const std::string state = shown(job, "state");
  std::string line = "job " + shown(job, "id") + " " + state;
  if (state == "running" && p != nullptr && field(*p, "phase") != nullptr) line += ": " + shown(*p, "phase");
  const double epoch = p ? number_or(field(*p, "epoch"), 0) : 0;
  const double epochs = p ? number_or(field(*p, "epochs"), 0) : 0;
  if (const std::string fields = progress_fields(p, false); !fields.empty()) line += "  " + fields;
  line += "  elapsed " + duration(elapsed_s);
  if (state == "running" && epoch > 0 && epochs > epoch) {
    line += "  eta " + duration(elapsed_s / epoch * (epochs - epoch));
  }
  return line;
}

ProgressLine::ProgressLine(std::FILE* out, bool terminal, std::size_t width)
    : out_(out), terminal_(terminal), width_(width) {}

double ProgressLine::elapsed(const json::value& job) {
  const std::string started = shown(job, "started_at");
  const std::string finished = shown(job, "finished_at");
  const auto since_start = seconds_since(started);
  if (since_start && *since_start >= 0) {
    const auto since_end = seconds_since(finished);
    return since_end ? *since_start - *since_end : *since_start;
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - watching_since_).count();
}

void ProgressLine::update(const json::value& job) {
  const std::string now =
      shown(job, "state") + " " + core::write_json(field(job, "progress") ? *field(job, "progress") : json::value());
  if (!terminal_ && now == last_) return;
  last_ = now;
  std::string line = progress_text(job, elapsed(job));
  if (terminal_ && width_ > 1 && line.size() >= width_) line.resize(width_ - 1);
  std::fprintf(out_, terminal_ ? "\r\033[K%s" : "%s\n", line.c_str());
  std::fflush(out_);
  drawn_ = terminal_;
}

void ProgressLine::finish() {
  if (drawn_) std::fputc('\n', out_);
  drawn_ = false;
  std::fflush(out_);
}

}  // namespace tcl::tools
