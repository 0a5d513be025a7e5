// A code package on the node's side (DESIGN rule 11): the uncompressed tar
// that clusterctl packs from a working_dir, unpacked once into a node's
// package cache. The rules of what a package may hold live here, so that the
// packer (cli/working_dir_scan) and the unpacker agree on them.
#pragma once

#include <map>
#include <string>

#include "common/storage/byte_source.h"
#include "common/status.h"

namespace clusterd {

// Extracts the tar at `archive_path` into `dest_dir`, which must not exist
// (its parent must). Writes into a fresh temp folder beside it (".NAME.tmp-*",
// 0700; a crash can leave one behind, which nothing reads) and renames it into
// place last, so a half-extracted package is never seen under dest_dir.
// Refuses the whole package, leaving nothing behind, for any entry that is an
// absolute path, has a ".." component, is a hard link, a device, FIFO or
// socket, has a setuid or setgid bit, appears twice, lies under a symlink,
// or is a symlink that resolves outside the package. Keeps permission bits,
// mtimes and symlinks; files belong to the caller (owners are not restored).
// Errors (one line, naming the archive and the entry): AlreadyExists when
// dest_dir exists (or appeared meanwhile), InvalidArgument for a refused
// entry, Corruption for an unreadable archive, IOError for the disk.
// Thread-safe: no process-wide state (no chdir).
Status ExtractPackage(const std::string& archive_path, const std::string& dest_dir);
// The same from bytes as they arrive (a download), named `name` in errors
// ("package ID"). The folder is renamed into place only once the whole
// source has been read and source->Finish() said it is right; when it says
// otherwise, its error is returned (it wins over an error of extraction,
// which bad bytes may well have caused) and nothing is left behind.
Status ExtractPackage(ByteSource* source, const std::string& name, const std::string& dest_dir);

// Whether symlink `link_path` (relative, '/'-separated, inside a package)
// whose `target` is relative resolves to a place inside the package, when
// the other symlinks of the package (`links`: path -> target) are followed as
// the kernel would. An absolute target never stays inside. A loop counts as
// inside: it resolves nowhere.
bool SymlinkStaysInside(const std::string& link_path, const std::string& target,
                        const std::map<std::string, std::string>& links);

}  // namespace clusterd
