// DistributedSampler sharding and checkpoint save/resume, in one process
// (world size 1 for the checkpoint part; the sampler is given its rank).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "ctrain/ctrain.h"

// libtorch brings glog, whose CHECK() would silently replace Catch's (it
// only aborts on failure and is not counted): drop it before Catch defines its own.
#undef CHECK
#include <catch2/catch.hpp>

namespace fs = std::filesystem;

namespace {
std::vector<size_t> shard(size_t n, int world, int rank, uint64_t epoch, ctrain::SamplerOptions o = {}) {
  ctrain::DistributedSampler s(n, world, rank, o);
  s.set_epoch(epoch);
  s.reset();
  return s.indices();
}
}  // namespace

TEST_CASE("shards are disjoint, cover the dataset and are padded from the start") {
  const size_t n = 10;
  const int world = 3;
  std::vector<size_t> all;
  for (int r = 0; r < world; ++r) {
    auto s = shard(n, world, r, 0);
    CHECK(s.size() == 4);  // ceil(10 / 3)
    all.insert(all.end(), s.begin(), s.end());
  }
  CHECK(std::set<size_t>(all.begin(), all.end()).size() == n);  // everything covered
  CHECK(all.size() == 12);  // two repeated as padding
  // Padding repeats the permutation's beginning: the last rank's last index
  // is the permutation's first element, i.e. rank 0's first.
  CHECK(shard(n, world, 2, 0).back() == shard(n, world, 1, 0).front());

  ctrain::SamplerOptions o;
  o.shuffle = false;
  CHECK((shard(n, world, 0, 0, o) == std::vector<size_t>{0, 3, 6, 9}));
  CHECK((shard(n, world, 1, 0, o) == std::vector<size_t>{1, 4, 7, 0}));
  o.drop_last = true;
  CHECK((shard(n, world, 1, 0, o) == std::vector<size_t>{1, 4, 7}));
}

TEST_CASE("order is the same on all ranks for an epoch and changes with the epoch and seed") {
  CHECK((shard(100, 2, 0, 5) == shard(100, 2, 0, 5)));
  CHECK((shard(100, 2, 0, 5) != shard(100, 2, 0, 6)));
  ctrain::SamplerOptions o;
  o.seed = 7;
  CHECK((shard(100, 2, 0, 5, o) != shard(100, 2, 0, 5)));
  // Matches torch.utils.data.DistributedSampler: randperm(generator seeded seed+epoch).
  auto gen = at::detail::createCPUGenerator(0 + 5);
  auto perm = torch::randperm(100, gen, torch::kLong);
  CHECK(shard(100, 2, 1, 5)[0] == static_cast<size_t>(perm[1].item<int64_t>()));
}

TEST_CASE("sharded_loader follows set_epoch through the DataLoader's copy of the sampler") {
  auto data = torch::arange(20, torch::kFloat32).unsqueeze(1);
  auto ds = torch::data::datasets::TensorDataset(data).map(torch::data::transforms::Stack<torch::data::TensorExample>());
  auto loader = ctrain::sharded_loader(ds, 8);
  CHECK(loader->num_batches() == 3);
  auto epoch_order = [&](uint64_t e) {
    loader->set_epoch(e);
    std::vector<int64_t> seen;
    for (auto& b : *loader) {
      for (int64_t i = 0; i < b.data.size(0); ++i) seen.push_back(b.data[i][0].item<int64_t>());
    }
    return seen;
  };
  auto e0 = epoch_order(0), e1 = epoch_order(1);
  CHECK(e0.size() == 20);
  CHECK(std::set<int64_t>(e0.begin(), e0.end()).size() == 20);
  CHECK(e0 != e1);
  CHECK(e0 == epoch_order(0));
}

namespace {
struct TmpDir {
  fs::path path = fs::temp_directory_path() / ("ctrain_ckpt_test_" + std::to_string(::getpid()));
  TmpDir() {
    fs::remove_all(path);
    ::setenv("CLUSTER_CHECKPOINT_DIR", path.c_str(), 1);
  }
  ~TmpDir() {
    fs::remove_all(path);
    ::unsetenv("CLUSTER_CHECKPOINT_DIR");
    ::unsetenv("CLUSTER_CHECKPOINT_KEEP");
  }
};
}  // namespace

TEST_CASE("checkpoints are written atomically, pruned, and resumed from the newest complete one") {
  TmpDir dir;
  torch::nn::Linear model(3, 2);
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(0.1));
  auto step = [&] {
    opt.zero_grad();
    model(torch::ones({4, 3})).sum().backward();
    opt.step();
  };

  CHECK(ctrain::resume(model, opt) == 0);  // nothing yet
  std::string last;
  // Pruning removes a checkpoint's folder, not what a link in it names.
  const fs::path outside = dir.path.string() + "_outside";
  fs::create_directories(outside);
  std::ofstream(outside / "f") << "keep me";
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    step();
    last = ctrain::save_checkpoint(model, opt, epoch, {{"accuracy", 0.5}});
    if (epoch == 0) fs::create_symlink(outside, dir.path / "checkpoint_000000" / "link");
  }
  CHECK(fs::exists(outside / "f"));
  fs::remove_all(outside);
  CHECK(last == (dir.path / "checkpoint_000002").string());
  CHECK(fs::exists(dir.path / "checkpoint_000002" / "model.pt"));
  CHECK(fs::exists(dir.path / "checkpoint_000002" / "optimizer.pt"));
  CHECK(fs::exists(dir.path / "checkpoint_000001"));
  CHECK_FALSE(fs::exists(dir.path / "checkpoint_000000"));  // keep = 2
  std::ifstream meta(dir.path / "checkpoint_000002" / "meta.json");
  std::string json((std::istreambuf_iterator<char>(meta)), std::istreambuf_iterator<char>());
  CHECK(json.rfind("{\"epoch\":2,", 0) == 0);
  CHECK(json.find("\"extra\":{\"accuracy\":0.5}") != std::string::npos);

  // A half-written newer checkpoint (no meta.json) and a tmp folder are ignored.
  fs::create_directories(dir.path / "checkpoint_000009");
  fs::create_directories(dir.path / ".tmp-checkpoint_000010-1");
  std::ofstream(dir.path / ".tmp-checkpoint_000010-1" / "meta.json") << "{}";

  const auto saved_w = model->weight.clone();
  // Adam's moment state must come back too: one more step from the restored
  // state must equal one more step from the original.
  step();
  const auto expected_w = model->weight.clone();

  torch::nn::Linear fresh(3, 2);
  torch::optim::Adam fresh_opt(fresh->parameters(), torch::optim::AdamOptions(0.1));
  CHECK(ctrain::resume(fresh, fresh_opt) == 3);
  CHECK(torch::equal(fresh->weight, saved_w));
  fresh_opt.zero_grad();
  fresh(torch::ones({4, 3})).sum().backward();
  fresh_opt.step();
  CHECK(torch::allclose(fresh->weight, expected_w, 1e-6, 1e-7));

  ::setenv("CLUSTER_CHECKPOINT_KEEP", "0", 1);
  for (int64_t epoch = 3; epoch < 6; ++epoch) ctrain::save_checkpoint(model, opt, epoch);
  int64_t newest = -1;
  CHECK(ctrain::latest_checkpoint(dir.path.string(), &newest) == (dir.path / "checkpoint_000005").string());
  CHECK(newest == 5);
  CHECK(fs::exists(dir.path / "checkpoint_000001"));  // keep all
  CHECK_FALSE(fs::exists(dir.path / ".tmp-checkpoint_000010-1"));  // stale tmp cleaned
}

TEST_CASE("without CLUSTER_CHECKPOINT_DIR nothing is written") {
  ::unsetenv("CLUSTER_CHECKPOINT_DIR");
  torch::nn::Linear model(3, 2);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  CHECK(ctrain::save_checkpoint(model, opt, 0).empty());
  CHECK(ctrain::resume(model, opt) == 0);
}

TEST_CASE("alone, prepare_model hooks nothing and training works") {
  auto& ctx = ctrain::init();
  REQUIRE(ctx.world_size() == 1);
  auto model = ctrain::prepare_model(torch::nn::Linear(4, 1));
  CHECK(model.grad_sync().num_buckets() == 0);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1));
  model(torch::ones({2, 4})).sum().backward();
  opt.step();
  CHECK(model.grad_sync().allreduces_launched() == 0);
  CHECK(model->weight.grad().defined());
}
