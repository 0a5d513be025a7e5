"""One clusterd head's HTTP API (its dashboard port): requests with the token, and one clear error per failure.

The token goes in an ``Authorization: Bearer`` header, never in a URL. A head that does not answer raises
``clusterd.ClusterdError`` (a ConnectionError); a refusal (wrong token, unknown job, bad spec) raises
``RuntimeError`` as Ray's client does, with the head's own words.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import urllib.parse
from typing import Any, Dict, Optional, Tuple

from clusterd._errors import ClusterdError

# The port is the config table's dashboard_port (common/config_def.h), which Python cannot read:
# tests/unit/config_test.cc fails when the two differ.
DEFAULT_ADDRESS = "http://127.0.0.1:8265"


def _parse_address(address: str) -> Tuple[str, str, int, Optional[str]]:
    """(scheme, host, port, token in the address or None) from "http://HOST:PORT[/?token=T]" or "HOST:PORT"."""
    if "://" not in address:
        address = "http://" + address
    parts = urllib.parse.urlsplit(address)
    if parts.scheme not in ("http", "https"):
        raise ValueError(f"address {address!r}: expected http://HOST:PORT, the head's dashboard address")
    if not parts.hostname:
        raise ValueError(f"address {address!r} names no host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as e:
        raise ValueError(f"address {address!r}: {e}") from None
    token = urllib.parse.parse_qs(parts.query).get("token", [None])[0]
    return parts.scheme, parts.hostname, port, token


class Head:
    def __init__(self, address: str, token: str, headers: Optional[Dict[str, str]] = None,
                 timeout: float = 60.0):
        self.scheme, self.host, self.port, _ = _parse_address(address)
        self.address = f"{self.scheme}://{self.host}:{self.port}"
        self._token = token
        self._headers = dict(headers or {})
        self.timeout = timeout

    def _connection(self) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if self.scheme == "https" else http.client.HTTPConnection
        # Large blocks: a package upload reads its file in these.
        return cls(self.host, self.port, timeout=self.timeout, blocksize=1 << 20)

    def request(self, method: str, path: str, body: Any = None, *, ok=(200,),
                extra_headers: Optional[Dict[str, str]] = None) -> Tuple[int, Any]:
        """(status, the reply's JSON) for a reply whose status is in ``ok``; raises otherwise."""
        headers = dict(self._headers)
        headers["Authorization"] = f"Bearer {self._token}"
        headers["Accept"] = "application/json"
        if isinstance(body, (dict, list)):
            body = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        headers.update(extra_headers or {})
        connection = self._connection()
        try:
            try:
                connection.request(method, path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
            except (BrokenPipeError, ConnectionResetError) as e:
                # The head may refuse an upload before reading it and close; its reply may still be there.
                try:
                    response = connection.getresponse()
                    data = response.read()
                except Exception:
                    raise self._unreachable(e) from None
            except (OSError, http.client.HTTPException) as e:
                raise self._unreachable(e) from None
        finally:
            connection.close()
        try:
            parsed = json.loads(data) if data else None
        except ValueError:
            parsed = data.decode(errors="replace")
        if response.status not in ok:
            raise RuntimeError(self._refusal(method, path, response.status, parsed))
        return response.status, parsed

    def _unreachable(self, error: BaseException) -> ClusterdError:
        if isinstance(error, socket.timeout):
            why = f"no answer within {self.timeout:g} s"
        else:
            why = str(error) or type(error).__name__
        return ClusterdError(
            f"no clusterd head answers at {self.address}: {why} (is `clusterd start --head` running there, and "
            f"is this its dashboard port? the address is the one it printed as Dashboard:)")

    def _refusal(self, method: str, path: str, status: int, reply: Any) -> str:
        said = reply.get("error") if isinstance(reply, dict) else None
        said = said or (reply if isinstance(reply, str) and reply else f"HTTP {status}")
        where = path.split("?")[0]
        if status == 401:
            return (f"the head at {self.address} refused the cluster token: {said} (pass token=, set "
                    f"CLUSTER_TOKEN, or use the session of the machine that started the head)")
        return f"Request failed with status code {status}: {method} {where}: {said}"


def default_address() -> str:
    """``$CLUSTER_DASHBOARD_ADDRESS``, then ``$RAY_ADDRESS`` when it is an http(s) address, else the local default."""
    found = os.environ.get("CLUSTER_DASHBOARD_ADDRESS")
    if found:
        return found
    ray = os.environ.get("RAY_ADDRESS", "")
    if ray.startswith(("http://", "https://")):
        return ray
    return DEFAULT_ADDRESS


def address_token(address: str) -> Optional[str]:
    """The token in an address as clusterd prints it (``http://HOST:PORT/?token=T``), else None."""
    return _parse_address(address)[3]
