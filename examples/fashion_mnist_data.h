// Fashion-MNIST data for examples/fashion_mnist: Debian's gzipped IDX files
// (dataset-fashion-mnist) read with zlib, normalized in memory, served as
// batches, and the test-set score that training and --evaluate share.
#pragma once

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace fashion_mnist {

// Reads a gzipped IDX file: big-endian magic, dimension sizes, then uint8 data.
inline torch::Tensor read_idx_gz(const std::string& path, uint32_t expected_magic) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  auto read_exact = [&](void* p, size_t n) {
    if (gzread(f, p, static_cast<unsigned>(n)) != static_cast<int>(n)) {
      gzclose(f);
      throw std::runtime_error("short read in " + path);
    }
  };
  auto be32 = [&]() {
    unsigned char b[4];
    read_exact(b, 4);
    return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3];
  };
  const uint32_t magic = be32();
  if (magic != expected_magic) {
    gzclose(f);
    throw std::runtime_error(path + ": not an IDX file of the expected kind");
  }
  std::vector<int64_t> dims(magic & 0xff);
  int64_t total = 1;
  for (auto& d : dims) total *= (d = be32());
  torch::Tensor t = torch::empty(dims, torch::kUInt8);
  read_exact(t.data_ptr<uint8_t>(), static_cast<size_t>(total));
  gzclose(f);
  return t;
}

// Images as float N x 1 x 28 x 28, normalized with the training set's mean/std.
struct Split {
  torch::Tensor images, labels;
};
inline Split load_split(const std::string& dir, const std::string& prefix) {
  Split s;
  torch::Tensor raw = read_idx_gz(dir + "/" + prefix + "-images-idx3-ubyte.gz", 0x00000803);
  s.images = ((raw.to(torch::kFloat32) / 255.0f - 0.2860f) / 0.3530f).unsqueeze(1);
  s.labels = read_idx_gz(dir + "/" + prefix + "-labels-idx1-ubyte.gz", 0x00000801).to(torch::kLong);
  return s;
}

// A batch dataset over in-memory tensors: one index_select per batch instead
// of stacking 64 single examples.
class TensorBatches : public torch::data::datasets::BatchDataset<TensorBatches, torch::data::Example<>,
                                                                  std::vector<size_t>> {
 public:
  explicit TensorBatches(Split s) : s_(std::move(s)) {}
  torch::data::Example<> get_batch(std::vector<size_t> idx) override {
    torch::Tensor i = torch::tensor(std::vector<int64_t>(idx.begin(), idx.end()), torch::kLong);
    return {s_.images.index_select(0, i), s_.labels.index_select(0, i)};
  }
  torch::optional<size_t> size() const override { return static_cast<size_t>(s_.labels.size(0)); }

 private:
  Split s_;
};

// {correct predictions, images} over one rank's share of the test set, as
// float64, for the caller to sum across ranks. The set is cut into chunks of
// 1000 images and rank r takes chunks r, r + world, ...: disjoint, no padding
// (which would count twice), and each chunk is the same batch whatever the
// world size, so a model scores exactly the same alone (--evaluate) as in the
// job that trained it. Runs in eval mode and leaves the model in eval mode.
// Chunks go to wherever the model is (a GPU, on a CUDA build).
template <class Model>
torch::Tensor count_correct(Model& model, const Split& test, int rank, int world) {
  constexpr int64_t kChunk = 1000;
  torch::NoGradGuard no_grad;
  model->eval();
  const torch::Device device = model->parameters().front().device();
  const int64_t n = test.labels.size(0);
  torch::Tensor counts = torch::zeros({2}, torch::kFloat64);
  for (int64_t start = rank * kChunk; start < n; start += world * kChunk) {
    const int64_t len = std::min(kChunk, n - start);
    torch::Tensor pred = model->forward(test.images.narrow(0, start, len).to(device)).argmax(1);
    counts[0] += pred.eq(test.labels.narrow(0, start, len).to(device)).sum().item<int64_t>();
    counts[1] += len;
  }
  return counts;
}

}  // namespace fashion_mnist
