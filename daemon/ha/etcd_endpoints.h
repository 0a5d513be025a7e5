// Where the etcd cluster is: the endpoint list of `--ha etcd://E1:2379,E2:2379[/prefix]`.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace clusterd {

struct EtcdEndpoints {
  // host:port of each member, in the order given; calls try them in turn.
  std::vector<std::string> members;
  // The key prefix every key of this cluster lives under, with no trailing
  // '/' ("" when the URL names none): "/clusterd/prod" for
  // etcd://e1:2379/clusterd/prod.
  std::string prefix;
};

// Parses "etcd://HOST:PORT[,HOST:PORT...][/PREFIX]". HOST is a name, an IPv4
// address or a bracketed IPv6 one ([::1]:2379). A malformed URL is an
// InvalidArgument naming the part that is wrong.
Status ParseEtcdEndpoints(const std::string& url, EtcdEndpoints* out);

}  // namespace clusterd
