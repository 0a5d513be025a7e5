#include "cli/top_terminal.h"

#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>

namespace clusterd::cli {

namespace {

// Alternate screen on, cursor hidden; and back.
constexpr char kEnter[] = "\x1b[?1049h\x1b[?25l";
constexpr char kLeave[] = "\x1b[?25h\x1b[?1049l";

// What the signal handlers need to give the terminal back: plain globals,
// as a handler may only read them.
struct SavedTerminal {
  int in_fd = -1;
  int out_fd = -1;
  bool keys = false;
  struct termios mode {};
};
SavedTerminal g_saved;
volatile sig_atomic_t g_resized = 0;
struct sigaction g_old_int, g_old_term, g_old_hup, g_old_winch;

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Async-signal-safe: write(2) and tcsetattr(3) only.
void GiveBack() {
  if (g_saved.out_fd < 0) return;
  WriteAll(g_saved.out_fd, kLeave, sizeof(kLeave) - 1);
  if (g_saved.keys) tcsetattr(g_saved.in_fd, TCSAFLUSH, &g_saved.mode);
  g_saved.out_fd = -1;
}

// The terminal as it was, then the signal's own default action (the
// process ends by it, as a shell expects of Ctrl-C).
void OnEndSignal(int sig) {
  GiveBack();
  signal(sig, SIG_DFL);
  raise(sig);
}

void OnResize(int) { g_resized = 1; }

void Install(int sig, void (*handler)(int), struct sigaction* old) {
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  action.sa_flags = 0;  // no SA_RESTART: poll() returns at once with EINTR
  sigaction(sig, &action, old);
}

}  // namespace

TopTerminal::TopTerminal(int in_fd, int out_fd) : in_fd_(in_fd), out_fd_(out_fd) {
  struct termios mode {};
  if (isatty(in_fd_) && tcgetattr(in_fd_, &mode) == 0) {
    g_saved.mode = mode;
    struct termios raw = mode;
    // Keys one at a time without echo; ISIG stays, so Ctrl-C is SIGINT.
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    keys_ = tcsetattr(in_fd_, TCSAFLUSH, &raw) == 0;
  }
  g_saved.in_fd = in_fd_;
  g_saved.keys = keys_;
  g_saved.out_fd = out_fd_;
  Install(SIGINT, OnEndSignal, &g_old_int);
  Install(SIGTERM, OnEndSignal, &g_old_term);
  Install(SIGHUP, OnEndSignal, &g_old_hup);
  Install(SIGWINCH, OnResize, &g_old_winch);
  WriteAll(out_fd_, kEnter, sizeof(kEnter) - 1);
}

TopTerminal::~TopTerminal() {
  GiveBack();
  sigaction(SIGINT, &g_old_int, nullptr);
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGHUP, &g_old_hup, nullptr);
  sigaction(SIGWINCH, &g_old_winch, nullptr);
}

TopSize TopTerminal::Size() const {
  struct winsize size {};
  if (ioctl(out_fd_, TIOCGWINSZ, &size) == 0 && size.ws_col > 0 && size.ws_row > 0) {
    return {size.ws_col, size.ws_row};
  }
  return {80, 24};
}

void TopTerminal::Draw(const std::vector<std::string>& lines) {
  std::string frame = "\x1b[H";
  for (size_t i = 0; i < lines.size(); ++i) {
    frame += lines[i] + "\x1b[K";
    // No line break after the last line: on the bottom row it would scroll.
    if (i + 1 < lines.size()) frame += "\r\n";
  }
  frame += "\x1b[J";
  WriteAll(out_fd_, frame.data(), frame.size());
}

TopTerminal::Event TopTerminal::Wait(int ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (true) {
    if (g_resized) {
      g_resized = 0;
      return Event::kResized;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Event::kTimeout;
    struct pollfd fd {keys_ ? in_fd_ : -1, POLLIN, 0};
    const int ready = poll(&fd, 1, static_cast<int>(left.count()));
    if (ready <= 0) continue;  // EINTR (a resize: seen above) or the time is up
    if (fd.revents & (POLLHUP | POLLERR | POLLNVAL)) {
      keys_ = false;  // the input went away: wait out the interval instead
      continue;
    }
    char keys[64];
    const ssize_t n = ::read(in_fd_, keys, sizeof keys);
    for (ssize_t i = 0; i < n; ++i) {
      if (keys[i] == 'q' || keys[i] == 'Q') return Event::kQuit;
    }
  }
}

}  // namespace clusterd::cli
