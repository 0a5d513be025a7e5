// Bucketed gradient allreduce driven by autograd hooks (see ddp.h).
#include "ctrain/ddp.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/utils/lambda_post_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace ctrain {

struct Bucket {
  std::vector<size_t> params;    // indices into Impl::params
  std::vector<int64_t> offsets;  // element offset of each param in `flat`
  torch::Tensor flat;            // one contiguous tensor: what is allreduced
  size_t pending = 0;            // grads still to arrive in this backward
  bool launched = false;
  c10::intrusive_ptr<c10d::Work> work;
};

struct GradSync::Impl {
  Context* ctx = nullptr;
  std::vector<torch::Tensor> params;   // trainable parameters, module order
  std::vector<torch::Tensor> buffers;
  std::vector<size_t> bucket_of;       // param index -> bucket index
  std::vector<size_t> slot_of;         // param index -> position in its bucket
  std::vector<Bucket> buckets;         // in launch order (last layers first)
  // Kept alive so the same accumulator (and our hook on it) is used by every
  // graph; autograd itself only holds them weakly.
  std::vector<std::shared_ptr<torch::autograd::Node>> accumulators;
  std::vector<bool> ready;             // grad arrived in the current backward
  bool in_backward = false;
  size_t next_to_launch = 0;
  int64_t launched_total = 0;
  std::mutex mu;
};

namespace {

// Splits params (visited in reverse) into buckets of at most cap bytes, a new
// bucket whenever dtype or device changes (one flat tensor per bucket).
void assign_buckets(GradSync::Impl& s, const DdpOptions& opts) {
  const size_t n = s.params.size();
  s.bucket_of.assign(n, 0);
  s.slot_of.assign(n, 0);
  size_t bytes = 0;
  for (size_t k = n; k-- > 0;) {
    const torch::Tensor& p = s.params[k];
    const size_t pbytes = static_cast<size_t>(p.numel()) * p.element_size();
    // The first bucket is smaller so that communication starts early.
    const size_t cap = s.buckets.size() == 1
                           ? std::min(opts.first_bucket_cap_bytes, opts.bucket_cap_bytes)
                           : opts.bucket_cap_bytes;
    bool fresh = s.buckets.empty();
    if (!fresh) {
      const torch::Tensor& first = s.params[s.buckets.back().params.front()];
      fresh = first.scalar_type() != p.scalar_type() || first.device() != p.device() ||
              (bytes > 0 && bytes + pbytes > cap);
    }
    if (fresh) {
      s.buckets.emplace_back();
      bytes = 0;
    }
    Bucket& b = s.buckets.back();
    s.bucket_of[k] = s.buckets.size() - 1;
    s.slot_of[k] = b.params.size();
    b.params.push_back(k);
    bytes += pbytes;
  }
  for (Bucket& b : s.buckets) {
    int64_t total = 0;
    for (size_t k : b.params) {
      b.offsets.push_back(total);
      total += s.params[k].numel();
    }
    const torch::Tensor& p0 = s.params[b.params.front()];
    b.flat = torch::zeros({total}, p0.options().requires_grad(false));
  }
}

torch::Tensor slice(Bucket& b, size_t slot, const torch::Tensor& like) {
  return b.flat.narrow(0, b.offsets[slot], like.numel()).view(like.sizes());
}

// Copies param k's local gradient (zero if it has none) into its bucket.
void stage_grad(GradSync::Impl& s, size_t k) {
  Bucket& b = s.buckets[s.bucket_of[k]];
  torch::Tensor dst = slice(b, s.slot_of[k], s.params[k]);
  const torch::Tensor& g = s.params[k].grad();
  if (!g.defined()) {
    dst.zero_();
  } else {
    if (g.is_sparse()) throw std::runtime_error("ctrain: sparse gradients are not supported");
    dst.copy_(g);
  }
}

// Launches every bucket that is complete, in bucket order only: a bucket
// that filled early waits for its predecessors, so all ranks issue their
// allreduces in the same sequence (Gloo matches collectives by order).
void launch_in_order(GradSync::Impl& s) {
  while (s.next_to_launch < s.buckets.size() && s.buckets[s.next_to_launch].pending == 0) {
    Bucket& b = s.buckets[s.next_to_launch++];
    // Divide first (as torch's DDP does): keeps half-precision sums in range.
    b.flat.div_(s.ctx->world_size());
    std::vector<torch::Tensor> t{b.flat};
    b.work = s.ctx->process_group()->allreduce(t);
    b.launched = true;
    ++s.launched_total;
  }
}

void begin_backward(GradSync::Impl& s) {
  s.in_backward = true;
  s.next_to_launch = 0;
  std::fill(s.ready.begin(), s.ready.end(), false);
  for (Bucket& b : s.buckets) {
    b.pending = b.params.size();
    b.launched = false;
    b.work.reset();
  }
}

}  // namespace

std::shared_ptr<GradSync> GradSync::create(Context& ctx, torch::nn::Module& module,
                                           const DdpOptions& opts) {
  std::shared_ptr<GradSync> sync(new GradSync());
  sync->impl_ = std::make_unique<Impl>();
  Impl& s = *sync->impl_;
  s.ctx = &ctx;
  for (const auto& p : module.parameters()) {
    if (p.requires_grad()) s.params.push_back(p);
  }
  s.buffers = module.buffers();
  if (ctx.world_size() == 1) return sync;  // alone: no buckets, no hooks
  // NCCL reduces GPU tensors only: say so here rather than at the first
  // backward, deep inside c10d.
  for (const auto& p : s.params) {
    if (!ctx.device().is_cuda() || p.is_cuda()) continue;
    throw std::runtime_error("ctrain: prepare_model: the model has parameters on " + p.device().str() +
                             " but this rank communicates through NCCL on " + ctx.device().str() +
                             ": move the model there first (model->to(ctrain::context().device()))");
  }

  // Identical start on all ranks: rank 0's weights win.
  {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> all = module.parameters();
    for (auto& b : s.buffers) all.push_back(b);
    ctx.broadcast(all, 0);
  }
  if (!opts.broadcast_buffers) s.buffers.clear();

  assign_buckets(s, opts);
  s.ready.assign(s.params.size(), false);
  std::weak_ptr<GradSync> weak = sync;
  for (size_t k = 0; k < s.params.size(); ++k) {
    auto acc = torch::autograd::impl::grad_accumulator(s.params[k]);
    // The post hook runs after AccumulateGrad has added this backward's
    // gradient into param.grad(), i.e. when the final value is known.
    acc->add_post_hook(std::make_unique<torch::autograd::utils::LambdaPostHook>(
        [weak, k](const torch::autograd::variable_list& outputs,
                  const torch::autograd::variable_list& /*inputs*/) {
          if (auto self = weak.lock()) self->on_grad_ready(k);
          return outputs;
        }));
    s.accumulators.push_back(std::move(acc));
  }
  return sync;
}

GradSync::~GradSync() = default;

void GradSync::on_grad_ready(size_t k) {
  if (!sync_enabled_) return;  // no_sync: let gradients accumulate locally
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.in_backward) {
    begin_backward(s);
    // Runs once when this backward pass is complete, on the caller's thread.
    std::weak_ptr<GradSync> weak = weak_from_this();
    torch::autograd::Engine::get_default_engine().queue_callback([weak] {
      if (auto self = weak.lock()) self->finish_backward();
    });
  }
  if (s.ready[k]) return;  // same parameter reached twice in one backward
  s.ready[k] = true;
  stage_grad(s, k);
  Bucket& b = s.buckets[s.bucket_of[k]];
  if (--b.pending == 0) launch_in_order(s);
}

void GradSync::finish_backward() {
  Impl& s = *impl_;
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.in_backward) return;
  s.in_backward = false;
  torch::NoGradGuard no_grad;
  // Parameters that got no gradient this step: take whatever they hold
  // (zero, or sums kept from no_sync steps) so their bucket can go.
  for (size_t k = 0; k < s.params.size(); ++k) {
    if (!s.ready[k]) {
      s.ready[k] = true;
      stage_grad(s, k);
      --s.buckets[s.bucket_of[k]].pending;
    }
  }
  launch_in_order(s);
  for (Bucket& b : s.buckets) {
    b.work->wait();
    for (size_t slot = 0; slot < b.params.size(); ++slot) {
      torch::Tensor& p = s.params[b.params[slot]];
      torch::Tensor avg = slice(b, slot, p);
      if (p.grad().defined()) {
        p.mutable_grad().copy_(avg);
      } else {
        p.mutable_grad() = avg.clone();
      }
    }
    b.work.reset();
  }
}

void GradSync::sync_buffers() {
  Impl& s = *impl_;
  if (s.ctx->world_size() == 1 || s.buffers.empty()) return;
  torch::NoGradGuard no_grad;
  // Coalesced per dtype: one broadcast instead of one per BatchNorm buffer.
  std::map<c10::ScalarType, std::vector<torch::Tensor>> by_type;
  for (auto& b : s.buffers) by_type[b.scalar_type()].push_back(b);
  for (auto& kv : by_type) {
    std::vector<torch::Tensor> flat_parts;
    for (auto& b : kv.second) flat_parts.push_back(b.reshape(-1));
    torch::Tensor flat = torch::cat(flat_parts);
    s.ctx->broadcast(flat, 0);
    int64_t off = 0;
    for (auto& b : kv.second) {
      b.copy_(flat.narrow(0, off, b.numel()).view(b.sizes()));
      off += b.numel();
    }
  }
}

size_t GradSync::num_buckets() const { return impl_->buckets.size(); }

std::vector<std::vector<size_t>> GradSync::bucket_layout() const {
  std::vector<std::vector<size_t>> out;
  for (const Bucket& b : impl_->buckets) out.push_back(b.params);
  return out;
}

int64_t GradSync::allreduces_launched() const { return impl_->launched_total; }

}  // namespace ctrain
