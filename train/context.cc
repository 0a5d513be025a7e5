#include "ctrain/context.h"

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef CTRAIN_WITH_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace ctrain {
namespace {

std::chrono::milliseconds timeout_from_env() {
  const char* v = std::getenv("CTRAIN_TIMEOUT_S");
  long s = (v && *v) ? std::strtol(v, nullptr, 10) : 300;
  if (s <= 0) s = 300;
  return std::chrono::milliseconds(s * 1000);
}

// Where this rank's Gloo pairs listen and dial from. c10d's default binds
// to whatever the host name resolves to, which on Debian is a loopback
// address: peers on other machines then cannot connect (NOTES.md). So: the
// interface the user named, else the node's own address as clusterd gives
// it, else loopback for an all-local job, else c10d's default.
std::shared_ptr<::gloo::transport::Device> make_gloo_device(const std::string& master_addr) {
  if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME"); ifname && *ifname) {
    return c10d::ProcessGroupGloo::createDeviceForInterface(ifname);
  }
  if (const char* node_ip = std::getenv("CLUSTER_NODE_IP"); node_ip && *node_ip) {
    return c10d::ProcessGroupGloo::createDeviceForHostname(node_ip);
  }
  if (master_addr == "localhost" || master_addr.rfind("127.", 0) == 0) {
    return c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  }
  return c10d::ProcessGroupGloo::createDefaultDevice();
}

// A CUDA build runs each rank on a GPU when it sees one, also a rank that
// runs alone. CUDA_VISIBLE_DEVICES from clusterd usually leaves each rank
// exactly its own GPUs (none for a job that asked for none); the modulo also
// covers several local ranks sharing one visible set.
torch::Device pick_device(int local_rank) {
#ifdef CTRAIN_WITH_NCCL
  if (torch::cuda::is_available()) {
    const auto gpu = static_cast<c10::DeviceIndex>(local_rank % static_cast<int>(torch::cuda::device_count()));
    c10::cuda::set_device(gpu);
    return torch::Device(torch::kCUDA, gpu);
  }
#else
  (void)local_rank;
#endif
  return torch::Device(torch::kCPU);
}

// Runs `collective` on t where the process group can take it: NCCL works on
// GPU tensors only, so a CPU tensor (checkpoint bytes, an epoch number) goes
// to this rank's GPU and its result comes back into t.
template <typename Collective>
void on_device(const torch::Device& device, torch::Tensor& t, Collective&& collective) {
  if (!device.is_cuda() || t.device() == device) {
    collective(t);
    return;
  }
  torch::Tensor staged = t.to(device);
  collective(staged);
  t.copy_(staged);
}

std::mutex g_mu;
// Deliberately never destroyed: a process group torn down during static
// destruction races libtorch's own globals. shutdown() releases it early.
Context* g_ctx = nullptr;

}  // namespace

Context::Context(const DistEnv& env) : env_(env), device_(pick_device(env.local_rank)) {
  if (env_.world_size == 1) return;  // alone: no store, no process group
  const auto timeout = timeout_from_env();
  try {
    connect(timeout);
  } catch (const c10::Error& e) {
    // c10d says only "Socket Timeout" or similar; say what was being done.
    throw std::runtime_error(
        "ctrain: rank " + std::to_string(env_.rank) + " of " + std::to_string(env_.world_size) +
        " could not join the process group at " + env_.master_addr + ":" +
        std::to_string(env_.master_port) + " within " + std::to_string(timeout.count() / 1000) +
        " s (are all ranks started, and is MASTER_ADDR reachable?): " + e.what_without_backtrace());
  }
}

void Context::connect(std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(env_.master_port);
  opts.isServer = env_.rank == 0;
  opts.numWorkers = static_cast<std::size_t>(env_.world_size);
  opts.waitWorkers = false;  // the process group's own rendezvous waits for everyone
  opts.timeout = timeout;
  store_ = c10::make_intrusive<c10d::TCPStore>(env_.master_addr, opts);

#ifdef CTRAIN_WITH_NCCL
  if (device_.is_cuda()) {
    auto nopts = c10d::ProcessGroupNCCL::Options::create();
    nopts->timeout = timeout;
    pg_ = c10::make_intrusive<c10d::ProcessGroupNCCL>(store_, env_.rank, env_.world_size, nopts);
    return;
  }
#endif
  auto gopts = c10d::ProcessGroupGloo::Options::create();
  gopts->devices.push_back(make_gloo_device(env_.master_addr));
  gopts->timeout = timeout;
  pg_ = c10::make_intrusive<c10d::ProcessGroupGloo>(store_, env_.rank, env_.world_size, gopts);
}

const char* Context::backend_name() const {
  if (!pg_) return "none";
  return device_.is_cuda() ? "nccl" : "gloo";
}

void Context::barrier() {
  if (pg_) pg_->barrier()->wait();
}

void Context::broadcast(std::vector<torch::Tensor>& ts, int root) {
  if (!pg_ || ts.empty()) return;
  c10d::BroadcastOptions o;
  o.rootRank = root;
  // One collective per tensor keeps memory flat; called rarely (start, resume).
  for (auto& t : ts) {
    on_device(device_, t, [&](torch::Tensor& x) {
      std::vector<torch::Tensor> one{x};
      pg_->broadcast(one, o)->wait();
    });
  }
}

void Context::broadcast(torch::Tensor& t, int root) {
  std::vector<torch::Tensor> v{t};
  broadcast(v, root);
}

void Context::allreduce_sum(torch::Tensor& t) {
  if (!pg_) return;
  on_device(device_, t, [&](torch::Tensor& x) {
    std::vector<torch::Tensor> v{x};
    pg_->allreduce(v)->wait();
  });
}

void Context::allreduce_mean(torch::Tensor& t) {
  allreduce_sum(t);
  if (pg_) t.div_(env_.world_size);
}

void Context::shutdown() {
  if (!pg_) return;
  barrier();
#if defined(CTRAIN_WITH_NCCL) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4))
  // Released without shutdown(), NCCL's process group warns that it may leak
  // its communicators; Gloo's has nothing to shut down.
  if (device_.is_cuda()) static_cast<c10d::ProcessGroupNCCL&>(*pg_).shutdown();
#endif
  pg_.reset();
  store_.reset();
}

Context& init() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_ctx == nullptr) g_ctx = new Context(read_dist_env());
  return *g_ctx;
}

Context& context() { return init(); }

}  // namespace ctrain
