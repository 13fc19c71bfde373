// core/record.h — TVM auto-scheduler measure records (DESIGN §2): the types,
// a fast line parser, the writer and the measured/failed/candidate rule.
//
// One record is one JSON line:
//   {"i": [[workload_key, target, hardware_params(8 ints), target_host,
//           layout_rewrite, [input names]],            <- task, 2..6 fields
//          [[], [[step], [step], ...]]],               <- state: stages, steps
//    "r": [[cost_seconds, ...], error_no, all_cost, timestamp],
//    "v": "v0.6"}
// Versions v0.2–v0.6 are accepted; older logs carry shorter task arrays
// (v0.2: [workload_key, target]). The field order of every step kind follows
// TVM's src/auto_scheduler/transform_step.cc (WriteToRecord / JSONReader
// constructors); see the table at StepKind.
//
// What the parser accepts beyond the shape (the same for uploads, predict and
// every other reader; a line breaking a rule is rejected with the JSON path
// of the field, e.g. "i[1][1][3][1]: SP stage_id is -1 ..."):
//   - step kinds are TVM's closed set in the table at StepKind (TVM's
//     transform_step.cc defines no other); any other tag, e.g. "ZZ" or
//     "S\u0000P", is rejected. There is no "unknown step".
//   - every integer of a step is >= 0: stage, iterator and step ids, id lists,
//     SP extent (0 = unknown, as TVM writes it) and lengths, FSP n_split, FFSP
//     level, SA factor, AN annotation (which must also be one of TVM's 12
//     IteratorAnnotation values). SA offset may be negative (an offset).
//   - layout_rewrite is >= 0.
//   - strings (workload_key, target, target_host, input names, pragma_type,
//     scope_name, version) hold no control characters (U+0000–U+001F, U+007F).
// Left as TVM writes them: hardware_params (num_cores is -1 for GPUs),
// error_no (unknown values kept), all_cost and timestamp (finite numbers).
//
// Thread-safety: Record/Step are values. RecordParser is NOT thread-safe (it
// owns parser state and a reusable arena); use one per thread. Free functions
// are thread-safe.
//
// How to add a step kind (mirrors TVM's checklist):
//   1. add a StepKind value before kUnknown and its name in step_kind_name();
//   2. give its arity in kStepArity and parse its fields twice: in
//      record_sax.cc (step_int/step_string/begin_step_list, the parser) and in
//      record.cc (parse_one_step, which words the errors), and give its
//      value rules in record.cc (check_step);
//   3. write them in record.cc (write_step) in TVM's field order;
//   4. give it token slots in features.cc and a TLP vocabulary entry;
//   5. add a hand-written record to tests/core/record_test.cc (round trip +
//      tokens). kTokenDim changes when step kinds are added: bump
//      kFeatureVersion in features.h.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace boost::json {
class value;
}

namespace tcl::core {

// The record format version the writer emits when a record carries none.
inline constexpr std::string_view kRecordVersion = "v0.6";

// Step kinds. The numeric values index the token one-hot (features.h); they
// are part of the feature layout, so never reorder them; append before kUnknown.
//   tag   fields after the tag (TVM order)
//   AN    stage_id, iter_id, annotation
//   FU    stage_id, [fused_ids]
//   PR    stage_id, iter_id, pragma_type
//   RE    stage_id, [after_ids]
//   SP    stage_id, iter_id, extent, [lengths], inner_to_outer
//   FSP   stage_id, iter_id, src_step_id, n_split
//   FFSP  stage_id, iter_id, [src_step_ids], level, factor_or_nparts
//   SA    stage_id, iter_id, factor, offset
//   CA    stage_id, target_stage_id, target_iter_id
//   CI    stage_id
//   CR    stage_id
//   CHR   stage_id, scope_name, [reader_stage_ids]
//   CHW   stage_id, scope_name
//   RF    stage_id, iter_id, factor_iter_id
enum class StepKind : std::uint8_t {
  kAnnotation = 0,        // AN
  kFuse = 1,              // FU
  kPragma = 2,            // PR
  kReorder = 3,           // RE
  kSplit = 4,             // SP
  kFollowSplit = 5,       // FSP
  kFollowFusedSplit = 6,  // FFSP
  kStorageAlign = 7,      // SA
  kComputeAt = 8,         // CA
  kComputeInline = 9,     // CI
  kComputeRoot = 10,      // CR
  kCacheRead = 11,        // CHR
  kCacheWrite = 12,       // CHW
  kRfactor = 13,          // RF
  kUnknown = 14,          // not a step: never produced by the parser (any
                          // other tag is rejected); kept so token slots stay put
};
inline constexpr int kNumStepKinds = 15;  // including kUnknown

// "AN", "FU", ... ; "unknown" for kUnknown.
std::string_view step_kind_name(StepKind kind);
// The kind for a record tag ("SP" -> kSplit); kUnknown for anything else.
StepKind step_kind_from_tag(std::string_view tag);

// TVM's IteratorAnnotation (values as stored in AN steps).
enum class Annotation : std::int32_t {
  kNone = 0,
  kUnroll = 1,
  kVectorize = 2,
  kParallel = 3,
  kVThread = 4,
  kBlockX = 5,
  kThreadX = 6,
  kBlockY = 7,
  kThreadY = 8,
  kBlockZ = 9,
  kThreadZ = 10,
  kTensorize = 11,
};
inline constexpr int kNumAnnotations = 12;

// One transform step. Only the fields listed for `kind` in the table above are
// meaningful; the others keep their defaults (so == compares records exactly).
struct Step {
  StepKind kind = StepKind::kUnknown;
  std::int32_t stage_id = 0;          // every kind
  std::int32_t iter_id = 0;           // AN PR SP FSP FFSP SA RF
  std::int32_t annotation = 0;        // AN: an Annotation value
  std::int64_t extent = 0;            // SP: extent of the split iterator, 0 = unknown
  std::vector<std::int64_t> lengths;  // SP: split lengths
  bool inner_to_outer = false;        // SP: inner_to_outer; FFSP: factor_or_nparts
  std::int32_t src_step_id = 0;       // FSP
  std::int32_t n_split = 0;           // FSP
  std::int32_t level = 0;             // FFSP
  std::int32_t target_stage_id = 0;   // CA
  std::int32_t target_iter_id = 0;    // CA
  std::int32_t factor = 0;            // SA
  std::int32_t offset = 0;            // SA
  std::int32_t factor_iter_id = 0;    // RF
  // FU fused_ids, RE after_ids, CHR reader_stage_ids, FFSP src_step_ids.
  std::vector<std::int32_t> ids;
  std::string pragma_type;  // PR, e.g. "auto_unroll_max_step$64"
  std::string scope_name;   // CHR, CHW, e.g. "shared", "local"

  bool operator==(const Step&) const = default;
};

// HardwareParams of the task, in TVM order.
struct HardwareParams {
  std::int64_t num_cores = 0;
  std::int64_t vector_unit_bytes = 0;
  std::int64_t cache_line_bytes = 0;
  std::int64_t max_shared_memory_per_block = 0;
  std::int64_t max_local_memory_per_block = 0;
  std::int64_t max_threads_per_block = 0;
  std::int64_t max_vthread_extent = 0;
  std::int64_t warp_size = 0;

  bool operator==(const HardwareParams&) const = default;
};

// TVM's MeasureErrorNO. Records keep error_no as an int so that values from a
// newer TVM are kept, not rejected; this enum only names the known ones.
enum class MeasureError : std::int32_t {
  kNoError = 0,
  kInstantiationError = 1,
  kCompileHostError = 2,
  kCompileDeviceError = 3,
  kRuntimeDeviceError = 4,
  kWrongAnswerError = 5,
  kBuildTimeoutError = 6,
  kRunTimeoutError = 7,
  kUnknownError = 8,
};
// "NO_ERROR", "RUN_TIMEOUT", ...; "UNKNOWN(<n>)" style names are not built:
// unknown values return "UNRECOGNIZED".
std::string_view measure_error_name(std::int32_t error_no);

struct Record {
  // Task.
  std::string workload_key;
  std::string target;
  std::optional<HardwareParams> hardware_params;  // absent in v0.2-style tasks
  std::string target_host;
  std::int32_t layout_rewrite = 0;
  std::vector<std::string> task_input_names;
  // State.
  std::vector<Step> steps;
  // Result.
  std::vector<double> costs;  // seconds; finite and >= 0 (parser-enforced)
  std::int32_t error_no = 0;
  double all_cost = 0;
  double timestamp = 0;
  std::string version;  // "v0.6"; empty when the line had no "v"

  bool operator==(const Record&) const = default;
};

// Whether a non-blank line is a comment; TVM's reader skips such lines and
// blank ones. Callers reading files skip lines for which this is true.
bool is_skippable_line(std::string_view line);

// Parses record lines with a Boost.JSON SAX parser straight into a Record (no
// DOM), reusing the Record's storage: parsing allocates nothing in the steady
// state when the same `Record` is passed again. Doubles are converted exactly
// (std::from_chars). The rules at the top of this file are enforced. The
// contents of the state's "stages" array are ignored (TVM always writes []).
// Duplicate keys are rejected.
// Not thread-safe; one parser per thread.
class RecordParser {
 public:
  RecordParser();
  ~RecordParser();
  RecordParser(const RecordParser&) = delete;
  RecordParser& operator=(const RecordParser&) = delete;

  // Parses one JSON line into *out, reusing out's storage. OK: *out holds the
  // record. kInvalidArgument: the message names the JSON path and the reason
  // ("i[1][1][3]: SP step expects 6 fields, got 5"); *out is left in an
  // unspecified but valid state. Never throws. `line` need not outlive the call.
  Status parse(std::string_view line, Record* out);
  Result<Record> parse(std::string_view line);

  // Test hook: the reference DOM parser alone. parse() runs a SAX parser and
  // asks this one to word the reason when a line is invalid. Its doubles come
  // from Boost's conversion (may differ from parse() by one ulp).
  Status TEST_parse_dom(std::string_view line, Record* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Convenience for one-off parses (builds a parser each call: slower).
Result<Record> parse_record(std::string_view line);

// Parses a JSON array of steps (the "steps" of a predict request, or i[1][1])
// under the same rules as RecordParser. `path` prefixes error messages
// ("steps[2][1]: SP stage_id is -1 ..."). OK: *out holds the steps.
Status parse_steps(const boost::json::value& steps, std::string_view path, std::vector<Step>* out);

// Writes `r` as one JSON line (no trailing newline) in the v0.6 shape that
// TVM's load_records reads: a 6-field task when hardware_params is present,
// else the 2-field [workload_key, target] task (target_host, layout_rewrite and
// input names cannot be expressed without hardware params and are dropped).
// "v" is r.version, omitted when empty. Doubles use the shortest exact form,
// so parse(write(r)) == r for every record the parser produces. (A kUnknown
// step, which only hand-built records hold, is written as ["unknown",
// stage_id]; the parser rejects it.)
std::string write_record(const Record& r);
// Appends to *out instead (no allocation when *out has capacity).
void write_record(const Record& r, std::string* out);
// The steps alone as a compact JSON array: [["SP",2,0,1024,[2,1,4],1],...].
void write_steps(std::span<const Step> steps, std::string* out);

// DESIGN §2, the one definition of a failed measurement: error_no != 0, no
// costs, or a cost <= 0. SQL's generated column measurements.failed
// (migrations/0001) states the same rule for stored rows.
bool measurement_failed(std::int32_t error_no, std::span<const double> costs);

// A record with error_no == 0 and no costs or all costs 0 is an unmeasured
// candidate; any other is a measurement, failed (measurement_failed) or
// measured.
enum class RecordClass { kMeasured, kFailed, kCandidate };
RecordClass classify(const Record& r);
std::string_view record_class_name(RecordClass c);  // "measured", ...

// Mean of the costs; 0 when there are none.
double mean_cost(const Record& r);

}  // namespace tcl::core
