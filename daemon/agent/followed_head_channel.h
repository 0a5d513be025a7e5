// A gRPC channel to the head a node agent's link follows now: given several
// heads (HA), the leader its LeaderFollowingDialer found, not the first of
// the list, which may be down or stand by. Calls the agent makes beside
// its stream (where the cluster's store is: StoreService.GetStoreLocation)
// go where the stream goes. Thread-safe.
#pragma once

#include <grpcpp/channel.h>

#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "common/net/tls.h"

namespace clusterd {

class FollowedHeadChannel {
 public:
  struct Options {
    // The head the link reaches now ("" before its first stream).
    std::function<std::string()> followed;
    // Asked while the link has reached no head yet: the first of the list.
    std::string fallback;
    TlsConfig tls;
    int reconnect_initial_ms = 0;
    int reconnect_max_ms = 0;
    int connect_timeout_ms = 0;
  };
  explicit FollowedHeadChannel(Options options) : options_(std::move(options)) {}

  // A channel to that head, the same one while the head does not change.
  std::shared_ptr<grpc::Channel> Now();
  // The head Now's channel goes to.
  std::string address();

 private:
  const Options options_;
  std::mutex mutex_;
  std::string address_;  // of channel_
  std::shared_ptr<grpc::Channel> channel_;
};

}  // namespace clusterd
