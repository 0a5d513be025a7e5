// PutBlob named at its end, over real gRPC (common/storage/blob_client.h
// BlobUpload, daemon/rpc/store_service.cc): the store keeps a blob only when
// the id and size sent last match the bytes; a wrong id, a wrong size, an
// upload that stops early or never names its blob leave nothing behind.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "common/net/auth.h"
#include "common/sha256.h"
#include "store_server.h"

using namespace clusterd;
using namespace clusterd::testing;
namespace fs = std::filesystem;

namespace {

std::string RandomBytes(size_t n) {
  std::mt19937 rng(7);
  std::string s(n, '\0');
  for (char& c : s) c = static_cast<char>(rng());
  return s;
}

// Sends `data` in uneven pieces, so that messages and pieces do not line up.
Status WriteInPieces(BlobWriter& upload, const std::string& data) {
  for (size_t at = 0, piece = 1000; at < data.size(); at += piece, piece = piece * 3 + 17) {
    RETURN_IF_ERROR(upload.Write(data.data() + at, std::min(piece, data.size() - at)));
  }
  return Status::Ok();
}

// The store drops an abandoned upload's temporary when gRPC tells it the
// call ended, which may be a moment after the client returned.
bool TmpEmptiesSoon(const StoreServer& head) {
  for (int i = 0; i < 200; ++i) {
    if (fs::is_empty(head.TmpDir())) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// A raw PutBlob call, for streams that BlobUpload would never send.
grpc::Status RawPut(const StoreServer& head, const std::vector<BlobChunk>& chunks, bool writes_done = true) {
  auto stub = StoreService::NewStub(grpc::CreateChannel(head.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  AttachToken(&context, StoreServer::kToken);
  BlobInfo reply;
  auto writer = stub->PutBlob(&context, &reply);
  for (const BlobChunk& chunk : chunks) {
    if (!writer->Write(chunk)) break;
  }
  if (writes_done) {
    writer->WritesDone();
  } else {
    context.TryCancel();
  }
  return writer->Finish();
}

// Waits, a while at most, for the store's side of a call to get somewhere.
template <typename Done>
bool Eventually(Done done) {
  for (int i = 0; i < 500; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// The size of the one upload under way's temporary (-1: none or several).
int64_t TmpBytes(const StoreServer& head) {
  int64_t bytes = -1;
  int files = 0;
  for (const auto& file : fs::directory_iterator(head.TmpDir())) {
    bytes = static_cast<int64_t>(file.file_size());
    ++files;
  }
  return files == 1 ? bytes : -1;
}

BlobChunk Chunk(const std::string& data, const std::string& id = "", int64_t size = 0) {
  BlobChunk chunk;
  chunk.set_data(data);
  chunk.set_id(id);
  chunk.set_size(size);
  return chunk;
}

}  // namespace

TEST_CASE("an upload named at its end is stored when its id is right", "[store][upload]") {
  StoreServer head;
  auto client = head.Client();
  const std::string data = RandomBytes((3 << 20) + 12345);  // messages of 1 MiB and a short one
  const std::string id = Sha256Hex(data);

  auto upload = client->StartUpload(static_cast<int64_t>(data.size()), "test data");
  REQUIRE(WriteInPieces(*upload, data).ok());
  REQUIRE(upload->bytes() == static_cast<int64_t>(data.size()));
  Status finished = upload->Finish(id);
  INFO(finished.message());
  REQUIRE(finished.ok());
  REQUIRE(head.store().Has(id));
  auto back = client->Fetch(id, 1 << 30);
  REQUIRE(back.ok());
  REQUIRE(*back == data);
  REQUIRE(fs::is_empty(head.TmpDir()));

  // The same bytes again (a lost hash cache): the store keeps its one copy.
  auto twin = client->StartUpload(0, "test data");
  REQUIRE(twin->Write(data.data(), data.size()).ok());
  REQUIRE(twin->Finish(id).ok());
  REQUIRE(head.store().usage().blobs == 1);

  // An empty blob has an id too.
  auto empty = client->StartUpload(0, "nothing");
  REQUIRE(empty->Finish(Sha256Hex("")).ok());
  REQUIRE(head.store().Has(Sha256Hex("")));

  // The first-message form still works beside it.
  REQUIRE(client->UploadData(Sha256Hex("named first"), "named first").ok());
  REQUIRE(head.store().Has(Sha256Hex("named first")));
}

TEST_CASE("an upload whose id or size sent last is wrong stores nothing", "[store][upload]") {
  StoreServer head;
  auto client = head.Client();
  const std::string data = RandomBytes(1500000);
  const std::string claimed = Sha256Hex("something else");

  auto upload = client->StartUpload(static_cast<int64_t>(data.size()), "test data");
  REQUIRE(WriteInPieces(*upload, data).ok());
  Status finished = upload->Finish(claimed);
  REQUIRE(finished.code() == Status::Code::kCorruption);  // DATA_LOSS on the wire
  INFO(finished.message());
  REQUIRE(finished.message().find("uploading test data to the head") != std::string::npos);
  REQUIRE(finished.message().find("hash to " + Sha256Hex(data)) != std::string::npos);
  REQUIRE(finished.message().find('\n') == std::string::npos);
  REQUIRE_FALSE(head.store().Has(claimed));
  REQUIRE_FALSE(head.store().Has(Sha256Hex(data)));
  REQUIRE(head.store().usage().blobs == 0);
  REQUIRE(TmpEmptiesSoon(head));
  REQUIRE(upload->Write("more", 4).code() == Status::Code::kCorruption);  // the error sticks

  // The right id with a size other than what arrived.
  grpc::Status sized = RawPut(head, {Chunk("abc"), Chunk("def", Sha256Hex("abcdef"), 7)});
  REQUIRE(sized.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  REQUIRE_FALSE(head.store().Has(Sha256Hex("abcdef")));
  // Not an id at all.
  grpc::Status bad = RawPut(head, {Chunk("abc"), Chunk("", "../../etc/passwd", 3)});
  REQUIRE(bad.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  // Bytes after the chunk that named the blob.
  grpc::Status late = RawPut(head, {Chunk("ab"), Chunk("c", Sha256Hex("abc"), 3), Chunk("def")});
  REQUIRE(late.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  REQUIRE(head.store().usage().blobs == 0);
  REQUIRE(TmpEmptiesSoon(head));
}

TEST_CASE("an upload that stops before naming its blob stores nothing", "[store][upload]") {
  StoreServer head;
  auto client = head.Client();
  const std::string data = RandomBytes(2500000);

  SECTION("the client goes away mid-stream") {
    auto upload = client->StartUpload(static_cast<int64_t>(data.size()), "test data");
    REQUIRE(upload->Write(data.data(), data.size() / 2).ok());
    upload.reset();  // cancels the call
  }
  SECTION("the stream ends without the chunk that names the blob") {
    grpc::Status ended = RawPut(head, {Chunk(data.substr(0, 1000000)), Chunk(data.substr(1000000))});
    REQUIRE(ended.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    REQUIRE(ended.error_message().find("ended before") != std::string::npos);
  }
  SECTION("the stream is cut after some bytes") {
    grpc::Status cut = RawPut(head, {Chunk(data.substr(0, 1000000))}, /*writes_done=*/false);
    REQUIRE_FALSE(cut.ok());
  }
  REQUIRE(TmpEmptiesSoon(head));
  REQUIRE(head.store().usage().blobs == 0);
  REQUIRE_FALSE(head.store().Has(Sha256Hex(data)));
}

// A client cannot empty the store by announcing a huge upload, over real
// gRPC: the announcement in a PutBlob's first chunk is only a bound; room
// is taken per byte as it arrives.
TEST_CASE("a PutBlob that announces the whole store, sends a byte and holds the stream evicts nothing",
          "[store][upload][store_room]") {
  constexpr int64_t kCap = 3 << 20;
  StoreServer head(kCap);
  std::vector<std::string> released;
  head.store().set_on_released([&](const std::string& owner, const std::string&) { released.push_back(owner); });
  auto client = head.Client();
  std::vector<std::string> finished;  // two finished jobs' outputs, 2 of the 3 MiB
  for (char c : {'a', 'b'}) {
    const std::string data(1 << 20, c);
    finished.push_back(Sha256Hex(data));
    REQUIRE(client->UploadData(finished.back(), data).ok());
    head.store().Pin(std::string("job-") + c + "/outputs", finished.back());
    head.store().MakeSoft(std::string("job-") + c + "/outputs");
  }

  auto stub = StoreService::NewStub(grpc::CreateChannel(head.address(), grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  AttachToken(&context, StoreServer::kToken);
  BlobInfo reply;
  auto stalled = stub->PutBlob(&context, &reply);
  REQUIRE(stalled->Write(Chunk("x", Sha256Hex("three mebibytes, promised"), kCap)));
  REQUIRE(Eventually([&] { return TmpBytes(head) == 1; }));  // the byte is on the head's disk
  CHECK(released.empty());
  for (const std::string& id : finished) CHECK(head.store().Has(id));

  // A package beside it is taken, and still nothing goes.
  const std::string package = RandomBytes(512 << 10);
  CHECK(client->UploadData(Sha256Hex(package), package).ok());
  CHECK(head.store().Has(Sha256Hex(package)));
  CHECK(released.empty());

  // The client dies: its byte's room comes back.
  context.TryCancel();
  CHECK_FALSE(stalled->Finish().ok());
  REQUIRE(TmpEmptiesSoon(head));
  CHECK(Eventually([&] { return head.store().usage().reserved_bytes == 0; }));
  for (const std::string& id : finished) CHECK(head.store().Has(id));
}
