#include "tuner/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/files.h"
#include "core/json_write.h"
#include "core/line_reader.h"

namespace tcl::tuner {
namespace {

std::string number(double x) {
  if (std::isnan(x)) return "";
  if (std::isinf(x)) return "inf";
  std::string s;
  core::append_decimal(&s, x);
  return s;
}

double parse_number(const std::string& s) {
  if (s.empty()) return NAN;
  if (s == "inf") return INFINITY;
  return std::stod(s);
}

std::string row_line(const RoundRow& r) {
  std::ostringstream o;
  o << r.round << ',' << r.task << ',' << r.task_name << ',' << r.measured << ',' << r.valid << ','
    << number(r.network_seconds) << ',' << number(r.task_best_seconds) << ',' << number(r.wall_seconds) << ','
    << number(r.search_seconds) << ',' << number(r.learn_seconds) << ',' << number(r.measure_seconds) << ','
    << number(r.upload_seconds) << '\n';
  return o.str();
}

Result<RoundRow> parse_row(const std::string& line) {
  std::vector<std::string> f;
  std::stringstream in(line);
  for (std::string cell; std::getline(in, cell, ',');) f.push_back(cell);
  if (!line.empty() && line.back() == ',') f.emplace_back();
  if (f.size() != 12) return Status::data_loss("rounds.csv: a row with " + std::to_string(f.size()) + " cells");
  try {
    RoundRow r;
    r.round = std::stoi(f[0]);
    r.task = std::stoul(f[1]);
    r.task_name = f[2];
    r.measured = std::stoi(f[3]);
    r.valid = std::stoi(f[4]);
    r.network_seconds = parse_number(f[5]);
    r.task_best_seconds = parse_number(f[6]);
    r.wall_seconds = parse_number(f[7]);
    r.search_seconds = parse_number(f[8]);
    r.learn_seconds = parse_number(f[9]);
    r.measure_seconds = parse_number(f[10]);
    r.upload_seconds = parse_number(f[11]);
    return r;
  } catch (const std::exception&) {
    return Status::data_loss("rounds.csv: a row that does not parse: " + line);
  }
}

// Appends `bytes` to `path` and fsyncs it.
Status append_synced(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::unavailable("cannot open " + path);
  bool ok = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  ok = ::fsync(fd) == 0 && ok;
  ::close(fd);
  return ok ? Status::ok() : Status::unavailable("cannot write " + path);
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

}  // namespace

RunDir::RunDir(std::string dir, int lock_fd) : dir_(std::move(dir)), lock_fd_(lock_fd) {}

RunDir::~RunDir() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the flock
}

Result<std::unique_ptr<RunDir>> RunDir::open(const std::string& dir, std::string_view settings) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::unavailable("cannot create " + dir + ": " + ec.message());
  const int fd = ::open((dir + "/.lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::unavailable("cannot open " + dir + "/.lock");
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    ::close(fd);
    return Status::unavailable(dir + " is in use by another tuning run");
  }
  std::unique_ptr<RunDir> run(new RunDir(dir, fd));
  const std::string settings_path = dir + "/run.json";
  std::string stored;
  if (core::read_file(settings_path, &stored)) {
    if (stored != settings)
      return Status::failed_precondition(dir + " holds another run (its run.json: " + stored + "); use another folder");
  } else if (!core::write_file_atomic(settings_path, settings)) {
    return Status::unavailable("cannot write " + settings_path);
  }
  std::string uploaded;
  if (core::read_file(dir + "/uploaded", &uploaded) && !uploaded.empty()) run->uploaded_ = std::stoi(uploaded);
  return run;
}

Result<std::vector<RoundRow>> RunDir::read(std::vector<core::Record>* records) {
  std::string csv, log;
  core::read_file(dir_ + "/rounds.csv", &csv);
  core::read_file(dir_ + "/measurements.jsonl", &log);
  std::vector<std::string> rows = lines_of(csv);
  if (!rows.empty() && rows.front() == kRoundsHeader) rows.erase(rows.begin());
  rows_.clear();
  for (const std::string& line : rows) {
    auto r = parse_row(line);
    if (!r) return r.status();
    if (r->round != static_cast<int>(rows_.size()))
      return Status::data_loss("rounds.csv: round " + std::to_string(r->round) + " out of order");
    rows_.push_back(*r);
  }
  const std::size_t wanted = rows_.empty() ? 0 : static_cast<std::size_t>(rows_.back().measured);
  std::vector<std::string> lines = lines_of(log);
  if (lines.size() < wanted) {
    return Status::data_loss("measurements.jsonl holds " + std::to_string(lines.size()) +
                             " records; rounds.csv counts " + std::to_string(wanted));
  }
  records->clear();
  std::string kept;
  for (std::size_t i = 0; i < wanted; ++i) {
    auto r = core::parse_record(lines[i]);
    if (!r) return Status::data_loss("measurements.jsonl line " + std::to_string(i + 1) + ": " + r.status().message());
    records->push_back(std::move(*r));
    kept += lines[i] + "\n";
  }
  // The round under way when the run stopped is not a round: its records go.
  if (lines.size() > wanted && !core::write_file_atomic(dir_ + "/measurements.jsonl", kept))
    return Status::unavailable("cannot rewrite measurements.jsonl");
  if (rows_.empty() && !core::write_file_atomic(dir_ + "/rounds.csv", std::string(kRoundsHeader) + "\n"))
    return Status::unavailable("cannot write rounds.csv");
  return rows_;
}

Status RunDir::append(const RoundRow& row, std::span<const core::Record> records) {
  std::string text;
  for (const core::Record& r : records) {
    core::write_record(r, &text);
    text.push_back('\n');
  }
  if (Status s = append_synced(dir_ + "/measurements.jsonl", text); !s) return s;
  if (Status s = append_synced(dir_ + "/rounds.csv", row_line(row)); !s) return s;
  rows_.push_back(row);
  return Status::ok();
}

Status RunDir::write_best(std::span<const core::Record> best) {
  std::string text;
  for (const core::Record& r : best) {
    core::write_record(r, &text);
    text.push_back('\n');
  }
  if (!core::write_file_atomic(dir_ + "/best.jsonl", text)) return Status::unavailable("cannot write best.jsonl");
  return Status::ok();
}

Status RunDir::write_curve_svg(std::string_view title) {
  CurveSeries by_count, by_time;
  for (const RoundRow& r : rows_) {
    if (std::isnan(r.network_seconds)) continue;
    by_count.x.push_back(r.measured);
    by_time.x.push_back(r.wall_seconds);
    by_count.y.push_back(r.network_seconds * 1e3);
    by_time.y.push_back(r.network_seconds * 1e3);
  }
  const CurveSeries count[] = {by_count}, time[] = {by_time};
  if (!core::write_file_atomic(dir_ + "/curve.svg", curve_svg(count, title, "measurements")) ||
      !core::write_file_atomic(dir_ + "/curve-time.svg", curve_svg(time, title, "wall seconds")))
    return Status::unavailable("cannot write curve.svg or curve-time.svg");
  return Status::ok();
}

Status RunDir::set_uploaded_rounds(int rounds) {
  uploaded_ = rounds;
  if (!core::write_file_atomic(dir_ + "/uploaded", std::to_string(rounds) + "\n"))
    return Status::unavailable("cannot write " + dir_ + "/uploaded");
  return Status::ok();
}

std::string curve_svg(std::span<const CurveSeries> series, std::string_view title, std::string_view x_label) {
  constexpr double kW = 640, kH = 400, kLeft = 70, kRight = 150, kTop = 40, kBottom = 50;
  constexpr const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  for (const CurveSeries& s : series) {
    for (std::size_t i = 0; i < s.x.size(); ++i) {
      x0 = std::min(x0, s.x[i]), x1 = std::max(x1, s.x[i]);
      y0 = std::min(y0, s.y[i]), y1 = std::max(y1, s.y[i]);
    }
  }
  if (!std::isfinite(x0)) x0 = 0, x1 = 1, y0 = 0, y1 = 1;
  if (x1 <= x0) x1 = x0 + 1;
  if (y1 <= y0) y1 = y0 + 1;
  y0 = std::max(0.0, y0 - 0.05 * (y1 - y0));
  auto px = [&](double x) { return kLeft + (x - x0) / (x1 - x0) * (kW - kLeft - kRight); };
  auto py = [&](double y) { return kH - kBottom - (y - y0) / (y1 - y0) * (kH - kTop - kBottom); };
  auto escape = [](std::string_view text) {
    std::string out;
    for (char c : text) {
      switch (c) {
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '&': out += "&amp;"; break;
        default: out += c;
      }
    }
    return out;
  };
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kW << "\" height=\"" << kH
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
    << "<text x=\"" << kLeft << "\" y=\"24\" font-size=\"14\">" << escape(title) << "</text>\n";
  o << "<line x1=\"" << kLeft << "\" y1=\"" << py(y0) << "\" x2=\"" << kW - kRight << "\" y2=\"" << py(y0)
    << "\" stroke=\"black\"/>\n<line x1=\"" << kLeft << "\" y1=\"" << py(y0) << "\" x2=\"" << kLeft << "\" y2=\""
    << py(y1) << "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double x = x0 + (x1 - x0) * i / 4, y = y0 + (y1 - y0) * i / 4;
    o << "<text x=\"" << px(x) << "\" y=\"" << kH - kBottom + 16 << "\" text-anchor=\"middle\">"
      << number(std::round(x)) << "</text>\n<text x=\"" << kLeft - 6 << "\" y=\"" << py(y) + 4
      << "\" text-anchor=\"end\">" << number(std::round(y * 1000) / 1000) << "</text>\n";
  }
  o << "<text x=\"" << (kLeft + kW - kRight) / 2 << "\" y=\"" << kH - 12 << "\" text-anchor=\"middle\">"
    << escape(x_label) << "</text>\n<text x=\"16\" y=\"" << (kTop + kH - kBottom) / 2 << "\" transform=\"rotate(-90 16 "
    << (kTop + kH - kBottom) / 2 << ")\" text-anchor=\"middle\">network latency (ms)</text>\n";
  for (std::size_t k = 0; k < series.size(); ++k) {
    const char* color = kColors[k % std::size(kColors)];
    o << "<polyline fill=\"none\" stroke=\"" << color << "\" stroke-width=\"1.5\" points=\"";
    for (std::size_t i = 0; i < series[k].x.size(); ++i) o << px(series[k].x[i]) << ',' << py(series[k].y[i]) << ' ';
    o << "\"/>\n<text x=\"" << kW - kRight + 10 << "\" y=\"" << kTop + 16 * (k + 1) << "\" fill=\"" << color << "\">"
      << escape(series[k].name) << "</text>\n";
  }
  o << "</svg>\n";
  return o.str();
}

}  // namespace tcl::tuner
