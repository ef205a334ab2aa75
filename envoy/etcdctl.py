"""Start, stop and read the etcd that holds toolseal's fleet memory, for the tests and the demo.

etcd comes from Debian (``scripts/setup-etcd.sh``: packages ``etcd-server`` and
``etcd-client``). :func:`start` runs one single-member etcd on loopback with its own data
directory; :class:`EtcdClient` talks to it over etcd's v3 JSON API (the same API the plugin
uses through Envoy), so a test can read what the plugin wrote, corrupt it, and count what
etcd was asked (:meth:`EtcdClient.metrics`).

Design decision: as with Envoy (``envoyctl``), etcd is started in its own session and only
ever stopped by the PID recorded at start; every wait is bounded. A stopped etcd can be
started again on the same ports with the same data directory (:meth:`EtcdProcess.restart`),
which is what an outage and its end look like to the Envoys pointed at it.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from envoyctl import EnvoyError, free_port, http_get, stop_pid, wait_until

MEMBER_NAME = "toolseal-test"


class EtcdError(EnvoyError):
    """etcd could not be started, stopped or read; the message says what to fix."""


def etcd_binary() -> str:
    """The ``etcd`` on PATH (Debian's ``etcd-server``)."""
    found = shutil.which("etcd")
    if found is None:
        raise EtcdError("etcd is not installed: run scripts/setup-etcd.sh")
    return found


def b64(data: str | bytes) -> str:
    """etcd's JSON API carries keys and values as base64."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    return base64.b64encode(raw).decode("ascii")


def unb64(text: str | None) -> bytes:
    """The bytes of a base64 field (absent: empty)."""
    return base64.b64decode(text) if text else b""


def prefix_end(prefix: str | bytes) -> bytes:
    """``range_end`` for a prefix read: the prefix with its last byte plus one."""
    raw = bytearray(prefix.encode("utf-8") if isinstance(prefix, str) else prefix)
    while raw and raw[-1] == 0xFF:
        raw.pop()
    if not raw:
        return b"\x00"
    raw[-1] += 1
    return bytes(raw)


@dataclasses.dataclass(frozen=True)
class KeyValue:
    """One key as etcd holds it."""

    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    version: int

    def json(self) -> Any:
        """The value parsed as JSON (raises ValueError if it is not)."""
        return json.loads(self.value)


class EtcdClient:
    """etcd's v3 JSON API at ``url`` (``http://127.0.0.1:PORT``), without proxies."""

    def __init__(self, url: str, timeout: float = 5.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def call(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body`` to ``/v3/...``; the answer as JSON (EtcdError unless 200)."""
        request = urllib.request.Request(
            f"{self.url}{path}", data=json.dumps(body).encode("utf-8"), method="POST",
            headers={"content-type": "application/json"})
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as err:
            raise EtcdError(f"etcd {path} answered {err.code}: {err.read()[:500]!r}") from err
        except (urllib.error.URLError, OSError) as err:
            raise EtcdError(f"etcd {path} at {self.url} did not answer: {err}") from err

    def range_prefix(self, prefix: str) -> list[KeyValue]:
        """Every key under ``prefix``, in key order."""
        answer = self.call("/v3/kv/range", {"key": b64(prefix), "range_end": b64(prefix_end(prefix))})
        return [_key_value(kv) for kv in answer.get("kvs", [])]

    def get(self, key: str) -> KeyValue | None:
        """One key, or None."""
        kvs = self.call("/v3/kv/range", {"key": b64(key)}).get("kvs", [])
        return _key_value(kvs[0]) if kvs else None

    def put(self, key: str, value: str | bytes) -> int:
        """Write one key (unconditionally, as an operator with etcdctl would); the revision."""
        return int(self.call("/v3/kv/put", {"key": b64(key), "value": b64(value)})["header"]["revision"])

    def delete(self, key: str) -> int:
        """Delete one key; how many were deleted."""
        return int(self.call("/v3/kv/deleterange", {"key": b64(key)}).get("deleted", 0))

    def revision(self) -> int:
        """The store's current revision."""
        return int(self.call("/v3/kv/range", {"key": b64("\x00"), "count_only": True})["header"]["revision"])

    def metrics(self) -> dict[str, float]:
        """etcd's Prometheus metrics (``GET /metrics``), by full series name (labels included)."""
        status, body = http_get(f"{self.url}/metrics", timeout=self.timeout)
        if status != 200:
            raise EtcdError(f"etcd /metrics answered {status}")
        values: dict[str, float] = {}
        for line in body.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                try:
                    values[name] = float(value)
                except ValueError:
                    continue
        return values

    def requests_served(self) -> dict[str, int]:
        """How many Range, Txn and Put requests etcd handled so far (gRPC server counters,
        which also count what arrived through the JSON gateway)."""
        metrics = self.metrics()
        counts = {}
        for method in ("Range", "Txn", "Put", "DeleteRange"):
            counts[method] = int(sum(
                v for k, v in metrics.items()
                if k.startswith("grpc_server_handled_total{")
                and f'grpc_method="{method}"' in k and 'grpc_service="etcdserverpb.KV"' in k))
        return counts


def _key_value(kv: dict[str, Any]) -> KeyValue:
    return KeyValue(unb64(kv.get("key")).decode("utf-8", "replace"), unb64(kv.get("value")),
                    int(kv.get("create_revision", 0)), int(kv.get("mod_revision", 0)),
                    int(kv.get("version", 0)))


@dataclasses.dataclass
class EtcdProcess:
    """A single-member etcd on 127.0.0.1 started by :func:`start`."""

    workdir: Path
    client_port: int
    peer_port: int
    pid: int | None = None
    popen: subprocess.Popen | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        """The client URL (JSON API, /health, /metrics)."""
        return f"http://127.0.0.1:{self.client_port}"

    @property
    def data_dir(self) -> Path:
        """Where this etcd keeps its data; kept across :meth:`restart`."""
        return self.workdir / "data"

    @property
    def log_path(self) -> Path:
        """etcd's own log (all of its runs)."""
        return self.workdir / "etcd.log"

    def client(self) -> EtcdClient:
        """A JSON API client for this etcd."""
        return EtcdClient(self.url)

    def command(self) -> list[str]:
        """The command line: client and peer URLs on loopback, its own data directory."""
        client, peer = self.url, f"http://127.0.0.1:{self.peer_port}"
        return [etcd_binary(), "--name", MEMBER_NAME, "--data-dir", str(self.data_dir),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"{MEMBER_NAME}={peer}",
                "--initial-cluster-state", "new", "--log-outputs", "stderr"]

    def healthy(self) -> bool:
        """``GET /health`` answers 200."""
        return http_get(f"{self.url}/health", timeout=0.5)[0] == 200

    def start(self, timeout: float = 30) -> float:
        """Start detached and wait until /health answers 200; seconds it took."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        log = self.log_path.open("ab")
        self.popen = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=log, start_new_session=True)
        self.pid = self.popen.pid
        self.starts += 1
        (self.workdir / "etcd.pid").write_text(f"{self.pid}\n")

        def up() -> bool:
            if self.popen is not None and self.popen.poll() is not None:
                raise EtcdError(f"etcd exited with {self.popen.returncode}; see {self.log_path}")
            return self.healthy()

        try:
            wait_until(up, timeout, f"etcd /health on port {self.client_port}")
        except EnvoyError:
            self.stop()
            raise
        return time.monotonic() - began

    def stop(self) -> None:
        """SIGTERM by PID (SIGKILL if it does not exit in time); waits for the port to close."""
        if self.pid is None:
            return
        stop_pid(self.pid, 10, self.popen)
        self.pid = None
        wait_until(lambda: http_get(f"{self.url}/health", timeout=0.2)[0] == 0, 10,
                   f"etcd's port {self.client_port} to close")

    def restart(self) -> float:
        """Stop (if running) and start again on the same ports and data directory."""
        self.stop()
        return self.start()


def start(workdir: Path, timeout: float = 30) -> EtcdProcess:
    """A new etcd on free loopback ports with its data in ``workdir/data``; waits for /health."""
    process = EtcdProcess(workdir, free_port(), free_port())
    process.start(timeout)
    return process


def _cli(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Start, stop or read a loopback etcd.")
    sub = parser.add_subparsers(dest="command", required=True)
    start_p = sub.add_parser("start", help="start etcd detached in --workdir, print its URL")
    start_p.add_argument("--workdir", type=Path, required=True)
    stop_p = sub.add_parser("stop", help="stop the etcd whose PID file is in --workdir")
    stop_p.add_argument("--workdir", type=Path, required=True)
    get_p = sub.add_parser("get", help="print every key under a prefix, with its value")
    get_p.add_argument("url")
    get_p.add_argument("prefix")
    args = parser.parse_args(argv)
    try:
        if args.command == "start":
            process = start(args.workdir)
            print(f"etcd pid {process.pid} at {process.url}; data {process.data_dir}")
        elif args.command == "stop":
            pid_file = args.workdir / "etcd.pid"
            if not pid_file.is_file():
                raise EtcdError(f"no PID file {pid_file}: nothing started there")
            stop_pid(int(pid_file.read_text().strip()))
            pid_file.unlink()
            print("stopped")
        else:
            for kv in EtcdClient(args.url).range_prefix(args.prefix):
                print(f"{kv.key} (mod_revision {kv.mod_revision}, {len(kv.value)} bytes)")
                print(f"  {kv.value.decode('utf-8', 'replace')}")
    except EnvoyError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_cli(sys.argv[1:]))
