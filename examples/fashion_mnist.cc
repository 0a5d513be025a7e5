// Fashion-MNIST classification with ctrain: data-parallel over the ranks the
// job gives, reporting loss and test accuracy every epoch, checkpointing every
// epoch and resuming from the newest checkpoint at start.
//
//   fashion_mnist [--model mlp|cnn] [--epochs 5] [--lr 0.001] [--batch-size 64]
//                 [--data-dir /usr/share/datasets/fashion-mnist] [--threads N] [--seed 0]
//                 [--save-model PATH]
//   fashion_mnist --evaluate PATH [--model mlp|cnn] [--data-dir DIR] [--threads N]
//
// --batch-size is per rank. Optimizer: Adam for both models, lr 1e-3 for
// epochs 0-2, then halved every epoch. The run ends with "final test
// accuracy: 0.8731". Data and the test-set score: fashion_mnist_data.h; the
// networks: fashion_mnist_nets.h.
//
// --save-model PATH: when training ends, rank 0 writes the model for
// inference to PATH (relative to the working folder), atomically; see
// fashion_mnist_model_file.h for the format. Every rank may pass the flag.
//
// --evaluate PATH: load a model file written by --save-model, or a checkpoint
// folder (checkpoint_<epoch>/), score it on the test set alone (RANK and
// the like are ignored) and print "test accuracy: 0.8731", exactly what the
// run that trained it reported for it. --model is not needed (the file or
// its parameters say which network it is); when given it must match.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "ctrain/ctrain.h"
#include "example_main.h"
#include "fashion_mnist_data.h"
#include "fashion_mnist_model_file.h"
#include "fashion_mnist_nets.h"

namespace {

using namespace fashion_mnist;

struct Flags {
  std::string model = "cnn";
  bool model_given = false;
  int64_t epochs = 5;
  double lr = 1e-3;
  int64_t batch = 64;
  int64_t hidden = 512;    // the MLP's first hidden layer
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int64_t threads = 0;
  uint64_t seed = 0;
  std::string save_model;  // --save-model PATH
  std::string evaluate;    // --evaluate PATH
};

// --help: to stdout, status 0; a bad command line: to stderr, status 2.
[[noreturn]] void usage(const std::string& why, int status = 2) {
  std::fprintf(status == 0 ? stdout : stderr,
               "fashion_mnist: %s\n"
               "usage: fashion_mnist [--model mlp|cnn] [--epochs N] [--lr X] [--batch-size N (per rank)] [--hidden N]\n"
               "                     [--data-dir DIR] [--threads N] [--seed N] [--save-model PATH]\n"
               "       fashion_mnist --evaluate PATH [--model mlp|cnn] [--data-dir DIR] [--threads N]\n"
               "  --save-model PATH  when training ends, write the model for inference to PATH (rank 0)\n"
               "  --evaluate PATH    print the test accuracy of a --save-model file or a checkpoint\n"
               "                     folder (checkpoint_<epoch>/), alone, and exit\n"
               "  --hidden N         the MLP's first hidden layer (512)\n"
               "lr, batch_size, epochs and hidden in the job's config (a sweep's trial parameters)\n"
               "are the defaults; flags win over them\n",
               why.c_str());
  std::exit(status);
}

Flags parse(int argc, char** argv) {
  Flags f;
  // A sweep's trial finds its parameters in the config; flags still win.
  f.lr = ctrain::config_double("lr", f.lr);
  f.batch = ctrain::config_int("batch_size", f.batch);
  f.epochs = ctrain::config_int("epochs", f.epochs);
  f.hidden = ctrain::config_int("hidden", f.hidden);
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    if (k == "--help" || k == "-h") usage("train an MLP or a CNN on Fashion-MNIST", 0);
    if (i + 1 >= argc) usage("missing value for " + k);
    std::string v = argv[++i];
    if (k == "--model") f.model = v, f.model_given = true;
    else if (k == "--epochs") f.epochs = std::stoll(v);
    else if (k == "--lr") f.lr = std::stod(v);
    else if (k == "--batch-size") f.batch = std::stoll(v);
    else if (k == "--hidden") f.hidden = std::stoll(v);
    else if (k == "--data-dir") f.data_dir = v;
    else if (k == "--threads") f.threads = std::stoll(v);
    else if (k == "--seed") f.seed = std::stoull(v);
    else if (k == "--save-model" || k == "--evaluate") {
      if (v.empty()) usage(k + " needs a path");
      (k == "--save-model" ? f.save_model : f.evaluate) = v;
    }
    else usage("unknown flag " + k);
  }
  if (f.model != "mlp" && f.model != "cnn") usage("--model must be mlp or cnn");
  if (!f.evaluate.empty() && !f.save_model.empty()) usage("--evaluate and --save-model do not go together");
  if (f.epochs < 0 || f.batch <= 0 || f.lr <= 0 || f.hidden <= 0) {
    usage("--epochs, --batch-size, --hidden and --lr must be positive");
  }
  return f;
}

// Fraction of the test set classified correctly, over all ranks, by rank 0's
// model: the one the checkpoint and --save-model keep. Parameters agree on
// every rank, but each rank's last forward updated its own BatchNorm running
// stats, so the buffers are taken from rank 0 first (a no-op alone).
template <class Model>
double evaluate(Model& model, const Split& test, ctrain::Context& ctx) {
  model.grad_sync().sync_buffers();
  torch::Tensor counts = count_correct(model, test, ctx.rank(), ctx.world_size());
  ctx.allreduce_sum(counts);
  model->train();
  return counts[0].item<double>() / counts[1].item<double>();
}

template <class Net>
int train(Net net, const Flags& f, ctrain::Context& ctx) {
  const Split train_split = load_split(f.data_dir, "train");
  const Split test = load_split(f.data_dir, "t10k");

  const torch::Device device = ctx.device();  // the rank's GPU on a CUDA build
  net->to(device);
  auto model = ctrain::prepare_model(net);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(f.lr));
  ctrain::SamplerOptions so;
  so.seed = f.seed;
  auto loader = ctrain::sharded_loader(TensorBatches(train_split), static_cast<size_t>(f.batch), so);

  const int64_t start = ctrain::resume(model, opt);
  if (start > 0 && ctx.is_main()) std::printf("resumed from checkpoint: starting at epoch %lld\n", static_cast<long long>(start));
  double accuracy = start >= f.epochs ? evaluate(model, test, ctx) : 0.0;  // else the last epoch's
  for (int64_t epoch = start; epoch < f.epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    loader->set_epoch(static_cast<uint64_t>(epoch));
    // Step decay: full lr for 3 epochs, then halved each epoch. A function of
    // the epoch alone, so a resumed run continues the same schedule.
    const double lr = f.lr * std::pow(0.5, static_cast<double>(std::max<int64_t>(0, epoch - 2)));
    for (auto& group : opt.param_groups()) static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
    torch::Tensor loss_sum = torch::zeros({2}, torch::kFloat64);  // sum of losses, batches
    for (auto& batch : *loader) {
      opt.zero_grad();
      torch::Tensor loss =
          torch::nn::functional::cross_entropy(model(batch.data.to(device)), batch.target.to(device));
      loss.backward();  // gradients are averaged across ranks when this returns
      opt.step();
      loss_sum[0] += loss.item<double>();
      loss_sum[1] += 1;
    }
    ctx.allreduce_sum(loss_sum);
    const double train_loss = (loss_sum[0] / loss_sum[1]).item<double>();
    const double train_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    accuracy = evaluate(model, test, ctx);
    const std::string ckpt = ctrain::save_checkpoint(model, opt, epoch, {{"test_accuracy", accuracy}});
    ctrain::report({{"epoch", static_cast<double>(epoch)},
                    {"loss", train_loss},
                    {"accuracy", accuracy},
                    {"epoch_seconds", train_s}},
                   ckpt);
    // Preempted (or stopped): this epoch is stored, the next attempt starts after it.
    if (ctrain::stop_requested(ctx)) {
      if (ctx.is_main()) std::printf("stopping after epoch %lld, stored: told to make room\n", static_cast<long long>(epoch));
      return 0;
    }
  }
  if (ctx.is_main()) std::printf("final test accuracy: %.4f\n", accuracy);
  if (ctx.is_main() && !f.save_model.empty()) {
    const int64_t epochs = std::max(start, f.epochs);
    save_model_file(f.save_model, model.base(), {f.model, epochs, accuracy});
    std::printf("model saved: %s (%s, %lld epochs)\n", f.save_model.c_str(), f.model.c_str(),
                static_cast<long long>(epochs));
  }
  return 0;
}

// Torch threads: --threads, else CTRAIN_NUM_THREADS, else one per rank when
// several ranks share the machine, else torch's default.
int64_t pick_threads(const Flags& f, int world_size) {
  int64_t threads = f.threads;
  if (threads <= 0 && std::getenv("CTRAIN_NUM_THREADS")) threads = std::atoll(std::getenv("CTRAIN_NUM_THREADS"));
  if (threads <= 0) threads = world_size > 1 ? 1 : torch::get_num_threads();
  torch::set_num_threads(static_cast<int>(threads));
  return threads;
}

template <class Net>
double score(Net net, OpenedModel& m, const Split& test) {
  net->load(m.archive);
  torch::Tensor counts = count_correct(net, test, /*rank=*/0, /*world=*/1);
  return counts[0].item<double>() / counts[1].item<double>();
}

// --evaluate: alone, whatever RANK and the like say; no process group.
int evaluate_saved(const Flags& f) {
  OpenedModel m = open_model(f.evaluate);
  if (f.model_given && f.model != m.info.model) {
    throw std::runtime_error("--evaluate " + f.evaluate + " holds the " + m.info.model + " model, not the " +
                             f.model + " that --model asks for: pass --model " + m.info.model +
                             ", or leave --model out");
  }
  pick_threads(f, 1);
  const Split test = load_split(f.data_dir, "t10k");
  const double accuracy = m.info.model == "mlp" ? score(Mlp(), m, test) : score(Cnn(), m, test);
  if (m.recorded) {
    std::printf("fashion_mnist: %s: %s model, %lld epochs, saved with test accuracy %.4f\n", m.file.c_str(),
                m.info.model.c_str(), static_cast<long long>(m.info.epochs), m.info.test_accuracy);
  } else {
    std::printf("fashion_mnist: %s: %s model (told by its parameters)\n", m.file.c_str(), m.info.model.c_str());
  }
  std::printf("test accuracy: %.4f\n", accuracy);
  return 0;
}

int run(int argc, char** argv) {
  const Flags f = parse(argc, argv);
  if (!f.evaluate.empty()) return evaluate_saved(f);
  if (!f.save_model.empty()) check_save_path(f.save_model);  // now, not after training
  auto& ctx = ctrain::init();
  // A preemption's SIGTERM leaves the epoch under way its grace to finish.
  ctrain::catch_sigterm();
  const int64_t threads = pick_threads(f, ctx.world_size());
  // Same initial weights everywhere anyway (prepare_model broadcasts rank 0's),
  // the seed makes runs repeatable.
  torch::manual_seed(f.seed);
  if (ctx.is_main()) {
    std::printf("fashion_mnist: model=%s ranks=%d threads/rank=%lld batch/rank=%lld lr=%g epochs=%lld backend=%s\n",
                f.model.c_str(), ctx.world_size(), static_cast<long long>(threads),
                static_cast<long long>(f.batch), f.lr, static_cast<long long>(f.epochs), ctx.backend_name());
    std::fflush(stdout);
  }
  const int rc = f.model == "mlp" ? train(Mlp(f.hidden), f, ctx) : train(Cnn(), f, ctx);
  ctx.shutdown();
  return rc;
}
}  // namespace

int main(int argc, char** argv) { return examples::RunMain("fashion_mnist", run, argc, argv); }
