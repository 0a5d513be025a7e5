// DeliveryAcks alone: a journal whose syncs the test answers by hand, and
// recording streams. An agent may forget a kept message only once the head
// answered it, and the head answers only what its journal synced.
#include <catch2/catch.hpp>

#include <functional>
#include <memory>
#include <vector>

#include "daemon/head/delivery_acks.h"
#include "fake_agent_connection.h"

using namespace clusterd;
using clusterd::testing::FakeAgentConnection;

namespace {

// The journal's side: syncs asked for wait here until the test runs them.
struct ManualJournal {
  std::vector<std::function<void(Status)>> waiting;
  bool writable = true;

  DeliveryAcks MakeAcks() {
    return DeliveryAcks([this](std::function<void(Status)> done) { waiting.push_back(std::move(done)); },
                        [this] { return writable; });
  }
  // Answers every sync asked for so far with `status`.
  void Sync(const Status& status = Status::Ok()) {
    std::vector<std::function<void(Status)>> now;
    now.swap(waiting);
    for (auto& done : now) done(status);
  }
};

}  // namespace

TEST_CASE("kept messages are answered once asked at the tick and synced, up to the newest taken", "[delivery_acks]") {
  ManualJournal journal;
  DeliveryAcks acks = journal.MakeAcks();
  auto agent = std::make_shared<FakeAgentConnection>();
  acks.Taken(agent, 1);
  acks.Taken(agent, 3);
  acks.Taken(agent, 2);  // out of order: the newest stays 3
  REQUIRE(journal.waiting.empty());  // nothing before the tick

  acks.AcknowledgeDue();
  REQUIRE(journal.waiting.size() == 1);
  REQUIRE(agent->DeliveredUpTo().empty());  // not before the sync
  journal.Sync();
  REQUIRE(agent->DeliveredUpTo() == std::vector<int64_t>{3});

  // Nothing new: the next tick asks for nothing.
  acks.AcknowledgeDue();
  REQUIRE(journal.waiting.empty());
}

TEST_CASE("a stream is asked for once at a time, and what came meanwhile at a later tick", "[delivery_acks]") {
  ManualJournal journal;
  DeliveryAcks acks = journal.MakeAcks();
  auto agent = std::make_shared<FakeAgentConnection>();
  acks.Taken(agent, 1);
  acks.AcknowledgeDue();
  acks.Taken(agent, 2);
  acks.AcknowledgeDue();  // the answer for 1 still waits: nothing more asked
  REQUIRE(journal.waiting.size() == 1);

  journal.Sync();
  REQUIRE(agent->DeliveredUpTo() == std::vector<int64_t>{1});
  acks.AcknowledgeDue();  // kept due from the tick before
  REQUIRE(journal.waiting.size() == 1);
  journal.Sync();
  REQUIRE(agent->DeliveredUpTo() == std::vector<int64_t>{1, 2});
}

TEST_CASE("a stream with kEagerDeliveries unanswered is asked for at once, not at the tick", "[delivery_acks]") {
  ManualJournal journal;
  DeliveryAcks acks = journal.MakeAcks();
  auto agent = std::make_shared<FakeAgentConnection>();
  for (int64_t seq = 1; seq < DeliveryAcks::kEagerDeliveries; ++seq) acks.Taken(agent, seq);
  REQUIRE(journal.waiting.empty());
  acks.Taken(agent, DeliveryAcks::kEagerDeliveries);
  REQUIRE(journal.waiting.size() == 1);
  journal.Sync();
  REQUIRE(agent->DeliveredUpTo() == std::vector<int64_t>{DeliveryAcks::kEagerDeliveries});
}

TEST_CASE("nothing is answered when the sync failed or the journal takes no writes", "[delivery_acks]") {
  ManualJournal journal;
  DeliveryAcks acks = journal.MakeAcks();
  auto agent = std::make_shared<FakeAgentConnection>();
  acks.Taken(agent, 1);
  acks.AcknowledgeDue();
  journal.Sync(Status::Internal("disk full"));
  REQUIRE(agent->DeliveredUpTo().empty());

  acks.Taken(agent, 2);
  acks.AcknowledgeDue();
  journal.writable = false;
  journal.Sync();
  REQUIRE(agent->DeliveredUpTo().empty());

  // Writable again: the next kept message is answered up to the newest.
  journal.writable = true;
  acks.Taken(agent, 3);
  acks.AcknowledgeDue();
  journal.Sync();
  REQUIRE(agent->DeliveredUpTo() == std::vector<int64_t>{3});
}

TEST_CASE("a forgotten stream is told nothing, not even what its pending sync answers", "[delivery_acks]") {
  ManualJournal journal;
  DeliveryAcks acks = journal.MakeAcks();
  auto gone = std::make_shared<FakeAgentConnection>();
  auto other = std::make_shared<FakeAgentConnection>();
  acks.Taken(gone, 5);
  acks.Taken(other, 7);
  acks.AcknowledgeDue();
  REQUIRE(journal.waiting.size() == 2);
  acks.Forget(gone.get());
  journal.Sync();
  REQUIRE(gone->DeliveredUpTo().empty());
  REQUIRE(other->DeliveredUpTo() == std::vector<int64_t>{7});

  // Due at the tick but forgotten before it: nothing is asked.
  acks.Taken(gone, 6);
  acks.Forget(gone.get());
  acks.AcknowledgeDue();
  REQUIRE(journal.waiting.empty());
}
