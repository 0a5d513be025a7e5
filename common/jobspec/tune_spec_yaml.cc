// ParseTune: one small reader per key of the tune section, as job_spec.cc
// reads the top level. Defaults follow Ray Tune's: mode max, one sample,
// ASHA's time_attr training_iteration, grace_period 1, reduction_factor 4,
// max_t 100.
#include "common/jobspec/tune_spec_yaml.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "common/jobspec/job_spec_checks.h"
#include "common/jobspec/job_spec_units.h"
#include "common/jobspec/search_space.h"

namespace clusterd::job_spec_internal {

namespace {

const std::vector<std::string> kTuneKeys = {"metric", "mode",      "num_samples", "max_concurrent", "seed",
                                            "search_space", "scheduler", "stop", "best_params"};
const std::vector<std::string> kDistributions = {"loguniform", "uniform", "randint", "choice", "grid"};

Status ParseRange(const std::string& kind, const Field& f, SearchDimension* d) {
  std::vector<double> bounds;
  RETURN_IF_ERROR(ForEachItem(f, [&](const Field& item) -> Status {
    ASSIGN_OR_RETURN(double x, ReadNumber(item));
    bounds.push_back(x);
    return Status::Ok();
  }));
  if (!f.node().IsSequence() || bounds.size() != 2) return f.TypeError("a list [low, high]");
  d->set_low(bounds[0]);
  d->set_high(bounds[1]);
  if (!(bounds[0] < bounds[1])) {
    return f.Error(fmt::format("bad range [{}, {}]: low must be below high", bounds[0], bounds[1]));
  }
  if (kind == "loguniform" && bounds[0] <= 0) {
    return f.Error(fmt::format("bad range [{}, {}]: loguniform needs low > 0", bounds[0], bounds[1]));
  }
  if (kind == "randint" && (bounds[0] != std::floor(bounds[0]) || bounds[1] != std::floor(bounds[1]))) {
    return f.Error(fmt::format("bad range [{}, {}]: randint takes integers", bounds[0], bounds[1]));
  }
  return Status::Ok();
}

Status ParseValues(const Field& f, SearchDimension* d) {
  RETURN_IF_ERROR(ForEachItem(f, [&](const Field& item) -> Status {
    if (!item.node().IsScalar()) return item.TypeError("a number or a string");
    ASSIGN_OR_RETURN(*d->add_values_json(), ToJson(item));
    return Status::Ok();
  }));
  if (!f.node().IsSequence() || d->values_json_size() == 0) return f.TypeError("a list of at least one value");
  return Status::Ok();
}

// `lr: {loguniform: [1e-4, 1e-1]}`: a map of exactly one distribution.
Status ParseDimension(const std::string& name, const Field& f, TuneSpec* tune) {
  if (!f.node().IsMap() || f.node().size() != 1) {
    return f.TypeError("a map of one distribution, like {loguniform: [1.0e-4, 1.0e-1]} or {grid: [64, 128]}");
  }
  SearchDimension* d = tune->add_search_space();
  d->set_name(name);
  return ForEachEntry(f, nullptr, [&](const std::string& kind, const Field& value) -> Status {
    if (std::find(kDistributions.begin(), kDistributions.end(), kind) == kDistributions.end()) {
      std::string hint = DidYouMean(kind, kDistributions);
      return value.CheckKey(Status::InvalidArgument(
          fmt::format("unknown distribution '{}' ({})", kind,
                      hint.empty() ? "known: loguniform, uniform, randint, choice, grid" : "did you mean '" + hint + "'?")));
    }
    d->set_distribution(kind);
    return kind == "choice" || kind == "grid" ? ParseValues(value, d) : ParseRange(kind, value, d);
  });
}

Status ParseScheduler(const Field& f, TuneSpec* tune) {
  static const std::vector<std::string> kSchedulers = {"asha"};
  static const std::vector<std::string> kAshaKeys = {"time_attr", "max_t", "grace_period", "reduction_factor"};
  return ForEachEntry(f, &kSchedulers, [&](const std::string&, const Field& asha_field) -> Status {
    AshaSpec* asha = tune->mutable_asha();
    asha->set_time_attr("training_iteration");
    asha->set_max_t(100);
    asha->set_grace_period(1);
    asha->set_reduction_factor(4);
    RETURN_IF_ERROR(ForEachEntry(asha_field, &kAshaKeys, [&](const std::string& key, const Field& value) -> Status {
      if (key == "time_attr") {
        ASSIGN_OR_RETURN(*asha->mutable_time_attr(), ReadString(value));
        return Status::Ok();
      }
      ASSIGN_OR_RETURN(double x, ReadNumber(value));
      if (key == "max_t") asha->set_max_t(x);
      if (key == "grace_period") asha->set_grace_period(x);
      if (key == "reduction_factor") asha->set_reduction_factor(x);
      if (key == "reduction_factor" && !(x > 1)) return value.Error(fmt::format("expected a number > 1, got {}", x));
      if (key != "reduction_factor" && !(x > 0)) return value.Error(fmt::format("expected a number > 0, got {}", x));
      return Status::Ok();
    }));
    if (asha->max_t() < asha->grace_period()) {
      return asha_field.Error(fmt::format("max_t ({}) must be at least grace_period ({})", asha->max_t(), asha->grace_period()));
    }
    return Status::Ok();
  });
}

Status ParseTuneKey(const std::string& key, const Field& value, TuneSpec* tune) {
  if (key == "metric") {
    ASSIGN_OR_RETURN(*tune->mutable_metric(), ReadString(value));
    if (tune->metric().empty()) return value.Error("expected a metric name");
  } else if (key == "mode") {
    ASSIGN_OR_RETURN(std::string mode, ReadString(value));
    if (mode != "min" && mode != "max") return value.Error(fmt::format("expected min or max, got '{}'", mode));
    tune->set_mode_min(mode == "min");
  } else if (key == "num_samples" || key == "max_concurrent") {
    ASSIGN_OR_RETURN(int64_t n, ReadInteger(value));
    const int64_t least = key == "num_samples" ? 1 : 0;
    if (n < least || n > kMaxTrials) {
      return value.Error(fmt::format("expected an integer between {} and {}, got {}", least, kMaxTrials, n));
    }
    if (key == "num_samples") tune->set_num_samples(static_cast<int32_t>(n));
    else tune->set_max_concurrent(static_cast<int32_t>(n));
  } else if (key == "seed") {
    ASSIGN_OR_RETURN(int64_t seed, ReadInteger(value));
    tune->set_seed(seed);
  } else if (key == "search_space") {
    tune->clear_search_space();
    return ForEachEntry(value, nullptr, [&](const std::string& name, const Field& dim) { return ParseDimension(name, dim, tune); });
  } else if (key == "scheduler") {
    return ParseScheduler(value, tune);
  } else if (key == "stop") {
    return ForEachEntry(value, nullptr, [&](const std::string& name, const Field& v) -> Status {
      ASSIGN_OR_RETURN((*tune->mutable_stop())[name], ReadNumber(v));
      return Status::Ok();
    });
  } else if (key == "best_params") {
    ASSIGN_OR_RETURN(*tune->mutable_best_params(), ReadString(value));
    return value.Check(job_spec_internal::CheckPathUnderWorkingDir(tune->best_params(), "best_params"));
  }
  return Status::Ok();
}

}  // namespace

Status ParseTune(const Field& f, TuneSpec* tune) {
  if (!f.node().IsMap()) return f.TypeError("a map with metric, search_space and the like");
  *tune = TuneSpec();
  tune->set_num_samples(1);
  tune->set_best_params("best_params.yaml");
  RETURN_IF_ERROR(ForEachEntry(f, &kTuneKeys, [&](const std::string& key, const Field& value) {
    return ParseTuneKey(key, value, tune);
  }));
  if (tune->metric().empty()) return f.Error("missing required key 'metric' (the name trials report with ctrain::report)");
  if (TrialCount(*tune) > kMaxTrials) return f.Error(fmt::format("the sweep would have more than {} trials", kMaxTrials));
  return Status::Ok();
}

Status CheckEntrypointPlaceholders(const Field& entrypoint, const JobSpec& spec) {
  Status status = CheckPlaceholders(spec);
  if (status.ok()) return status;
  // Point at the list item that holds it; a shell string is one scalar.
  const std::string message = status.message().substr(status.message().find(": ") + 2);
  if (entrypoint.node().IsSequence()) {
    for (size_t i = 0; i < entrypoint.node().size(); ++i) {
      Field item = entrypoint.Item(i, entrypoint.node()[i]);
      std::string arg = item.node().IsScalar() ? item.node().Scalar() : "";
      for (const auto& name : Placeholders(arg)) {
        bool known = false;
        for (const auto& d : spec.tune().search_space()) known = known || d.name() == name;
        if (!known) return item.Error(message);
      }
    }
  }
  return entrypoint.Error(message);
}

}  // namespace clusterd::job_spec_internal
