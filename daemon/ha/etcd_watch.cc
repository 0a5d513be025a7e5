#include "daemon/ha/etcd_watch.h"

#include <chrono>

namespace clusterd {
namespace {

// Pause after every member failed once, before the list is tried again.
constexpr auto kRetryPause = std::chrono::milliseconds(100);

}  // namespace

EtcdWatch::EtcdWatch(EtcdClient* client, std::string key, bool prefix, int64_t start_revision,
                     EventsCallback on_events, EndCallback on_end)
    : client_(client),
      key_(std::move(key)),
      prefix_(prefix),
      on_events_(std::move(on_events)),
      on_end_(std::move(on_end)),
      next_revision_(start_revision) {
  thread_ = std::thread([this] { Run(); });
}

EtcdWatch::~EtcdWatch() { Stop(); }

void EtcdWatch::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
    if (stream_context_ != nullptr) stream_context_->TryCancel();
  }
  wake_.notify_all();
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

bool EtcdWatch::created() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return created_;
}

void EtcdWatch::Run() {
  size_t member = client_->preferred_member();
  size_t failures_in_a_row = 0;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_) return;
    }
    bool answered = false;
    const Status end = WatchOn(member, &answered);
    if (!end.ok()) {
      if (on_end_) on_end_(end);
      return;
    }
    member = (member + 1) % client_->member_count();
    if (answered) failures_in_a_row = 0;
    if (++failures_in_a_row >= client_->member_count()) {
      failures_in_a_row = 0;
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait_for(lock, kRetryPause, [this] { return stopping_; });
    }
  }
}

Status EtcdWatch::WatchOn(size_t member, bool* answered) {
  grpc::ClientContext context;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return Status::Ok();
    stream_context_ = &context;
  }
  RequireEtcdLeader(&context);
  auto stream = etcdserverpb::Watch::NewStub(client_->channel(member))->Watch(&context);
  etcdserverpb::WatchRequest request;
  auto* create = request.mutable_create_request();
  create->set_key(key_);
  if (prefix_) create->set_range_end(EtcdPrefixEnd(key_));
  create->set_start_revision(next_revision_);
  Status end = Status::Ok();
  if (stream->Write(request)) {
    etcdserverpb::WatchResponse response;
    while (stream->Read(&response)) {
      if (response.created()) {
        // "From now" is pinned to the revision the member watches from, so
        // that a stream on another member later starts where this one did.
        if (next_revision_ <= 0) next_revision_ = response.header().revision() + 1;
        *answered = true;
        std::lock_guard<std::mutex> lock(mutex_);
        created_ = true;
      }
      if (response.canceled()) {
        if (response.compact_revision() > 0) {
          end = Status::NotFound("etcd watch of " + key_ + ": revision " + std::to_string(next_revision_) +
                                 " was compacted (the oldest left is " +
                                 std::to_string(response.compact_revision()) + "); read afresh and watch again");
        } else {
          end = Status::FailedPrecondition("etcd watch of " + key_ + " canceled by " + client_->member(member) +
                                           ": " + response.cancel_reason());
        }
        break;
      }
      if (response.events_size() == 0) continue;
      std::vector<EtcdEvent> events;
      events.reserve(response.events_size());
      for (const auto& e : response.events()) {
        EtcdEvent event;
        event.type = e.type() == mvccpb::Event::DELETE ? EtcdEvent::Type::kDelete : EtcdEvent::Type::kPut;
        event.kv.key = e.kv().key();
        event.kv.value = e.kv().value();
        event.kv.create_revision = e.kv().create_revision();
        event.kv.mod_revision = e.kv().mod_revision();
        event.kv.version = e.kv().version();
        event.kv.lease = e.kv().lease();
        next_revision_ = std::max(next_revision_, event.kv.mod_revision + 1);
        events.push_back(std::move(event));
      }
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) break;
      }
      on_events_(events);
    }
  }
  context.TryCancel();
  stream->Finish().IgnoreError();
  std::lock_guard<std::mutex> lock(mutex_);
  stream_context_ = nullptr;
  if (stopping_) return Status::Ok();
  return end;
}

}  // namespace clusterd
