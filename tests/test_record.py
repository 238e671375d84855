"""gtd.record: the dataclass semantics the sandbox's records rely on (construction, defaults, equality,
hashing, immutability, replace), checked against `dataclasses` itself on the same class bodies."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gtd.record import FrozenInstanceError, field, record, replace


def _pair(frozen: bool):
    """The same class body made a record (gtd.record.field) and a dataclass (dataclasses.field)."""

    def body(field):
        class Point:
            x: int
            y: int = 0
            tags: list[str] = field(default_factory=list)
            note: str | None = field(default=None, compare=False, repr=False)
        return Point

    return record(frozen=frozen)(body(field)), dataclasses.dataclass(frozen=frozen)(body(dataclasses.field))


@pytest.mark.parametrize("frozen", [False, True])
def test_construction_defaults_equality_and_repr_match_dataclasses(frozen):
    Rec, Dc = _pair(frozen)
    for args, kwargs in [((1,), {}), ((1, 2), {}), ((), {"x": 1, "tags": ["a"]}), ((1,), {"note": "n", "y": 5})]:
        r, d = Rec(*args, **kwargs), Dc(*args, **kwargs)
        assert [getattr(r, n) for n in ("x", "y", "tags", "note")] == [getattr(d, n) for n in ("x", "y", "tags", "note")]
        assert repr(r).split(".")[-1] == repr(d).split(".")[-1]
    assert Rec(1).tags is not Rec(1).tags  # a fresh default per instance
    assert Rec(1, note="a") == Rec(1, note="b")  # compare=False
    assert Rec(1) != Rec(2) and Rec(1) != Dc(1)  # only the same class compares equal
    for bad_args, bad_kwargs in [((), {}), ((1, 2, [], None, 5), {}), ((1,), {"x": 2}), ((1,), {"z": 3})]:
        with pytest.raises(TypeError):
            Rec(*bad_args, **bad_kwargs)
        with pytest.raises(TypeError):
            Dc(*bad_args, **bad_kwargs)


def test_frozen_records_refuse_assignment_and_hash_by_value_mutable_ones_are_unhashable():
    Frozen, _ = _pair(True)
    Mutable, _ = _pair(False)
    p = Frozen(1, tags=())
    with pytest.raises(FrozenInstanceError):
        p.x = 2
    with pytest.raises(AttributeError):
        del p.y
    assert p.x == 1 and hash(p) == hash(Frozen(1, tags=(), note="other"))
    assert {p, Frozen(1, tags=())} == {p}
    m = Mutable(1)
    m.x = 3
    assert m.x == 3
    with pytest.raises(TypeError):
        hash(m)


def test_replace_builds_a_new_validated_record():
    Frozen, _ = _pair(True)
    p = Frozen(1, 2, tags=("a",))
    q = replace(p, y=7)
    assert (q.x, q.y, q.tags, p.y) == (1, 7, ("a",), 2)
    with pytest.raises(TypeError):
        replace(p, z=1)


def test_a_field_without_default_after_one_with_a_default_or_a_mutable_default_is_refused():
    with pytest.raises(TypeError):
        @record
        class Bad:
            a: int = 0
            b: int
    with pytest.raises(ValueError):
        @record
        class Shared:
            a: list = []  # noqa: RUF012 - the mistake under test


def test_the_sandbox_policy_is_a_frozen_record_replace_keeps_the_rest():
    from gtd.config.levels import Level
    from gtd.sandbox.policy.sandbox_policy import SandboxPolicy

    policy = SandboxPolicy(level=Level.READONLY, workspace=Path("/w"), writable=(), protected=(), deny_read=(),
                           allow_domains=(), deny_domains=(), model_hosts=(), env_passthrough=())
    with pytest.raises(FrozenInstanceError):
        policy.writable = (Path("/"),)  # type: ignore[misc]
    wider = replace(policy, allow_domains=("example.com",))
    assert wider.allow_domains == ("example.com",) and wider.workspace == Path("/w") and policy.allow_domains == ()
    assert wider.home == Path.home() and wider.limits == policy.limits


def test_every_module_with_records_keeps_its_annotations_in_the_class_dict():
    """gtd.record reads a class's fields from `__annotations__` in its own dict, which `from __future__ import
    annotations` keeps there on every Python gtd supports (without it, Python 3.14 computes annotations lazily
    and a record would silently have no fields)."""
    package = Path(__file__).resolve().parent.parent / "gtd"
    missing = [str(path.relative_to(package)) for path in sorted(package.rglob("*.py"))
               if "@record" in (text := path.read_text(encoding="utf-8")) and "from __future__ import annotations" not in text]
    assert missing == []
    assert len([p for p in package.rglob("*.py") if "@record" in p.read_text(encoding="utf-8")]) > 10
