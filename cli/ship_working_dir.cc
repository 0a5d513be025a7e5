#include "cli/ship_working_dir.h"

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "cli/pack_progress.h"
#include "cli/package_builder.h"
#include "common/jobspec/job_spec.h"
#include "common/storage/hash_cache.h"

namespace clusterd::cli {

Status ShipWorkingDir(HeadClient& client, JobSpec* spec, bool force_upload) {
  if (spec->working_dir().empty() || spec->working_dir_mode() == SHARED) return Status::Ok();
  const std::string& root = spec->working_dir();
  ScanOptions options;
  options.excludes.assign(spec->excludes().begin(), spec->excludes().end());
  options.max_bytes = static_cast<uint64_t>(spec->max_package_bytes() > 0 ? spec->max_package_bytes()
                                                                           : kDefaultMaxPackageBytes);
  HashCache cache = HashCache::Load(DefaultHashCacheDir(), root);
  std::unique_ptr<ClusterStorage> store_ptr = client.Store();
  ClusterStorage& store = *store_ptr;
  // A package that has to be built streams to the head's store as it is
  // packed (no copy on the client's disk); the head keeps it only once the
  // id sent last matches the bytes.
  std::unique_ptr<BlobWriter> upload;
  OpenSinkFn open_upload = [&](uint64_t size_hint) -> Result<ArchiveSink> {
    upload = store.StartUpload(static_cast<int64_t>(size_hint), "working_dir " + root);
    return ArchiveSink([&](const char* data, size_t size) { return upload->Write(data, size); });
  };

  Result<PreparedPackage> prepared = Status::Internal("not prepared");
  {
    ProgressPrinter printer;
    prepared = PrepareWorkingDir(root, options, &cache, open_upload, /*reuse_cached_id=*/!force_upload,
                                 std::ref(printer));
  }
  if (prepared.ok() && !prepared->built) {
    // Packed before: the head may still have it, in which case nothing moves.
    auto known = store.Stat(prepared->id);
    if (!known.ok()) return known.status();
    if (!known->present()) {
      ProgressPrinter printer;
      prepared = PrepareWorkingDir(root, options, &cache, open_upload, /*reuse_cached_id=*/false, std::ref(printer));
    }
  }
  if (!prepared.ok()) return prepared.status();  // an unfinished upload is cancelled
  for (const std::string& warning : prepared->tree.warnings) std::cerr << "clusterctl: warning: " << warning << "\n";

  std::string what = store.where().rfind("the head", 0) == 0 ? "already on the head" : "already in " + store.where();
  if (prepared->built) {
    RETURN_IF_ERROR(upload->Finish(prepared->id));
    what = "uploaded";
  }
  std::cerr << fmt::format("working_dir {}: package {} ({} files, {}), {}\n", root, prepared->id.substr(0, 12),
                           prepared->tree.file_count, HumanBytes(prepared->size), what);
  spec->set_package_id(prepared->id);
  spec->set_package_bytes(static_cast<int64_t>(prepared->size));
  return Status::Ok();
}

}  // namespace clusterd::cli
