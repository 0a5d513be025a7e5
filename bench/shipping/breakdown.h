// Where a first submit's time goes, from the files it makes on the way
// (file_watch.h): on the head the store's temporary file (store/tmp/NAME.N,
// the upload streaming in while clusterctl packs) created and renamed away;
// on w1, in packages/, the folder a package is unpacked into
// (.ID.tmp-XXXXXX) created and renamed into place, and, where the agent
// still downloads to a file first, that file (ID.tar.PID-N) created before
// it. These names are the product's own; when one of them changes, the
// breakdown is left out (the run still counts).
#pragma once

#include <string>
#include <vector>

#include "file_watch.h"
#include "report.h"
#include "ship_cluster.h"
#include "stats.h"
#include "trials.h"

namespace clusterd::bench {

class Breakdown {
 public:
  Breakdown();

  // Watches the two folders (they exist once one package has gone through),
  // and the reads of the client's large files; false, naming the ones it
  // could not watch in *missing, otherwise.
  bool Watch(ShipCluster& cluster, std::string* missing);
  // One first submit: its segments, if every event was seen in order.
  void Add(const Times& times);
  // What an unchanged re-submit did that it should not ("" if nothing): read
  // the large files (the hash cache should know them), upload, or fetch.
  std::string UnchangedWork(const Times& times) const;
  // Info rows: the median of each segment over the complete first submits.
  void AddRows(Report* report) const;

 private:
  FileWatch watch_;
  std::vector<std::string> names_;
  std::vector<Samples> samples_;
  int incomplete_ = 0;
};

}  // namespace clusterd::bench
