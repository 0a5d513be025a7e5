#include "ctrain/sampler.h"

#include <ATen/CPUGeneratorImpl.h>

#include <stdexcept>
#include <string>

namespace ctrain {

DistributedSampler::DistributedSampler(size_t dataset_size, int num_replicas, int rank,
                                       SamplerOptions opts)
    : size_(dataset_size), replicas_(num_replicas), rank_(rank), opts_(opts) {
  if (num_replicas < 1 || rank < 0 || rank >= num_replicas) {
    throw std::invalid_argument("ctrain::DistributedSampler: rank " + std::to_string(rank) +
                                " is not in [0, " + std::to_string(num_replicas) + ")");
  }
  reset();
}

void DistributedSampler::set_epoch(uint64_t epoch) { shared_->epoch = epoch; }
uint64_t DistributedSampler::epoch() const { return shared_->epoch; }

size_t DistributedSampler::num_samples() const {
  const size_t r = static_cast<size_t>(replicas_);
  return opts_.drop_last ? size_ / r : (size_ + r - 1) / r;
}

void DistributedSampler::reset(torch::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  pos_ = 0;
  indices_.clear();
  if (size_ == 0) return;

  std::vector<size_t> order(size_);
  if (opts_.shuffle) {
    // Same generator and randperm as PyTorch's sampler: identical orders on
    // every rank, and a different one each epoch.
    auto gen = at::detail::createCPUGenerator(opts_.seed + shared_->epoch);
    torch::Tensor perm = torch::randperm(static_cast<int64_t>(size_), gen, torch::kLong);
    const int64_t* p = perm.data_ptr<int64_t>();
    for (size_t i = 0; i < size_; ++i) order[i] = static_cast<size_t>(p[i]);
  } else {
    for (size_t i = 0; i < size_; ++i) order[i] = i;
  }

  const size_t total = num_samples() * static_cast<size_t>(replicas_);
  // Pad by repeating from the start (several times if the dataset is smaller
  // than the number of ranks), or cut the tail with drop_last.
  for (size_t i = size_; order.size() < total; ++i) order.push_back(order[i % size_]);
  order.resize(total);

  indices_.reserve(num_samples());
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(replicas_)) {
    indices_.push_back(order[i]);
  }
}

torch::optional<std::vector<size_t>> DistributedSampler::next(size_t batch_size) {
  if (pos_ >= indices_.size()) return torch::nullopt;
  const size_t end = std::min(indices_.size(), pos_ + batch_size);
  std::vector<size_t> batch(indices_.begin() + static_cast<std::ptrdiff_t>(pos_),
                            indices_.begin() + static_cast<std::ptrdiff_t>(end));
  pos_ = end;
  return batch;
}

void DistributedSampler::save(torch::serialize::OutputArchive& archive) const {
  archive.write("ctrain_sampler_epoch",
                torch::tensor(static_cast<int64_t>(shared_->epoch), torch::kInt64), true);
  archive.write("ctrain_sampler_pos", torch::tensor(static_cast<int64_t>(pos_), torch::kInt64), true);
}

void DistributedSampler::load(torch::serialize::InputArchive& archive) {
  torch::Tensor epoch = torch::empty({}, torch::kInt64), pos = torch::empty({}, torch::kInt64);
  archive.read("ctrain_sampler_epoch", epoch, true);
  archive.read("ctrain_sampler_pos", pos, true);
  shared_->epoch = static_cast<uint64_t>(epoch.item<int64_t>());
  reset();
  pos_ = std::min(indices_.size(), static_cast<size_t>(pos.item<int64_t>()));
}

}  // namespace ctrain
