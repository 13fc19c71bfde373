#include "api/json_body.h"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/parser.hpp>

#include <algorithm>
#include <vector>

namespace tcl::api {
namespace json = boost::json;

namespace {

// The SAX pass of parse_json_object: counts each open array's items and looks
// for NUL in strings and keys, keeping only one small frame per open
// container (depth is bounded by the parser's max_depth), so a refused body
// costs no memory beyond itself.
class BodyScan {
 public:
  // basic_parser's own limits stay at their maximum: ours are per route.
  static constexpr std::size_t max_object_size = std::size_t(-1);
  static constexpr std::size_t max_array_size = std::size_t(-1);
  static constexpr std::size_t max_key_size = std::size_t(-1);
  static constexpr std::size_t max_string_size = std::size_t(-1);

  explicit BodyScan(const JsonLimits& limits) : limits_(limits) {}

  // Set when the scan stopped on a limit or a NUL (not a syntax error).
  const Status& refusal() const { return refusal_; }

  bool on_document_begin(boost::system::error_code&) { return true; }
  bool on_document_end(boost::system::error_code&) { return true; }
  bool on_array_begin(boost::system::error_code& ec) {
    if (!value(ec)) return false;
    frames_.push_back(Frame{true, 0, {}});
    return true;
  }
  bool on_array_end(std::size_t, boost::system::error_code&) { return end_container(); }
  bool on_object_begin(boost::system::error_code& ec) {
    if (!value(ec)) return false;
    frames_.push_back(Frame{false, 0, {}});
    return true;
  }
  bool on_object_end(std::size_t, boost::system::error_code&) { return end_container(); }
  bool on_string_part(json::string_view s, std::size_t, boost::system::error_code&) {
    nul_in_string_ = nul_in_string_ || s.find('\0') != json::string_view::npos;
    return true;
  }
  bool on_string(json::string_view s, std::size_t n, boost::system::error_code& ec) {
    on_string_part(s, n, ec);
    if (!value(ec)) return false;
    if (nul_in_string_) return refuse(ec, Status::invalid_field(path(true), "must not contain NUL (\\u0000)"));
    return true;
  }
  bool on_key_part(json::string_view s, std::size_t, boost::system::error_code&) {
    Frame& f = frames_.back();
    if (!key_started_) f.key.clear();
    key_started_ = true;
    nul_in_string_ = nul_in_string_ || s.find('\0') != json::string_view::npos;
    // Enough of the key to name it in an error; the rest is not kept.
    f.key.append(s.data(), std::min(s.size(), kKeyKept - std::min(kKeyKept, f.key.size())));
    std::replace(f.key.begin(), f.key.end(), '\0', '?');  // never echo NUL back
    return true;
  }
  bool on_key(json::string_view s, std::size_t n, boost::system::error_code& ec) {
    on_key_part(s, n, ec);
    key_started_ = false;
    if (nul_in_string_) {
      return refuse(ec, Status::invalid_field(path(true), "must not contain NUL (\\u0000) in its name"));
    }
    return true;
  }
  bool on_number_part(json::string_view, boost::system::error_code&) { return true; }
  bool on_int64(std::int64_t, json::string_view, boost::system::error_code& ec) { return value(ec); }
  bool on_uint64(std::uint64_t, json::string_view, boost::system::error_code& ec) { return value(ec); }
  bool on_double(double, json::string_view, boost::system::error_code& ec) { return value(ec); }
  bool on_bool(bool, boost::system::error_code& ec) { return value(ec); }
  bool on_null(boost::system::error_code& ec) { return value(ec); }
  bool on_comment_part(json::string_view, boost::system::error_code&) { return true; }
  bool on_comment(json::string_view, boost::system::error_code&) { return true; }

 private:
  static constexpr std::size_t kKeyKept = 64;
  struct Frame {
    bool array;
    std::size_t items;  // arrays: values begun so far
    std::string key;    // objects: the current member's name (at most kKeyKept bytes)
  };

  // A value begins in the innermost container.
  bool value(boost::system::error_code& ec) {
    if (frames_.empty() || !frames_.back().array) return true;
    if (++frames_.back().items > limits_.max_array_items) {
      const std::string where = path(false);
      return refuse(ec, Status::resource_exhausted("field '" + where + "' has more than " +
                                                   std::to_string(limits_.max_array_items) + " items")
                            .with_field(where));
    }
    return true;
  }
  bool end_container() {
    frames_.pop_back();
    return true;
  }
  bool refuse(boost::system::error_code& ec, Status s) {
    refusal_ = std::move(s);
    ec = json::error::exception;  // any error stops the parser; refusal_ says which
    return false;
  }
  // "programs[3].workload_key": where the parser is now; the innermost
  // array's index only with `item` (its current item rather than itself).
  std::string path(bool item) const {
    std::string out;
    for (std::size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      if (f.array) {
        if (f.items > 0 && (item || i + 1 < frames_.size())) out += "[" + std::to_string(f.items - 1) + "]";
      } else {
        out += (out.empty() ? "" : ".") + f.key;
      }
    }
    return out.empty() ? "body" : out;
  }

  const JsonLimits& limits_;
  std::vector<Frame> frames_;
  bool key_started_ = false;
  bool nul_in_string_ = false;
  Status refusal_;
};

Status syntax_error(std::string_view body, std::size_t used, const boost::system::error_code& ec) {
  if (body.empty()) return Status::invalid_argument("body is empty; expected a JSON object");
  const std::string_view consumed = body.substr(0, std::min(used, body.size()));
  std::size_t line = 1, col = 1;
  for (char c : consumed) {
    if (c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return Status::invalid_argument("body is not valid JSON at line " + std::to_string(line) + ", column " +
                                  std::to_string(col) + ": " + ec.message());
}

}  // namespace

Result<json::object> parse_json_object(std::string_view body, const JsonLimits& limits) {
  boost::system::error_code ec;
  {
    // write_some with more=false wants one complete value (trailing
    // whitespace allowed) and reports how far it got: the error position.
    json::basic_parser<BodyScan> scan(json::parse_options{}, limits);
    const std::size_t used = scan.write_some(false, body.data(), body.size(), ec);
    if (!scan.handler().refusal()) return scan.handler().refusal();
    if (ec) return syntax_error(body, used, ec);
  }
  json::parser p;
  const std::size_t used = p.write(body.data(), body.size(), ec);
  if (ec) return syntax_error(body, used, ec);
  json::value v = p.release();
  if (!v.is_object()) return Status::invalid_argument("body must be a JSON object");
  return std::move(v.as_object());
}

namespace {
Status field_error(std::string_view field, std::string_view what) { return Status::invalid_field(field, what); }

// Stored text cannot hold NUL (PostgreSQL refuses it; C strings cut at it).
Status check_no_nul(std::string_view field, const json::string& s) {
  if (std::string_view(s).find('\0') != std::string_view::npos) {
    return field_error(field, "must not contain NUL (\\u0000)");
  }
  return Status::ok();
}
}  // namespace

Result<std::string> required_string(const json::object& o, std::string_view field) {
  const json::value* v = o.if_contains(field);
  if (v == nullptr) return field_error(field, "is required");
  if (!v->is_string()) return field_error(field, "must be a string");
  if (Status s = check_no_nul(field, v->get_string()); !s) return s;
  return std::string(v->get_string());
}

Result<std::optional<std::string>> optional_string(const json::object& o, std::string_view field) {
  const json::value* v = o.if_contains(field);
  if (v == nullptr || v->is_null()) return std::optional<std::string>{};
  if (!v->is_string()) return field_error(field, "must be a string");
  if (Status s = check_no_nul(field, v->get_string()); !s) return s;
  return std::optional<std::string>(std::string(v->get_string()));
}

Result<std::optional<std::int64_t>> optional_int(const json::object& o, std::string_view field) {
  const json::value* v = o.if_contains(field);
  if (v == nullptr || v->is_null()) return std::optional<std::int64_t>{};
  if (v->is_int64()) return std::optional<std::int64_t>(v->as_int64());
  if (v->is_uint64() && v->as_uint64() <= static_cast<std::uint64_t>(INT64_MAX)) {
    return std::optional<std::int64_t>(static_cast<std::int64_t>(v->as_uint64()));
  }
  return field_error(field, "must be an integer");
}

Result<std::optional<double>> optional_number(const json::object& o, std::string_view field) {
  const json::value* v = o.if_contains(field);
  if (v == nullptr || v->is_null()) return std::optional<double>{};
  if (!v->is_number()) return field_error(field, "must be a number");
  return std::optional<double>(v->to_number<double>());
}

}  // namespace tcl::api
