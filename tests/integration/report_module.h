// A Python module for test jobs that report metrics the way ctrain's
// report() does, without the clusterd package: ctrain_report.py.
#pragma once

#include <fstream>
#include <string>

namespace clusterd::testing {

// ctrain_report.py in `dir`: report(values) sends one report through the
// node agent's socket as ctrain's report() does (a 4-byte big-endian
// length, then JSON) and returns the agent's answer.
inline void WriteReportModule(const std::string& dir) {
  std::ofstream(dir + "/ctrain_report.py") <<
      "import json, os, socket, struct\n"
      "def report(values):\n"
      "    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
      "    s.connect(os.environ['CLUSTER_AGENT_SOCKET'])\n"
      "    body = json.dumps({'values': values}).encode()\n"
      "    s.sendall(struct.pack('>I', len(body)) + body)\n"
      "    n = struct.unpack('>I', s.recv(4))[0]\n"
      "    answer = s.recv(n).decode()\n"
      "    s.close()\n"
      "    return answer\n";
}

}  // namespace clusterd::testing
