"""Two desktop agents of different capabilities, one state file: the reference server
(release 2026.1.26, over stdio) lists an agent that declares sampling, roots and elicitation
three tools more than one that declares none. Each agent is a view of one catalogue, so
neither closes the server for the other, in either order, across guard restarts; and a tool
of the one view is refused to the other, before the server sees the call."""

import json

import anyio
import pytest
from mcp import ClientSession, types
from mcp.client.stdio import stdio_client

from conftest import admin, denial, guard_args, node_server, tapped

CAPABLE_ONLY = ["get-roots-list", "trigger-elicitation-request", "trigger-sampling-request"]


async def _sampling(context, params):
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text="ok"), model="test"
    )


async def _roots(context):
    return types.ListRootsResult(roots=[])


async def _elicitation(context, params):
    return types.ElicitResult(action="decline")


def _agent(guard_bin, state, log, capable, call=None):
    """One agent session through a new guard process: the tool names it is listed, and the
    result of `call` (a tool name) when given."""
    cmd = tapped(log, node_server("everything-2026.1.26", "stdio"))
    params = guard_args(guard_bin, cmd, state=state, server_id="everything")
    callbacks = (
        {"sampling_callback": _sampling, "list_roots_callback": _roots,
         "elicitation_callback": _elicitation}
        if capable else {}
    )
    seen = {}

    async def main():
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, **callbacks) as session:
                await session.initialize()
                listed = await session.list_tools()
                seen["tools"] = sorted(tool.name for tool in listed.tools)
                if call is not None:
                    seen["call"] = await session.call_tool(call, {})

    try:
        anyio.run(main)
    except BaseExceptionGroup as group:
        # The server's requests to a capable client (roots) may still be in flight when the
        # session closes: a write to the closed stream, after everything was received.
        rest = group.subgroup(lambda e: not isinstance(e, (anyio.BrokenResourceError, BaseExceptionGroup)))
        if rest is not None or "tools" not in seen or (call is not None and "call" not in seen):
            raise
    return seen


def _status(guard_bin, state):
    done = admin(guard_bin, "status", "--state", str(state), "--server", "everything")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _forwarded_calls(log):
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    return [m["params"]["name"] for m in lines if m.get("method") == "tools/call"]


@pytest.mark.parametrize("first_capable", [False, True], ids=["plain-first", "capable-first"])
def test_two_agents_of_different_capabilities_share_one_state_file(
    guard_bin, servers, tmp_path, first_capable
):
    state = tmp_path / "state.json"
    order = [first_capable, not first_capable, first_capable, not first_capable]
    listed = []
    for n, capable in enumerate(order):
        seen = _agent(guard_bin, state, tmp_path / f"{n}.jsonl", capable)
        listed.append((capable, seen["tools"]))
        assert _status(guard_bin, state)["schema_status"] == "verified", (n, capable)
    plain = [tools for capable, tools in listed if not capable]
    capable = [tools for capable, tools in listed if capable]
    assert plain[0] == plain[1] and capable[0] == capable[1]
    assert sorted(set(capable[0]) - set(plain[0])) == CAPABLE_ONLY
    assert set(plain[0]) < set(capable[0]) and len(plain[0]) >= 10

    # A tool of the capable agents' view, called by a plain agent: refused by the guard.
    log = tmp_path / "refused.jsonl"
    seen = _agent(guard_bin, state, log, False, call="trigger-sampling-request")
    refused = denial(seen["call"])
    assert refused["error_code"] == "TOOL_NOT_APPROVED", refused
    assert _forwarded_calls(log) == []
    assert _status(guard_bin, state)["schema_status"] == "verified"
