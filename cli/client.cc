#include "cli/client.h"

#include <grpcpp/create_channel.h>
#include <grpcpp/support/channel_arguments.h>
#include <grpcpp/security/credentials.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "common/net/auth.h"
#include "common/clock.h"
#include "common/config.h"
#include "common/net/head_metadata.h"
#include "common/net/grpc_status.h"
#include "common/net/head_channel.h"
#include "common/net/leader_redirect.h"
#include "common/session.h"

namespace clusterd::cli {

namespace {

// How soon the channel dials a head that went away again: fixed, not in the
// config table, because a following command must see a restarted head
// within about a second, and nothing else depends on it.
constexpr int kReconnectInitialMs = 100, kReconnectMaxMs = 1000;

// Between two rounds over the heads while none leads.
constexpr std::chrono::milliseconds kLeaderPause{200};

}  // namespace

Result<std::unique_ptr<HeadClient>> HeadClient::Connect(const ClientOptions& options) {
  ASSIGN_OR_RETURN(std::string given, ResolveHeadAddress(options.address, options.temp_dir));
  ASSIGN_OR_RETURN(std::vector<std::string> heads, ParseHeadAddresses(given));
  ASSIGN_OR_RETURN(std::string token, ResolveToken(options.token, options.temp_dir));
  auto client = std::unique_ptr<HeadClient>(new HeadClient());
  client->heads_ = heads;
  client->token_ = token;
  client->timeout_ms_ = options.timeout_ms;
  client->follow_outage_ms_ = options.follow_outage_ms;
  ASSIGN_OR_RETURN(client->tls_, LoadTls("", "", ResolveTlsCa(options.tls_ca, options.temp_dir)));
  client->Dial(heads.front());
  return client;
}

void HeadClient::Dial(const std::string& address) {
  address_ = address;
  served_ = false;
  grpc::ChannelArguments arguments;
  arguments.SetMaxReceiveMessageSize(kMaxReceiveBytes);
  // Following commands ride out a head restart: the channel must try the
  // head again within a second of its return (common/net/head_channel.h).
  // A connect may take the node agents' default connect_timeout_ms. Not the
  // call's own deadline: a head that accepts and then says nothing must
  // show as a call that went unanswered within rpc_timeout_ms, which is
  // what the user can change, not as a connect that failed.
  channel_ = DialHeadAgain(address, tls_, kReconnectInitialMs, kReconnectMaxMs, Config{}.connect_timeout_ms,
                          arguments);
  stub_ = HeadService::NewStub(channel_);
}

bool HeadClient::MoveToLeader(const grpc::Status& status, const grpc::ClientContext& context,
                              LeaderSearch* search) {
  const auto& trailers = context.GetServerTrailingMetadata();
  const bool standby = trailers.count(kLeaderMetadataKey) > 0;
  // Only a call that never reached a head that serves goes again: an
  // UNAVAILABLE a head answered (its journal) or a deadline passed may have
  // been acted on.
  const bool unreached = status.error_code() == grpc::StatusCode::UNAVAILABLE && trailers.count(kAnsweredByHead) == 0;
  // The head last answered as a standby, and its server went away under
  // this call: it is taking over as the leader. For the call to have run,
  // that head would have had to win, serve it and lose again within it.
  const bool standby_stopped =
      status.error_code() == grpc::StatusCode::CANCELLED && search->standbys.count(address_) > 0;
  if (standby) {
    search->standbys.insert(address_);
  } else if (!unreached && !standby_stopped) {
    search->standbys.erase(address_);
  }
  if (!standby && !unreached && !standby_stopped) return false;
  search->saw_standby = search->saw_standby || standby;
  if (++search->hops > static_cast<int>(heads_.size()) * 2 + 1) {
    // A whole round found no leader. Heads in HA elect one within about
    // their lease's TTL: wait for it, as long as the call may take.
    if (!search->saw_standby || std::chrono::steady_clock::now() + kLeaderPause >= search->give_up) return false;
    std::this_thread::sleep_for(kLeaderPause);
    search->hops = 0;
  }
  const std::string leader = LeaderRedirectOf(status, context);
  if (!leader.empty() && leader != address_) {
    Dial(leader);
    return true;
  }
  if (heads_.size() < 2) {
    // One head given: asked again only while it stands by (with no leader,
    // or naming itself).
    return search->saw_standby;
  }
  auto at = std::find(heads_.begin(), heads_.end(), address_);
  const size_t next = at == heads_.end() ? 0 : (static_cast<size_t>(at - heads_.begin()) + 1) % heads_.size();
  Dial(heads_[next]);
  return true;
}

std::unique_ptr<ClusterStorage> HeadClient::Store() {
  if (heads_.size() > 1 && !served_) {
    // A failure is the store's to report, when it asks.
    WhoAmIReply who;
    (void)Call(&HeadService::Stub::IdentityWhoAmI, WhoAmIRequest(), &who);
  }
  return std::make_unique<ClusterStorage>(channel_, token_, address_);
}

bool HeadClient::AwaitHead(int ms) {
  const auto start = std::chrono::system_clock::now();
  const bool connected = channel_->WaitForConnected(start + std::chrono::milliseconds(ms));
  // A head that is up but answers "unavailable" is not asked in a busy loop.
  if (connected) std::this_thread::sleep_until(start + std::chrono::milliseconds(std::min(ms, 100)));
  return connected;
}

void HeadClient::Prepare(grpc::ClientContext* context) const {
  AttachToken(context, token_);
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(timeout_ms_));
}

void HeadClient::NoteHeadClock(const grpc::ClientContext& context) {
  const auto& trailers = context.GetServerTrailingMetadata();
  auto it = trailers.find(kHeadUnixMsMetadata);
  if (it == trailers.end()) return;
  const std::string text(it->second.data(), it->second.size());
  char* end = nullptr;
  const long long head_ms = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || head_ms <= 0) return;  // not a number: keep this machine's clock
  head_offset_ms_ = head_ms - SystemClock().UnixMillis();
}

int64_t HeadClient::HeadNowUnixMs() const { return SystemClock().UnixMillis() + head_offset_ms_; }

Status HeadClient::Explain(const grpc::Status& status, const grpc::ClientContext& context) const {
  switch (status.error_code()) {
    case grpc::StatusCode::OK:
      return Status::Ok();
    case grpc::StatusCode::UNAUTHENTICATED:
      return Status::Unauthenticated(fmt::format("the head at {} refused the call: {}", address_,
                                                 status.error_message()));
    case grpc::StatusCode::UNAVAILABLE:
      if (context.GetServerTrailingMetadata().count(kLeaderMetadataKey) > 0) {
        return Status::Unavailable(fmt::format("the head at {} serves nothing now: {}", address_, status.error_message()));
      }
      if (context.GetServerTrailingMetadata().count(kAnsweredByHead) > 0) {
        return Status::Unavailable(fmt::format("the head at {} refused the call: {}", address_, status.error_message()));
      }
      return Status::Unavailable(UnreachableHead(address_, tls_, status.error_message()));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status::Unavailable(fmt::format("the head at {} did not answer within {} ms", address_, timeout_ms_));
    case grpc::StatusCode::CANCELLED:
      // clusterctl cancels none of its calls: a head shutting down (clusterd
      // stop, a restart) ends the calls under way so. Gone for now, as an
      // unreachable head is: --follow waits for it to come back.
      return Status::Unavailable(fmt::format("the head at {} went away during the call (it is stopping or "
                                             "restarting): {}", address_, status.error_message()));
    case grpc::StatusCode::UNIMPLEMENTED:
      return Status::Unavailable(fmt::format("{} is not a clusterd head ({})", address_, status.error_message()));
    default:
      return FromGrpc(status);
  }
}

}  // namespace clusterd::cli
