// tclctl — the command-line client of tcld. Speaks only the HTTP API.
//
//   tclctl [--url URL] [--token TOKEN] COMMAND ...
//   TCL_URL (default http://127.0.0.1:8080) and TCL_TOKEN stand in for the flags.
//   Output is text for people; --json (anywhere on the line) gives the machine
//   output instead: the API's JSON as tcld wrote it.
#include <boost/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "tools/api_client.h"
#include "tools/commands.h"
#include "tools/commands_internal.h"
#include "tools/human.h"
#include "tools/upload.h"

namespace json = boost::json;
using tcl::tools::ApiClient;
using tcl::tools::ApiResponse;
using tcl::tools::Args;

namespace {

constexpr const char* kUsage =
    "usage: tclctl [--url URL] [--token TOKEN] [--json] COMMAND\n"
    "  platform create --name N --target T --hardware-params a,b,c,d,e,f,g,h [--description D]\n"
    "  platform list\n"
    "  platform show NAME\n"
    "  upload --platform P [--kind measurements|candidates] [--batch-lines N] [--gzip] [--quiet] FILE.jsonl[.gz]...\n"
    "  predict --platform P [--model ALIAS|VERSION] [--top K] FILE.jsonl[.gz]...\n"
    "  lineage\n"
    "  sample --platform P (--fraction F | --budget N) [--strategy rdu|random|r|d|u] [--seed N] [-o FILE]\n"
    "  onboard --platform P --candidates FILE --answers FILE [--rounds N] [--fraction F] [--strategy S]\n"
    "          [--finetune-epochs E] [--distill] [--state FILE]\n"
    "  onboard --platform P --candidates FILE --lab-command 'CMD {in} {out}' [--lab-timeout-s S] ...\n"
    "          a command measures each chunk of picks (e.g. tcl-measure run {in} -o {out} on a GPU box)\n"
    "  onboard --platform P --measure-local [--models resnet50,mobilenet_v2,bert] [--per-task N] [--rounds N]\n"
    "          [--fraction F | --budget N] [--epochs N] [--state FILE]   measure this machine, then distill\n"
    "  tune (--network resnet50|mobilenet_v2|bert | --task KEY[*W]...) [--platform P] [--model lineage+online|\n"
    "          lineage|online|random] [--budget N] [--per-round N] [--warmup auto|N]\n"
    "          [--scheduler gradient|round-robin] [--pick top|fast|diversity] [--seed N] [--dir DIR] [--upload 0]\n"
    "          tune a network on this machine, uploading its measurements\n"
    "  job start --platform P [--kind train|distill] [--epochs N] [--max-records N] [--time-budget-s S]\n"
    "          [--model mamba|attention|mlp] [--init VERSION] [--method adapter|student|best-of]\n"
    "          [--adapter-rank R] [--wait]\n"
    "  job show|wait|cancel ID\n"
    "Text for people by default; --json prints the API's JSON (for scripts).\n"
    "Environment: TCL_URL (default http://127.0.0.1:8080), TCL_TOKEN.\n";

using tcl::tools::fail;

Args split_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--gzip" || s == "--quiet" || s == "--wait" || s == "--distill" || s == "--measure-local" ||
        s == "--json") {
      a.flags.emplace_back(s.substr(2), "1");
    } else if (s == "-o" && i + 1 < argc) {
      a.flags.emplace_back("o", argv[++i]);
    } else if (s.rfind("--", 0) == 0 && i + 1 < argc) {
      a.flags.emplace_back(s.substr(2), argv[++i]);
    } else {
      a.words.push_back(s);
    }
  }
  return a;
}

// A platform as text (tools/human.h), or as the API's JSON with --json.
int print_platform_or_fail(const tcl::Result<ApiResponse>& r, int expected, const Args& a) {
  if (!r) return fail(r.status().message());
  if (r->status != expected) return fail(r->error_text());
  if (a.json()) {
    tcl::tools::print_body(*r);
  } else {
    std::fputs(tcl::tools::platform_summary(r->json()).c_str(), stdout);
  }
  return 0;
}

int platform_command(ApiClient& api, const Args& a) {
  const std::string verb = a.words.size() > 1 ? a.words[1] : "";
  if (verb == "create") {
    json::object body{{"name", a.flag("name")}, {"target", a.flag("target")}};
    json::array hw;
    std::stringstream ss(a.flag("hardware-params"));
    for (std::string item; std::getline(ss, item, ',');) {
      try {
        hw.push_back(std::stoll(item));
      } catch (const std::exception&) {
        return fail("--hardware-params must be 8 comma-separated integers");
      }
    }
    body["hardware_params"] = std::move(hw);
    if (!a.flag("description").empty()) body["description"] = a.flag("description");
    return print_platform_or_fail(api.call("POST", "/v1/platforms", json::serialize(body)), 201, a);
  }
  if (verb == "list") {
    auto r = api.call("GET", "/v1/platforms");
    if (!r) return fail(r.status().message());
    if (r->status != 200) return fail(r->error_text());
    if (a.json()) {
      tcl::tools::print_body(*r);
      return 0;
    }
    std::printf("%-24s %-48s %s\n", "NAME", "TARGET", "CREATED");
    const json::value listing = r->json();
    for (const auto& p : listing.at("platforms").as_array()) {
      std::printf("%-24s %-48s %s\n", std::string(p.at("name").as_string()).c_str(),
                  std::string(p.at("target").as_string()).c_str(), std::string(p.at("created_at").as_string()).c_str());
    }
    return 0;
  }
  if (verb == "show" && a.words.size() > 2) {
    return print_platform_or_fail(api.call("GET", "/v1/platforms/" + a.words[2]), 200, a);
  }
  return fail(std::string("bad platform command\n") + kUsage);
}

}  // namespace

int main(int argc, char** argv) {
  Args a = split_args(argc, argv);
  if (a.words.empty() || a.words[0] == "help") {
    std::fputs(kUsage, a.words.empty() ? stderr : stdout);
    return a.words.empty() ? 2 : 0;
  }
  const char* env_url = std::getenv("TCL_URL");
  const char* env_token = std::getenv("TCL_TOKEN");
  ApiClient api(a.flag("url", env_url ? env_url : "http://127.0.0.1:8080"),
                a.flag("token", env_token ? env_token : ""));
  if (a.words[0] == "platform") return platform_command(api, a);
  if (a.words[0] == "predict") return tcl::tools::predict_command(api, a);
  if (a.words[0] == "lineage") return tcl::tools::lineage_command(api, a);
  if (a.words[0] == "job") return tcl::tools::job_command(api, a);
  if (a.words[0] == "sample") return tcl::tools::sample_command(api, a);
  if (a.words[0] == "onboard") return tcl::tools::onboard_command(api, a);
  if (a.words[0] == "tune") return tcl::tools::tune_command(api, a);
  if (a.words[0] == "upload") {
    tcl::tools::UploadCommand cmd;
    cmd.platform = a.flag("platform");
    cmd.kind = a.flag("kind", "measurements");
    cmd.files.assign(a.words.begin() + 1, a.words.end());
    cmd.gzip = !a.flag("gzip").empty() && a.flag("gzip") != "0";
    cmd.quiet = !a.flag("quiet").empty() && a.flag("quiet") != "0";
    try {
      if (!a.flag("batch-lines").empty()) cmd.batch_lines = std::stoul(a.flag("batch-lines"));
    } catch (const std::exception&) {
      return fail("--batch-lines must be a positive integer");
    }
    tcl::tools::UploadTotals totals;
    const int rc = tcl::tools::run_upload_command(api, cmd, &totals);
    if (!a.json()) {
      std::fputs(tcl::tools::aligned({{"lines", std::to_string(totals.lines)},
                                      {"accepted", std::to_string(totals.accepted) + " (" +
                                                       std::to_string(totals.failed) + " failed measurements)"},
                                      {"duplicates", std::to_string(totals.duplicates)},
                                      {"rejected", std::to_string(totals.rejected)},
                                      {"batches", std::to_string(totals.batches) + " (" +
                                                      std::to_string(totals.replayed) + " replayed)"}})
                     .c_str(),
                 stdout);
      return rc;
    }
    std::printf(
        "{\"lines\": %lld, \"accepted\": %lld, \"failed\": %lld, \"duplicates\": %lld, \"rejected\": %lld, "
        "\"batches\": %lld, \"replayed_batches\": %lld}\n",
        totals.lines, totals.accepted, totals.failed, totals.duplicates, totals.rejected, totals.batches,
        totals.replayed);
    return rc;
  }
  std::fprintf(stderr, "tclctl: unknown command '%s'\n%s", a.words[0].c_str(), kUsage);
  return 2;
}
