// A package's unpacked tree as a list of entries, and the two things the
// package cache does with it: check that nobody changed the tree in place
// (a job can write through a hard link), and give a job its own working
// folder as hard links into the tree, so no byte is copied.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "common/storage/tree_entry.h"

namespace clusterd {

// Walks `root` without following symlinks; parents before children.
Result<std::vector<TreeEntry>> IndexTree(const std::string& root);

// One line per entry, fields escaped, written atomically.
Status SaveTreeIndex(const std::string& path, const std::vector<TreeEntry>& entries);
Result<std::vector<TreeEntry>> LoadTreeIndex(const std::string& path);

// The first entry whose type, size or mtime on disk differs from the
// index, or that is gone; empty when the tree is as indexed.
std::string FirstChangedEntry(const std::string& root, const std::vector<TreeEntry>& entries);

// Makes `dest` (which must not exist) hold the tree: folders made with
// their modes, files hard-linked (copied where a link cannot be made: across
// file systems, or to an immutable file), symlinks recreated. Built beside
// dest and renamed into place. Files at or under `outputs` (paths relative
// to the tree, files or folders, also where they lead through the tree's
// symlinks) are copies of their own: a job rewrites its outputs in place
// (torch.save opens model.pt for writing), and through a link it would
// rewrite every other job's copy of the package on the node.
Status LinkTree(const std::string& root, const std::vector<TreeEntry>& entries, const std::string& dest,
                const std::vector<std::string>& outputs = {});

}  // namespace clusterd
