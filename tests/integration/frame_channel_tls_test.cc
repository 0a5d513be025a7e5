// The agents' framed connection over TLS (common/net/frame_channel.h), with
// certificates made by the openssl command: frames go both ways once the
// dialer has verified the head's certificate, and a dialer with another CA
// is refused at the handshake, in one line that says so.
#include <catch2/catch.hpp>

#include <future>

#include <fmt/format.h>

#include "../unit/frame_test_util.h"
#include "agent.pb.h"
#include "test_certs.h"

using namespace clusterd;
using namespace clusterd::testing;
using tcp = boost::asio::ip::tcp;

namespace {

// A TLS listener on loopback that takes one connection, handshakes it on
// the test's thread, and hands it over as a channel (nullptr: the handshake failed).
struct TlsListener {
  explicit TlsListener(IoThread* io_thread, const TlsConfig& head)
      : io(io_thread), acceptor(io->io, tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)) {
    auto made = ServerTlsContext(head);
    REQUIRE(made.ok());
    context = *made;
  }
  std::shared_ptr<FrameChannel> AcceptOne(std::string* error) {
    auto made = TlsSocket::Make(acceptor.accept(), *context, /*server=*/true);
    if (!made.ok()) {
      *error = made.status().message();
      return nullptr;
    }
    std::promise<boost::system::error_code> shaken;
    boost::asio::post(io->io, [&] {
      (*made)->AsyncHandshake([&](const boost::system::error_code& ec) { shaken.set_value(ec); });
    });
    boost::system::error_code ec = shaken.get_future().get();
    if (ec) {
      *error = ec.message();
      return nullptr;
    }
    return std::make_shared<FrameChannel>(*made);
  }
  int port() const { return acceptor.local_endpoint().port(); }

  IoThread* io;
  tcp::acceptor acceptor;
  std::shared_ptr<boost::asio::ssl::context> context;
};

}  // namespace

TEST_CASE("frames go both ways over TLS once the head's certificate is verified and another CA is refused",
          "[tls][frames]") {
  TestCerts certs;
  REQUIRE(certs.error().empty());
  auto head = LoadTls(certs.cert(), certs.key(), certs.ca());
  auto agent = LoadTls("", "", certs.ca());
  auto stranger = LoadTls("", "", certs.wrong_ca());
  REQUIRE(head.ok());
  REQUIRE(agent.ok());
  REQUIRE(stranger.ok());
  Received at_server, at_client;  // outlive the io thread, which calls into them
  IoThread io;
  TlsListener listener(&io, *head);

  std::optional<Result<std::shared_ptr<FrameChannel>>> dialed;
  std::thread dialer([&] { dialed = DialFrameChannel(&io.io, "127.0.0.1", listener.port(), *agent, 5000); });
  std::string error;
  std::shared_ptr<FrameChannel> server = listener.AcceptOne(&error);
  dialer.join();
  INFO(error);
  REQUIRE(server);
  REQUIRE(dialed->ok());
  std::shared_ptr<FrameChannel> client = **dialed;
  server->Start(at_server.Handlers(), kMaxFrameBytes);
  client->Start(at_client.Handlers(), kMaxFrameBytes);
  for (int i = 0; i < 50; ++i) {
    AgentMessage message;
    message.mutable_log()->set_rank(i);
    message.mutable_log()->set_data(std::string(static_cast<size_t>(i) * 1000, 'x'));
    client->Send(EncodeFrame(message));
  }
  HeadMessage answer;
  answer.mutable_alive()->set_seq(7);
  server->Send(EncodeFrame(answer));
  REQUIRE(at_server.WaitFor([](Received& r) { return r.frames.size() == 50; }));
  for (int i = 0; i < 50; ++i) {
    AgentMessage message;
    REQUIRE(message.ParseFromString(at_server.frames[i]));
    REQUIRE(message.log().rank() == i);
    REQUIRE(message.log().data().size() == static_cast<size_t>(i) * 1000);
  }
  REQUIRE(at_client.WaitFor([](Received& r) { return r.frames.size() == 1; }));
  client->Close("done");
  server->Close("done");

  // A dialer that trusts another CA does not get past the handshake.
  std::thread refused([&] { dialed = DialFrameChannel(&io.io, "127.0.0.1", listener.port(), *stranger, 5000); });
  REQUIRE(!listener.AcceptOne(&error));
  refused.join();
  REQUIRE(!dialed->ok());
  REQUIRE_THAT(dialed->status().message(),
               Catch::StartsWith(fmt::format("TLS handshake with 127.0.0.1:{} failed: certificate verify failed",
                                             listener.port())));
}
