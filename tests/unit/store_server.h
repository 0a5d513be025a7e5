// The head's blob store served over real gRPC on a free loopback port, in
// the test process: what the tree transfer tests upload to and download
// from. Everything is removed when it goes out of scope.
#pragma once

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include "common/storage/blob_client.h"
#include "common/logging.h"
#include "daemon/rpc/store_service.h"
#include "daemon/store/blob_store.h"

namespace clusterd::testing {

class StoreServer {
 public:
  static constexpr const char* kToken = "store-test-token";

  // `capacity_bytes`: the store's cap (0: none).
  explicit StoreServer(int64_t capacity_bytes = 0) {
    // The store logs a line per blob; a test moves hundreds.
    while (old_level_ != LogLevel::kError && !LogEnabled(old_level_)) {
      old_level_ = LogLevel(static_cast<int>(old_level_) + 1);
    }
    SetLogLevel(LogLevel::kError);
    char dir[] = "/tmp/clusterd_store_test_XXXXXX";
    if (mkdtemp(dir) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = dir;
    auto store = BlobStore::Open({dir_, capacity_bytes});
    if (!store.ok()) throw std::runtime_error(store.status().ToString());
    store_ = std::move(*store);
    service_ = std::make_unique<StoreServiceImpl>(store_.get(), kToken);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    if (!server_ || port == 0) throw std::runtime_error("cannot start the store's server");
    address_ = "127.0.0.1:" + std::to_string(port);
  }
  ~StoreServer() {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    server_->Wait();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    SetLogLevel(old_level_);
  }
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  // A client of this store, with its own channel.
  std::unique_ptr<BlobClient> Client(const std::string& token = kToken) const {
    auto channel = grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
    return std::make_unique<BlobClient>(channel, token, address_);
  }

  BlobStore& store() { return *store_; }
  const std::string& address() const { return address_; }
  // Uploads under way or abandoned: the store's temporary files.
  std::string TmpDir() const { return dir_ + "/tmp"; }
  // Where blob `id` lies on the head's disk.
  std::string BlobPath(const std::string& id) const { return dir_ + "/blobs/" + id.substr(0, 2) + "/" + id; }
  const std::string& dir() const { return dir_; }
  // Flips the byte at `at` of blob `id` on the head's disk, as a disk might.
  void Corrupt(const std::string& id, int64_t at) const {
    const std::string path = BlobPath(id);
    chmod(path.c_str(), 0644);
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(at);
    const char c = static_cast<char>(f.get() ^ 0x40);
    f.seekp(at);
    f.put(c);
  }
  // The store loses blob `id`: its copy goes bad and a check drops it.
  void Lose(const std::string& id) {
    Corrupt(id, 0);
    if (!store_->DropIfCorrupt(id).ok()) throw std::runtime_error("cannot drop blob " + id);
  }

 private:
  LogLevel old_level_ = LogLevel::kDebug;
  std::string dir_;
  std::string address_;
  std::unique_ptr<BlobStore> store_;
  std::unique_ptr<StoreServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace clusterd::testing
