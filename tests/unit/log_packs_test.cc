// LogPacks: many small logs in append-only pack files, read back exactly,
// and indexed again by a new head, which leaves a torn tail out.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include <fmt/format.h>

#include "common/logs/log_packs.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;

namespace {

std::string All(const LogPacks& packs, const std::string& key) {
  return packs.Read(key, 0, packs.Size(key)).value_or("<unreadable>");
}

}  // namespace

TEST_CASE("LogPacks reads each key's bytes back in order, from any offset, across records", "[logs]") {
  TempTree dir;
  LogPacks packs(dir.Path("packs"));
  REQUIRE(packs.Load().ok());  // no folder yet: nothing to index
  REQUIRE(packs.Size("a") == 0);
  REQUIRE(packs.Read("a", 0, 10).value_or("x").empty());
  for (int i = 0; i < 10; ++i) {
    REQUIRE(packs.Append("a", fmt::format("a{};", i)).ok());
    REQUIRE(packs.Append("b", fmt::format("b{};", i)).ok());
  }
  REQUIRE(packs.Append("b", "").ok());  // nothing to keep
  REQUIRE(All(packs, "a") == "a0;a1;a2;a3;a4;a5;a6;a7;a8;a9;");
  REQUIRE(packs.Size("b") == 30);
  REQUIRE(packs.Read("a", 4, 8).value_or("") == "1;a2;a3;");  // mid-record to mid-record
  REQUIRE(packs.Read("a", 29, 10).value_or("") == ";");
  REQUIRE(packs.Read("a", 30, 10).value_or("x").empty());
  REQUIRE_FALSE(packs.Append("", "x").ok());
  packs.Forget("a");
  REQUIRE_FALSE(packs.Has("a"));
  REQUIRE(packs.Size("a") == 0);
  REQUIRE(All(packs, "b").substr(0, 6) == "b0;b1;");
}

TEST_CASE("LogPacks begins a new pack past its size and per store, and a new store indexes them all", "[logs]") {
  TempTree dir;
  {
    LogPacks packs(dir.Path("packs"), 64);
    REQUIRE(packs.Load().ok());
    for (int i = 0; i < 20; ++i) REQUIRE(packs.Append(fmt::format("job-{}.rank-0", i % 3), std::string(10, 'a' + i)).ok());
  }
  const auto packs_made = std::distance(std::filesystem::directory_iterator(dir.Path("packs")),
                                        std::filesystem::directory_iterator());
  REQUIRE(packs_made > 3);  // 20 records of 32 bytes, a new pack past 64
  LogPacks again(dir.Path("packs"), 64);
  REQUIRE(again.Load().ok());
  std::string expected;
  for (int i = 0; i < 20; i += 3) expected += std::string(10, 'a' + i);
  REQUIRE(All(again, "job-0.rank-0") == expected);
  REQUIRE(again.Keys().size() == 3);
  REQUIRE(again.Append("job-0.rank-0", "!").ok());
  REQUIRE(All(again, "job-0.rank-0") == expected + "!");
  REQUIRE(std::filesystem::exists(dir.Path(fmt::format("packs/{:06}.pack", packs_made))));  // its own pack
}

TEST_CASE("LogPacks leaves out a torn last record and anything that is not a record, keeping what came before",
          "[logs]") {
  TempTree dir;
  {
    LogPacks packs(dir.Path("packs"));
    REQUIRE(packs.Load().ok());
    REQUIRE(packs.Append("job-1.rank-0", "whole\n").ok());
    REQUIRE(packs.Append("job-2.rank-0", "torn off\n").ok());
  }
  const std::string pack = dir.Path("packs/000000.pack");
  struct stat st {};
  REQUIRE(stat(pack.c_str(), &st) == 0);
  REQUIRE(truncate(pack.c_str(), st.st_size - 3) == 0);  // a head killed mid-write
  dir.Write("packs/000001.pack", "not a pack at all");
  dir.Write("packs/notes.txt", "ignored");

  LogPacks again(dir.Path("packs"));
  Status loaded = again.Load();
  REQUIRE(loaded.code() == Status::Code::kCorruption);
  REQUIRE_THAT(loaded.message(), Catch::Contains("000000.pack") && Catch::Contains("torn record at byte 30"));
  REQUIRE(All(again, "job-1.rank-0") == "whole\n");
  REQUIRE_FALSE(again.Has("job-2.rank-0"));
  // New records go to a new pack, never after the torn one.
  REQUIRE(again.Append("job-2.rank-0", "again\n").ok());
  REQUIRE(std::filesystem::exists(dir.Path("packs/000002.pack")));
  LogPacks third(dir.Path("packs"));
  third.Load();
  REQUIRE(All(third, "job-2.rank-0") == "again\n");
  REQUIRE(All(third, "job-1.rank-0") == "whole\n");
}

TEST_CASE("LogPacks deletes a pack once every log in it is forgotten, never the one it appends to", "[logs]") {
  TempTree dir;
  auto on_disk = [&](int pack) { return std::filesystem::exists(dir.Path(fmt::format("packs/{:06}.pack", pack))); };
  LogPacks packs(dir.Path("packs"), 64);
  REQUIRE(packs.Load().ok());
  const std::string ten(10, 'x');
  REQUIRE(packs.Append("job-a.rank-0", ten).ok());  // records of 34 bytes: two fill a pack
  REQUIRE(packs.Append("job-b.rank-0", ten).ok());
  REQUIRE(packs.Append("job-c.rank-0", ten).ok());  // pack 1
  REQUIRE(packs.packs() == 2);
  packs.Forget("job-a.rank-0");
  REQUIRE(on_disk(0));  // job-b still lives there
  packs.Forget("job-b.rank-0");
  REQUIRE_FALSE(on_disk(0));
  REQUIRE(packs.packs() == 1);
  REQUIRE(All(packs, "job-c.rank-0") == ten);
  packs.Forget("job-c.rank-0");
  REQUIRE(on_disk(1));  // appends still go there
  REQUIRE(packs.Append("job-d.rank-0", ten).ok());
  REQUIRE(packs.Append("job-e.rank-0", ten).ok());  // past 64 bytes: pack 2
  REQUIRE(on_disk(1));
  packs.Forget("job-d.rank-0");
  REQUIRE_FALSE(on_disk(1));
  packs.Forget("no-such-key");

  LogPacks again(dir.Path("packs"), 64);
  REQUIRE(again.Load().ok());
  REQUIRE(again.Keys() == std::vector<std::string>{"job-e.rank-0"});
  REQUIRE(again.packs() == 1);
}

TEST_CASE("two LogPacks in one folder (two agents of a session) never append to the same pack", "[logs]") {
  TempTree dir;
  LogPacks first(dir.Path("packs")), second(dir.Path("packs"));
  REQUIRE(first.Load().ok());
  REQUIRE(second.Load().ok());  // both found no pack: both would begin 000000
  REQUIRE(first.Append("job-1.attempt-0.rank-0", "from the first\n").ok());
  REQUIRE(second.Append("job-1.attempt-0.rank-1", "from the second\n").ok());
  REQUIRE(All(first, "job-1.attempt-0.rank-0") == "from the first\n");
  REQUIRE(All(second, "job-1.attempt-0.rank-1") == "from the second\n");
  LogPacks both(dir.Path("packs"));
  REQUIRE(both.Load().ok());
  REQUIRE(All(both, "job-1.attempt-0.rank-0") == "from the first\n");
  REQUIRE(All(both, "job-1.attempt-0.rank-1") == "from the second\n");
  // A store that found a pack does not delete it (its writer may go on),
  // unless it alone writes the folder.
  const size_t on_disk = both.packs();
  both.Forget("job-1.attempt-0.rank-0");
  both.Forget("job-1.attempt-0.rank-1");
  REQUIRE(both.packs() == on_disk);
  REQUIRE(first.Append("job-1.attempt-0.rank-0", "more\n").ok());
  REQUIRE(All(first, "job-1.attempt-0.rank-0") == "from the first\nmore\n");
  LogPacks sole(dir.Path("packs"));
  REQUIRE(sole.Load().ok());
  sole.OwnLoadedPacks();
  sole.Forget("job-1.attempt-0.rank-1");
  REQUIRE(sole.packs() == on_disk - 1);  // the second's pack held nothing else
}
