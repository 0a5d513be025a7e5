// One thread that owns a daemon's core state: RPC threads Post() work onto
// it, so the core classes need no locks.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <functional>
#include <future>
#include <thread>

#include "common/threads.h"

namespace clusterd {

class EventLoop {
 public:
  // `name`: the thread's, as top -H and perf show it (thread_name.h).
  explicit EventLoop(const char* name) : name_(name), work_(boost::asio::make_work_guard(context_)) {}
  ~EventLoop() { Stop(); }

  void Start() {
    thread_ = std::thread([this] {
      CountedThread counted(name_);
      context_.run();
    });
  }
  // Started and not yet stopped: Call would be answered.
  bool running() const { return thread_.joinable(); }
  // Runs what is queued, then returns; safe to call twice.
  void Stop() {
    work_.reset();
    context_.stop();
    if (thread_.joinable()) thread_.join();
  }
  void Post(std::function<void()> fn) { boost::asio::post(context_, std::move(fn)); }

  // Runs fn on the loop and waits for its result. REQUIRES: not called on the loop thread.
  template <typename T>
  T Call(std::function<T()> fn) {
    std::packaged_task<T()> task(std::move(fn));
    auto result = task.get_future();
    Post([&task] { task(); });
    return result.get();
  }

  boost::asio::io_context& context() { return context_; }

 private:
  const char* name_;
  boost::asio::io_context context_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::thread thread_;
};

}  // namespace clusterd
