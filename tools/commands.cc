#include "tools/commands.h"

#include <boost/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <thread>

#include <sys/ioctl.h>
#include <unistd.h>

#include "core/json_write.h"
#include "core/line_reader.h"
#include "core/record.h"
#include "tools/commands_internal.h"
#include "tools/human.h"

namespace tcl::tools {
namespace json = boost::json;

std::string Args::flag(const std::string& name, const std::string& fallback) const {
  for (const auto& [k, v] : flags)
    if (k == name) return v;
  return fallback;
}

bool Args::json() const {
  const std::string v = flag("json");
  return !v.empty() && v != "0";
}

void print_body(const ApiResponse& r) {
  std::string_view body = r.body;
  while (!body.empty() && body.back() == '\n') body.remove_suffix(1);
  std::printf("%.*s\n", static_cast<int>(body.size()), body.data());
}

int fail(const std::string& message) {
  std::fprintf(stderr, "tclctl: %s\n", message.c_str());
  return 1;
}

std::string text(const json::value& v) {
  if (v.is_string()) return std::string(v.as_string());
  if (v.is_null()) return "-";
  return core::write_json(v);
}

namespace {

// Records per POST /v1/predict: well inside the route's limits.
constexpr std::size_t kPredictBatch = 4096;

struct Scored {
  double score = 0;
  std::string where;         // file:line
  std::string workload_key;  // for --top
};

}  // namespace

int predict_command(ApiClient& api, const Args& a) {
  const std::string platform = a.flag("platform");
  if (platform.empty() || a.words.size() < 2) {
    std::fputs("usage: tclctl predict --platform P [--model M] [--top K] FILE.jsonl[.gz]...\n", stderr);
    return 2;
  }
  const std::string model = a.flag("model", "production");
  long top = 0;
  try {
    top = std::stol(a.flag("top", "0"));
  } catch (const std::exception&) {
    top = -1;
  }
  if (top < 0) return fail("--top must be a non-negative integer");

  std::vector<Scored> all;
  std::vector<Scored> pending;
  json::array lines;
  std::int64_t version = 0, truncated = 0;
  const auto flush = [&]() -> int {
    if (lines.empty()) return 0;
    const json::object body{{"platform", platform}, {"model", model}, {"records", std::move(lines)}};
    lines = json::array();
    auto r = api.call("POST", "/v1/predict", json::serialize(body));
    if (!r) return fail(r.status().message());
    if (r->status != 200) return fail(r->error_text());
    const json::value answer = r->json();
    const auto& scores = answer.at("scores").as_array();
    if (scores.size() != pending.size()) return fail("the daemon returned a score count that does not match");
    version = answer.at("model_version").as_int64();
    truncated += answer.at("truncated").as_int64();
    for (std::size_t i = 0; i < pending.size(); ++i) {
      pending[i].score = scores[i].to_number<double>();
      if (top == 0) {
        std::printf("%.6g\t%s\n", pending[i].score, pending[i].where.c_str());
      } else {
        all.push_back(std::move(pending[i]));
      }
    }
    pending.clear();
    return 0;
  };

  core::RecordParser parser;
  core::Record record;
  for (std::size_t f = 1; f < a.words.size(); ++f) {
    const std::string& file = a.words[f];
    auto reader = core::LineReader::open(file);
    if (!reader) return fail(reader.status().message());
    std::string_view line;
    while ((*reader)->next(&line)) {
      if (core::is_skippable_line(line)) continue;
      Scored s;
      s.where = file + ":" + std::to_string((*reader)->line_number());
      if (top > 0) {
        // Only --top needs the task; the daemon validates the record either way.
        if (Status st = parser.parse(line, &record); !st) return fail(s.where + ": " + st.message());
        s.workload_key = record.workload_key;
      }
      pending.push_back(std::move(s));
      lines.emplace_back(line);
      if (lines.size() == kPredictBatch) {
        if (int rc = flush(); rc != 0) return rc;
      }
    }
    if (!(*reader)->status()) return fail(file + ": " + (*reader)->status().message());
  }
  if (int rc = flush(); rc != 0) return rc;

  if (top > 0) {
    std::map<std::string, std::vector<const Scored*>> by_task;
    for (const auto& s : all) by_task[s.workload_key].push_back(&s);
    for (auto& [task, items] : by_task) {
      std::stable_sort(items.begin(), items.end(),
                       [](const Scored* x, const Scored* y) { return x->score > y->score; });
      std::printf("# %s (%zu programs)\n", task.c_str(), items.size());
      for (std::size_t i = 0; i < items.size() && i < static_cast<std::size_t>(top); ++i) {
        std::printf("%zu\t%.6g\t%s\n", i + 1, items[i]->score, items[i]->where.c_str());
      }
    }
  }
  std::fprintf(
      stderr, "tclctl: scored with model version %lld on %s%s\n", static_cast<long long>(version), platform.c_str(),
      truncated > 0 ? (" (" + std::to_string(truncated) + " programs longer than the model reads)").c_str() : "");
  return 0;
}

int lineage_command(ApiClient& api, const Args& a) {
  auto r = api.call("GET", "/v1/models");
  if (!r) return fail(r.status().message());
  if (r->status != 200) return fail(r->error_text());
  if (a.json()) {
    print_body(*r);
    return 0;
  }
  std::fputs(lineage_table(r->json()).c_str(), stdout);
  return 0;
}

namespace {

bool finished(const json::value& job) {
  const std::string state = text(job.at("state"));
  return state == "succeeded" || state == "failed" || state == "cancelled";
}

}  // namespace

int wait_job(ApiClient& api, const std::string& id, bool as_json) {
  std::string last;
  winsize terminal{};
  const bool on_terminal = ::isatty(2) != 0;
  if (!on_terminal || ::ioctl(2, TIOCGWINSZ, &terminal) != 0) terminal.ws_col = 0;
  ProgressLine progress(stderr, on_terminal, terminal.ws_col);
  for (;;) {
    auto r = api.call("GET", "/v1/jobs/" + id);
    if (!r) {
      progress.finish();
      return fail(r.status().message());
    }
    if (r->status != 200) {
      progress.finish();
      return fail(r->error_text());
    }
    const json::value job = r->json();
    if (as_json) {
      const std::string line = text(job.at("state")) + " " + core::write_json(job.at("progress"));
      if (line != last) std::fprintf(stderr, "job %s: %s\n", id.c_str(), line.c_str());
      last = line;
    } else {
      progress.update(job);
    }
    if (finished(job)) {
      progress.finish();
      if (as_json) {
        print_body(*r);
      } else {
        std::fputs(job_summary(job).c_str(), stdout);
      }
      return text(job.at("state")) == "succeeded" ? 0 : 1;
    }
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

int job_command(ApiClient& api, const Args& a) {
  const std::string verb = a.words.size() > 1 ? a.words[1] : "";
  if (verb == "start") {
    const std::string platform = a.flag("platform");
    if (platform.empty()) return fail("job start needs --platform");
    json::object body{{"kind", a.flag("kind", "train")}};
    for (const char* key : {"epochs", "max-records", "time-budget-s", "seed", "adapter-rank"}) {
      const std::string v = a.flag(key);
      if (v.empty()) continue;
      std::string field(key);
      std::replace(field.begin(), field.end(), '-', '_');
      try {
        body[field] = std::stod(v);
      } catch (const std::exception&) {
        return fail(std::string("--") + key + " must be a number");
      }
    }
    if (!a.flag("model").empty()) body["model"] = a.flag("model");
    if (!a.flag("init").empty()) body["init"] = a.flag("init");
    if (!a.flag("method").empty()) body["method"] = a.flag("method");  // a distill's: adapter | student | best-of
    auto r = api.call("POST", "/v1/platforms/" + platform + "/jobs", json::serialize(body));
    if (!r) return fail(r.status().message());
    if (r->status != 202) return fail(r->error_text());
    const std::string id = text(r->json().at("id"));
    if (a.flag("wait").empty() || a.flag("wait") == "0") {
      if (a.json()) {
        print_body(*r);
      } else {
        std::fputs(job_summary(r->json()).c_str(), stdout);
      }
      return 0;
    }
    return wait_job(api, id, a.json());
  }
  if ((verb == "show" || verb == "wait" || verb == "cancel") && a.words.size() > 2) {
    const std::string& id = a.words[2];
    if (verb == "wait") return wait_job(api, id, a.json());
    auto r = verb == "show" ? api.call("GET", "/v1/jobs/" + id) : api.call("POST", "/v1/jobs/" + id + "/cancel");
    if (!r) return fail(r.status().message());
    if (r->status / 100 != 2) return fail(r->error_text());
    if (a.json()) {
      print_body(*r);
    } else {
      std::fputs(job_summary(r->json()).c_str(), stdout);
    }
    return 0;
  }
  std::fputs(
      "usage: tclctl job start --platform P [--kind train] [--epochs N] [--max-records N] [--time-budget-s S]\n"
      "                        [--model mamba|attention|mlp] [--method adapter|student|best-of] [--adapter-rank R]\n"
      "                        [--init VERSION] [--wait]\n"
      "       tclctl job show|wait|cancel ID\n",
      stderr);
  return 2;
}

// POST a sample request; the parsed answer or a printed failure (nullopt).
std::optional<json::value> create_sample_request(ApiClient& api, const Args& a, const std::string& platform) {
  json::object body;  // no --strategy: the daemon's default (sampler::kDefaultStrategy)
  if (!a.flag("strategy").empty()) body["strategy"] = a.flag("strategy");
  try {
    if (!a.flag("budget").empty()) body["budget"] = std::stoll(a.flag("budget"));
    if (!a.flag("fraction").empty()) body["fraction"] = std::stod(a.flag("fraction"));
    if (!a.flag("seed").empty()) body["seed"] = std::stoll(a.flag("seed"));
  } catch (const std::exception&) {
    fail("--budget, --fraction and --seed must be numbers");
    return std::nullopt;
  }
  if (!a.flag("model").empty()) body["model"] = a.flag("model");
  auto r = api.call("POST", "/v1/platforms/" + platform + "/sample-requests", json::serialize(body));
  if (!r) {
    fail(r.status().message());
    return std::nullopt;
  }
  if (r->status != 201) {
    fail(r->error_text());
    return std::nullopt;
  }
  return r->json();
}

int sample_command(ApiClient& api, const Args& a) {
  const std::string platform = a.flag("platform");
  if (platform.empty() || (a.flag("fraction").empty() == a.flag("budget").empty())) {
    std::fputs(
        "usage: tclctl sample --platform P (--fraction F | --budget N) [--strategy S] [--seed N] [-o FILE]\n"
        "       S: fast (the daemon's default), rdu, random, uniform, r, d, u\n",
        stderr);
    return 2;
  }
  auto req = create_sample_request(api, a, platform);
  if (!req) return 1;
  const std::string id = text(req->at("id"));
  auto lines = api.call("GET", "/v1/sample-requests/" + id, "", {{"Accept", "application/x-ndjson"}});
  if (!lines) return fail(lines.status().message());
  if (lines->status != 200) return fail(lines->error_text());
  const std::string out = a.flag("o", a.flag("output"));
  const bool to_stdout = out.empty() || out == "-";
  if (to_stdout) {
    std::fwrite(lines->body.data(), 1, lines->body.size(), stdout);
  } else {
    FILE* f = std::fopen(out.c_str(), "wb");
    if (f == nullptr) return fail("cannot write " + out);
    const bool ok = std::fwrite(lines->body.data(), 1, lines->body.size(), f) == lines->body.size();
    if (std::fclose(f) != 0 || !ok) return fail("cannot write " + out);
  }
  if (!a.json()) {
    // The records are the data: with them on stdout, the summary goes beside them.
    std::fputs(sample_summary(*req, !to_stdout).c_str(), to_stdout ? stderr : stdout);
    return 0;
  }
  const json::value& params = req->at("params");
  std::fprintf(stderr, "tclctl: sample request %s: %zu programs to measure of a pool of %s (strategy %s, model %s)\n",
               id.c_str(), req->at("items").as_array().size(), text(params.at("pool_size")).c_str(),
               text(req->at("strategy")).c_str(), text(req->at("model_version")).c_str());
  return 0;
}

}  // namespace tcl::tools
