// BlobClient::OpenDownload over real gRPC: a blob read piece by piece, whose
// Finish checks the whole; a copy gone bad on the head's disk, an unknown
// id, and a reader that stops early.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <random>

#include "common/sha256.h"
#include "store_server.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

std::string RandomBytes(size_t n) {
  std::mt19937 rng(11);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Reads `source` to its end, then finishes it.
Result<std::string> ReadAll(ByteSource& source) {
  std::string out;
  std::string_view piece;
  do {
    RETURN_IF_ERROR(source.Next(&piece));
    out.append(piece);
  } while (!piece.empty());
  RETURN_IF_ERROR(source.Finish());
  return out;
}

}  // namespace

TEST_CASE("a download read piece by piece is checked as a whole at its end", "[store][download]") {
  StoreServer head;
  auto client = head.Client();
  const std::string data = RandomBytes((2 << 20) + 777);
  const std::string id = Sha256Hex(data);
  REQUIRE(client->UploadData(id, data).ok());

  auto source = client->OpenDownload(id, static_cast<int64_t>(data.size()));
  auto got = ReadAll(*source);
  INFO(got.status().message());
  REQUIRE(got.ok());
  REQUIRE(*got == data);

  // Finish reads what the caller left.
  source = client->OpenDownload(id, 0);
  std::string_view piece;
  REQUIRE(source->Next(&piece).ok());
  REQUIRE_FALSE(piece.empty());
  REQUIRE(source->Finish().ok());

  // An empty blob.
  REQUIRE(client->UploadData(Sha256Hex(""), "").ok());
  source = client->OpenDownload(Sha256Hex(""), 0);
  REQUIRE(ReadAll(*source).ok());

  // The head's copy goes bad on its disk: same size, one byte flipped.
  head.Corrupt(id, 1 << 20);
  source = client->OpenDownload(id, 0);
  auto bad = ReadAll(*source);
  REQUIRE(bad.status().code() == Status::Code::kCorruption);
  REQUIRE(bad.status().message().find("blob " + id + " from the head failed its hash check") != std::string::npos);
  // The download had the head check its copy, which it dropped, so the
  // right bytes can be uploaded again rather than refused as present, with
  // every launch failing for ever.
  CHECK(bad.status().message().find("; the head's copy was corrupt and is dropped (a package comes again with the next "
                                    "submit; a checkpoint or outputs are lost)") != std::string::npos);
  CHECK_FALSE(client->Stat(id)->present());
  REQUIRE(client->UploadData(id, data).ok());
  source = client->OpenDownload(id, 0);
  REQUIRE(ReadAll(*source).ok());

  // An id the store does not have.
  source = client->OpenDownload(Sha256Hex("never stored"), 0);
  REQUIRE(source->Next(&piece).code() == Status::Code::kNotFound);
  REQUIRE(source->Finish().code() == Status::Code::kNotFound);

  // Dropped half way: the call is cancelled, nothing hangs.
  source = client->OpenDownload(id, 0);
  REQUIRE(source->Next(&piece).ok());
  source.reset();
}

TEST_CASE("a whole-blob download that fails its hash check has the head drop its bad copy", "[store][download]") {
  StoreServer head;
  auto client = head.Client();
  const std::string data = RandomBytes(3 << 20);
  const std::string id = Sha256Hex(data);
  REQUIRE(client->UploadData(id, data).ok());
  head.Corrupt(id, 12345);
  const std::string path = head.dir() + "/downloaded";
  Status bad = client->Download(id, path);
  REQUIRE(bad.code() == Status::Code::kCorruption);
  CHECK(bad.message().find("the head's copy was corrupt and is dropped") != std::string::npos);
  CHECK_FALSE(client->Stat(id)->present());
  REQUIRE(client->UploadData(id, data).ok());
  REQUIRE(client->Download(id, path).ok());

  // Cut short on the head's disk (a crash): dropped too, not served for ever.
  REQUIRE(truncate(head.BlobPath(id).c_str(), 1000) == 0);
  Status cut = client->Download(id, path);
  REQUIRE(cut.code() == Status::Code::kCorruption);
  CHECK(cut.message().find("ended early at byte 1000 on the head: short file, which the head drops") !=
        std::string::npos);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (client->Stat(id)->present() && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  CHECK_FALSE(client->Stat(id)->present());
  REQUIRE(client->UploadData(id, data).ok());
  REQUIRE(client->Download(id, path).ok());
}
