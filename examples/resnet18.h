// ResNet-18 (He et al. 2015, torchvision's layout: 7x7 stem, max pool, four
// stages of two BasicBlocks, global average pool, linear head), shared by
// resnet_synthetic and the train/ benchmark. bench/train/ddp_bench.py builds
// the identical network in Python, so both sides time the same model.
#pragma once

#include <torch/torch.h>

namespace examples {

struct BasicBlockImpl : torch::nn::Module {
  BasicBlockImpl(int64_t in, int64_t out, int64_t stride) {
    namespace nn = torch::nn;
    conv1 = register_module("conv1", nn::Conv2d(nn::Conv2dOptions(in, out, 3).stride(stride).padding(1).bias(false)));
    bn1 = register_module("bn1", nn::BatchNorm2d(out));
    conv2 = register_module("conv2", nn::Conv2d(nn::Conv2dOptions(out, out, 3).padding(1).bias(false)));
    bn2 = register_module("bn2", nn::BatchNorm2d(out));
    if (stride != 1 || in != out) {
      down_conv = register_module("down_conv", nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride(stride).bias(false)));
      down_bn = register_module("down_bn", nn::BatchNorm2d(out));
    }
  }
  torch::Tensor forward(torch::Tensor x) {
    torch::Tensor y = torch::relu(bn1(conv1(x)));
    y = bn2(conv2(y));
    torch::Tensor skip = down_conv ? down_bn(down_conv(x)) : x;
    return torch::relu(y + skip);
  }
  torch::nn::Conv2d conv1{nullptr}, conv2{nullptr}, down_conv{nullptr};
  torch::nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, down_bn{nullptr};
};
TORCH_MODULE(BasicBlock);

struct ResNet18Impl : torch::nn::Module {
  explicit ResNet18Impl(int64_t num_classes = 1000) {
    namespace nn = torch::nn;
    stem = register_module("stem", nn::Conv2d(nn::Conv2dOptions(3, 64, 7).stride(2).padding(3).bias(false)));
    bn = register_module("bn", nn::BatchNorm2d(64));
    layers = register_module("layers", nn::Sequential());
    int64_t in = 64;
    for (int64_t width : {64, 128, 256, 512}) {
      const int64_t stride = width == 64 ? 1 : 2;
      layers->push_back(BasicBlock(in, width, stride));
      layers->push_back(BasicBlock(width, width, 1));
      in = width;
    }
    fc = register_module("fc", nn::Linear(512, num_classes));
  }
  torch::Tensor forward(torch::Tensor x) {
    x = torch::relu(bn(stem(x)));
    x = torch::max_pool2d(x, 3, 2, 1);
    x = layers->forward(x);
    x = torch::adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc(x);
  }
  torch::nn::Conv2d stem{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Sequential layers{nullptr};
  torch::nn::Linear fc{nullptr};
};
TORCH_MODULE(ResNet18);

}  // namespace examples
