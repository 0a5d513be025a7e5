#include "daemon/agent/followed_head_channel.h"

#include "common/net/head_channel.h"

namespace clusterd {

std::string FollowedHeadChannel::address() {
  std::string followed = options_.followed ? options_.followed() : "";
  return followed.empty() ? options_.fallback : followed;
}

std::shared_ptr<grpc::Channel> FollowedHeadChannel::Now() {
  const std::string head = address();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!channel_ || head != address_) {
    address_ = head;
    channel_ = DialHeadAgain(head, options_.tls, options_.reconnect_initial_ms, options_.reconnect_max_ms,
                             options_.connect_timeout_ms);
  }
  return channel_;
}

}  // namespace clusterd
