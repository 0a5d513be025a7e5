// Arrays on a real head: `clusterctl submit --follow` of an array file runs
// every index once, never more than max_concurrent at once, and exits 0;
// `clusterctl jobs` shows the array as one row; SubmitJobs makes many jobs
// in one call, or none when one spec is bad.
#include <catch2/catch.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>

#include "cluster.grpc.pb.h"
#include "common/net/auth.h"
#include "common/file_util.h"
#include "common/net/grpc_status.h"
#include "common/session.h"
#include "harness.h"
#include "job_json.h"

using namespace clusterd;
using namespace clusterd::testing;
using namespace std::chrono_literals;

namespace {

// Raw calls to the head with the session's token: what another client
// than clusterctl would send.
class RawClient {
 public:
  explicit RawClient(const Cluster& cluster)
      : stub_(HeadService::NewStub(grpc::CreateChannel(cluster.address(), grpc::InsecureChannelCredentials()))) {
    auto session = LatestSession(cluster.temp_dir());
    REQUIRE(session.ok());
    auto token = ReadFileTrimmed(session->TokenFile());
    REQUIRE(token.ok());
    token_ = *token;
  }

  template <typename Request, typename Reply>
  Status Call(grpc::Status (HeadService::Stub::*method)(grpc::ClientContext*, const Request&, Reply*),
              const Request& request, Reply* reply) {
    grpc::ClientContext context;
    AttachToken(&context, token_);
    context.set_deadline(std::chrono::system_clock::now() + 30s);
    return FromGrpc((stub_.get()->*method)(&context, request, reply));
  }

 private:
  std::unique_ptr<HeadService::Stub> stub_;
  std::string token_;
};

}  // namespace

TEST_CASE("an array file runs every index once, at most max_concurrent at once, and --follow exits 0", "[array]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "4"}).exit_code == 0);
  const std::string dir = cluster.temp_dir();
  // Each job notes its index as it starts and ends, with a time stamp.
  std::ofstream(dir + "/array.yaml")
      << "name: sweep-by-index\nworking_dir: " << dir << "\nworking_dir_mode: shared\n"
      << "entrypoint: 'echo \"start $CLUSTER_ARRAY_INDEX $(date +%s%N)\" >> events; sleep 0.4; "
         "echo \"end $CLUSTER_ARRAY_INDEX $(date +%s%N)\" >> events'\n"
      << "array: {count: 6, max_concurrent: 2}\n";
  RunResult submitted = cluster.Ctl({"submit", dir + "/array.yaml", "--follow"}, 120s);
  INFO(submitted.out << submitted.err);
  REQUIRE(submitted.exit_code == 0);
  REQUIRE(submitted.out.find("(6 jobs, at most 2 at once)") != std::string::npos);
  REQUIRE(submitted.out.find(": 6 SUCCEEDED\n") != std::string::npos);

  // Every index ran once; at no moment were three running.
  std::ifstream events(dir + "/events");
  std::map<long long, int> changes;  // time -> +1 start / -1 end
  std::map<int, int> starts;
  std::string kind;
  int index;
  long long at;
  while (events >> kind >> index >> at) {
    if (kind == "start") ++starts[index];
    changes[at] += kind == "start" ? 1 : -1;
  }
  REQUIRE(starts.size() == 6);
  for (const auto& [i, n] : starts) CHECK(n == 1);
  int running = 0, most = 0;
  for (const auto& [t, delta] : changes) most = std::max(most, running += delta);
  CHECK(most <= 2);

  RunResult jobs = cluster.Ctl({"jobs"});
  REQUIRE(jobs.exit_code == 0);
  REQUIRE(jobs.out.find("ARRAY") != std::string::npos);
  REQUIRE(jobs.out.find("6 jobs") != std::string::npos);
  // Counted by the head (ListJobs grouped): all six, none said to be missing.
  CHECK(jobs.out.find("  6 SUCCEEDED\n") != std::string::npos);
  CHECK(jobs.out.find("listed") == std::string::npos);
}

// Slurm's scancel ARRAYID: one command for every job of the array,
// running or waiting; and one to delete them once all have ended.
TEST_CASE("clusterctl stop --array stops every job of an array and delete --array deletes them all", "[array]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "2"}).exit_code == 0);
  const std::string dir = cluster.temp_dir();
  std::ofstream(dir + "/array.yaml") << "name: long-array\nworking_dir: " << dir << "\nworking_dir_mode: shared\n"
                                     << "entrypoint: sleep 600\narray: {count: 5, max_concurrent: 2}\n";
  RunResult submitted = cluster.Ctl({"submit", dir + "/array.yaml", "--json"});
  const std::string array = SubmittedJobId(submitted);
  auto states = [&] {
    std::map<JobState, int> count;
    const ListJobsReply listed = ParseJson<ListJobsReply>(cluster.Ctl({"jobs", "--array", array, "--json"}));
    for (const JobInfo& job : listed.jobs()) ++count[job.state()];
    return count;
  };
  REQUIRE(WaitFor([&] { return states()[RUNNING] == 2; }, 30s, 100ms));

  // Refused while any runs: nothing is deleted.
  RunResult early = cluster.Ctl({"delete", array, "--array"});
  INFO(early.out << early.err);
  REQUIRE(early.exit_code == 1);
  REQUIRE(early.err.find("array " + array + " has 5 of its 5 jobs not finished: stop them first") !=
          std::string::npos);

  RunResult stopped = cluster.Ctl({"stop", array, "--array"});
  INFO(stopped.out << stopped.err);
  REQUIRE(stopped.exit_code == 0);
  REQUIRE(stopped.out == "Array " + array + ": stopping 5 of its 5 jobs; 0 had ended\n");
  REQUIRE(WaitFor([&] { return states()[STOPPED] == 5; }, 30s, 100ms));

  RunResult deleted = cluster.Ctl({"delete", array, "--array"});
  INFO(deleted.out << deleted.err);
  REQUIRE(deleted.exit_code == 0);
  REQUIRE(deleted.out == "Array " + array + ": deleted its 5 jobs with their stored data and logs\n");
  RunResult gone = cluster.Ctl({"jobs", "--array", array});
  REQUIRE(gone.exit_code == 1);
  REQUIRE(gone.err.find("no array '" + array + "'") != std::string::npos);
  REQUIRE(ParseJson<ListJobsReply>(cluster.Ctl({"jobs", "--json"})).jobs_size() == 0);

  // A job that is not an array is named so.
  std::ofstream(dir + "/one.yaml") << "name: one\nworking_dir: " << dir << "\nworking_dir_mode: shared\n"
                                   << "entrypoint: 'true'\n";
  const std::string single = SubmittedJobId(cluster.Ctl({"submit", dir + "/one.yaml", "--json"}));
  RunResult not_array = cluster.Ctl({"stop", single, "--array"});
  REQUIRE(not_array.exit_code == 1);
  REQUIRE(not_array.err.find("job " + single + " is not an array") != std::string::npos);
}

namespace {

// `count` one-rank jobs of /bin/true in the cluster's temp folder, named many-N.
SubmitJobsRequest TrueJobs(Cluster& cluster, int count) {
  SubmitJobsRequest request;
  for (int i = 0; i < count; ++i) {
    JobSpec* spec = request.add_jobs()->mutable_spec();
    spec->set_name("many-" + std::to_string(i));
    spec->add_entrypoint("/bin/true");
    spec->set_working_dir(cluster.temp_dir());
    spec->set_working_dir_mode(SHARED);
    spec->set_num_workers(1);
  }
  return request;
}

}  // namespace

TEST_CASE("SubmitJobs makes many jobs in one call, and none when one spec is bad", "[array]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "2"}).exit_code == 0);
  RawClient client(cluster);
  SubmitJobsRequest request = TrueJobs(cluster, 3);
  SubmitJobsReply reply;
  REQUIRE(client.Call(&HeadService::Stub::SubmitJobs, request, &reply).ok());
  REQUIRE(reply.jobs_size() == 3);
  for (const auto& job : reply.jobs()) REQUIRE_FALSE(job.job_id().empty());

  request.mutable_jobs(1)->mutable_spec()->clear_entrypoint();
  SubmitJobsReply refused;
  Status bad = client.Call(&HeadService::Stub::SubmitJobs, request, &refused);
  REQUIRE(bad.code() == Status::Code::kInvalidArgument);
  REQUIRE(bad.message().find("job 2 of 3") != std::string::npos);
  ListJobsReply listed;
  REQUIRE(client.Call(&HeadService::Stub::ListJobs, ListJobsRequest(), &listed).ok());
  REQUIRE(listed.jobs_size() == 3);  // the first three only
}

TEST_CASE("clusterctl jobs lists every job, past the pages the head answers in", "[array][cli]") {
  Cluster cluster;
  REQUIRE(cluster.StartHead({"--num-cpus", "0"}).exit_code == 0);  // no slots: the jobs stay unrun
  RawClient client(cluster);
  SubmitJobsRequest request = TrueJobs(cluster, 2100);
  SubmitJobsReply reply;
  REQUIRE(client.Call(&HeadService::Stub::SubmitJobs, request, &reply).ok());
  REQUIRE(reply.jobs_size() == 2100);

  // Three pages of 1,000 at most, each a call: none is dropped, none twice.
  RunResult json = cluster.Ctl({"jobs", "--json"}, 60s);
  REQUIRE(json.exit_code == 0);
  const ListJobsReply listed = ParseJson<ListJobsReply>(json);
  REQUIRE(listed.jobs_size() == 2100);
  REQUIRE(listed.jobs(0).job_id() == reply.jobs(0).job_id());
  REQUIRE(listed.jobs(2099).job_id() == reply.jobs(2099).job_id());
  RunResult table = cluster.Ctl({"jobs"}, 60s);
  REQUIRE(table.exit_code == 0);
  REQUIRE(table.out.find(reply.jobs(2099).job_id()) != std::string::npos);  // the newest is shown
}
