// tools/onboard.cc — `tclctl onboard`: the onboarding workflow of DESIGN §1
// driven from the client: pool → rounds of sample requests → measurements →
// distill (or the first training) → lineage. The lab that answers each round
// is either a file of known measurements (how we evaluate on real logs) or
// this machine, measured by measure/ (tcl-measure's library).
//
// Progress is kept in a small state file so an interrupted run resumes: the
// open sample request is finished (its records still to measure come from
// tcld, so nothing measured is measured twice), finished rounds are skipped
// and a started job is waited for, not started again.
#include <boost/json.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/line_reader.h"
#include "core/program_id.h"
#include "core/record.h"
#include "measure/process.h"
#include "tools/commands_internal.h"
#include "tools/human.h"
#include "tools/local_lab.h"
#include "tools/upload.h"

namespace tcl::tools {
namespace json = boost::json;

namespace {

// What a round's picked programs are answered with.
class Lab {
 public:
  virtual ~Lab() = default;
  // Appends one measured record line per answered program of `to_measure`
  // (candidate record lines) to `out`; counts the ones it cannot answer.
  virtual Status measure(const std::vector<std::string>& to_measure, std::string* out, std::size_t* unanswered) = 0;
  // Programs per measure() call (and per upload): what an interruption may
  // lose against what one call costs to start.
  virtual std::size_t chunk_size() const { return 64; }
};

// Answers from known measurements, by program identity.
class AnswersLab final : public Lab {
 public:
  static Result<std::unique_ptr<AnswersLab>> open(const std::string& path) {
    auto lab = std::make_unique<AnswersLab>();
    auto reader = core::LineReader::open(path);
    if (!reader) return reader.status();
    core::RecordParser parser;
    core::Record r;
    std::string_view line;
    while ((*reader)->next(&line)) {
      if (core::is_skippable_line(line) || !parser.parse(line, &r).is_ok()) continue;
      if (core::classify(r) == core::RecordClass::kCandidate) continue;
      lab->known_.try_emplace(core::program_id(r), std::string(line));
    }
    if (Status s = (*reader)->status(); !s) return Status::invalid_argument(path + ": " + s.message());
    std::fprintf(stderr, "tclctl: %zu known measurements in %s\n", lab->known_.size(), path.c_str());
    return lab;
  }

  Status measure(const std::vector<std::string>& to_measure, std::string* out, std::size_t* unanswered) override {
    core::RecordParser parser;
    core::Record r;
    for (const std::string& line : to_measure) {
      if (!parser.parse(line, &r).is_ok()) return Status::invalid_argument("tcld sent a record tclctl cannot read");
      auto it = known_.find(core::program_id(r));
      if (it == known_.end()) {
        ++*unanswered;
        continue;
      }
      *out += it->second;
      out->push_back('\n');
    }
    return Status::ok();
  }

 private:
  std::unordered_map<std::string, std::string> known_;
};

// Measures on this machine.
class MachineLab final : public Lab {
 public:
  explicit MachineLab(LocalLabOptions options) : lab_(options) {}
  Status measure(const std::vector<std::string>& to_measure, std::string* out, std::size_t* unanswered) override {
    return lab_.measure(to_measure, out, unanswered);
  }

 private:
  LocalLab lab_;  // local_lab.h
};

// Runs a user's command per chunk: `{in}` in it is replaced by a file of
// the records to measure (candidate lines), `{out}` by the file the command
// writes its measured records to (both are appended when absent). A command
// that fails or runs past its limit fails the round; the request stays open
// and a rerun resumes it.
class CommandLab final : public Lab {
 public:
  CommandLab(std::string command, double timeout_seconds) : command_(std::move(command)), timeout_(timeout_seconds) {}

  Status measure(const std::vector<std::string>& to_measure, std::string* out, std::size_t* unanswered) override {
    namespace fs = std::filesystem;
    std::string dir = (fs::temp_directory_path() / "tclctl-lab-XXXXXX").string();
    if (mkdtemp(dir.data()) == nullptr) return Status::unavailable("cannot create a directory for the lab command");
    const std::string in = dir + "/to-measure.jsonl", measured = dir + "/measured.jsonl";
    std::ofstream f(in, std::ios::trunc);
    for (const auto& line : to_measure) f << line << '\n';
    f.close();
    Status status = Status::ok();
    const measure::CommandResult ran =
        f ? measure::run_command({"/bin/sh", "-c", expand(in, measured)}, timeout_) : measure::CommandResult{};
    if (!f) {
      status = Status::unavailable("cannot write " + in + " for the lab command");
    } else if (ran.timed_out) {
      status = Status::unavailable("the lab command ran past " + std::to_string(timeout_) + " s");
    } else if (ran.exit_code != 0) {
      status = Status::unavailable("the lab command failed (exit " + std::to_string(ran.exit_code) +
                                   "): " + ran.output.substr(ran.output.size() > 600 ? ran.output.size() - 600 : 0));
    } else {
      status = read_measured(measured, to_measure.size(), out, unanswered);
    }
    std::error_code ec;
    fs::remove_all(dir, ec);
    return status;
  }
  std::size_t chunk_size() const override { return 512; }

 private:
  // The command with {in} and {out} replaced by the paths, quoted for sh.
  std::string expand(const std::string& in_path, const std::string& out_path) const {
    auto quoted = [](const std::string& path) {
      std::string q = "'";
      for (char c : path) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      return q + "'";
    };
    const std::string in = quoted(in_path), out = quoted(out_path);
    std::string cmd = command_;
    auto replace = [&cmd](const std::string& key, const std::string& value) {
      bool found = false;
      for (auto p = cmd.find(key); p != std::string::npos; p = cmd.find(key, p + value.size())) {
        cmd.replace(p, key.size(), value);
        found = true;
      }
      return found;
    };
    const bool has_in = replace("{in}", in), has_out = replace("{out}", out);
    if (!has_in) cmd += " " + in;
    if (!has_out) cmd += " " + out;
    return cmd;
  }

  // The measured lines of `path` (candidates in it are unanswered programs).
  static Status read_measured(const std::string& path, std::size_t asked, std::string* out, std::size_t* unanswered) {
    auto reader = core::LineReader::open(path);
    if (!reader) return Status::unavailable("the lab command wrote no " + path + ": " + reader.status().message());
    core::RecordParser parser;
    core::Record r;
    std::string_view line;
    std::size_t answered = 0;
    while ((*reader)->next(&line)) {
      if (core::is_skippable_line(line)) continue;
      if (Status s = parser.parse(line, &r); !s)
        return Status::invalid_argument("the lab command's line " + std::to_string((*reader)->line_number()) + ": " +
                                        s.message());
      if (core::classify(r) == core::RecordClass::kCandidate) continue;
      out->append(line);
      out->push_back('\n');
      ++answered;
    }
    *unanswered += asked > answered ? asked - answered : 0;
    return (*reader)->status();
  }

  std::string command_;
  double timeout_;
};

// The resumable part of a run, as JSON in a file written atomically.
struct OnboardState {
  std::string path;
  int rounds_done = 0;
  std::string open_request;    // sample request being measured
  std::string pending_job;     // fine-tune between rounds, or the final job
  bool final_started = false;  // pending_job is the final distill/train
  bool done = false;

  static OnboardState load(const std::string& path) {
    OnboardState s;
    s.path = path;
    std::ifstream in(path);
    if (!in) return s;
    std::stringstream ss;
    ss << in.rdbuf();
    boost::system::error_code ec;
    json::value v = json::parse(ss.str(), ec);
    if (ec || !v.is_object()) return s;
    const json::object& o = v.as_object();
    if (auto* p = o.if_contains("rounds_done"); p && p->is_int64()) s.rounds_done = static_cast<int>(p->as_int64());
    if (auto* p = o.if_contains("open_request"); p && p->is_string()) s.open_request = p->as_string();
    if (auto* p = o.if_contains("pending_job"); p && p->is_string()) s.pending_job = p->as_string();
    if (auto* p = o.if_contains("final_started"); p && p->is_bool()) s.final_started = p->as_bool();
    if (auto* p = o.if_contains("done"); p && p->is_bool()) s.done = p->as_bool();
    return s;
  }

  void save() const {
    const json::object o{{"rounds_done", rounds_done},
                         {"open_request", open_request},
                         {"pending_job", pending_job},
                         {"final_started", final_started},
                         {"done", done}};
    const std::string tmp = path + ".tmp";
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << json::serialize(o) << "\n";
    }
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    if (ec)
      std::fprintf(stderr, "tclctl: cannot save %s: %s (a rerun starts over)\n", path.c_str(), ec.message().c_str());
  }
};

// The records request ID still waits for, as lines.
Result<std::vector<std::string>> still_to_measure(ApiClient& api, const std::string& id) {
  auto r = api.call("GET", "/v1/sample-requests/" + id, "", {{"Accept", "application/x-ndjson"}});
  if (!r) return r.status();
  if (r->status != 200) return Status::unavailable("sample request " + id + ": " + r->error_text());
  std::vector<std::string> lines;
  std::istringstream in(r->body);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(std::move(line));
  return lines;
}

// Measures request ID's remaining records chunk by chunk, uploading each
// chunk as it is measured. Counts what the lab could not answer.
Status run_round(ApiClient& api, Lab& lab, const std::string& platform, const std::string& id, std::size_t picked,
                 std::size_t* unanswered) {
  auto lines = still_to_measure(api, id);
  if (!lines) return lines.status();
  const std::size_t already = picked >= lines->size() ? picked - lines->size() : 0;
  for (std::size_t begin = 0; begin < lines->size(); begin += lab.chunk_size()) {
    const std::size_t end = std::min(lines->size(), begin + lab.chunk_size());
    const std::vector<std::string> chunk(lines->begin() + static_cast<std::ptrdiff_t>(begin),
                                         lines->begin() + static_cast<std::ptrdiff_t>(end));
    std::string body;
    if (Status s = lab.measure(chunk, &body, unanswered); !s) return s;
    if (!body.empty()) {
      // The key names the chunk's first program: a retry of this chunk
      // replays, a resumed run (whose chunks start elsewhere) uploads anew.
      core::RecordParser parser;
      core::Record first;
      std::string key = "onboard-" + platform + "-" + id + "-" + std::to_string(begin);
      if (parser.parse(chunk.front(), &first).is_ok()) key = "onboard-" + id + "-" + core::program_id(first);
      auto up = api.call("POST", "/v1/platforms/" + platform + "/measurements", body,
                         {{"Content-Type", "application/x-ndjson"}, {"Idempotency-Key", key}});
      if (!up) return up.status();
      if (up->status != 201 && up->status != 200) return Status::unavailable("upload: " + up->error_text());
      const json::value report = up->json();
      if (auto* rej = report.is_object() ? report.as_object().if_contains("rejected") : nullptr;
          rej && rej->is_array() && !rej->as_array().empty()) {
        std::fprintf(stderr, "\ntclctl: %zu measured lines rejected, first: %s\n", rej->as_array().size(),
                     json::serialize(rej->as_array().front()).c_str());
      }
    }
    std::fprintf(stderr, "\r  measured %zu/%zu", already + end, picked);
    std::fflush(stderr);
  }
  if (!lines->empty()) std::fputc('\n', stderr);
  return Status::ok();
}

// Starts a job on the platform; its id, or "" after printing the failure.
std::string start_job(ApiClient& api, const std::string& platform, const json::object& body) {
  auto started = api.call("POST", "/v1/platforms/" + platform + "/jobs", json::serialize(body));
  if (!started) {
    fail(started.status().message());
    return "";
  }
  if (started->status != 202) {
    fail(started->error_text());
    return "";
  }
  return text(started->json().at("id"));
}

bool has_production(ApiClient& api) {
  auto r = api.call("GET", "/v1/aliases/production");
  return r && r->status == 200;
}

int usage() {
  std::fputs(
      "usage: tclctl onboard --platform P (--candidates FILE (--answers FILE | --lab-command CMD [--lab-timeout-s S])\n"
      "                      | --measure-local [--models M,..] [--per-task N])\n"
      "                      [--rounds N] [--fraction F | --budget N] [--strategy S] [--seed N]\n"
      "                      [--finetune-epochs E] [--distill] [--epochs N] [--state FILE]\n",
      stderr);
  return 2;
}

}  // namespace

// Registers the local machine as `platform` unless it exists.
int ensure_local_platform(ApiClient& api, const std::string& platform, const LocalHardware& hw) {
  auto got = api.call("GET", "/v1/platforms/" + platform);
  if (!got) return fail(got.status().message());
  if (got->status == 200) return 0;
  if (got->status != 404) return fail(got->error_text());
  json::array params;
  for (long long p : hw.hardware_params) params.push_back(p);
  const json::object body{{"name", platform},
                          {"target", hw.target},
                          {"hardware_params", params},
                          {"description", "this machine, measured by tcl-measure: " + hw.description}};
  auto r = api.call("POST", "/v1/platforms", json::serialize(body));
  if (!r) return fail(r.status().message());
  if (r->status != 201) return fail(r->error_text());
  std::fprintf(stderr, "tclctl: registered %s (%s)\n", platform.c_str(), hw.target.c_str());
  return 0;
}

// The lab that measures the picks: this machine (registered first, and its
// candidate pool generated into `candidates` when none is given), a command,
// or a file of known measurements. An empty message: the error was printed
// already.
Result<std::unique_ptr<Lab>> open_lab(ApiClient& api, const Args& a, bool local, const std::string& platform,
                                      long per_task, std::uint64_t seed, const OnboardState& state,
                                      std::string* candidate_path) {
  std::string& candidates = *candidate_path;
  const std::string answers = a.flag("answers");
  if (local) {
    const LocalHardware hw = local_hardware();
    if (ensure_local_platform(api, platform, hw) != 0) return Status::failed_precondition("");  // printed
    if (candidates.empty()) {
      // The pool is generated again on a resume: the same seed gives the same
      // programs, and their upload only counts duplicates.
      // Beside the state file: X.state.json → X.pool.jsonl.
      const std::string suffix = ".state.json";
      candidates = state.path.size() > suffix.size() && state.path.ends_with(suffix)
                       ? state.path.substr(0, state.path.size() - suffix.size()) + ".pool.jsonl"
                       : state.path + ".pool.jsonl";
      std::vector<std::string> models;
      std::stringstream ss(a.flag("models", "resnet50,mobilenet_v2,bert"));
      for (std::string m; std::getline(ss, m, ',');) models.push_back(m);
      auto pool = write_candidates(models, static_cast<int>(per_task), seed, candidates);
      if (!pool) return pool.status();
      std::fprintf(stderr, "tclctl: %zu candidate programs for %s in %s\n", *pool,
                   a.flag("models", "resnet50,mobilenet_v2,bert").c_str(), candidates.c_str());
    }
    return std::unique_ptr<Lab>(std::make_unique<MachineLab>(LocalLabOptions{}));
  }
  if (const std::string command = a.flag("lab-command"); !command.empty()) {
    const std::string limit = a.flag("lab-timeout-s", "3600");
    char* end = nullptr;
    const double timeout = std::strtod(limit.c_str(), &end);
    if (end == limit.c_str() || *end != '\0' || !(timeout > 0))
      return Status::invalid_argument("--lab-timeout-s must be a positive number of seconds, got '" + limit + "'");
    return std::unique_ptr<Lab>(std::make_unique<CommandLab>(command, timeout));
  }
  auto answers_lab = AnswersLab::open(answers);
  if (!answers_lab) return answers_lab.status();
  return std::unique_ptr<Lab>(std::move(*answers_lab));
}

// One round: a sample request (or the open one, on a resume), its picks
// measured by the lab and uploaded, then the active column fine-tuned for
// the next round. Returns the process exit code.
int onboard_round(ApiClient& api, Lab& lab, const Args& a, const Args& per_round, const std::string& platform,
                  int round, int rounds, double finetune_epochs, OnboardState& state) {
  // A job between rounds that an interruption left running: wait for it.
  if (!state.pending_job.empty() && !state.final_started) {
    if (int rc = wait_job(api, state.pending_job, a.json()); rc != 0) return rc;
    state.pending_job.clear();
    state.save();
  }
  json::value req;
  if (state.open_request.empty()) {
    Args this_round = per_round;
    const std::string strategy = a.flag("strategy");  // empty: the daemon's default, which needs a model
    if (!has_production(api) && strategy != "random" && strategy != "uniform") {
      // Every other strategy scores the pool with the production model;
      // before the first model exists the only honest choice is random.
      std::fprintf(stderr, "tclctl: no production model yet: round %d samples at random\n", round);
      this_round.flags.insert(this_round.flags.begin(), {"strategy", "random"});
    }
    auto created = create_sample_request(api, this_round, platform);
    if (!created) return 1;
    req = std::move(*created);
    state.open_request = text(req.at("id"));
    state.save();
  } else {
    auto got = api.call("GET", "/v1/sample-requests/" + state.open_request);
    if (!got) return fail(got.status().message());
    if (got->status != 200) return fail(got->error_text());
    req = got->json();
  }
  const std::size_t picked = req.at("items").as_array().size();  // POST and GET both list them
  std::fprintf(stderr, "round %d/%d: request %s picked %zu programs\n", round, rounds, state.open_request.c_str(),
               picked);
  std::size_t unanswered = 0;
  if (Status s = run_round(api, lab, platform, state.open_request, picked, &unanswered); !s) return fail(s.message());
  if (unanswered > 0) std::fprintf(stderr, "  %zu programs could not be measured by the lab\n", unanswered);
  state.rounds_done = round;
  state.open_request.clear();
  state.save();
  // Learn from this round before the next: fine-tune the active column.
  // auto_schedule gives a platform far from the lineage the long schedule,
  // as the two-round runs of docs/benchmarks.md did.
  if (round < rounds && finetune_epochs > 0 && has_production(api)) {
    state.pending_job = start_job(api, platform,
                                  {{"kind", "train"},
                                   {"init", "production"},
                                   {"epochs", finetune_epochs},
                                   {"eval_fraction", 0.0},
                                   {"auto_schedule", true}});
    if (state.pending_job.empty()) return 1;
    state.save();
    if (int rc = wait_job(api, state.pending_job, a.json()); rc != 0) return rc;
    state.pending_job.clear();
    state.save();
  }
  return 0;
}

// What the final job `job` made, in plain words (human.h onboard_verdict):
// production or a candidate, and why. Nothing when tcld cannot say.
void print_verdict(ApiClient& api, const std::string& platform, const std::string& job) {
  const auto get = [&api](const std::string& path) -> std::optional<json::value> {
    auto r = api.call("GET", path);
    if (!r || r->status != 200) return std::nullopt;
    return r->json();
  };
  const auto finished = get("/v1/jobs/" + job);
  const json::value* made =
      finished && finished->is_object() ? finished->as_object().if_contains("result_version") : nullptr;
  if (made == nullptr || !made->is_int64()) return;
  const auto version = get("/v1/models/" + std::to_string(made->as_int64()));
  const auto facts = get("/v1/platforms/" + platform);
  if (!version || !facts) return;
  std::int64_t production = 0;
  if (const auto alias = get("/v1/aliases/production"); alias && alias->is_object()) {
    if (const json::value* p = alias->as_object().if_contains("version"); p != nullptr && p->is_int64()) {
      production = p->as_int64();
    }
  }
  std::fputs(("\n" + onboard_verdict(*version, *facts, production)).c_str(), stdout);
}

// Fold the platform into the lineage: distillation from the production
// model, or — with no model yet — the lineage's first training. Returns the
// process exit code.
int fold_in_platform(ApiClient& api, const Args& a, const std::string& platform, double final_epochs,
                     OnboardState& state) {
  if (!state.final_started) {
    json::object job{{"kind", has_production(api) ? "distill" : "train"}};
    if (final_epochs > 0) job["epochs"] = final_epochs;
    std::fprintf(stderr, "tclctl: starting a %s job\n", text(job.at("kind")).c_str());
    state.pending_job = start_job(api, platform, job);
    if (state.pending_job.empty()) return 1;
    state.final_started = true;
    state.save();
  }
  if (int rc = wait_job(api, state.pending_job, a.json()); rc != 0) return rc;
  if (int rc = lineage_command(api, a); rc != 0) return rc;
  if (!a.json()) print_verdict(api, platform, state.pending_job);
  return 0;
}

int onboard_command(ApiClient& api, const Args& a) {
  const std::string platform = a.flag("platform");
  const bool local = !a.flag("measure-local").empty() && a.flag("measure-local") != "0";
  std::string candidates = a.flag("candidates");
  const std::string answers = a.flag("answers");
  const bool command_lab = !a.flag("lab-command").empty();
  if (platform.empty() || (!local && (candidates.empty() || (answers.empty() == !command_lab)))) return usage();
  if (local && command_lab) return fail("--measure-local and --lab-command name two labs: give one");
  int rounds = 1;
  long per_task = 8;
  double finetune_epochs = 0, final_epochs = 0;
  std::uint64_t seed = 1;
  try {
    seed = std::stoull(a.flag("seed", "1"));
    rounds = std::stoi(a.flag("rounds", "1"));
    per_task = std::stol(a.flag("per-task", "8"));
    if (!a.flag("finetune-epochs").empty()) {
      finetune_epochs = std::stod(a.flag("finetune-epochs"));
      if (finetune_epochs < 1) throw std::invalid_argument("epochs");
    }
    if (!a.flag("epochs").empty()) final_epochs = std::stod(a.flag("epochs"));
  } catch (const std::exception&) {
    return fail(
        "--rounds, --per-task, --seed, --epochs and --finetune-epochs must be numbers (--finetune-epochs >= 1)");
  }
  if (rounds < 1) return fail("--rounds must be a positive integer");
  if (per_task < 1) return fail("--per-task must be a positive integer");
  // A local onboarding goes all the way to a model; a lab file run folds the
  // platform in only when asked (the evaluation scripts decide).
  const bool fold_in = local || (!a.flag("distill").empty() && a.flag("distill") != "0");
  Args per_round = a;
  if (a.flag("fraction").empty() && a.flag("budget").empty()) per_round.flags.emplace_back("fraction", "0.05");

  OnboardState state = OnboardState::load(a.flag("state", "tcl-onboard-" + platform + ".state.json"));
  if (state.done) {
    std::fprintf(stderr, "tclctl: %s finished onboarding before (%s); the lineage:\n", platform.c_str(),
                 state.path.c_str());
    return lineage_command(api, a);
  }
  if (state.rounds_done > 0 || !state.open_request.empty())
    std::fprintf(stderr, "tclctl: resuming from %s: %d of %d rounds done\n", state.path.c_str(), state.rounds_done,
                 rounds);

  auto lab = open_lab(api, a, local, platform, per_task, seed, state, &candidates);
  if (!lab) return lab.status().message().empty() ? 1 : fail(lab.status().message());

  // The pool (idempotent: a rerun replays the same batches).
  UploadCommand pool;
  pool.platform = platform;
  pool.kind = "candidates";
  pool.files = {candidates};
  pool.quiet = true;
  UploadTotals pool_totals;
  if (int rc = run_upload_command(api, pool, &pool_totals); rc != 0) return rc;
  std::fprintf(stderr, "tclctl: pool: %lld candidates accepted, %lld duplicates\n", pool_totals.accepted,
               pool_totals.duplicates);

  for (int round = state.rounds_done + 1; round <= rounds; ++round) {
    if (int rc = onboard_round(api, **lab, a, per_round, platform, round, rounds, finetune_epochs, state); rc != 0)
      return rc;
  }

  if (fold_in) {
    if (int rc = fold_in_platform(api, a, platform, final_epochs, state); rc != 0) return rc;
  }
  state.done = true;
  state.pending_job.clear();
  state.save();
  if (a.json()) {
    std::printf("{\"platform\": \"%s\", \"rounds\": %d, \"state\": \"%s\"}\n", platform.c_str(), rounds,
                state.path.c_str());
  } else {
    std::printf("onboarded %s in %d rounds (state: %s)\n", platform.c_str(), rounds, state.path.c_str());
  }
  return 0;
}

}  // namespace tcl::tools
