// What the job file tests share: parsing a YAML text, the error it gives,
// running in a folder, and a full example file.
#pragma once

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <unistd.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>
#include <fmt/format.h>
#include "common/jobspec/job_spec.h"
#include "common/jobspec/job_spec_units.h"

namespace clusterd::testing {
namespace fs = std::filesystem;

inline JobSpec Parsed(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  auto r = ParseJobSpec(yaml, "job.yaml", overrides);
  INFO(r.status().message());
  REQUIRE(r.ok());
  return *r;
}

inline std::string ErrorOf(const std::string& yaml, const std::vector<std::string>& overrides = {}, int max_workers = 4096) {
  auto r = ParseJobSpec(yaml, "job.yaml", overrides, max_workers);
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.status().code() == Status::Code::kInvalidArgument);
  return r.status().message();
}

inline std::vector<std::string> Argv(const JobSpec& spec) { return {spec.entrypoint().begin(), spec.entrypoint().end()}; }

inline double Res(const JobSpec& spec, const std::string& name) {
  auto it = spec.resources_per_worker().amounts().find(name);
  return it == spec.resources_per_worker().amounts().end() ? -1 : it->second;
}

// A scratch folder, removed at the end of the test.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "job_spec_test.XXXXXX").string();
    path = mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
  std::string Write(const std::string& name, const std::string& text) const {
    std::ofstream(path / name, std::ios::binary) << text;
    return (path / name).string();
  }
};

// Runs the body in `dir`, then returns to where the test binary was.
template <typename Fn>
void InDir(const fs::path& dir, Fn&& fn) {
  fs::path before = fs::current_path();
  fs::current_path(dir);
  fn();
  fs::current_path(before);
}

inline const char* kFullExample = R"(name: resnet-ddp
entrypoint: [python3, train.py, --epochs, 3]
working_dir: /tmp
num_workers: 4
resources_per_worker:
  CPU: 2
  GPU: 1
  memory: 4Gi
  trainium: 0.5
placement: spread
env:
  NCCL_DEBUG: INFO
  PORT: 8080
  VERBOSE: true
env_passthrough: [DVC_*, WANDB_API_KEY]
max_failures: 3
checkpoint:
  dir: /shared/ckpt
  keep: 5
config:
  lr: 0.1
  epochs: 10
  layers: [64, 32]
  optimizer: {name: adam, betas: [0.9, 0.999]}
  amp: false
  note: ~
timeout: 2h
dvclive: dvclive
)";

}  // namespace clusterd::testing
