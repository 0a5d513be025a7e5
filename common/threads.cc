#include "common/threads.h"

#include <mutex>
#include <utility>

#include "common/thread_name.h"

namespace clusterd {

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, int> running;
};

Registry& TheRegistry() {
  static Registry* registry = new Registry();  // never destroyed: threads may end after static destruction
  return *registry;
}

}  // namespace

CountedThread::CountedThread(std::string name) : name_(std::move(name)) {
  NameThisThread(name_.c_str());
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  ++registry.running[name_];
}

CountedThread::~CountedThread() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  auto it = registry.running.find(name_);
  if (it != registry.running.end() && --it->second <= 0) registry.running.erase(it);
}

std::thread StartNamedThread(std::string name, std::function<void()> body) {
  return std::thread([name = std::move(name), body = std::move(body)] {
    CountedThread counted(name);
    body();
  });
}

std::map<std::string, int> RunningNamedThreads() {
  Registry& registry = TheRegistry();
  std::lock_guard<std::mutex> lock(registry.mutex);
  return registry.running;
}

}  // namespace clusterd
