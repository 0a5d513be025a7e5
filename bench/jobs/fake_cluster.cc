#include "fake_cluster.h"

#include <chrono>

#include <fmt/format.h>

namespace clusterd::bench {

JobSpec OneRank(double cpus, double gpus) {
  JobSpec spec;
  spec.set_name("scale");
  spec.add_entrypoint("/bin/true");
  spec.set_working_dir("/work");
  spec.set_working_dir_mode(SHARED);
  spec.set_num_workers(1);
  (*spec.mutable_resources_per_worker()->mutable_amounts())["CPU"] = cpus;
  if (gpus > 0) (*spec.mutable_resources_per_worker()->mutable_amounts())["GPU"] = gpus;
  return spec;
}

double FakeCluster::Register(int count, const std::string& prefix, int subnet) {
  double seconds = 0;
  for (int i = 0; i < count; ++i) {
    auto link = std::make_shared<testing::FakeAgentConnection>();
    AgentMessage reg;
    auto* r = reg.mutable_register_();
    r->set_name(prefix + "-" + std::to_string(i));
    r->set_address(fmt::format("10.{}.{}.{}", subnet, i / 250, i % 250 + 1));
    r->set_instance_id(prefix + "-instance-" + std::to_string(i));
    (*r->mutable_total()->mutable_amounts())["CPU"] = 2;
    auto start = std::chrono::steady_clock::now();
    head.OnAgentMessage(link, reg);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    links.push_back(link);
    answered.push_back(link->sent.size());
  }
  return seconds;
}

void FakeCluster::AnswerAgents(std::vector<std::string>* placed) {
  for (size_t i = 0; i < links.size(); ++i) {
    auto& link = *links[i];
    // Answers may make the head send more on this link: index, not iterate.
    for (; answered[i] < link.sent.size(); ++answered[i]) {
      const HeadMessage sent = link.sent[answered[i]];
      if (sent.has_reserve_port()) {
        AgentMessage port;
        port.mutable_port_reserved()->set_job_id(sent.reserve_port().job_id());
        port.mutable_port_reserved()->set_attempt(sent.reserve_port().attempt());
        port.mutable_port_reserved()->set_port(1000);
        head.OnAgentMessage(links[i], port);
      }
      if (!sent.has_launch()) continue;
      const LaunchRanks& launch = sent.launch();
      if (placed) placed->push_back(launch.job_id());
      for (const RankLaunch& rank : launch.ranks()) {
        AgentMessage started;
        started.mutable_rank_started()->set_job_id(launch.job_id());
        started.mutable_rank_started()->set_attempt(launch.attempt());
        started.mutable_rank_started()->set_rank(rank.rank());
        started.mutable_rank_started()->set_pid(1);
        if (launch.pick_master_port()) started.mutable_rank_started()->set_master_port(1000);
        head.OnAgentMessage(links[i], started);
        AgentMessage exited;
        exited.mutable_rank_exited()->set_job_id(launch.job_id());
        exited.mutable_rank_exited()->set_attempt(launch.attempt());
        exited.mutable_rank_exited()->set_rank(rank.rank());
        head.OnAgentMessage(links[i], exited);
      }
    }
  }
}

}  // namespace clusterd::bench
