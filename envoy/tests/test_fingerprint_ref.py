"""The test-side fingerprint reference agrees with the fingerprint's known-answer vectors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fingerprint_ref import server_fingerprint, tool_digest

# The known-answer vectors the core tests use too (plugin/core/tests/data), so the test never skips.
CANDIDATES = [Path(__file__).resolve().parents[2] / "plugin" / "core" / "tests" / "data" / "fingerprint.json"]
SUPPORTED = {"basic", "description-changed", "no-description"}


def _vectors() -> list[dict]:
    for path in CANDIDATES:
        if path.is_file():
            return json.loads(path.read_text())["cases"]
    pytest.fail("known-answer vectors missing: plugin/core/tests/data/fingerprint.json")


def test_reference_matches_spec_vectors() -> None:
    cases = [c for c in _vectors() if c["name"] in SUPPORTED]
    assert sorted(c["name"] for c in cases) == sorted(SUPPORTED)
    for case in cases:
        assert {t["name"]: tool_digest(t) for t in case["tools"]} == case["digests"], case["name"]
        assert server_fingerprint(case["tools"]) == case["fingerprint"], case["name"]
