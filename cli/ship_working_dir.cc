#include "cli/ship_working_dir.h"

#include <stdlib.h>
#include <unistd.h>

#include <iostream>

#include <fmt/format.h>

#include "cli/pack_progress.h"
#include "cli/package_builder.h"
#include "common/file_util.h"
#include "common/hash_cache.h"

namespace clusterd::cli {

namespace {

// Where the package is built before it is sent: next to the hash cache (the
// user's disk, not a RAM-backed /tmp, for a 2 GiB folder), else $TMPDIR.
std::string PackagePath() {
  std::string dir = DefaultHashCacheDir();
  if (!dir.empty()) {
    dir = dir.substr(0, dir.rfind('/')) + "/packing";
    if (!MakeDirs(dir, 0700).ok()) dir.clear();
  }
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    dir = tmp && *tmp ? tmp : "/tmp";
  }
  return fmt::format("{}/package-{}.tar", dir, getpid());
}

// Redraws "Uploading package: 40.0/100.0 MiB" in place on a terminal.
BlobClient::ProgressFn UploadProgress(bool* drawn) {
  if (!isatty(STDERR_FILENO)) return nullptr;
  return [drawn](int64_t done, int64_t total) {
    std::cerr << fmt::format("\rUploading package: {:.1f}/{:.1f} MiB", done / 1048576.0, total / 1048576.0)
              << std::flush;
    *drawn = true;
  };
}

}  // namespace

Status ShipWorkingDir(HeadClient& client, JobSpec* spec, bool force_upload) {
  if (spec->working_dir().empty() || spec->working_dir_mode() == SHARED) return Status::Ok();
  const std::string& root = spec->working_dir();
  ScanOptions options;
  options.excludes.assign(spec->excludes().begin(), spec->excludes().end());
  options.max_bytes = static_cast<uint64_t>(spec->max_package_bytes() > 0 ? spec->max_package_bytes()
                                                                           : kDefaultMaxPackageBytes);
  HashCache cache = HashCache::Load(DefaultHashCacheDir(), root);
  std::string archive = PackagePath();
  BlobClient store = client.Store();

  Result<PreparedPackage> prepared = Status::Internal("not prepared");
  {
    ProgressPrinter printer;
    prepared = PrepareWorkingDir(root, options, &cache, archive, /*reuse_cached_id=*/!force_upload, std::ref(printer));
  }
  if (prepared.ok() && prepared->archive_path.empty()) {
    // Packed before: the head may still have it, in which case nothing moves.
    auto known = store.Stat(prepared->id);
    if (!known.ok()) return known.status();
    if (!known->present()) {
      ProgressPrinter printer;
      prepared = PrepareWorkingDir(root, options, &cache, archive, /*reuse_cached_id=*/false, std::ref(printer));
    }
  }
  if (!prepared.ok()) return prepared.status();
  for (const std::string& warning : prepared->tree.warnings) std::cerr << "clusterctl: warning: " << warning << "\n";

  const char* what = "already on the head";
  if (!prepared->archive_path.empty()) {
    Status sent = Status::Ok();
    auto known = store.Stat(prepared->id);
    if (!known.ok()) {
      sent = known.status();
    } else if (!known->present()) {
      bool drawn = false;
      sent = store.Upload(prepared->id, prepared->archive_path, UploadProgress(&drawn));
      if (drawn) std::cerr << "\n";
      what = "uploaded";
    }
    unlink(prepared->archive_path.c_str());
    RETURN_IF_ERROR(sent.WithContext("working_dir " + root));
  }
  std::cerr << fmt::format("working_dir {}: package {} ({} files, {}), {}\n", root, prepared->id.substr(0, 12),
                           prepared->tree.file_count, HumanBytes(prepared->size), what);
  spec->set_package_id(prepared->id);
  spec->set_package_bytes(static_cast<int64_t>(prepared->size));
  return Status::Ok();
}

}  // namespace clusterd::cli
