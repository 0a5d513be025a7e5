#include "ctrain/optim.h"

#include <sstream>
#include <string>
#include <type_traits>

namespace ctrain {
namespace optim {
namespace {

// The key under which torch::optim keeps a parameter's state: its
// TensorImpl's address, as a string in libtorch 1.x and as the pointer in 2.x.
template <typename Key>
Key state_key(const torch::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream s;  // what c10::guts::to_string wrote
    s << p.unsafeGetTensorImpl();
    return s.str();
  } else {
    return static_cast<Key>(p.unsafeGetTensorImpl());
  }
}

}  // namespace

torch::Tensor SGD::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  using Key = typename std::decay_t<decltype(state_)>::key_type;
  for (auto& group : param_groups_) {
    const auto& o = static_cast<const torch::optim::SGDOptions&>(group.options());
    std::vector<torch::Tensor> params, grads;
    for (const auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      params.push_back(p);
      grads.push_back(p.grad());
    }
    if (params.empty()) continue;
    // d_p = grad + weight_decay * p (a new list: the gradients stay as they are)
    if (o.weight_decay() != 0) grads = at::_foreach_add(grads, params, o.weight_decay());
    std::vector<torch::Tensor> steps = grads;
    if (o.momentum() != 0) {
      // buf = momentum * buf + (1 - dampening) * d_p; a first step's buf is d_p itself.
      std::vector<torch::Tensor> bufs, old_bufs, old_grads;
      for (size_t i = 0; i < params.size(); ++i) {
        const Key key = state_key<Key>(params[i]);
        auto it = state_.find(key);
        torch::Tensor buf;
        if (it == state_.end()) {
          buf = grads[i].clone().detach();
          auto state = std::make_unique<torch::optim::SGDParamState>();
          state->momentum_buffer(buf);
          state_[key] = std::move(state);
        } else {
          buf = static_cast<torch::optim::SGDParamState&>(*it->second).momentum_buffer();
          old_bufs.push_back(buf);
          old_grads.push_back(grads[i]);
        }
        bufs.push_back(buf);
      }
      if (!old_bufs.empty()) {
        at::_foreach_mul_(old_bufs, o.momentum());
        at::_foreach_add_(old_bufs, old_grads, 1 - o.dampening());
      }
      steps = o.nesterov() ? at::_foreach_add(grads, bufs, o.momentum()) : bufs;
    }
    at::_foreach_add_(params, steps, -o.lr());
  }
  return loss;
}

}  // namespace optim
}  // namespace ctrain
