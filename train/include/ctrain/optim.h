// SGD whose step updates all parameters of a group with a few multi-tensor
// ("foreach") kernels, as PyTorch's Python SGD does by default on GPUs,
// instead of libtorch's three or four kernels per parameter. On a GPU that is
// ResNet-18's 62 parameters in about 5 launches rather than about 190.
//
// It is a torch::optim::SGD: the same options, the same per-parameter state
// (momentum_buffer) and the same update formula, so checkpoints written with
// either load into the other, and on the CPU the numbers are bit for bit the
// same (tests/train/optim_test.cc).
#pragma once

#include <torch/torch.h>

namespace ctrain {
namespace optim {

class SGD : public torch::optim::SGD {
 public:
  using torch::optim::SGD::SGD;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace optim
}  // namespace ctrain
