// common/storage/checkpoint_snapshot.h on a real folder: the snapshot outlives its
// folder, keeps what did not change and follows what did.
#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>

#include "common/storage/checkpoint_snapshot.h"
#include "temp_tree.h"

using namespace clusterd;
using namespace clusterd::testing;
namespace fs = std::filesystem;

namespace {

ino_t Inode(const std::string& path) {
  struct stat st {};
  REQUIRE(lstat(path.c_str(), &st) == 0);
  return st.st_ino;
}

}  // namespace

TEST_CASE("a checkpoint snapshot keeps the files of a folder pruned after it was taken", "[checkpoint_snapshot]") {
  TempTree t;
  t.Write("ckpt/checkpoint_000001/model.pt", "weights 1");
  t.Write("ckpt/checkpoint_000001/sub/optim.pt", "moments 1");
  fs::create_symlink("model.pt", t.Path("ckpt/checkpoint_000001/latest"));
  auto root = SnapshotCheckpoint(t.Path("ckpt"), "checkpoint_000001");
  REQUIRE(root.ok());
  CHECK(*root == t.Path("ckpt/.uploading"));
  const std::string snap = *root + "/checkpoint_000001";
  const std::string snap_rel = "ckpt/.uploading/checkpoint_000001";
  const ino_t model = Inode(snap + "/model.pt");
  CHECK(model == Inode(t.Path("ckpt/checkpoint_000001/model.pt")));  // a link, not a copy
  CHECK(fs::read_symlink(snap + "/latest") == "model.pt");

  // The program replaces one file and drops another: taken again, the
  // unchanged file stays the same link (its hash cache entry stands).
  t.Write("ckpt/checkpoint_000001/model.pt.new", "weights 2");
  fs::rename(t.Path("ckpt/checkpoint_000001/model.pt.new"), t.Path("ckpt/checkpoint_000001/model.pt"));
  fs::remove_all(t.Path("ckpt/checkpoint_000001/latest"));
  REQUIRE(SnapshotCheckpoint(t.Path("ckpt"), "checkpoint_000001").ok());
  CHECK(t.Read(snap_rel + "/model.pt") == "weights 2");
  CHECK(Inode(snap + "/sub/optim.pt") == Inode(t.Path("ckpt/checkpoint_000001/sub/optim.pt")));
  CHECK_FALSE(fs::exists(fs::symlink_status(snap + "/latest")));

  // Pruned (ctrain's keep): the snapshot still holds it all.
  fs::remove_all(t.Path("ckpt/checkpoint_000001"));
  CHECK(t.Read(snap_rel + "/model.pt") == "weights 2");
  CHECK(t.Read(snap_rel + "/sub/optim.pt") == "moments 1");
  CHECK_FALSE(SnapshotCheckpoint(t.Path("ckpt"), "checkpoint_000001").ok());  // gone: nothing to take

  RemoveSnapshot(t.Path("ckpt"), "checkpoint_000001");
  CHECK_FALSE(fs::exists(t.Path("ckpt/.uploading")));
}
