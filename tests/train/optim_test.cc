// ctrain::optim::SGD (multi-tensor step) against libtorch's own SGD: the
// same numbers, bit for bit on the CPU, and state that moves between them.
#include <sstream>

#include "ctrain/ctrain.h"

// libtorch brings glog, whose CHECK() would silently replace Catch's.
#undef CHECK
#include <catch2/catch.hpp>

namespace {

struct NetImpl : torch::nn::Module {
  NetImpl() {
    a = register_module("a", torch::nn::Linear(6, 5));
    b = register_module("b", torch::nn::Linear(5, 3));
    unused = register_module("unused", torch::nn::Linear(2, 2));  // never gets a gradient
  }
  torch::Tensor forward(const torch::Tensor& x) { return b(torch::tanh(a(x))); }
  torch::nn::Linear a{nullptr}, b{nullptr}, unused{nullptr};
};
TORCH_MODULE(Net);

// Two nets with the same weights.
std::pair<Net, Net> twin_nets() {
  torch::manual_seed(7);
  Net x, y;
  torch::NoGradGuard ng;
  auto px = x->parameters(), py = y->parameters();
  for (size_t i = 0; i < px.size(); ++i) py[i].copy_(px[i]);
  return {x, y};
}

void train_step(Net& net, torch::optim::Optimizer& opt, int64_t step) {
  torch::manual_seed(100 + step);  // the same batch for both nets
  const torch::Tensor x = torch::randn({8, 6}), y = torch::randn({8, 3});
  opt.zero_grad();
  torch::mse_loss(net(x), y).backward();
  opt.step();
}

// Saves from's state and loads it into to, through bytes as a checkpoint would.
void copy_state(torch::optim::Optimizer& from, torch::optim::Optimizer& to) {
  std::stringstream bytes;
  torch::serialize::OutputArchive out;
  from.save(out);
  out.save_to(bytes);
  torch::serialize::InputArchive in;
  in.load_from(bytes);
  to.load(in);
}

bool same_params(Net& x, Net& y) {
  auto px = x->parameters(), py = y->parameters();
  for (size_t i = 0; i < px.size(); ++i) {
    if (!torch::equal(px[i], py[i])) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("ctrain SGD takes the same steps as libtorch's SGD, bit for bit on the CPU") {
  struct Case {
    const char* name;
    torch::optim::SGDOptions options;
  };
  const std::vector<Case> cases = {
      {"plain", torch::optim::SGDOptions(0.1)},
      {"momentum", torch::optim::SGDOptions(0.1).momentum(0.9)},
      {"dampening and weight decay", torch::optim::SGDOptions(0.05).momentum(0.8).dampening(0.1).weight_decay(1e-3)},
      {"nesterov", torch::optim::SGDOptions(0.05).momentum(0.9).nesterov(true)},
      {"weight decay alone", torch::optim::SGDOptions(0.1).weight_decay(0.01)},
  };
  for (const auto& c : cases) {
    SECTION(c.name) {
      auto [mine, theirs] = twin_nets();
      ctrain::optim::SGD opt_mine(mine->parameters(), c.options);
      torch::optim::SGD opt_theirs(theirs->parameters(), c.options);
      for (int64_t s = 0; s < 10; ++s) {
        train_step(mine, opt_mine, s);
        train_step(theirs, opt_theirs, s);
      }
      CHECK(same_params(mine, theirs));
      CHECK_FALSE(torch::equal(mine->a->weight, twin_nets().first->a->weight));  // it did train
      CHECK(mine->unused->weight.equal(twin_nets().first->unused->weight));      // no gradient, no step
    }
  }
}

TEST_CASE("momentum state saved by ctrain SGD loads into libtorch's SGD and back") {
  const auto options = torch::optim::SGDOptions(0.1).momentum(0.9);
  auto [mine, theirs] = twin_nets();
  ctrain::optim::SGD opt_mine(mine->parameters(), options);
  torch::optim::SGD opt_theirs(theirs->parameters(), options);
  for (int64_t s = 0; s < 3; ++s) train_step(mine, opt_mine, s);
  {
    torch::NoGradGuard ng;
    auto pm = mine->parameters(), pt = theirs->parameters();
    for (size_t i = 0; i < pm.size(); ++i) pt[i].copy_(pm[i]);
  }
  // ctrain -> libtorch: the momentum buffers carry over, so the next steps agree.
  copy_state(opt_mine, opt_theirs);
  for (int64_t s = 3; s < 6; ++s) {
    train_step(mine, opt_mine, s);
    train_step(theirs, opt_theirs, s);
  }
  CHECK(same_params(mine, theirs));

  // libtorch -> ctrain, into a fresh optimizer.
  ctrain::optim::SGD resumed(mine->parameters(), options);
  copy_state(opt_theirs, resumed);
  for (int64_t s = 6; s < 9; ++s) {
    train_step(mine, resumed, s);
    train_step(theirs, opt_theirs, s);
  }
  CHECK(same_params(mine, theirs));
}
