// Rank logs in S3, for heads in HA (docs/HA.md): each leader writes the new
// output of each rank log as chunk objects, one per log and flush, named
// PREFIX/logs/<job id>/rank-<n>/<start>-<end>-<term>: the byte range
// [start, end) of the log, in 16 digits each so that a listing sorts them,
// and the leader's term (its etcd lease revision, larger for every new
// leader) so that two leaders never write the same object.
//
// A new leader reads a log back by planning its listed chunks
// (PlanLogChunks): a chunk is superseded by one of a later term that starts
// at or before it (a deposed leader's write that landed late; the new
// leader went on from where the chunks it read ended), chunks are read in
// order of their start, overlaps are cut, and a range no chunk holds (output
// a leader could not write to S3) is a gap the reader marks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace clusterd {

struct StoredLogChunk {
  std::string job_id;
  int rank = 0;
  int64_t start = 0;  // the chunk's first byte in the log
  int64_t end = 0;    // after its last byte
  int64_t term = 0;   // the leader that wrote it
  std::string key;    // the object's key
};

// "PREFIX/logs/" ("logs/" for a bucket without a prefix): every chunk.
std::string LogChunksPrefix(const std::string& store_prefix);
// "PREFIX/logs/<job id>/": a job's chunks, every rank.
std::string JobChunksPrefix(const std::string& store_prefix, const std::string& job_id);
// The key of a chunk; REQUIRES 0 <= start < end, rank >= 0, term >= 0.
std::string LogChunkKey(const std::string& store_prefix, const std::string& job_id, int rank, int64_t start,
                        int64_t end, int64_t term);
// A listed key back into its chunk; InvalidArgument naming the key and what
// is wrong when it is not one (the prefix, the rank, the numbers, an empty
// range).
Result<StoredLogChunk> ParseLogChunkKey(const std::string& store_prefix, const std::string& key);

// How to read one log back from its chunks.
struct LogChunkPlan {
  struct Piece {
    StoredLogChunk chunk;
    int64_t skip = 0;        // bytes at the chunk's start that earlier pieces already gave
    int64_t gap_before = 0;  // bytes of the log before it that no chunk holds
  };
  std::vector<Piece> pieces;  // in order
  int64_t end = 0;            // the log's end in S3: where the next chunk starts
  int64_t gap_bytes = 0;      // in all
  int superseded = 0;         // chunks left out for a later term's
};
// The chunks of one log, in any order.
LogChunkPlan PlanLogChunks(std::vector<StoredLogChunk> chunks);

// The line a reader puts where `bytes` of a log are missing.
std::string LogGapLine(int64_t bytes);

}  // namespace clusterd
