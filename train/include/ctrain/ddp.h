// ctrain::prepare_model: data-parallel training in the way of PyTorch's
// DistributedDataParallel, for a libtorch module.
//
// What it does:
//  - moves the module to the context's device, then broadcasts every
//    parameter and buffer from rank 0, so all ranks start identical;
//  - puts the trainable parameters into buckets of about bucket_cap_bytes
//    (default 25 MiB; the first bucket 1 MiB, as PyTorch does, so the first
//    allreduce starts early), filled in reverse parameter order, because
//    backward produces the last layers' gradients first;
//  - hooks each parameter's gradient accumulator (as c10d's Reducer does):
//    when the last gradient of a bucket has been accumulated, that bucket's
//    gradients are copied into one flat tensor and an asynchronous allreduce
//    is launched, so communication overlaps the rest of the backward pass.
//    Buckets are launched strictly in order, so every rank issues the same
//    sequence of collectives;
//  - when backward() finishes (an autograd "final callback" queued at the
//    first hook of each backward), the remaining buckets are launched, all
//    allreduces are waited for, and each parameter's .grad() is replaced by
//    the average over ranks. So after loss.backward() returns, grads are
//    synchronized: no extra call is needed.
//
// Parameters that received no gradient in a step (unused branch) count as
// zero on that rank; they never block the others. A parameter that got no
// gradient on any rank ends with a zero (defined) gradient.
//
// no_sync(): while the guard lives, backward only accumulates locally (no
// communication). The first backward after it averages the accumulated sums,
// as torch's DDP.no_sync does.
//
// Buffers (e.g. BatchNorm running stats) are broadcast from rank 0 at the
// start of each forward() called through the wrapper while grad mode is on
// and sync is enabled (PyTorch's broadcast_buffers=True).
//
// Limits: dense gradients only; call prepare_model after moving/converting
// the module (it keeps the gradient accumulators of the parameters it saw);
// every rank must run backward the same number of times outside no_sync.
// With world size 1 nothing is hooked and nothing is communicated.
#pragma once

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "ctrain/context.h"

namespace ctrain {

struct DdpOptions {
  size_t bucket_cap_bytes = size_t(25) << 20;
  size_t first_bucket_cap_bytes = size_t(1) << 20;
  bool broadcast_buffers = true;
};

// The per-model synchronization state. Shared by the wrapper and the autograd
// hooks (which hold it weakly, so a dropped model leaves no dangling hook).
class GradSync : public std::enable_shared_from_this<GradSync> {
 public:
  static std::shared_ptr<GradSync> create(Context& ctx, torch::nn::Module& module,
                                          const DdpOptions& opts);
  ~GradSync();

  bool sync_enabled() const { return sync_enabled_; }
  void set_sync_enabled(bool on) { sync_enabled_ = on; }

  // Broadcasts the buffers from rank 0 (what forward() does).
  void sync_buffers();

  // For tests and benchmarks.
  size_t num_buckets() const;
  // Parameter indices (in module.parameters() order) of each bucket.
  std::vector<std::vector<size_t>> bucket_layout() const;
  // Allreduces launched so far (gradient buckets only).
  int64_t allreduces_launched() const;

  // Internal: called from the gradient-accumulator hooks / final callback.
  void on_grad_ready(size_t param_index);
  void finish_backward();

  struct Impl;

 private:
  GradSync() = default;
  std::unique_ptr<Impl> impl_;
  bool sync_enabled_ = true;
};

// RAII: gradient synchronization off while alive (restores the previous state).
class NoSyncGuard {
 public:
  explicit NoSyncGuard(GradSync& s) : sync_(&s), prev_(s.sync_enabled()) { s.set_sync_enabled(false); }
  ~NoSyncGuard() { if (sync_) sync_->set_sync_enabled(prev_); }
  NoSyncGuard(NoSyncGuard&& o) noexcept : sync_(o.sync_), prev_(o.prev_) { o.sync_ = nullptr; }
  NoSyncGuard(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(const NoSyncGuard&) = delete;
  NoSyncGuard& operator=(NoSyncGuard&&) = delete;

 private:
  GradSync* sync_;
  bool prev_;
};

// A module holder (e.g. torch::nn::Linear, or a TORCH_MODULE of yours) with
// gradient synchronization attached. Use it like the holder: model->..., and
// call model(x) / model.forward(x) so buffers are synced as documented above.
template <class Holder>
class DistributedModel {
 public:
  DistributedModel(Holder module, std::shared_ptr<GradSync> sync)
      : module_(std::move(module)), sync_(std::move(sync)) {}

  auto operator->() { return module_.operator->(); }
  auto operator->() const { return module_.operator->(); }
  Holder& module() { return module_; }
  torch::nn::Module& base() { return *module_.ptr(); }

  template <class... Args>
  auto forward(Args&&... args) {
    if (sync_->sync_enabled() && torch::GradMode::is_enabled()) sync_->sync_buffers();
    return module_->forward(std::forward<Args>(args)...);
  }
  template <class... Args>
  auto operator()(Args&&... args) {
    return forward(std::forward<Args>(args)...);
  }

  // Gradient accumulation without communication while the guard lives.
  NoSyncGuard no_sync() { return NoSyncGuard(*sync_); }
  GradSync& grad_sync() { return *sync_; }

 private:
  Holder module_;
  std::shared_ptr<GradSync> sync_;
};

// Wraps a module for data-parallel training under ctrain::context() (init()
// is called if it was not). All ranks must call it, with the same model shape.
template <class Holder>
DistributedModel<Holder> prepare_model(Holder module, const DdpOptions& opts = {}) {
  Context& ctx = context();
  module->to(ctx.device());
  auto sync = GradSync::create(ctx, *module.ptr(), opts);
  return DistributedModel<Holder>(std::move(module), std::move(sync));
}

}  // namespace ctrain
