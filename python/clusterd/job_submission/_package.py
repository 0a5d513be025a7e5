"""A runtime_env's working_dir as a clusterd code package: an uncompressed pax tar, the same bytes for the same
content, whose SHA-256 is its id in the head's store (cli/package_builder.h is clusterctl's packer; the nodes
unpack either with common/storage/tar_package.h).

Left out, as clusterctl leaves them out: ``.git``; what the folder's ``.clusterignore`` files and the
runtime_env's ``excludes`` say (gitignore syntax: ``*``, ``**``, ``?``, ``[...]``, a leading or inner ``/``
anchors, a trailing ``/`` means folders only, ``!`` takes back). Also ``__pycache__``, which a node
remakes. Symlinks stay symlinks when they point inside the folder; one pointing out is an error, as are
files that cannot be read. Sockets and FIFOs are skipped.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import tarfile
import tempfile
from dataclasses import dataclass
from typing import BinaryIO, List, Optional, Sequence, Tuple

ALWAYS_LEFT_OUT = (".git", "__pycache__")


@dataclass
class Package:
    id: str  # SHA-256 of the bytes, hex
    size: int
    file: BinaryIO  # the bytes, at position 0; closing it deletes them
    files: int


@dataclass
class _Rule:
    base: str  # the folder (relative, "" for the root) whose .clusterignore holds it
    regex: "re.Pattern[str]"
    negate: bool
    dir_only: bool


def _glob_regex(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1:end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end + 1
        elif c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def _rule(base: str, line: str) -> Optional[_Rule]:
    line = line.rstrip("\n").rstrip("\r")
    if not line.strip() or line.startswith("#"):
        return None
    line = line.rstrip(" ") if not line.endswith("\\ ") else line
    negate = line.startswith("!")
    if negate:
        line = line[1:]
    dir_only = line.endswith("/")
    line = line.rstrip("/")
    if not line:
        return None
    anchored = "/" in line
    line = line.lstrip("/")
    body = _glob_regex(line)
    regex = re.compile(("" if anchored else "(?:.*/)?") + body + r"\Z", re.DOTALL)
    return _Rule(base, regex, negate, dir_only)


def _matches(rule: _Rule, rel: str, is_dir: bool) -> bool:
    if rule.dir_only and not is_dir:
        return False
    if rule.base:
        if not rel.startswith(rule.base + "/"):
            return False
        rel = rel[len(rule.base) + 1:]
    return bool(rule.regex.match(rel))


def _ignored(rel: str, is_dir: bool, rules: Sequence[_Rule]) -> bool:
    """The last rule that matches decides, as in git."""
    ignored = False
    for rule in rules:
        if _matches(rule, rel, is_dir):
            ignored = not rule.negate
    return ignored


def _scan(root: str, excludes: Sequence[str]) -> List[Tuple[str, os.stat_result]]:
    """(relative path, lstat) of what goes in, sorted by path bytes, a folder before its contents."""
    # The runtime_env's excludes come last, so they win over .clusterignore files (as clusterctl's do).
    given = [r for r in (_rule("", line) for line in excludes) if r]
    entries: List[Tuple[str, os.stat_result]] = []

    def walk(rel_dir: str, rules: List[_Rule]) -> None:
        folder = os.path.join(root, rel_dir) if rel_dir else root
        ignore_file = os.path.join(folder, ".clusterignore")
        if os.path.isfile(ignore_file):
            with open(ignore_file, encoding="utf-8", errors="replace") as f:
                rules = rules + [r for r in (_rule(rel_dir, line) for line in f) if r]
        try:
            names = os.listdir(folder)
        except OSError as e:
            raise ValueError(f"working_dir: cannot read folder {folder}: {e.strerror}") from None
        for name in sorted(names, key=lambda n: n.encode("utf-8", "surrogateescape")):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            path = os.path.join(folder, name)
            st = os.lstat(path)
            is_dir = stat.S_ISDIR(st.st_mode)
            # `!.git` takes it back, as for clusterctl.
            left_out = name in ALWAYS_LEFT_OUT and not any(
                r.negate and _matches(r, rel, is_dir) for r in rules + given)
            if left_out or _ignored(rel, is_dir, rules + given):
                continue
            if not (is_dir or stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
                continue  # sockets, FIFOs, devices: nothing a job can use from a package
            entries.append((rel, st))
            if is_dir:
                walk(rel, rules)

    walk("", [])
    return entries


def _link_target(root: str, rel: str) -> str:
    path = os.path.join(root, rel)
    target = os.readlink(path)
    real_root = os.path.realpath(root)
    resolved = os.path.realpath(path)
    if not (resolved == real_root or resolved.startswith(real_root + os.sep)):
        raise ValueError(f"working_dir: symlink {rel} -> {target} points out of the folder; a package holds only "
                         f"what is in it (copy the file in, or leave the link out with excludes)")
    if os.path.isabs(target):
        # The same place, relative to the link, so that it works wherever the package lands.
        target = os.path.relpath(resolved, os.path.realpath(os.path.dirname(path)))
    return target


class _HashingWriter(io.RawIOBase):
    def __init__(self, out: BinaryIO):
        self.out, self.hash, self.size = out, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.hash.update(data)
        self.out.write(data)
        self.size += len(data)
        return len(data)


def build(root: str, excludes: Sequence[str] = (), max_bytes: Optional[int] = None) -> Package:
    """Packs folder ``root``. Raises ValueError naming the path for what cannot be packed."""
    root = os.path.abspath(os.path.expanduser(root))
    if not os.path.isdir(root):
        raise ValueError(f"runtime_env working_dir {root!r} is not a folder on this machine")
    entries = _scan(root, excludes)
    total = sum(st.st_size for _, st in entries if stat.S_ISREG(st.st_mode))
    if max_bytes is not None and total > max_bytes:
        raise ValueError(f"working_dir {root} holds {total} bytes of files; the head takes packages of at most "
                         f"{max_bytes} (leave some out with runtime_env excludes or a .clusterignore)")
    out = tempfile.TemporaryFile(prefix="clusterd-package-")
    hashing = _HashingWriter(out)
    files = 0
    with tarfile.open(fileobj=hashing, mode="w|", format=tarfile.PAX_FORMAT, bufsize=1 << 20) as tar:
        for rel, st in entries:
            info = tarfile.TarInfo(rel)
            # Owners are not restored on nodes, and set-id bits are refused there.
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = stat.S_IMODE(st.st_mode) & 0o1777
            info.mtime = int(st.st_mtime)
            if stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
                info.mtime = 0  # a folder's own time changes with what is left out: not part of the content
                tar.addfile(info)
            elif stat.S_ISLNK(st.st_mode):
                info.type = tarfile.SYMTYPE
                info.linkname = _link_target(root, rel)
                tar.addfile(info)
            else:
                path = os.path.join(root, rel)
                try:
                    with open(path, "rb") as f:
                        info.size = os.fstat(f.fileno()).st_size
                        tar.addfile(info, f)
                except OSError as e:
                    out.close()
                    raise ValueError(f"working_dir: cannot read {path}: {e.strerror}") from None
                files += 1
    out.flush()
    out.seek(0)
    return Package(hashing.hash.hexdigest(), hashing.size, out, files)
