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
import datetime
import ipaddress
import json
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from envoyctl import EnvoyError, free_port, stop_pid, wait_until

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


@dataclasses.dataclass(frozen=True)
class Pki:
    """A test CA, the etcd server's certificate (for 127.0.0.1) and a client certificate:
    PEM files in one directory (:func:`make_pki`)."""

    directory: Path

    @property
    def ca(self) -> Path:
        """The CA certificate both sides trust."""
        return self.directory / "ca.crt"

    def cert(self, name: str) -> Path:
        """``server`` or ``client`` certificate."""
        return self.directory / f"{name}.crt"

    def key(self, name: str) -> Path:
        """``server`` or ``client`` private key."""
        return self.directory / f"{name}.key"

    def client_context(self) -> ssl.SSLContext:
        """What a client of this etcd presents: the CA, the client certificate."""
        context = ssl.create_default_context(cafile=str(self.ca))
        context.load_cert_chain(str(self.cert("client")), str(self.key("client")))
        return context


def make_pki(directory: Path) -> Pki:
    """A CA valid for a day, an etcd server certificate for 127.0.0.1, and a client
    certificate without a Common Name (etcd's JSON gateway ignores a client's CN: with etcd
    auth on it refuses such a request, docs/fleet.md)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    directory.mkdir(parents=True, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc)

    def write(name: str, key: ec.EllipticCurvePrivateKey, cert: x509.Certificate) -> None:
        (directory / f"{name}.key").write_bytes(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
        (directory / f"{name}.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    def issue(subject: x509.Name, key: Any, issuer: x509.Name, signer: Any,
              extensions: list[tuple[Any, bool]]) -> x509.Certificate:
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1)))
        for extension, critical in extensions:
            builder = builder.add_extension(extension, critical)
        return builder.sign(signer, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "toolseal test CA")])
    write("ca", ca_key, issue(ca_name, ca_key, ca_name, ca_key,
                              [(x509.BasicConstraints(ca=True, path_length=None), True)]))
    server_key = ec.generate_private_key(ec.SECP256R1())
    # etcd 3.4's JSON gateway dials etcd's own gRPC port with the server certificate, so with
    # client-cert-auth it must also be good for client auth (else every gateway call answers
    # {"error":"connection closed","code":14}).
    write("server", server_key, issue(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "etcd")]), server_key, ca_name, ca_key,
        [(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False),
         (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]), False)]))
    client_key = ec.generate_private_key(ec.SECP256R1())
    write("client", client_key, issue(
        x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "toolseal")]), client_key,
        ca_name, ca_key, [(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), False)]))
    return Pki(directory)


class EtcdClient:
    """etcd's v3 JSON API at ``url`` (``http://127.0.0.1:PORT``, or ``https://`` with the
    ``tls`` context of a client certificate), without proxies."""

    def __init__(self, url: str, timeout: float = 5.0, tls: ssl.SSLContext | None = None) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        handlers: list[Any] = [urllib.request.ProxyHandler({})]
        if tls is not None:
            handlers.append(urllib.request.HTTPSHandler(context=tls))
        self._opener = urllib.request.build_opener(*handlers)

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

    def get_text(self, path: str, timeout: float | None = None) -> tuple[int, str]:
        """GET ``path`` (``/health``, ``/metrics``): (status, body), status 0 if nothing answered."""
        try:
            with self._opener.open(f"{self.url}{path}", timeout=timeout or self.timeout) as response:
                return response.status, response.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode("utf-8", "replace")
        except (urllib.error.URLError, OSError):
            return 0, ""

    def metrics(self) -> dict[str, float]:
        """etcd's Prometheus metrics (``GET /metrics``), by full series name (labels included)."""
        status, body = self.get_text("/metrics")
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
    pki: Pki | None = None
    pid: int | None = None
    popen: subprocess.Popen | None = None
    starts: int = 0

    @property
    def url(self) -> str:
        """The client URL (JSON API, /health, /metrics): https with a :class:`Pki`."""
        scheme = "https" if self.pki is not None else "http"
        return f"{scheme}://127.0.0.1:{self.client_port}"

    @property
    def data_dir(self) -> Path:
        """Where this etcd keeps its data; kept across :meth:`restart`."""
        return self.workdir / "data"

    @property
    def log_path(self) -> Path:
        """etcd's own log (all of its runs)."""
        return self.workdir / "etcd.log"

    def client(self) -> EtcdClient:
        """A JSON API client for this etcd (with the client certificate under TLS)."""
        return EtcdClient(self.url, tls=self.pki.client_context() if self.pki else None)

    def command(self) -> list[str]:
        """The command line: client and peer URLs on loopback, its own data directory."""
        client, peer = self.url, f"http://127.0.0.1:{self.peer_port}"
        return [etcd_binary(), "--name", MEMBER_NAME, "--data-dir", str(self.data_dir),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", f"{MEMBER_NAME}={peer}",
                "--initial-cluster-state", "new", "--log-outputs", "stderr", *self._tls_flags()]

    def _tls_flags(self) -> list[str]:
        """Client TLS, and client certificates required (mTLS): a client without one signed
        by the CA is refused in the handshake."""
        if self.pki is None:
            return []
        return ["--cert-file", str(self.pki.cert("server")), "--key-file", str(self.pki.key("server")),
                "--trusted-ca-file", str(self.pki.ca), "--client-cert-auth"]

    def healthy(self) -> bool:
        """``GET /health`` answers 200."""
        return self.client().get_text("/health", timeout=0.5)[0] == 200

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
        wait_until(lambda: self.client().get_text("/health", timeout=0.2)[0] == 0, 10,
                   f"etcd's port {self.client_port} to close")

    def restart(self) -> float:
        """Stop (if running) and start again on the same ports and data directory."""
        self.stop()
        return self.start()


def start(workdir: Path, timeout: float = 30, pki: Pki | None = None) -> EtcdProcess:
    """A new etcd on free loopback ports with its data in ``workdir/data``; waits for /health.
    With ``pki``: clients must present a certificate signed by its CA (mTLS)."""
    process = EtcdProcess(workdir, free_port(), free_port(), pki)
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
