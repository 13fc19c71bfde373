// The SAX parser behind RecordParser (see record_internal.h). Every handler
// knows where it is from a small stack of frames (role + child index), checks
// the value's type and range, and stores it straight into the Record; no DOM
// is built. Doubles are converted from their text with std::from_chars, which
// rounds correctly (Boost 1.81's own conversion may be off by one ulp), so
// that parse(write(r)) == r holds for every value. The contents of "stages"
// are ignored. Any surprise (an unknown step kind included) returns false and
// RecordParser asks the DOM parser for the reason; the value rules of
// record.h are checked by RecordParser on the finished Record.
#include <boost/json/basic_parser_impl.hpp>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "core/record_internal.h"

namespace tcl::core::internal {

namespace json = boost::json;

namespace {

enum class Role : std::uint8_t {
  kTop,       // the record object
  kInput,     // "i": [task, state]
  kResult,    // "r": [costs, error_no, all_cost, timestamp]
  kTask,      // i[0]
  kHardware,  // i[0][2]
  kNames,     // i[0][5]
  kState,     // i[1]
  kSteps,     // i[1][1]
  kStep,      // i[1][1][s], a known step kind (or the tag not read yet)
  kStepList,  // an integer list inside a known step
  kCosts,     // r[0]
  kSkip,      // inside i[1][0] (stages): ignored, any JSON
};

struct Frame {
  Role role;
  std::uint32_t index;  // position of the next child
};

// A valid record nests 6 deep; stages may nest a little more.
constexpr int kMaxDepth = 32;

class Handler {
 public:
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

  void begin(Record* r) {
    r_ = r;
    depth_ = 0;
    key_ = 0;
    seen_ = 0;
    n_steps_ = 0;
    step_ = nullptr;
    list32_ = nullptr;
    list64_ = nullptr;
    part_.clear();
    num_part_.clear();
    reason_.clear();
    r->hardware_params.reset();
    r->target_host.clear();
    r->layout_rewrite = 0;
    r->version.clear();
  }

  // A definitive rejection reason found by the handler itself (else empty).
  const std::string& reason() const { return reason_; }

  bool on_document_begin(json::error_code&) { return true; }
  bool on_document_end(json::error_code& ec) {
    if ((seen_ & 3u) != 3u) return fail(ec);  // both "i" and "r" are required
    return true;
  }

  bool on_object_begin(json::error_code& ec) {
    if (depth_ == 0) return push(Role::kTop, ec);
    if (frames_[depth_ - 1].role == Role::kSkip) return push(Role::kSkip, ec);
    return fail(ec);
  }
  bool on_object_end(std::size_t, json::error_code&) {
    --depth_;
    if (depth_ > 0) ++frames_[depth_ - 1].index;
    return true;
  }

  bool on_key_part(json::string_view s, std::size_t, json::error_code&) {
    part_.append(s.data(), s.size());
    return true;
  }
  bool on_key(json::string_view s, std::size_t, json::error_code& ec) {
    const std::string_view k = take(s);
    Frame& p = frames_[depth_ - 1];
    if (p.role == Role::kSkip) return true;
    unsigned bit;
    if (k == "i") {
      bit = 1;
    } else if (k == "r") {
      bit = 2;
    } else if (k == "v") {
      bit = 4;
    } else {
      return fail(ec);  // the DOM parser names the unknown key
    }
    if (seen_ & bit) {
      reason_ = "duplicate key \"" + std::string(k) + "\"";
      return fail(ec);
    }
    seen_ |= bit;
    key_ = k[0];
    return true;
  }

  bool on_array_begin(json::error_code& ec) {
    if (depth_ == 0) return fail(ec);
    Frame& p = frames_[depth_ - 1];
    switch (p.role) {
      case Role::kTop:
        if (key_ == 'i') return push(Role::kInput, ec);
        if (key_ == 'r') return push(Role::kResult, ec);
        return fail(ec);
      case Role::kInput:
        if (p.index == 0) return push(Role::kTask, ec);
        if (p.index == 1) return push(Role::kState, ec);
        return fail(ec);
      case Role::kResult:
        if (p.index == 0) {
          r_->costs.clear();
          return push(Role::kCosts, ec);
        }
        return fail(ec);
      case Role::kTask:
        if (p.index == 2) return push(Role::kHardware, ec);
        if (p.index == 5) {
          n_names_ = 0;
          return push(Role::kNames, ec);
        }
        return fail(ec);
      case Role::kState:
        if (p.index == 0) return push(Role::kSkip, ec);
        if (p.index == 1) return push(Role::kSteps, ec);
        return fail(ec);
      case Role::kSteps: {
        if (n_steps_ == r_->steps.size()) r_->steps.emplace_back();
        step_ = &r_->steps[n_steps_++];
        return push(Role::kStep, ec);
      }
      case Role::kStep: return begin_step_list(p.index, ec);
      case Role::kSkip: return push(Role::kSkip, ec);
      default: return fail(ec);
    }
  }

  bool on_array_end(std::size_t, json::error_code& ec) {
    const Frame f = frames_[--depth_];
    switch (f.role) {
      case Role::kInput:
        if (f.index != 2) return fail(ec);
        break;
      case Role::kResult:
        if (f.index != 4) return fail(ec);
        break;
      case Role::kTask:
        if (f.index < 2) return fail(ec);
        if (f.index < 6) r_->task_input_names.clear();
        break;
      case Role::kHardware:
        if (f.index != 8) return fail(ec);
        r_->hardware_params = HardwareParams{hw_[0], hw_[1], hw_[2], hw_[3], hw_[4], hw_[5], hw_[6], hw_[7]};
        break;
      case Role::kNames: r_->task_input_names.resize(n_names_); break;
      case Role::kState:
        if (f.index != 2) return fail(ec);
        break;
      case Role::kSteps: r_->steps.resize(n_steps_); break;
      case Role::kStep:
        if (f.index == 0 || f.index != step_arity(step_->kind)) return fail(ec);
        break;
      case Role::kStepList:
        list32_ = nullptr;
        list64_ = nullptr;
        break;
      default: break;
    }
    ++frames_[depth_ - 1].index;  // the array was one value of its parent
    return true;
  }

  bool on_string_part(json::string_view s, std::size_t, json::error_code&) {
    part_.append(s.data(), s.size());
    return true;
  }
  bool on_string(json::string_view s, std::size_t, json::error_code& ec) {
    const std::string_view v = take(s);
    if (depth_ == 0) return fail(ec);  // a bare scalar is not a record
    Frame& p = frames_[depth_ - 1];
    bool ok = false;
    switch (p.role) {
      case Role::kTop:
        if (key_ == 'v') {
          r_->version.assign(v);
          ok = true;
        }
        break;
      case Role::kTask:
        if (p.index == 0 && !v.empty()) {
          r_->workload_key.assign(v);
          ok = true;
        } else if (p.index == 1) {
          r_->target.assign(v);
          ok = true;
        } else if (p.index == 3) {
          r_->target_host.assign(v);
          ok = true;
        }
        break;
      case Role::kNames: {
        auto& names = r_->task_input_names;
        if (n_names_ < names.size()) {
          names[n_names_].assign(v);
        } else {
          names.emplace_back(v);
        }
        ++n_names_;
        ok = true;
        break;
      }
      case Role::kStep: ok = step_string(p, v); break;
      case Role::kSkip: ok = true; break;
      default: break;
    }
    if (!ok) return fail(ec);
    ++p.index;
    return true;
  }

  bool on_number_part(json::string_view s, json::error_code&) {
    num_part_.append(s.data(), s.size());
    return true;
  }
  bool on_int64(std::int64_t x, json::string_view s, json::error_code& ec) {
    return on_number(true, x, static_cast<double>(x), s, ec);
  }
  bool on_uint64(std::uint64_t u, json::string_view s, json::error_code& ec) {
    const bool fits = u <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    return on_number(fits, fits ? static_cast<std::int64_t>(u) : 0, static_cast<double>(u), s, ec);
  }
  bool on_double(double d, json::string_view s, json::error_code& ec) { return on_number(false, 0, d, s, ec); }
  bool on_bool(bool b, json::error_code& ec) {
    if (depth_ == 0) return fail(ec);  // a bare scalar is not a record
    Frame& p = frames_[depth_ - 1];
    bool ok = false;
    switch (p.role) {
      case Role::kStep: ok = step_bool(p.index, b); break;
      case Role::kSkip: ok = true; break;
      default: break;
    }
    if (!ok) return fail(ec);
    ++p.index;
    return true;
  }
  bool on_null(json::error_code& ec) {
    if (depth_ == 0) return fail(ec);  // a bare scalar is not a record
    Frame& p = frames_[depth_ - 1];
    if (p.role == Role::kSkip) {
      ++p.index;
      return true;
    }
    return fail(ec);
  }
  bool on_comment_part(json::string_view, json::error_code& ec) { return fail(ec); }
  bool on_comment(json::string_view, json::error_code& ec) { return fail(ec); }

 private:
  static bool fail(json::error_code& ec) {
    ec = json::error::syntax;  // any code: RecordParser produces the message
    return false;
  }

  bool push(Role role, json::error_code& ec) {
    if (depth_ == kMaxDepth) return fail(ec);
    frames_[depth_++] = Frame{role, 0};
    return true;
  }

  // The complete text of a key/string that may have arrived in parts.
  std::string_view take(json::string_view s) {
    if (part_.empty()) return {s.data(), s.size()};
    part_.append(s.data(), s.size());
    last_.swap(part_);
    part_.clear();
    return last_;
  }

  static bool fits32(std::int64_t x) {
    return x >= std::numeric_limits<std::int32_t>::min() && x <= std::numeric_limits<std::int32_t>::max();
  }

  // A number: `is_int` when it is an integer in int64 range (value `x`); `d` is
  // Boost's double value, used only when the text does not convert exactly.
  bool on_number(bool is_int, std::int64_t x, double d, json::string_view s, json::error_code& ec) {
    if (depth_ == 0) return fail(ec);
    std::string_view text(s.data(), s.size());
    if (!num_part_.empty()) {
      num_part_.append(s.data(), s.size());
      last_.swap(num_part_);
      num_part_.clear();
      text = last_;
    }
    Frame& p = frames_[depth_ - 1];
    bool ok = false;
    switch (p.role) {
      case Role::kStep: ok = is_int && step_int(p, x); break;
      case Role::kStepList:
        if (!is_int) break;
        if (list64_ != nullptr) {
          list64_->push_back(x);
          ok = true;
        } else if (list32_ != nullptr && fits32(x)) {
          list32_->push_back(static_cast<std::int32_t>(x));
          ok = true;
        }
        break;
      case Role::kHardware:
        if (is_int && p.index < 8) {
          hw_[p.index] = x;
          ok = true;
        }
        break;
      case Role::kTask:
        if (is_int && p.index == 4 && fits32(x)) {
          r_->layout_rewrite = static_cast<std::int32_t>(x);
          ok = true;
        }
        break;
      case Role::kCosts: {
        const double c = exact(text, d);
        if (std::isfinite(c) && c >= 0) {
          r_->costs.push_back(c);
          ok = true;
        }
        break;
      }
      case Role::kResult:
        if (p.index == 1) {
          if (is_int && fits32(x)) {
            r_->error_no = static_cast<std::int32_t>(x);
            ok = true;
          }
        } else if (p.index == 2 || p.index == 3) {
          const double v = exact(text, d);
          if (std::isfinite(v)) {
            (p.index == 2 ? r_->all_cost : r_->timestamp) = v;
            ok = true;
          }
        }
        break;
      case Role::kSkip: ok = true; break;
      default: break;
    }
    if (!ok) return fail(ec);
    ++p.index;
    return true;
  }

  // Correctly rounded value of a JSON number's text; `fallback` (Boost's value)
  // when from_chars cannot represent it (overflow to inf, underflow to 0).
  static double exact(std::string_view text, double fallback) {
    double v = 0;
    const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
    if (res.ec != std::errc() || res.ptr != text.data() + text.size()) return fallback;
    return v;
  }

  // Integer field p.index (>= 1) of the current known step, in TVM order.
  bool step_int(const Frame& p, std::int64_t x) {
    Step& s = *step_;
    const std::uint32_t f = p.index;
    if (f == 0) return false;
    if (f == 1) {
      if (!fits32(x)) return false;
      s.stage_id = static_cast<std::int32_t>(x);
      return true;
    }
    if (s.kind == StepKind::kSplit && f == 3) {
      s.extent = x;
      return true;
    }
    if (f == 5 && (s.kind == StepKind::kSplit || s.kind == StepKind::kFollowFusedSplit)) {
      if (x != 0 && x != 1) return false;
      s.inner_to_outer = x == 1;
      return true;
    }
    if (!fits32(x)) return false;
    const auto v = static_cast<std::int32_t>(x);
    switch (s.kind) {
      case StepKind::kAnnotation:
        if (f == 2) {
          s.iter_id = v;
          return true;
        }
        if (f == 3) {
          s.annotation = v;
          return true;
        }
        return false;
      case StepKind::kPragma:
      case StepKind::kSplit:
        if (f == 2) {
          s.iter_id = v;
          return true;
        }
        return false;
      case StepKind::kFollowSplit:
        if (f == 2) {
          s.iter_id = v;
          return true;
        }
        if (f == 3) {
          s.src_step_id = v;
          return true;
        }
        if (f == 4) {
          s.n_split = v;
          return true;
        }
        return false;
      case StepKind::kFollowFusedSplit:
        if (f == 2) {
          s.iter_id = v;
          return true;
        }
        if (f == 4) {
          s.level = v;
          return true;
        }
        return false;
      case StepKind::kStorageAlign:
        if (f == 2) {
          s.iter_id = v;
          return true;
        }
        if (f == 3) {
          s.factor = v;
          return true;
        }
        if (f == 4) {
          s.offset = v;
          return true;
        }
        return false;
      case StepKind::kComputeAt:
        if (f == 2) {
          s.target_stage_id = v;
          return true;
        }
        if (f == 3) {
          s.target_iter_id = v;
          return true;
        }
        return false;
      case StepKind::kRfactor:
        if (f == 2) {
          s.iter_id = v;
          return true;
        }
        if (f == 3) {
          s.factor_iter_id = v;
          return true;
        }
        return false;
      default: return false;
    }
  }

  bool step_bool(std::uint32_t f, bool b) {
    Step& s = *step_;
    if (f == 5 && (s.kind == StepKind::kSplit || s.kind == StepKind::kFollowFusedSplit)) {
      s.inner_to_outer = b;
      return true;
    }
    return false;
  }

  bool step_string(Frame& p, std::string_view v) {
    Step& s = *step_;
    if (p.index == 0) {
      const StepKind kind = step_kind_from_tag(v);
      reset_step(&s, kind);
      return kind != StepKind::kUnknown;  // the DOM parser names the tag
    }
    if (s.kind == StepKind::kPragma && p.index == 3) {
      s.pragma_type.assign(v);
      return true;
    }
    if ((s.kind == StepKind::kCacheRead || s.kind == StepKind::kCacheWrite) && p.index == 2) {
      s.scope_name.assign(v);
      return true;
    }
    return false;
  }

  bool begin_step_list(std::uint32_t f, json::error_code& ec) {
    Step& s = *step_;
    if (f == 0) return fail(ec);  // the tag must come first (s.kind is stale here)
    switch (s.kind) {
      case StepKind::kFuse:
      case StepKind::kReorder:
        if (f != 2) return fail(ec);
        list32_ = &s.ids;
        break;
      case StepKind::kSplit:
        if (f != 4) return fail(ec);
        list64_ = &s.lengths;
        break;
      case StepKind::kFollowFusedSplit:
      case StepKind::kCacheRead:
        if (f != 3) return fail(ec);
        list32_ = &s.ids;
        break;
      default: return fail(ec);
    }
    return push(Role::kStepList, ec);
  }

  Record* r_ = nullptr;
  Frame frames_[kMaxDepth];
  int depth_ = 0;
  char key_ = 0;
  unsigned seen_ = 0;  // bits: 1 "i", 2 "r", 4 "v"
  std::size_t n_steps_ = 0;
  std::size_t n_names_ = 0;
  Step* step_ = nullptr;
  std::vector<std::int32_t>* list32_ = nullptr;
  std::vector<std::int64_t>* list64_ = nullptr;
  std::int64_t hw_[8] = {};
  std::string part_;      // pieces of a string/key split by escapes
  std::string num_part_;  // pieces of a number
  std::string last_;
  std::string reason_;
};

}  // namespace

struct SaxRecordParser::Impl {
  json::basic_parser<Handler> parser{json::parse_options()};
};

SaxRecordParser::SaxRecordParser() : impl_(std::make_unique<Impl>()) {}
SaxRecordParser::~SaxRecordParser() = default;

SaxRecordParser::Verdict SaxRecordParser::parse(std::string_view line, Record* out, std::string* reason) {
  auto& p = impl_->parser;
  p.reset();
  p.handler().begin(out);
  json::error_code ec;
  const std::size_t n = p.write_some(false, line.data(), line.size(), ec);
  if (!ec && n == line.size()) return Verdict::kOk;
  if (!p.handler().reason().empty()) {
    *reason = p.handler().reason();
    return Verdict::kRejected;
  }
  return Verdict::kAskDom;
}

}  // namespace tcl::core::internal
