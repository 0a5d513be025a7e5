// Sharding a torch::data dataset across ranks, like torch.utils.data's
// DistributedSampler.
//
// Every epoch the full index list 0..n-1 is permuted with a generator seeded
// by seed + epoch (torch::randperm, the same as PyTorch's sampler), so all
// ranks compute the same permutation without talking. It is padded to a
// multiple of the world size by repeating its beginning, and rank r takes
// positions r, r+R, r+2R, ...: shards are disjoint apart from the padding and
// all have ceil(n / R) indices, so every rank runs the same number of steps
// (which bucketed allreduce requires). With drop_last the tail is dropped
// instead (floor(n / R) each). set_epoch(e) must be called with the same e on
// every rank before iterating, or every epoch sees the same order.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "ctrain/context.h"

namespace ctrain {

struct SamplerOptions {
  bool shuffle = true;
  uint64_t seed = 0;
  bool drop_last = false;
};

class DistributedSampler : public torch::data::samplers::Sampler<std::vector<size_t>> {
 public:
  DistributedSampler(size_t dataset_size, int num_replicas, int rank, SamplerOptions opts = {});

  // Copies share the epoch: the handle a caller keeps and the copy inside a
  // DataLoader follow the same set_epoch(). Takes effect at the next reset().
  void set_epoch(uint64_t epoch);
  uint64_t epoch() const;

  // Rebuilds this rank's shard for the current epoch (DataLoader calls this
  // at begin()); new_size replaces the dataset size.
  void reset(torch::optional<size_t> new_size = torch::nullopt) override;
  torch::optional<std::vector<size_t>> next(size_t batch_size) override;
  void save(torch::serialize::OutputArchive& archive) const override;
  void load(torch::serialize::InputArchive& archive) override;

  // Indices per rank per epoch.
  size_t num_samples() const;
  // This rank's indices for the current epoch (after reset()).
  const std::vector<size_t>& indices() const { return indices_; }

 private:
  struct Shared {
    uint64_t epoch = 0;
  };
  size_t size_;
  int replicas_;
  int rank_;
  SamplerOptions opts_;
  std::shared_ptr<Shared> shared_ = std::make_shared<Shared>();
  std::vector<size_t> indices_;
  size_t pos_ = 0;
};

// A DataLoader over this rank's shard plus the sampler handle for set_epoch.
// Iterate with `for (auto& batch : *loader)`.
template <class Dataset>
class ShardedLoader {
 public:
  using Loader = torch::data::StatelessDataLoader<Dataset, DistributedSampler>;

  ShardedLoader(Dataset dataset, size_t batch_size, int replicas, int rank, SamplerOptions opts,
                torch::data::DataLoaderOptions loader_opts)
      : sampler_(dataset.size().value(), replicas, rank, opts),
        batch_size_(batch_size),
        loader_(torch::data::make_data_loader(std::move(dataset), sampler_,
                                              loader_opts.batch_size(batch_size))) {}

  void set_epoch(uint64_t epoch) { sampler_.set_epoch(epoch); }
  auto begin() { return loader_->begin(); }
  auto end() { return loader_->end(); }
  // Samples and batches per rank per epoch (the last batch may be short).
  size_t shard_size() const { return sampler_.num_samples(); }
  size_t num_batches() const { return (shard_size() + batch_size_ - 1) / batch_size_; }

 private:
  DistributedSampler sampler_;
  size_t batch_size_;
  std::unique_ptr<Loader> loader_;
};

// This rank's loader under ctrain::context(). The dataset must have a size()
// and batch requests of std::vector<size_t> indices (any torch::data dataset,
// e.g. one mapped with torch::data::transforms::Stack<>()).
template <class Dataset>
std::unique_ptr<ShardedLoader<Dataset>> sharded_loader(
    Dataset dataset, size_t batch_size, SamplerOptions opts = {},
    torch::data::DataLoaderOptions loader_opts = torch::data::DataLoaderOptions()) {
  Context& ctx = context();
  return std::make_unique<ShardedLoader<Dataset>>(std::move(dataset), batch_size,
                                                  ctx.world_size(), ctx.rank(), opts, loader_opts);
}

}  // namespace ctrain
