// The trained model of examples/fashion_mnist as a file: what --save-model
// writes and --evaluate reads.
//
// Format: one torch archive (torch::serialize::OutputArchive; a zip that
// torch.jit.load opens too) holding the network's parameters and buffers as
// torch::nn::Module::save writes them, the same entries as a checkpoint's
// model.pt, plus a nested archive "fashion_mnist" with
//   model          string  "mlp" or "cnn": the network to build
//   epochs         int     epochs it was trained for
//   test_accuracy  double  the test accuracy its run reported
// One file per model, so a job's `outputs: [model.pt]` ships all of it.
//
// save_model_file writes <path>.tmp-<pid> beside path, fsyncs it, renames it
// over path and fsyncs the folder: a reader sees the old file or the new one,
// never half of one.
//
// open_model takes what --evaluate names: such a file, a checkpoint folder
// (checkpoint_<epoch>/ with model.pt and meta.json, as ctrain::save_checkpoint
// writes it) or a checkpoint's model.pt. A checkpoint records no model kind;
// it is read from the parameters (names and shapes fit the MLP or the CNN).
// Every failure is a std::runtime_error of one line that says what to do.
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>

#include <torch/torch.h>

#include "ctrain/checkpoint.h"
#include "fashion_mnist_nets.h"

namespace fashion_mnist {

struct ModelInfo {
  std::string model;           // "mlp" or "cnn"
  int64_t epochs = -1;         // -1: not recorded (a checkpoint)
  double test_accuracy = -1;   // -1: not recorded
};

namespace detail {

namespace fs = std::filesystem;
constexpr const char* kMetaKey = "fashion_mnist";

inline void fsync_path(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot open " + p.string() + " to fsync it");
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw std::runtime_error("fsync failed for " + p.string());
}

inline std::string shape(const torch::Tensor& t) {
  std::string s = "[";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

// Why the archive cannot be loaded into m ("" when it can): every parameter
// and buffer present with the same shape. Module::load itself would take a
// tensor of another shape without a word.
inline std::string mismatch(const torch::nn::Module& m, torch::serialize::InputArchive& ar,
                            const std::string& prefix = "") {
  auto check = [&](const std::string& key, const torch::Tensor& want) -> std::string {
    torch::Tensor got;
    if (!ar.try_read(key, got)) return "no " + prefix + key;
    if (!got.sizes().equals(want.sizes())) return prefix + key + " is " + shape(got) + ", not " + shape(want);
    return "";
  };
  for (const auto& p : m.named_parameters(/*recurse=*/false)) {
    if (auto why = check(p.key(), p.value()); !why.empty()) return why;
  }
  for (const auto& b : m.named_buffers(/*recurse=*/false)) {
    if (auto why = check(b.key(), b.value()); !why.empty()) return why;
  }
  for (const auto& c : m.named_children()) {
    torch::serialize::InputArchive sub;
    if (!ar.try_read(c.key(), sub)) return "no " + prefix + c.key();
    if (auto why = mismatch(*c.value(), sub, prefix + c.key() + "."); !why.empty()) return why;
  }
  return "";
}

}  // namespace detail

// REQUIRES: net is the network info.model names. Run by rank 0 alone.
inline void save_model_file(const std::string& path_s, torch::nn::Module& net, const ModelInfo& info) {
  namespace fs = std::filesystem;
  const fs::path path(path_s);
  const fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const fs::path tmp = folder / (path.filename().string() + ".tmp-" + std::to_string(::getpid()));
  torch::serialize::OutputArchive ar, meta;
  net.save(ar);
  meta.write("model", c10::IValue(info.model));
  meta.write("epochs", c10::IValue(info.epochs));
  meta.write("test_accuracy", c10::IValue(info.test_accuracy));
  ar.write(detail::kMetaKey, meta);
  fs::create_directories(folder);
  try {
    ar.save_to(tmp.string());
    detail::fsync_path(tmp);
    fs::rename(tmp, path);
  } catch (...) {
    std::error_code ec;
    fs::remove(tmp, ec);
    throw;
  }
  detail::fsync_path(folder);
}

// What is wrong with --save-model PATH that can be told before training
// rather than after it: PATH names a folder. Makes nothing.
inline void check_save_path(const std::string& path_s) {
  namespace fs = std::filesystem;
  const fs::path path(path_s);
  if (path.filename().empty() || fs::is_directory(path)) {
    throw std::runtime_error("--save-model " + path_s + ": that is a folder; give a file name, e.g. " +
                             (path / "model.pt").string());
  }
}

struct OpenedModel {
  std::string file;   // the archive read: PATH, or PATH/model.pt for a checkpoint folder
  ModelInfo info;     // info.model is always set
  bool recorded = false;  // the kind came from the file (--save-model), not from its parameters
  torch::serialize::InputArchive archive;
};

inline OpenedModel open_model(const std::string& path) {
  namespace fs = std::filesystem;
  OpenedModel m;
  m.file = path;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (!fs::exists(status)) throw std::runtime_error("--evaluate " + path + ": no such file or folder");
  if (fs::is_directory(status)) {
    const fs::path dir(path);
    if (!fs::exists(dir / "model.pt")) {
      const std::string newest = ctrain::latest_checkpoint(path);
      throw std::runtime_error(
          "--evaluate " + path + ": a folder without model.pt" +
          (newest.empty() ? "; give a model file (--save-model) or a checkpoint folder (checkpoint_<epoch>/)"
                          : "; it holds checkpoints: give one, e.g. the newest " + newest));
    }
    if (!fs::exists(dir / "meta.json")) {
      throw std::runtime_error("--evaluate " + path + ": an incomplete checkpoint (no meta.json); give a complete one");
    }
    m.file = (dir / "model.pt").string();
  }
  try {
    m.archive.load_from(m.file, torch::kCPU);  // a model trained on a GPU scores on the CPU too
  } catch (const std::exception&) {  // c10::Error: its message is a paragraph about zip records
    throw std::runtime_error("--evaluate " + m.file + ": not a model file (not a torch archive)");
  }

  torch::serialize::InputArchive meta;
  c10::IValue v;
  if (m.archive.try_read(detail::kMetaKey, meta) && meta.try_read("model", v) && v.isString()) {
    m.recorded = true;
    m.info.model = v.toStringRef();
    if (meta.try_read("epochs", v) && v.isInt()) m.info.epochs = v.toInt();
    if (meta.try_read("test_accuracy", v) && v.isDouble()) m.info.test_accuracy = v.toDouble();
    std::string why;
    if (m.info.model == "mlp") why = detail::mismatch(*Mlp(), m.archive);
    else if (m.info.model == "cnn") why = detail::mismatch(*Cnn(), m.archive);
    else why = "unknown model '" + m.info.model + "'";
    if (!why.empty()) throw std::runtime_error("--evaluate " + m.file + ": a damaged " + m.info.model + " model (" + why + ")");
    return m;
  }
  const std::string not_mlp = detail::mismatch(*Mlp(), m.archive);
  const std::string not_cnn = detail::mismatch(*Cnn(), m.archive);
  if (not_mlp.empty()) m.info.model = "mlp";
  else if (not_cnn.empty()) m.info.model = "cnn";
  else throw std::runtime_error("--evaluate " + m.file + ": a torch archive but not a fashion_mnist model (as an mlp: " +
                                not_mlp + "; as a cnn: " + not_cnn + ")");
  return m;
}

}  // namespace fashion_mnist
