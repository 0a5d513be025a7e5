// A client of etcd's v3 API (proto/etcd_rpc.proto) for what HA heads need:
// reads by key or prefix, puts, deletes, transactions with compares, leases
// and their keepalives. Each call has a deadline (ha_etcd_call_timeout_ms)
// and goes to the member that answered last; a member that cannot be
// reached, does not answer in time, or has no raft leader is left for the
// next one of the list, so the client works while any member that has a
// quorum behind it does. When every member refused at once (etcd electing
// a raft leader), they are asked again until that deadline has passed.
// Thread-safe: calls may come from several threads at once. Watches are a
// class of their own (etcd_watch.h).
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "etcd_rpc.grpc.pb.h"

namespace clusterd {

// TLS to the members. With ca_file set the client speaks TLS and trusts only
// that CA; with cert_file and key_file also set it presents that client
// certificate (members started with --client-cert-auth require one).
struct EtcdTls {
  std::string ca_file;
  std::string cert_file;
  std::string key_file;
};

struct EtcdClientOptions {
  std::vector<std::string> members;  // host:port each (EtcdEndpoints::members)
  int call_timeout_ms = 1000;        // ha_etcd_call_timeout_ms
  EtcdTls tls;                       // empty ca_file: plaintext
};

struct EtcdKeyValue {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;
  int64_t lease = 0;
};

// What a read found, and the store's revision it was read at (a watch from
// revision + 1 misses nothing that came after).
struct EtcdRange {
  std::vector<EtcdKeyValue> kvs;
  int64_t revision = 0;
};

// One condition of a transaction: the key's field compared with a number
// (create/mod revision, version) or with a value.
struct EtcdCompare {
  enum class Field { kCreateRevision, kModRevision, kVersion, kValue };
  enum class Relation { kEqual, kNotEqual, kLess, kGreater };
  std::string key;
  Field field = Field::kCreateRevision;
  Relation relation = Relation::kEqual;
  int64_t number = 0;
  std::string value;

  // create_revision == 0 is "the key does not exist".
  static EtcdCompare CreateRevisionIs(std::string key, int64_t revision);
  static EtcdCompare ModRevisionIs(std::string key, int64_t revision);
  static EtcdCompare ValueIs(std::string key, std::string value);
};

// One operation of a transaction.
struct EtcdOp {
  enum class Kind { kPut, kDelete, kDeletePrefix, kGet, kGetPrefix };
  Kind kind = Kind::kPut;
  std::string key;
  std::string value;
  int64_t lease = 0;

  static EtcdOp Put(std::string key, std::string value, int64_t lease = 0);
  static EtcdOp Delete(std::string key);
  static EtcdOp DeletePrefix(std::string prefix);
  static EtcdOp Get(std::string key);
  static EtcdOp GetPrefix(std::string prefix);
};

struct EtcdTxnResult {
  bool succeeded = false;  // the compares held, and the success operations were applied
  int64_t revision = 0;    // the store's revision after the transaction
  // What each Get/GetPrefix of the branch that ran found, in order.
  std::vector<std::vector<EtcdKeyValue>> reads;
};

struct EtcdLease {
  int64_t id = 0;
  int64_t ttl_s = 0;  // as etcd granted it: never less than asked, sometimes more
};

struct EtcdMemberStatus {
  std::string version;
  uint64_t member_id = 0;
  uint64_t raft_leader = 0;  // 0: the member knows of no raft leader
  int64_t revision = 0;
  int64_t db_size = 0;
  std::vector<std::string> errors;
};

// Marks a call or stream to etcd as needing a member that has a raft
// leader: one cut off from the others refuses it at once.
void RequireEtcdLeader(grpc::ClientContext* context);

// The end of the key range holding every key that starts with `prefix`
// (etcd's range_end: the prefix with its last byte that is not 0xff plus one).
std::string EtcdPrefixEnd(const std::string& prefix);

class EtcdClient {
 public:
  // Reads the TLS files (an unreadable one is an error naming it) and makes
  // a channel for each member; connects lazily, at the first call.
  static Result<std::unique_ptr<EtcdClient>> Create(EtcdClientOptions options);

  Result<EtcdRange> Get(const std::string& key);
  Result<EtcdRange> GetPrefix(const std::string& prefix);
  // The store's revision after the put.
  Result<int64_t> Put(const std::string& key, const std::string& value, int64_t lease = 0);
  // How many keys were deleted.
  Result<int64_t> Delete(const std::string& key);
  Result<int64_t> DeletePrefix(const std::string& prefix);
  // Applies `success` when every compare holds, else `failure`, as one
  // atomic step.
  Result<EtcdTxnResult> Txn(const std::vector<EtcdCompare>& compares, const std::vector<EtcdOp>& success,
                            const std::vector<EtcdOp>& failure = {});
  // Drops the history of revisions before `revision` (reads and watches at
  // older ones fail afterwards).
  Status Compact(int64_t revision);

  Result<EtcdLease> LeaseGrant(int64_t ttl_s);
  // Revokes the lease and deletes every key attached to it. A lease that
  // no longer exists is not an error.
  Status LeaseRevoke(int64_t id);
  // Renews the lease once; its TTL in seconds from now. NotFound when the
  // lease no longer exists (it expired or was revoked). `timeout_ms` (0:
  // call_timeout_ms) replaces the deadline for this call: a leader whose
  // lease must be renewed within a window gives up on a hung member soon
  // enough to ask the next one in time.
  Result<int64_t> LeaseKeepAliveOnce(int64_t id, int timeout_ms = 0);

  // The status of member `index` of the list, asked of that member alone.
  Result<EtcdMemberStatus> MemberStatus(size_t index);

  size_t member_count() const { return members_.size(); }
  const std::string& member(size_t index) const { return members_[index]; }
  // The member that answered last: where the next call goes first.
  size_t preferred_member() const { return preferred_.load(); }
  void set_preferred_member(size_t index) { preferred_.store(index % members_.size()); }
  int call_timeout_ms() const { return call_timeout_ms_; }
  // The channel to member `index` (for streams, such as EtcdWatch's).
  std::shared_ptr<grpc::Channel> channel(size_t index) const { return channels_[index]; }
  // Said after a failure to reach every member, so that an operator knows
  // where to look ("TLS with no client certificate", ...).
  const std::string& connection_hint() const { return connection_hint_; }

 private:
  EtcdClient() = default;

  // Runs `call` on each member in turn, starting at the preferred one, until
  // one answers (anything but UNAVAILABLE or DEADLINE_EXCEEDED); more rounds
  // while less than call_timeout_ms has passed.
  // `timeout_ms` 0 is call_timeout_ms.
  Status CallWithFailover(const std::string& what,
                          const std::function<grpc::Status(size_t member, grpc::ClientContext*)>& call,
                          int timeout_ms = 0);

  std::vector<std::string> members_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  std::vector<std::unique_ptr<etcdserverpb::KV::Stub>> kv_;
  std::vector<std::unique_ptr<etcdserverpb::Lease::Stub>> lease_;
  std::vector<std::unique_ptr<etcdserverpb::Maintenance::Stub>> maintenance_;
  std::atomic<size_t> preferred_{0};
  int call_timeout_ms_ = 1000;
  std::string connection_hint_;
};

}  // namespace clusterd
