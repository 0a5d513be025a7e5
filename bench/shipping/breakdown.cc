#include "breakdown.h"

#include <sys/inotify.h>

#include <optional>

namespace clusterd::bench {

namespace {

const std::string kHead = "head store", kWorker = "w1 packages";
const std::string kData = "client data";

}  // namespace

Breakdown::Breakdown()
    : names_({"exec -> upload starts (load, scan, hash cache, connect)",
              "pack and upload, until the head's store has it",
              "stored -> clusterctl exits (SubmitJob)",
              "clusterctl exits -> w1 starts fetching",
              "w1 fetch and unpack (download, hash check, extract)",
              "unpacked -> rank running (index, links, spawn)"}),
      samples_(names_.size()) {}

bool Breakdown::Watch(ShipCluster& cluster, std::string* missing) {
  missing->clear();
  struct Folder {
    testing::Machine* machine;
    std::string path, label;
  };
  for (const Folder& f : {Folder{&cluster.head, "/tmp/state/clusterd/store/tmp", kHead},
                          Folder{&cluster.w1, "/tmp/clusterd/packages", kWorker}}) {
    if (!watch_.Watch(f.machine->HostPath(f.path), f.label)) *missing += (missing->empty() ? "" : ", ") + f.path;
  }
  if (!watch_.Watch(cluster.client.HostPath(kFolder + "/data"), kData, /*reads=*/true)) {
    *missing += (missing->empty() ? "" : ", ") + kFolder + "/data";
  }
  return missing->empty();
}

void Breakdown::Add(const Times& t) {
  // Each event is looked for after the one before it.
  std::vector<int64_t> points = {t.start_ns};
  auto next = [&](const std::string& where, uint32_t mask, const std::string& part) {
    std::optional<int64_t> at = watch_.First(where, mask, part, points.back());
    if (at && *at <= t.done_ns) points.push_back(*at);
    return at.has_value() && *at <= t.done_ns;
  };
  bool complete = next(kHead, IN_CREATE, "") && next(kHead, IN_MOVED_FROM, "");
  if (complete && t.returned_ns >= points.back()) {
    points.push_back(t.returned_ns);
    // The launch may reach w1 before clusterctl has exited: look from "stored".
    // A download to a file comes before the unpacking folder; a streamed one
    // has only the folder.
    const int64_t stored = points[points.size() - 2];
    std::optional<int64_t> fetch = watch_.First(kWorker, IN_CREATE, ".tar.", stored);
    if (!fetch || *fetch > t.done_ns) fetch = watch_.First(kWorker, IN_CREATE, ".tmp-", stored);
    complete = fetch && *fetch <= t.done_ns;
    if (complete) points.push_back(*fetch);
    complete = complete && next(kWorker, IN_MOVED_FROM, ".tmp-");
    points.push_back(t.done_ns);
  } else {
    complete = false;
  }
  if (!complete || points.size() != names_.size() + 1) {
    ++incomplete_;
    return;
  }
  for (size_t i = 0; i < names_.size(); ++i) samples_[i].Add(static_cast<double>(points[i + 1] - points[i]) / 1e6);
}

std::string Breakdown::UnchangedWork(const Times& t) const {
  auto in_window = [&](const std::string& where, uint32_t mask, const std::string& part) {
    std::optional<int64_t> at = watch_.First(where, mask, part, t.start_ns);
    return at && *at <= t.done_ns;
  };
  std::string did;
  // ".bin": the files; an event with no name is a listing of the folder (the scan).
  if (in_window(kData, IN_ACCESS, ".bin")) did += "read the large files; ";
  if (in_window(kHead, IN_CREATE, "")) did += "uploaded; ";
  if (in_window(kWorker, IN_CREATE, ".tar.") || in_window(kWorker, IN_CREATE, ".tmp-")) did += "fetched; ";
  return did;
}

void Breakdown::AddRows(Report* report) const {
  if (samples_[0].empty()) return;
  // Rounds where an event was missed (a name the product changed) are left out, and said so.
  std::string n = " (n=" + std::to_string(samples_[0].size()) +
                  (incomplete_ > 0 ? " of " + std::to_string(samples_[0].size() + incomplete_) : "") + ")";
  for (size_t i = 0; i < names_.size(); ++i) {
    report->Info("first submit, " + names_[i] + ", median" + (i == 0 ? n : ""), samples_[i].Median(), "ms");
  }
}

}  // namespace clusterd::bench
