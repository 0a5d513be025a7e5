// DescribeNode alone: what a node offers the head is what its options say
// where they say it, and what was probed where they leave it at -1.
#include <catch2/catch.hpp>

#include "common/resources.h"
#include "daemon/agent/node_registration.h"

using namespace clusterd;

namespace {

ProbedResources Probed() {
  ProbedResources probed;
  probed.cpus = 16;
  probed.memory_bytes = 64e9;
  probed.gpu_indexes = {3, 5};
  return probed;
}

}  // namespace

TEST_CASE("a node offers the probed resources where its options leave them unset", "[node_registration]") {
  NodeAgentOptions options;
  options.node_ip = "10.0.0.7";
  RegisterNode r = DescribeNode(options, Probed());
  CHECK(r.name() == HostName());
  CHECK_FALSE(r.name_given());
  CHECK(r.address() == "10.0.0.7");
  CHECK_FALSE(r.is_head());
  CHECK(Amount(r.total(), kCpu) == 16);
  CHECK(Amount(r.total(), kMemory) == 64e9);
  CHECK(Amount(r.total(), kGpu) == 2);
  CHECK(std::vector<int>(r.gpu_indexes().begin(), r.gpu_indexes().end()) == std::vector<int>{3, 5});
}

TEST_CASE("a node's options override the probe, and --num-gpus N names devices 0..N-1", "[node_registration]") {
  NodeAgentOptions options;
  options.node_name = "n1";
  options.is_head = true;
  options.num_cpus = 2;
  options.memory_bytes = 1e9;
  options.num_gpus = 3;
  (*options.custom.mutable_amounts())["tpu"] = 4;
  RegisterNode r = DescribeNode(options, Probed());
  CHECK(r.name() == "n1");
  CHECK(r.name_given());
  CHECK(r.is_head());
  CHECK(Amount(r.total(), kCpu) == 2);
  CHECK(Amount(r.total(), kMemory) == 1e9);
  CHECK(Amount(r.total(), "tpu") == 4);
  CHECK(Amount(r.total(), kGpu) == 3);
  CHECK(std::vector<int>(r.gpu_indexes().begin(), r.gpu_indexes().end()) == std::vector<int>{0, 1, 2});

  options.num_gpus = 0;  // no GPUs, whatever the machine has
  r = DescribeNode(options, Probed());
  CHECK(r.gpu_indexes_size() == 0);
  CHECK(r.total().amounts().count(kGpu) == 0);
}

TEST_CASE("each description of a node carries a new instance id", "[node_registration]") {
  NodeAgentOptions options;
  options.node_name = "n1";
  RegisterNode first = DescribeNode(options, Probed());
  RegisterNode second = DescribeNode(options, Probed());
  CHECK_FALSE(first.instance_id().empty());
  CHECK(first.instance_id() != second.instance_id());
}
