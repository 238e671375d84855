"""The agent's unfinished work, path by path (gtd.workflow.leftovers): what the agent wrote stays its own
whatever gtd commits meanwhile; the person's edits elsewhere are theirs; a revert or a commit ends it."""

from __future__ import annotations

import os

from support import git

from gtd.workflow import leftovers


def agent_writes(repo, **files: str) -> None:
    for name, text in files.items():
        (repo / name).write_text(text)
    leftovers.snapshot(repo)  # what gtd does after each of the agent's tool calls


def test_the_agents_paths_survive_gtds_own_commit_and_the_persons_edits(repo):
    (repo / ".gtdrc.json").write_text("{}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "configure")
    assert leftovers.begin(repo, "build", "scripted") is None  # nothing to carry on: a new record
    agent_writes(repo, **{"count.py": "half\n", "notes.md": "n\n"})
    leftovers.stopped(repo, "escalation pending")

    (repo / ".gtdrc.json").write_text('{"sandbox": {}}\n')  # gtd's own 🔐 commit of its config
    git(repo, "commit", "-q", "-am", "🔐 config: allow")
    (repo / "README.md").write_text("# edited by the person\n")  # the person, elsewhere
    work = leftovers.pending(repo)
    assert (work.paths, work.edited, work.person, work.reason) == (["count.py", "notes.md"], [], ["README.md"],
                                                                  "escalation pending")

    (repo / "count.py").write_text("half, and the person's line\n")  # the person, in the agent's file
    (repo / "notes.md").unlink()  # the agent's new file removed: nothing of it is left
    work = leftovers.pending(repo)
    assert (work.paths, work.edited) == ([], ["count.py"])

    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the person commits everything")
    assert leftovers.pending(repo) is None  # committed: the record is done and dropped
    assert not (leftovers._marker(repo)).exists()


def test_a_same_size_rewrite_with_the_old_mtime_is_still_seen(repo):
    """The kept snapshot index only spares re-reading files whose stat is unchanged: git's ctime check
    still sees a rewrite that keeps the size and puts the old mtime back."""
    leftovers.begin(repo, "build", "scripted")
    agent_writes(repo, **{"a.txt": "aaaa\n"})
    before = (repo / "a.txt").stat()
    (repo / "a.txt").write_text("bbbb\n")
    os.utime(repo / "a.txt", ns=(before.st_atime_ns, before.st_mtime_ns))
    (repo / "README.md").write_text("# person\n")
    work = leftovers.pending(repo)
    assert work.edited == ["a.txt"] and work.person == ["README.md"]


def test_only_the_run_whose_agent_recorded_updates_the_record(repo, monkeypatch):
    leftovers.begin(repo, "build", "scripted")
    agent_writes(repo, **{"a.txt": "agent\n"})
    monkeypatch.setattr(leftovers, "_OWNER", "another run")  # a later gtd process, before its agent starts
    (repo / "b.txt").write_text("person\n")
    assert leftovers.stopped(repo, "failed early") is False
    work = leftovers.pending(repo)
    assert (work.paths, work.person, work.reason) == (["a.txt"], ["b.txt"], leftovers.KILLED)
    carried = leftovers.begin(repo, "build", "other-cli")  # another CLI carries it on: no session to resume
    assert carried.paths == ["a.txt"] and carried.session is None


def test_the_persons_edit_stays_named_once_the_agent_carries_on(repo):
    leftovers.begin(repo, "build", "scripted")
    agent_writes(repo, **{"a.txt": "agent\n"})
    (repo / "a.txt").write_text("agent, and the person\n")
    assert leftovers.begin(repo, "build", "scripted").edited == ["a.txt"]  # the next run carries it on
    agent_writes(repo, **{"b.txt": "more\n"})  # its snapshots now hold the person's edit too
    work = leftovers.pending(repo)
    assert (work.paths, work.edited) == (["b.txt"], ["a.txt"])


def test_a_carried_on_record_reads_as_running_until_it_stops_again(repo, monkeypatch):
    leftovers.begin(repo, "build", "scripted")
    agent_writes(repo, **{"a.txt": "agent\n"})
    leftovers.stopped(repo, "escalation pending")
    monkeypatch.setattr(leftovers, "_OWNER", "the next run")
    assert leftovers.begin(repo, "build", "scripted").reason == "escalation pending"  # why it was carried on
    monkeypatch.setattr(leftovers, "_OWNER", "a run after the next one was killed")
    assert leftovers.pending(repo).reason == leftovers.KILLED  # not the old reason: that run was killed
