#include <catch2/catch.hpp>

#include "common/resources.h"

using namespace clusterd;

TEST_CASE("the --resources flag JSON parses to custom amounts and refuses bad input", "[resources]") {
  auto ok = ParseResourcesJson(R"({"trainium": 2, "ssd": 0.5})");
  REQUIRE(ok.ok());
  REQUIRE(Amount(*ok, "trainium") == 2);
  REQUIRE(Amount(*ok, "ssd") == 0.5);

  REQUIRE(ParseResourcesJson("{not json").status().code() == Status::Code::kInvalidArgument);
  REQUIRE(ParseResourcesJson(R"({"x": -1})").status().message() ==
          "--resources: 'x' must be a non-negative number, got -1");
  REQUIRE(ParseResourcesJson(R"({"x": "two"})").status().message() == "--resources: 'x' must be a number");
  REQUIRE(ParseResourcesJson(R"({"CPU": 2})").status().code() == Status::Code::kInvalidArgument);
}

TEST_CASE("fits, shortfall and formatting", "[resources]") {
  ResourceSet have, want;
  (*have.mutable_amounts())[kCpu] = 2;
  (*have.mutable_amounts())[kMemory] = 1024.0 * 1024 * 1024;
  (*want.mutable_amounts())[kCpu] = 3;
  REQUIRE_FALSE(Fits(have, want));
  REQUIRE(Shortfall(have, want) == "CPU: 3 > 2");
  (*want.mutable_amounts())[kCpu] = 2;
  REQUIRE(Fits(have, want));
  REQUIRE(FormatResources(have) == "2 CPU, 1.0 GiB memory");
}

TEST_CASE("memory reads as every other size does (HumanBytes), in shortfalls too", "[resources]") {
  ResourceSet have, want;
  (*have.mutable_amounts())[kMemory] = 1024.0 * 1024 * 1024;
  (*want.mutable_amounts())[kMemory] = 1.5 * 1024 * 1024 * 1024;
  CHECK(Shortfall(have, want) == "memory: 1.5 GiB > 1.0 GiB");
  CHECK(FormatAmount(kMemory, 512) == "512 B");
  CHECK(FormatAmount(kMemory, 0.4) == "0 B");
  CHECK(FormatAmount(kMemory, -1) == "0 B");
  CHECK(FormatAmount(kMemory, 1e30) == "16777216.0 TiB");
}
