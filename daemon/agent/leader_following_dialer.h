// The node agent's way to the leading head when it is given several heads
// (clusterd start --address H1:6379,H2:6379): each Dial asks the heads in
// the list's order, but the head whose stream was lost (the last one it
// opened) last, since a standby is likelier to lead after a silence there;
// a standby's redirect (common/net/leader_redirect.h) is followed to the
// leader it names. Each head of a round gets a share of connect_timeout_ms
// (at least a second), so that one silent head does not hold the round.
// While the heads stand by with no leader (electing one), the list is tried
// again until connect_timeout_ms has passed. With one address it is a
// HeadWireDialer that also follows a redirect.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "daemon/agent/head_connection.h"
#include "daemon/agent/head_wire_dialer.h"

namespace clusterd {

class LeaderFollowingDialer : public HeadDialer {
 public:
  // `base.head_address` is the comma list. A malformed list dials nothing
  // and says why at each Dial.
  explicit LeaderFollowingDialer(HeadWireDialer::Options base);

  Result<std::unique_ptr<HeadConnection>> Dial() override;
  void Cancel() override;
  // The head of the last stream opened ("" before the first).
  std::string address() const override;

 private:
  static constexpr int kMinPerHeadConnectMs = 1000;

  // The connect timeout one head gets in a round over several.
  int PerHeadConnectTimeoutMs() const;
  // The heads a round asks, in turn.
  std::vector<std::string> DialOrder() const;
  Result<std::unique_ptr<HeadConnection>> DialOne(const std::string& address, std::string* redirect,
                                                  bool* standby);

  HeadWireDialer::Options base_;
  std::vector<std::string> heads_;
  Status list_status_;
  mutable std::mutex mutex_;  // guards the three below
  std::shared_ptr<HeadWireDialer> dialing_;
  bool cancelled_ = false;
  std::string current_;
};

}  // namespace clusterd
