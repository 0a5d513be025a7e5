// clusterctl submit's shipping step (DESIGN rule 11): packs the job's
// working_dir, uploads the package unless the head's store has it, and names
// it in the spec, so that the folder need exist only on the submitter's
// machine. An unchanged folder is recognised from the hash cache without
// reading its files, and costs one StatBlob call. A package that must be
// built streams to the head's store while it is packed (nothing is written
// on the client's disk); its id is known only once it is all sent, so a
// folder the hash cache does not know is sent even when the head has it.
#pragma once

#include "cli/client.h"
#include "cluster.pb.h"
#include "common/status.h"

namespace clusterd::cli {

// Does nothing for a job without working_dir or with working_dir_mode
// shared. Else sets spec->package_id and package_bytes. `force_upload`
// packs and uploads even where the cache says the head has the package (the
// head said it no longer does). Errors are one line naming the folder.
Status ShipWorkingDir(HeadClient& client, JobSpec* spec, bool force_upload = false);

}  // namespace clusterd::cli
