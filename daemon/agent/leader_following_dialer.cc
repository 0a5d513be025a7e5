#include "daemon/agent/leader_following_dialer.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "common/logging.h"
#include "common/net/leader_redirect.h"

namespace clusterd {

LeaderFollowingDialer::LeaderFollowingDialer(HeadWireDialer::Options base) : base_(std::move(base)) {
  auto heads = ParseHeadAddresses(base_.head_address);
  if (heads.ok()) {
    heads_ = *heads;
  } else {
    list_status_ = heads.status();
  }
}

std::string LeaderFollowingDialer::address() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

void LeaderFollowingDialer::Cancel() {
  std::lock_guard<std::mutex> lock(mutex_);
  cancelled_ = true;
  if (dialing_) dialing_->Cancel();
}

int LeaderFollowingDialer::PerHeadConnectTimeoutMs() const {
  if (heads_.size() <= 1) return base_.connect_timeout_ms;
  // A share of the connect timeout, but never under a second (a first SYN
  // may wait that long on ARP): a round that found no head is tried again.
  const int share = base_.connect_timeout_ms / static_cast<int>(heads_.size());
  return std::min(base_.connect_timeout_ms, std::max(kMinPerHeadConnectMs, share));
}

std::vector<std::string> LeaderFollowingDialer::DialOrder() const {
  // The rest in the list's order, then the head whose stream was lost:
  // after a silence or an error there, a standby is likelier to lead now.
  // Only a standby's redirect brings it forward again.
  std::vector<std::string> order;
  const std::string lost = address();
  for (const std::string& head : heads_) {
    if (head != lost) order.push_back(head);
  }
  if (!lost.empty()) order.push_back(lost);
  return order;
}

Result<std::unique_ptr<HeadConnection>> LeaderFollowingDialer::DialOne(const std::string& address,
                                                                       std::string* redirect, bool* standby) {
  HeadWireDialer::Options options = base_;
  options.head_address = address;
  options.connect_timeout_ms = PerHeadConnectTimeoutMs();
  auto dialer = std::make_shared<HeadWireDialer>(options);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (cancelled_) return Status::Unavailable("the link to the head is stopping");
    dialing_ = dialer;
  }
  auto opened = dialer->Dial();
  std::lock_guard<std::mutex> lock(mutex_);
  dialing_ = nullptr;
  *redirect = dialer->redirect();
  *standby = dialer->answered_as_standby();
  if (opened.ok()) current_ = address;
  return opened;
}

Result<std::unique_ptr<HeadConnection>> LeaderFollowingDialer::Dial() {
  RETURN_IF_ERROR(list_status_.WithContext("--address"));
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(base_.connect_timeout_ms);
  while (true) {
    std::vector<std::string> order = DialOrder();
    std::vector<std::string> failures, tried;
    bool any_standby = false;
    for (size_t i = 0; i < order.size(); ++i) {
      std::string redirect;
      bool standby = false;
      tried.push_back(order[i]);
      auto opened = DialOne(order[i], &redirect, &standby);
      if (opened.ok()) return opened;
      any_standby = any_standby || standby;
      failures.push_back(opened.status().message());
      if (!redirect.empty() && std::find(tried.begin(), tried.end(), redirect) == tried.end()) {
        // The leader is asked next, whether or not the list names it.
        LOG_INFO("the head at {} stands by; following it to the leader at {}", order[i], redirect);
        auto later = std::find(order.begin() + static_cast<std::ptrdiff_t>(i) + 1, order.end(), redirect);
        if (later != order.end()) order.erase(later);
        order.insert(order.begin() + static_cast<std::ptrdiff_t>(i) + 1, redirect);
        continue;
      }
      if (heads_.size() == 1 && redirect.empty() && !standby) return opened.status();
      // A head that answered and refused the token: every head would, as
      // the token is the cluster's. Said at once, not after a wait for a leader.
      const Status::Code code = opened.status().code();
      if (code == Status::Code::kUnauthenticated || code == Status::Code::kPermissionDenied) return opened.status();
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (cancelled_) return Status::Unavailable("the link to the head is stopping");
    }
    if (!any_standby || std::chrono::steady_clock::now() >= give_up) {
      return Status::Unavailable(fmt::format("no head of {} leads or answers: {}", base_.head_address,
                                             fmt::join(failures, "; ")));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace clusterd
