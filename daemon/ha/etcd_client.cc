#include "daemon/ha/etcd_client.h"

#include <chrono>
#include <thread>

#include "common/file_util.h"

namespace clusterd {
namespace {

// A member that went away is tried again soon after it comes back: gRPC's
// default reconnect backoff grows to two minutes, longer than any outage a
// head should wait out.
grpc::ChannelArguments MemberChannelArguments() {
  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // Each member gets a channel of its own, never one shared with another
  // client of the same process (gRPC would pool same-target channels).
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  return args;
}

}  // namespace

// etcd's "require leader" metadata (clientv3's WithRequireLeader): a member
// that knows of no raft leader, cut off from the others, refuses the call or
// ends the stream at once (UNAVAILABLE, "no leader") rather than letting it
// wait out its deadline or stay silent, so that the client moves on to the
// next member.
void RequireEtcdLeader(grpc::ClientContext* context) { context->AddMetadata("hasleader", "true"); }

namespace {

// Between two rounds of asking every member.
constexpr auto kRoundPause = std::chrono::milliseconds(50);

bool MemberUnreachable(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

Status FromGrpc(const std::string& what, const std::string& member, const grpc::Status& status) {
  const std::string message = "etcd " + what + " at " + member + ": " + status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      return Status::InvalidArgument(message);
    case grpc::StatusCode::NOT_FOUND:
      return Status::NotFound(message);
    case grpc::StatusCode::FAILED_PRECONDITION:
      return Status::FailedPrecondition(message);
    case grpc::StatusCode::UNAUTHENTICATED:
      return Status::Unauthenticated(message);
    case grpc::StatusCode::PERMISSION_DENIED:
      return Status::PermissionDenied(message);
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return Status::ResourceExhausted(message);
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return Status::Unavailable(message);
    default:
      return Status::Internal(message);
  }
}

EtcdKeyValue FromProto(const mvccpb::KeyValue& kv) {
  EtcdKeyValue out;
  out.key = kv.key();
  out.value = kv.value();
  out.create_revision = kv.create_revision();
  out.mod_revision = kv.mod_revision();
  out.version = kv.version();
  out.lease = kv.lease();
  return out;
}

void SetKeyRange(const std::string& key, bool prefix, std::string* key_field, std::string* range_end) {
  *key_field = key;
  if (prefix) *range_end = EtcdPrefixEnd(key);
}

etcdserverpb::Compare ToProto(const EtcdCompare& compare) {
  etcdserverpb::Compare out;
  out.set_key(compare.key);
  switch (compare.relation) {
    case EtcdCompare::Relation::kEqual: out.set_result(etcdserverpb::Compare::EQUAL); break;
    case EtcdCompare::Relation::kNotEqual: out.set_result(etcdserverpb::Compare::NOT_EQUAL); break;
    case EtcdCompare::Relation::kLess: out.set_result(etcdserverpb::Compare::LESS); break;
    case EtcdCompare::Relation::kGreater: out.set_result(etcdserverpb::Compare::GREATER); break;
  }
  switch (compare.field) {
    case EtcdCompare::Field::kCreateRevision:
      out.set_target(etcdserverpb::Compare::CREATE);
      out.set_create_revision(compare.number);
      break;
    case EtcdCompare::Field::kModRevision:
      out.set_target(etcdserverpb::Compare::MOD);
      out.set_mod_revision(compare.number);
      break;
    case EtcdCompare::Field::kVersion:
      out.set_target(etcdserverpb::Compare::VERSION);
      out.set_version(compare.number);
      break;
    case EtcdCompare::Field::kValue:
      out.set_target(etcdserverpb::Compare::VALUE);
      out.set_value(compare.value);
      break;
  }
  return out;
}

etcdserverpb::RequestOp ToProto(const EtcdOp& op) {
  etcdserverpb::RequestOp out;
  switch (op.kind) {
    case EtcdOp::Kind::kPut: {
      auto* put = out.mutable_request_put();
      put->set_key(op.key);
      put->set_value(op.value);
      put->set_lease(op.lease);
      break;
    }
    case EtcdOp::Kind::kDelete:
    case EtcdOp::Kind::kDeletePrefix: {
      auto* del = out.mutable_request_delete_range();
      SetKeyRange(op.key, op.kind == EtcdOp::Kind::kDeletePrefix, del->mutable_key(), del->mutable_range_end());
      break;
    }
    case EtcdOp::Kind::kGet:
    case EtcdOp::Kind::kGetPrefix: {
      auto* range = out.mutable_request_range();
      SetKeyRange(op.key, op.kind == EtcdOp::Kind::kGetPrefix, range->mutable_key(), range->mutable_range_end());
      break;
    }
  }
  return out;
}

Status CheckOps(const std::vector<EtcdOp>& ops) {
  for (const auto& op : ops) {
    if (op.key.empty()) return Status::InvalidArgument("etcd transaction: an operation with an empty key");
  }
  return Status::Ok();
}

}  // namespace

std::string EtcdPrefixEnd(const std::string& prefix) {
  std::string end = prefix;
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  // Every byte was 0xff (or the prefix was empty): "\0" is etcd's "to the end".
  return std::string(1, '\0');
}

EtcdCompare EtcdCompare::CreateRevisionIs(std::string key, int64_t revision) {
  EtcdCompare c;
  c.key = std::move(key);
  c.field = Field::kCreateRevision;
  c.number = revision;
  return c;
}

EtcdCompare EtcdCompare::ModRevisionIs(std::string key, int64_t revision) {
  EtcdCompare c;
  c.key = std::move(key);
  c.field = Field::kModRevision;
  c.number = revision;
  return c;
}

EtcdCompare EtcdCompare::ValueIs(std::string key, std::string value) {
  EtcdCompare c;
  c.key = std::move(key);
  c.field = Field::kValue;
  c.value = std::move(value);
  return c;
}

EtcdOp EtcdOp::Put(std::string key, std::string value, int64_t lease) {
  EtcdOp op;
  op.kind = Kind::kPut;
  op.key = std::move(key);
  op.value = std::move(value);
  op.lease = lease;
  return op;
}

EtcdOp EtcdOp::Delete(std::string key) {
  EtcdOp op;
  op.kind = Kind::kDelete;
  op.key = std::move(key);
  return op;
}

EtcdOp EtcdOp::DeletePrefix(std::string prefix) {
  EtcdOp op;
  op.kind = Kind::kDeletePrefix;
  op.key = std::move(prefix);
  return op;
}

EtcdOp EtcdOp::Get(std::string key) {
  EtcdOp op;
  op.kind = Kind::kGet;
  op.key = std::move(key);
  return op;
}

EtcdOp EtcdOp::GetPrefix(std::string prefix) {
  EtcdOp op;
  op.kind = Kind::kGetPrefix;
  op.key = std::move(prefix);
  return op;
}

Result<std::unique_ptr<EtcdClient>> EtcdClient::Create(EtcdClientOptions options) {
  if (options.members.empty()) return Status::InvalidArgument("etcd client: no member given");
  if (options.call_timeout_ms <= 0) {
    return Status::InvalidArgument("ha_etcd_call_timeout_ms must be positive, not " +
                                   std::to_string(options.call_timeout_ms));
  }
  std::unique_ptr<EtcdClient> client(new EtcdClient());
  client->members_ = options.members;
  client->call_timeout_ms_ = options.call_timeout_ms;

  std::shared_ptr<grpc::ChannelCredentials> credentials;
  const EtcdTls& tls = options.tls;
  if (tls.ca_file.empty()) {
    if (!tls.cert_file.empty() || !tls.key_file.empty()) {
      return Status::InvalidArgument("etcd client: a client certificate or key was given without a CA (--ha-ca): "
                                     "TLS needs the CA that signed the members' certificates");
    }
    credentials = grpc::InsecureChannelCredentials();
  } else {
    if (tls.cert_file.empty() != tls.key_file.empty()) {
      return Status::InvalidArgument(std::string("etcd client: a client ") +
                                     (tls.cert_file.empty() ? "key was given without its certificate (--ha-cert)"
                                                            : "certificate was given without its key (--ha-key)"));
    }
    grpc::SslCredentialsOptions ssl;
    auto read = [](const std::string& what, const std::string& path, std::string* out) -> Status {
      auto content = ReadWholeFile(path);
      if (!content.ok()) return content.status().WithContext("etcd client: cannot read the " + what + " " + path);
      if (content->empty()) return Status::InvalidArgument("etcd client: the " + what + " " + path + " is empty");
      *out = std::move(*content);
      return Status::Ok();
    };
    RETURN_IF_ERROR(read("CA certificate", tls.ca_file, &ssl.pem_root_certs));
    if (!tls.cert_file.empty()) {
      RETURN_IF_ERROR(read("client certificate", tls.cert_file, &ssl.pem_cert_chain));
      RETURN_IF_ERROR(read("client key", tls.key_file, &ssl.pem_private_key));
    } else {
      client->connection_hint_ =
          "TLS with no client certificate: members started with --client-cert-auth refuse the handshake; "
          "give one (--ha-cert, --ha-key)";
    }
    credentials = grpc::SslCredentials(ssl);
  }
  for (const auto& member : options.members) {
    auto channel = grpc::CreateCustomChannel(member, credentials, MemberChannelArguments());
    client->kv_.push_back(etcdserverpb::KV::NewStub(channel));
    client->lease_.push_back(etcdserverpb::Lease::NewStub(channel));
    client->maintenance_.push_back(etcdserverpb::Maintenance::NewStub(channel));
    client->channels_.push_back(std::move(channel));
  }
  return client;
}

Status EtcdClient::CallWithFailover(const std::string& what,
                                    const std::function<grpc::Status(size_t, grpc::ClientContext*)>& call,
                                    int timeout_ms) {
  const auto started = std::chrono::steady_clock::now();
  const int deadline_ms = timeout_ms > 0 ? timeout_ms : call_timeout_ms_;
  const auto budget = std::chrono::milliseconds(deadline_ms);
  std::string failures;
  while (true) {
    const size_t first = preferred_.load();
    failures.clear();
    for (size_t attempt = 0; attempt < members_.size(); ++attempt) {
      const size_t member = (first + attempt) % members_.size();
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + budget);
      RequireEtcdLeader(&context);
      const grpc::Status status = call(member, &context);
      if (status.ok()) {
        preferred_.store(member);
        return Status::Ok();
      }
      if (!MemberUnreachable(status)) {
        // The member answered: another one would answer the same.
        preferred_.store(member);
        return FromGrpc(what, members_[member], status);
      }
      failures += (failures.empty() ? "" : "; ") + members_[member] + ": " +
                  (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED
                       ? (timeout_ms > 0 ? "no answer within " + std::to_string(deadline_ms) + " ms"
                                         : "no answer within ha_etcd_call_timeout_ms (" +
                                               std::to_string(deadline_ms) + " ms)")
                       : status.error_message());
    }
    // Members that refused at once (no raft leader while etcd elects one, a
    // refused connection) are asked again until a call's deadline has
    // passed since the first ask, so that an election of etcd's own is
    // ridden through rather than failing the call.
    if (std::chrono::steady_clock::now() - started + kRoundPause >= budget) break;
    std::this_thread::sleep_for(kRoundPause);
  }
  std::string message = "etcd " + what + ": no member answered (" + failures + ")";
  if (!connection_hint_.empty()) message += "; " + connection_hint_;
  return Status::Unavailable(message);
}

Result<EtcdRange> EtcdClient::Get(const std::string& key) {
  if (key.empty()) return Status::InvalidArgument("etcd get: an empty key");
  etcdserverpb::RangeRequest request;
  request.set_key(key);
  etcdserverpb::RangeResponse response;
  RETURN_IF_ERROR(CallWithFailover("get " + key, [&](size_t m, grpc::ClientContext* context) {
    return kv_[m]->Range(context, request, &response);
  }));
  EtcdRange out;
  out.revision = response.header().revision();
  for (const auto& kv : response.kvs()) out.kvs.push_back(FromProto(kv));
  return out;
}

Result<EtcdRange> EtcdClient::GetPrefix(const std::string& prefix) {
  etcdserverpb::RangeRequest request;
  request.set_key(prefix.empty() ? std::string(1, '\0') : prefix);
  request.set_range_end(EtcdPrefixEnd(prefix));
  etcdserverpb::RangeResponse response;
  RETURN_IF_ERROR(CallWithFailover("get prefix " + prefix, [&](size_t m, grpc::ClientContext* context) {
    return kv_[m]->Range(context, request, &response);
  }));
  EtcdRange out;
  out.revision = response.header().revision();
  for (const auto& kv : response.kvs()) out.kvs.push_back(FromProto(kv));
  return out;
}

Result<int64_t> EtcdClient::Put(const std::string& key, const std::string& value, int64_t lease) {
  if (key.empty()) return Status::InvalidArgument("etcd put: an empty key");
  etcdserverpb::PutRequest request;
  request.set_key(key);
  request.set_value(value);
  request.set_lease(lease);
  etcdserverpb::PutResponse response;
  RETURN_IF_ERROR(CallWithFailover("put " + key, [&](size_t m, grpc::ClientContext* context) {
    return kv_[m]->Put(context, request, &response);
  }));
  return response.header().revision();
}

Result<int64_t> EtcdClient::Delete(const std::string& key) {
  if (key.empty()) return Status::InvalidArgument("etcd delete: an empty key");
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(key);
  etcdserverpb::DeleteRangeResponse response;
  RETURN_IF_ERROR(CallWithFailover("delete " + key, [&](size_t m, grpc::ClientContext* context) {
    return kv_[m]->DeleteRange(context, request, &response);
  }));
  return response.deleted();
}

Result<int64_t> EtcdClient::DeletePrefix(const std::string& prefix) {
  // An empty prefix would delete the whole keyspace, every other user's too.
  if (prefix.empty()) return Status::InvalidArgument("etcd delete prefix: an empty prefix (that is every key)");
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(prefix);
  request.set_range_end(EtcdPrefixEnd(prefix));
  etcdserverpb::DeleteRangeResponse response;
  RETURN_IF_ERROR(CallWithFailover("delete prefix " + prefix, [&](size_t m, grpc::ClientContext* context) {
    return kv_[m]->DeleteRange(context, request, &response);
  }));
  return response.deleted();
}

Result<EtcdTxnResult> EtcdClient::Txn(const std::vector<EtcdCompare>& compares, const std::vector<EtcdOp>& success,
                                      const std::vector<EtcdOp>& failure) {
  RETURN_IF_ERROR(CheckOps(success));
  RETURN_IF_ERROR(CheckOps(failure));
  etcdserverpb::TxnRequest request;
  for (const auto& compare : compares) {
    if (compare.key.empty()) return Status::InvalidArgument("etcd transaction: a compare with an empty key");
    *request.add_compare() = ToProto(compare);
  }
  for (const auto& op : success) *request.add_success() = ToProto(op);
  for (const auto& op : failure) *request.add_failure() = ToProto(op);
  etcdserverpb::TxnResponse response;
  RETURN_IF_ERROR(CallWithFailover("transaction", [&](size_t m, grpc::ClientContext* context) {
    return kv_[m]->Txn(context, request, &response);
  }));
  EtcdTxnResult out;
  out.succeeded = response.succeeded();
  out.revision = response.header().revision();
  for (const auto& op : response.responses()) {
    if (!op.has_response_range()) continue;
    std::vector<EtcdKeyValue> kvs;
    for (const auto& kv : op.response_range().kvs()) kvs.push_back(FromProto(kv));
    out.reads.push_back(std::move(kvs));
  }
  return out;
}

Status EtcdClient::Compact(int64_t revision) {
  etcdserverpb::CompactionRequest request;
  request.set_revision(revision);
  etcdserverpb::CompactionResponse response;
  return CallWithFailover("compact to revision " + std::to_string(revision),
                          [&](size_t m, grpc::ClientContext* context) {
                            return kv_[m]->Compact(context, request, &response);
                          });
}

Result<EtcdLease> EtcdClient::LeaseGrant(int64_t ttl_s) {
  if (ttl_s <= 0) return Status::InvalidArgument("etcd lease grant: TTL must be positive, not " + std::to_string(ttl_s));
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttl_s);
  etcdserverpb::LeaseGrantResponse response;
  RETURN_IF_ERROR(CallWithFailover("lease grant", [&](size_t m, grpc::ClientContext* context) {
    return lease_[m]->LeaseGrant(context, request, &response);
  }));
  if (!response.error().empty()) return Status::Unavailable("etcd lease grant: " + response.error());
  return EtcdLease{response.id(), response.ttl()};
}

Status EtcdClient::LeaseRevoke(int64_t id) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(id);
  etcdserverpb::LeaseRevokeResponse response;
  Status status = CallWithFailover("lease revoke", [&](size_t m, grpc::ClientContext* context) {
    return lease_[m]->LeaseRevoke(context, request, &response);
  });
  // etcd says "requested lease not found" (NOT_FOUND) for a lease that is gone:
  // what revoking was for.
  if (status.code() == Status::Code::kNotFound) return Status::Ok();
  return status;
}

Result<int64_t> EtcdClient::LeaseKeepAliveOnce(int64_t id, int timeout_ms) {
  etcdserverpb::LeaseKeepAliveResponse response;
  bool answered = false;
  RETURN_IF_ERROR(CallWithFailover("lease keepalive", [&](size_t m, grpc::ClientContext* context) {
    auto stream = lease_[m]->LeaseKeepAlive(context);
    etcdserverpb::LeaseKeepAliveRequest request;
    request.set_id(id);
    if (stream->Write(request)) {
      stream->WritesDone();
      answered = stream->Read(&response);
    }
    if (answered) {
      // One answer is all this call wants: end the stream without waiting
      // for etcd to close its side.
      context->TryCancel();
      stream->Finish().IgnoreError();
      return grpc::Status::OK;
    }
    return stream->Finish();
  }, timeout_ms));
  if (!answered) return Status::Unavailable("etcd lease keepalive: the stream ended with no answer");
  if (response.ttl() <= 0) {
    return Status::NotFound("etcd lease " + std::to_string(id) + " no longer exists (expired or revoked)");
  }
  return response.ttl();
}

Result<EtcdMemberStatus> EtcdClient::MemberStatus(size_t index) {
  if (index >= members_.size()) return Status::InvalidArgument("etcd member status: no member " + std::to_string(index));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(call_timeout_ms_));
  etcdserverpb::StatusResponse response;
  const grpc::Status status = maintenance_[index]->Status(&context, etcdserverpb::StatusRequest(), &response);
  if (!status.ok()) return FromGrpc("member status", members_[index], status);
  EtcdMemberStatus out;
  out.version = response.version();
  out.member_id = response.header().member_id();
  out.raft_leader = response.leader();
  out.revision = response.header().revision();
  out.db_size = response.dbsize();
  out.errors.assign(response.errors().begin(), response.errors().end());
  return out;
}

}  // namespace clusterd
