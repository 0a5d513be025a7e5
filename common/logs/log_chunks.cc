#include "common/logs/log_chunks.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

namespace clusterd {
namespace {

constexpr int kDigits = 16;

// A non-negative number of exactly kDigits decimal digits, or -1.
int64_t ParseFixedDigits(const std::string& text) {
  if (text.size() != kDigits) return -1;
  int64_t value = 0;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

}  // namespace

std::string LogChunksPrefix(const std::string& store_prefix) {
  return store_prefix.empty() ? "logs/" : store_prefix + "/logs/";
}

std::string JobChunksPrefix(const std::string& store_prefix, const std::string& job_id) {
  return LogChunksPrefix(store_prefix) + job_id + "/";
}

std::string LogChunkKey(const std::string& store_prefix, const std::string& job_id, int rank, int64_t start,
                        int64_t end, int64_t term) {
  return fmt::format("{}rank-{}/{:016d}-{:016d}-{:016d}", JobChunksPrefix(store_prefix, job_id), rank, start, end,
                     term);
}

Result<StoredLogChunk> ParseLogChunkKey(const std::string& store_prefix, const std::string& key) {
  auto bad = [&key](const std::string& why) {
    return Status::InvalidArgument(fmt::format("{} is not a rank log's chunk: {}", key, why));
  };
  const std::string prefix = LogChunksPrefix(store_prefix);
  if (key.compare(0, prefix.size(), prefix) != 0) return bad("it is not under " + prefix);
  const std::string rest = key.substr(prefix.size());
  // <job id>/rank-<n>/<start>-<end>-<term>
  const size_t name_at = rest.rfind('/');
  if (name_at == std::string::npos) return bad("no rank-<n>/ in it");
  const size_t rank_at = rest.rfind('/', name_at - 1);
  if (rank_at == std::string::npos || rank_at == 0 || name_at == 0) return bad("no <job id>/rank-<n>/ in it");
  StoredLogChunk chunk;
  chunk.key = key;
  chunk.job_id = rest.substr(0, rank_at);
  const std::string rank = rest.substr(rank_at + 1, name_at - rank_at - 1);
  if (rank.size() < 6 || rank.compare(0, 5, "rank-") != 0 || rank.size() > 5 + 9 ||
      !std::all_of(rank.begin() + 5, rank.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return bad(fmt::format("'{}' is not rank-<n>", rank));
  }
  chunk.rank = std::stoi(rank.substr(5));
  const std::string name = rest.substr(name_at + 1);
  if (name.size() != 3 * kDigits + 2 || name[kDigits] != '-' || name[2 * kDigits + 1] != '-') {
    return bad(fmt::format("'{}' is not <start>-<end>-<term> in {} digits each", name, kDigits));
  }
  chunk.start = ParseFixedDigits(name.substr(0, kDigits));
  chunk.end = ParseFixedDigits(name.substr(kDigits + 1, kDigits));
  chunk.term = ParseFixedDigits(name.substr(2 * kDigits + 2));
  if (chunk.start < 0 || chunk.end < 0 || chunk.term < 0) {
    return bad(fmt::format("'{}' is not <start>-<end>-<term> in {} digits each", name, kDigits));
  }
  if (chunk.end <= chunk.start) return bad(fmt::format("it ends at {}, not after its start {}", chunk.end, chunk.start));
  return chunk;
}

LogChunkPlan PlanLogChunks(std::vector<StoredLogChunk> chunks) {
  // By start; at one start the later term first, then the longer chunk (a
  // retried write that took in more output), so that the others are cut.
  std::sort(chunks.begin(), chunks.end(), [](const StoredLogChunk& a, const StoredLogChunk& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.term != b.term) return a.term > b.term;
    return a.end > b.end;
  });
  LogChunkPlan plan;
  // The latest term among chunks that start at or before the one looked at:
  // a chunk of an earlier term than that was written by a leader that was
  // deposed by then, after its successor had read the log (superseded).
  int64_t latest_term = -1;
  int64_t expected = 0;
  for (const StoredLogChunk& chunk : chunks) {
    latest_term = std::max(latest_term, chunk.term);
    if (chunk.term < latest_term) {
      ++plan.superseded;
      continue;
    }
    if (chunk.end <= expected) continue;  // all of it given already
    LogChunkPlan::Piece piece;
    piece.chunk = chunk;
    if (chunk.start > expected) {
      piece.gap_before = chunk.start - expected;
      plan.gap_bytes += piece.gap_before;
    } else {
      piece.skip = expected - chunk.start;
    }
    expected = chunk.end;
    plan.pieces.push_back(std::move(piece));
  }
  plan.end = expected;
  return plan;
}

std::string LogGapLine(int64_t bytes) {
  return fmt::format(
      "[clusterd: {} bytes of this log are missing here: the head that received them did not get them into S3 "
      "(docs/HA.md, rank logs)]\n",
      bytes);
}

}  // namespace clusterd
