#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/logging.h"
#include "daemon/head/journal.h"

namespace fs = std::filesystem;
using clusterd::JournalEnd;
using clusterd::JournalWriter;
using clusterd::ReadJournal;
using clusterd::Status;

namespace {

// A fresh directory under the system temp dir, removed with everything in it.
struct TempDir {
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "journal_test.XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string File(const std::string& name) const { return (path / name).string(); }
  fs::path path;
};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void Spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

void PutU32(std::string* s, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*s)[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

std::string Payload(int i) {
  // Sizes 0..~1000 so records straddle nothing in particular, content unique.
  return std::string(static_cast<size_t>((i * 37) % 1001), static_cast<char>('a' + i % 26)) + std::to_string(i);
}

// Writes `payloads` to a new journal at `path`.
void WriteAll(const std::string& path, const std::vector<std::string>& payloads) {
  auto w = JournalWriter::Open(path);
  REQUIRE(w.ok());
  for (const auto& p : payloads) REQUIRE((*w)->Append(p).ok());
}

// Repairs log a line each; hush them for the loops, restore after.
struct QuietLogs {
  QuietLogs() {
    while (old != clusterd::LogLevel::kError && !clusterd::LogEnabled(old)) {
      old = clusterd::LogLevel(static_cast<int>(old) + 1);
    }
    clusterd::SetLogLevel(clusterd::LogLevel::kError);
  }
  ~QuietLogs() { clusterd::SetLogLevel(old); }
  clusterd::LogLevel old = clusterd::LogLevel::kDebug;
};

std::vector<std::string> MustRead(const std::string& path) {
  auto r = ReadJournal(path);
  REQUIRE(r.ok());
  return r->records;
}

}  // namespace

TEST_CASE("journal: CRC masking round-trips and changes the value", "[journal]") {
  for (uint32_t crc : {0u, 1u, 0xdeadbeefu, 0xffffffffu}) {
    REQUIRE(clusterd::UnmaskCrc(clusterd::MaskCrc(crc)) == crc);
    REQUIRE(clusterd::MaskCrc(crc) != crc);
  }
  // An all-zero record header (len 0, crc 0) must not be a valid empty record.
  REQUIRE(clusterd::RecordCrc("") != 0);
}

TEST_CASE("journal: many records round-trip, reopen appends more", "[journal]") {
  TempDir dir;
  const std::string path = dir.File("jobs.journal");
  std::vector<std::string> want;
  for (int i = 0; i < 500; ++i) want.push_back(Payload(i));
  want.push_back(std::string(200000, '\x00'));  // large and binary
  WriteAll(path, want);

  auto r = ReadJournal(path);
  REQUIRE(r.ok());
  REQUIRE(r->records == want);
  REQUIRE(r->end == JournalEnd::kClean);
  REQUIRE(r->note.empty());
  REQUIRE(r->valid_bytes == r->file_bytes);

  clusterd::ReplayResult seen;
  auto w = JournalWriter::Open(path, &seen);
  REQUIRE(w.ok());
  REQUIRE(seen.records.size() == want.size());
  REQUIRE((*w)->size() == r->file_bytes);
  for (int i = 500; i < 600; ++i) {
    want.push_back(Payload(i));
    REQUIRE((*w)->Append(want.back()).ok());
  }
  REQUIRE(MustRead(path) == want);
  // Nothing was dropped, so no side file.
  REQUIRE(std::distance(fs::directory_iterator(dir.path), fs::directory_iterator()) == 1);
}

TEST_CASE("journal: missing and empty files are empty journals", "[journal]") {
  TempDir dir;
  const std::string path = dir.File("j");
  auto missing = ReadJournal(path);
  REQUIRE(missing.ok());
  REQUIRE(missing->records.empty());
  REQUIRE(missing->valid_bytes == 0);
  REQUIRE(missing->end == JournalEnd::kClean);
  REQUIRE_FALSE(fs::exists(path));  // reading creates nothing

  Spit(path, "");
  auto empty = ReadJournal(path);
  REQUIRE(empty.ok());
  REQUIRE(empty->records.empty());
  REQUIRE(empty->end == JournalEnd::kClean);

  auto w = JournalWriter::Open(dir.File("new"));
  REQUIRE(w.ok());
  REQUIRE(fs::file_size(dir.File("new")) == clusterd::kJournalHeaderBytes);
  REQUIRE(Slurp(dir.File("new")).substr(0, 4) == "CLJ1");
  auto header_only = ReadJournal(dir.File("new"));
  REQUIRE(header_only.ok());
  REQUIRE(header_only->records.empty());
  REQUIRE(header_only->valid_bytes == clusterd::kJournalHeaderBytes);
}

TEST_CASE("journal: a tail torn at every byte of the last record is skipped and repaired", "[journal]") {
  QuietLogs quiet;
  TempDir dir;
  const std::string full = dir.File("full");
  std::vector<std::string> first = {"alpha", "", "gamma-gamma", std::string(300, 'x')};
  const std::string last = "the last record, torn at every byte offset";
  WriteAll(full, first);
  const uint64_t last_start = fs::file_size(full);
  WriteAll(full, {last});
  const std::string bytes = Slurp(full);
  REQUIRE(bytes.size() == last_start + clusterd::kRecordHeaderBytes + last.size());

  for (uint64_t cut = last_start; cut < bytes.size(); ++cut) {
    CAPTURE(cut);
    const std::string path = dir.File("torn" + std::to_string(cut));
    Spit(path, bytes.substr(0, cut));
    auto r = ReadJournal(path);
    REQUIRE(r.ok());
    REQUIRE(r->records == first);
    REQUIRE(r->valid_bytes == last_start);
    if (cut == last_start) {
      REQUIRE(r->end == JournalEnd::kClean);
    } else {
      REQUIRE(r->end == JournalEnd::kTornTail);
      REQUIRE_THAT(r->note, Catch::Contains("torn"));
    }

    auto w = JournalWriter::Open(path);
    REQUIRE(w.ok());
    REQUIRE(fs::file_size(path) == last_start);
    REQUIRE((*w)->Append("after repair").ok());
    REQUIRE((*w)->Append(last).ok());
    auto again = ReadJournal(path);
    REQUIRE(again.ok());
    REQUIRE(again->end == JournalEnd::kClean);
    REQUIRE(again->records.size() == first.size() + 2);
    REQUIRE(again->records[first.size()] == "after repair");
    REQUIRE(again->records.back() == last);
    // The dropped bytes were kept beside the journal.
    const std::string dropped = path + ".dropped." + std::to_string(last_start);
    if (cut > last_start) REQUIRE(Slurp(dropped) == bytes.substr(last_start, cut - last_start));
    else REQUIRE_FALSE(fs::exists(dropped));
  }
}

TEST_CASE("journal: a file header torn at every byte is an empty journal", "[journal]") {
  QuietLogs quiet;
  TempDir dir;
  for (uint64_t cut = 1; cut < clusterd::kJournalHeaderBytes; ++cut) {
    CAPTURE(cut);
    const std::string path = dir.File("h" + std::to_string(cut));
    Spit(path, std::string("CLJ1\x01\x00\x00\x00", 8).substr(0, cut));
    auto r = ReadJournal(path);
    REQUIRE(r.ok());
    REQUIRE(r->records.empty());
    REQUIRE(r->valid_bytes == 0);
    REQUIRE(r->end == JournalEnd::kTornTail);
    auto w = JournalWriter::Open(path);
    REQUIRE(w.ok());
    REQUIRE((*w)->Append("first").ok());
    REQUIRE(MustRead(path) == std::vector<std::string>{"first"});
  }
}

TEST_CASE("journal: a flipped byte is corruption, reading stops there, reopen keeps the rest aside", "[journal]") {
  TempDir dir;
  const std::string path = dir.File("j");
  WriteAll(path, {"record-A"});
  const uint64_t b_start = fs::file_size(path);
  WriteAll(path, {"record-B", "record-C"});
  std::string bytes = Slurp(path);

  SECTION("in a payload") { bytes[b_start + clusterd::kRecordHeaderBytes + 3] ^= 0x01; }
  SECTION("in a stored checksum") { bytes[b_start + 5] ^= 0x80; }
  SECTION("in a length that then points inside the file") { bytes[b_start] ^= 0x01; }
  Spit(path, bytes);

  auto r = ReadJournal(path);
  REQUIRE(r.ok());
  REQUIRE(r->records == std::vector<std::string>{"record-A"});  // C is not returned either
  REQUIRE(r->end == JournalEnd::kCorruption);
  REQUIRE(r->valid_bytes == b_start);
  REQUIRE_THAT(r->note, Catch::Contains("checksum mismatch") && Catch::Contains(std::to_string(b_start)));

  auto w = JournalWriter::Open(path);
  REQUIRE(w.ok());
  REQUIRE((*w)->Append("record-D").ok());
  REQUIRE(MustRead(path) == std::vector<std::string>{"record-A", "record-D"});
  REQUIRE(Slurp(path + ".dropped." + std::to_string(b_start)) == bytes.substr(b_start));
}

TEST_CASE("journal: an absurd length is corruption and allocates nothing", "[journal]") {
  TempDir dir;
  const std::string path = dir.File("j");
  WriteAll(path, {"one"});
  const uint64_t second = fs::file_size(path);
  WriteAll(path, {"two"});
  std::string bytes = Slurp(path);

  SECTION("above the cap") {
    PutU32(&bytes, second, 0xfffffff0u);
    Spit(path, bytes);
    auto r = ReadJournal(path);
    REQUIRE(r.ok());
    REQUIRE(r->records == std::vector<std::string>{"one"});
    REQUIRE(r->end == JournalEnd::kCorruption);
    REQUIRE_THAT(r->note, Catch::Contains("limit"));
  }
  SECTION("at the cap but past the end of the file: a torn tail, checked before allocating") {
    PutU32(&bytes, second, clusterd::kMaxRecordBytes);
    Spit(path, bytes);
    auto r = ReadJournal(path);
    REQUIRE(r.ok());
    REQUIRE(r->records == std::vector<std::string>{"one"});
    REQUIRE(r->end == JournalEnd::kTornTail);
  }
}

TEST_CASE("journal: a file that is not a journal is refused and left alone", "[journal]") {
  TempDir dir;
  const std::string path = dir.File("j");
  SECTION("wrong magic") {
    Spit(path, "{\"jobs\": []}\n");
    auto r = ReadJournal(path);
    REQUIRE_FALSE(r.ok());
    REQUIRE(r.status().code() == Status::Code::kCorruption);
    REQUIRE_THAT(r.status().message(), Catch::Contains("not a clusterd journal") && Catch::Contains(path));
    auto w = JournalWriter::Open(path);
    REQUIRE_FALSE(w.ok());
    REQUIRE(w.status().code() == Status::Code::kCorruption);
    REQUIRE(Slurp(path) == "{\"jobs\": []}\n");
  }
  SECTION("a short file whose bytes are not a header prefix") {
    Spit(path, "CLX");
    REQUIRE(ReadJournal(path).status().code() == Status::Code::kCorruption);
  }
  SECTION("unknown version") {
    Spit(path, std::string("CLJ1\x02\x00\x00\x00", 8));
    auto r = ReadJournal(path);
    REQUIRE(r.status().code() == Status::Code::kFailedPrecondition);
    REQUIRE_THAT(r.status().message(), Catch::Contains("version 2"));
    REQUIRE_FALSE(JournalWriter::Open(path).ok());
    REQUIRE(fs::file_size(path) == 8);
  }
}

TEST_CASE("journal: oversized appends are refused before writing", "[journal]") {
  TempDir dir;
  const std::string path = dir.File("j");
  auto w = JournalWriter::Open(path);
  REQUIRE(w.ok());
  Status st = (*w)->Append(std::string(clusterd::kMaxRecordBytes + 1, 'x'));
  REQUIRE(st.code() == Status::Code::kInvalidArgument);
  REQUIRE((*w)->Append("fine").ok());
  REQUIRE(MustRead(path) == std::vector<std::string>{"fine"});
}

TEST_CASE("journal: a failed write returns IOError, leaves no partial record, writer goes on", "[journal]") {
  TempDir dir;
  const std::string path = dir.File("j");
  auto w = JournalWriter::Open(path);
  REQUIRE(w.ok());
  REQUIRE((*w)->Append("before").ok());

  // Make the kernel refuse to grow the file a few bytes into the next record
  // (EFBIG instead of SIGXFSZ), then lift the limit again.
  struct Restore {
    rlimit old{};
    void (*old_handler)(int) = nullptr;
    Restore() {
      ::getrlimit(RLIMIT_FSIZE, &old);
      old_handler = ::signal(SIGXFSZ, SIG_IGN);
    }
    ~Restore() {
      ::setrlimit(RLIMIT_FSIZE, &old);
      ::signal(SIGXFSZ, old_handler);
    }
  } restore;
  rlimit low = restore.old;
  low.rlim_cur = (*w)->size() + 12;  // header + 4 payload bytes fit
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &low) == 0);
  Status st = (*w)->Append(std::string(100, 'y'));
  REQUIRE(::setrlimit(RLIMIT_FSIZE, &restore.old) == 0);

  REQUIRE(st.code() == Status::Code::kIOError);
  REQUIRE_THAT(st.message(), Catch::Contains(path));
  REQUIRE((*w)->Append("after").ok());
  auto r = ReadJournal(path);
  REQUIRE(r.ok());
  REQUIRE(r->records == std::vector<std::string>{"before", "after"});
  REQUIRE(r->end == JournalEnd::kClean);
}

TEST_CASE("journal: JournalRewrite replaces the contents atomically", "[journal]") {
  TempDir dir;
  const std::string path = dir.File("j");
  WriteAll(path, {"a", "b", "c"});
  auto rewrite = clusterd::JournalRewrite::Begin(path);
  REQUIRE(rewrite.ok());
  for (const char* payload : {"c2", "d"}) REQUIRE((*rewrite)->Add(payload).ok());
  REQUIRE((*rewrite)->Commit().ok());
  REQUIRE(MustRead(path) == std::vector<std::string>{"c2", "d"});
  REQUIRE_FALSE(fs::exists(path + ".compact"));
}
