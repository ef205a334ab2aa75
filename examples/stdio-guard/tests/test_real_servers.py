"""toolseal-stdio in front of real stdio MCP servers, driven by the official MCP Python SDK
client: tools are listed, calls work, and a call to a tool the server never listed is refused
by the guard itself (the server never receives it)."""

import json
from pathlib import Path

from conftest import (
    audit_events, denial, guard_args, node_server, run_session, tapped, time_server,
)

MEMORY_TOOLS = {
    "create_entities", "create_relations", "add_observations", "delete_entities",
    "delete_observations", "delete_relations", "read_graph", "search_nodes", "open_nodes",
}


def _received(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _calls(log: Path) -> list[str]:
    return [m["params"]["name"] for m in _received(log) if m.get("method") == "tools/call"]


def test_memory_server_lists_calls_and_refuses_unknown_tool(guard_bin, servers, tmp_path):
    log, audit = tmp_path / "server-stdin.jsonl", tmp_path / "audit.jsonl"
    cmd = tapped(log, node_server("@modelcontextprotocol/server-memory"))
    params = guard_args(guard_bin, cmd, state=tmp_path / "state.json", server_id="memory", audit=audit)
    params.env["MEMORY_FILE_PATH"] = str(tmp_path / "memory.jsonl")

    async def body(session):
        tools = await session.list_tools()
        created = await session.call_tool(
            "create_entities",
            {"entities": [{"name": "toolseal", "entityType": "project", "observations": ["seals tools"]}]},
        )
        graph = await session.call_tool("read_graph", {})
        unknown = await session.call_tool("drop_all_tables", {"confirm": True})
        return tools, created, graph, unknown

    tools, created, graph, unknown = run_session(params, body)
    assert {t.name for t in tools.tools} == MEMORY_TOOLS
    assert created.isError is not True
    assert graph.isError is not True
    assert [e["name"] for e in graph.structuredContent["entities"]] == ["toolseal"]
    refused = denial(unknown)
    assert refused["error_code"] == "TOOL_NOT_APPROVED"
    assert refused["server"] == "memory"
    assert refused["tool"] == "drop_all_tables"
    assert refused["side_effect_started"] is False
    # The server received the two allowed calls and never the refused one.
    assert _calls(log) == ["create_entities", "read_graph"]
    events = audit_events(audit)
    denied = [e for e in events if e["event"] == "call.denied"]
    assert [(e["tool"], e["error_code"]) for e in denied] == [("drop_all_tables", "TOOL_NOT_APPROVED")]
    assert [e["event"] for e in events if e["event"].startswith("schema.")] == ["schema.baselined"]


def test_filesystem_server_reads_allowed_directory_and_refuses_unknown_tool(guard_bin, servers, tmp_path):
    root = tmp_path / "shared"
    root.mkdir()
    (root / "notes.txt").write_text("sealed at the baseline\n")
    log = tmp_path / "server-stdin.jsonl"
    cmd = tapped(log, node_server("@modelcontextprotocol/server-filesystem", str(root)))
    params = guard_args(guard_bin, cmd, state=tmp_path / "state.json", server_id="files")

    async def body(session):
        tools = await session.list_tools()
        text = await session.call_tool("read_text_file", {"path": str(root / "notes.txt")})
        listing = await session.call_tool("list_directory", {"path": str(root)})
        unknown = await session.call_tool("execute_shell", {"command": "rm -rf /"})
        return tools, text, listing, unknown

    tools, text, listing, unknown = run_session(params, body)
    names = {t.name for t in tools.tools}
    assert {"read_text_file", "list_directory", "write_file", "edit_file"} <= names
    assert text.isError is not True
    assert text.content[0].text == "sealed at the baseline\n"
    assert listing.content[0].text == "[FILE] notes.txt"
    refused = denial(unknown)
    assert refused["error_code"] == "TOOL_NOT_APPROVED"
    assert refused["tool"] == "execute_shell"
    assert _calls(log) == ["read_text_file", "list_directory"]


def test_python_time_server_through_the_guard(guard_bin, servers, tmp_path):
    log = tmp_path / "server-stdin.jsonl"
    params = guard_args(guard_bin, tapped(log, time_server()), state=tmp_path / "state.json", server_id="time")

    async def body(session):
        tools = await session.list_tools()
        now = await session.call_tool("get_current_time", {"timezone": "UTC"})
        converted = await session.call_tool(
            "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        )
        bad_args = await session.call_tool("get_current_time", {"timezone": 42})
        unknown = await session.call_tool("set_system_clock", {"time": "00:00"})
        return tools, now, converted, bad_args, unknown

    tools, now, converted, bad_args, unknown = run_session(params, body)
    assert {t.name for t in tools.tools} == {"get_current_time", "convert_time"}
    assert now.isError is not True
    assert json.loads(now.content[0].text)["timezone"] == "UTC"
    assert converted.isError is not True
    assert json.loads(converted.content[0].text)["target"]["datetime"].startswith(
        json.loads(converted.content[0].text)["source"]["datetime"][:10]
    )
    assert denial(bad_args)["error_code"] == "INVALID_ARGUMENTS"
    assert denial(unknown)["error_code"] == "TOOL_NOT_APPROVED"
    assert _calls(log) == ["get_current_time", "convert_time"]
