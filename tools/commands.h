// tools/commands.h — tclctl's commands beyond upload: predict, lineage and
// training jobs. Each prints its result on stdout and returns the process
// exit code (0 ok, 1 the call failed, 2 bad usage), with the reason on stderr.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "tools/api_client.h"

namespace tcl::tools {

// Splits "--flag value" pairs out of argv; positional words stay in order.
struct Args {
  std::vector<std::string> words;
  std::vector<std::pair<std::string, std::string>> flags;
  std::string flag(const std::string& name, const std::string& fallback = "") const;
};

// predict --platform P [--model M] [--top K] FILE.jsonl[.gz]...
//   Scores every record of the files (batches of 4096 per call) and prints
//   one "score<TAB>file:line" per record, or with --top K the K best records
//   of each task (workload key), best first.
int predict_command(ApiClient& api, const Args& a);
// lineage: the model versions as a table (version, parent, platforms,
//   status, aliases, top-1 per platform, created).
int lineage_command(ApiClient& api, const Args& a);
// job start --platform P [--kind train|distill] [--epochs N] [--max-records N]
//           [--time-budget-s S] [--model mamba|attention|mlp] [--init VERSION] [--wait]
// job show ID | job wait ID | job cancel ID
//   wait polls until the job ends, printing its progress on stderr.
int job_command(ApiClient& api, const Args& a);

// sample --platform P (--fraction F | --budget N) [--strategy S] [--seed N]
//        [--model M] [-o FILE]
//   Creates a sample request and writes the records to measure as JSON lines
//   to FILE (default stdout); the request's id and sizes go to stderr.
int sample_command(ApiClient& api, const Args& a);
// onboard --platform P --candidates FILE --answers FILE [--rounds N]
//         [--fraction F] [--strategy S] [--seed N] [--finetune-epochs E] [--distill]
//   Plays the lab on known measurements (how we evaluate on real logs):
//   uploads the candidate pool, then per round asks for a sample request,
//   looks the picked programs up in the answers file (program identity:
//   workload key + steps) and uploads those measurements, printing each
//   round's progress. Programs the answers do not hold are reported. With
//   --finetune-epochs, a train job with "init": "production" between rounds
//   fine-tunes the platform's active column, which the next round uses;
//   with --distill, a distill job folds the platform into the lineage at the
//   end and the lineage is printed.
int onboard_command(ApiClient& api, const Args& a);

}  // namespace tcl::tools
