// ctrain::init(): from the worker environment to a process group.
//
// init() reads the variables described in env.h. With none set the program
// runs alone (world size 1, no store, no process group, every collective is a
// no-op). Otherwise rank 0 serves a c10d TCPStore at MASTER_ADDR:MASTER_PORT,
// every rank connects to it and joins a process group: Gloo on CPU, NCCL when
// this build has CUDA (CTRAIN_WITH_NCCL) and the rank sees a GPU. A half-set
// environment throws std::runtime_error naming the missing variables.
//
// Timeouts (store connect and collectives) are CTRAIN_TIMEOUT_S seconds,
// default 300: a peer that died is noticed as an exception, not a hang.
// GLOO_SOCKET_IFNAME picks the network interface as in PyTorch; without it
// Gloo binds CLUSTER_NODE_IP (set by clusterd), not the host name.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include <torch/torch.h>
#include <torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#endif
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "ctrain/env.h"

namespace ctrain {

// In libtorch 1.x ProcessGroupGloo/NCCL derive from ProcessGroup; from 2.0 on
// they derive from Backend. Both have the collectives we use with the same
// signatures, so the rest of ctrain is written against this alias.
#if TORCH_VERSION_MAJOR >= 2
using ProcessGroup = c10d::Backend;
#else
using ProcessGroup = c10d::ProcessGroup;
#endif

class Context {
 public:
  explicit Context(const DistEnv& env);
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  int rank() const { return env_.rank; }
  int world_size() const { return env_.world_size; }
  int local_rank() const { return env_.local_rank; }
  int local_world_size() const { return env_.local_world_size; }
  int node_rank() const { return env_.node_rank; }
  bool is_main() const { return env_.rank == 0; }
  // cuda:<local GPU> in a CUDA build that sees a GPU (collectives then go
  // through NCCL when world_size() > 1), else CPU (Gloo).
  torch::Device device() const { return device_; }
  // Null when world_size() == 1: nothing to talk to.
  const c10::intrusive_ptr<ProcessGroup>& process_group() const { return pg_; }
  const char* backend_name() const;

  // Blocking collectives; all are no-ops when world_size() == 1. A CPU tensor
  // is fine with NCCL too: it goes through this rank's GPU and back.
  void barrier();
  void broadcast(torch::Tensor& t, int root = 0);
  void broadcast(std::vector<torch::Tensor>& ts, int root = 0);
  void allreduce_sum(torch::Tensor& t);
  // Sum across ranks then divide by world size, in place.
  void allreduce_mean(torch::Tensor& t);

  // Ends this rank's part: a barrier (so rank 0's store outlives every peer's
  // last use) and the process group is released. Safe to call twice.
  void shutdown();

 private:
  void connect(std::chrono::milliseconds timeout);  // store + process group

  DistEnv env_;
  torch::Device device_{torch::kCPU};
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<ProcessGroup> pg_;
};

// Creates the process-wide context on the first call (all ranks must call it;
// it blocks until every rank has joined) and returns the same one afterwards.
Context& init();

// The process-wide context; calls init() when there is none yet.
Context& context();

}  // namespace ctrain
