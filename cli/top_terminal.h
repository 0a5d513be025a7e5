// The terminal `clusterctl top` draws on: the alternate screen with the
// cursor hidden and keys read one at a time without echo, given back as it
// was when the view ends, also on SIGINT, SIGTERM and SIGHUP.
#pragma once

#include <string>
#include <vector>

#include "cli/top_frame.h"

namespace clusterd::cli {

class TopTerminal {
 public:
  // Takes over the terminal that out_fd (and, when it is one, in_fd) is.
  TopTerminal(int in_fd, int out_fd);
  ~TopTerminal();
  TopTerminal(const TopTerminal&) = delete;
  TopTerminal& operator=(const TopTerminal&) = delete;

  // The window's size now (TIOCGWINSZ; 80 x 24 where it cannot be read).
  TopSize Size() const;
  // Draws `lines` from the top left, each line cleared to its end and the
  // screen below the last one cleared, in one write: no flicker, nothing
  // left of a longer earlier frame. The lines must fit Size().
  void Draw(const std::vector<std::string>& lines);

  enum class Event { kTimeout, kQuit, kResized };
  // Waits up to `ms` for `q` (kQuit) or a change of the window's size
  // (kResized); other keys are ignored.
  Event Wait(int ms);

 private:
  int in_fd_;
  int out_fd_;
  bool keys_ = false;  // in_fd_ is a terminal set to deliver keys one by one
};

}  // namespace clusterd::cli
