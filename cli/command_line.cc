#include "cli/command_line.h"

#include <iostream>

#include "common/config.h"
#include "common/session.h"

namespace po = boost::program_options;

namespace clusterd::cli {

int ParseCommandLine(const std::string& command, const std::string& usage, const std::vector<std::string>& args,
                     po::options_description extra, size_t min_positional, size_t max_positional,
                     CommandLine* out) {
  // clusterctl's keys of the config table: their defaults, then their
  // variables ($CLUSTER_RPC_TIMEOUT_MS), then the flags below.
  Config config;
  if (Status read = ReadClusterctlEnvironment(&config); !read.ok()) {
    std::cerr << "clusterctl " << command << ": " << read.message() << "\n";
    return 2;
  }
  const std::string timeout_variable = ClusterctlEnvironmentName("rpc_timeout_ms");
  out->client.timeout_ms = config.rpc_timeout_ms;
  out->client.follow_outage_ms = config.follow_outage_ms;
  if (config.follow_outage_ms < 0) {
    std::cerr << "clusterctl " << command << ": " << ClusterctlEnvironmentName("follow_outage_ms")
              << " must be >= 0, got " << config.follow_outage_ms << "\n";
    return 2;
  }
  po::options_description common("connection");
  common.add_options()
    ("help,h", "print this help")
    ("address", po::value(&out->client.address), "head HOST:PORT (default: $CLUSTER_ADDRESS, then the local session)")
    ("token", po::value(&out->client.token), "cluster token (default: $CLUSTER_TOKEN, then the local session)")
    ("tls-ca", po::value(&out->client.tls_ca),
     "CA certificate that verifies a TLS head (default: $CLUSTER_TLS_CA, then the local session; none: plaintext)")
    ("temp-dir", po::value(&out->client.temp_dir)->default_value(DefaultTempDir()), "where session folders are")
    ("timeout-ms", po::value(&out->client.timeout_ms)->default_value(config.rpc_timeout_ms),
     ("deadline of each call (default: $" + timeout_variable + ", then rpc_timeout_ms)").c_str());
  po::options_description all("clusterctl " + usage);
  all.add(extra).add(common);
  po::options_description hidden;
  hidden.add_options()("positional", po::value(&out->positional));
  po::options_description parse;
  parse.add(all).add(hidden);
  po::positional_options_description positional;
  positional.add("positional", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(parse).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "clusterctl " << command << ": " << e.what() << " (see clusterctl " << command << " --help)\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << all;
    return 0;
  }
  if (out->client.timeout_ms <= 0) {
    const std::string source = vm["timeout-ms"].defaulted() ? timeout_variable : "--timeout-ms";
    std::cerr << "clusterctl " << command << ": " << source << " must be above 0, got " << out->client.timeout_ms
              << " (see clusterctl " << command << " --help)\n";
    return 2;
  }
  if (vm.count("json")) out->json = vm["json"].as<bool>();
  if (out->positional.size() < min_positional || out->positional.size() > max_positional) {
    std::cerr << "clusterctl " << command << ": usage: clusterctl " << usage << "\n";
    return 2;
  }
  return -1;
}

po::options_description JsonFlag(CommandLine* line) {
  po::options_description flags("output");
  flags.add_options()("json", po::bool_switch(&line->json), "print JSON, for scripts");
  return flags;
}

int Fail(const Status& status) {
  std::cerr << "clusterctl: " << status.message() << std::endl;
  return 1;
}

}  // namespace clusterd::cli
