"""The state file is never silently reset: a corrupt or unreadable one is refused at start,
by the guard and by the admin subcommands alike, and left as it was."""

import subprocess

from conftest import admin, node_server


def _guard(guard_bin, state, tmp_path):
    command = [str(guard_bin), "--state", str(state), "--server", "memory", "--",
               *node_server("@modelcontextprotocol/server-memory")]
    env = {"PATH": "/usr/bin:/bin", "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    return subprocess.run(command, input="", capture_output=True, text=True, timeout=120, env=env)


def test_corrupt_state_file_is_refused_and_kept(guard_bin, servers, tmp_path):
    state = tmp_path / "state.json"
    for content in ['{"toolseal_stdio_state": 1, "entries": {"ts/v1/servers": "[]"', "not json at all",
                    '{"toolseal_stdio_state": 9, "entries": {}}', '{"entries": {}}']:
        state.write_text(content)
        done = _guard(guard_bin, state, tmp_path)
        assert done.returncode == 2, done.stderr
        assert f"the state file {state} is unreadable" in done.stderr
        assert "not reset" in done.stderr
        assert done.stdout == ""
        assert state.read_text() == content
        status = admin(guard_bin, "status", "--state", str(state))
        assert status.returncode == 2
        assert "is unreadable" in status.stderr
        assert state.read_text() == content


def test_unreadable_state_file_is_refused(guard_bin, servers, tmp_path):
    state = tmp_path / "state.json"
    state.mkdir()  # a directory where the file should be: cannot be read
    done = _guard(guard_bin, state, tmp_path)
    assert done.returncode == 2
    assert "cannot read the state file" in done.stderr
    assert state.is_dir()


def test_missing_state_file_starts_empty_and_is_created(guard_bin, servers, tmp_path):
    state = tmp_path / "state.json"
    done = _guard(guard_bin, state, tmp_path)
    assert done.returncode == 0, done.stderr
    status = admin(guard_bin, "status", "--state", str(state))
    assert status.returncode == 0, status.stderr
    assert status.stdout.strip() == '{"servers":[]}'


def test_invalid_config_is_refused_naming_the_field(guard_bin, servers, tmp_path):
    config = tmp_path / "config.json"
    config.write_text('{"postur": "strict"}')
    state = tmp_path / "state.json"
    command = [str(guard_bin), "--config", str(config), "--state", str(state), "--",
               *node_server("@modelcontextprotocol/server-memory")]
    done = subprocess.run(command, input="", capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "the config is invalid" in done.stderr
    assert "postur" in done.stderr
    assert not state.exists(), "nothing is written under a config that did not load"
