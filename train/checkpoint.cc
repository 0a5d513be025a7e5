#include "ctrain/checkpoint.h"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace fs = std::filesystem;

namespace ctrain {
namespace {

constexpr const char* kPrefix = "checkpoint_";
constexpr const char* kTmpPrefix = ".tmp-checkpoint_";

std::string env_str(const char* name) {
  const char* v = std::getenv(name);
  return (v && *v) ? v : "";
}

// Durability: data, then the folder entry. Errors are fatal to the save.
void fsync_path(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("ctrain: cannot open " + p.string() + " to fsync");
  int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw std::runtime_error("ctrain: fsync failed for " + p.string());
}

// Epoch from "checkpoint_000012", or -1 if the name is not one of ours.
int64_t epoch_of(const std::string& name) {
  const std::string pre = kPrefix;
  if (name.size() <= pre.size() || name.compare(0, pre.size(), pre) != 0) return -1;
  const std::string digits = name.substr(pre.size());
  if (digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

// Folders are listed and removed with POSIX calls, not std::filesystem's
// iterators: PyTorch's pip libtorch (2.5 and later, pytorch/pytorch#133437)
// exports the copy of libstdc++'s filesystem code it links statically, so a
// program built with a newer g++ gets some of those functions from libtorch
// and the rest from its own libstdc++. fs::remove_all of a full folder then
// can mix the two builds' recursive_directory_iterator. Seen on a GPU
// machine: rank 0 died of SIGSEGV at address 0 in the first save that pruned
// a checkpoint (docs/BENCHMARKS.md, "A save that prunes").

// Names in dir (not . or ..); none if it cannot be read.
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return names;
  while (const dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.emplace_back(e->d_name);
  }
  ::closedir(d);
  return names;
}

int remove_entry(const char* path, const struct stat*, int, struct FTW*) {
  return ::remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

// rm -rf: true if nothing is left at p (also when nothing was there).
bool remove_tree(const fs::path& p) {
  struct stat st;
  if (::lstat(p.c_str(), &st) != 0) return errno == ENOENT;
  // Depth first, links not followed: a link is removed, not what it names.
  return ::nftw(p.c_str(), remove_entry, 16, FTW_DEPTH | FTW_PHYS) == 0;
}

void remove_tree_or_throw(const fs::path& p) {
  if (!remove_tree(p)) throw std::runtime_error("ctrain: cannot remove " + p.string() + ": " + std::strerror(errno));
}

// Complete checkpoints in dir, oldest first.
std::vector<std::pair<int64_t, fs::path>> complete_checkpoints(const fs::path& dir) {
  std::vector<std::pair<int64_t, fs::path>> out;
  for (const std::string& name : names_in(dir)) {
    const int64_t ep = epoch_of(name);
    std::error_code ec;
    if (ep >= 0 && fs::is_directory(dir / name, ec) && fs::exists(dir / name / "meta.json", ec)) {
      out.emplace_back(ep, dir / name);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string iso_time_utc(std::time_t t) {
  char buf[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void write_meta(const fs::path& file, int64_t epoch, const Metrics& extra) {
  const auto now = std::chrono::system_clock::now();
  const int64_t ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count();
  std::string j = "{\"epoch\":" + std::to_string(epoch) + ",\"unix_ms\":" + std::to_string(ms) +
                  ",\"time\":" + json_string(iso_time_utc(std::chrono::system_clock::to_time_t(now))) +
                  ",\"extra\":{";
  for (size_t i = 0; i < extra.size(); ++i) {
    j += (i ? "," : "") + json_string(extra[i].first) + ":" + json_number(extra[i].second);
  }
  j += "}}\n";
  std::ofstream out(file, std::ios::binary);
  out << j;
  out.close();
  if (!out) throw std::runtime_error("ctrain: cannot write " + file.string());
}

void write_checkpoint_folder(const fs::path& dir, torch::nn::Module& model,
                             torch::optim::Optimizer& optimizer, int64_t epoch,
                             const Metrics& extra, const fs::path& final_path) {
  fs::create_directories(dir);
  const fs::path tmp = dir / (std::string(kTmpPrefix) + checkpoint_name(epoch).substr(11) + "-" +
                              std::to_string(::getpid()));
  remove_tree_or_throw(tmp);
  fs::create_directory(tmp);
  {
    torch::serialize::OutputArchive ar;
    model.save(ar);
    ar.save_to((tmp / "model.pt").string());
  }
  {
    torch::serialize::OutputArchive ar;
    optimizer.save(ar);
    ar.save_to((tmp / "optimizer.pt").string());
  }
  // meta.json last: its presence is what marks a checkpoint complete.
  write_meta(tmp / "meta.json", epoch, extra);
  for (const char* f : {"model.pt", "optimizer.pt", "meta.json"}) fsync_path(tmp / f);
  fsync_path(tmp);

  // Same epoch saved again (e.g. an attempt redid it): move the old one
  // aside first, because rename() cannot replace a non-empty folder.
  if (fs::exists(final_path)) {
    const fs::path old = dir / (std::string(".tmp-old-") + final_path.filename().string() + "-" +
                                std::to_string(::getpid()));
    remove_tree_or_throw(old);
    fs::rename(final_path, old);
    fs::rename(tmp, final_path);
    remove_tree_or_throw(old);
  } else {
    fs::rename(tmp, final_path);
  }
  fsync_path(dir);
}

void prune(const fs::path& dir) {
  const std::string keep_s = env_str("CLUSTER_CHECKPOINT_KEEP");
  const long keep = keep_s.empty() ? 2 : std::strtol(keep_s.c_str(), nullptr, 10);
  auto all = complete_checkpoints(dir);
  if (keep > 0 && all.size() > static_cast<size_t>(keep)) {
    for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) remove_tree_or_throw(all[i].second);
  }
  // Leftovers of crashed writers (another pid); ours was renamed already.
  for (const std::string& name : names_in(dir)) {
    if (name.rfind(".tmp-", 0) == 0) remove_tree(dir / name);
  }
}

std::vector<char> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("ctrain: cannot read checkpoint file " + p.string());
  return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Rank 0's bytes to every rank (length first, then the payload).
std::vector<char> broadcast_bytes(Context& ctx, std::vector<char> bytes) {
  if (ctx.world_size() == 1) return bytes;
  torch::Tensor len = torch::tensor({static_cast<int64_t>(bytes.size())}, torch::kInt64);
  ctx.broadcast(len, 0);
  const int64_t n = len.item<int64_t>();
  torch::Tensor buf = ctx.rank() == 0
                          ? torch::from_blob(bytes.data(), {n}, torch::kUInt8).clone()
                          : torch::empty({n}, torch::kUInt8);
  ctx.broadcast(buf, 0);
  const char* p = reinterpret_cast<const char*>(buf.data_ptr<uint8_t>());
  return std::vector<char>(p, p + n);
}

// Copies the archive's tensors into the module's own parameters and
// buffers. Module::load would swap their storage instead (Tensor::set_),
// which gives each parameter a new gradient accumulator: DDP's hooks stay on
// the old ones, and a resumed multi-rank run would train every rank alone.
void load_in_place(torch::nn::Module& module, torch::serialize::InputArchive& ar) {
  torch::NoGradGuard no_grad;
  auto copy = [](const std::string& key, torch::Tensor& into, const torch::Tensor& from) {
    if (!from.sizes().equals(into.sizes())) {
      throw std::runtime_error("ctrain: checkpoint tensor '" + key + "' has shape " + c10::str(from.sizes()) +
                               ", the model's has " + c10::str(into.sizes()));
    }
    into.copy_(from);
  };
  for (auto& p : module.named_parameters(/*recurse=*/false)) {
    torch::Tensor t;
    ar.read(p.key(), t);
    copy(p.key(), p.value(), t);
  }
  for (auto& b : module.named_buffers(/*recurse=*/false)) {
    torch::Tensor t;
    ar.read(b.key(), t, /*is_buffer=*/true);
    copy(b.key(), b.value(), t);
  }
  for (auto& child : module.named_children()) {
    torch::serialize::InputArchive sub;
    ar.read(child.key(), sub);
    load_in_place(*child.value(), sub);
  }
}

}  // namespace

std::string checkpoint_name(int64_t epoch) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%s%06lld", kPrefix, static_cast<long long>(epoch));
  return buf;
}

std::string latest_checkpoint(const std::string& dir, int64_t* epoch) {
  auto all = complete_checkpoints(dir);
  if (epoch) *epoch = all.empty() ? -1 : all.back().first;
  return all.empty() ? "" : all.back().second.string();
}

std::string save_checkpoint(torch::nn::Module& model, torch::optim::Optimizer& optimizer,
                            int64_t epoch, const Metrics& extra) {
  const std::string dir_s = env_str("CLUSTER_CHECKPOINT_DIR");
  if (dir_s.empty()) return "";
  Context& ctx = context();
  const fs::path dir(dir_s);
  const fs::path final_path = dir / checkpoint_name(epoch);
  if (ctx.rank() == 0) {
    write_checkpoint_folder(dir, model, optimizer, epoch, extra, final_path);
    prune(dir);
  }
  // Nobody moves on (or reports the path) before the checkpoint exists.
  ctx.barrier();
  return final_path.string();
}

int64_t resume(torch::nn::Module& model, torch::optim::Optimizer& optimizer) {
  const std::string dir = env_str("CLUSTER_CHECKPOINT_DIR");
  if (dir.empty()) return 0;
  Context& ctx = context();

  int64_t epoch = -1;
  std::vector<char> model_bytes, optim_bytes;
  if (ctx.rank() == 0) {
    const std::string path = latest_checkpoint(dir, &epoch);
    if (!path.empty()) {
      model_bytes = read_file(fs::path(path) / "model.pt");
      optim_bytes = read_file(fs::path(path) / "optimizer.pt");
    }
  }
  torch::Tensor ep = torch::tensor({epoch}, torch::kInt64);
  ctx.broadcast(ep, 0);
  epoch = ep.item<int64_t>();
  if (epoch < 0) return 0;

  model_bytes = broadcast_bytes(ctx, std::move(model_bytes));
  optim_bytes = broadcast_bytes(ctx, std::move(optim_bytes));
  {
    torch::serialize::InputArchive ar;
    ar.load_from(model_bytes.data(), model_bytes.size(), ctx.device());
    load_in_place(model, ar);
  }
  {
    torch::serialize::InputArchive ar;
    ar.load_from(optim_bytes.data(), optim_bytes.size(), ctx.device());
    optimizer.load(ar);
  }
  return epoch + 1;
}

}  // namespace ctrain
