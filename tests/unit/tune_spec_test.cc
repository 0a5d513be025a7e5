// The tune: section of a job file and the trials it makes: parse errors
// with file:line:col and key, reproducible draws, grid x samples counts,
// placeholders and config merging.
#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>

#include <cmath>
#include <set>
#include <string>

#include "common/jobspec/job_spec.h"
#include "common/jobspec/search_space.h"
#include "common/text.h"

using namespace clusterd;

namespace {

const char* kSweep = R"(name: mlp
entrypoint: [./fashion_mnist, --lr, "{lr}", --hidden, "{hidden}"]
config: {epochs: 4}
tune:
  metric: accuracy
  mode: max
  num_samples: 3
  max_concurrent: 2
  seed: 7
  search_space:
    lr: {loguniform: [1.0e-4, 1.0e-1]}
    momentum: {uniform: [0.1, 0.9]}
    batch_size: {choice: [32, 64, 128]}
    hidden: {grid: [64, 128]}
    act: {grid: [relu, tanh]}
    layers: {randint: [1, 4]}
  scheduler:
    asha: {time_attr: training_iteration, max_t: 10, grace_period: 1, reduction_factor: 3}
  stop: {accuracy: 0.95}
  best_params: results/best_params.yaml
)";

JobSpec Parsed(const std::string& yaml) {
  auto r = ParseJobSpec(yaml, "sweep.yaml");
  INFO(r.status().message());
  REQUIRE(r.ok());
  return *r;
}

std::string ErrorOf(const std::string& yaml) {
  auto r = ParseJobSpec(yaml, "sweep.yaml");
  REQUIRE_FALSE(r.ok());
  return r.status().message();
}

std::string WithTune(const std::string& tune, const std::string& entrypoint = "[train]") {
  return "entrypoint: " + entrypoint + "\ntune:\n" + tune;
}

// What /bin/sh -c `command` prints (popen runs exactly that); REQUIREs exit 0.
std::string ShellOutput(const std::string& command) {
  FILE* shell = popen(command.c_str(), "r");
  REQUIRE(shell != nullptr);
  std::string out;
  char buffer[256];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, shell)) > 0;) out.append(buffer, n);
  REQUIRE(pclose(shell) == 0);
  return out;
}

}  // namespace

TEST_CASE("tune section parses every key", "[tune]") {
  JobSpec spec = Parsed(kSweep);
  REQUIRE(spec.has_tune());
  const TuneSpec& t = spec.tune();
  CHECK(t.metric() == "accuracy");
  CHECK_FALSE(t.mode_min());
  CHECK(t.num_samples() == 3);
  CHECK(t.max_concurrent() == 2);
  CHECK(t.seed() == 7);
  REQUIRE(t.search_space_size() == 6);
  CHECK(t.search_space(0).name() == "lr");
  CHECK(t.search_space(0).distribution() == "loguniform");
  CHECK(t.search_space(0).low() == 1e-4);
  CHECK(t.search_space(0).high() == 1e-1);
  CHECK(t.search_space(2).values_json_size() == 3);
  CHECK(t.search_space(4).values_json(1) == "\"tanh\"");
  REQUIRE(t.has_asha());
  CHECK(t.asha().max_t() == 10);
  CHECK(t.asha().reduction_factor() == 3);
  CHECK(t.stop().at("accuracy") == 0.95);
  CHECK(t.best_params() == "results/best_params.yaml");
}

TEST_CASE("tune defaults follow Ray", "[tune]") {
  JobSpec spec = Parsed(WithTune("  metric: loss\n  mode: min\n  scheduler: {asha: {}}\n"));
  CHECK(spec.tune().mode_min());
  CHECK(spec.tune().num_samples() == 1);
  CHECK(spec.tune().max_concurrent() == 0);
  CHECK(spec.tune().asha().time_attr() == "training_iteration");
  CHECK(spec.tune().asha().grace_period() == 1);
  CHECK(spec.tune().asha().reduction_factor() == 4);
  CHECK(spec.tune().best_params() == "best_params.yaml");
  CHECK_FALSE(Parsed(WithTune("  metric: loss\n")).tune().has_asha());
}

TEST_CASE("tune errors name file, line, column and key", "[tune]") {
  SECTION("an unknown distribution") {
    std::string e = ErrorOf(WithTune("  metric: a\n  search_space:\n    lr: {logunifrom: [1, 2]}\n"));
    CHECK(e == "sweep.yaml:5:10: key 'tune.search_space.lr.logunifrom': unknown distribution 'logunifrom' "
               "(did you mean 'loguniform'?)");
  }
  SECTION("low >= high") {
    std::string e = ErrorOf(WithTune("  metric: a\n  search_space:\n    m: {uniform: [0.9, 0.1]}\n"));
    CHECK(e == "sweep.yaml:5:18: key 'tune.search_space.m.uniform': bad range [0.9, 0.1]: low must be below high");
  }
  SECTION("loguniform <= 0") {
    std::string e = ErrorOf(WithTune("  metric: a\n  search_space:\n    lr: {loguniform: [0, 1]}\n"));
    CHECK(e == "sweep.yaml:5:22: key 'tune.search_space.lr.loguniform': bad range [0, 1]: loguniform needs low > 0");
  }
  SECTION("metric missing") {
    std::string e = ErrorOf(WithTune("  num_samples: 2\n"));
    CHECK(e == "sweep.yaml:3:3: key 'tune': missing required key 'metric' (the name trials report with ctrain::report)");
  }
  SECTION("a placeholder with no parameter, in a list") {
    std::string e = ErrorOf(WithTune("  metric: a\n  search_space:\n    lr: {uniform: [0, 1]}\n",
                                     "[train, --lr, \"{lr}\", --wd, \"{wd}\"]"));
    CHECK(e == "sweep.yaml:1:41: key 'entrypoint[4]': placeholder '{wd}' names no parameter of tune.search_space");
  }
  SECTION("a placeholder with no parameter, in a shell string") {
    std::string e = ErrorOf(WithTune("  metric: a\n", "\"train --lr {lr} --home ${HOME}\""));
    CHECK(e == "sweep.yaml:1:13: key 'entrypoint': placeholder '{lr}' names no parameter of tune.search_space");
  }
  SECTION("an unknown tune key") {
    std::string e = ErrorOf(WithTune("  metric: a\n  num_sample: 3\n"));
    CHECK(e == "sweep.yaml:4:3: unknown key 'tune.num_sample' (did you mean 'tune.num_samples'?)");
  }
  SECTION("a bad mode") {
    CHECK(ErrorOf(WithTune("  metric: a\n  mode: maximum\n")) ==
          "sweep.yaml:4:9: key 'tune.mode': expected min or max, got 'maximum'");
  }
  SECTION("a bad reduction factor") {
    CHECK(ErrorOf(WithTune("  metric: a\n  scheduler: {asha: {reduction_factor: 1}}\n")) ==
          "sweep.yaml:4:40: key 'tune.scheduler.asha.reduction_factor': expected a number > 1, got 1");
  }
}

TEST_CASE("placeholders only count without a parameter when the job is a sweep", "[tune]") {
  JobSpec plain = Parsed("entrypoint: [echo, \"{x}\"]\n");
  CHECK_FALSE(plain.has_tune());
}

TEST_CASE("ValidateJobSpec checks a tune section from the wire", "[tune]") {
  JobSpec spec = Parsed(kSweep);
  spec.mutable_tune()->mutable_search_space(0)->set_low(-1);
  CHECK(ValidateJobSpec(spec).message() ==
        "key 'tune.search_space.lr.loguniform': bad range [-1, 0.1]: loguniform needs low > 0");
  spec = Parsed(kSweep);
  spec.mutable_tune()->mutable_search_space(1)->set_distribution("normal");
  CHECK(ValidateJobSpec(spec).message().find("unknown distribution 'normal'") != std::string::npos);
  spec = Parsed(kSweep);
  spec.mutable_tune()->clear_metric();
  CHECK(ValidateJobSpec(spec).message() == "key 'tune': missing required key 'metric' (the name trials report)");
  spec = Parsed(kSweep);
  spec.set_entrypoint(1, "{nope}");
  CHECK(ValidateJobSpec(spec).message() == "key 'entrypoint[1]': placeholder '{nope}' names no parameter of tune.search_space");
}

TEST_CASE("trial count is num_samples times every grid's size", "[tune]") {
  CHECK(TrialCount(Parsed(kSweep).tune()) == 3 * 2 * 2);
  CHECK(TrialCount(Parsed(WithTune("  metric: a\n  num_samples: 5\n")).tune()) == 5);
  CHECK(TrialCount(Parsed(WithTune("  metric: a\n  num_samples: 4\n  search_space: {h: {grid: [1, 2, 3]}}\n")).tune()) == 12);
  CHECK(ErrorOf(WithTune("  metric: a\n  num_samples: 10000\n  search_space: {h: {grid: [1, 2]}}\n"))
            .find("more than 10000 trials") != std::string::npos);
}

TEST_CASE("grids cycle within each draw, the last grid fastest", "[tune]") {
  const TuneSpec tune = Parsed(kSweep).tune();
  std::set<std::pair<std::string, std::string>> combos;
  for (int i = 0; i < 4; ++i) combos.emplace(SampleTrial(tune, i).at("hidden"), SampleTrial(tune, i).at("act"));
  CHECK(combos.size() == 4);
  CHECK(SampleTrial(tune, 0).at("act") == "\"relu\"");
  CHECK(SampleTrial(tune, 1).at("act") == "\"tanh\"");
  CHECK(SampleTrial(tune, 1).at("hidden") == "64");
  CHECK(SampleTrial(tune, 2).at("hidden") == "128");
  // The same draw over a draw's grid combinations; a new one for the next.
  CHECK(SampleTrial(tune, 0).at("lr") == SampleTrial(tune, 3).at("lr"));
  CHECK(SampleTrial(tune, 0).at("lr") != SampleTrial(tune, 4).at("lr"));
}

TEST_CASE("sampling is reproducible from the seed and stays in range", "[tune]") {
  const TuneSpec tune = Parsed(kSweep).tune();
  TuneSpec other = tune;
  other.set_seed(8);
  std::set<std::string> lrs, layers, batches;
  int differs = 0;
  for (int i = 0; i < TrialCount(tune); ++i) {
    const TrialParams p = SampleTrial(tune, i);
    CHECK(p == SampleTrial(tune, i));              // same seed, same trial
    if (p.at("lr") != SampleTrial(other, i).at("lr")) ++differs;
    const double lr = std::stod(p.at("lr"));
    CHECK(lr >= 1e-4);
    CHECK(lr < 1e-1);
    const double m = std::stod(p.at("momentum"));
    CHECK(m >= 0.1);
    CHECK(m < 0.9);
    const std::string l = p.at("layers");
    CHECK((l == "1" || l == "2" || l == "3"));     // randint: [low, high)
    CHECK((p.at("batch_size") == "32" || p.at("batch_size") == "64" || p.at("batch_size") == "128"));
    lrs.insert(p.at("lr"));
  }
  CHECK(differs == TrialCount(tune));  // another seed, other values
  CHECK(lrs.size() == 3);               // one draw per sample
  // Fixed values: a change of the generator would change users' trials.
  CHECK(SampleTrial(tune, 0) == SampleTrial(Parsed(kSweep).tune(), 0));
}

TEST_CASE("loguniform draws spread over the decades", "[tune]") {
  TuneSpec tune = Parsed(WithTune("  metric: a\n  num_samples: 400\n  search_space: {lr: {loguniform: [1.0e-4, 1.0]}}\n")).tune();
  int per_decade[4] = {0, 0, 0, 0};
  for (int i = 0; i < 400; ++i) {
    int d = static_cast<int>(std::floor(std::log10(std::stod(SampleTrial(tune, i).at("lr"))) + 4));
    REQUIRE(d >= 0);
    REQUIRE(d < 4);
    ++per_decade[d];
  }
  for (int n : per_decade) CHECK(n > 60);  // 100 expected in each
}

TEST_CASE("a trial's spec carries its parameters in config and entrypoint", "[tune]") {
  const JobSpec sweep = Parsed(kSweep);
  auto trial = TrialSpec(sweep, "sweep-0001", 5);
  REQUIRE(trial.ok());
  const TrialParams p = SampleTrial(sweep.tune(), 5);
  CHECK_FALSE(trial->has_tune());
  CHECK(trial->name() == "mlp-trial-005");
  CHECK(trial->sweep_id() == "sweep-0001");
  CHECK(trial->trial_index() == 5);
  CHECK(trial->entrypoint(2) == p.at("lr"));
  CHECK(trial->entrypoint(4) == p.at("hidden"));
  CHECK(trial->config_json().find("\"epochs\":4") != std::string::npos);
  CHECK(trial->config_json().find("\"act\":\"") != std::string::npos);
  CHECK(ValidateJobSpec(*trial).ok());
}

TEST_CASE("placeholders and substitution", "[tune]") {
  CHECK(Placeholders("--lr={lr} {b_2}") == std::vector<std::string>{"lr", "b_2"});
  CHECK(Placeholders("${HOME} {} {1x} {a b} {x").empty());
  TrialParams p{{"lr", "0.01"}, {"act", "\"relu\""}};
  CHECK(Substitute("--lr={lr} --act {act} {other} ${lr}", p) == "--lr=0.01 --act relu {other} ${lr}");
}

// What /bin/sh -c prints for `command` with {opt} standing for `value`,
// given in the environment as a rank of the trial has it.
std::string ShellOutputWith(const std::string& command, const std::string& value) {
  auto substituted = SubstituteInShell(command, {{"opt", JsonQuote(value)}});
  INFO(substituted.status().message());
  REQUIRE(substituted.ok());
  REQUIRE(setenv(ParamVariable("opt").c_str(), value.c_str(), 1) == 0);
  std::string out = ShellOutput(*substituted);
  unsetenv(ParamVariable("opt").c_str());
  return out;
}

TEST_CASE("a string entrypoint's values reach the shell's program as one word each wherever the placeholder stands",
          "[tune]") {
  // Unquoted, in single quotes, in double quotes, and after an escaped
  // quote that opens nothing, as /bin/sh -c runs it.
  const std::string command = "printf '<%s>' {opt} '{opt}' \"{opt}\" x\\' {opt}";
  for (const std::string value : {"a b", "x'y", "c;echo INJECTED", "$HOME", "`id`", "back\\slash", "q\"uote", "",
                                  "0.01", "--flag=1"}) {
    INFO("value " << value);
    CHECK(ShellOutputWith(command, value) == "<" + value + "><" + value + "><" + value + "><x'><" + value + ">");
  }
  // Inside command substitutions, which read afresh, even within "...".
  const std::string nested = "printf '<%s>' \"$(printf %s \"{opt}\")\" \"`printf %s {opt}`\" $((1+1)) {opt}";
  for (const std::string value : {"a b", "x'y;echo hi $HOME\"z", "`id`", "back\\slash", "$(id)", ""}) {
    INFO("value " << value);
    CHECK(ShellOutputWith(nested, value) == "<" + value + "><" + value + "><2><" + value + ">");
  }
  // The command names the value; it does not hold it.
  CHECK(*SubstituteInShell("train --lr {lr} \"{lr}\" '{lr}'", {{"lr", "0.01"}}) ==
        "train --lr \"${CLUSTER_PARAM_lr}\" \"${CLUSTER_PARAM_lr}\" ''\"${CLUSTER_PARAM_lr}\"''");
}

TEST_CASE("a sweep's trial names its values in a string entrypoint and writes them in a list", "[tune]") {
  JobSpec sweep;
  sweep.set_name("s");
  for (const char* arg : {"/bin/sh", "-c", "run {opt}"}) sweep.add_entrypoint(arg);
  auto* dimension = sweep.mutable_tune()->add_search_space();
  dimension->set_name("opt");
  dimension->add_values_json("\"a b\"");
  dimension->set_distribution("grid");
  auto trial = TrialSpec(sweep, "sweep-1", 0);
  REQUIRE(trial.ok());
  CHECK(trial->entrypoint(2) == "run \"${CLUSTER_PARAM_opt}\"");
  CHECK(TrialEnvironment(*trial).at("CLUSTER_PARAM_opt") == "a b");
  sweep.clear_entrypoint();
  for (const char* arg : {"run", "{opt}"}) sweep.add_entrypoint(arg);
  trial = TrialSpec(sweep, "sweep-1", 0);
  REQUIRE(trial.ok());
  CHECK(trial->entrypoint(1) == "a b");  // its own argument already
}

TEST_CASE("config merge sets parameters over the job's config", "[tune]") {
  auto merged = MergeConfig("{\"lr\":1,\"keep\":\"x\"}", {{"lr", "0.5"}, {"act", "\"tanh\""}});
  REQUIRE(merged.ok());
  CHECK(merged->find("\"act\":\"tanh\"") != std::string::npos);
  CHECK(merged->find("\"keep\":\"x\"") != std::string::npos);
  CHECK(merged->find("\"lr\":0.5") != std::string::npos);
  CHECK(merged->find("\"lr\":1") == std::string::npos);
  CHECK(*MergeConfig("", {{"h", "64"}}) == "{\"h\":64}");
  CHECK_FALSE(MergeConfig("[1]", {}).ok());
}
