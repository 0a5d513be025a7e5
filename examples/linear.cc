// The linear regression of Ray's multi-node PyTorch tutorial, with ctrain:
// nn.Linear(1, 1) fitted to y = 2x + 1 (plus a little noise) with MSE and Adam,
// data sharded across ranks, a report and a checkpoint every epoch.
//
//   linear [--epochs 20] [--lr 0.1] [--batch-size 32] [--samples 1000] [--threads N]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ctrain/ctrain.h"
#include "example_main.h"

namespace {
int run(int argc, char** argv) {
  int64_t epochs = 20, batch = 32, samples = 1000, threads = 0;
  double lr = 0.1;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (i + 1 >= argc || k == "--help") {
      std::fprintf(stderr, "usage: linear [--epochs N] [--lr X] [--batch-size N] [--samples N] [--threads N]\n");
      return k == "--help" ? 0 : 2;
    }
    std::string v = argv[++i];
    if (k == "--epochs") epochs = std::stoll(v);
    else if (k == "--lr") lr = std::stod(v);
    else if (k == "--batch-size") batch = std::stoll(v);
    else if (k == "--samples") samples = std::stoll(v);
    else if (k == "--threads") threads = std::stoll(v);
    else {
      std::fprintf(stderr, "linear: unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  auto& ctx = ctrain::init();
  // A preemption's SIGTERM leaves the epoch under way its grace to finish.
  ctrain::catch_sigterm();
  torch::set_num_threads(static_cast<int>(threads > 0 ? threads : 1));

  // Same data on every rank (fixed seed); the sampler gives each its shard.
  torch::manual_seed(0);
  torch::Tensor x = torch::rand({samples, 1}) * 10;
  torch::Tensor y = 2 * x + 1 + 0.1 * torch::randn({samples, 1});
  auto dataset = torch::data::datasets::TensorDataset(torch::cat({x, y}, 1))
                     .map(torch::data::transforms::Stack<torch::data::TensorExample>());
  auto loader = ctrain::sharded_loader(dataset, static_cast<size_t>(batch));

  const torch::Device device = ctx.device();  // the rank's GPU on a CUDA build
  torch::nn::Linear net(1, 1);
  net->to(device);
  auto model = ctrain::prepare_model(net);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(lr));
  const int64_t start = ctrain::resume(model, opt);
  for (int64_t epoch = start; epoch < epochs; ++epoch) {
    loader->set_epoch(static_cast<uint64_t>(epoch));
    torch::Tensor sums = torch::zeros({2}, torch::kFloat64);
    for (auto& b : *loader) {
      torch::Tensor xb = b.data.narrow(1, 0, 1).to(device), yb = b.data.narrow(1, 1, 1).to(device);
      opt.zero_grad();
      torch::Tensor loss = torch::mse_loss(model(xb), yb);
      loss.backward();
      opt.step();
      sums[0] += loss.item<double>();
      sums[1] += 1;
    }
    ctx.allreduce_sum(sums);
    ctrain::report({{"epoch", static_cast<double>(epoch)},
                    {"loss", (sums[0] / sums[1]).item<double>()},
                    {"weight", model->weight.item<double>()},
                    {"bias", model->bias.item<double>()}},
                   ctrain::save_checkpoint(model, opt, epoch));
    // Preempted (or stopped): this epoch is stored, the next attempt starts after it.
    if (ctrain::stop_requested(ctx)) {
      if (ctx.is_main()) std::printf("stopping after epoch %lld, stored: told to make room\n", static_cast<long long>(epoch));
      ctx.shutdown();
      return 0;
    }
  }
  if (ctx.is_main()) {
    std::printf("learned y = %.4f x + %.4f (true: y = 2x + 1)\n", model->weight.item<double>(),
                model->bias.item<double>());
  }
  ctx.shutdown();
  return 0;
}
}  // namespace

int main(int argc, char** argv) { return examples::RunMain("linear", run, argc, argv); }
