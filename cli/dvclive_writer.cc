#include "cli/dvclive_writer.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <cmath>
#include <fstream>
#include <map>

#include <fmt/format.h>

#include "common/session.h"
#include "common/text.h"

namespace clusterd {

namespace {

Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::IOError(fmt::format("cannot create {}: {}", path, std::strerror(errno)));
  }
  return Status::Ok();
}

// Metric names come from training code; keep them to one path component.
std::string SafeName(const std::string& name) {
  std::string out = name;
  for (char& c : out) {
    if (c == '/' || c == '\0') c = '_';
  }
  return out.empty() || out == "." || out == ".." ? "_" : out;
}

}  // namespace

Status WriteDvcLive(const std::string& dir, const MetricRecord& record) {
  RETURN_IF_ERROR(MakeDir(dir));
  RETURN_IF_ERROR(MakeDir(dir + "/plots"));
  RETURN_IF_ERROR(MakeDir(dir + "/plots/metrics"));
  std::string json = fmt::format("{{\"step\": {}", record.index());
  std::map<std::string, double> sorted(record.values().begin(), record.values().end());
  for (const auto& [name, value] : sorted) {
    std::string path = fmt::format("{}/plots/metrics/{}.tsv", dir, SafeName(name));
    bool fresh = access(path.c_str(), F_OK) != 0;
    std::ofstream tsv(path, std::ios::app);
    if (!tsv) return Status::IOError(fmt::format("cannot write {}", path));
    if (fresh) tsv << "step\t" << name << "\n";
    tsv << record.index() << "\t" << fmt::format("{}", value) << "\n";
    json += fmt::format(", {}: {}", JsonQuote(name), std::isfinite(value) ? fmt::format("{}", value) : "null");
  }
  json += "}\n";
  return WriteFileAtomic(dir + "/metrics.json", json);
}

}  // namespace clusterd
