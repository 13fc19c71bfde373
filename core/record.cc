#include "core/record.h"

#include <boost/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>

#include "core/hardware_order.h"
#include "core/json_text.h"
#include "core/record_internal.h"

namespace tcl::core {

namespace json = boost::json;

// ---------------------------------------------------------------------------
// Names.

std::string_view step_kind_name(StepKind kind) {
  switch (kind) {
    case StepKind::kAnnotation: return "AN";
    case StepKind::kFuse: return "FU";
    case StepKind::kPragma: return "PR";
    case StepKind::kReorder: return "RE";
    case StepKind::kSplit: return "SP";
    case StepKind::kFollowSplit: return "FSP";
    case StepKind::kFollowFusedSplit: return "FFSP";
    case StepKind::kStorageAlign: return "SA";
    case StepKind::kComputeAt: return "CA";
    case StepKind::kComputeInline: return "CI";
    case StepKind::kComputeRoot: return "CR";
    case StepKind::kCacheRead: return "CHR";
    case StepKind::kCacheWrite: return "CHW";
    case StepKind::kRfactor: return "RF";
    case StepKind::kUnknown: return "unknown";
  }
  return "unknown";
}

StepKind step_kind_from_tag(std::string_view t) {
  // Dispatch on length first: this runs once per step on the hot path.
  switch (t.size()) {
    case 2:
      switch (t[0]) {
        case 'A': return t[1] == 'N' ? StepKind::kAnnotation : StepKind::kUnknown;
        case 'F': return t[1] == 'U' ? StepKind::kFuse : StepKind::kUnknown;
        case 'P': return t[1] == 'R' ? StepKind::kPragma : StepKind::kUnknown;
        case 'R':
          if (t[1] == 'E') return StepKind::kReorder;
          return t[1] == 'F' ? StepKind::kRfactor : StepKind::kUnknown;
        case 'S':
          if (t[1] == 'P') return StepKind::kSplit;
          return t[1] == 'A' ? StepKind::kStorageAlign : StepKind::kUnknown;
        case 'C':
          if (t[1] == 'A') return StepKind::kComputeAt;
          if (t[1] == 'I') return StepKind::kComputeInline;
          return t[1] == 'R' ? StepKind::kComputeRoot : StepKind::kUnknown;
        default: return StepKind::kUnknown;
      }
    case 3:
      if (t == "FSP") return StepKind::kFollowSplit;
      if (t == "CHR") return StepKind::kCacheRead;
      if (t == "CHW") return StepKind::kCacheWrite;
      return StepKind::kUnknown;
    case 4: return t == "FFSP" ? StepKind::kFollowFusedSplit : StepKind::kUnknown;
    default: return StepKind::kUnknown;
  }
}

std::string_view measure_error_name(std::int32_t error_no) {
  switch (error_no) {
    case 0: return "NO_ERROR";
    case 1: return "INSTANTIATION_ERROR";
    case 2: return "COMPILE_HOST";
    case 3: return "COMPILE_DEVICE";
    case 4: return "RUNTIME_DEVICE";
    case 5: return "WRONG_ANSWER";
    case 6: return "BUILD_TIMEOUT";
    case 7: return "RUN_TIMEOUT";
    case 8: return "UNKNOWN_ERROR";
    default: return "UNRECOGNIZED";
  }
}

std::string_view record_class_name(RecordClass c) {
  switch (c) {
    case RecordClass::kMeasured: return "measured";
    case RecordClass::kFailed: return "failed";
    case RecordClass::kCandidate: return "candidate";
  }
  return "unknown";
}

bool is_skippable_line(std::string_view line) {
  for (char c : line) {
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    return c == '#';
  }
  return true;  // blank
}

// ---------------------------------------------------------------------------
// Shared with record_sax.cc.

namespace internal {

void reset_step(Step* s, StepKind kind) {
  // Keep the capacity of the vectors and strings (reuse across parses).
  s->kind = kind;
  s->stage_id = 0;
  s->iter_id = 0;
  s->annotation = 0;
  s->extent = 0;
  s->lengths.clear();
  s->inner_to_outer = false;
  s->src_step_id = 0;
  s->n_split = 0;
  s->level = 0;
  s->target_stage_id = 0;
  s->target_iter_id = 0;
  s->factor = 0;
  s->offset = 0;
  s->factor_iter_id = 0;
  s->ids.clear();
  s->pragma_type.clear();
  s->scope_name.clear();
}

// Number of fields (tag included) of each known kind, indexed by StepKind.
constexpr std::size_t kStepArity[kNumStepKinds] = {
    4,  // AN
    3,  // FU
    4,  // PR
    3,  // RE
    6,  // SP
    5,  // FSP
    6,  // FFSP
    5,  // SA
    4,  // CA
    2,  // CI
    2,  // CR
    4,  // CHR
    3,  // CHW
    4,  // RF
    0,  // unknown: rejected
};

std::size_t step_arity(StepKind kind) { return kStepArity[static_cast<int>(kind)]; }

}  // namespace internal

// ---------------------------------------------------------------------------
// Parsing helpers. Error messages are built only on the error path.

namespace {

Status invalid(std::string_view path, std::string_view what) {
  std::string m;
  m.reserve(path.size() + what.size() + 2);
  m.append(path);
  m.append(": ");
  m.append(what);
  return Status::invalid_argument(std::move(m));
}

std::string index_path(std::string_view base, std::size_t i) {
  std::string p(base);
  p += '[';
  p += std::to_string(i);
  p += ']';
  return p;
}

std::string_view json_kind_name(const json::value& v) {
  switch (v.kind()) {
    case json::kind::null: return "null";
    case json::kind::bool_: return "a boolean";
    case json::kind::int64:
    case json::kind::uint64: return "an integer";
    case json::kind::double_: return "a number";
    case json::kind::string: return "a string";
    case json::kind::array: return "an array";
    case json::kind::object: return "an object";
  }
  return "a value";
}

inline bool get_i64(const json::value& v, std::int64_t* out) {
  if (const std::int64_t* p = v.if_int64()) {
    *out = *p;
    return true;
  }
  if (const std::uint64_t* p = v.if_uint64()) {
    if (*p > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return false;
    *out = static_cast<std::int64_t>(*p);
    return true;
  }
  return false;
}

inline bool get_i32(const json::value& v, std::int32_t* out) {
  std::int64_t x;
  if (!get_i64(v, &x)) return false;
  if (x < std::numeric_limits<std::int32_t>::min() || x > std::numeric_limits<std::int32_t>::max()) {
    return false;
  }
  *out = static_cast<std::int32_t>(x);
  return true;
}

inline bool get_bool01(const json::value& v, bool* out) {
  if (const bool* b = v.if_bool()) {
    *out = *b;
    return true;
  }
  std::int64_t x;
  if (!get_i64(v, &x) || (x != 0 && x != 1)) return false;
  *out = x == 1;
  return true;
}

inline bool get_number(const json::value& v, double* out) {
  if (const double* d = v.if_double()) {
    *out = *d;
    return true;
  }
  if (const std::int64_t* i = v.if_int64()) {
    *out = static_cast<double>(*i);
    return true;
  }
  if (const std::uint64_t* u = v.if_uint64()) {
    *out = static_cast<double>(*u);
    return true;
  }
  return false;
}

// Field `f` of step `tag` at `path` (the step's path) has the wrong type.
Status field_error(std::string_view path, std::size_t f, std::string_view tag, std::string_view field,
                   std::string_view expected, const json::value& got) {
  std::string what(tag);
  what += ' ';
  what += field;
  what += " must be ";
  what += expected;
  what += ", got ";
  what += json_kind_name(got);
  return invalid(index_path(path, f), what);
}

template <typename Int>
Status read_int_list(const json::value& v, std::string_view path, std::size_t f, std::string_view tag,
                     std::string_view field, std::vector<Int>* out) {
  const json::array* a = v.if_array();
  if (a == nullptr) return field_error(path, f, tag, field, "an array of integers", v);
  out->resize(a->size());
  for (std::size_t k = 0; k < a->size(); ++k) {
    bool ok;
    if constexpr (sizeof(Int) == 4) {
      ok = get_i32((*a)[k], &(*out)[k]);
    } else {
      ok = get_i64((*a)[k], &(*out)[k]);
    }
    if (!ok) {
      std::string what(tag);
      what += ' ';
      what += field;
      what += " must hold integers";
      what += sizeof(Int) == 4 ? " in int32 range" : "";
      what += ", got ";
      what += json_kind_name((*a)[k]);
      return invalid(index_path(index_path(path, f), k), what);
    }
  }
  return Status::ok();
}

// ---------------------------------------------------------------------------
// Value rules (record.h, "What the parser accepts beyond the shape"). They
// are checked on the parsed Record, so the SAX parser and the DOM reference
// share them and agree on every verdict and message.

Status unknown_kind(std::string_view path, std::string_view tag) {
  std::string what = "step kind ";
  append_json_string(&what, tag);
  what += " is not one of TVM's (AN, FU, PR, RE, SP, FSP, FFSP, SA, CA, CI, CR, CHR, CHW, RF)";
  return invalid(path, what);
}

// `field` of `text` at `path` holds no control character (U+0000-U+001F, U+007F).
Status check_text(std::string_view path, std::string_view field, std::string_view text) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c != 0x7f) continue;
    char code[8];
    std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(c));
    return invalid(
        path, std::string(field) + " must hold no control characters, got " + code + " at offset " + std::to_string(i));
  }
  return Status::ok();
}

Status check_step(const Step& s, std::string_view steps_path, std::size_t index) {
  const std::string tag(step_kind_name(s.kind));
  auto at = [&](std::size_t f) { return index_path(index_path(steps_path, index), f); };
  auto id = [&](std::size_t f, std::string_view field, std::int64_t v) {
    if (v >= 0) return Status::ok();
    return invalid(at(f), tag + " " + std::string(field) + " must be >= 0, got " + std::to_string(v));
  };
  auto ids = [&](std::size_t f, std::string_view field, const auto& list) {
    for (std::size_t k = 0; k < list.size(); ++k) {
      if (list[k] >= 0) continue;
      return invalid(index_path(at(f), k),
                     tag + " " + std::string(field) + " must hold values >= 0, got " + std::to_string(list[k]));
    }
    return Status::ok();
  };
  auto text = [&](std::size_t f, std::string_view field, const std::string& v) {
    return check_text(at(f), tag + " " + std::string(field), v);
  };
  Status st = id(1, "stage_id", s.stage_id);
  if (!st) return st;
  switch (s.kind) {
    case StepKind::kAnnotation:
      if (!(st = id(2, "iter_id", s.iter_id))) return st;
      if (s.annotation >= 0 && s.annotation < kNumAnnotations) return Status::ok();
      return invalid(at(3), "AN annotation must be 0 to " + std::to_string(kNumAnnotations - 1) +
                                " (TVM's IteratorAnnotation), got " + std::to_string(s.annotation));
    case StepKind::kFuse: return ids(2, "fused_ids", s.ids);
    case StepKind::kPragma:
      if (!(st = id(2, "iter_id", s.iter_id))) return st;
      return text(3, "pragma_type", s.pragma_type);
    case StepKind::kReorder: return ids(2, "after_ids", s.ids);
    case StepKind::kSplit:
      if (!(st = id(2, "iter_id", s.iter_id))) return st;
      if (!(st = id(3, "extent", s.extent))) return st;
      return ids(4, "lengths", s.lengths);
    case StepKind::kFollowSplit:
      if (!(st = id(2, "iter_id", s.iter_id))) return st;
      if (!(st = id(3, "src_step_id", s.src_step_id))) return st;
      return id(4, "n_split", s.n_split);
    case StepKind::kFollowFusedSplit:
      if (!(st = id(2, "iter_id", s.iter_id))) return st;
      if (!(st = ids(3, "src_step_ids", s.ids))) return st;
      return id(4, "level", s.level);
    case StepKind::kStorageAlign:
      if (!(st = id(2, "iter_id", s.iter_id))) return st;
      return id(3, "factor", s.factor);  // the offset may be negative
    case StepKind::kComputeAt:
      if (!(st = id(2, "target_stage_id", s.target_stage_id))) return st;
      return id(3, "target_iter_id", s.target_iter_id);
    case StepKind::kComputeInline:
    case StepKind::kComputeRoot: return Status::ok();
    case StepKind::kCacheRead:
      if (!(st = text(2, "scope_name", s.scope_name))) return st;
      return ids(3, "reader_stage_ids", s.ids);
    case StepKind::kCacheWrite: return text(2, "scope_name", s.scope_name);
    case StepKind::kRfactor:
      if (!(st = id(2, "iter_id", s.iter_id))) return st;
      return id(3, "factor_iter_id", s.factor_iter_id);
    case StepKind::kUnknown: break;
  }
  return unknown_kind(at(0), tag);  // only hand-built steps get here
}

Status check_record(const Record& r) {
  Status s;
  if (!(s = check_text("i[0][0]", "workload_key", r.workload_key))) return s;
  if (!(s = check_text("i[0][1]", "target", r.target))) return s;
  if (!(s = check_text("i[0][3]", "target_host", r.target_host))) return s;
  if (r.layout_rewrite < 0) {
    return invalid("i[0][4]", "layout_rewrite must be >= 0, got " + std::to_string(r.layout_rewrite));
  }
  for (std::size_t k = 0; k < r.task_input_names.size(); ++k) {
    if (!(s = check_text(index_path("i[0][5]", k), "input name", r.task_input_names[k]))) return s;
  }
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    if (!(s = check_step(r.steps[i], "i[1][1]", i))) return s;
  }
  return check_text("v", "version", r.version);
}

Status parse_one_step(const json::value& v, std::string_view steps_path, std::size_t index, Step* st) {
  const json::array* ap = v.if_array();
  if (ap == nullptr) {
    return invalid(index_path(steps_path, index),
                   std::string("step must be an array, got ") + std::string(json_kind_name(v)));
  }
  const json::array& a = *ap;
  if (a.empty()) return invalid(index_path(steps_path, index), "step is empty");
  const json::string* tag_s = a[0].if_string();
  if (tag_s == nullptr) {
    return invalid(index_path(index_path(steps_path, index), 0),
                   std::string("step kind must be a string, got ") + std::string(json_kind_name(a[0])));
  }
  const std::string_view tag(tag_s->data(), tag_s->size());
  const StepKind kind = step_kind_from_tag(tag);
  internal::reset_step(st, kind);

  if (kind == StepKind::kUnknown) return unknown_kind(index_path(index_path(steps_path, index), 0), tag);

  const std::size_t arity = internal::step_arity(kind);
  if (a.size() != arity) {
    std::string what(tag);
    what += " step expects ";
    what += std::to_string(arity);
    what += " fields, got ";
    what += std::to_string(a.size());
    return invalid(index_path(steps_path, index), what);
  }

  // Lazily built path of this step, for field errors.
  auto path = [&] { return index_path(steps_path, index); };
  auto want_i32 = [&](std::size_t f, std::string_view field, std::int32_t* out) -> Status {
    if (get_i32(a[f], out)) return Status::ok();
    return field_error(path(), f, tag, field, "an int32 integer", a[f]);
  };
  auto want_str = [&](std::size_t f, std::string_view field, std::string* out) -> Status {
    const json::string* s = a[f].if_string();
    if (s == nullptr) return field_error(path(), f, tag, field, "a string", a[f]);
    out->assign(s->data(), s->size());
    return Status::ok();
  };
  auto want_bool = [&](std::size_t f, std::string_view field, bool* out) -> Status {
    if (get_bool01(a[f], out)) return Status::ok();
    return field_error(path(), f, tag, field, "0 or 1", a[f]);
  };

  Status s = want_i32(1, "stage_id", &st->stage_id);
  if (!s) return s;
  switch (kind) {
    case StepKind::kAnnotation:
      if (!(s = want_i32(2, "iter_id", &st->iter_id))) return s;
      return want_i32(3, "annotation", &st->annotation);
    case StepKind::kFuse: return read_int_list(a[2], path(), 2, tag, "fused_ids", &st->ids);
    case StepKind::kPragma:
      if (!(s = want_i32(2, "iter_id", &st->iter_id))) return s;
      return want_str(3, "pragma_type", &st->pragma_type);
    case StepKind::kReorder: return read_int_list(a[2], path(), 2, tag, "after_ids", &st->ids);
    case StepKind::kSplit:
      if (!(s = want_i32(2, "iter_id", &st->iter_id))) return s;
      if (!get_i64(a[3], &st->extent)) {
        return field_error(path(), 3, tag, "extent", "an integer", a[3]);
      }
      if (!(s = read_int_list(a[4], path(), 4, tag, "lengths", &st->lengths))) return s;
      return want_bool(5, "inner_to_outer", &st->inner_to_outer);
    case StepKind::kFollowSplit:
      if (!(s = want_i32(2, "iter_id", &st->iter_id))) return s;
      if (!(s = want_i32(3, "src_step_id", &st->src_step_id))) return s;
      return want_i32(4, "n_split", &st->n_split);
    case StepKind::kFollowFusedSplit:
      if (!(s = want_i32(2, "iter_id", &st->iter_id))) return s;
      if (!(s = read_int_list(a[3], path(), 3, tag, "src_step_ids", &st->ids))) return s;
      if (!(s = want_i32(4, "level", &st->level))) return s;
      return want_bool(5, "factor_or_nparts", &st->inner_to_outer);
    case StepKind::kStorageAlign:
      if (!(s = want_i32(2, "iter_id", &st->iter_id))) return s;
      if (!(s = want_i32(3, "factor", &st->factor))) return s;
      return want_i32(4, "offset", &st->offset);
    case StepKind::kComputeAt:
      if (!(s = want_i32(2, "target_stage_id", &st->target_stage_id))) return s;
      return want_i32(3, "target_iter_id", &st->target_iter_id);
    case StepKind::kComputeInline:
    case StepKind::kComputeRoot: return Status::ok();
    case StepKind::kCacheRead:
      if (!(s = want_str(2, "scope_name", &st->scope_name))) return s;
      return read_int_list(a[3], path(), 3, tag, "reader_stage_ids", &st->ids);
    case StepKind::kCacheWrite: return want_str(2, "scope_name", &st->scope_name);
    case StepKind::kRfactor:
      if (!(s = want_i32(2, "iter_id", &st->iter_id))) return s;
      return want_i32(3, "factor_iter_id", &st->factor_iter_id);
    case StepKind::kUnknown: break;
  }
  return Status::ok();
}

Status parse_steps_array(const json::value& v, std::string_view path, std::vector<Step>* out) {
  const json::array* a = v.if_array();
  if (a == nullptr) {
    return invalid(path, std::string("steps must be an array, got ") + std::string(json_kind_name(v)));
  }
  // resize (not clear) keeps the old elements and their capacity for reuse.
  out->resize(a->size());
  for (std::size_t i = 0; i < a->size(); ++i) {
    Status s = parse_one_step((*a)[i], path, i, &(*out)[i]);
    if (!s) return s;
  }
  return Status::ok();
}

Status parse_task(const json::value& v, Record* r) {
  const json::array* ap = v.if_array();
  if (ap == nullptr) {
    return invalid("i[0]", std::string("task must be an array, got ") + std::string(json_kind_name(v)));
  }
  const json::array& a = *ap;
  if (a.size() < 2 || a.size() > 6) {
    return invalid("i[0]",
                   "task expects 2 to 6 fields (workload_key, target, hardware_params, "
                   "target_host, layout_rewrite, input names), got " +
                       std::to_string(a.size()));
  }
  const json::string* wk = a[0].if_string();
  if (wk == nullptr) {
    return invalid("i[0][0]", std::string("workload_key must be a string, got ") + std::string(json_kind_name(a[0])));
  }
  if (wk->empty()) return invalid("i[0][0]", "workload_key is empty");
  r->workload_key.assign(wk->data(), wk->size());
  const json::string* tg = a[1].if_string();
  if (tg == nullptr) {
    return invalid("i[0][1]", std::string("target must be a string, got ") + std::string(json_kind_name(a[1])));
  }
  r->target.assign(tg->data(), tg->size());

  r->hardware_params.reset();
  r->target_host.clear();
  r->layout_rewrite = 0;
  r->task_input_names.clear();
  if (a.size() > 2) {
    const json::array* hw = a[2].if_array();
    if (hw == nullptr || hw->size() != 8) {
      std::string what = "hardware_params must be an array of 8 integers, got ";
      what += hw == nullptr ? std::string(json_kind_name(a[2])) : "an array of " + std::to_string(hw->size());
      return invalid("i[0][2]", what);
    }
    std::int64_t x[8];
    for (std::size_t k = 0; k < 8; ++k) {
      if (!get_i64((*hw)[k], &x[k])) {
        return invalid(index_path("i[0][2]", k),
                       std::string("hardware param must be an integer, got ") + std::string(json_kind_name((*hw)[k])));
      }
    }
    r->hardware_params = HardwareParams{x[0], x[1], x[2], x[3], x[4], x[5], x[6], x[7]};
  }
  if (a.size() > 3) {
    const json::string* th = a[3].if_string();
    if (th == nullptr) {
      return invalid("i[0][3]", std::string("target_host must be a string, got ") + std::string(json_kind_name(a[3])));
    }
    r->target_host.assign(th->data(), th->size());
  }
  if (a.size() > 4 && !get_i32(a[4], &r->layout_rewrite)) {
    return invalid("i[0][4]",
                   std::string("layout_rewrite must be an integer, got ") + std::string(json_kind_name(a[4])));
  }
  if (a.size() > 5) {
    const json::array* names = a[5].if_array();
    if (names == nullptr) {
      return invalid("i[0][5]",
                     std::string("input names must be an array of strings, got ") + std::string(json_kind_name(a[5])));
    }
    r->task_input_names.resize(names->size());
    for (std::size_t k = 0; k < names->size(); ++k) {
      const json::string* n = (*names)[k].if_string();
      if (n == nullptr) {
        return invalid(index_path("i[0][5]", k),
                       std::string("input name must be a string, got ") + std::string(json_kind_name((*names)[k])));
      }
      r->task_input_names[k].assign(n->data(), n->size());
    }
  }
  return Status::ok();
}

Status parse_input(const json::value& v, Record* r) {
  const json::array* a = v.if_array();
  if (a == nullptr) return invalid("i", std::string("must be an array, got ") + std::string(json_kind_name(v)));
  if (a->size() != 2) {
    return invalid("i", "expects 2 fields [task, state], got " + std::to_string(a->size()));
  }
  Status s = parse_task((*a)[0], r);
  if (!s) return s;
  const json::array* state = (*a)[1].if_array();
  if (state == nullptr) {
    return invalid("i[1]", std::string("state must be an array, got ") + std::string(json_kind_name((*a)[1])));
  }
  if (state->size() != 2) {
    return invalid("i[1]", "state expects 2 fields [stages, steps], got " + std::to_string(state->size()));
  }
  if (!(*state)[0].is_array()) {
    return invalid("i[1][0]", std::string("stages must be an array, got ") + std::string(json_kind_name((*state)[0])));
  }
  return parse_steps_array((*state)[1], "i[1][1]", &r->steps);
}

Status parse_result(const json::value& v, Record* r) {
  const json::array* ap = v.if_array();
  if (ap == nullptr) return invalid("r", std::string("must be an array, got ") + std::string(json_kind_name(v)));
  const json::array& a = *ap;
  if (a.size() != 4) {
    return invalid("r", "expects 4 fields [costs, error_no, all_cost, timestamp], got " + std::to_string(a.size()));
  }
  const json::array* costs = a[0].if_array();
  if (costs == nullptr) {
    return invalid("r[0]", std::string("costs must be an array of numbers, got ") + std::string(json_kind_name(a[0])));
  }
  r->costs.resize(costs->size());
  for (std::size_t k = 0; k < costs->size(); ++k) {
    double c;
    if (!get_number((*costs)[k], &c)) {
      return invalid(index_path("r[0]", k),
                     std::string("cost must be a number, got ") + std::string(json_kind_name((*costs)[k])));
    }
    if (!std::isfinite(c)) return invalid(index_path("r[0]", k), "cost is not finite");
    if (c < 0) {
      char buf[32];
      auto res = std::to_chars(buf, buf + sizeof buf, c);
      return invalid(index_path("r[0]", k),
                     "cost is negative (" + std::string(buf, res.ptr) + "); costs are seconds >= 0");
    }
    r->costs[k] = c;
  }
  if (!get_i32(a[1], &r->error_no)) {
    return invalid("r[1]", std::string("error_no must be an int32 integer, got ") + std::string(json_kind_name(a[1])));
  }
  if (!get_number(a[2], &r->all_cost) || !std::isfinite(r->all_cost)) {
    return invalid("r[2]", std::string("all_cost must be a finite number, got ") + std::string(json_kind_name(a[2])));
  }
  if (!get_number(a[3], &r->timestamp) || !std::isfinite(r->timestamp)) {
    return invalid("r[3]", std::string("timestamp must be a finite number, got ") + std::string(json_kind_name(a[3])));
  }
  return Status::ok();
}

Status parse_document(const json::value& doc, Record* r) {
  const json::object* o = doc.if_object();
  if (o == nullptr) {
    return Status::invalid_argument(std::string("record must be a JSON object, got ") +
                                    std::string(json_kind_name(doc)));
  }
  const json::value* i = nullptr;
  const json::value* res = nullptr;
  const json::value* ver = nullptr;
  for (const auto& kv : *o) {
    const std::string_view k(kv.key().data(), kv.key().size());
    if (k == "i") {
      i = &kv.value();
    } else if (k == "r") {
      res = &kv.value();
    } else if (k == "v") {
      ver = &kv.value();
    } else {
      // TVM's reader treats an unknown key as fatal; so do we.
      return Status::invalid_argument("unknown key \"" + std::string(k) + "\" (a record has only \"i\", \"r\", \"v\")");
    }
  }
  if (i == nullptr) return Status::invalid_argument("missing \"i\" (the measure input)");
  if (res == nullptr) return Status::invalid_argument("missing \"r\" (the measure result)");
  Status s = parse_input(*i, r);
  if (!s) return s;
  if (!(s = parse_result(*res, r))) return s;
  r->version.clear();
  if (ver != nullptr) {
    const json::string* vs = ver->if_string();
    if (vs == nullptr) {
      return invalid("v", std::string("version must be a string, got ") + std::string(json_kind_name(*ver)));
    }
    r->version.assign(vs->data(), vs->size());
  }
  return Status::ok();
}

// Describes a JSON syntax error at `offset`; names NaN/Infinity, which Python's
// json module writes but JSON (and TVM's reader) does not accept.
Status syntax_error(std::string_view line, std::size_t offset, const json::error_code& ec) {
  std::size_t p = std::min(offset, line.size());
  while (p < line.size() && (line[p] == ' ' || line[p] == '\t')) ++p;
  const std::string_view rest = line.substr(p);
  auto starts = [&](std::string_view w) { return rest.substr(0, w.size()) == w; };
  std::string m = "invalid JSON at offset " + std::to_string(offset) + ": ";
  if (starts("NaN") || starts("-NaN")) {
    m += "non-finite number NaN (costs must be finite numbers)";
  } else if (starts("Infinity") || starts("-Infinity")) {
    m += "non-finite number Infinity (costs must be finite numbers)";
  } else {
    m += ec.message();
  }
  return Status::invalid_argument(std::move(m));
}

}  // namespace

Status parse_steps(const json::value& steps, std::string_view path, std::vector<Step>* out) {
  try {
    if (Status s = parse_steps_array(steps, path, out); !s) return s;
    for (std::size_t i = 0; i < out->size(); ++i) {
      if (Status s = check_step((*out)[i], path, i); !s) return s;
    }
    return Status::ok();
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("out of memory parsing steps");
  } catch (const std::exception& e) {
    return Status::internal(std::string("parsing steps: ") + e.what());
  }
}

// ---------------------------------------------------------------------------
// RecordParser.

struct RecordParser::Impl {
  // The DOM of one line lives in `arena` (grown on demand by the monotonic
  // resource, released back to `arena` before each parse).
  alignas(16) unsigned char arena[64 * 1024];
  unsigned char parser_temp[4096];
  json::monotonic_resource mr{arena, sizeof arena};
  json::parser parser{json::storage_ptr(), json::parse_options(), parser_temp, sizeof parser_temp};
  // The parser; the DOM above only words the reason for invalid lines.
  internal::SaxRecordParser sax;
};

RecordParser::RecordParser() : impl_(std::make_unique<Impl>()) {}
RecordParser::~RecordParser() = default;

Status RecordParser::parse(std::string_view line, Record* out) {
  std::string reason;
  try {
    switch (impl_->sax.parse(line, out, &reason)) {
      case internal::SaxRecordParser::Verdict::kOk: return check_record(*out);
      case internal::SaxRecordParser::Verdict::kRejected: return Status::invalid_argument(std::move(reason));
      case internal::SaxRecordParser::Verdict::kAskDom: break;
    }
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("out of memory parsing a record line of " + std::to_string(line.size()) +
                                      " bytes");
  } catch (const std::exception&) {
    // the DOM parser below gives the verdict
  }
  // Invalid line: the DOM parser words the reason. (Should it accept the line,
  // the SAX parser has a bug; the DOM's record is then returned as is.)
  return TEST_parse_dom(line, out);
}

Status RecordParser::TEST_parse_dom(std::string_view line, Record* out) {
  try {
    if (is_skippable_line(line)) {
      return Status::invalid_argument(line.find('#') != std::string_view::npos
                                          ? "comment line (starts with '#'), not a record"
                                          : "empty line, not a record");
    }
    impl_->mr.release();
    impl_->parser.reset(json::storage_ptr(&impl_->mr));
    json::error_code ec;
    const std::size_t n = impl_->parser.write(line.data(), line.size(), ec);
    if (ec) return syntax_error(line, n, ec);
    const json::value doc = impl_->parser.release();
    if (Status s = parse_document(doc, out); !s) return s;
    return check_record(*out);
  } catch (const std::bad_alloc&) {
    return Status::resource_exhausted("out of memory parsing a record line of " + std::to_string(line.size()) +
                                      " bytes");
  } catch (const std::exception& e) {
    return Status::internal(std::string("parsing a record: ") + e.what());
  }
}

Result<Record> RecordParser::parse(std::string_view line) {
  Record r;
  Status s = parse(line, &r);
  if (!s) return s;
  return r;
}

Result<Record> parse_record(std::string_view line) {
  RecordParser p;
  return p.parse(line);
}

// ---------------------------------------------------------------------------
// Writer.

namespace {

void write_int_list_json(const std::int32_t* p, std::size_t n, std::string_view sep, std::string* out) {
  out->push_back('[');
  for (std::size_t k = 0; k < n; ++k) {
    if (k) out->append(sep);
    append_int(out, p[k]);
  }
  out->push_back(']');
}

void write_step(const Step& s, std::string_view sep, std::string* out) {
  out->push_back('[');
  append_json_string(out, step_kind_name(s.kind));
  out->append(sep);
  append_int(out, s.stage_id);
  auto item_int = [&](std::int64_t x) {
    out->append(sep);
    append_int(out, x);
  };
  auto item_str = [&](std::string_view x) {
    out->append(sep);
    append_json_string(out, x);
  };
  auto item_ids = [&](const std::vector<std::int32_t>& ids) {
    out->append(sep);
    write_int_list_json(ids.data(), ids.size(), sep, out);
  };
  switch (s.kind) {
    case StepKind::kAnnotation:
      item_int(s.iter_id);
      item_int(s.annotation);
      break;
    case StepKind::kFuse:
    case StepKind::kReorder: item_ids(s.ids); break;
    case StepKind::kPragma:
      item_int(s.iter_id);
      item_str(s.pragma_type);
      break;
    case StepKind::kSplit:
      item_int(s.iter_id);
      item_int(s.extent);
      out->append(sep);
      out->push_back('[');
      for (std::size_t k = 0; k < s.lengths.size(); ++k) {
        if (k) out->append(sep);
        append_int(out, s.lengths[k]);
      }
      out->push_back(']');
      item_int(s.inner_to_outer ? 1 : 0);
      break;
    case StepKind::kFollowSplit:
      item_int(s.iter_id);
      item_int(s.src_step_id);
      item_int(s.n_split);
      break;
    case StepKind::kFollowFusedSplit:
      item_int(s.iter_id);
      item_ids(s.ids);
      item_int(s.level);
      item_int(s.inner_to_outer ? 1 : 0);
      break;
    case StepKind::kStorageAlign:
      item_int(s.iter_id);
      item_int(s.factor);
      item_int(s.offset);
      break;
    case StepKind::kComputeAt:
      item_int(s.target_stage_id);
      item_int(s.target_iter_id);
      break;
    case StepKind::kComputeInline:
    case StepKind::kComputeRoot: break;
    case StepKind::kCacheRead:
      item_str(s.scope_name);
      item_ids(s.ids);
      break;
    case StepKind::kCacheWrite: item_str(s.scope_name); break;
    case StepKind::kRfactor:
      item_int(s.iter_id);
      item_int(s.factor_iter_id);
      break;
    case StepKind::kUnknown: break;
  }
  out->push_back(']');
}

}  // namespace

void write_steps(std::span<const Step> steps, std::string* out) {
  out->push_back('[');
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (i) out->push_back(',');
    write_step(steps[i], ",", out);
  }
  out->push_back(']');
}

void write_record(const Record& r, std::string* out) {
  constexpr std::string_view sep = ", ";
  out->append("{\"i\": [[");
  append_json_string(out, r.workload_key);
  out->append(sep);
  append_json_string(out, r.target);
  if (r.hardware_params) {
    const std::array<std::int64_t, 8> hw = tvm_order(*r.hardware_params);
    out->append(", [");
    for (std::size_t k = 0; k < hw.size(); ++k) {
      if (k) out->append(sep);
      append_int(out, hw[k]);
    }
    out->append("], ");
    append_json_string(out, r.target_host);
    out->append(sep);
    append_int(out, r.layout_rewrite);
    out->append(", [");
    for (std::size_t k = 0; k < r.task_input_names.size(); ++k) {
      if (k) out->append(sep);
      append_json_string(out, r.task_input_names[k]);
    }
    out->push_back(']');
  }
  out->append("], [[], [");
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    if (i) out->append(sep);
    write_step(r.steps[i], sep, out);
  }
  out->append("]]], \"r\": [[");
  for (std::size_t k = 0; k < r.costs.size(); ++k) {
    if (k) out->append(sep);
    append_double(out, r.costs[k]);
  }
  out->append("], ");
  append_int(out, r.error_no);
  out->append(sep);
  append_double(out, r.all_cost);
  out->append(sep);
  append_double(out, r.timestamp);
  out->push_back(']');
  if (!r.version.empty()) {
    out->append(", \"v\": ");
    append_json_string(out, r.version);
  }
  out->push_back('}');
}

std::string write_record(const Record& r) {
  std::string s;
  s.reserve(256 + 48 * r.steps.size() + 24 * r.costs.size());
  write_record(r, &s);
  return s;
}

// ---------------------------------------------------------------------------
// Classification.

bool measurement_failed(std::int32_t error_no, std::span<const double> costs) {
  if (error_no != 0 || costs.empty()) return true;
  // !(c > 0) rather than c <= 0: a NaN (which the parser never yields) fails.
  return std::any_of(costs.begin(), costs.end(), [](double c) { return !(c > 0); });
}

RecordClass classify(const Record& r) {
  const bool all_zero = std::all_of(r.costs.begin(), r.costs.end(), [](double c) { return c == 0; });
  if (r.error_no == 0 && all_zero) return RecordClass::kCandidate;  // no costs, or all 0
  return measurement_failed(r.error_no, r.costs) ? RecordClass::kFailed : RecordClass::kMeasured;
}

double mean_cost(const Record& r) {
  if (r.costs.empty()) return 0;
  double s = 0;
  for (double c : r.costs) s += c;
  return s / static_cast<double>(r.costs.size());
}

}  // namespace tcl::core
