"""A JSON config file edited in place: only the text of what changed is touched.

An approval adds one rule to `.gtdrc.json`; the person's formatting (objects on one line, their
indentation, key order, blank lines) is theirs. The file's text is parsed with the position of
every value, the old and new values are compared, and each difference becomes one splice: a member
or array element inserted after the last one in the container's own style (one line or one per
line, the siblings' indentation), a removed element cut out with its comma, a changed scalar
replaced. Everything else stays byte for byte.
"""

from __future__ import annotations

import json
import re
from json.decoder import scanstring
from typing import Any

from gtd.record import field, record

_SPACE = re.compile(r"[ \t\r\n]*")
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null")


@record
class Node:
    """One value of the text: where it starts and ends, and what it holds."""

    start: int
    end: int
    value: Any = None
    members: list[tuple[str, int, "Node"]] = field(default_factory=list)  # object: (key, key's offset, value)
    items: list["Node"] = field(default_factory=list)  # array
    kind: str = "scalar"  # "object" | "array" | "scalar"


def parse(text: str) -> Node:
    """The document's top-level value with positions (the text is valid JSON: json.loads read it)."""
    node, end = _value(text, _skip(text, 0))
    if text[_skip(text, end):].strip():
        raise ValueError("extra data after the JSON value")
    return node


def _skip(text: str, pos: int) -> int:
    return _SPACE.match(text, pos).end()


def _value(text: str, pos: int) -> tuple[Node, int]:
    char = text[pos:pos + 1]
    if char == "{":
        node, pos = Node(pos, pos, {}, kind="object"), _skip(text, pos + 1)
        if text[pos] == "}":
            node.end = pos + 1
            return node, pos + 1
        while True:
            key_at = pos
            key, pos = scanstring(text, pos + 1)
            pos = _skip(text, pos)
            if text[pos] != ":":
                raise ValueError(f"':' expected at {pos}")
            child, pos = _value(text, _skip(text, pos + 1))
            node.members.append((key, key_at, child))
            node.value[key] = child.value
            pos = _skip(text, pos)
            if text[pos] == "}":
                node.end = pos + 1
                return node, pos + 1
            pos = _skip(text, pos + 1)  # past ','
    if char == "[":
        node, pos = Node(pos, pos, [], kind="array"), _skip(text, pos + 1)
        if text[pos] == "]":
            node.end = pos + 1
            return node, pos + 1
        while True:
            child, pos = _value(text, pos)
            node.items.append(child)
            node.value.append(child.value)
            pos = _skip(text, pos)
            if text[pos] == "]":
                node.end = pos + 1
                return node, pos + 1
            pos = _skip(text, pos + 1)
    if char == '"':
        value, end = scanstring(text, pos + 1)
        return Node(pos, end, value), end
    match = _SCALAR.match(text, pos)
    if not match:
        raise ValueError(f"a JSON value expected at {pos}")
    return Node(pos, match.end(), json.loads(match.group())), match.end()


def edit(text: str, new: Any, indent: int = 2) -> str:
    """`text` changed into `new` with the fewest characters touched. The result always reads back as `new`."""
    root = parse(text)
    splices: list[tuple[int, int, str]] = []
    _diff(text, root, new, splices, indent)
    out = text
    for start, end, replacement in sorted(splices, reverse=True):
        out = out[:start] + replacement + out[end:]
    if json.loads(out) != new:
        raise ValueError("the in-place edit did not produce the new value")
    return out


def _line_indent(text: str, pos: int) -> str:
    """The whitespace that starts the line `pos` is on."""
    line_start = text.rfind("\n", 0, pos) + 1
    return _SPACE.match(text, line_start).group().lstrip("\r\n")


def _multiline(text: str, node: Node) -> bool:
    return "\n" in text[node.start:node.end]


def _render(value: Any, text: str, at: int, multiline: bool, indent: int) -> str:
    """A new value written at offset `at`: on one line in a one-line container, else pretty-printed
    with its continuation lines indented from the line it starts on."""
    if not multiline or not isinstance(value, (dict, list)) or not value:
        return json.dumps(value, ensure_ascii=False)
    from gtd.config.files import dump_json

    pad = _line_indent(text, at)
    return dump_json(value, indent=indent).replace("\n", "\n" + pad)


def _diff(text: str, node: Node, new: Any, splices: list, indent: int) -> None:
    if node.value == new and type(node.value) is type(new):
        return
    if node.kind == "object" and isinstance(new, dict):
        _diff_object(text, node, new, splices, indent)
    elif node.kind == "array" and isinstance(new, list):
        _diff_array(text, node, new, splices, indent)
    else:
        splices.append((node.start, node.end, _render(new, text, node.start, _multiline(text, node), indent)))


def _diff_object(text: str, node: Node, new: dict, splices: list, indent: int) -> None:
    last = {key: (key_at, child) for key, key_at, child in node.members}  # JSON's last duplicate wins
    gone = [index for index, (key, _, _) in enumerate(node.members) if key not in new]
    if len(gone) == len(node.members) and gone:
        splices.append((node.start, node.end, _render(new, text, node.start, _multiline(text, node), indent)))
        return
    for index in gone:
        splices.append(_cut(text, node.members, index))
    for key, (_, child) in last.items():
        if key in new:
            _diff(text, child, new[key], splices, indent)
    added = {key: value for key, value in new.items() if key not in last}
    if added:
        entries = [(json.dumps(key, ensure_ascii=False) + ": ", value) for key, value in added.items()]
        _append(text, node, [child for _, _, child in node.members], [m[1] for m in node.members], entries,
                splices, indent)


def _diff_array(text: str, node: Node, new: list, splices: list, indent: int) -> None:
    old = node.value
    if new[:len(old)] == old:
        _append(text, node, node.items, [item.start for item in node.items], [("", v) for v in new[len(old):]],
                splices, indent)
        return
    kept, at = [], 0  # new as old with elements removed (a rule tightened): cut them out
    for index, value in enumerate(old):
        if at < len(new) and new[at] == value:
            kept.append(index)
            at += 1
    if at == len(new) and kept:
        members = [("", item.start, item) for item in node.items]
        for index in range(len(old)):
            if index not in kept:
                splices.append(_cut(text, members, index))
        return
    splices.append((node.start, node.end, _render(new, text, node.start, _multiline(text, node), indent)))


def _cut(text: str, members: list, index: int) -> tuple[int, int, str]:
    """Remove one member (or element) and the comma that joins it to a neighbour."""
    start, child = members[index][1], members[index][2]
    if index + 1 < len(members):
        return start, members[index + 1][1], ""
    prev_end = members[index - 1][2].end
    return prev_end, child.end, ""


def _append(text: str, node: Node, children: list[Node], starts: list[int], entries: list[tuple[str, Any]],
            splices: list, indent: int) -> None:
    """New members/elements after the last one, in the container's style."""
    if not children:  # an empty container: its members on one line, or one per line at the top level
        top = node.start == _skip(text, 0)
        if top:
            body = ",\n".join(" " * indent + prefix + _pretty(value, indent, " " * indent) for prefix, value in entries)
            splices.append((node.start, node.end, text[node.start] + "\n" + body + "\n" + text[node.end - 1]))
        else:
            body = ", ".join(prefix + json.dumps(value, ensure_ascii=False) for prefix, value in entries)
            splices.append((node.start, node.end, text[node.start] + body + text[node.end - 1]))
        return
    multiline = "\n" in text[node.start:starts[0]]  # one member per line
    if multiline:
        pad = _line_indent(text, starts[-1])
        rendered = "".join(",\n" + pad + prefix + _pretty(value, indent, pad) for prefix, value in entries)
    else:
        rendered = "".join(", " + prefix + json.dumps(value, ensure_ascii=False) for prefix, value in entries)
    splices.append((children[-1].end, children[-1].end, rendered))


def _pretty(value: Any, indent: int, pad: str) -> str:
    if not isinstance(value, (dict, list)) or not value:
        return json.dumps(value, ensure_ascii=False)
    from gtd.config.files import dump_json

    return dump_json(value, indent=indent).replace("\n", "\n" + pad)
