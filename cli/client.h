// clusterctl's connection to the head: finds address and token (flag,
// environment, local session), makes calls with a deadline, and turns
// failures into one-line messages. The head pages its long replies
// (ListJobs, GetMetrics): Call follows the pages, so callers see one whole
// reply. Replies up to kMaxReceiveBytes are accepted.
#pragma once

#include <grpcpp/client_context.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "cluster.grpc.pb.h"
#include "common/config.h"
#include "common/storage/cluster_storage.h"
#include "common/status.h"
#include "common/net/tls.h"

namespace clusterd::cli {

struct ClientOptions {
  std::string address;  // HOST:PORT, or every head in HA: HOST:PORT,HOST:PORT
  std::string token;
  std::string tls_ca;
  std::string temp_dir;
  int timeout_ms = Config().rpc_timeout_ms;
  int64_t follow_outage_ms = Config().follow_outage_ms;
};

class HeadClient {
 public:
  // gRPC's default is 4 MiB; one job of many ranks and attempts can be more.
  static constexpr int kMaxReceiveBytes = 64 << 20;

  static Result<std::unique_ptr<HeadClient>> Connect(const ClientOptions& options);

  // Calls stub method `method` with a deadline (per page) and the token;
  // the Status names the head and says plainly what went wrong. A paged
  // reply (ListJobsReply, MetricsReply) comes back whole, all its pages
  // from the request's page_token on joined, next_page_token empty.
  template <typename Request, typename Reply, typename Method>
  Status Call(Method method, const Request& request, Reply* reply) {
    if constexpr (std::is_same_v<Reply, ListJobsReply> || std::is_same_v<Reply, MetricsReply>) {
      return CallAllPages(method, request, reply);
    } else {
      return CallOnce(method, request, reply);
    }
  }

  // Waits up to `ms` for a connection to the head, trying to make one: what
  // a following command does between tries while the head is away. A plain
  // sleep would leave a reconnect's outcome unseen until gRPC's backup poller
  // runs (every 5 s: nothing else drives a channel's I/O between calls), so a
  // follow would come back 5-15 s after the head does. true once connected.
  bool AwaitHead(int ms);

  const std::string& address() const { return address_; }
  // The head calls go to now, the token and the deadline, for a service
  // other than HeadService (the heads' list of HA).
  std::shared_ptr<grpc::Channel> channel() const { return channel_; }
  const std::string& token() const { return token_; }
  int timeout_ms() const { return timeout_ms_; }
  // How long a following command keeps trying while the head is out of reach (head_outage.h).
  int64_t follow_outage_ms() const { return follow_outage_ms_; }
  // Now, by the head's clock as of its last answer (this machine's until
  // one came): what the times the head stamped are measured against.
  int64_t HeadNowUnixMs() const;
  // The cluster's blob storage: the head's store over the same connection,
  // or S3 with this machine's credentials when the head says so. Given
  // several heads, where the store is is asked of the leader: before any
  // call has reached it, a light call (WhoAmI) finds it, following
  // redirects as every call does.
  std::unique_ptr<ClusterStorage> Store();

 private:
  // Where a call has looked for the leader so far (MoveToLeader).
  struct LeaderSearch {
    int hops = 0;               // heads tried in this round
    bool saw_standby = false;   // a head answered as a standby: the heads are in HA
    // The heads whose last answer to this call was a standby's (one that
    // was not reachable since has answered nothing else).
    std::set<std::string> standbys;
    std::chrono::steady_clock::time_point give_up;  // no more rounds after it
  };

  template <typename Request, typename Reply, typename Method>
  Status CallOnce(Method method, const Request& request, Reply* reply) {
    LeaderSearch search;
    search.give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
    while (true) {
      grpc::ClientContext context;
      Prepare(&context);
      grpc::Status status = ((*stub_).*method)(&context, request, reply);
      NoteHeadClock(context);
      served_ = served_ || status.ok();
      if (status.ok() || !MoveToLeader(status, context, &search)) return Explain(status, context);
    }
  }

  template <typename Request, typename Reply, typename Method>
  Status CallAllPages(Method method, const Request& request, Reply* reply) {
    reply->Clear();
    Request page = request;
    std::set<std::string> seen;  // a head that hands out a token twice would loop
    while (true) {
      Reply part;
      RETURN_IF_ERROR(CallOnce(method, page, &part));
      std::string token = part.next_page_token();
      part.clear_next_page_token();
      reply->MergeFrom(part);
      if (token.empty()) return Status::Ok();
      if (!seen.insert(token).second) {
        return Status::Internal("the head at " + address_ + " sent page token '" + token + "' twice");
      }
      page.set_page_token(token);
    }
  }

  void Prepare(grpc::ClientContext* context) const;
  // Points the channel at `address`.
  void Dial(const std::string& address);
  // After a failed call: whether the client moved to another head and the
  // call should go again. A standby's redirect is followed to the leader it
  // names; a head that stands by with no leader or cannot be reached (the
  // call never reached it) gives way to the next head of the list. A round
  // is bounded, so that heads redirecting in a circle end; when a round
  // found no leader but a standby (the heads are electing one, or the
  // leader just died), another begins after a pause, until the call's
  // timeout has passed since it began. A call a head may have acted on
  // (its answer, a deadline that passed) is never sent again. One that a
  // standby cancelled is sent again: a standby that wins the election shuts
  // its server down, which cancels the calls that reached it and had not
  // run yet (grpc/grpc#41785), and a standby's calls do nothing.
  bool MoveToLeader(const grpc::Status& status, const grpc::ClientContext& context, LeaderSearch* search);
  void NoteHeadClock(const grpc::ClientContext& context);
  // `context` tells an UNAVAILABLE the head answered (its journal cannot be
  // written) from one the transport made up (no head there).
  Status Explain(const grpc::Status& status, const grpc::ClientContext& context) const;

  std::string address_;               // the head calls go to now
  bool served_ = false;               // a call was answered there: it leads (or is the only head)
  std::vector<std::string> heads_;    // every head given (--address H1,H2), in order
  std::string token_;
  TlsConfig tls_;
  int timeout_ms_ = 0;  // from ClientOptions
  int64_t follow_outage_ms_ = 0;  // from ClientOptions
  int64_t head_offset_ms_ = 0;  // the head's clock minus this machine's, at its last answer
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<HeadService::Stub> stub_;
};

}  // namespace clusterd::cli
