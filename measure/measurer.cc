#include "measure/measurer.h"

#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>

#include "measure/cpu_backend.h"

namespace tcl::measure {
namespace {

constexpr double kFailedCost = 1e10;  // TVM's MAX_FLOAT for failed measurements

void set_failure(core::Record& r, std::int32_t error_no) {
  r.costs = {kFailedCost};
  r.error_no = error_no;
}

}  // namespace

Result<Program> decode_program(const core::Record& record) {
  if (record.target.starts_with("cuda"))
    return Status::invalid_argument("a cuda record: this build measures on the CPU only (no CUDA backend yet)");
  auto w = decode_workload_key(record.workload_key);
  if (!w) return w.status();
  auto s = from_steps(*w, record.steps);
  if (!s) return s.status();
  return Program{std::move(*w), std::move(*s)};
}

Measurer::Measurer(MeasureOptions options, std::unique_ptr<Backend> backend)
    : options_(std::move(options)), backend_(backend ? std::move(backend) : std::make_unique<CpuBackend>()) {}

Measurer::~Measurer() = default;

std::vector<core::Record> Measurer::measure(std::span<const core::Record> records, const ProgressCallback& progress) {
  using Clock = std::chrono::steady_clock;
  std::vector<core::Record> out(records.begin(), records.end());
  errors_.assign(records.size(), "");
  MeasureProgress state{0, records.size(), 0};
  auto report = [&](std::size_t i) {
    ++state.done;
    if (out[i].error_no != 0) ++state.failed;
    if (progress) progress(state);
  };

  namespace fs = std::filesystem;
  std::string dir = options_.work_dir;
  const bool own_dir = dir.empty();
  if (own_dir) {
    std::string tmpl = (fs::temp_directory_path() / "tcl-measure-XXXXXX").string();
    if (mkdtemp(tmpl.data()) == nullptr) {
      for (std::size_t i = 0; i < out.size(); ++i) {
        set_failure(out[i], static_cast<std::int32_t>(core::MeasureError::kUnknownError));
        errors_[i] = "cannot create a work directory";
        report(i);
      }
      return out;
    }
    dir = tmpl;
  } else {
    std::error_code ec;
    fs::create_directories(dir, ec);
  }

  // Decode everything first; failures are instantiation errors.
  std::vector<std::size_t> todo;
  std::vector<Program> programs(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    out[i].timestamp = static_cast<double>(std::time(nullptr));
    out[i].error_no = 0;
    auto p = decode_program(records[i]);
    if (!p) {
      set_failure(out[i], static_cast<std::int32_t>(core::MeasureError::kInstantiationError));
      out[i].all_cost = 0;
      errors_[i] = p.status().message();
      report(i);
      continue;
    }
    programs[i] = std::move(*p);
    todo.push_back(i);
  }

  const std::size_t unit_size = static_cast<std::size_t>(std::max(1, options_.programs_per_unit));
  int unit_counter = 0;
  // Builds and runs the records `ids`; a unit that fails to compile is split
  // in halves, down to single programs, so that one bad program does not
  // sink the others.
  std::function<void(std::span<const std::size_t>)> measure_unit = [&](std::span<const std::size_t> ids) {
    std::vector<std::string> sources, symbols;
    std::vector<Program> unit_programs;
    for (std::size_t k = 0; k < ids.size(); ++k) {
      symbols.push_back("tcl_program_" + std::to_string(k));
      sources.push_back(backend_->codegen(programs[ids[k]], symbols.back()));
      unit_programs.push_back(programs[ids[k]]);
    }
    const std::string stem = dir + "/unit_" + std::to_string(unit_counter++);
    const BuildResult built = backend_->build(sources, stem);
    const double build_share = built.seconds / static_cast<double>(ids.size());
    if (built.error_no != 0) {
      if (ids.size() > 1 && built.error_no == static_cast<std::int32_t>(core::MeasureError::kCompileHostError)) {
        const std::size_t half = ids.size() / 2;  // bisect down to the guilty programs
        measure_unit(ids.subspan(0, half));
        measure_unit(ids.subspan(half));
        return;
      }
      for (std::size_t id : ids) {
        set_failure(out[id], built.error_no);
        out[id].all_cost = build_share;
        errors_[id] = built.message;
        report(id);
      }
      return;
    }
    // Results arrive in order; the time between two is that program's run.
    auto last = Clock::now();
    run_isolated(*backend_, built.module_path, unit_programs, symbols, options_.runner,
                 [&](std::size_t k, const RunResult& res) {
                   core::Record& r = out[ids[k]];
                   if (res.error_no != 0 || res.costs.empty()) {
                     set_failure(r, res.error_no != 0 ? res.error_no
                                                      : static_cast<std::int32_t>(core::MeasureError::kUnknownError));
                     errors_[ids[k]] = res.message;
                   } else {
                     r.costs = res.costs;
                   }
                   const auto now = Clock::now();
                   r.all_cost = build_share + std::chrono::duration<double>(now - last).count();
                   last = now;
                   report(ids[k]);
                 });
    std::error_code ec;
    fs::remove(stem + ".so", ec);
  };
  for (std::size_t begin = 0; begin < todo.size(); begin += unit_size) {
    const std::size_t end = std::min(todo.size(), begin + unit_size);
    measure_unit(std::span<const std::size_t>(todo).subspan(begin, end - begin));
  }
  if (own_dir) {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return out;
}

}  // namespace tcl::measure
