// ToJson: the same message always reads the same, whatever order its maps
// were filled in (protobuf's own map order is its hash table's).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "common/proto_json.h"
#include "common/resources.h"

using namespace clusterd;

TEST_CASE("ToJson writes every map's keys sorted", "[proto_json]") {
  ResourceSet forward, backward;
  for (int i = 0; i < 40; ++i) (*forward.mutable_amounts())[fmt::format("r{:02}", i)] = i;
  for (int i = 39; i >= 0; --i) (*backward.mutable_amounts())[fmt::format("r{:02}", i)] = i;
  std::string expected = "{\"amounts\":{";
  for (int i = 0; i < 40; ++i) expected += fmt::format("{}\"r{:02}\":{}", i ? "," : "", i, i);
  expected += "}}";
  CHECK(ToJson(forward) == expected);
  CHECK(ToJson(backward) == expected);

  NodeInfo node;
  node.set_name("n1");
  (*node.mutable_total()->mutable_amounts())[kMemory] = 1024;
  (*node.mutable_total()->mutable_amounts())["TPU"] = 1;
  (*node.mutable_total()->mutable_amounts())[kCpu] = 2;
  const std::string json = ToJson(node);
  CHECK(json.find(R"("total":{"amounts":{"CPU":2,"TPU":1,"memory":1024}})") != std::string::npos);
  CHECK(json.find(R"("name":"n1")") != std::string::npos);  // every other field as before
}

TEST_CASE("resources read CPU, GPU, memory, then other names, whatever order they were given in", "[resources]") {
  ResourceSet set;
  (*set.mutable_amounts())["trainium"] = 2;
  (*set.mutable_amounts())["TPU"] = 1;
  (*set.mutable_amounts())[kMemory] = 23.5 * 1024 * 1024 * 1024;
  (*set.mutable_amounts())[kGpu] = 1;
  (*set.mutable_amounts())[kCpu] = 4;
  CHECK(FormatResources(set) == "4 CPU, 1 GPU, 23.5 GiB memory, 1 TPU, 2 trainium");
}
