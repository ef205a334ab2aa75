"""The deployable manifests (examples/istio, examples/envoy-gateway) carry a plugin config
that the plugin accepts, the Envoy settings that keep toolseal fail closed, and no admin API
on the agents' path: on Istio it is a second plugin instance on a loopback-only listener with
the same config plus ``admin``; on Envoy Gateway it is off.

The inline config is taken out of the parsed YAML exactly as Istio and Envoy Gateway pass it
(one JSON document) and checked with ``toolseal check-config``, which runs the plugin's own
config parser. Without PyYAML (envoy/requirements-extra.txt) the tests fail, not skip: a
manifest nobody parsed is a manifest nobody checked.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

import envoyctl

REPO = envoyctl.REPO
ISTIO = REPO / "examples" / "istio" / "wasmplugin.yaml"
ISTIO_ADMIN = REPO / "examples" / "istio" / "admin.yaml"
GATEWAY = REPO / "examples" / "envoy-gateway" / "extension-policy.yaml"


def _toolseal(*args: str) -> subprocess.CompletedProcess:
    binary = os.environ.get("TOOLSEAL_BIN")
    command = [binary] if binary else ["cargo", "run", "-q", "-p", "toolseal", "--"]
    return subprocess.run([*command, *args], cwd=REPO, capture_output=True, text=True,
                          timeout=1800, check=False)


def _check_config(config: dict[str, Any], tmp_path: Path) -> str:
    path = tmp_path / "plugin-config.json"
    path.write_text(json.dumps(config))
    result = _toolseal("check-config", str(path))
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def _load(path: Path) -> dict[str, Any]:
    documents = list(yaml.safe_load_all(path.read_text()))
    assert len(documents) == 1, path
    return documents[0]


def _ports(spec: dict[str, Any]) -> set[int]:
    return {port["number"] for selector in spec["match"] for port in selector["ports"]}


def test_istio_wasmplugin_is_fail_closed_before_authz_and_its_config_loads(tmp_path: Path) -> None:
    manifest = _load(ISTIO)
    assert (manifest["apiVersion"], manifest["kind"]) == ("extensions.istio.io/v1alpha1", "WasmPlugin")
    spec = manifest["spec"]
    assert (spec["phase"], spec["failStrategy"], spec["type"]) == ("AUTHZ", "FAIL_CLOSE", "HTTP")
    assert isinstance(spec["priority"], int)
    assert spec["url"].startswith("oci://")
    # The agents' path: no admin API there.
    assert "admin" not in spec["pluginConfig"]
    assert _check_config(spec["pluginConfig"], tmp_path) == "ok: posture strict, 1 configured server(s)"


def test_istio_admin_api_is_a_second_instance_on_a_loopback_listener_with_the_same_config(
        tmp_path: Path) -> None:
    data = _load(ISTIO)["spec"]
    documents = {d["kind"]: d for d in yaml.safe_load_all(ISTIO_ADMIN.read_text())}
    assert sorted(documents) == ["AuthorizationPolicy", "EnvoyFilter", "Gateway",
                                 "RequestAuthentication", "VirtualService", "WasmPlugin"]
    [server] = documents["Gateway"]["spec"]["servers"]
    port = server["port"]["number"]
    assert server["bind"] == "127.0.0.1"
    admin = documents["WasmPlugin"]["spec"]
    # Only on the admin port, and the data instance never there (it would answer 404 first).
    assert _ports(admin) == {port} and port not in _ports(data)
    # The same module, fail closed, after Istio's authn and authz filters.
    assert (admin["url"], admin["failStrategy"], admin["phase"]) == (data["url"], "FAIL_CLOSE", "STATS")
    # The same document plus the admin block, naming the approver from the verified JWT.
    config = admin["pluginConfig"]
    assert {k: v for k, v in config.items() if k != "admin"} == data["pluginConfig"]
    identity = config["admin"]["identity"]["header"]
    [rule] = documents["RequestAuthentication"]["spec"]["jwtRules"]
    assert rule["outputClaimToHeaders"] == [{"header": identity, "claim": "sub"}]
    deny = documents["AuthorizationPolicy"]["spec"]
    assert deny["action"] == "DENY" and deny["rules"] == [{
        "to": [{"operation": {"ports": [str(port)]}}],
        "from": [{"source": {"notRequestPrincipals": ["*"]}}]}]
    assert _check_config(config, tmp_path) == "ok: posture strict, 1 configured server(s)"
    # The buffer filter before the router, on the admin listener only.
    [patch] = documents["EnvoyFilter"]["spec"]["configPatches"]
    assert patch["match"]["listener"]["portNumber"] == port
    assert patch["match"]["listener"]["filterChain"]["filter"]["subFilter"]["name"] == "envoy.filters.http.router"
    assert (patch["patch"]["operation"], patch["patch"]["value"]["name"]) == (
        "INSERT_BEFORE", "envoy.filters.http.buffer")
    assert patch["patch"]["value"]["typed_config"]["max_request_bytes"] == envoyctl.ADMIN_MAX_REQUEST_BYTES
    assert documents["VirtualService"]["spec"]["gateways"] == [documents["Gateway"]["metadata"]["name"]]


def test_envoy_gateway_policy_is_fail_closed_and_its_config_loads(tmp_path: Path) -> None:
    manifest = _load(GATEWAY)
    assert (manifest["apiVersion"], manifest["kind"]) == (
        "gateway.envoyproxy.io/v1alpha1", "EnvoyExtensionPolicy")
    spec = manifest["spec"]
    assert [ref["kind"] for ref in spec["targetRefs"]] == ["HTTPRoute"]
    [wasm] = spec["wasm"]
    assert (wasm["rootID"], wasm["failOpen"], wasm["code"]["type"]) == ("toolseal", False, "Image")
    config = wasm["config"]
    assert config["server_id"] == {"from": "cluster"}
    assert list(config["servers"]) == [f"httproute/{manifest['metadata']['namespace']}/"
                                       f"{spec['targetRefs'][0]['name']}/rule/0"]
    # Envoy Gateway gives each policy its own vm_id: no admin API on the agents' route, and
    # none elsewhere (docs/admin.md).
    assert "admin" not in config
    assert _check_config(config, tmp_path) == "ok: posture strict, 1 configured server(s)"


@pytest.mark.parametrize("manifest", [ISTIO, GATEWAY], ids=["istio", "envoy-gateway"])
def test_a_broken_inline_config_is_refused_naming_the_field(manifest: Path, tmp_path: Path) -> None:
    spec = _load(manifest)["spec"]
    config = spec["pluginConfig"] if "pluginConfig" in spec else spec["wasm"][0]["config"]
    [server] = config["servers"]
    config["servers"][server]["list_changed"] = "ignore"
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(config))
    result = _toolseal("check-config", str(path))
    assert result.returncode == 2
    assert f"field `servers.{server}.list_changed`" in result.stderr, result.stderr
