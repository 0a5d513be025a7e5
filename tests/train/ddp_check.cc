// A small MLP trained for a fixed number of SGD steps with ctrain's DDP, with
// deterministic weights and data (formulas shared with ddp_reference.py), so
// runs can be compared number by number. Run it under RANK/WORLD_SIZE/
// MASTER_ADDR/MASTER_PORT (or alone); each rank writes its final parameters to
// <out>.rank<r>, one value per line. Exits non-zero when one of its own checks
// fails (bucket count, communication counts, no_sync silence).
//
//   ddp_check --out F [--mode plain|accum|unused] [--batch 4] [--steps 20]
//             [--bucket-cap BYTES] [--min-buckets N] [--save] [--resume]
// --save writes a checkpoint (CLUSTER_CHECKPOINT_DIR) after the last step;
// --resume starts from the newest one, at the step after it.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "ctrain/ctrain.h"

namespace {

constexpr int kIn = 8, kHidden = 16, kOut = 4;

// Shared with ddp_reference.py: param tensor t (module order), flat element i.
double init_value(int t, int64_t i) { return 0.3 * std::sin(0.37 * i + 1.1 * t + 0.2); }
double x_value(int64_t n, int j) { return std::cos(0.13 * n + 0.71 * j); }
double y_value(int64_t n, int c) { return std::sin(0.05 * n + 0.9 * c); }

struct NetImpl : torch::nn::Module {
  NetImpl(bool with_extra) {
    l1 = register_module("l1", torch::nn::Linear(kIn, kHidden));
    l2 = register_module("l2", torch::nn::Linear(kHidden, kHidden));
    l3 = register_module("l3", torch::nn::Linear(kHidden, kOut));
    if (with_extra) extra = register_module("extra", torch::nn::Linear(kIn, kOut));
  }
  torch::Tensor forward(torch::Tensor x, bool use_extra) {
    torch::Tensor h = torch::tanh(l1(x));
    h = torch::tanh(l2(h));
    torch::Tensor y = l3(h);
    if (use_extra) y = y + extra(x);
    return y;
  }
  torch::nn::Linear l1{nullptr}, l2{nullptr}, l3{nullptr}, extra{nullptr};
};
TORCH_MODULE(Net);

torch::Tensor batch_x(int64_t first, int64_t count, const torch::Device& dev) {
  torch::Tensor x = torch::empty({count, kIn}, torch::kFloat64);
  auto a = x.accessor<double, 2>();
  for (int64_t n = 0; n < count; ++n)
    for (int j = 0; j < kIn; ++j) a[n][j] = x_value(first + n, j);
  return x.to(dev);
}
torch::Tensor batch_y(int64_t first, int64_t count, const torch::Device& dev) {
  torch::Tensor y = torch::empty({count, kOut}, torch::kFloat64);
  auto a = y.accessor<double, 2>();
  for (int64_t n = 0; n < count; ++n)
    for (int c = 0; c < kOut; ++c) a[n][c] = y_value(first + n, c);
  return y.to(dev);
}

int fail(const std::string& why) {
  std::fprintf(stderr, "ddp_check: FAILED: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out, mode = "plain";
  int64_t batch = 4, steps = 20, min_buckets = 1;
  size_t bucket_cap = size_t(25) << 20;
  bool save = false, resume = false;
  for (int i = 1; i < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--save" || k == "--resume") {
      (k == "--save" ? save : resume) = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) return fail("missing value for " + k);
    std::string v = argv[i + 1];
    if (k == "--out") out = v;
    else if (k == "--mode") mode = v;
    else if (k == "--batch") batch = std::stoll(v);
    else if (k == "--steps") steps = std::stoll(v);
    else if (k == "--bucket-cap") bucket_cap = std::stoull(v);
    else if (k == "--min-buckets") min_buckets = std::stoll(v);
    else return fail("unknown flag " + k);
  }
  if (out.empty()) return fail("--out is required");
  torch::set_num_threads(1);
  torch::set_default_dtype(caffe2::TypeMeta::Make<double>());

  auto& ctx = ctrain::init();
  const int rank = ctx.rank(), world = ctx.world_size();

  Net net(mode == "unused");
  {
    torch::NoGradGuard ng;
    int t = 0;
    for (auto& p : net->parameters()) {
      auto flat = p.view(-1);
      for (int64_t i = 0; i < flat.numel(); ++i) flat[i] = init_value(t, i);
      ++t;
    }
  }
  // On a GPU build the ranks train on their GPUs (NCCL); weights are set
  // above on the CPU, where element-wise writes are cheap.
  const torch::Device dev = ctx.device();
  net->to(dev);
  ctrain::DdpOptions opts;
  opts.bucket_cap_bytes = opts.first_bucket_cap_bytes = bucket_cap;
  auto model = ctrain::prepare_model(net, opts);
  auto& sync = model.grad_sync();
  const int64_t buckets = static_cast<int64_t>(sync.num_buckets());
  if (world > 1 && buckets < min_buckets)
    return fail("expected at least " + std::to_string(min_buckets) + " buckets, got " +
                std::to_string(buckets));

  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.05).momentum(0.9));
  const int64_t global = batch * world;
  // A checkpoint's "epoch" is the last step it holds.
  const int64_t start = resume ? ctrain::resume(model, opt) : 0;
  for (int64_t s = start; s < steps; ++s) {
    const int64_t first = s * global + rank * batch;
    opt.zero_grad();
    if (mode == "accum") {
      // Two half batches; the first under no_sync must not communicate.
      const int64_t half = batch / 2;
      const int64_t before = sync.allreduces_launched();
      {
        auto guard = model.no_sync();
        auto loss = torch::mse_loss(model(batch_x(first, half, dev), false), batch_y(first, half, dev)) / 2;
        loss.backward();
      }
      if (sync.allreduces_launched() != before) return fail("communication inside no_sync");
      auto loss = torch::mse_loss(model(batch_x(first + half, batch - half, dev), false),
                                  batch_y(first + half, batch - half, dev)) / 2;
      loss.backward();
    } else {
      // unused: only rank 0, on even steps, reaches the extra layer.
      const bool use_extra = mode == "unused" && rank == 0 && s % 2 == 0;
      auto loss = torch::mse_loss(model(batch_x(first, batch, dev), use_extra), batch_y(first, batch, dev));
      loss.backward();
    }
    opt.step();
  }
  if (world > 1 && sync.allreduces_launched() != (steps - start) * buckets)
    return fail("expected " + std::to_string((steps - start) * buckets) + " allreduces, saw " +
                std::to_string(sync.allreduces_launched()));
  if (save) ctrain::save_checkpoint(model, opt, steps - 1);

  std::ofstream f(out + ".rank" + std::to_string(rank));
  char buf[40];
  for (auto& p : model->parameters()) {
    auto flat = p.detach().to(torch::kCPU).reshape(-1);
    for (int64_t i = 0; i < flat.numel(); ++i) {
      std::snprintf(buf, sizeof buf, "%.17g\n", flat[i].item<double>());
      f << buf;
    }
  }
  std::printf("ddp_check rank %d/%d mode=%s backend=%s device=%s buckets=%lld allreduces=%lld\n", rank, world,
              mode.c_str(), ctx.backend_name(), dev.str().c_str(), static_cast<long long>(buckets),
              static_cast<long long>(sync.allreduces_launched()));
  ctx.shutdown();
  return 0;
}
