// Watches a key, or every key under a prefix, from a revision on, and hands
// each change to a callback in revision order. A member that goes away is
// left for the next one of the client's list, and the watch goes on from
// the revision after the last event it handed over, so no change is missed
// or repeated. Only when etcd has compacted away revisions the watch still
// needed does it end, saying so: its owner then reads afresh and watches again.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "daemon/ha/etcd_client.h"

namespace clusterd {

struct EtcdEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  // For a delete, the key and mod_revision (the deletion's revision) only.
  EtcdKeyValue kv;
};

class EtcdWatch {
 public:
  using EventsCallback = std::function<void(const std::vector<EtcdEvent>& events)>;
  // Called once, from the watch's thread, when the watch ends for good.
  using EndCallback = std::function<void(const Status& why)>;

  // Starts watching `key` (every key under it when `prefix`) from
  // `start_revision` (inclusive; 0: from now). The callbacks run on the
  // watch's own thread, one at a time; they may not destroy the watch.
  EtcdWatch(EtcdClient* client, std::string key, bool prefix, int64_t start_revision, EventsCallback on_events,
            EndCallback on_end = nullptr);
  ~EtcdWatch();  // Stop()

  EtcdWatch(const EtcdWatch&) = delete;
  EtcdWatch& operator=(const EtcdWatch&) = delete;

  // Ends the watch and waits for its thread; no callback runs after it.
  void Stop();
  // Whether the server has confirmed the watch (on some member) at least once.
  bool created() const;

 private:
  void Run();
  // One stream on one member, until it breaks or Stop(); `answered` tells
  // whether the member confirmed the watch. Returns a Status when the watch
  // must end for good (compacted), Ok to try the next member.
  Status WatchOn(size_t member, bool* answered);

  EtcdClient* client_;
  const std::string key_;
  const bool prefix_;
  EventsCallback on_events_;
  EndCallback on_end_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool created_ = false;
  grpc::ClientContext* stream_context_ = nullptr;  // the stream under way, to cancel it
  int64_t next_revision_;                          // only the watch's thread touches it
  std::thread thread_;
};

}  // namespace clusterd
