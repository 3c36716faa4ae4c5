"""A workload's YAML text with one key set or removed, the rest of the text (comments, order,
flow or block style) kept.

The page's form changes one key at a time. The edit is made in the text, at the position the
parser reports, and then checked: the edited text must parse to exactly the workload with that
key changed. Where no edit in place passes the check (an unusual layout), the whole workload is
written anew from its data, which loses comments but never the meaning.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from ..errors import InputError
from ..load.yamlsrc import Doc, parse

_PLAIN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/+-]*$")


def scalar_text(value: Any) -> str:
    """A value as YAML writes it on one line: plain where that reads back the same, else quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(scalar_text(v) for v in value) + "]"
    text = str(value)
    if _PLAIN.match(text):
        try:
            if parse(f"k: {text}\n", "<value>", "workload").data == {"k": text}:
                return text
        except InputError:
            pass
    return json.dumps(text, ensure_ascii=False)


def _expected(data: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(data)
    node = out
    for p in path[:-1]:
        if not isinstance(node.get(p), dict):
            if value is None:
                return out
            node[p] = {}
        node = node[p]
    if value is None:
        node.pop(path[-1], None)
        if not node and len(path) > 1:  # an emptied section goes too
            parent = out
            for p in path[:-2]:
                parent = parent[p]
            parent.pop(path[-2], None)
    else:
        node[path[-1]] = value
    return out


def _offset(lines: list[str], line: int, col: int) -> int:
    return sum(len(x) for x in lines[: line - 1]) + col - 1


def _scalar_ends(text: str, start: int) -> list[int]:
    """Where a one-line scalar starting at ``start`` may end: quoted, flow or block."""
    eol = text.find("\n", start)
    eol = len(text) if eol < 0 else eol
    ch = text[start] if start < len(text) else ""
    if ch in ("'", '"'):
        close = text.find(ch, start + 1)
        while ch == '"' and close > 0 and text[close - 1] == "\\":
            close = text.find(ch, close + 1)
        return [close + 1] if 0 < close <= eol else []
    ends = []
    flow = re.compile(r"[,}\]]").search(text, start, eol)
    if flow:
        ends.append(flow.start())
    comment = re.compile(r"\s#").search(text, start, eol)
    block_end = comment.start() if comment else eol
    ends.append(len(text[start:block_end].rstrip()) + start)
    return ends


def _candidates(doc: Doc, path: tuple[str, ...], value: Any) -> list[str]:
    text = doc.text
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    new = None if value is None else scalar_text(value)
    if path in doc.positions:  # the key is there
        vline, vcol = doc.positions[path]
        kline, kcol = doc.key_positions.get(path, (vline, vcol))
        start = _offset(lines, vline, vcol)
        key_at = _offset(lines, kline, kcol)
        for end in _scalar_ends(text, start):
            if new is not None:
                out.append(text[:start] + new + text[end:])
                continue
            # remove 'key: value' and a comma beside it (flow), or the whole line (block)
            after = text[end:]
            m = re.match(r"\s*,\s*", after)
            if m:
                out.append(text[:key_at] + after[m.end() :])
            before = text[:key_at]
            m2 = re.search(r",\s*$", before)
            if m2:
                out.append(before[: m2.start()] + after)
            line_start = text.rfind("\n", 0, key_at) + 1
            line_end = text.find("\n", end)
            out.append(text[:line_start] + (text[line_end + 1 :] if line_end >= 0 else ""))
        if value is None and len(path) > 1:  # the section emptied: remove it whole
            pline, pcol = doc.key_positions.get(path[:-1], (None, None))
            if pline is not None and pcol is not None:
                sstart = _offset(lines, pline, pcol)
                line_start = text.rfind("\n", 0, sstart) + 1
                section = doc.positions.get(path[:-1], (pline, pcol))
                bstart = _offset(lines, *section)
                if text[bstart : bstart + 1] == "{":
                    close = text.find("}", bstart)
                    line_end = text.find("\n", close)
                    out.append(text[:line_start] + (text[line_end + 1 :] if line_end >= 0 else ""))
                else:
                    last = text.find("\n", start)
                    out.append(text[:line_start] + (text[last + 1 :] if last >= 0 else ""))
        return out
    if value is None:
        return [text]
    # the key is not there: beside its section's first key, or a new section at the end
    parent = path[:-1]
    if parent and parent in doc.positions:
        pline, pcol = doc.positions[parent]
        pstart = _offset(lines, pline, pcol)
        if text[pstart : pstart + 1] == "{":
            inner = text[pstart + 1 :].lstrip()
            sep = "" if inner.startswith("}") else ", "
            out.append(text[: pstart + 1] + f"{path[-1]}: {new}{sep}" + text[pstart + 1 :].lstrip(" "))
        else:
            indent = " " * (pcol - 1)
            line_start = text.rfind("\n", 0, pstart) + 1
            out.append(text[:line_start] + f"{indent}{path[-1]}: {new}\n" + text[line_start:])
    body = text if text.endswith("\n") or not text else text + "\n"
    if not parent:
        out.append(body + f"{path[-1]}: {new}\n")
    elif len(parent) == 1 and parent not in doc.positions:
        out.append(body + f"{parent[0]}:\n  {path[-1]}: {new}\n")
    return out


def set_key(text: str, path: tuple[str, ...], value: Any, name: str) -> str:
    """``text`` with the key at ``path`` set to ``value`` (None: removed); an InputError if the text
    is not a workload mapping to begin with.
    """
    doc = parse(text, name, "workload")
    if doc.data is None:
        doc.data = {}
    if not isinstance(doc.data, dict):
        raise InputError(
            "the workload is not a mapping of keys to values", file=name, line=1, col=1, help="fix it first"
        )
    want = _expected(doc.data, path, value)
    if want == doc.data:
        return text
    for candidate in _candidates(doc, path, value):
        try:
            got = parse(candidate, name, "workload").data
        except InputError:
            continue
        if got == want or (got is None and want == {}):
            return candidate
    import yaml

    return yaml.safe_dump(want, sort_keys=False, allow_unicode=True)
