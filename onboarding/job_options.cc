#include "onboarding/job_options.h"

#include <boost/json.hpp>

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <string>

namespace tcl::onboarding {
namespace json = boost::json;

namespace {

// 0.5, 1000, 1e+06: bounds as a person writes them.
std::string shortest(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

// A distill's options of one method only (the other refuses them).
bool is_student_option(std::string_view key) {
  for (std::string_view k : {"label_weight", "column_weight", "old_weight", "ewc_weight", "temperature",
                             "unlabeled_ratio", "max_unlabeled", "old_bank_ratio", "max_old_bank", "column_epochs"}) {
    if (key == k) return true;
  }
  return false;
}
bool is_adapter_option(std::string_view key) { return key == "adapter_rank" || key == "adapter_layers"; }

// Refuses `key`, an option of the other distill method than o.method.
Status refuse_other_method_option(std::string_view key, const JobOptions& o) {
  const bool adapter = o.method == JobOptions::DistillMethod::kAdapter;
  const std::string other(
      distill_method_name(adapter ? JobOptions::DistillMethod::kStudent : JobOptions::DistillMethod::kAdapter));
  std::string why = "option '";
  why += key;
  why += "' belongs to \"method\": \"" + other;
  why += "\"; this distill's method is \"";
  why += distill_method_name(o.method);
  why += "\"";
  why += ": add \"method\": \"" + other;
  why += "\" or drop the option";
  return Status::invalid_argument(why);
}

// The method's defaults for what the request left out (the settings
// docs/continual.md measured), and the other method's options refused.
Status apply_distill_method(JobOptions& o, const json::object& given) {
  const bool adapter = o.method == JobOptions::DistillMethod::kAdapter;
  // best-of trains the student and the adapters: it takes both methods' options.
  for (const auto& [key, value] : given) {
    if (o.method == JobOptions::DistillMethod::kBestOf) break;
    if (adapter ? is_student_option(key) : is_adapter_option(key)) return refuse_other_method_option(key, o);
  }
  if (given.contains("choice") && o.method != JobOptions::DistillMethod::kBestOf) {
    return Status::invalid_argument("option 'choice' belongs to \"method\": \"best-of\"; this distill's method is \"" +
                                    std::string(distill_method_name(o.method)) + "\"");
  }
  if (!given.contains("epochs")) o.epochs = adapter ? trainer::kDistillAdapterEpochs : trainer::kDistillStudentEpochs;
  if (!given.contains("learning_rate")) {
    o.learning_rate = adapter ? trainer::kDistillAdapterLearningRate : trainer::kDistillStudentLearningRate;
  }
  if (!given.contains("column_epochs")) o.column_epochs = trainer::kDistillColumnEpochs;
  return Status::ok();
}

}  // namespace

std::string_view distill_method_name(JobOptions::DistillMethod method) {
  switch (method) {
    case JobOptions::DistillMethod::kAdapter: return "adapter";
    case JobOptions::DistillMethod::kStudent: return "student";
    case JobOptions::DistillMethod::kBestOf: return "best-of";
  }
  return "adapter";
}

namespace {

// One option's value, read against its bounds; errors name the option.
class OptionValue {
 public:
  OptionValue(std::string_view key, const json::value& value) : key_(key), value_(value) {}

  Result<double> number(double lo, double hi) const {
    if (!value_.is_number()) return Status::invalid_argument("option '" + std::string(key_) + "' must be a number");
    const double x = value_.to_number<double>();
    if (!(x >= lo && x <= hi)) {
      return Status::invalid_argument("option '" + std::string(key_) + "' must be in [" + shortest(lo) + ", " +
                                      shortest(hi) + "]");
    }
    return x;
  }
  Result<double> integer(double lo, double hi) const {
    Result<double> x = number(lo, hi);
    if (x && *x != std::floor(*x)) {
      return Status::invalid_argument("option '" + std::string(key_) + "' must be a whole number");
    }
    return x;
  }
  // The value when it is one of `allowed` (strings); else nullopt.
  std::optional<std::string> one_of(std::initializer_list<std::string_view> allowed) const {
    if (!value_.is_string()) return std::nullopt;
    for (std::string_view a : allowed) {
      if (value_.as_string() == a) return std::string(a);
    }
    return std::nullopt;
  }
  const json::value& json() const { return value_; }

 private:
  std::string_view key_;
  const json::value& value_;
};

// An option of every job kind: its status once set; nullopt when `key` is none of them.
std::optional<Status> set_job_option(std::string_view key, const OptionValue& v, JobOptions& o) {
  Result<double> x = 0.0;
  if (key == "epochs") {
    if (x = v.integer(1, 1000); x) o.epochs = static_cast<int>(*x);
  } else if (key == "learning_rate") {
    if (x = v.number(1e-6, 1); x) o.learning_rate = *x;
  } else if (key == "min_steps") {
    if (x = v.integer(0, 1e6); x) o.min_steps = static_cast<std::int64_t>(*x);
  } else if (key == "validation_fraction") {
    if (x = v.number(0, 0.5); x) o.validation_fraction = *x;
  } else if (key == "validation_by") {
    const auto by = v.one_of({"programs", "tasks"});
    if (!by) return Status::invalid_argument("option 'validation_by' must be \"programs\" or \"tasks\"");
    o.validation_by_tasks = *by == "tasks";
  } else if (key == "refit" || key == "auto_schedule") {
    if (!v.json().is_bool()) return Status::invalid_argument("option '" + std::string(key) + "' must be true or false");
    (key == "refit" ? o.refit : o.auto_schedule) = v.json().as_bool();
  } else if (key == "patience") {
    if (x = v.integer(0, 1000); x) o.patience = static_cast<int>(*x);
  } else if (key == "max_records") {
    if (x = v.integer(100, 1e8); x) o.max_records = static_cast<std::int64_t>(*x);
  } else if (key == "time_budget_s") {
    if (x = v.number(1, 7 * 86400); x) o.time_budget_s = *x;
  } else if (key == "eval_fraction") {
    if (x = v.number(0, 0.9); x) o.eval_fraction = *x;
  } else if (key == "seed") {
    if (x = v.integer(0, 1e15); x) o.seed = static_cast<std::uint64_t>(*x);
  } else if (key == "model") {
    const auto model = v.one_of({"mamba", "attention", "mlp"});
    if (!model) return Status::invalid_argument("option 'model' must be \"mamba\", \"attention\" or \"mlp\"");
    o.model = *model;
  } else {
    return std::nullopt;
  }
  return x.status();
}

// A distill's option: its status once set; nullopt when `key` is none of them.
std::optional<Status> set_distill_option(std::string_view key, const OptionValue& v, JobOptions& o) {
  Result<double> x = 0.0;
  if (key == "label_weight" || key == "column_weight" || key == "old_weight" || key == "ewc_weight") {
    if (x = v.number(0, 1e6); x) {
      (key == "label_weight"    ? o.label_weight
       : key == "column_weight" ? o.column_weight
       : key == "old_weight"    ? o.old_weight
                                : o.ewc_weight) = *x;
    }
  } else if (key == "temperature") {
    if (x = v.number(0.01, 100); x) o.temperature = *x;
  } else if (key == "unlabeled_ratio") {
    if (x = v.number(0, 100); x) o.unlabeled_ratio = *x;
  } else if (key == "max_unlabeled") {
    if (x = v.integer(0, 1e7); x) o.max_unlabeled = static_cast<std::int64_t>(*x);
  } else if (key == "old_bank_ratio") {
    if (x = v.number(0, 100); x) o.old_bank_ratio = *x;
  } else if (key == "max_old_bank") {
    if (x = v.integer(0, 1e7); x) o.max_old_bank = static_cast<std::int64_t>(*x);
  } else if (key == "margin") {
    if (x = v.number(0, 1); x) o.margin = *x;
  } else if (key == "column_epochs") {
    if (x = v.integer(1, 1000); x) o.column_epochs = static_cast<int>(*x);
  } else if (key == "method") {
    const auto method = v.one_of({"adapter", "student", "best-of"});
    if (!method) {
      return Status::invalid_argument("option 'method' must be \"adapter\", \"student\" or \"best-of\"");
    }
    o.method = *method == "adapter"   ? JobOptions::DistillMethod::kAdapter
               : *method == "student" ? JobOptions::DistillMethod::kStudent
                                      : JobOptions::DistillMethod::kBestOf;
  } else if (key == "choice") {
    const std::optional<Choice> choice =
        v.json().is_string() ? choice_named(std::string_view(v.json().as_string())) : std::nullopt;
    if (!choice) {
      return Status::invalid_argument(
          "option 'choice' must be \"fine-tune\", \"validation\", \"soup\", \"adapter\" or \"adapter-on-student\"");
    }
    o.choice = *choice;
  } else if (key == "adapter_rank") {
    if (x = v.integer(1, trainer::kMaxAdapterRank); x) o.adapter_rank = static_cast<int>(*x);
  } else if (key == "adapter_layers") {
    const auto layers = v.json().is_string() ? trainer::parse_adapter_layers(v.json().as_string()) : std::nullopt;
    if (!layers) return Status::invalid_argument("option 'adapter_layers' must be \"all\" or \"blocks\"");
    o.adapter_layers = *layers;
  } else {
    return std::nullopt;
  }
  return x.status();
}

// A train job's "init": its status once set; nullopt when `key` is not "init".
std::optional<Status> set_train_option(std::string_view key, const OptionValue& v, JobOptions& o) {
  if (key != "init") return std::nullopt;
  if (!v.json().is_string() || v.json().as_string().empty()) {
    return Status::invalid_argument("option 'init' must be a model alias or version, e.g. \"production\"");
  }
  o.init = std::string(v.json().as_string());
  return Status::ok();
}

}  // namespace

Result<JobOptions> parse_job_options(std::string_view text, registry::JobKind kind) {
  JobOptions o;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) return Status::invalid_argument("job options are not a JSON object");
  const bool distill = kind == registry::JobKind::kDistill;
  for (const auto& [key, value] : v.as_object()) {
    const OptionValue option(key, value);
    std::optional<Status> set = set_job_option(key, option, o);
    if (!set) set = distill ? set_distill_option(key, option, o) : set_train_option(key, option, o);
    if (!set) return Status::invalid_argument("unknown job option '" + std::string(key) + "'");
    if (!*set) return *set;
  }
  if (distill) {
    if (Status s = apply_distill_method(o, v.as_object()); !s) return s;
  }
  if (kind == registry::JobKind::kTrain && o.auto_schedule && o.init.empty()) {
    return Status::invalid_argument("option 'auto_schedule' needs 'init': it sets how long a fine-tune runs");
  }
  return o;
}

std::int64_t effective_max_records(const JobOptions& o, trainer::Device train_device) {
  if (o.max_records > 0) return o.max_records;
  return trainer::default_max_records(train_device);
}

trainer::TrainRequest train_request(const JobOptions& o, const trainer::Platform& platform,
                                    std::span<const core::Record> records) {
  trainer::TrainRequest request;
  request.data.records = records;
  request.data.platform = platform;
  request.data.options.eval_fraction = o.eval_fraction;
  request.data.options.max_records = o.max_records;
  request.model.kind = o.model == "attention" ? trainer::ModelKind::kAttention
                       : o.model == "mlp"     ? trainer::ModelKind::kMlp
                                              : trainer::ModelKind::kMamba;
  request.optimisation.epochs = o.epochs;
  request.optimisation.learning_rate = o.learning_rate;
  request.optimisation.min_steps = o.min_steps;
  request.data.options.validation_fraction = o.validation_fraction;
  if (o.validation_by_tasks) request.data.options.validation_split = trainer::ValidationSplit::kTasks;
  request.optimisation.patience = o.patience;
  request.data.refit = o.refit;
  request.optimisation.seed = o.seed;
  request.resources.time_budget_s = o.time_budget_s;
  return request;
}

}  // namespace tcl::onboarding
