#include <catch2/catch.hpp>

#include <map>
#include <string>

#include "common/jobspec/env_match.h"

using namespace clusterd;

TEST_CASE("passthrough copies the submitter's variables that match a glob", "[env_match]") {
  const char* env[] = {"DVC_REMOTE=s3://b", "DVC_NO_ANALYTICS=1", "HOME=/home/u", "WANDB_KEY=k",
                       "HF_HOME=/hf", "hf_lower=x", "NOEQUALS", "=orphan", "DVC_REMOTE=second", nullptr};
  auto got = MatchPassthrough({"DVC_*", "WANDB_???", "HF_[A-Z]*"}, env);
  CHECK(got == std::map<std::string, std::string>{{"DVC_REMOTE", "s3://b"}, {"DVC_NO_ANALYTICS", "1"},
                                                  {"WANDB_KEY", "k"}, {"HF_HOME", "/hf"}});
  CHECK(MatchPassthrough({}, env).empty());
  CHECK(MatchPassthrough({"*"}, static_cast<const char* const*>(nullptr)).empty());
}

TEST_CASE("passthrough never copies the variables clusterd sets per rank", "[env_match]") {
  std::map<std::string, std::string> vars = {{"RANK", "3"}, {"MASTER_ADDR", "h"}, {"CLUSTER_JOB_ID", "j"},
                                             {"PATH", "/bin"}, {"CUDA_VISIBLE_DEVICES", "0"},
                                             {"CLUSTER_TOKEN", "secret"}, {"CLUSTER_ANYTHING", "x"}};
  // `env_passthrough: ["*"]` once copied the cluster token into every rank.
  CHECK(MatchPassthrough({"*"}, vars) == std::map<std::string, std::string>{{"PATH", "/bin"}});
  CHECK(IsReservedWorkerVariable("LOCAL_WORLD_SIZE"));
  CHECK(IsReservedWorkerVariable("CLUSTER_TOKEN"));
  CHECK(IsReservedWorkerVariable("CUDA_VISIBLE_DEVICES"));
  CHECK_FALSE(IsReservedWorkerVariable("rank"));
}

TEST_CASE("a value keeps everything after the first '='", "[env_match]") {
  const char* env[] = {"OPTS=a=b=c", "EMPTY=", nullptr};
  CHECK(MatchPassthrough({"*"}, env) == std::map<std::string, std::string>{{"OPTS", "a=b=c"}, {"EMPTY", ""}});
  CHECK(MatchesAnyPattern({"A*", "B"}, "B"));
  CHECK_FALSE(MatchesAnyPattern({"A*", "B"}, "BB"));
}
