// Checkpoints in CLUSTER_CHECKPOINT_DIR (DESIGN.md rule 6).
//
// Layout: <dir>/checkpoint_<epoch, 6 digits>/{model.pt, optimizer.pt, meta.json}.
// save_checkpoint: rank 0 writes everything into <dir>/.tmp-checkpoint_<epoch>-<pid>,
// fsyncs the files and the folder, renames it to checkpoint_<epoch> (atomic:
// a reader sees the whole checkpoint or none) and fsyncs <dir>. Then it keeps
// the newest CLUSTER_CHECKPOINT_KEEP complete checkpoints (default 2, 0 = all)
// and removes stale .tmp-* folders left by crashed attempts. All ranks then
// meet in a barrier, so all must call it. Returns the checkpoint's path on
// every rank, or "" (and does nothing, no barrier) when CLUSTER_CHECKPOINT_DIR
// is unset.
//
// resume: rank 0 picks the newest COMPLETE checkpoint (a checkpoint_* folder
// with meta.json; .tmp-* folders are ignored), reads its files and broadcasts
// the bytes, so every rank loads the same state even when the folder is not
// on shared storage. Returns the epoch to start from (saved epoch + 1), or 0
// when there is nothing to resume. All ranks must call it.
#pragma once

#include <cstdint>
#include <string>

#include <torch/torch.h>

#include "ctrain/agent_wire.h"
#include "ctrain/ddp.h"

namespace ctrain {

std::string save_checkpoint(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                            int64_t epoch, const Metrics& extra = {});
int64_t resume(torch::nn::Module& model, torch::optim::Optimizer& optimizer);

template <class H>
std::string save_checkpoint(DistributedModel<H>& model, torch::optim::Optimizer& optimizer,
                            int64_t epoch, const Metrics& extra = {}) {
  return save_checkpoint(model.base(), optimizer, epoch, extra);
}
template <class H>
int64_t resume(DistributedModel<H>& model, torch::optim::Optimizer& optimizer) {
  return resume(model.base(), optimizer);
}
template <class M>
std::string save_checkpoint(torch::nn::ModuleHolder<M>& model, torch::optim::Optimizer& optimizer,
                            int64_t epoch, const Metrics& extra = {}) {
  return save_checkpoint(*model.ptr(), optimizer, epoch, extra);
}
template <class M>
int64_t resume(torch::nn::ModuleHolder<M>& model, torch::optim::Optimizer& optimizer) {
  return resume(*model.ptr(), optimizer);
}

// Helpers, exposed for tests and tools. The folder name of an epoch, the
// newest complete checkpoint in dir ("" if none) and its epoch (-1 if none).
std::string checkpoint_name(int64_t epoch);
std::string latest_checkpoint(const std::string& dir, int64_t* epoch = nullptr);

}  // namespace ctrain
