"""toolseal's plugin configuration served to a fleet of Envoys through ECDS.

Envoy's extension config discovery (ECDS) lets the control plane replace one HTTP filter's
configuration without touching listeners or restarting Envoy. Here the "control plane" is
the smallest one Envoy has: a watched file (``path_config_source``). Every Envoy of the
fleet points its toolseal filters at the same resources; writing a new resource there reaches
all of them. A real xDS server (Istio, Envoy Gateway, go-control-plane) serves the same
``TypedExtensionConfig`` over gRPC.

One plugin config document makes two resources: ``toolseal`` for the agents' listener (the
document without its ``admin`` block, so the admin API is off there) and ``toolseal-admin``
for the admin API's own listener (the whole document). Each filter subscribes to its own
file; the two instances share one state through the same ``vm_id``.

Design decision: a resource is always replaced atomically (write a temporary file in the
same directory, then ``rename`` over the old one). Envoy watches the path for moves, never
for in-place writes, so a half-written file is never read, and the rename is the one moment
the whole fleet can pick the update up. A resource whose configuration did not change is not
rewritten: rotating an admin token leaves the agents' listener untouched.

Command line::

    python envoy/ecds/fleet.py resource PLUGIN.json [--admin]   # print an ECDS resource
    python envoy/ecds/fleet.py publish PLUGIN.json ECDS.json [--admin-ecds ADMIN.json]
    python envoy/ecds/fleet.py merge-pin PLUGIN.json PIN.json    # `toolseal pin` output into servers
    python envoy/ecds/fleet.py render --ecds ECDS.json [--admin-ecds ADMIN.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ECDS_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(ECDS_DIR.parent))

import envoyctl  # noqa: E402

# The ECDS resource names: each HTTP filter's `config_discovery` subscribes to one.
FILTER_NAME = "toolseal"
ADMIN_FILTER_NAME = "toolseal-admin"
WASM_TYPE_URL = "type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm"
TYPED_EXTENSION_CONFIG = "type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig"


def wasm_filter_config(plugin_config: dict[str, Any] | str,
                       wasm_path: str | os.PathLike[str] = envoyctl.DEFAULT_WASM,
                       name: str = FILTER_NAME) -> dict[str, Any]:
    """The ``envoy.filters.http.wasm`` config, as the shipped envoy.yaml has it inline.

    The VM part (``vm_id``, runtime, code) never changes between updates, and is the same for
    the data and the admin listener's filter, so Envoy keeps the same VM and its shared data
    (toolseal's runtime state) across plugin config updates; only ``configuration`` changes.
    """
    text = plugin_config if isinstance(plugin_config, str) else json.dumps(plugin_config, sort_keys=True)
    return {
        "@type": WASM_TYPE_URL,
        "config": {
            "name": name,
            "root_id": "toolseal",
            "failure_policy": "FAIL_CLOSED",
            "vm_config": {
                "vm_id": "toolseal",
                "runtime": "envoy.wasm.runtime.v8",
                "code": {"local": {"filename": str(wasm_path)}},
            },
            "configuration": {"@type": "type.googleapis.com/google.protobuf.StringValue", "value": text},
        },
    }


def resource(plugin_config: dict[str, Any] | str, version: str,
             wasm_path: str | os.PathLike[str] = envoyctl.DEFAULT_WASM,
             name: str = FILTER_NAME) -> dict[str, Any]:
    """The file-based ECDS document: a DiscoveryResponse holding one TypedExtensionConfig.

    ``name`` is ``toolseal`` (the agents' listener: any ``admin`` block is left out, so the
    admin API is never on the data path) or ``toolseal-admin`` (the admin listener: the whole
    document)."""
    if isinstance(plugin_config, dict):
        data, admin = envoyctl.split_plugin_config(plugin_config)
        plugin_config = admin if name == ADMIN_FILTER_NAME else data
    return {
        "version_info": version,
        "resources": [{
            "@type": TYPED_EXTENSION_CONFIG,
            "name": name,
            "typed_config": wasm_filter_config(plugin_config, wasm_path, name),
        }],
    }


def default_admin_path(ecds_path: Path) -> Path:
    """Where the admin listener's resource goes when not named: beside the data one."""
    return Path(ecds_path).with_name(f"admin-{Path(ecds_path).name}")


def publish(path: Path, document: dict[str, Any]) -> None:
    """Atomically replaces the ECDS file at ``path`` (temp file in the same directory + rename)."""
    path = Path(path)
    # mkstemp creates 0600: keep the mode of the file being replaced (Envoy may run as
    # another user), 0644 for a new one.
    mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(document, out, indent=2, sort_keys=True)
            out.write("\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def _typed_config(path: Path) -> Any:
    try:
        return json.loads(Path(path).read_text())["resources"][0]["typed_config"]
    except (OSError, ValueError, KeyError, IndexError, TypeError):
        return None


def publish_config(plugin_config: dict[str, Any], ecds_path: Path, admin_ecds_path: Path | None,
                   version: str, wasm_path: str | os.PathLike[str] = envoyctl.DEFAULT_WASM) -> list[Path]:
    """Publishes one plugin config document as the data listener's resource and the admin
    listener's (a document without tokens turns the admin API off there too); a resource
    whose configuration is already the one in its file is left alone. Returns the files
    written."""
    targets = [(FILTER_NAME, Path(ecds_path))]
    if admin_ecds_path is not None:
        targets.append((ADMIN_FILTER_NAME, Path(admin_ecds_path)))
    elif envoyctl.admin_api_enabled(plugin_config):
        raise ValueError("the config has an admin block: name the admin listener's resource "
                         "file (it never goes to the agents' listener)")
    written = []
    for name, path in targets:
        document = resource(plugin_config, version, wasm_path, name)
        if _typed_config(path) != document["resources"][0]["typed_config"]:
            publish(path, document)
            written.append(path)
    return written


def merge_pin(plugin_config: dict[str, Any], pinned: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``plugin_config`` with ``toolseal pin``'s ``{"servers": {"ID": {"lock": ...}}}``
    merged into ``servers``. The lock replaces any previous ``pin``/``lock`` of that server (a
    server holds at most one); its other settings (posture, quarantine, ...) stay."""
    if set(pinned) != {"servers"} or not isinstance(pinned["servers"], dict):
        raise ValueError('expected the output of `toolseal pin`: {"servers": {"ID": {"lock": ...}}}')
    merged = json.loads(json.dumps(plugin_config))
    servers = merged.setdefault("servers", {})
    for server_id, entry in pinned["servers"].items():
        current = {k: v for k, v in servers.get(server_id, {}).items() if k not in ("pin", "lock")}
        current.update(entry)
        servers[server_id] = current
    return merged


def http_filter_yaml(ecds_path: Path, name: str = FILTER_NAME) -> str:
    """The toolseal HTTP filter taking its configuration from ECDS (a block for the
    ``filters`` of :func:`envoyctl.render`, indented for its http_filters list)."""
    lines = [
        f"- name: {name}",
        "  config_discovery:",
        "    config_source:",
        "      resource_api_version: V3",
        "      path_config_source:",
        f'        path: "{Path(ecds_path).resolve()}"',
        "    # No default: the listener waits for the first resource, so no request is ever",
        "    # served without toolseal.",
        "    type_urls:",
        f"    - {WASM_TYPE_URL}",
    ]
    return "".join(" " * 10 + line + "\n" for line in lines)


def render(ecds_path: Path, node_id: str = "toolseal-envoy", admin_ecds_path: Path | None = None,
           **render_kwargs: Any) -> str:
    """An Envoy config like the shipped one, with toolseal's configs coming from ECDS.

    Reuses :func:`envoyctl.render`: the inline filters are replaced by ECDS filters in the same
    place, before the buffer filter and the router; the admin API listener is there when
    ``admin_ecds_path`` is given. xDS needs a node identity (``node.id``, ``node.cluster``),
    which a static config does not."""
    node = f"node:\n  id: {node_id}\n  cluster: toolseal-fleet\n"
    admin = None if admin_ecds_path is None else http_filter_yaml(admin_ecds_path, ADMIN_FILTER_NAME)
    return node + envoyctl.render(filters=(http_filter_yaml(ecds_path), admin), **render_kwargs)


def _cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    res = sub.add_parser("resource", help="print the ECDS resource for a plugin config")
    res.add_argument("--admin", action="store_true",
                     help="the admin listener's resource (default: the agents' listener's)")
    pub = sub.add_parser("publish", help="atomically write the ECDS resources that changed")
    for p in (res, pub):
        p.add_argument("plugin_config", type=Path)
        p.add_argument("--version", default=None, help="version_info (default: file mtime)")
        p.add_argument("--wasm", default=envoyctl.DEFAULT_WASM)
    pub.add_argument("ecds", type=Path)
    mer = sub.add_parser("merge-pin", help="merge `toolseal pin` output into a plugin config")
    mer.add_argument("plugin_config", type=Path)
    mer.add_argument("pin", type=Path)
    ren = sub.add_parser("render", help="print an Envoy config whose toolseal filters use ECDS")
    ren.add_argument("--ecds", type=Path, required=True)
    ren.add_argument("--listen-port", type=int, default=10000)
    ren.add_argument("--admin-port", type=int, default=9901)
    ren.add_argument("--admin-api-port", type=int, default=envoyctl.DEFAULT_ADMIN_API_PORT)
    ren.add_argument("--upstream-port", type=int, default=8000)
    ren.add_argument("--server-id", default="demo")
    pub.add_argument("--admin-ecds", type=Path, default=None,
                     help="the admin listener's resource file (required when the config has an "
                          "admin block)")
    ren.add_argument("--admin-ecds", type=Path, default=None,
                     help="the admin listener's resource file: adds the admin API listener")
    args = parser.parse_args(argv)
    if args.command == "merge-pin":
        merged = merge_pin(json.loads(args.plugin_config.read_text()), json.loads(args.pin.read_text()))
        print(json.dumps(merged, indent=2, sort_keys=True))
        return 0
    if args.command == "render":
        sys.stdout.write(render(args.ecds, admin_ecds_path=args.admin_ecds, listen_port=args.listen_port,
                                admin_port=args.admin_port, admin_api_port=args.admin_api_port,
                                routes=[envoyctl.McpRoute(args.server_id, args.upstream_port)]))
        return 0
    config = json.loads(args.plugin_config.read_text())
    version = args.version or str(int(args.plugin_config.stat().st_mtime))
    if args.command == "resource":
        name = ADMIN_FILTER_NAME if args.admin else FILTER_NAME
        print(json.dumps(resource(config, version, args.wasm, name), indent=2, sort_keys=True))
        return 0
    try:
        written = publish_config(config, args.ecds, args.admin_ecds, version, args.wasm)
    except ValueError as err:
        print(f"error: {err} (--admin-ecds PATH)", file=sys.stderr)
        return 2
    for path in written:
        print(f"published {path}")
    return 0


if __name__ == "__main__":
    sys.exit(_cli(sys.argv[1:]))
