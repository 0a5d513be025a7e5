#include <catch2/catch.hpp>

#include <limits>

#include "daemon/http/prometheus.h"

using namespace clusterd;

namespace {

bool Has(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

}  // namespace

TEST_CASE("the head's state in Prometheus text format", "[prometheus]") {
  ClusterStatus status;
  NodeInfo* a = status.add_nodes();
  a->set_name("a");
  a->set_node_id("n1");
  a->set_state(ALIVE);
  a->set_last_heartbeat_unix_ms(9'500);
  (*a->mutable_total()->mutable_amounts())["CPU"] = 4;
  (*a->mutable_available()->mutable_amounts())["CPU"] = 2.5;
  NodeInfo* b = status.add_nodes();
  b->set_name("b");
  b->set_node_id("n2");
  b->set_state(DEAD);
  b->set_last_heartbeat_unix_ms(4'000);
  (*b->mutable_total()->mutable_amounts())["CPU"] = 8;
  JobInfo running;
  running.set_state(RUNNING);
  running.add_attempts();
  running.add_attempts();
  running.mutable_older_attempts()->set_count(3);
  JobInfo done;
  done.set_state(SUCCEEDED);
  done.add_attempts();
  MetricRecord record;
  record.set_attempt(1);
  (*record.mutable_values())["loss"] = 0.25;
  (*record.mutable_values())["diverged"] = std::numeric_limits<double>::infinity();
  LatencyHistogram rpc;
  rpc.Observe("/clusterd.HeadService/GetStatus", 0.0002);
  rpc.Observe("/clusterd.HeadService/GetStatus", 0.003);
  rpc.Observe("/clusterd.HeadService/GetStatus", 60);

  JobTally jobs;
  jobs.Add(running);
  jobs.Add(done);
  jobs.preemptions = 2;
  std::string text = FormatPrometheus(status, jobs, {{"job-0001", record}}, 10'000, rpc.Snapshot());
  CHECK(Has(text, "# TYPE clusterd_nodes gauge"));
  CHECK(Has(text, "clusterd_nodes{state=\"ALIVE\"} 1"));
  CHECK(Has(text, "clusterd_nodes{state=\"DEAD\"} 1"));
  CHECK(Has(text, "clusterd_node_resource_capacity{node=\"a\",node_id=\"n1\",resource=\"CPU\"} 4"));
  CHECK(Has(text, "clusterd_node_resource_used{node=\"a\",node_id=\"n1\",resource=\"CPU\"} 1.5"));
  CHECK(text.find("node=\"b\",node_id=\"n2\",resource") == std::string::npos);  // a dead node offers nothing
  CHECK(Has(text, "clusterd_heartbeat_age_seconds{node=\"a\",node_id=\"n1\"} 0.5"));
  CHECK(Has(text, "clusterd_heartbeat_age_seconds{node=\"b\",node_id=\"n2\"} 6"));
  CHECK(Has(text, "clusterd_jobs{state=\"RUNNING\"} 1"));
  CHECK(Has(text, "clusterd_jobs{state=\"FAILED\"} 0"));
  CHECK(Has(text, "# TYPE clusterd_job_attempts gauge"));
  CHECK(Has(text, "clusterd_job_attempts 6"));
  CHECK(Has(text, "# TYPE clusterd_preemptions_total counter"));
  CHECK(Has(text, "clusterd_preemptions_total 2"));
  CHECK(Has(text, "clusterd_job_metric{job=\"job-0001\",name=\"loss\"} 0.25"));
  CHECK(Has(text, "clusterd_job_metric{job=\"job-0001\",name=\"diverged\"} +Inf"));
  CHECK(Has(text, "# TYPE clusterd_rpc_duration_seconds histogram"));
  // Buckets are cumulative; the 60 s call is only in +Inf.
  CHECK(Has(text, "clusterd_rpc_duration_seconds_bucket{method=\"/clusterd.HeadService/GetStatus\",le=\"0.0005\"} 1"));
  CHECK(Has(text, "clusterd_rpc_duration_seconds_bucket{method=\"/clusterd.HeadService/GetStatus\",le=\"0.005\"} 2"));
  CHECK(Has(text, "clusterd_rpc_duration_seconds_bucket{method=\"/clusterd.HeadService/GetStatus\",le=\"5\"} 2"));
  CHECK(Has(text, "clusterd_rpc_duration_seconds_bucket{method=\"/clusterd.HeadService/GetStatus\",le=\"+Inf\"} 3"));
  CHECK(Has(text, "clusterd_rpc_duration_seconds_count{method=\"/clusterd.HeadService/GetStatus\"} 3"));
}

TEST_CASE("Prometheus label values are escaped", "[prometheus]") {
  MetricRecord record;
  (*record.mutable_values())["a\"b\\c\nd"] = 1;
  std::string text = FormatPrometheus(ClusterStatus(), JobTally(), {{"j", record}}, 0, {});
  CHECK(Has(text, "clusterd_job_metric{job=\"j\",name=\"a\\\"b\\\\c\\nd\"} 1"));
}
