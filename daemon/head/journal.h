// The head's append-only record log (DESIGN rule 7), in the spirit of
// LevelDB's db/log_format.h but without blocks.
//
// File format (all integers little-endian):
//   file header:  "CLJ1" (4 bytes) | u32 version (= 1)
//   record:       u32 payload length | u32 masked CRC32 of the payload | payload
// The CRC is zlib's crc32 (IEEE polynomial) of the payload bytes only, masked
// like LevelDB (rotate right 15, add a constant) so that a payload which is
// itself a CRC-bearing record does not checksum to a value stored inside it,
// and so that an all-zero region (len 0, crc 0) is not a valid empty record.
//
// Reading stops at the first record that is not complete and valid:
//   - torn tail: fewer than 8 header bytes left, or a length that runs past
//     EOF. What a crash in the middle of Append leaves; skipped with a note.
//   - corruption: a CRC mismatch, or a length above kMaxRecordBytes (never
//     allocated). Reading STOPS there: with no block boundaries there is no
//     safe place to resync, so records after it are not returned.
// A length field flipped mid-file to point past EOF is indistinguishable from
// a torn tail; JournalWriter::Open saves every dropped byte to a side file so
// nothing is silently destroyed either way.
//
// NOT thread-safe: driven from the head's one event-loop thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace clusterd {

// The file's format, fixed: a journal written by one head is read by the next.
inline constexpr char kJournalMagic[4] = {'C', 'L', 'J', '1'};
inline constexpr uint32_t kJournalVersion = 1;
inline constexpr uint64_t kJournalHeaderBytes = 8;
inline constexpr uint64_t kRecordHeaderBytes = 8;
// Larger lengths are corruption. A JournalEntry is a job record or a metric:
// kilobytes, not megabytes.
inline constexpr uint32_t kMaxRecordBytes = 64u << 20;

// LevelDB-style CRC masking, exposed for tests.
uint32_t MaskCrc(uint32_t crc);
uint32_t UnmaskCrc(uint32_t masked);
// Masked crc32 of `payload`, as stored in a record header.
uint32_t RecordCrc(std::string_view payload);

enum class JournalEnd {
  kClean,       // the file ends exactly after the last record
  kTornTail,    // an incomplete record at the end (crash during Append)
  kCorruption,  // a bad CRC or an absurd length; later bytes not read
};

struct ReplayResult {
  std::vector<std::string> records;  // complete, checksum-valid payloads, in order
  uint64_t valid_bytes = 0;  // offset just past the last good record (or the
                             // file header); 0 when there is no whole header
  uint64_t file_bytes = 0;   // size of the file as read
  JournalEnd end = JournalEnd::kClean;
  std::string note;          // why reading stopped early; empty when kClean
};

// Reads every good record of the journal at `path`. A missing or empty file
// is an empty journal (zero records, valid_bytes 0). Torn tails and corrupt
// records are reported in the result, not as an error (the records before
// them are still good). Errors: IOError (cannot read), Corruption (not a
// clusterd journal: wrong magic), FailedPrecondition (unknown version).
Result<ReplayResult> ReadJournal(const std::string& path);

// Appends records to one journal file; each Append is durable (fdatasync)
// before it returns. Owns its file descriptor. NOT thread-safe.
class JournalWriter {
 public:
  // Opens `path` for appending, creating it (with the file header, and the
  // parent directory synced) if missing or empty. An existing journal is read
  // first; if it ends in a torn tail or corruption, the bytes after
  // valid_bytes are copied to "<path>.dropped.<valid_bytes>[.N]" and the file
  // is truncated to valid_bytes, so new records land where a reader finds
  // them. Logs how many bytes were dropped. If `replay` is given it receives
  // what was read before the repair. On ReadJournal's errors (e.g. not a
  // journal) it fails without touching the file; otherwise IOError.
  static Result<std::unique_ptr<JournalWriter>> Open(const std::string& path,
                                                     ReplayResult* replay = nullptr);

  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  // Writes one record and fdatasyncs. Errors: InvalidArgument (payload larger
  // than kMaxRecordBytes), IOError (write or sync failed; never aborts).
  // After a failed write the partial record is truncated away and the writer
  // stays usable. After a failed sync the writer refuses all further Appends
  // (the kernel may have dropped the dirty pages, so a later "successful"
  // sync would be a lie) and cuts the record off as best it can; rewrite the
  // journal (JournalRewrite) from what is known to be good to continue.
  Status Append(std::string_view payload);
  // Writes one record without syncing it: durable once a later sync of
  // fd() returns (group commit: one fdatasync for many records). Errors as
  // Append's write part.
  Status Write(std::string_view payload);
  // The file, for a sync on another thread (dup it: the writer may close it).
  int fd() const { return fd_; }

  const std::string& path() const { return path_; }
  // Bytes of good data in the file: header plus all appended records.
  uint64_t size() const { return size_; }

 private:
  JournalWriter(std::string path, int fd, uint64_t size);

  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string broken_;  // non-empty after a failed sync: why Append refuses
};

// Replaces the journal at `path` record by record, so that a snapshot of a
// large state is never all in memory at once: writes "<path>.compact" as
// records are added (a buffer of kFlushBytes at most), and Commit fsyncs
// it, renames it over `path` and syncs the directory, so a crash leaves
// either the old or the new journal; one not committed is deleted with the
// object. REQUIRES: no JournalWriter is open on `path` (it would keep
// appending to the old inode).
class JournalRewrite {
 public:
  static constexpr size_t kFlushBytes = 1 << 20;
  static Result<std::unique_ptr<JournalRewrite>> Begin(const std::string& path);
  ~JournalRewrite();
  JournalRewrite(const JournalRewrite&) = delete;
  JournalRewrite& operator=(const JournalRewrite&) = delete;

  // InvalidArgument for a payload over kMaxRecordBytes, IOError for a failed write.
  Status Add(std::string_view payload);
  Status Commit();

 private:
  JournalRewrite(std::string path, std::string tmp, int fd)
      : path_(std::move(path)), tmp_(std::move(tmp)), fd_(fd) {}
  Status Flush();

  std::string path_, tmp_;
  int fd_ = -1;
  std::string buffer_;   // records not yet written
  uint64_t written_ = 0;
  bool committed_ = false;
};


}  // namespace clusterd
