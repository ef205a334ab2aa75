"""Per-call policy in Envoy: caller identity from Envoy's jwt_authn metadata and from headers,
argument constraints, and tool annotations (the last check of a call; docs/config.md `policy`).

Envoy's own ``jwt_authn`` filter verifies a real RS256 JWT (key made in the test) and writes its
payload into dynamic metadata; toolseal reads ``envoy.filters.http.jwt_authn/payload/groups``.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

import envoyctl
from jwt_identity import jwt_filter, signing_key, token
from stack import Stack, mcp_client
from toolseal_checks import assert_denied, wait_for_audits

pytestmark = pytest.mark.anyio

GROUPS = "envoy.filters.http.jwt_authn/payload/groups"


def _policy_config() -> dict[str, Any]:
    config = envoyctl.default_plugin_config()
    config["policy"] = {"default": "allow", "rules": [
        {"action": "deny", "tool": "deploy_preview",
         "arguments": {"/branch": {"prefix": "release/"}}},
        {"action": "allow", "tool": "deploy_preview", "principal": {"metadata": GROUPS, "in": ["deployers"]}},
        {"action": "deny", "tool": "deploy_preview"},
        {"action": "deny", "tool": "get_weather", "principal": {"header": "x-user-group", "in": ["contractors"]}},
        {"action": "deny", "annotations": {"destructiveHint": True}},
    ]}
    return config


@pytest.fixture
def key() -> rsa.RSAPrivateKey:
    """A fresh RSA key: the JWKS Envoy trusts is made from it."""
    return signing_key()


@pytest.fixture
def policy_stack(wasm: Any, stacks: Callable[..., Stack], key: rsa.RSAPrivateKey) -> Stack:
    """Rev 3 (it has a destructive tool) behind jwt_authn -> toolseal with the rules above."""
    return stacks(rev=3, plugin_config=_policy_config(), pre_filters=jwt_filter(key))


async def test_jwt_group_decides_who_may_deploy(policy_stack: Stack, key: Any) -> None:
    deployer = {"authorization": f"Bearer {token(key, groups=['deployers', 'staff'])}"}
    viewer = {"authorization": f"Bearer {token(key, groups=['viewers'])}"}
    args = {"branch": "fix-login", "region": "eu-preview"}
    async with mcp_client(policy_stack.mcp_url, headers=deployer) as client:
        await client.list_tools()
        result = await client.call("deploy_preview", args)
        assert (result.isError, result.content[0].text) == (False, "preview of fix-login deployed to eu-preview")
        result = await client.call("deploy_preview", {"branch": "release/1.0", "region": "eu-preview"})
        assert_denied(result, "POLICY_DENIED", tool="deploy_preview", schema_status="verified",
                      required_action="none")
    for headers in (viewer, {}):
        async with mcp_client(policy_stack.mcp_url, headers=headers) as client:
            await client.list_tools()
            result = await client.call("deploy_preview", args)
            assert_denied(result, "POLICY_DENIED", tool="deploy_preview", schema_status="verified",
                          required_action="none")
    assert [c["arguments"] for c in policy_stack.upstream.calls()] == [args]


async def test_header_principal_and_destructive_annotation(policy_stack: Stack) -> None:
    async with mcp_client(policy_stack.mcp_url, headers={"x-user-group": "contractors"}) as client:
        await client.list_tools()
        result = await client.call("get_weather", {"city": "Paris"})
        assert_denied(result, "POLICY_DENIED", tool="get_weather", schema_status="verified",
                      required_action="none")
        result = await client.call("delete_preview", {"branch": "fix-login"})
        assert_denied(result, "POLICY_DENIED", tool="delete_preview", schema_status="verified",
                      required_action="none")
        result = await client.call("add", {"a": 20, "b": 22})
        assert result.content[0].text == "42"
    async with mcp_client(policy_stack.mcp_url, headers={"x-user-group": "ops"}) as client:
        await client.list_tools()
        result = await client.call("get_weather", {"city": "Paris"})
        assert result.structuredContent == {"city": "Paris", "temperature_c": 21, "conditions": "sunny"}
    assert [c["tool"] for c in policy_stack.upstream.calls()] == ["add", "get_weather"]
    denied = wait_for_audits(policy_stack, "call.denied", 2)
    assert [(e["tool"], e["error_code"]) for e in denied] == [
        ("get_weather", "POLICY_DENIED"), ("delete_preview", "POLICY_DENIED")]
