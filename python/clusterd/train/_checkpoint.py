"""Checkpoint: a folder of files, as Ray Train's (ray.train.Checkpoint)."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from typing import Iterator, Optional

# The names the node stores and restores (ctrain writes the same): a folder
# checkpoint_NNNNNN, written as .tmp-checkpoint_NNNNNN and renamed into place.
CHECKPOINT_NAME = re.compile(r"^checkpoint_(\d{6,})$")


def checkpoint_name(index: int) -> str:
    return f"checkpoint_{index:06d}"


def checkpoint_index(name: str) -> int:
    """The number of a checkpoint folder's name, -1 if the name is not one."""
    match = CHECKPOINT_NAME.match(name)
    return int(match.group(1)) if match else -1


def newest_in(folder: str) -> Optional[str]:
    """The path of the newest complete checkpoint_N folder in ``folder``, or None."""
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    found = [(checkpoint_index(n), n) for n in names if checkpoint_index(n) >= 0]
    found = [(i, n) for i, n in found if os.path.isdir(os.path.join(folder, n))]
    return os.path.join(folder, max(found)[1]) if found else None


class Checkpoint:
    """A checkpoint: a folder on this machine.

    ``Checkpoint.from_directory(path)`` names one; ``train.report(metrics, checkpoint=...)``
    keeps a copy of it made at once, so the folder may be deleted as soon as report() returns.
    """

    def __init__(self, path: str):
        self.path = os.path.abspath(os.fspath(path))
        self.filesystem = None  # Ray's pyarrow filesystem; here always the local one

    @classmethod
    def from_directory(cls, path) -> "Checkpoint":
        """The checkpoint held by the folder ``path``. Raises FileNotFoundError if it is not a folder."""
        path = os.fspath(path)
        if not os.path.isdir(path):
            raise FileNotFoundError(f"Checkpoint.from_directory: {path!r} is not a folder")
        return cls(path)

    @contextlib.contextmanager
    def as_directory(self) -> Iterator[str]:
        """A context manager giving the folder's path, to read it in place."""
        if not os.path.isdir(self.path):
            raise FileNotFoundError(f"checkpoint folder {self.path!r} does not exist")
        yield self.path

    def to_directory(self, path: Optional[str] = None) -> str:
        """Copies the checkpoint into ``path`` (a new temporary folder if None) and returns it."""
        if path is None:
            path = tempfile.mkdtemp(prefix="checkpoint-")
        path = os.fspath(path)
        shutil.copytree(self.path, path, symlinks=True, dirs_exist_ok=True)
        return path

    def __fspath__(self) -> str:
        return self.path

    def __eq__(self, other) -> bool:
        return isinstance(other, Checkpoint) and other.path == self.path

    def __hash__(self) -> int:
        return hash(self.path)

    def __repr__(self) -> str:
        return f"Checkpoint(path={self.path!r})"
