"""``what-if``: re-run a workload with fields changed; sweeps; the largest value that still satisfies a condition."""
from __future__ import annotations

import copy
import json
import sys

import yaml

from . import expr as X
from .combine import canonical
from .errors import GpusizerError, InputError
from .report import quantity


def default_columns(rb) -> list:
    """Attributes declared with headline: true, in declaration order."""
    return [a.name for a in rb.attributes.values() if a.headline]


def _set(doc: dict, dotted: str, value) -> None:
    node = doc
    parts = dotted.split(".")
    for p in parts[:-1]:
        if not isinstance(node.get(p), dict):
            node[p] = {}
        node = node[p]
    node[parts[-1]] = value


def _parse_assign(text: str, flag: str):
    if "=" not in text:
        raise InputError(f"{flag} '{text}' is not KEY=VALUE", help=f"e.g. {flag} batch_size=8")
    key, raw = text.split("=", 1)
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key.strip(), value


def _run(rec, data: dict, label: str):
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    return rec.rulebase.inputs.load(None, rec.rulebase.catalogs, display=label, text=text)


def _values(rec, data, label):
    result = rec.recommend(_run(rec, data, label))
    return result


def changes(old, new) -> list[dict]:
    out = []
    for attr in sorted(set(old.conclusions) | set(new.conclusions)):
        a, b = old.get(attr), new.get(attr)
        if canonical(a) != canonical(b):
            rule = new.explain(attr).get("rule") if attr in new.conclusions else None
            out.append({"attribute": attr, "old": a, "new": b, "rule": rule,
                        "unit": new.rulebase.attributes[attr].unit})
    return out


def _condition(expr_text: str):
    try:
        e = X.parse(expr_text)
    except X.ExprError as exc:
        raise InputError(f"--while: {exc.message}", help=exc.help or "e.g. --while 'ram.system_gb <= 256'") from None

    def holds(result) -> bool:
        def resolve(name):
            return lambda env: result.get(name)
        try:
            return bool(e.bind(resolve)({}))
        except X.ExprError:
            return False
    return holds


def largest(rec, data: dict, field: str, holds, label: str, limit: int = 10**7):
    """Largest positive integer value of ``field`` for which ``holds`` is true (search over the rules)."""
    def ok(n):
        d = copy.deepcopy(data)
        _set(d, field, n)
        try:
            r = _values(rec, d, label)
        except GpusizerError:
            return False, None
        return holds(r), r
    good, first = ok(1)
    if not good:
        return None, first, None
    lo, hi = 1, 2
    while hi <= limit:
        g, _ = ok(hi)
        if not g:
            break
        lo, hi = hi, hi * 2
    else:
        return limit, ok(limit)[1], None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid)[0]:
            lo = mid
        else:
            hi = mid
    return lo, ok(lo)[1], ok(hi)[1]


def cmd_what_if(args, rec) -> int:
    from .yamlsrc import load

    doc = load(args.file)
    base_wl = rec.load(args.file)  # validates the original
    data = copy.deepcopy(doc.data)
    for s in args.set or []:
        key, value = _parse_assign(s, "--set")
        _set(data, key, value)
    label = f"{args.file} (what-if)"
    show = args.show or default_columns(rec.rulebase)
    if args.max:
        if not args.while_:
            raise InputError("--max needs --while CONDITION", help="e.g. --max batch_size --while 'ram.system_gb <= 256'")
        best, at, beyond = largest(rec, data, args.max, _condition(args.while_), label)
        if best is None:
            print(f"no value of {args.max} satisfies: {args.while_} (not even 1)")
            return 1
        print(f"largest {args.max} with {args.while_}: {best}")
        for attr in show:
            line = f"  at {best}: {attr} = {quantity(at.get(attr), at.rulebase.attributes[attr].unit)}"
            if beyond is not None:
                line += f";  at {best + 1}: {quantity(beyond.get(attr), beyond.rulebase.attributes[attr].unit)}"
            print(line)
        for attr in show:
            if attr in at.conclusions:
                step = at.explain(attr)
                print(f"  {attr} is set by {step['rule']}: {step['binding'][0]['summary']}")
        return 0
    if args.sweep:
        key, raw = _parse_assign(args.sweep, "--sweep")
        options = [yaml.safe_load(v) for v in str(raw).split(",")] if not isinstance(raw, list) else raw
        rows = []
        for v in options:
            d = copy.deepcopy(data)
            _set(d, key, v)
            try:
                r = _values(rec, d, label)
                rows.append([str(v)] + [quantity(r.get(a), r.rulebase.attributes[a].unit) for a in show])
            except GpusizerError as exc:
                rows.append([str(v)] + [f"invalid: {exc.message}"] + [""] * (len(show) - 1))
        header = [key] + show
        if args.format == "json":
            sys.stdout.write(json.dumps([dict(zip(header, r)) for r in rows], indent=2, ensure_ascii=False) + "\n")
            return 0
        widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
        for row in [header, ["-" * w for w in widths]] + rows:
            print("  ".join(str(x).ljust(w) for x, w in zip(row, widths)).rstrip())
        return 0
    base = rec.recommend(base_wl)
    new = _values(rec, data, label)
    diff = changes(base, new)
    if args.format == "json":
        sys.stdout.write(json.dumps(diff, indent=2, ensure_ascii=False, default=str) + "\n")
        return 0
    if not diff:
        print("no conclusion changes")
    for ch in diff:
        print(f"{ch['attribute']}: {quantity(ch['old'], ch['unit'])} -> {quantity(ch['new'], ch['unit'])}"
              + (f"  ({ch['rule']})" if ch["rule"] else ""))
    return 0
