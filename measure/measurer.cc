#include "measure/measurer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <thread>

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
  auto w = decode_workload_key(record.workload_key);
  if (!w) return w.status();
  if (record.target.starts_with("cuda")) {
    auto s = gpu_from_steps(*w, record.steps, gpu_limits(record.hardware_params.value_or(core::HardwareParams{})));
    if (!s) return s.status();
    return Program{std::move(*w), std::move(*s)};
  }
  auto s = from_steps(*w, record.steps);
  if (!s) return s.status();
  return Program{std::move(*w), std::move(*s)};
}

Measurer::Measurer(MeasureOptions options, std::unique_ptr<Backend> backend)
    : options_(std::move(options)), backend_(backend ? std::move(backend) : std::make_unique<CpuBackend>()) {}

Measurer::~Measurer() = default;

namespace {

// What building one unit came to: modules holding some of its records, and
// the records that did not build (with the reason).
struct BuiltModule {
  std::vector<std::size_t> ids;
  std::string module_path;
  double build_share = 0;  // build seconds per record
};
struct BuildFailure {
  std::size_t id = 0;
  BuildResult result;
  double build_share = 0;
};
struct UnitBuild {
  std::vector<BuiltModule> modules;
  std::vector<BuildFailure> failures;
};

bool is_compile_error(std::int32_t error_no) {
  return error_no == static_cast<std::int32_t>(core::MeasureError::kCompileHostError) ||
         error_no == static_cast<std::int32_t>(core::MeasureError::kCompileDeviceError);
}

std::string symbol_of(std::size_t k) { return "tcl_program_" + std::to_string(k); }

// Builds the records `ids` into one module at `stem`; a unit that does not
// compile is split in halves, down to single programs, so that one bad
// program does not sink the others.
void build_unit(const Backend& backend, const std::vector<Program>& programs, std::span<const std::size_t> ids,
                const std::string& stem, UnitBuild* out) {
  std::vector<std::string> sources;
  for (std::size_t k = 0; k < ids.size(); ++k) sources.push_back(backend.codegen(programs[ids[k]], symbol_of(k)));
  BuildResult built = backend.build(sources, stem);
  const double share = built.seconds / static_cast<double>(ids.size());
  if (built.error_no == 0) {
    out->modules.push_back({{ids.begin(), ids.end()}, built.module_path, share});
  } else if (ids.size() > 1 && is_compile_error(built.error_no)) {
    const std::size_t half = ids.size() / 2;
    build_unit(backend, programs, ids.subspan(0, half), stem + "a", out);
    build_unit(backend, programs, ids.subspan(half), stem + "b", out);
  } else {
    for (std::size_t id : ids) out->failures.push_back({id, built, share});
  }
}

// Builds every unit, `jobs` at a time (compilation dominates and is
// independent per unit; nothing runs while it goes on, so timings are not
// disturbed).
std::vector<UnitBuild> build_units(const Backend& backend, const std::vector<Program>& programs,
                                   const std::vector<std::span<const std::size_t>>& units, const std::string& dir,
                                   int jobs) {
  std::vector<UnitBuild> builds(units.size());
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t u; (u = next++) < units.size();)
      build_unit(backend, programs, units[u], dir + "/unit_" + std::to_string(u), &builds[u]);
  };
  {
    std::vector<std::jthread> pool;
    for (int j = 1; j < std::min<int>(jobs, static_cast<int>(units.size())); ++j) pool.emplace_back(worker);
    worker();
  }
  return builds;
}

// The directory of a measure() call: the options' (kept) or a fresh one
// under $TMPDIR (removed at the end).
class WorkDir {
 public:
  explicit WorkDir(const std::string& given) : path_(given), owned_(given.empty()) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!owned_) {
      fs::create_directories(path_, ec);
      return;
    }
    std::string tmpl = (fs::temp_directory_path(ec) / "tcl-measure-XXXXXX").string();
    path_ = mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
  }
  ~WorkDir() {
    std::error_code ec;
    if (owned_ && !path_.empty()) std::filesystem::remove_all(path_, ec);
  }
  WorkDir(const WorkDir&) = delete;
  WorkDir& operator=(const WorkDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool owned_;
};

}  // namespace

void Measurer::fail(std::size_t i, std::int32_t error_no, std::string why, double seconds) {
  set_failure(out_[i], error_no);
  out_[i].all_cost = seconds;
  errors_[i] = std::move(why);
}

void Measurer::report(std::size_t i, const ProgressCallback& progress) {
  ++state_.done;
  if (out_[i].error_no != 0) ++state_.failed;
  if (progress) progress(state_);
}

std::vector<std::size_t> Measurer::decode_all(std::span<const core::Record> records, std::vector<Program>* programs,
                                              const ProgressCallback& progress) {
  std::vector<std::size_t> todo;
  programs->assign(records.size(), Program{});
  for (std::size_t i = 0; i < records.size(); ++i) {
    out_[i].timestamp = static_cast<double>(std::time(nullptr));
    out_[i].error_no = 0;
    auto p = decode_program(records[i]);
    if (p && !backend_->accepts(*p)) {
      p = Status::invalid_argument("a " + std::string(p->is_gpu() ? "cuda" : "llvm") + " record: the " +
                                   std::string(backend_->name()) + " backend does not measure it");
    }
    if (!p) {
      fail(i, static_cast<std::int32_t>(core::MeasureError::kInstantiationError), p.status().message(), 0);
      report(i, progress);
      continue;
    }
    (*programs)[i] = std::move(*p);
    todo.push_back(i);
  }
  return todo;
}

void Measurer::run_module(const std::vector<Program>& programs, const std::vector<std::size_t>& ids,
                          const std::string& module_path, double build_share, const ProgressCallback& progress) {
  using Clock = std::chrono::steady_clock;
  std::vector<std::string> symbols;
  std::vector<Program> module_programs;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    symbols.push_back(symbol_of(k));
    module_programs.push_back(programs[ids[k]]);
  }
  // Results arrive in order; the time between two is that program's run.
  auto last = Clock::now();
  run_isolated(
      *backend_, module_path, module_programs, symbols, options_.runner, [&](std::size_t k, const RunResult& res) {
        const auto now = Clock::now();
        const double seconds = build_share + std::chrono::duration<double>(now - last).count();
        last = now;
        if (res.error_no != 0 || res.costs.empty()) {
          fail(ids[k], res.error_no != 0 ? res.error_no : static_cast<std::int32_t>(core::MeasureError::kUnknownError),
               res.message, seconds);
        } else {
          out_[ids[k]].costs = res.costs;
          out_[ids[k]].all_cost = seconds;
        }
        report(ids[k], progress);
      });
  std::error_code ec;
  std::filesystem::remove(module_path, ec);
}

std::vector<core::Record> Measurer::measure(std::span<const core::Record> records, const ProgressCallback& progress) {
  out_.assign(records.begin(), records.end());
  errors_.assign(records.size(), "");
  state_ = MeasureProgress{0, records.size(), 0};
  const WorkDir dir(options_.work_dir);
  if (dir.path().empty()) {
    for (std::size_t i = 0; i < out_.size(); ++i) {
      fail(i, static_cast<std::int32_t>(core::MeasureError::kUnknownError), "cannot create a work directory", 0);
      report(i, progress);
    }
    return std::move(out_);
  }
  std::vector<Program> programs;
  const std::vector<std::size_t> todo = decode_all(records, &programs, progress);

  const std::size_t unit_size = static_cast<std::size_t>(std::max(1, options_.programs_per_unit));
  std::vector<std::span<const std::size_t>> units;
  for (std::size_t begin = 0; begin < todo.size(); begin += unit_size)
    units.push_back(std::span<const std::size_t>(todo).subspan(begin, std::min(unit_size, todo.size() - begin)));
  const int jobs =
      options_.build_jobs > 0 ? options_.build_jobs : std::max(1, static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)));
  for (const UnitBuild& unit : build_units(*backend_, programs, units, dir.path(), jobs)) {
    for (const BuildFailure& f : unit.failures) {
      fail(f.id, f.result.error_no, f.result.message, f.build_share);
      report(f.id, progress);
    }
    for (const BuiltModule& module : unit.modules)
      run_module(programs, module.ids, module.module_path, module.build_share, progress);
  }
  return std::move(out_);
}

}  // namespace tcl::measure
