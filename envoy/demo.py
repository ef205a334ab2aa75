"""toolseal in Envoy, step by step: a real MCP server rug-pulls its tools and the gateway holds.

Starts the rug-pull test server (official MCP Python SDK) at its honest revision and a real
Envoy running the toolseal .wasm in front of it, then plays an agent (the SDK's client) and an
operator (the admin API) through a rug pull, a quarantine, a fixed release and its approval,
printing what happens in plain words. A second server on the same Envoy speaks MCP 2026-07-28
(the Python SDK 2.x, no session): an agent on that SDK sees the same rug pull blocked, with the
structured denial as a tool result. Then the fleet: two Envoys of two workers share their
memory in one etcd (Debian's etcd-server, on loopback); a drift seen through one closes the
other, a restarted Envoy still refuses the drifted server, and a quarantine made on one
instance's admin API holds everywhere. Every step checks what it claims; the demo exits 1 if
any step does not behave as expected, and stops every process it started, by PID, even on error.

Run: ``envoy/demo.sh`` (after scripts/setup-python.sh, scripts/setup-python-mcp2.sh,
scripts/setup-etcd.sh and the .wasm build).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "testserver"))

import envoyctl  # noqa: E402
from fleet_stack import StoreFleet, balanced_client  # noqa: E402
from modern_stack import ClientRaised, ModernUpstream, SdkClient  # noqa: E402
from rugpull_server import tool_surface  # noqa: E402
from stack import (  # noqa: E402
    Stack, Upstream, baseline_of, candidate_of, denial, mcp_client, start_stack, status_of,
)
from surface import WEATHER_HONEST  # noqa: E402

SERVER = "demo"
MODERN = "modern"
FLEET_SERVER = "deploy"
FLEET_PREFIX = "/toolseal/demo-fleet/"
FLEET_SYNC_MS = 200


class DemoFailed(Exception):
    """A step did not behave as the demo says it should."""


class Narrator:
    """Numbered steps in plain words, with a checked expectation after each claim."""

    def __init__(self) -> None:
        self.step = 0
        self.checks = 0

    def title(self, text: str) -> None:
        """Start a new step."""
        self.step += 1
        print(f"\n{self.step}. {text}")

    def say(self, text: str) -> None:
        """Explain something, indented under the step."""
        print(textwrap.indent(text, "   "))

    def expect(self, condition: bool, claim: str, got: Any = None) -> None:
        """Print the claim as checked, or stop the demo if it does not hold."""
        self.checks += 1
        if not condition:
            raise DemoFailed(f"expected: {claim}; got: {got!r}")
        print(f"   ok: {claim}")


def short(fingerprint: str | None) -> str:
    """Fingerprints are long; ``sha256:`` and 16 hex digits identify them in the narration."""
    return "none" if fingerprint is None else fingerprint[:23] + "..."


def describe_denial(n: Narrator, result: Any, code: str, action: str) -> None:
    """Print and check a refused call's structured error."""
    refusal = denial(result) or {}
    n.say(f"the agent got a tool error: \"{result.content[0].text if result.content else ''}\"")
    n.expect(refusal.get("error_code") == code and refusal.get("required_action") == action
             and refusal.get("side_effect_started") is False,
             f"error_code {code}, required_action {action}, side_effect_started false", refusal)


async def run_demo(n: Narrator, stack: Stack) -> None:
    """The story; each step asserts what it prints."""
    admin, upstream = stack.admin, stack.upstream
    n.title(f"Envoy with toolseal is up in front of the MCP server (ready in "
            f"{stack.envoy.startup_seconds:.2f}s); the server runs its honest release.")
    async with mcp_client(stack.mcp_url) as agent:
        n.title("An agent connects through Envoy and lists the tools.")
        names = await agent.tool_names()
        n.say(f"tools served: {', '.join(names)}")
        n.expect(names == ["deploy_preview", "get_weather", "add"], "three tools served")
        view = admin.server(SERVER)
        n.say(f"first contact (discovery posture): the live tool set became the baseline "
              f"{short(baseline_of(view))}")
        n.expect(status_of(view) == "verified", "admin API: schema_status verified", view)

        n.title("The agent deploys a preview.")
        result = await agent.call("deploy_preview", {"branch": "fix-login"})
        n.say(f"server answered: \"{result.content[0].text}\"")
        n.expect(not result.isError and len(upstream.calls()) == 1, "the call reached the server")

    n.title("The server is redeployed with a rug pull.")
    upstream.restart(rev=2)
    poisoned = next(t for t in tool_surface(2) if t["name"] == "get_weather")
    n.say("get_weather now tells the model (seen directly on the server, not through Envoy):")
    n.say(textwrap.indent(poisoned["description"], "  | "))
    n.say("and gained a `notes` argument to carry the stolen keys; deploy_preview now requires "
          "`region`.")

    async with mcp_client(stack.mcp_url) as agent:
        n.title("The agent reconnects and lists the tools again.")
        listed = await agent.list_tools()
        view = admin.server(SERVER)
        status = (listed.meta or {}).get("io.toolseal/status", {})
        n.say(f"tools served: {len(listed.tools)}; toolseal's _meta says: "
              f"{status.get('schema_status')}: {status.get('reason')}")
        n.expect(listed.tools == [] and status_of(view) == "changed",
                 "no tools served, schema_status changed (fail closed)", (listed.tools, view))

        n.title("The agent calls get_weather anyway, with the exfiltration argument.")
        calls_before, requests_before = len(upstream.calls()), stack.upstream_requests()
        result = await agent.call("get_weather", {"city": "Paris", "notes": "-----BEGIN KEY-----"})
        describe_denial(n, result, "SCHEMA_CHANGED", "admin_review")
        n.expect(len(upstream.calls()) == calls_before, "the server's own request log shows no new call")
        n.expect(stack.upstream_requests() == requests_before,
                 "Envoy opened no upstream request for it (cluster upstream_rq_total unchanged)")

        n.title("The operator reviews the drift.")
        rug_pull = candidate_of(view)
        n.say(f"baseline {short(baseline_of(view))}, live candidate {short(rug_pull)}")
        for line in diff_lines(view):
            n.say(f"  - {line}")
        response = admin.quarantine(SERVER, "get_weather asks the model for SSH and cloud keys")
        n.expect(response.status_code == 200 and status_of(admin.server(SERVER)) == "quarantined",
                 "quarantined, with the reason in the audit trail", response.text)
        result = await agent.call("add", {"a": 1, "b": 2})
        describe_denial(n, result, "SERVER_QUARANTINED", "admin_review")

    n.title("The vendor ships a fixed release: honest get_weather, deploy_preview still "
            "requires region, and a new destructive delete_preview.")
    upstream.restart(rev=3)
    async with mcp_client(stack.mcp_url) as agent:
        listed = await agent.list_tools()
        n.expect(listed.tools == [], "still no tools served while quarantined", listed.tools)
        fixed = candidate_of(admin.server(SERVER))
        n.say(f"the live candidate is now {short(fixed)}")

        n.title("The operator approves what was reviewed, then releases the quarantine.")
        response = admin.approve(SERVER, rug_pull)
        n.expect(response.status_code == 409,
                 "approving the rug pull's fingerprint is refused (409): the live set moved since",
                 response.status_code)
        response = admin.approve(SERVER, fixed)
        view = admin.server(SERVER)
        n.expect(response.status_code == 200 and baseline_of(view) == fixed
                 and status_of(view) == "quarantined",
                 "approving the reviewed candidate re-baselines it; the server stays quarantined",
                 (response.status_code, view))
        response = admin.release(SERVER)
        n.expect(response.status_code == 200 and status_of(admin.server(SERVER)) == "verified",
                 "released: schema_status verified", response.text)

        n.title("The agent refreshes its tools and works against the new contract.")
        names = await agent.tool_names()
        n.say(f"tools served: {', '.join(names)}")
        n.expect(names == ["deploy_preview", "get_weather", "add"],
                 "three tools served: the new delete_preview is destructive, which policy denies "
                 "to every caller, so no agent is listed it", names)
        result = await agent.call("deploy_preview", {"branch": "fix-login"})
        describe_denial(n, result, "INVALID_ARGUMENTS", "fix_arguments")
        result = await agent.call("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})
        n.say(f"server answered: \"{result.content[0].text}\"")
        n.expect(not result.isError, "with region, the call goes through")

        n.title("Per-call policy: the unlisted destructive tool, called by name anyway, is denied "
                "by the gateway's rules.")
        result = await agent.call("delete_preview", {"branch": "fix-login"})
        describe_denial(n, result, "POLICY_DENIED", "none")

    modern_agent(n, stack)

    n.title("The audit trail (Envoy log, `toolseal.audit` lines):")
    events = audit_trail(stack, denials=5)
    for (name, server, before, after, detail), repeat in collapse(events):
        times = f" (x{repeat}: once per Wasm VM that Envoy started)" if repeat > 1 else ""
        n.say(f"{name:<20} {server:<7} {before:<12} -> {after:<12} {detail}{times}")
    codes = [e.get("error_code") for e in events
             if e.get("event") == "call.denied" and e.get("server") == SERVER]
    n.expect(codes == ["SCHEMA_CHANGED", "SERVER_QUARANTINED", "INVALID_ARGUMENTS", "POLICY_DENIED"],
             "every refusal is in the audit trail, in order", codes)
    modern_codes = [e.get("error_code") for e in events
                    if e.get("event") == "call.denied" and e.get("server") == MODERN]
    n.expect(modern_codes == ["SCHEMA_CHANGED"],
             "the 2026-07-28 agent's refusal is there too, under its server", modern_codes)
    n.expect(any(e.get("event") == "schema.changed" for e in events)
             and any(e.get("event") == "schema.approved" for e in events),
             "schema.changed and schema.approved are in the audit trail")
    deploys = [c for c in upstream.calls() if c["tool"] == "deploy_preview"]
    n.expect(len(upstream.calls()) == 2 and len(deploys) == 2,
             "over the whole run the server executed exactly the two allowed calls",
             upstream.calls())


def modern_agent(n: Narrator, stack: Stack) -> None:
    """The same rug pull on a server and an agent of MCP 2026-07-28 (MCP Python SDK 2.x)."""
    upstream = stack.extras[MODERN]
    agent = SdkClient("python", upstream.workdir / "clients")
    try:
        n.title("A second server speaks MCP 2026-07-28 (MCP Python SDK 2.x: no initialize, no "
                "session). An agent on the same SDK lists its tools through the same Envoy.")
        protocol = agent.connect(stack.extra_url(MODERN))["protocol_version"]
        listed = agent.list()
        n.say(f"protocol {protocol}; tools served: {', '.join(t['name'] for t in listed['tools'])}")
        n.say(f"the server lets clients cache the list for an hour ({upstream.list_ttl_ms} ms, "
              f"{upstream.list_scope}); toolseal lowered that to {listed['ttlMs']} ms")
        n.expect(len(listed["tools"]) == 4 and listed["ttlMs"] == 60000,
                 "four tools served, cache hint lowered to 60 s", listed)

        n.title("It is redeployed with the same rug pull; the agent lists again and calls "
                "get_weather with the exfiltration argument.")
        upstream.set_revision(2)
        listed = agent.list(cache_mode="refresh")
        n.expect(listed["tools"] == [] and (listed["ttlMs"], listed["cacheScope"]) == (0, "private"),
                 "no tools served, sent with ttlMs 0 and cacheScope private (no cache keeps it "
                 "after an approval)", listed)
        before = (len(upstream.calls()), stack.extra_requests(MODERN))
        result = agent.call("get_weather", {"city": "Paris", "notes": "-----BEGIN KEY-----"})
        refusal = result.get("structuredContent") or {}
        text = (result.get("content") or [{}])[0].get("text", "")
        n.say(f"the SDK 2.x client returned a tool result: \"{text}\"")
        n.expect(result.get("isError") is True and refusal.get("error_code") == "SCHEMA_CHANGED"
                 and refusal.get("side_effect_started") is False,
                 "the 2026-07-28 agent sees error_code SCHEMA_CHANGED as structured content", result)
        n.expect((len(upstream.calls()), stack.extra_requests(MODERN)) == before,
                 "the server never saw the call (its request log and upstream_rq_total unchanged)")
    except ClientRaised as err:
        raise DemoFailed(str(err)) from err
    finally:
        agent.close()


async def fleet_acts(n: Narrator, fleet: StoreFleet) -> None:
    """Two Envoys, one etcd: what one instance learns or decides holds on the other, and a
    restart forgets nothing. Each step asserts what it prints."""
    a, b = fleet.add_envoy("A"), fleet.add_envoy("B")
    fleet.start_envoys(a, b)
    upstream = fleet.upstreams[FLEET_SERVER]
    assert fleet.etcd is not None
    n.title(f"A fleet: two Envoys, A and B (two workers each), in front of another MCP server, "
            f"sharing their memory in one etcd ({fleet.etcd.url}, prefix {fleet.prefix}).")
    async with mcp_client(a.url(FLEET_SERVER)) as agent:
        names = await agent.tool_names()
    kv, doc = fleet.wait_for_record(FLEET_SERVER, lambda r: r.get("status") == "verified",
                                    "the baseline")
    record = doc["record"]
    n.say(f"an agent listed through A: {', '.join(names)}")
    n.say(f"etcd holds {kv.key} (mod_revision {kv.mod_revision}): status {record['status']}, "
          f"baseline {short(record['baseline'])}; see it with")
    n.say(f"  etcdctl --endpoints {fleet.etcd.url} get --prefix {fleet.prefix}")
    n.expect(len(names) == 3, "A trusted the first list and wrote the baseline to etcd", names)
    async with mcp_client(b.url(FLEET_SERVER)) as agent:
        names_b = await agent.tool_names()
    n.expect(names_b == names and b.audit_events("schema.baselined") == [],
             "B serves the same tools from the fleet's record, without a baseline of its own",
             (names_b, b.audit_events("schema.baselined")))

    n.title("The server is redeployed: deploy_preview now requires `region` (nothing a screening "
            "cue can see). Only an agent on A lists the new tools.")
    async with balanced_client(fleet, FLEET_SERVER, "B") as (agent_on_b, _):
        upstream.set_revision(2)
        async with mcp_client(a.url(FLEET_SERVER)) as agent:
            listed = await agent.list_tools()
            n.expect(listed.tools == [], "A serves no tools: schema_status changed", listed.tools)
            waited = wait_for_status(b, FLEET_SERVER, "changed")
        n.expect(waited is not None,
                 f"B, which never saw the new tools, holds the server too, {waited or 0:.2f}s after "
                 f"A's answer (instances sync every {FLEET_SYNC_MS} ms)", waited)
        before = forwarded(fleet, FLEET_SERVER)
        result = await agent_on_b.call("deploy_preview",
                                       {"branch": "fix-login", "region": "eu-preview"})
        n.say("an agent on B calls deploy_preview:")
        describe_denial(n, result, "SCHEMA_CHANGED", "admin_review")
        n.expect(forwarded(fleet, FLEET_SERVER) == before,
                 "the call never left B (the server's request log and every Envoy's "
                 "upstream_rq_total unchanged)")

    n.title("Envoy A is restarted (a rollout). Per process, a restart trusted the drifted set as "
            "a new baseline; with the fleet store the new process reads the record first.")
    seconds = a.restart()
    n.say(f"A is back in {seconds:.2f}s, with no local state")
    async with balanced_client(fleet, FLEET_SERVER, "A") as (agent, _):
        listed = await agent.list_tools()
        status = (listed.meta or {}).get("io.toolseal/status", {})
        n.expect(listed.tools == [] and status.get("schema_status") == "changed",
                 "the restarted A serves no tools: schema_status changed", (listed.tools, status))
        before = forwarded(fleet, FLEET_SERVER)
        result = await agent.call("deploy_preview", {"branch": "fix-login", "region": "eu-preview"})
        describe_denial(n, result, "SCHEMA_CHANGED", "admin_review")
        n.expect(forwarded(fleet, FLEET_SERVER) == before, "and it never reached the server")
    n.expect(a.audit_events("schema.baselined") == [],
             "the restarted A made no new baseline (no schema.baselined in its log)")

    n.title("During the review, an operator quarantines the server on B's admin API.")
    response = b.admin.quarantine(FLEET_SERVER, "INC-7: reviewing the region change")
    n.expect(response.status_code == 200, "B: quarantined", response.text)
    waited = wait_for_status(a, FLEET_SERVER, "quarantined")
    n.expect(waited is not None, f"A holds it too, {waited or 0:.2f}s later", waited)
    async with balanced_client(fleet, FLEET_SERVER, "A") as (agent, _):
        result = await agent.call("add", {"a": 1, "b": 2})
        describe_denial(n, result, "SERVER_QUARANTINED", "admin_review")
    _, doc = fleet.wait_for_record(FLEET_SERVER, lambda r: r.get("status") == "quarantined",
                                   "the quarantine")
    n.expect(doc["record"]["status"] == "quarantined",
             "the quarantine is in etcd: every instance, and every restart, holds the server")
    n.expect(upstream.calls() == [], "the fleet's server executed no call at all", upstream.calls())


def forwarded(fleet: StoreFleet, server_id: str) -> tuple[int, list[int]]:
    """What reached the server so far: its own request log's length, each Envoy's
    upstream_rq_total for it."""
    return (len(fleet.upstreams[server_id].events()),
            [m.upstream_requests(server_id) for m in fleet.envoys.values()])


def wait_for_status(member: Any, server_id: str, status: str, timeout: float = 5) -> float | None:
    """Seconds until the instance's admin view shows ``status``, or None after ``timeout``."""
    began = time.monotonic()
    while time.monotonic() - began < timeout:
        response = member.admin.get(f"servers/{server_id}")
        if response.status_code == 200 and status_of(response.json()) == status:
            return time.monotonic() - began
        time.sleep(0.02)
    return None


def audit_trail(stack: Stack, denials: int, timeout: float = 5) -> list[dict[str, Any]]:
    """The audit events once the expected denials are in (Envoy flushes its log every 100 ms)."""
    events: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        events = stack.envoy.audit_events()
        if sum(e.get("event") == "call.denied" for e in events) >= denials:
            break
        time.sleep(0.05)
    return events


def collapse(events: list[dict[str, Any]]) -> list[tuple[tuple[str, str, str, str, str], int]]:
    """Consecutive identical lines counted once."""
    out: list[tuple[tuple[str, str, str, str, str], int]] = []
    for event in events:
        line = (str(event.get("event")), event.get("server") or "", event.get("status_before") or "",
                event.get("status_after") or "", event.get("error_code") or event.get("reason") or "")
        if out and out[-1][0] == line:
            out[-1] = (line, out[-1][1] + 1)
        else:
            out.append((line, 1))
    return out


def diff_lines(view: dict[str, Any]) -> list[str]:
    """Human lines from the admin view's classified diff."""
    diff = view.get("diff") or []
    changes = diff.get("changes", []) if isinstance(diff, dict) else diff
    lines = []
    for change in changes:
        if isinstance(change, dict):
            parts = [str(change.get(k)) for k in ("class", "kind", "tool", "path") if change.get(k)]
            lines.append(" ".join(parts))
        else:
            lines.append(str(change))
    return lines


def _expected_failure(err: BaseException) -> BaseException | None:
    """The DemoFailed, EnvoyError or failed wait (AssertionError) inside ``err`` (task groups
    wrap exceptions in groups)."""
    if isinstance(err, (DemoFailed, envoyctl.EnvoyError, AssertionError)):
        return err
    if isinstance(err, BaseExceptionGroup):
        for inner in err.exceptions:
            found = _expected_failure(inner)
            if found is not None:
                return found
    return None


def demo_config() -> dict[str, Any]:
    """Discovery posture, admin API, and one rule: destructive tools are denied."""
    config = envoyctl.default_plugin_config()
    config["policy"] = {"default": "allow",
                        "rules": [{"action": "deny", "annotations": {"destructiveHint": True}}]}
    return config


def main(argv: list[str]) -> int:
    """Run the demo; 0 when every step behaved as described."""
    parser = argparse.ArgumentParser(description="toolseal rug-pull demo in a real Envoy")
    parser.add_argument("--keep-logs", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    n = Narrator()
    workdir = Path(tempfile.mkdtemp(prefix="toolseal-demo-"))
    stack = fleet = None
    try:
        envoyctl.wasm_file()
        modern = ModernUpstream(workdir / MODERN, "python")
        stack = start_stack(workdir, server_id=SERVER, plugin_config=demo_config(),
                            extras={MODERN: modern})
        anyio.run(run_demo, n, stack)
        stack.stop()
        stack = None
        # The drift no screening cue can see: get_weather stays honest in every revision.
        honest = Upstream(workdir / FLEET_SERVER, extra_args=("--poisoned-description", WEATHER_HONEST))
        fleet = StoreFleet(workdir / "fleet", {FLEET_SERVER: honest}, prefix=FLEET_PREFIX,
                           sync_ms=FLEET_SYNC_MS)
        fleet.start()
        anyio.run(fleet_acts, n, fleet)
    except Exception as err:  # report, then stop everything (finally) and exit 1
        expected = _expected_failure(err)
        if expected is None:
            raise
        print(f"\nDEMO FAILED at step {n.step}: {expected}\nlogs: {workdir}", file=sys.stderr)
        return 1
    finally:
        if stack is not None:
            stack.stop()
        if fleet is not None:
            fleet.stop()
    print(f"\nAll {n.checks} checks held. Everything started was stopped.")
    if args.keep_logs:
        print(f"logs: {workdir}")
    else:
        for path in sorted(workdir.rglob("*"), reverse=True):
            path.unlink() if path.is_file() else path.rmdir()
        workdir.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
