"""Drift across a restart: the reference server's release 2025.11.25 is baselined through the
guard with a state file; the guard stops; release 2026.1.26 starts behind a new guard on the
same file. The baseline survived, the drift is caught (no tools served, calls refused with
SCHEMA_CHANGED and never forwarded), and `approve` with the fingerprint `status` shows
re-opens the server."""

import json

from conftest import admin, audit_events, denial, guard_args, node_server, run_session, tapped


def _session(guard_bin, release, state, audit, log):
    cmd = tapped(log, node_server(f"everything-{release}", "stdio"))
    params = guard_args(guard_bin, cmd, state=state, server_id="everything", audit=audit)

    async def body(session):
        tools = await session.list_tools()
        echo = await session.call_tool("echo", {"message": "sealed"})
        return tools, echo

    return run_session(params, body)


def _status(guard_bin, state):
    done = admin(guard_bin, "status", "--state", str(state), "--server", "everything")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _forwarded_calls(log):
    return [
        json.loads(line)["params"]["name"]
        for line in log.read_text().splitlines()
        if json.loads(line).get("method") == "tools/call"
    ]


def test_drift_across_restart_then_approve(guard_bin, servers, tmp_path):
    state, audit = tmp_path / "state.json", tmp_path / "audit.jsonl"

    # Release A: trust on first use.
    log_a = tmp_path / "a.jsonl"
    tools_a, echo_a = _session(guard_bin, "2025.11.25", state, audit, log_a)
    assert len(tools_a.tools) > 0
    assert echo_a.isError is not True
    assert echo_a.content[0].text == "Echo: sealed"
    first = _status(guard_bin, state)
    assert first["schema_status"] == "verified"
    baseline = first["baseline_fingerprint"]
    assert baseline.startswith("sha256:") and first["live_fingerprint"] == baseline

    # Release B, new guard process, same state file: drift, fail closed.
    log_b = tmp_path / "b.jsonl"
    tools_b, echo_b = _session(guard_bin, "2026.1.26", state, audit, log_b)
    assert tools_b.tools == []
    refused = denial(echo_b)
    assert refused["error_code"] == "SCHEMA_CHANGED"
    assert refused["schema_status"] == "changed"
    assert refused["required_action"] == "admin_review"
    assert _forwarded_calls(log_b) == []
    drifted = _status(guard_bin, state)
    assert drifted["schema_status"] == "changed"
    assert drifted["baseline_fingerprint"] == baseline
    candidate = drifted["candidate_fingerprint"]
    assert candidate.startswith("sha256:") and candidate != baseline
    assert drifted["diff_summary"] is not None
    changed = [e for e in audit_events(audit) if e["event"] == "schema.changed"]
    assert len(changed) == 1 and changed[0]["baseline"] == baseline and changed[0]["live"] == candidate

    # An approval of anything but the reviewed candidate is refused and changes nothing.
    wrong = admin(guard_bin, "approve", "--state", str(state), "--server", "everything", "--fingerprint", baseline)
    assert wrong.returncode == 1
    assert "not the current candidate" in wrong.stderr
    assert _status(guard_bin, state)["schema_status"] == "changed"

    # Approve the candidate that status showed: release B is the new baseline.
    approved = admin(guard_bin, "approve", "--state", str(state), "--server", "everything", "--fingerprint", candidate)
    assert approved.returncode == 0, approved.stderr
    view = json.loads(approved.stdout)
    assert view["schema_status"] == "verified"
    assert view["baseline_fingerprint"] == candidate

    log_c = tmp_path / "c.jsonl"
    tools_c, echo_c = _session(guard_bin, "2026.1.26", state, audit, log_c)
    assert len(tools_c.tools) > 0
    assert echo_c.isError is not True
    assert echo_c.content[0].text == "Echo: sealed"
    assert _forwarded_calls(log_c) == ["echo"]
    assert _status(guard_bin, state)["schema_status"] == "verified"


def test_quarantine_and_release_from_the_command_line(guard_bin, servers, tmp_path):
    state, audit = tmp_path / "state.json", tmp_path / "audit.jsonl"
    _session(guard_bin, "2025.11.25", state, audit, tmp_path / "a.jsonl")
    held = admin(guard_bin, "quarantine", "--state", str(state), "--server", "everything", "--reason", "incident 42")
    assert held.returncode == 0, held.stderr
    assert json.loads(held.stdout)["quarantine"] == {"reason": "incident 42", "by": "admin"}

    log = tmp_path / "q.jsonl"
    tools, echo = _session(guard_bin, "2025.11.25", state, audit, log)
    assert tools.tools == []
    assert denial(echo)["error_code"] == "SERVER_QUARANTINED"
    assert _forwarded_calls(log) == []

    released = admin(guard_bin, "release", "--state", str(state), "--server", "everything")
    assert released.returncode == 0, released.stderr
    assert json.loads(released.stdout)["schema_status"] == "verified"
    again = admin(guard_bin, "release", "--state", str(state), "--server", "everything")
    assert again.returncode == 1
    assert "not quarantined" in again.stderr


def test_strict_posture_serves_nothing_until_approved(guard_bin, servers, tmp_path):
    from conftest import node_server as node

    config = tmp_path / "config.json"
    config.write_text('{"posture": "strict"}')
    state, log = tmp_path / "state.json", tmp_path / "memory-stdin.jsonl"

    def session():
        cmd = tapped(log, node("@modelcontextprotocol/server-memory"))
        params = guard_args(guard_bin, cmd, state=state, server_id="memory", config=config)
        params.env["MEMORY_FILE_PATH"] = str(tmp_path / "memory.jsonl")

        async def body(s):
            return await s.list_tools(), await s.call_tool("read_graph", {})

        return run_session(params, body)

    tools, call = session()
    assert tools.tools == []
    assert denial(call)["error_code"] == "SCHEMA_PENDING"
    assert _forwarded_calls(log) == []
    status = admin(guard_bin, "status", "--state", str(state), "--server", "memory", "--config", str(config))
    view = json.loads(status.stdout)
    assert view["schema_status"] == "pending" and view["posture"] == "strict"
    approved = admin(guard_bin, "approve", "--state", str(state), "--server", "memory",
                     "--config", str(config), "--fingerprint", view["candidate_fingerprint"])
    assert approved.returncode == 0, approved.stderr
    tools, call = session()
    assert len(tools.tools) == 9
    assert call.isError is not True
    assert _forwarded_calls(log) == ["read_graph"]
