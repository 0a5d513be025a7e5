"""Where the head is and what proves we may talk to it.

Found as clusterctl finds them (common/session.h): an explicit value, then
``$CLUSTER_ADDRESS`` / ``$CLUSTER_TOKEN`` / ``$CLUSTER_TLS_CA``, then the
newest local session folder (``$CLUSTER_TEMP_DIR``, else
``/tmp/clusterd-<uid>``, its ``session_latest``). The token never goes on a
command line: clusterctl gets it in its environment.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from typing import Optional

from clusterd._errors import ClusterdError

_lock = threading.Lock()
_current: Optional["ConnectionInfo"] = None
_runtime_env: dict = {}

# What a job takes from init(runtime_env=...): Ray's keys that make sense where ranks run the node's Python.
RUNTIME_ENV_KEYS = ("working_dir", "env_vars", "excludes")


@dataclasses.dataclass(frozen=True)
class ConnectionInfo:
    """A head's gRPC address (HOST:PORT), the token to use and the TLS CA file ("" for plaintext)."""

    address: str
    token: str = dataclasses.field(repr=False)
    tls_ca: str = ""

    def clusterctl_env(self) -> dict:
        """The variables clusterctl reads these from."""
        env = {"CLUSTER_ADDRESS": self.address, "CLUSTER_TOKEN": self.token}
        if self.tls_ca:
            env["CLUSTER_TLS_CA"] = self.tls_ca
        return env


def temp_dir() -> str:
    """Where daemons of this user keep their session folders."""
    return os.environ.get("CLUSTER_TEMP_DIR") or f"/tmp/clusterd-{os.getuid()}"


def _session_file(name: str) -> str:
    path = os.path.join(temp_dir(), "session_latest", name)
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return ""


def resolve_address(address: Optional[str] = None) -> str:
    """HOST:PORT of the head: ``address`` unless None or "auto", then $CLUSTER_ADDRESS, then the local session.

    Raises ClusterdError when none of them names one.
    """
    if address and address != "auto":
        for scheme in ("clusterd://", "ray://"):
            if address.startswith(scheme):
                address = address[len(scheme):]
        return address
    found = os.environ.get("CLUSTER_ADDRESS") or _session_file("address")
    if not found:
        raise ClusterdError(
            "no clusterd head found: pass address='HOST:PORT', set CLUSTER_ADDRESS, "
            f"or start one here with `clusterd start --head` (no session in {temp_dir()})")
    return found


def resolve_token(token: Optional[str] = None) -> str:
    """The cluster token: ``token``, then $CLUSTER_TOKEN, then the local session's token file ("" if none)."""
    return token or os.environ.get("CLUSTER_TOKEN") or _session_file("token")


def resolve_tls_ca(tls_ca: Optional[str] = None) -> str:
    """The CA file that verifies a TLS head: ``tls_ca``, then $CLUSTER_TLS_CA, then the session's ("" = plaintext)."""
    if tls_ca:
        return tls_ca
    if os.environ.get("CLUSTER_TLS_CA"):
        return os.environ["CLUSTER_TLS_CA"]
    path = os.path.join(temp_dir(), "session_latest", "tls_ca")
    return path if os.path.exists(path) else ""


def check_runtime_env(runtime_env: Optional[dict], where: str) -> dict:
    """The runtime_env keys clusterd takes (working_dir, env_vars, excludes); ValueError naming any other."""
    if runtime_env is None:
        return {}
    if not isinstance(runtime_env, dict):
        raise ValueError(f"{where}: runtime_env must be a dict, not {type(runtime_env).__name__}")
    for key in runtime_env:
        if key not in RUNTIME_ENV_KEYS:
            raise ValueError(f"{where}: runtime_env key {key!r} is not offered (ranks run the node's Python "
                             f"and packages; offered: {', '.join(RUNTIME_ENV_KEYS)})")
    env = dict(runtime_env)
    if "env_vars" in env and not isinstance(env["env_vars"], dict):
        raise ValueError(f"{where}: runtime_env env_vars must be a dict of names to values")
    if "excludes" in env and (isinstance(env["excludes"], str) or not isinstance(env["excludes"], (list, tuple))):
        raise ValueError(f"{where}: runtime_env excludes must be a list of gitignore patterns")
    if "working_dir" in env:
        folder = os.path.abspath(os.path.expanduser(str(env["working_dir"])))
        if not os.path.isdir(folder):
            raise ValueError(f"{where}: runtime_env working_dir {env['working_dir']!r} is not a folder here")
        env["working_dir"] = folder
    return env


def runtime_env() -> dict:
    """What init(runtime_env=...) set for this process's jobs ({} if nothing)."""
    return dict(_runtime_env)


def init(address: Optional[str] = "auto", token: Optional[str] = None, *, tls_ca: Optional[str] = None,
         runtime_env: Optional[dict] = None, ignore_reinit_error: bool = False, check: bool = True,
         **_ray_options) -> ConnectionInfo:
    """Connects this process to a clusterd head, as ``ray.init`` connects to a Ray cluster.

    ``address``: "auto" (or None) finds the head as clusterctl does; else "HOST:PORT".
    ``token``: the cluster token; by default $CLUSTER_TOKEN, then the local session's.
    ``runtime_env``: as Ray's, for every job this process starts: ``working_dir`` (the folder shipped
    instead of the script's), ``env_vars`` (set in every rank), ``excludes`` (left out of the package);
    any other key is refused. Ray's other options (num_cpus, ...) are accepted and ignored: resources
    belong to the nodes here. With ``check`` the head is asked for its status first.

    Raises ClusterdError (a ConnectionError) naming the address when no head answers or the
    token is refused, ValueError for a runtime_env it does not take, and RuntimeError when called
    twice without ``ignore_reinit_error``.
    """
    global _current, _runtime_env
    checked_env = check_runtime_env(runtime_env, "clusterd.init")
    with _lock:
        if _current is not None and not ignore_reinit_error:
            raise RuntimeError("clusterd.init() was already called; pass ignore_reinit_error=True to call it again")
        info = ConnectionInfo(resolve_address(address), resolve_token(token), resolve_tls_ca(tls_ca))
    if check:
        from clusterd import _clusterctl  # late: the connection module must not need the runner at import
        _clusterctl.check_head(info)
    with _lock:
        _current = info
        _runtime_env = checked_env
    return info


def is_initialized() -> bool:
    """Whether init() was called (and not shut down)."""
    return _current is not None


def shutdown() -> None:
    """Forgets the connection init() made; the cluster goes on."""
    global _current, _runtime_env
    with _lock:
        _current = None
        _runtime_env = {}


def current() -> ConnectionInfo:
    """The connection init() made, else one found as init("auto") would (without asking the head)."""
    with _lock:
        if _current is not None:
            return _current
    return ConnectionInfo(resolve_address(None), resolve_token(None), resolve_tls_ca(None))
