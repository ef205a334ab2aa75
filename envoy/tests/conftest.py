"""Fixtures for the end-to-end tests: real upstream MCP servers, a real Envoy, real clients.

Everything a test starts is stopped by PID in teardown, even when the test fails. Tests that
need the plugin skip when the .wasm is not built, unless TOOLSEAL_REQUIRE_PLUGIN=1 (CI), where
a missing .wasm is a failure.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "testserver"))

import envoyctl  # noqa: E402
from stack import Stack, start_stack  # noqa: E402


# A hung test (a stream that never ends, a server that never answers) must fail, not hang CI.
# pytest-timeout's signal method interrupts the test and still runs fixture teardown, so every
# process the test started is stopped by PID.
TEST_TIMEOUT_SECONDS = 240


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every test in this directory a timeout unless it sets its own."""
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(str(item.fspath)).resolve().parents and not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(TEST_TIMEOUT_SECONDS, method="signal"))


@pytest.fixture
def anyio_backend() -> str:
    """The SDK client runs on asyncio."""
    return "asyncio"


@pytest.fixture(scope="session")
def wasm_snapshot(tmp_path_factory: pytest.TempPathFactory) -> Path | None:
    """A copy of the built plugin taken once per run, so a rebuild during the run (cargo
    rewrites the file in place) cannot hand Envoy a half-written module. None if not built."""
    try:
        built = envoyctl.wasm_file()
    except envoyctl.EnvoyError:
        return None
    copy = tmp_path_factory.mktemp("wasm") / built.name
    shutil.copyfile(built, copy)
    return copy


@pytest.fixture
def wasm(wasm_snapshot: Path | None, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The plugin snapshot (also what start_stack loads), or skip (fail under
    TOOLSEAL_REQUIRE_PLUGIN=1)."""
    if wasm_snapshot is None:
        message = f"{envoyctl.REPO / envoyctl.DEFAULT_WASM} is not built"
        if os.environ.get("TOOLSEAL_REQUIRE_PLUGIN") == "1":
            pytest.fail(message)
        pytest.skip(message)
    monkeypatch.setenv("TOOLSEAL_WASM", str(wasm_snapshot))
    return wasm_snapshot


@pytest.fixture
def stacks(tmp_path: Path) -> Iterator[Callable[..., Stack]]:
    """Factory: ``stacks(**start_stack kwargs)`` starts an upstream + Envoy; all stopped after."""
    started: list[Stack] = []

    def make(**kwargs: Any) -> Stack:
        stack = start_stack(tmp_path / f"stack{len(started)}", **kwargs)
        started.append(stack)
        return stack

    yield make
    for stack in reversed(started):
        stack.stop()


@pytest.fixture
def stack(wasm: Path, stacks: Callable[..., Stack]) -> Stack:
    """The rug-pull server at rev 1 (SSE responses) behind Envoy with toolseal, discovery."""
    return stacks()
