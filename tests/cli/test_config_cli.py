"""`gtd config`, `gtd init` and error reporting through the real entry point."""

from __future__ import annotations

import json

from support import run_gtd

from gtd.paths import user_config_dir


def test_config_show_json_with_origins(repo):
    (repo / ".gtdrc.json").write_text(json.dumps({"testRetries": 4}))
    result = run_gtd("config", "show", "--json", "--origin", "--provider", "pi", cwd=repo)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["config"]["testRetries"] == 4
    assert data["config"]["provider"] == "pi"
    assert data["origins"]["testRetries"] == f"project ({repo / '.gtdrc.json'})"
    assert data["origins"]["provider"] == "command line"
    assert data["files"] == [str(repo / ".gtdrc.json")]


def test_config_show_table_names_origins(repo):
    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": "make check"}))
    result = run_gtd("config", "show", "--origin", cwd=repo, env={"COLUMNS": "250"})
    assert result.returncode == 0
    line = next(l for l in result.stdout.splitlines() if l.strip().startswith("testCommand"))
    assert '"make check"' in line and ".gtdrc.json" in line


def test_config_show_table_keeps_keys_whole_on_a_narrow_terminal(repo):
    (repo / ".gtdrc.json").write_text(json.dumps({"$comment": "team notes", "testCommand": "make check"}))
    result = run_gtd("config", "show", "--origin", cwd=repo, env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    keys = [line.split()[0] for line in result.stdout.splitlines() if line.startswith(" ") and line.split()]
    assert "sandbox.levels.readonly.denyReadPaths" in keys and "timeouts.inactivitySeconds" in keys
    assert "team notes" not in result.stdout  # annotations for people are not config values


def test_invalid_config_exits_2_naming_file_key_reason(repo):
    (repo / ".gtdrc.json").write_text('{"sandbox": {"enabled": "sometimes"}}')
    for args in (["config", "show"], ["build"], []):
        result = run_gtd(*args, cwd=repo)
        assert result.returncode == 2, (args, result.stderr)
        message = " ".join(result.stderr.split())
        assert str(repo / ".gtdrc.json") in message
        assert "sandbox.enabled" in message
        assert "valid boolean" in message


def test_schema_is_json_schema_with_camel_case_keys(repo):
    result = run_gtd("config", "schema", cwd=repo)
    schema = json.loads(result.stdout)
    assert schema["$schema"].startswith("https://json-schema.org/")
    assert {"testCommand", "testRetries", "sandbox", "$schema"} <= set(schema["properties"])
    assert schema["additionalProperties"] is False


def test_init_scaffolds_and_never_overwrites(repo):
    (repo / "pyproject.toml").write_text("[project]\nname='x'\n")
    first = run_gtd("init", cwd=repo)
    assert first.returncode == 0
    data = json.loads((repo / ".gtdrc.json").read_text())
    assert data["testCommand"] == "python3 -m pytest -q"
    assert data["$comment"]
    (repo / ".gtdrc.json").write_text('{"provider": "pi"}')
    again = run_gtd("init", cwd=repo)
    assert again.returncode == 0
    assert "already exists" in again.stderr
    assert (repo / ".gtdrc.json").read_text() == '{"provider": "pi"}'
    # the scaffold itself is valid config
    assert run_gtd("config", "show", cwd=repo).returncode == 0


def test_init_user_writes_commented_toml(repo):
    result = run_gtd("init", "--user", cwd=repo)
    assert result.returncode == 0
    text = (user_config_dir() / "config.toml").read_text()
    assert text.startswith("# gtd user config")
    assert run_gtd("config", "show", cwd=repo).returncode == 0


def test_legacy_key_warns_but_runs(repo):
    (repo / ".gtdrc.json").write_text(json.dumps({"agentForbiddenTools": ["Bash"]}))
    result = run_gtd("config", "show", "--json", cwd=repo)
    assert result.returncode == 0
    assert "agentForbiddenTools" in result.stderr


def test_every_command_has_help(repo):
    for args in ([], ["plan"], ["build"], ["learn"], ["init"], ["config"], ["config", "show"], ["doctor"],
                 ["demo"], ["sandbox"], ["approve"], ["audit"], ["trust"]):
        result = run_gtd(*args, "--help", cwd=repo)
        assert result.returncode == 0, (args, result.stderr)
        assert "Usage" in result.stdout


def test_not_a_git_repo_is_a_usage_error(tmp_path):
    result = run_gtd("build", cwd=tmp_path)
    assert result.returncode == 2
    assert "not inside a git repository" in result.stderr


def test_config_show_and_audit_do_not_wrap_off_a_terminal(repo):
    """Issue 24: piped (a file, a script), each row is one line, however narrow COLUMNS is."""
    from gtd.audit import AuditLog

    long_command = "make check " + " ".join(f"--option-{i}=value-{i}" for i in range(12))
    (repo / ".gtdrc.json").write_text(json.dumps({"testCommand": long_command}))
    shown = run_gtd("config", "show", "--origin", cwd=repo, env={"COLUMNS": "80"})
    assert shown.returncode == 0, shown.stderr
    [line] = [l for l in shown.stdout.splitlines() if l.strip().startswith("testCommand")]
    assert json.dumps(long_command) in line and line.rstrip().endswith(f"project ({repo / '.gtdrc.json'})")
    assert len(line) > 200

    target = "https://" + "a-long-host-name." * 8 + "example.com:443"
    AuditLog(repo).record("violation", kind="network", target=target, phase="build", level="readwrite",
                          detail="refused by the proxy: not in sandbox.levels.readwrite.allowDomains")
    audit = run_gtd("audit", cwd=repo, env={"COLUMNS": "80"})
    assert audit.returncode == 0, audit.stderr
    [row] = [l for l in audit.stdout.splitlines() if "violation" in l]
    assert target in row and row.rstrip().endswith("allowDomains") and len(row) > 200
