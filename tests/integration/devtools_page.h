// One page of headless Chromium driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: NUL-terminated JSON messages, the browser
// reading fd 3 and writing fd 4). --dump-dom sees a page once; this keeps
// it open, so a test can watch a page change without reloading it (the job
// page's live log tail).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>

#include <google/protobuf/struct.pb.h>

namespace clusterd::testing {

class DevToolsPage {
 public:
  // Starts Chromium with its profile in user_data_dir and attaches to its
  // first page; REQUIREs that it worked.
  explicit DevToolsPage(const std::string& user_data_dir);
  ~DevToolsPage();  // closes the browser; SIGKILLs it if it does not go
  DevToolsPage(const DevToolsPage&) = delete;
  DevToolsPage& operator=(const DevToolsPage&) = delete;

  void Navigate(const std::string& url);
  // The value of a JavaScript expression that yields a string, or "" when
  // it threw or yielded something else.
  std::string EvaluateString(const std::string& expression);
  // Moves the mouse to (x, y) in the page's CSS pixels, as a user's would:
  // the page gets mousemove events where the pointer lands.
  void MouseMove(double x, double y);
  // Lays the page out in a window of width x height CSS pixels.
  void SetWindowSize(int width, int height);
  // Writes a PNG of what the window shows to `path`.
  void Screenshot(const std::string& path);

 private:
  // Sends one command and returns its "result", REQUIREing an answer
  // within the timeout and no "error"; events in between are skipped.
  google::protobuf::Struct Call(const std::string& method, const google::protobuf::Struct& params, bool on_page);

  pid_t pid_ = -1;
  int to_browser_ = -1, from_browser_ = -1;
  std::string received_;
  int next_id_ = 1;
  std::string session_;
  std::chrono::seconds timeout_{30};
};

}  // namespace clusterd::testing
