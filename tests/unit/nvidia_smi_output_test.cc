// The GPU probe's reading of nvidia-smi, on output as the real one prints
// it (driver 535: --query-gpu with csv,noheader,nounits; the device-handle
// errors of a GPU fallen off the bus; a driver that is gone).
#include <catch2/catch.hpp>

#include <sstream>

#include "daemon/agent/nvidia_smi_output.h"

using namespace clusterd;

namespace {

std::vector<std::string> Fields(size_t set) {
  std::vector<std::string> out;
  std::istringstream in(GpuQueryFieldSets().at(set));
  for (std::string field; std::getline(in, field, ',');) out.push_back(field);
  return out;
}

GpuProbeReading Parse(const std::string& output, int exit_code = 0, const std::map<std::string, int>& known = {}) {
  return ParseGpuQuery({output, exit_code}, Fields(0), known);
}

constexpr double kMiB = 1024.0 * 1024.0;

}  // namespace

TEST_CASE("healthy GPUs: use read, no fault", "[gpu_probe]") {
  auto reading = Parse(
      "0, 00000000:18:00.0, 45, 1024, 81559, 0, No\n"
      "1, 00000000:3B:00.0, 0, 4, 81559, 0, No\n");
  REQUIRE(reading.failure.empty());
  REQUIRE(reading.gpus.size() == 2);
  const GpuStatus& first = reading.gpus.at(0);
  CHECK(first.usage_known());
  CHECK(first.utilization() == Approx(0.45));
  CHECK(first.memory_used_bytes() == Approx(1024 * kMiB));
  CHECK(first.memory_total_bytes() == Approx(81559 * kMiB));
  CHECK(first.fault().empty());
  CHECK(reading.gpus.at(1).fault().empty());
  CHECK(reading.bus_ids.at("0:3B:00.0") == 1);
}

TEST_CASE("fields a GPU does not have ([N/A], [Not Supported]) are no fault", "[gpu_probe]") {
  // A consumer GPU: no ECC, no page retirement.
  auto reading = Parse("0, 00000000:01:00.0, 3, 512, 24564, [N/A], [N/A]\n"
                       "1, 00000000:02:00.0, [Not Supported], [Not Supported], [Not Supported], [Not Supported], "
                       "[Not Supported]\n");
  REQUIRE(reading.gpus.size() == 2);
  CHECK(reading.gpus.at(0).fault().empty());
  CHECK(reading.gpus.at(0).usage_known());
  CHECK(reading.gpus.at(1).fault().empty());
  CHECK_FALSE(reading.gpus.at(1).usage_known());
}

TEST_CASE("uncorrectable ECC errors since the driver loaded make a GPU bad", "[gpu_probe]") {
  auto reading = Parse("0, 00000000:18:00.0, 97, 70000, 81559, 0, No\n"
                       "1, 00000000:3B:00.0, 0, 4, 81559, 2, No\n");
  CHECK(reading.gpus.at(0).fault().empty());
  CHECK(reading.gpus.at(1).fault() == "2 uncorrectable ECC errors since the driver loaded");
}

TEST_CASE("a retired page pending a reset makes a GPU bad", "[gpu_probe]") {
  auto reading = Parse("0, 00000000:18:00.0, 0, 4, 32510, 0, Yes\n");
  CHECK(reading.gpus.at(0).fault() == "a retired page is pending: the GPU needs a reset");
}

TEST_CASE("a pending or failed row remapping makes a GPU bad", "[gpu_probe]") {
  auto reading = Parse("0, 00000000:07:00.0, 0, 4, 81559, 0, No\n"
                       "1, 00000000:0F:00.0, 0, 4, 81559, 0, No\n"
                       "2, 00000000:47:00.0, 0, 4, 81559, 0, No\n");
  // --query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure --format=csv,noheader
  AddRemappedRows({"00000000:07:00.0, No, No\n00000000:0F:00.0, Yes, No\n00000000:47:00.0, No, Yes\n", 0}, &reading);
  CHECK(reading.gpus.at(0).fault().empty());
  CHECK(reading.gpus.at(1).fault() == "a row remapping is pending: the GPU needs a reset");
  CHECK(reading.gpus.at(2).fault() == "a row remapping failed");

  // Drivers that write the flags as numbers.
  auto numeric = Parse("0, 00000000:07:00.0, 0, 4, 81559, 0, 0\n1, 00000000:0F:00.0, 0, 4, 81559, 0, 0\n");
  AddRemappedRows({"00000000:07:00.0, 0, 0\n00000000:0F:00.0, 1, 0\n", 0}, &numeric);
  CHECK(numeric.gpus.at(0).fault().empty());
  CHECK(numeric.gpus.at(1).fault() == "a row remapping is pending: the GPU needs a reset");
}

TEST_CASE("a GPU fallen off the bus: its device-handle error names it by bus id", "[gpu_probe]") {
  // nvidia-smi prints the error in place of the lost GPU's line and goes on.
  const std::map<std::string, int> known = {{"0:18:00.0", 0}, {"0:3B:00.0", 1}};
  auto reading = Parse("0, 00000000:18:00.0, 12, 900, 81559, 0, No\n"
                       "Unable to determine the device handle for GPU0000:3B:00.0: Unknown Error\n",
                       15, known);
  CHECK(reading.gpus.at(0).fault().empty());
  REQUIRE(reading.gpus.count(1) == 1);
  CHECK(reading.gpus.at(1).fault() == "fallen off the bus (nvidia-smi: Unknown Error)");

  auto lost = Parse("Unable to determine the device handle for gpu 0000:3B:00.0: GPU is lost.  Reboot the system "
                    "to recover this GPU\n"
                    "0, 00000000:18:00.0, 12, 900, 81559, 0, No\n",
                    15, known);
  CHECK(lost.gpus.at(1).fault() ==
        "fallen off the bus (nvidia-smi: GPU is lost.  Reboot the system to recover this GPU)");
}

TEST_CASE("a GPU listed before and missing now has fallen off the bus", "[gpu_probe]") {
  auto reading = Parse("0, 00000000:18:00.0, 12, 900, 81559, 0, No\n");
  MarkMissing({0, 1}, &reading);
  CHECK(reading.gpus.at(0).fault().empty());
  CHECK(reading.gpus.at(1).fault() == "fallen off the bus: nvidia-smi lists it no more");
}

TEST_CASE("nvidia-smi failing as a whole makes every expected GPU bad, saying why", "[gpu_probe]") {
  auto reading = Parse("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
                       "that the latest NVIDIA driver is installed and running.\n",
                       9);
  REQUIRE(reading.gpus.empty());
  CHECK(reading.failure.rfind("NVIDIA-SMI has failed", 0) == 0);
  MarkMissing({0, 1}, &reading);
  REQUIRE(reading.gpus.size() == 2);
  CHECK(reading.gpus.at(1).fault().find("NVIDIA-SMI has failed") != std::string::npos);

  auto none = Parse("No devices were found\n", 6);
  CHECK(none.failure == "No devices were found");
}

TEST_CASE("an older driver's refusal of a field is told apart, and fewer fields parse", "[gpu_probe]") {
  CHECK(RefusedFields({"Field \"retired_pages.pending\" is not a valid field to query.\n", 2}));
  CHECK_FALSE(RefusedFields({"0, 00000000:18:00.0, 1, 2, 3, 0, No\n", 0}));
  auto reading = ParseGpuQuery({"0, 10, 100, 16280\n", 0}, Fields(2), {});
  CHECK(reading.gpus.at(0).utilization() == Approx(0.1));
  CHECK(reading.gpus.at(0).fault().empty());
}

TEST_CASE("a fault's text stays short", "[gpu_probe]") {
  std::string words(1000, 'x');
  auto reading = Parse("Unable to determine the device handle for GPU0000:3B:00.0: " + words + "\n", 15,
                       {{"0:3B:00.0", 1}});
  CHECK(reading.gpus.at(1).fault().size() <= 200);
}
