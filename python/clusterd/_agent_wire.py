"""The framed protocol between a rank and its node's clusterd agent.

The same as ctrain's (train/include/ctrain/agent_wire.h): one request per
connection to the Unix socket $CLUSTER_AGENT_SOCKET, a frame being a 4-byte
big-endian length and a UTF-8 JSON payload (the protobuf-JSON form of
MetricsReport), answered by one frame {"ok":true} or {"ok":false,"error":"..."}.
The agent makes every check (names, sizes, who may report); this side only
encodes.
"""

from __future__ import annotations

import json
import math
import socket
import struct
from typing import Mapping

MAX_FRAME_BYTES = 16 << 20  # as ctrain's kMaxFrameBytes: a reply is a few bytes


class AgentRefused(ValueError):
    """The agent read the report and refused it; the message is the agent's reason."""


class AgentUnreachable(OSError):
    """The report did not reach the agent, or no answer came back."""


def json_number(value: float):
    """A double as protobuf JSON takes it: NaN and the infinities as strings, else the number."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def encode_report(job_id: str, attempt: int, rank: int, values: Mapping[str, float], checkpoint: str,
                  unix_ms: int) -> bytes:
    """The payload of one report (int64 unix_ms as a string, as protobuf JSON writes it)."""
    message = {
        "job_id": job_id,
        "attempt": int(attempt),
        "rank": int(rank),
        "values": {name: json_number(float(v)) for name, v in values.items()},
        "checkpoint": checkpoint,
        "unix_ms": str(int(unix_ms)),
    }
    # ensure_ascii=False: names are UTF-8 on the wire, as ctrain sends them.
    return json.dumps(message, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")


def frame(payload: bytes) -> bytes:
    return struct.pack(">I", len(payload)) + payload


def _read_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n > 0:
        chunk = sock.recv(n)
        if not chunk:
            raise AgentUnreachable("the agent closed the connection before it answered")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def parse_reply(payload: bytes) -> None:
    """Returns when the reply says ok; raises AgentRefused with the agent's reason, or for a malformed reply."""
    try:
        reply = json.loads(payload.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        reply = None
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        raise AgentRefused(f"malformed agent reply: {payload[:200]!r}")
    if not reply["ok"]:
        raise AgentRefused(str(reply.get("error") or "agent refused the report without a reason"))


def send_report(socket_path: str, payload: bytes, timeout_s: float = 5.0) -> None:
    """Sends one report payload and reads the answer.

    Raises AgentRefused (the agent said no, and why) or AgentUnreachable (no socket, no answer in time).
    """
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            # Both directions time out: a stuck agent must not stall training.
            sock.settimeout(timeout_s)
            sock.connect(socket_path)
            try:
                sock.sendall(frame(payload))
            except OSError:
                # The agent may have refused it before it was sent (this
                # rank has too many reports under way) and closed: its
                # answer, when there is one, says why.
                try:
                    (length,) = struct.unpack(">I", _read_exact(sock, 4))
                    if length <= MAX_FRAME_BYTES:
                        parse_reply(_read_exact(sock, length))
                except (OSError, AgentUnreachable):
                    pass
                raise
            (length,) = struct.unpack(">I", _read_exact(sock, 4))
            if length > MAX_FRAME_BYTES:
                raise AgentRefused(f"malformed agent reply: a frame of {length} bytes")
            reply = _read_exact(sock, length)
    except (AgentRefused, AgentUnreachable):
        raise
    except OSError as e:
        raise AgentUnreachable(f"cannot report to the agent at {socket_path}: {e}") from e
    parse_reply(reply)
