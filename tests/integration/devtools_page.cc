#include "devtools_page.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <vector>

#include "harness.h"

extern char** environ;

namespace clusterd::testing {

namespace {

constexpr char kChromium[] = "/usr/bin/chromium-headless-shell";

// A pipe whose ends sit above the descriptors the child's 3 and 4 will be.
void HighPipe(int ends[2]) {
  int low[2];
  REQUIRE(pipe2(low, O_CLOEXEC) == 0);
  for (int i = 0; i < 2; ++i) {
    ends[i] = fcntl(low[i], F_DUPFD_CLOEXEC, 10);
    REQUIRE(ends[i] >= 10);
    close(low[i]);
  }
}

google::protobuf::Value StringValue(const std::string& s) {
  google::protobuf::Value v;
  v.set_string_value(s);
  return v;
}

google::protobuf::Value NumberValue(double n) {
  google::protobuf::Value v;
  v.set_number_value(n);
  return v;
}

// The bytes of base64 `text` (DevTools sends a screenshot so); REQUIREs it is base64.
std::string FromBase64(const std::string& text) {
  static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  unsigned bits = 0;
  int held = 0;
  for (char c : text) {
    if (c == '=') break;
    const size_t value = kAlphabet.find(c);
    INFO("not base64: " << c);
    REQUIRE(value != std::string::npos);
    bits = (bits << 6) | static_cast<unsigned>(value);
    held += 6;
    if (held >= 8) {
      held -= 8;
      out.push_back(static_cast<char>((bits >> held) & 0xff));
    }
  }
  return out;
}

}  // namespace

DevToolsPage::DevToolsPage(const std::string& user_data_dir) {
  REQUIRE(access(kChromium, X_OK) == 0);  // package chromium-headless-shell (scripts/lib.sh installs it)
  int commands[2], events[2];
  HighPipe(commands);
  HighPipe(events);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, commands[0], 3);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&actions, events[1], 4);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::vector<std::string> args = {kChromium, "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
                                   "--user-data-dir=" + user_data_dir, "about:blank"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int spawned = posix_spawn(&pid_, kChromium, &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(commands[0]);
  close(events[1]);
  to_browser_ = commands[1];
  from_browser_ = events[0];
  REQUIRE(spawned == 0);

  google::protobuf::Struct targets = Call("Target.getTargets", {}, false);
  std::string page;
  for (const auto& target : targets.fields().at("targetInfos").list_value().values()) {
    const auto& info = target.struct_value().fields();
    if (info.at("type").string_value() == "page") page = info.at("targetId").string_value();
  }
  REQUIRE_FALSE(page.empty());
  google::protobuf::Struct attach;
  (*attach.mutable_fields())["targetId"] = StringValue(page);
  (*attach.mutable_fields())["flatten"].set_bool_value(true);
  session_ = Call("Target.attachToTarget", attach, false).fields().at("sessionId").string_value();
  REQUIRE_FALSE(session_.empty());
}

DevToolsPage::~DevToolsPage() {
  if (pid_ > 0) {
    std::string close_browser = "{\"id\":" + std::to_string(next_id_++) + ",\"method\":\"Browser.close\"}";
    close_browser.push_back('\0');
    ssize_t written = write(to_browser_, close_browser.data(), close_browser.size());
    (void)written;
    bool gone = WaitFor([&] { return waitpid(pid_, nullptr, WNOHANG) == pid_; }, std::chrono::seconds(10));
    if (!gone) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  if (to_browser_ >= 0) close(to_browser_);
  if (from_browser_ >= 0) close(from_browser_);
}

void DevToolsPage::Navigate(const std::string& url) {
  google::protobuf::Struct params;
  (*params.mutable_fields())["url"] = StringValue(url);
  Call("Page.navigate", params, true);
}

std::string DevToolsPage::EvaluateString(const std::string& expression) {
  google::protobuf::Struct params;
  (*params.mutable_fields())["expression"] = StringValue(expression);
  (*params.mutable_fields())["returnByValue"].set_bool_value(true);
  google::protobuf::Struct result = Call("Runtime.evaluate", params, true);
  const auto& value = result.fields().at("result").struct_value().fields();
  auto it = value.find("value");
  return it != value.end() && it->second.has_string_value() ? it->second.string_value() : "";
}

void DevToolsPage::MouseMove(double x, double y) {
  google::protobuf::Struct params;
  (*params.mutable_fields())["type"] = StringValue("mouseMoved");
  (*params.mutable_fields())["x"] = NumberValue(x);
  (*params.mutable_fields())["y"] = NumberValue(y);
  Call("Input.dispatchMouseEvent", params, true);
}

void DevToolsPage::SetWindowSize(int width, int height) {
  google::protobuf::Struct params;
  (*params.mutable_fields())["width"] = NumberValue(width);
  (*params.mutable_fields())["height"] = NumberValue(height);
  (*params.mutable_fields())["deviceScaleFactor"] = NumberValue(1);
  (*params.mutable_fields())["mobile"].set_bool_value(false);
  Call("Emulation.setDeviceMetricsOverride", params, true);
}

void DevToolsPage::Screenshot(const std::string& path) {
  google::protobuf::Struct params;
  (*params.mutable_fields())["format"] = StringValue("png");
  google::protobuf::Struct shot = Call("Page.captureScreenshot", params, true);
  const std::string png = FromBase64(shot.fields().at("data").string_value());
  REQUIRE(png.substr(1, 3) == "PNG");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << png;
  INFO("cannot write " << path);
  REQUIRE(out.good());
}

google::protobuf::Struct DevToolsPage::Call(const std::string& method, const google::protobuf::Struct& params,
                                            bool on_page) {
  const int id = next_id_++;
  google::protobuf::Struct command;
  (*command.mutable_fields())["id"].set_number_value(id);
  (*command.mutable_fields())["method"] = StringValue(method);
  *(*command.mutable_fields())["params"].mutable_struct_value() = params;
  if (on_page) (*command.mutable_fields())["sessionId"] = StringValue(session_);
  std::string text;
  REQUIRE(google::protobuf::util::MessageToJsonString(command, &text).ok());
  text.push_back('\0');
  for (size_t sent = 0; sent < text.size();) {
    ssize_t n = write(to_browser_, text.data() + sent, text.size() - sent);
    REQUIRE(n > 0);
    sent += static_cast<size_t>(n);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    for (size_t end; (end = received_.find('\0')) != std::string::npos;) {
      const std::string raw = received_.substr(0, end);
      received_.erase(0, end + 1);
      google::protobuf::Struct message;
      bool parsed = google::protobuf::util::JsonStringToMessage(raw, &message).ok();
      if (!parsed) continue;
      const auto& fields = message.fields();
      auto answer = fields.find("id");
      if (answer == fields.end() || answer->second.number_value() != id) continue;  // an event, or another's
      INFO(method << " failed: " << raw);
      REQUIRE(fields.find("error") == fields.end());
      return fields.at("result").struct_value();
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    INFO("no answer from Chromium to " << method);
    REQUIRE(left.count() > 0);
    pollfd readable{from_browser_, POLLIN, 0};
    if (poll(&readable, 1, static_cast<int>(left.count())) <= 0) continue;
    char buffer[65536];
    ssize_t n = read(from_browser_, buffer, sizeof buffer);
    INFO("Chromium closed its DevTools pipe during " << method);
    REQUIRE(n > 0);
    received_.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace clusterd::testing
