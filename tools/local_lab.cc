#include "tools/local_lab.h"

#include <array>
#include <cstdio>
#include <fstream>

#include "core/hardware_order.h"
#include "core/record.h"
#include "measure/candidates.h"
#include "measure/hardware.h"
#include "measure/measurer.h"

namespace tcl::tools {

LocalHardware local_hardware() {
  const measure::HardwareInfo hw = measure::local_hardware();
  LocalHardware out;
  out.target = hw.target;
  const std::array<std::int64_t, 8> params = core::tvm_order(hw.params);
  out.hardware_params.assign(params.begin(), params.end());
  out.description = std::to_string(hw.num_cores) + " cores, " + std::to_string(hw.vector_bytes * 8) + "-bit vectors, " +
                    std::to_string(hw.cache_line_bytes) + "-byte cache lines" + (hw.mcpu.empty() ? "" : ", " + hw.mcpu);
  return out;
}

Result<std::size_t> write_candidates(const std::vector<std::string>& models, int per_task, std::uint64_t seed,
                                     const std::string& path) {
  const measure::HardwareInfo hw = measure::local_hardware();
  std::ofstream out(path, std::ios::trunc);
  if (!out) return Status::invalid_argument("cannot write " + path);
  std::size_t n = 0;
  std::string line;
  for (const std::string& model : models) {
    auto records = measure::generate_candidates(model, per_task, seed, hw);
    if (!records) return records.status();
    for (const core::Record& r : *records) {
      line.clear();
      core::write_record(r, &line);
      out << line << '\n';
      ++n;
    }
  }
  out.flush();
  if (!out) return Status::invalid_argument("cannot write " + path);
  return n;
}

struct LocalLab::Impl {
  explicit Impl(measure::MeasureOptions options) : measurer(std::move(options)) {}
  measure::Measurer measurer;
};

LocalLab::LocalLab(LocalLabOptions options) {
  measure::MeasureOptions m;
  if (options.repeats > 0) m.runner.timing.repeat = options.repeats;
  impl_ = std::make_unique<Impl>(std::move(m));
}

LocalLab::~LocalLab() = default;

Status LocalLab::measure(const std::vector<std::string>& to_measure, std::string* out, std::size_t* unanswered) {
  core::RecordParser parser;
  std::vector<core::Record> records;
  records.reserve(to_measure.size());
  for (const std::string& line : to_measure) {
    core::Record r;
    if (!parser.parse(line, &r).is_ok() || !measure::decode_program(r)) {
      ++*unanswered;  // not a program measure/ generated: no lab here can build it
      continue;
    }
    records.push_back(std::move(r));
  }
  if (records.empty()) return Status::ok();
  const std::vector<core::Record> measured = impl_->measurer.measure(records);
  for (const core::Record& r : measured) {
    core::write_record(r, out);
    out->push_back('\n');
  }
  return Status::ok();
}

}  // namespace tcl::tools
