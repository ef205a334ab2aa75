"""The admin plane apart from the data plane, on a real Envoy.

The shipped config serves toolseal's admin API only on its own loopback listener, through a
second instance of the plugin in the same VM id; on the agents' listener the admin prefix is
answered 404 by the plugin itself whatever token is sent, and nothing reaches an upstream.
An approval on the admin listener holds for agents on the data listener at once. The approver
is named from a ``jwt_authn`` claim on the admin listener; admin tokens rotate through ECDS
without a window; every refused admin request is audited with its source and reason, never
with the token. Two variants of the filter wiring show what the sharing rests on: Istio's
(no ``vm_id``, other VM settings per plugin) still shares the state, separate ``vm_id``s
(Envoy Gateway's, one per policy) do not.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

import envoyctl
from envoyctl import EnvoyProcess, McpRoute
from fingerprint_ref import server_fingerprint
from rugpull_server import tool_surface as surface
from stack import Admin, Stack, Upstream, baseline_of, candidate_of, mcp_client, status_of
from toolseal_checks import counter, wait_for_audits

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ecds"))
import fleet as ecds  # noqa: E402

pytestmark = pytest.mark.anyio

FP1 = server_fingerprint(surface(1))
FP2 = server_fingerprint(surface(2))
REV1 = ["deploy_preview", "get_weather", "add"]
OFF_HERE = {"error": "the toolseal admin API is off on this listener (its config has no admin.token_sha256)"}
PEER = re.compile(r"127\.0\.0\.1:\d+")
ISSUER = "https://sso.toolseal.test"
APPROVER_JWT = "x-approver-jwt"
SUB = "envoy.filters.http.jwt_authn/payload/sub"


async def _names(url: str) -> list[str]:
    async with mcp_client(url) as client:
        return await client.tool_names()


async def _drift(stack: Stack) -> None:
    """Rev 1 baselined by an agent, then the server swaps in rev 2 (a rug pull)."""
    assert await _names(stack.mcp_url) == REV1
    stack.upstream.set_revision(2)
    assert await _names(stack.mcp_url) == []


def _listeners(envoy: EnvoyProcess) -> dict[str, str]:
    """Envoy's listeners by name, with the address each is bound to."""
    status, body = envoyctl.http_get(f"{envoy.admin_url}/listeners")
    assert status == 200
    return dict(line.split("::", 1) for line in body.split())


def _audits(envoy: EnvoyProcess, event: str, count: int, timeout: float = 5) -> list[dict[str, Any]]:
    """Every audit event in the Envoy log once it holds ``count`` of ``event`` (Envoy flushes
    its log every 100 ms)."""
    deadline = time.monotonic() + timeout
    while True:
        events = envoy.audit_events()
        if sum(e["event"] == event for e in events) >= count:
            return events
        assert time.monotonic() < deadline, f"fewer than {count} {event} in {events}"
        time.sleep(0.05)


async def test_admin_api_is_only_on_its_own_listener_and_approvals_hold_on_the_data_path(
        wasm: Any, stack: Stack) -> None:
    listeners = _listeners(stack.envoy)
    assert listeners == {"mcp": f"127.0.0.1:{stack.envoy.listen_port}",
                         "toolseal_admin": f"127.0.0.1:{stack.envoy.admin_api_port}"}
    await _drift(stack)
    thief = stack.admin_on_data_listener
    upstream_before, http_before = stack.upstream_requests(), len(stack.upstream.events("http"))
    # A valid token on the agents' listener: every admin endpoint is 404, answered by toolseal.
    attempts = [
        ("GET", "servers", None), ("GET", "servers/demo", None), ("GET", "audit", None),
        ("POST", "servers/demo/approve", {"fingerprint": FP2}),
        ("POST", "servers/demo/quarantine", {"reason": "x"}), ("POST", "servers/demo/release", None),
    ]
    for method, path, body in attempts:
        response = thief.get(path) if method == "GET" else thief.post(path, body)
        assert (response.status_code, response.json()) == (404, OFF_HERE), (method, path)
        assert response.headers["x-toolseal"] == "local"
    assert stack.upstream_requests() == upstream_before
    assert len(stack.upstream.events("http")) == http_before
    view = stack.admin.server("demo")
    assert (status_of(view), baseline_of(view), candidate_of(view)) == ("changed", FP1, FP2)
    # Each probe is audited with where it came from, and never with the token.
    refused = wait_for_audits(stack, "admin.refused", len(attempts))
    assert [(e["method"], e["path"], e["http_status"], e["reason"], e["server"], e["by"])
            for e in refused] == [
        (method, f"/toolseal/{path}", 404, OFF_HERE["error"], "demo" if "demo" in path else "", None)
        for method, path, _ in attempts]
    assert all(PEER.fullmatch(e["source"]) for e in refused), refused
    assert envoyctl.DEMO_ADMIN_TOKEN not in stack.envoy.log_text()
    assert envoyctl.token_sha256(envoyctl.DEMO_ADMIN_TOKEN) not in json.dumps(refused)
    assert (counter(stack, "admin_refused"), counter(stack, "admin_refused_404")) == (6, 6)

    # The operator approves on the admin listener: the agents' next list is the reviewed set.
    response = stack.admin.approve("demo", FP2)
    assert (response.status_code, status_of(response.json())) == (200, "verified")
    assert await _names(stack.mcp_url) == REV1
    async with mcp_client(stack.mcp_url) as client:
        await client.list_tools()
        added = await client.call("add", {"a": 2, "b": 3})
        assert (added.isError, added.content[0].text) == (False, "5")
    assert [c["tool"] for c in stack.upstream.calls()] == ["add"]
    [approved] = wait_for_audits(stack, "schema.approved", 1)
    assert (approved["baseline"], approved["by"], approved["token_index"]) == (FP2, None, 0)
    assert PEER.fullmatch(approved["source"])


async def test_refused_admin_requests_are_audited_with_source_and_reason(
        wasm: Any, stack: Stack) -> None:
    await _drift(stack)
    cases = [
        (lambda: stack.admin.get("servers", token=""), 401, "missing bearer token"),
        (lambda: stack.admin.post("servers/demo/approve", {"fingerprint": FP2},
                                  token="stolen-guess"), 401,
         "the bearer token is not one that admin.token_sha256 accepts"),
        (lambda: stack.admin.approve("demo", FP1), 409,
         f"the reviewed fingerprint is not the current candidate ({FP2}); review the current "
         "diff and approve that"),
        (lambda: stack.admin.release("demo"), 409, "the server is not quarantined"),
    ]
    for send, status, reason in cases:
        response = send()
        assert (response.status_code, response.json()) == (status, {"error": reason})
    refused = wait_for_audits(stack, "admin.refused", len(cases))
    assert [(e["http_status"], e["reason"], e["method"]) for e in refused] == [
        (401, cases[0][2], "GET"), (401, cases[1][2], "POST"), (409, cases[2][2], "POST"),
        (409, cases[3][2], "POST")]
    assert [e.get("token_index") for e in refused] == [None, None, 0, 0]
    assert all(PEER.fullmatch(e["source"]) for e in refused)
    assert "stolen-guess" not in stack.envoy.log_text()
    view = stack.admin.server("demo")
    assert (status_of(view), baseline_of(view)) == ("changed", FP1)


def _jwt_on_admin_listener(public_jwk: dict[str, Any]) -> str:
    """jwt_authn on the admin listener: the approver's JWT in its own header (Authorization
    carries the admin token). ``allow_missing`` lets a request without a JWT reach toolseal, to
    show that toolseal refuses it too; docs/admin.md requires the JWT in jwt_authn itself."""
    jwks = json.dumps({"keys": [public_jwk]})
    return f"""\
          - name: envoy.filters.http.jwt_authn
            typed_config:
              "@type": type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication
              providers:
                sso:
                  issuer: {ISSUER}
                  local_jwks: {{ inline_string: {json.dumps(jwks)} }}
                  from_headers: [{{ name: {APPROVER_JWT} }}]
                  payload_in_metadata: payload
              rules:
              - match: {{ prefix: "/toolseal/" }}
                requires:
                  requires_any:
                    requirements:
                    - provider_name: sso
                    - allow_missing: {{}}
"""


def _approver_jwt(key: rsa.RSAPrivateKey, sub: str) -> str:
    now = int(time.time())
    return jwt.encode({"iss": ISSUER, "sub": sub, "iat": now, "exp": now + 600}, key,
                      algorithm="RS256", headers={"kid": "k1"})


def _public_jwk(key: rsa.RSAPrivateKey) -> dict[str, Any]:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": "k1", "alg": "RS256", "use": "sig"}


async def test_a_jwt_claim_on_the_admin_listener_names_the_approver(
        wasm: Any, stacks: Callable[..., Stack]) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    config = envoyctl.default_plugin_config()
    config["admin"]["identity"] = {"metadata": SUB}
    stack = stacks(plugin_config=config, admin_pre_filters=_jwt_on_admin_listener(_public_jwk(key)))
    await _drift(stack)
    alice = Admin(stack.envoy.admin_api_url, envoyctl.DEMO_ADMIN_TOKEN,
                  headers={APPROVER_JWT: _approver_jwt(key, "alice@example.com")})
    anonymous = stack.admin
    forger_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    forged = Admin(stack.envoy.admin_api_url, envoyctl.DEMO_ADMIN_TOKEN,
                   headers={APPROVER_JWT: _approver_jwt(forger_key, "alice@example.com")})

    # No JWT: toolseal refuses (403, audited), whatever the token. A forged JWT: jwt_authn
    # refuses (401) before toolseal sees the request.
    response = anonymous.approve("demo", FP2)
    assert (response.status_code, response.json()) == (403, {"error": (
        f"admin requests must say who makes them: metadata {SUB} is missing or not one name "
        "(admin.identity)")})
    response = forged.approve("demo", FP2)
    assert response.status_code == 401 and "x-toolseal" not in response.headers
    assert status_of(alice.server("demo")) == "changed"
    # The data listener stays closed to her too.
    assert Admin(stack.envoy.url, envoyctl.DEMO_ADMIN_TOKEN, headers=alice.headers).approve(
        "demo", FP2).status_code == 404

    assert alice.quarantine("demo", "reviewing the rug pull").status_code == 200
    assert alice.approve("demo", FP2).status_code == 200
    assert alice.release("demo").status_code == 200
    assert await _names(stack.mcp_url) == REV1
    events = [e for e in _audits(stack.envoy, "server.released", 1)
              if e["event"] in ("admin.refused", "server.quarantined", "schema.approved",
                                "server.released")]
    assert [(e["event"], e["by"], e.get("http_status")) for e in events] == [
        ("admin.refused", None, 403),
        ("admin.refused", None, 404),
        ("server.quarantined", "alice@example.com", None),
        ("schema.approved", "alice@example.com", None),
        ("server.released", "alice@example.com", None),
    ]
    assert all(PEER.fullmatch(e["source"]) for e in events)


OLD, NEW = "admin-token-2026-11", "admin-token-2026-12"
ADMIN_RELOADS = "extension_config_discovery.http_filter.toolseal-admin.update_success"
DATA_RELOADS = "extension_config_discovery.http_filter.toolseal.update_success"


@pytest.fixture
def ecds_envoy(wasm: Path, tmp_path: Path) -> Iterator[tuple[EnvoyProcess, Upstream, Callable]]:
    """One Envoy whose two toolseal filters take their configs from ECDS files, in front of
    the rug-pull server; yields it, the upstream and ``publish(tokens)``."""
    upstream = Upstream(tmp_path, rev=1)
    upstream.start()
    data_path = tmp_path / "toolseal.ecds.json"
    admin_path = ecds.default_admin_path(data_path)
    version = [0]

    def publish(tokens: list[str]) -> None:
        version[0] += 1
        config = {**envoyctl.default_plugin_config(),
                  "admin": {"token_sha256": [envoyctl.token_sha256(t) for t in tokens]}}
        ecds.publish_config(config, data_path, admin_path, str(version[0]), wasm)

    envoy = None
    try:
        publish([OLD])
        ports = envoyctl.free_port(), envoyctl.free_port(), envoyctl.free_port()
        text = ecds.render(data_path, admin_ecds_path=admin_path, listen_port=ports[0],
                           admin_port=ports[1], admin_api_port=ports[2],
                           routes=[McpRoute("demo", upstream.port)])
        envoy = envoyctl.start(text, tmp_path / "envoy", listen_port=ports[0], admin_port=ports[1],
                               admin_api_port=ports[2])
        yield envoy, upstream, publish
    finally:
        try:
            if envoy is not None:
                envoy.stop()
        finally:
            upstream.stop()


def _wait_for_stat(envoy: EnvoyProcess, name: str, value: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while envoy.stats().get(name) != value:
        assert time.monotonic() < deadline, f"{name} never reached {value}"
        time.sleep(0.05)


async def test_admin_tokens_rotate_through_ecds_without_a_window(ecds_envoy: tuple) -> None:
    envoy, _, publish = ecds_envoy
    old, new = (Admin(envoy.admin_api_url, t) for t in (OLD, NEW))
    mcp_url = f"{envoy.url}/mcp"
    assert await _names(mcp_url) == REV1
    assert (old.get("servers").status_code, new.get("servers").status_code) == (200, 401)
    assert (envoy.stats()[ADMIN_RELOADS], envoy.stats()[DATA_RELOADS]) == (1, 1)

    # Both listed: every client keeps working whichever token it holds.
    publish([OLD, NEW])
    _wait_for_stat(envoy, ADMIN_RELOADS, 2)
    assert (old.get("servers").status_code, new.get("servers").status_code) == (200, 200)
    assert old.quarantine("demo", "rotation drill").status_code == 200
    assert new.release("demo").status_code == 200
    assert await _names(mcp_url) == REV1

    # The old token removed by a config update: refused (audited), the new one works, and the
    # runtime state (the baseline, the audit ring) is still there.
    publish([NEW])
    _wait_for_stat(envoy, ADMIN_RELOADS, 3)
    response = old.get("servers/demo")
    assert (response.status_code, response.json()) == (401, {
        "error": "the bearer token is not one that admin.token_sha256 accepts"})
    view = new.server("demo")
    assert (status_of(view), baseline_of(view)) == ("verified", FP1)
    assert await _names(mcp_url) == REV1
    # The agents' listener never reloaded: its resource did not change.
    assert envoy.stats()[DATA_RELOADS] == 1
    events = [e for e in _audits(envoy, "admin.refused", 2)
              if e["event"] in ("server.quarantined", "server.released", "admin.refused")]
    assert [(e["event"], e.get("token_index"), e.get("http_status")) for e in events] == [
        ("admin.refused", None, 401),  # the new token, before it was listed
        ("server.quarantined", 0, None), ("server.released", 1, None),
        ("admin.refused", None, 401),  # the old token, after it was removed
    ]
    ring = [e["event"] for e in new.get("audit").json()["events"]]
    assert ring.count("admin.refused") == 2 and "server.released" in ring
    for token in (OLD, NEW):
        assert token not in envoy.log_text()


def _rewire(text: str, data: str, admin: str) -> str:
    """The rendered config with each toolseal filter's ``vm_id`` line replaced (data first)."""
    first, rest = text.split("vm_id: toolseal\n", 1)
    second, tail = rest.split("vm_id: toolseal\n", 1)
    return first + data + second + admin + tail


# Istio's translation of a WasmPlugin sets no vm_id and puts the WasmPlugin's resource version
# in the VM's environment, so two WasmPlugins get two VMs; Envoy Gateway's gives every policy
# its own vm_id.
ISTIO_LIKE = ('vm_id: ""\n                  environment_variables: '
              '{ key_values: { ISTIO_META_WASM_PLUGIN_RESOURCE_VERSION: "%s" } }\n')


@pytest.mark.parametrize(("wiring", "shared"), [
    ((ISTIO_LIKE % "101", ISTIO_LIKE % "202"), True),
    (("vm_id: envoyextensionpolicy/mcp/toolseal/wasm/0\n",
      "vm_id: envoyextensionpolicy/mcp/toolseal-admin/wasm/0\n"), False),
], ids=["no-vm-id-other-vm-settings", "separate-vm-ids"])
async def test_the_admin_instance_shares_state_exactly_when_the_vm_id_is_the_same(
        wasm: Path, tmp_path: Path, wiring: tuple[str, str], shared: bool) -> None:
    upstream = Upstream(tmp_path, rev=1)
    upstream.start()
    envoy = None
    try:
        ports = envoyctl.free_port(), envoyctl.free_port(), envoyctl.free_port()
        text = envoyctl.render(listen_port=ports[0], admin_port=ports[1], admin_api_port=ports[2],
                               routes=[McpRoute("demo", upstream.port)], wasm_path=wasm)
        envoy = envoyctl.start(_rewire(text, *wiring), tmp_path / "envoy", listen_port=ports[0],
                               admin_port=ports[1], admin_api_port=ports[2])
        mcp_url = f"{envoy.url}/mcp"
        assert await _names(mcp_url) == REV1
        upstream.set_revision(2)
        assert await _names(mcp_url) == []
        admin = Admin(envoy.admin_api_url, envoyctl.DEMO_ADMIN_TOKEN)
        response = admin.approve("demo", FP2)
        if shared:
            assert response.status_code == 200
            assert await _names(mcp_url) == REV1
        else:
            # The admin instance has a state of its own, where "demo" was never seen.
            assert (response.status_code, response.json()) == (404, {"error": 'unknown server "demo"'})
            assert admin.get("servers").json() == {"servers": []}
            assert await _names(mcp_url) == []
    finally:
        try:
            if envoy is not None:
                envoy.stop()
        finally:
            upstream.stop()
