// What a node keeps of one rank's output in one attempt, under the job's
// log limit: the first (limit - tail) bytes as they come, and the last
// `tail` bytes, which are held here and handed over when the rank ends. In
// between, once output is first dropped, a line says so at once (so that a
// follower knows why the output stopped), and at the end a line says how
// much was dropped, just before the tail, and once more after it (where
// readers of a log's last lines look). Output within the limit is kept
// whole, byte for byte, with no line added. The dropped bytes never leave
// the node: they are not written anywhere.
// The tail is held in memory (at most `tail` bytes a rank, and only for a
// rank past its head part), so that a rank printing without end costs the
// node's disk nothing.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace clusterd {

class RankOutputCap {
 public:
  RankOutputCap() = default;  // no limit: everything is kept as it comes
  // limit_bytes 0: no limit. The tail is at most half the limit.
  RankOutputCap(int64_t limit_bytes, int64_t tail_bytes);

  // The part of `data` to keep now (and, when output is first dropped, the
  // line that says so); the rest is held for the tail or dropped.
  std::string Take(std::string_view data);
  // At the rank's end: the tail held back, after a line saying how much
  // was dropped before it (none when nothing was). Once; "" after that.
  std::string Finish();

  int64_t dropped() const { return seen_ - head_bytes_ - static_cast<int64_t>(held_); }

 private:
  void Hold(std::string_view data);
  std::string Held() const;  // the tail window in order, oldest byte first

  int64_t limit_ = 0;
  int64_t head_bytes_ = 0;
  int64_t tail_bytes_ = 0;
  int64_t seen_ = 0;        // bytes of output so far
  std::string window_;      // the tail window, circular once full
  size_t oldest_ = 0;       // where the oldest byte of a full window_ is
  size_t held_ = 0;         // bytes in window_
  bool told_ = false;       // the line that output is being dropped was kept
  bool finished_ = false;
  char last_kept_ = '\n';   // so that a line of ours begins a line of its own
};

}  // namespace clusterd
