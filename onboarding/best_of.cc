#include "onboarding/best_of.h"

#include <boost/json.hpp>

#include <set>
#include <utility>

#include "core/program_id.h"
#include "core/task_split.h"
#include "trainer/cost_model.h"

namespace tcl::onboarding {
namespace json = boost::json;

std::string_view candidate_name(Candidate candidate) {
  switch (candidate) {
    case Candidate::kStudent: return "student";
    case Candidate::kAdapterOnStudent: return "adapter on the student";
    case Candidate::kAdapterOnTeacher: return "adapter on the parent's trunk";
    case Candidate::kFineTune: return "fine-tune";
    case Candidate::kSoup: return "soup of the fine-tune and the adapter on the parent's trunk";
  }
  return "student";
}

std::string_view choice_name(Choice choice) {
  switch (choice) {
    case Choice::kFineTune: return "fine-tune";
    case Choice::kValidation: return "validation";
    case Choice::kSoup: return "soup";
    case Choice::kAdapter: return "adapter";
    case Choice::kAdapterOnStudent: return "adapter-on-student";
  }
  return "fine-tune";
}

std::optional<Choice> choice_named(std::string_view name) {
  for (Choice c : kChoices) {
    if (choice_name(c) == name) return c;
  }
  return std::nullopt;
}

ChoiceSplit choice_split(std::span<const core::Record> selection, double fraction, std::uint64_t salt) {
  ChoiceSplit out;
  std::set<std::string> fit_tasks, validation_tasks;
  for (const core::Record& r : selection) {
    const std::string key = core::canonical_workload_key(r.workload_key);
    if (core::in_holdout(key, fraction, salt)) {
      validation_tasks.insert(key);
      out.validation.push_back(r);
    } else {
      fit_tasks.insert(key);
      out.fit.push_back(r);
    }
  }
  if (fit_tasks.empty() || validation_tasks.empty()) {
    out.fit.assign(selection.begin(), selection.end());
    out.validation.clear();
    out.fit_tasks = static_cast<std::int64_t>(fit_tasks.size() + validation_tasks.size());
    return out;
  }
  out.fit_tasks = static_cast<std::int64_t>(fit_tasks.size());
  out.validation_tasks = static_cast<std::int64_t>(validation_tasks.size());
  return out;
}

trainer::DatasetOptions choice_options(double fraction, std::uint64_t salt) {
  trainer::DatasetOptions o;
  o.eval_fraction = fraction;
  o.split_salt = salt;
  o.max_eval_records = 20'000;
  return o;
}

Candidate chosen_candidate(Choice rule, std::span<const CandidateScore> scores) {
  switch (rule) {
    case Choice::kFineTune: return Candidate::kFineTune;
    case Choice::kSoup: return Candidate::kSoup;
    case Choice::kAdapter: return Candidate::kAdapterOnTeacher;
    case Choice::kAdapterOnStudent: return Candidate::kAdapterOnStudent;
    case Choice::kValidation: break;
  }
  return choose_candidate(scores);
}

Candidate choose_candidate(std::span<const CandidateScore> scores) {
  Candidate best = Candidate::kStudent;
  double best_top1 = -1;
  for (Candidate c : kCandidates) {
    for (const CandidateScore& s : scores) {
      if (s.candidate != c || s.validation.tasks <= 0) continue;
      if (s.validation.top1.mean_ratio > best_top1) {  // strictly: a tie stays with the earlier
        best = c;
        best_top1 = s.validation.top1.mean_ratio;
      }
    }
  }
  return best;
}

Result<std::vector<std::string>> served_models(std::string_view version, std::span<const std::string> platforms) {
  std::vector<std::string> out;
  out.reserve(platforms.size());
  for (const std::string& p : platforms) {
    auto own = trainer::platform_checkpoint(version, p);
    if (!own) return own.status().with_context("platform " + p + "'s model");
    out.push_back(std::move(*own));
  }
  return out;
}

Result<std::string> compose_best_of(const BestOfParts& parts) {
  if (parts.old_platforms.size() != parts.old_models.size()) {
    return Status::invalid_argument("best-of: " + std::to_string(parts.old_platforms.size()) + " old platforms, " +
                                    std::to_string(parts.old_models.size()) + " models");
  }
  if (parts.chosen != Candidate::kStudent && parts.chosen_model.empty()) {
    return Status::invalid_argument("best-of: the chosen model (" + std::string(candidate_name(parts.chosen)) +
                                    ") is missing");
  }
  std::string version(parts.student);
  for (std::size_t j = 0; j < parts.old_platforms.size(); ++j) {
    auto pinned = trainer::pin_platform(version, parts.old_platforms[j], parts.old_models[j]);
    if (!pinned) return pinned.status().with_context("best-of: old platform " + parts.old_platforms[j]);
    version = std::move(*pinned);
  }
  Result<std::string> kept = version;
  switch (parts.chosen) {
    case Candidate::kStudent: break;
    case Candidate::kAdapterOnStudent:
      kept = trainer::attach_adapter(version, parts.platform, parts.chosen_model);
      break;
    case Candidate::kAdapterOnTeacher:
    case Candidate::kFineTune:
    case Candidate::kSoup: kept = trainer::pin_platform(version, parts.platform, parts.chosen_model); break;
  }
  if (!kept) return kept.status().with_context("best-of: platform " + parts.platform);
  return kept;
}

json::object serving_json(std::span<const Serving> serving) {
  json::object out;
  for (const Serving& s : serving) {
    json::object o{{"model", s.model}, {"origin", s.origin}, {"reason", s.reason}};
    if (s.from_version) o["from_version"] = *s.from_version;
    if (!s.scores.empty()) {
      json::array scores;
      for (const CandidateScore& c : s.scores) {
        scores.push_back(json::object{{"candidate", candidate_name(c.candidate)},
                                      {"top1", c.validation.top1.mean_ratio},
                                      {"tuning_proxy", c.validation.tuning.geomean_ratio},
                                      {"tasks", c.validation.tasks}});
      }
      o["validation"] = std::move(scores);
    }
    out[s.platform] = std::move(o);
  }
  return out;
}

}  // namespace tcl::onboarding
