"""Run workloads through a compiled rulebase, stratum by stratum."""
from __future__ import annotations

import itertools
import math
import threading
from dataclasses import dataclass
from typing import Any

from . import expr as X
from .combine import Combined, ConflictError, Contribution, canonical, combine
from .compiler import fprop
from .durable_adapter import Host
from .errors import RuleError
from .model import Attribute, Rule, is_number
from .rulebase import Rulebase
from .workload import Workload


@dataclass
class Firing:
    index: int
    rule: str
    stratum: int
    attrs: dict  # attribute -> value read
    items: dict  # alias -> (catalog, id)
    lets: dict
    outputs: dict  # attribute -> value contributed


@dataclass
class Conclusion:
    attribute: str
    value: Any
    contributions: list  # Contribution
    combined: Combined


@dataclass
class Outcome:
    """Everything one run produced; ``result.Result`` wraps it for users."""

    workload: Workload
    values: dict  # attribute -> final value (inputs included)
    inputs: dict  # attribute -> InputValue
    conclusions: dict  # attribute -> Conclusion
    firings: list  # Firing


def _scalar(v) -> bool:
    return isinstance(v, (str, int, float, bool))


class Engine:
    """One durable-rules Host per rulebase; each workload is an isolated session."""

    def __init__(self, rulebase: Rulebase, isolated: bool = False):
        """``isolated``: every rule gets a marker of its own, so one rule can run alone (rule tests)."""
        self.rb = rulebase
        self._lock = threading.Lock()
        self._sids = itertools.count(1)
        self._active: _Run | None = None
        self._solo = {rid: n for n, rid in enumerate(rulebase.rules, start=1)} if isolated else {}
        rules = {}
        for rid, r in rulebase.rules.items():
            for k, variant in enumerate(r.variants):
                name = rid if k == 0 else f"{rid}#{k + 1}"
                rules[name] = variant.durable(self._solo.get(rid, r.stratum), self._action(r, variant))
        self.host = Host(rules)
        joined = sorted({cat for r in rulebase.rules.values() for cat in r.items.values()}
                        | {cat for r in rulebase.rules.values() for cat in _negated_items(r.when)})
        self._catalog_facts = []
        for name in joined:
            for item in rulebase.catalogs[name].items.values():
                fact = {"t": "i", "c": name, fprop("id"): item.id, fprop("name"): item.name}
                fact.update({fprop(k): v for k, v in item.fields.items() if v is not None})
                self._catalog_facts.append(fact)
        # attributes are final at the end of the stratum of their last writer
        self._final_at: dict[int, list] = {}
        for name, writers in rulebase.writers.items():
            level = max(rulebase.rules[w].stratum for w in writers)
            self._final_at.setdefault(level, []).append(name)
        for names in self._final_at.values():
            names.sort()
        written = set(rulebase.writers)
        self._never_written = sorted(n for n, a in rulebase.attributes.items()
                                     if not a.input and n not in written)

    # -- actions -------------------------------------------------------------
    def _action(self, rule: Rule, compiled):
        catalogs = self.rb.catalogs

        def run(c):
            current = self._active
            try:
                message = c._m
                attrs, items = {}, {}
                for b in compiled.bindings:
                    if b.kind == "attr":
                        attrs[b.name] = current.values[b.name]
                    else:
                        fact = message[b.alias]
                        items[b.name] = catalogs[b.catalog].items[fact[fprop("id")]]
                env = {"attrs": attrs, "items": items, "lets": {}}
                for name, getter in compiled.lets:
                    env["lets"][name] = getter(env)
                outputs = {}
                for attr, getter in compiled.getters.items():
                    if isinstance(getter, dict):
                        outputs[attr] = {k: g(env) for k, g in getter.items()}
                    else:
                        outputs[attr] = getter(env)
                current.record(rule, attrs, {a: (i.catalog, i.id) for a, i in items.items()},
                               env["lets"], outputs)
            except X.ExprError as exc:
                current.errors.append(_rule_error(rule, f"while firing: {exc.message}", exc.help))
            except Exception as exc:  # noqa: BLE001 - turned into a named rule error below
                current.errors.append(_rule_error(rule, f"while firing: {type(exc).__name__}: {exc}"))
        return run

    # -- running ---------------------------------------------------------------
    def run(self, workload: Workload) -> Outcome:
        with self._lock:
            sid = f"w{next(self._sids)}"
            current = _Run(self.rb, workload, sid)
            self._active = current
            try:
                return self._run(current)
            finally:
                self._active = None
                self.host.delete(sid)

    def _run(self, cur: "_Run") -> Outcome:
        rb = self.rb
        facts = [dict(f, sid=cur.sid) for f in self._catalog_facts]
        for name, attr in rb.attributes.items():
            if attr.input:
                iv = cur.workload.inputs.get(name)
                cur.values_set(name, iv.value if iv else None, iv is not None)
                facts.extend(cur.facts_for(name))
        for name in self._never_written:
            facts.extend(cur.facts_for(name))
        self.host.assert_facts(facts)
        self._check(cur)
        for k in range(1, rb.strata + 1):
            self.host.assert_fact({"sid": cur.sid, "t": "s", "k": k})
            self._check(cur)
            new = []
            for name in self._final_at.get(k, []):
                cur.conclude(name)
                new.extend(cur.facts_for(name))
            self._check(cur)
            self.host.assert_facts(new)
            self._check(cur)
        values = {n: v for n, v in cur.values.items() if cur.present.get(n)}
        return Outcome(workload=cur.workload, values=values, inputs=cur.workload.inputs,
                       conclusions=cur.conclusions, firings=cur.firings)

    def run_rule(self, rule_id: str, given: dict) -> tuple[dict, list]:
        """Fire one rule alone on ``given`` attribute values; its combined conclusions and firings."""
        if not self._solo:
            raise RuntimeError("run_rule needs Engine(rulebase, isolated=True)")
        rule = self.rb.rules[rule_id]
        with self._lock:
            sid = f"t{next(self._sids)}"
            cur = _Run(self.rb, None, sid)
            self._active = cur
            try:
                facts = [dict(f, sid=sid) for f in self._catalog_facts]
                for name in sorted(set(given) | rule.reads):
                    cur.values_set(name, given.get(name), name in given)
                    facts.extend(cur.facts_for(name))
                self.host.assert_facts(facts)
                self.host.assert_fact({"sid": sid, "t": "s", "k": self._solo[rule_id]})
                self._check(cur)
                for name in list(cur.pending):
                    cur.conclude(name)
                self._check(cur)
                return {n: c.value for n, c in sorted(cur.conclusions.items())}, cur.firings
            finally:
                self._active = None
                self.host.delete(sid)

    def _check(self, cur: "_Run") -> None:
        if cur.errors:
            raise cur.errors[0]
        swallowed = self.host.exception(cur.sid)
        if swallowed:
            raise RuleError(f"a rule action failed inside durable-rules: {swallowed.splitlines()[0][:300]}",
                            help="this is a bug in gpusizer's engine; please report it with the workload")


def _negated_items(when):
    for cond in when:
        inner = cond.get("not") if isinstance(cond, dict) else None
        if isinstance(inner, dict) and "item" in inner:
            yield inner["item"]


def _rule_error(rule: Rule, message: str, help: str | None = None) -> RuleError:
    line = rule.doc.where(("then",))[0]
    return RuleError(f"rule '{rule.id}' failed {message}", file=rule.file, line=line, col=1,
                     snippet=rule.doc.line_text(line),
                     help=help or "fix the rule's expression or guard it with a condition in 'when'")


class _Run:
    def __init__(self, rb: Rulebase, workload: Workload, sid: str):
        self.rb = rb
        self.workload = workload
        self.sid = sid
        self.values: dict = {}
        self.present: dict = {}
        self.firings: list[Firing] = []
        self.pending: dict[str, list] = {}
        self.conclusions: dict[str, Conclusion] = {}
        self.errors: list = []
        self.seen: set = set()

    def values_set(self, name, value, present):
        self.values[name] = value
        self.present[name] = present

    def record(self, rule: Rule, attrs, items, lets, outputs):
        # two alternatives of one rule ('any') can both hold: the same conclusion from the same
        # items is one firing, not two (a 'sum' attribute would otherwise count it twice)
        key = (rule.id, canonical(items), canonical(outputs))
        if key in self.seen:
            return
        self.seen.add(key)
        idx = len(self.firings)
        self.firings.append(Firing(idx, rule.id, rule.stratum, attrs, items, lets, outputs))
        for attr, value in outputs.items():
            self.pending.setdefault(attr, []).append(Contribution(rule.id, idx, value, rule.priority))

    def conclude(self, name: str) -> None:
        attr = self.rb.attributes[name]
        contribs = self.pending.pop(name, [])
        if not contribs:
            self.values_set(name, None, False)
            return
        # firing order inside a stratum is durable's business; ours is deterministic
        contribs.sort(key=lambda c: (c.rule, canonical(self.firings[c.firing].items), canonical(c.value)))
        for c in contribs:
            c.value = self._coerce(attr, c)
        try:
            combined = combine(attr, contribs)
        except ConflictError as exc:
            rule = self.rb.rules[contribs[0].rule]
            self.errors.append(_rule_error(rule, str(exc), "give one rule a condition that excludes the "
                                           "other case, or declare a combine policy for the attribute"))
            self.values_set(name, None, False)
            return
        value = combined.value
        if attr.type == "integer" and isinstance(value, float) and value.is_integer():
            value = int(value)
        self.values_set(name, value, True)
        self.conclusions[name] = Conclusion(name, value, contribs, combined)

    def _coerce(self, attr: Attribute, c: Contribution):
        v = c.value
        t = attr.type
        ok = True
        if t in ("number", "integer"):
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            if ok and t == "integer":
                if isinstance(v, float) and not v.is_integer():
                    ok = False
                else:
                    v = int(v)
        elif t == "string":
            ok = isinstance(v, str)
        elif t == "boolean":
            ok = isinstance(v, bool)
        elif t == "record":
            ok = isinstance(v, dict)
            if ok and attr.key:
                k = v.get(attr.key)
                ok = is_number(k)
            if ok and attr.first_by:
                ok = isinstance(v.get(attr.first_by), (int, float))  # bool is an int
        elif t == "list":
            ok = True
        if ok and attr.enum and _scalar(v) and v not in attr.enum:
            ok = False
        if not ok:
            rule = self.rb.rules[c.rule]
            raise _rule_error(rule, f"it concluded {canonical(v)} for '{attr.name}', which must be "
                                    f"{'one of ' + ', '.join(map(str, attr.enum)) if attr.enum else 'a ' + t}")
        return v

    def facts_for(self, name: str) -> list:
        attr = self.rb.attributes[name]
        if not self.present.get(name):
            return [{"sid": self.sid, "t": "a", "n": name, "ok": 0}]
        value = self.values[name]
        fact = {"sid": self.sid, "t": "a", "n": name, "ok": 1}
        if _scalar(value):
            fact["v"] = value
            if is_number(value):
                fact["vn"] = value
        facts = [fact]
        if attr.type == "list" or isinstance(value, list):
            fact["len"] = len(value)  # what 'empty' tests
            seen = set()
            for member in value:
                if _scalar(member) and member not in seen:
                    seen.add(member)
                    facts.append({"sid": self.sid, "t": "m", "n": name, "v": member})
        return facts
