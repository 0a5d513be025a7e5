#include <catch2/catch.hpp>

#include "daemon/http/prometheus.h"

using namespace clusterd;

TEST_CASE("the head's state in Prometheus text format", "[prometheus]") {
  ClusterStatus status;
  status.add_nodes()->set_state(ALIVE);
  status.add_nodes()->set_state(DEAD);
  (*status.mutable_total()->mutable_amounts())["CPU"] = 4;
  (*status.mutable_used()->mutable_amounts())["CPU"] = 1.5;
  JobInfo running;
  running.set_state(RUNNING);
  MetricRecord record;
  record.set_attempt(1);
  (*record.mutable_values())["loss"] = 0.25;
  std::string text = FormatPrometheus(status, {running}, {{"job-0001", record}});
  REQUIRE(text.find("clusterd_nodes{state=\"ALIVE\"} 1\n") != std::string::npos);
  REQUIRE(text.find("clusterd_nodes{state=\"DEAD\"} 1\n") != std::string::npos);
  REQUIRE(text.find("clusterd_resource_total{resource=\"CPU\"} 4\n") != std::string::npos);
  REQUIRE(text.find("clusterd_resource_used{resource=\"CPU\"} 1.5\n") != std::string::npos);
  REQUIRE(text.find("clusterd_jobs{state=\"RUNNING\"} 1\n") != std::string::npos);
  REQUIRE(text.find("clusterd_jobs{state=\"FAILED\"} 0\n") != std::string::npos);
  REQUIRE(text.find("clusterd_job_metric{job=\"job-0001\",attempt=\"1\",name=\"loss\"} 0.25\n") != std::string::npos);
  REQUIRE(text.find("# TYPE clusterd_nodes gauge\n") != std::string::npos);
}
