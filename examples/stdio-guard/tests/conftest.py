"""Shared fixtures for the toolseal-stdio tests: the guard binary, the real stdio MCP
servers, and a helper that runs one MCP client session through the guard.

The guard binary is TOOLSEAL_STDIO_BIN when set, else built here with
`cargo build -p toolseal-stdio` (the dev profile `cargo test` already built, so usually a
no-op; TOOLSEAL_STDIO_RELEASE=1 builds and uses the release binary). The servers come from
scripts/setup-stdio-servers.sh (npm packages under tests/node, mcp-server-time in the venv).
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
NODE_MODULES = HERE / "node" / "node_modules"
TAP = HERE / "tap.py"


def _target_dir() -> Path:
    return Path(os.environ.get("CARGO_TARGET_DIR", REPO / "target"))


@pytest.fixture(scope="session")
def guard_bin() -> Path:
    given = os.environ.get("TOOLSEAL_STDIO_BIN")
    if given:
        assert Path(given).is_file(), f"TOOLSEAL_STDIO_BIN={given} is not a file"
        return Path(given)
    release = os.environ.get("TOOLSEAL_STDIO_RELEASE") == "1"
    subprocess.run(
        ["cargo", "build", "--quiet", *(["--release"] if release else []), "-p", "toolseal-stdio"],
        cwd=REPO, check=True,
    )
    path = _target_dir() / ("release" if release else "debug") / "toolseal-stdio"
    assert path.is_file(), f"cargo did not produce {path}"
    return path


@pytest.fixture(scope="session")
def servers() -> Path:
    if not (NODE_MODULES / "everything-2026.1.26").is_dir() or not (
        Path(sys.prefix) / "bin" / "mcp-server-time"
    ).exists():
        subprocess.run([str(REPO / "scripts" / "setup-stdio-servers.sh")], check=True)
    return NODE_MODULES


def node_server(package: str, *args: str) -> list[str]:
    """The command that runs an installed npm MCP server over stdio."""
    return ["node", str(NODE_MODULES / package / "dist" / "index.js"), *args]


def time_server() -> list[str]:
    return [str(Path(sys.prefix) / "bin" / "mcp-server-time"), "--local-timezone", "UTC"]


def tapped(log: Path, command: list[str]) -> list[str]:
    """`command` behind tap.py, which records every line the server receives in `log`."""
    return [sys.executable, str(TAP), str(log), "--", *command]


def guard_args(
    guard: Path, server_cmd: list[str], *, state: Path | None = None, server_id: str = "test",
    audit: Path | None = None, config: Path | None = None,
) -> StdioServerParameters:
    args = ["--server", server_id]
    if state is not None:
        args += ["--state", str(state)]
    if audit is not None:
        args += ["--audit", str(audit)]
    if config is not None:
        args += ["--config", str(config)]
    env = dict(os.environ)
    return StdioServerParameters(command=str(guard), args=[*args, "--", *server_cmd], env=env)


def run_session(params: StdioServerParameters, body, errlog_path: Path | None = None):
    """Runs `await body(session)` in one initialized MCP client session; returns its result."""

    async def main():
        errlog = open(errlog_path, "w") if errlog_path else sys.stderr
        try:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await body(session)
        finally:
            if errlog_path:
                errlog.close()

    return anyio.run(main)


def admin(guard: Path, *args: str) -> subprocess.CompletedProcess:
    """Runs an admin subcommand of the guard."""
    return subprocess.run([str(guard), *args], capture_output=True, text=True, timeout=120)


def audit_events(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def denial(result) -> dict:
    """The structured denial of a refused tools/call result (asserting it is one)."""
    assert result.isError is True, result
    assert result.structuredContent is not None, result
    return result.structuredContent
