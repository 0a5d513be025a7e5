// A head's leader election alone, as a process of its own, for the [etcd]
// tests that kill a leader the way its machine dies: SIGKILL, with no
// resign and no revoke. Prints "leading REVISION" and "standby" lines as
// its state changes, and runs until killed.
//
//   etcd_candidate ETCD_URL ID ADDRESS [TTL_MS]
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "daemon/ha/etcd_client.h"
#include "daemon/ha/etcd_endpoints.h"
#include "daemon/ha/leader_election.h"

using namespace clusterd;

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s ETCD_URL ID ADDRESS [TTL_MS]\n", argv[0]);
    return 2;
  }
  EtcdEndpoints endpoints;
  Status parsed = ParseEtcdEndpoints(argv[1], &endpoints);
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s\n", parsed.message().c_str());
    return 2;
  }
  EtcdClientOptions client_options;
  client_options.members = endpoints.members;
  auto client = EtcdClient::Create(client_options);
  if (!client.ok()) {
    std::fprintf(stderr, "%s\n", client.status().message().c_str());
    return 1;
  }
  LeaderElectionOptions options;
  options.prefix = endpoints.prefix;
  options.id = argv[2];
  options.address = argv[3];
  if (argc > 4) options.lease_ttl_ms = std::atoi(argv[4]);
  LeaderElection* election_ptr = nullptr;
  options.on_change = [&](bool leading) {
    if (leading) {
      std::printf("leading %lld\n", static_cast<long long>(election_ptr->State().leader_revision));
    } else {
      std::printf("standby\n");
    }
    std::fflush(stdout);
  };
  LeaderElection election(client->get(), options);
  election_ptr = &election;
  Status started = election.Start();
  if (!started.ok()) {
    std::fprintf(stderr, "%s\n", started.message().c_str());
    return 1;
  }
  while (true) pause();
}
