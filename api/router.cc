#include "api/router.h"

#include <algorithm>
#include <stdexcept>

namespace tcl::api {
namespace {

bool is_param(const std::string& segment) {
  return segment.size() >= 2 && segment.front() == '{' && segment.back() == '}';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Score of a template against path segments: -1 = no match, else the number
// of literal segments (more literals = more specific).
int match_score(const Route& r, const std::vector<std::string>& segs) {
  if (r.segments.size() != segs.size()) return -1;
  int literals = 0;
  for (std::size_t i = 0; i < segs.size(); ++i) {
    if (is_param(r.segments[i])) {
      if (segs[i].empty()) return -1;
    } else if (r.segments[i] == segs[i]) {
      ++literals;
    } else {
      return -1;
    }
  }
  return literals;
}

}  // namespace

std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%') {
      if (i + 2 >= s.size()) return std::nullopt;
      const int hi = hex_value(s[i + 1]), lo = hex_value(s[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      out.push_back(static_cast<char>(hi * 16 + lo));
      i += 2;
    } else if (s[i] == '+' && plus_is_space) {
      out.push_back(' ');
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::optional<std::vector<std::string>> split_path(std::string_view path) {
  std::vector<std::string> segs;
  if (path.empty() || path.front() != '/') return std::nullopt;
  std::size_t start = 1;
  while (start <= path.size()) {
    std::size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    auto decoded = percent_decode(path.substr(start, end - start));
    if (!decoded) return std::nullopt;
    segs.push_back(std::move(*decoded));
    start = end + 1;
  }
  // "/v1/platforms/" has a trailing empty segment; treat it like no slash.
  if (segs.size() > 1 && segs.back().empty()) segs.pop_back();
  if (segs.size() == 1 && segs[0].empty()) segs.clear();
  return segs;
}

std::map<std::string, std::string> parse_query(std::string_view query) {
  std::map<std::string, std::string> out;
  std::size_t start = 0;
  while (start < query.size()) {
    std::size_t end = query.find('&', start);
    if (end == std::string_view::npos) end = query.size();
    std::string_view pair = query.substr(start, end - start);
    if (!pair.empty()) {
      const std::size_t eq = pair.find('=');
      auto key = percent_decode(pair.substr(0, eq), true);
      auto value = percent_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), true);
      if (key && value) out[*key] = *value;
    }
    start = end + 1;
  }
  return out;
}

void Router::add(http::verb method, std::string path_template, Handler handler, RouteOptions options) {
  auto segs = split_path(path_template);
  if (!segs) throw std::invalid_argument("bad route template: " + path_template);
  for (const Route& r : routes_) {
    if (r.method == method && r.segments == *segs) {
      throw std::invalid_argument("duplicate route: " + path_template);
    }
  }
  if (options.stream_body) options.lane = Lane::kStream;
  routes_.push_back(Route{method, std::move(path_template), std::move(*segs), std::move(handler), options});
}

RouteMatch Router::match(http::verb method, std::string_view path) const {
  RouteMatch m;
  auto segs = split_path(path);
  if (!segs) return m;
  int best = -1;
  for (const Route& r : routes_) {
    const int score = match_score(r, *segs);
    if (score < 0) continue;
    if (r.method != method) {
      if (std::find(m.allowed.begin(), m.allowed.end(), r.method) == m.allowed.end()) m.allowed.push_back(r.method);
      continue;
    }
    if (score > best) {
      best = score;
      m.route = &r;
    }
  }
  if (m.route == nullptr && method == http::verb::head &&
      std::find(m.allowed.begin(), m.allowed.end(), http::verb::get) != m.allowed.end()) {
    return match(http::verb::get, path);  // HEAD is GET without the body
  }
  if (std::find(m.allowed.begin(), m.allowed.end(), http::verb::get) != m.allowed.end() &&
      std::find(m.allowed.begin(), m.allowed.end(), http::verb::head) == m.allowed.end()) {
    m.allowed.push_back(http::verb::head);
  }
  if (m.route != nullptr) {
    m.allowed.clear();
    for (std::size_t i = 0; i < segs->size(); ++i) {
      const std::string& t = m.route->segments[i];
      if (is_param(t)) m.params[t.substr(1, t.size() - 2)] = (*segs)[i];
    }
  }
  return m;
}

}  // namespace tcl::api
