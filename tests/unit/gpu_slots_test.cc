// GPU sharing as Ray does it: fractions share a device, whole counts take whole devices.
#include <catch2/catch.hpp>

#include "daemon/head/gpu_slots.h"

using namespace clusterd;

TEST_CASE("two half-GPU ranks share one device, a third takes the next, a fifth does not fit", "[gpus]") {
  GpuSlots gpus({0, 1});
  REQUIRE(gpus.Fit(0.5, 10) == 4);
  REQUIRE(*gpus.Take(0.5) == std::vector<int>{0});
  REQUIRE(*gpus.Take(0.5) == std::vector<int>{0});  // the fullest device that still fits
  REQUIRE(*gpus.Take(0.5) == std::vector<int>{1});
  REQUIRE(*gpus.Take(0.5) == std::vector<int>{1});
  REQUIRE_FALSE(gpus.Take(0.5).has_value());
  REQUIRE(gpus.Fit(0.5, 10) == 0);
  gpus.Give(0.5, {0});
  REQUIRE(gpus.Fit(0.5, 10) == 1);
  REQUIRE(gpus.Fit(1, 10) == 0);  // half a device is not a whole one
}

TEST_CASE("whole requests take whole devices, and fractions leave whole devices for them", "[gpus]") {
  GpuSlots gpus({0, 1, 2});
  REQUIRE(*gpus.Take(0.25) == std::vector<int>{0});
  REQUIRE(*gpus.Take(0.25) == std::vector<int>{0});  // not a fresh device
  REQUIRE(gpus.Fit(2, 10) == 1);
  REQUIRE(*gpus.Take(2) == (std::vector<int>{1, 2}));
  REQUIRE_FALSE(gpus.Take(1).has_value());
  REQUIRE(*gpus.Take(0.5) == std::vector<int>{0});
  REQUIRE(gpus.Take(0).value().empty());
}

TEST_CASE("an adopted rank keeps exactly its devices", "[gpus]") {
  GpuSlots gpus({0, 1, 2, 3});
  REQUIRE(gpus.TakeExact(2, {2, 3}));
  REQUIRE_FALSE(gpus.TakeExact(1, {3}));  // already taken
  REQUIRE_FALSE(gpus.TakeExact(1, {7}));  // no such device
  REQUIRE(gpus.TakeExact(0.5, {1}));
  REQUIRE(gpus.TakeExact(0.5, {1}));
  REQUIRE_FALSE(gpus.TakeExact(0.5, {1}));
  REQUIRE(*gpus.Take(1) == std::vector<int>{0});
}
