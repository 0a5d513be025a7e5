// ResNet-18 on synthetic images: a throughput benchmark of ctrain's DDP.
//
//   resnet_synthetic [--batch-size 32] [--steps 20] [--warmup 3] [--image-size 224]
//                    [--dtype float32|float64|bfloat16] [--num-classes 1000]
//                    [--threads N] [--no-comm] [--optimizer ctrain|libtorch]
//
// Each rank trains on one fixed random batch (data loading is not what is
// measured). --no-comm runs every step under no_sync(): the same work without
// any gradient communication, the baseline for DDP overhead. Rank 0 prints the
// mean step time over the timed steps and the global samples/s, and a
// machine-readable line "RESULT step_ms=... samples_per_s=...". Built against
// a CUDA libtorch it trains on the rank's GPU and times each step to the end
// of its GPU work. --optimizer libtorch steps with torch::optim::SGD (a few
// kernels per parameter) instead of ctrain::optim::SGD (a few per step).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "ctrain/ctrain.h"
#include "example_main.h"
#include "resnet18.h"

namespace {

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "resnet_synthetic: %s\nusage: resnet_synthetic [--batch-size N] [--steps N] [--warmup N]"
               " [--image-size N] [--dtype float32|float64|bfloat16] [--num-classes N] [--threads N]"
               " [--no-comm] [--optimizer ctrain|libtorch]\n",
               why.c_str());
  std::exit(2);
}

}  // namespace

namespace {
int run(int argc, char** argv) {
  int64_t batch = 32, steps = 20, warmup = 3, image = 224, classes = 1000, threads = 0;
  std::string dtype_name = "float32", optimizer = "ctrain";
  bool no_comm = false;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--no-comm") { no_comm = true; continue; }
    if (k == "--help" || k == "-h") usage("ResNet-18 DDP throughput on synthetic data");
    if (i + 1 >= argc) usage("missing value for " + k);
    std::string v = argv[++i];
    if (k == "--batch-size") batch = std::stoll(v);
    else if (k == "--steps") steps = std::stoll(v);
    else if (k == "--warmup") warmup = std::stoll(v);
    else if (k == "--image-size") image = std::stoll(v);
    else if (k == "--num-classes") classes = std::stoll(v);
    else if (k == "--threads") threads = std::stoll(v);
    else if (k == "--dtype") dtype_name = v;
    else if (k == "--optimizer") optimizer = v;
    else usage("unknown flag " + k);
  }
  torch::Dtype dtype;
  if (dtype_name == "float32") dtype = torch::kFloat32;
  else if (dtype_name == "float64") dtype = torch::kFloat64;
  else if (dtype_name == "bfloat16") dtype = torch::kBFloat16;
  else usage("unknown --dtype " + dtype_name);
  if (optimizer != "ctrain" && optimizer != "libtorch") usage("unknown --optimizer " + optimizer);

  auto& ctx = ctrain::init();
  // Ranks sharing a machine: one thread each unless told otherwise, so they
  // do not fight over cores.
  if (threads <= 0) threads = ctx.world_size() > 1 ? 1 : torch::get_num_threads();
  torch::set_num_threads(static_cast<int>(threads));
  torch::manual_seed(1234 + ctx.rank());

  examples::ResNet18 net(classes);
  net->to(ctx.device(), dtype);
  auto model = ctrain::prepare_model(net);
  const auto sgd_options = torch::optim::SGDOptions(0.01).momentum(0.9);
  std::unique_ptr<torch::optim::SGD> opt_ptr =
      optimizer == "ctrain" ? std::make_unique<ctrain::optim::SGD>(model->parameters(), sgd_options)
                            : std::make_unique<torch::optim::SGD>(model->parameters(), sgd_options);
  torch::optim::SGD& opt = *opt_ptr;
  auto opts = torch::TensorOptions().dtype(dtype).device(ctx.device());
  torch::Tensor x = torch::randn({batch, 3, image, image}, opts);
  torch::Tensor y = torch::randint(classes, {batch}, torch::TensorOptions().dtype(torch::kLong).device(ctx.device()));

  using clock = std::chrono::steady_clock;
  double timed_s = 0;
  for (int64_t s = 0; s < warmup + steps; ++s) {
    ctx.barrier();  // steps start together, so a slow rank's wait is not hidden
    const auto t0 = clock::now();
    opt.zero_grad();
    if (no_comm) {
      auto guard = model.no_sync();
      torch::cross_entropy_loss(model(x).to(torch::kFloat32), y).backward();
    } else {
      torch::cross_entropy_loss(model(x).to(torch::kFloat32), y).backward();
    }
    opt.step();
    // CUDA work is queued, not done: wait for it, as the Python side does.
    if (ctx.device().is_cuda()) torch::cuda::synchronize();
    const double dt = std::chrono::duration<double>(clock::now() - t0).count();
    if (s >= warmup) timed_s += dt;
  }
  // The slowest rank sets the pace of synchronous training.
  torch::Tensor t = torch::tensor({timed_s}, torch::kFloat64).to(ctx.device());  // NCCL reduces GPU tensors only
  if (ctx.world_size() > 1) {
    std::vector<torch::Tensor> v{t};
    c10d::AllreduceOptions o;
    o.reduceOp = c10d::ReduceOp::MAX;
    ctx.process_group()->allreduce(v, o)->wait();
  }
  const double step_ms = 1000.0 * t.item<double>() / static_cast<double>(steps);
  const double samples_per_s = static_cast<double>(batch * ctx.world_size()) / (step_ms / 1000.0);
  if (ctx.is_main()) {
    std::printf("resnet18 %s image=%lld batch/rank=%lld ranks=%d threads=%lld device=%s comm=%s optimizer=%s\n",
                dtype_name.c_str(), static_cast<long long>(image), static_cast<long long>(batch), ctx.world_size(),
                static_cast<long long>(threads), ctx.device().str().c_str(), no_comm ? "off" : ctx.backend_name(),
                optimizer.c_str());
    std::printf("step time: %.1f ms, samples/s: %.2f\n", step_ms, samples_per_s);
    std::printf("RESULT step_ms=%.3f samples_per_s=%.3f\n", step_ms, samples_per_s);
  }
  ctx.shutdown();
  return 0;
}
}  // namespace

int main(int argc, char** argv) { return examples::RunMain("resnet_synthetic", run, argc, argv); }
