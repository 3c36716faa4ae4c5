"""The durable-rules backend: the only module that imports durable-rules or speaks its dialect.

Each rule's conditions become durable-rules patterns wherever durable-rules means what the
language means (``lang.semantics``); every other test is *residual*: it is checked here, in
Python, by the one evaluator, on each match the network reports. So nothing a rule file can
say reaches one of durable-rules' limits or quirks:

* a test goes into the network only when its operand's kind is the kind of the value tested
  (durable-rules finds ``true == 1``, ``"5" == 5`` and ``"a" > 3``), ordering tests read ``vn``,
  which only numbers carry;
* a ``ref`` goes in only when it names one value compared for (in)equality; a number computed
  from another fact (``{ref: x.size_gb * 1073741824}``) stays residual, because durable-rules'
  evaluation of such operands in a join (``reduceExpressionSequence``) segfaulted for some layouts of
  the network and not others (a missing property makes it fail with error 311, a division by zero
  kills the process); and a ref never goes into an ordering test (gt, gte, lt, lte) against
  another fact, which crashes durable-rules depending on the other rules of its ruleset
  (jruizgit/rules#381);
* a join that durable-rules cannot hold exactly (a test on an item that stays residual, or a
  residual condition that reads a joined item) is matched in Python altogether: durable-rules
  matches the rule's attribute conditions, and ``semantics.matches`` binds the items, one at a
  time in the rule's order. Left in the network, such a join made durable-rules report every
  combination of items (each an action, a JSON frame decoded in Python) for Python to reject:
  some 3,000 per workload for the GPU x platform rules, five times the time of everything else;
* a rule that joins one catalog twice, or joins it and negates a join over it, has its joins
  matched in Python too: durable-rules never matches one fact to two patterns of a rule, so it
  would not bind one item to two aliases, and its ``$not`` would overlook the bound item;
* ``in`` lists longer than ``IN_LIST_MAX`` stay residual (a node with 511 successors makes
  durable-rules loop forever), and so does anything past 16 patterns in one rule
  (``MAX_MESSAGE_FRAMES``); a shorter one (an ``$or``) goes after the pattern's other tests, since
  after an ``$or`` that held durable-rules passed facts that failed a later reference test
  (``_ors_last``);
* rules are spread over several rulesets (*shards*), none with more than ``SHARD_RULES`` rules
  or ``SHARD_NAMES`` attribute names, so that no node of a network has more successors than
  durable-rules' fixed tables hold (``NEXT_LIST_LENGTH 128``, ``BETA_LIST_LENGTH 256``,
  ``NEXT_BUCKET_LENGTH 512`` in its ``rules.h``).

Facts (each carries the session's ``sid`` and an ``id`` of its own, the n-th of ``fact_ids``; no other
property name is ``id`` or ``sid``):

* attribute value ``{t: "a", n: name, ok: 1, v: value}`` plus ``vn: value`` for a number, and
  ``len: count`` for a list; an attribute known to have no value is ``{t: "a", n: name, ok: 0}``;
* list member ``{t: "m", n: name, v: member}``, one per distinct scalar member, asserted only into a ruleset
  with a pattern that tests the list's members;
* catalog item ``{t: "i", c: catalog, f_<field>: value, ...}`` (absent fields left out, and only the fields the
  ruleset's patterns read); a catalog that every pattern of a ruleset tests for equality (to a literal or an
  attribute's value) has only the items those values allow asserted, at the step of each rule (``_Keyed``),
  the others every item, when the ruleset's first step comes;
* step marker ``{t: "s", k: step}``: a rule's patterns include the marker of its step, so it
  matches only once everything it reads is final;
* closing fact ``{t: "x"}``: a rule of every ruleset fires on it before the session's state is
  deleted (durable-rules crashes deleting a state in which no rule has fired).

Lessons from running durable-rules 2.0.28, kept here: one Host per compiled rulebase and one
``sid`` per workload; a Host's own dispatch threads race the asserting thread (see
``_quiet_host``), so they are not started; its Host runs an action through a closure and content
objects and writes the session state back after it, and swallows an action's exception into that state,
so facts are asserted and actions run here, on its C engine (``DurableCompiled.send``), and a failing
action raises; a fact no rule matches is
not stored, so a sink rule matches every fact and never fires; its JSON reader rejects a number
with an exponent but no decimal point (Python writes 1e-05 that way) and a rejected fact can
crash the process later, so such floats are moved by one ulp (values are read from Python, never
from facts, so only matching sees the nudge). durable-rules finds a session's state, and a fact in it, by a
32-bit hash of its id and compares nothing else: two open sessions whose ids hash alike would share a state,
and a fact whose id hashes like another's of its session is refused as asserted twice (with the ids durable
makes from a fact's content, about one run in ten thousand), so sessions skip ids that hash like an open
one's and facts take ids whose hashes all differ.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import hashlib
import itertools
import json
import math
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import EngineUnavailable, RuleBug
from ..lang import expr as X
from ..lang import semantics as S
from ..lang.ir import ORDERING, AttrCond, Attribute, FieldCond, Item, ItemCond, Not, Ref, Simple, Test
from ..plan.resolve import PlannedRule, Variant
from ..plan.rulebase import Rulebase
from .base import Match

try:
    from durable import engine as _durable
except ImportError as exc:  # pragma: no cover - depends on the interpreter
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

IN_LIST_MAX = 32  # longer 'in' lists are checked in Python
MAX_PATTERNS = 15  # durable-rules matches at most 16 facts per rule (MAX_MESSAGE_FRAMES); one is the marker
MAX_TESTS = 48  # tests in one pattern (durable-rules fails near 64 sibling tests)
SHARD_RULES = 120  # durable rules in one ruleset (< BETA_LIST_LENGTH, < NEXT_LIST_LENGTH)
SHARD_NAMES = 300  # attribute names one ruleset tests (< NEXT_BUCKET_LENGTH)
SHARD_KEY_PATTERNS = 40  # patterns on one kind of fact in a ruleset (< MAX_STACK_SIZE 64 in events.c)
SHARD_FIELDS = 200  # catalog fields a ruleset's item facts carry (< MAX_OBJECT_PROPERTIES 255 in state.h)
MAX_TEXT = 4096  # longer text goes into facts as a digest (durable-rules fails on 16 MiB properties)
_SAFE_INT = 2**53
_CMP = {"gt": "$gt", "gte": "$gte", "lt": "$lt", "lte": "$lte"}
_ARITH = {ast.Add: "$add", ast.Sub: "$sub", ast.Mult: "$mul", ast.Div: "$div"}


def fnv1a32(text: str) -> int:
    """durable-rules' fnv1Hash32 (state.c): the 32-bit FNV-1a hash it finds a session's state and a fact by."""
    h = 0x811C9DC5
    for b in text.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


# durable-rules finds a fact in its session's state by a 32-bit hash of the fact's id, and compares nothing but
# that hash (GET_FIRST, state.c): a fact whose id hashes like another's in the same session is refused as asserted
# already (MessageObservedException). Left to itself it makes the id from the fact's content, so about one run in
# ten thousand met two facts that collide (the 1,047th session of a rulebase, for one). Every fact gpusizer asserts
# carries an id of its own instead, the n-th of a session the n-th of these texts, whose hashes all differ.
_FACT_IDS: list[str] = []
_FACT_ID_HASHES: set[int] = set()
_FACT_IDS_LOCK = threading.Lock()


def fact_ids(n: int) -> list[str]:
    """At least ``n`` fact ids, the same in every process, no two with the same fnv1a32."""
    if len(_FACT_IDS) < n:
        with _FACT_IDS_LOCK:
            k = int(_FACT_IDS[-1]) + 1 if _FACT_IDS else 0  # the next number to try
            while len(_FACT_IDS) < n:
                text = str(k)
                h = fnv1a32(text)
                if h not in _FACT_ID_HASHES:
                    _FACT_ID_HASHES.add(h)
                    _FACT_IDS.append(text)
                k += 1
    return _FACT_IDS


def unavailable() -> str | None:
    """Why durable-rules cannot be used on this interpreter, or None when it can."""
    if _IMPORT_ERROR is None:
        return None
    return f"{type(_IMPORT_ERROR).__name__}: {_IMPORT_ERROR}"


def safe(value: Any) -> Any:
    """Values durable-rules' JSON reader accepts (see the module docstring)."""
    kind = type(value)  # the common exact types first: this runs on every test and fact
    if kind is str and len(value) <= MAX_TEXT:
        return value
    if kind is dict:
        return {k: safe(v) for k, v in value.items()}
    if isinstance(value, bool):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"durable-rules cannot hold the number {value!r}")
        while "e" in repr(value) and "." not in repr(value):  # 1e-05, 5e-324: two steps at most
            value = math.nextafter(value, math.inf)
        return value
    if isinstance(value, int) and abs(value) >= _SAFE_INT:
        return safe(float(value))
    if isinstance(value, str) and len(value) > MAX_TEXT:
        return "\x00long:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()
    if isinstance(value, dict):
        return {k: safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [safe(v) for v in value]
    return value


def _fprop(name: str) -> str:
    return f"f_{name}"


_ID = _fprop("id")  # where an item fact carries its item's id


def _literal_kind(value: Any) -> str | None:
    k = S.kind(value)
    return {"number": "number", "text": "string", "boolean": "boolean"}.get(k or "")


# an attribute's declared type as the kind of value ``_literal_kind`` names (the types an equality can key on)
_KIND_OF_TYPE = {"string": "string", "boolean": "boolean", "number": "number", "integer": "number"}


def _declared_ok(declared: str | None, literal: Any) -> bool:
    """The literal is of the kind the tested value is declared to hold (and short enough to match)."""
    if isinstance(literal, str) and len(literal) > MAX_TEXT:
        return False
    lk = _literal_kind(literal)
    if lk is None or declared is None:
        return False
    if declared in ("number", "integer"):
        return lk == "number"
    if declared == "scalar":  # a text literal would match a number value ("5" == 5 in durable-rules)
        return lk == "number"
    return declared == lk


# -- translating one variant -------------------------------------------------------------------------


# What a pattern on a catalog's items asks of a field it tests for equality: one of these literals, or the
# value of this attribute (a ref). A pattern whose tests give one or more of these matches only the items
# they allow; the others need not be asserted (_Keyed).
Want = tuple[str, str, Any]  # (field, "lit", literals) | (field, "attr", attribute name)


@dataclass
class _Pattern:
    alias: str
    tests: list[dict[str, Any]]
    negated: bool = False
    catalog: str | None = None  # the catalog whose items it matches, if it matches items
    wants: tuple[Want, ...] = ()  # what its equality tests ask (none: any item may match)


@dataclass
class _Plan:
    """One variant as durable patterns plus what stays for Python."""

    patterns: list[_Pattern] = field(default_factory=list)
    item_aliases: dict[str, str] = field(default_factory=dict)  # user alias -> durable alias
    residual: list[Simple] = field(default_factory=list)  # whole conditions checked in Python
    checks: list[tuple[str, FieldCond]] = field(default_factory=list)  # field tests on joined items
    names: set[str] = field(default_factory=set)  # attribute names the patterns test
    catalogs: set[str] = field(default_factory=set)
    catalogs_by_alias: dict[str, str] = field(default_factory=dict)  # user alias -> catalog

    # read when the finished plan is placed in a shard (twice: fits, then add), so taken once
    @functools.cached_property
    def fields_read(self) -> set[str]:
        return _fields_read(self)

    @functools.cached_property
    def pattern_keys(self) -> dict[tuple[str, Any], int]:
        return _pattern_keys(self)


class _Translator:
    """Turns one variant into durable patterns, keeping out what durable-rules would get wrong."""

    def __init__(self, rb: Rulebase) -> None:
        self.attributes = rb.attributes
        self.catalogs = rb.catalogs
        self._complete: dict[tuple[str, str], bool] = {}
        self._kinds: dict[tuple[str, str], str | None] = {}
        self.late: set[str] = set()  # attributes of the variant being translated that carry ref tests

    def complete(self, catalog: str, fieldname: str) -> bool:
        """Every item of the catalog has this field (a ref to it cannot meet a missing property)."""
        k = (catalog, fieldname)
        if k not in self._complete:
            cat = self.catalogs[catalog]
            self._complete[k] = fieldname in ("id", "name") or all(
                it.get(fieldname) is not None for it in cat.items.values()
            )
        return self._complete[k]

    def want(self, t: Test, catalog: str, fieldname: str, translated: dict[str, Any]) -> Want | None:
        """What a translated equality test asks of the items' field, where its fact and its operand compare
        as Python compares them (numbers with numbers, text with text, true and false with themselves).
        """
        kind = self.uniform(catalog, fieldname)
        if kind is None:
            return None
        values: tuple[Any, ...]
        if t.op == "in" and isinstance(t.operand, tuple):
            values = t.operand
        elif t.op == "eq" and not isinstance(t.operand, Ref):
            values = (t.operand,)
        elif t.op == "eq" and isinstance(t.operand, Ref):
            operand = translated.get(_fprop(fieldname))
            if not (isinstance(operand, dict) and len(operand) == 1 and list(operand.values()) == ["v"]):
                return None
            attr = self.attributes.get(X.dotted(t.operand.expr.tree.body) or "")
            declared = _KIND_OF_TYPE.get(attr.type) if attr is not None else None
            return (fieldname, "attr", attr.name) if attr is not None and declared == kind else None
        else:
            return None
        if not values or any(_literal_kind(v) != kind for v in values):
            return None
        return (fieldname, "lit", tuple(S.same_key(safe(v)) for v in values))

    def uniform(self, catalog: str, fieldname: str) -> str | None:
        """The one kind (string, number, boolean) of every value the catalog's items give the field, or None. An
        item without the field fails an equality test on it (its fact lacks the property), so it is not counted.
        """
        k = (catalog, fieldname)
        if k not in self._kinds:
            items = self.catalogs[catalog].items.values()
            kinds = {_literal_kind(v) for v in (_field(it, fieldname) for it in items) if v is not None}
            self._kinds[k] = kinds.pop() if len(kinds) == 1 and None not in kinds else None
        return self._kinds[k]

    def field_type(self, catalog: str, fieldname: str) -> str | None:
        if fieldname in ("id", "name"):
            return "string"
        f = self.catalogs[catalog].fields.get(fieldname)
        return f.type if f else None

    # refs ------------------------------------------------------------------------------------
    def ref(self, ref: Ref, plan: _Plan, attr_alias: Mapping[str, str], want: str) -> Any | None:
        """The durable operand for a ref, or None when it must stay residual. ``want`` is the kind
        the operand must have: 'number', or the declared type of the tested value for eq/ne.
        """
        node = ref.expr.tree.body
        single = isinstance(node, (ast.Name, ast.Attribute))
        if single and want != "number":
            dotted = X.dotted(node)  # not the source: an expanded ref (a let read) is written otherwise
            return None if dotted is None or dotted in X.WORDS else self._name(dotted, plan, attr_alias, want)
        return self._arith(node, plan, attr_alias) if want == "number" else None

    def _name(self, dotted: str, plan: _Plan, attr_alias: Mapping[str, str], want: str) -> Any | None:
        head, _, rest = dotted.partition(".")
        if head in plan.item_aliases:
            catalog = self._catalog_of(plan, head)
            if not self.complete(catalog, rest):
                return None
            kind = self.field_type(catalog, rest)
            if kind is None or not _same_kind(kind, want):
                return None
            return {plan.item_aliases[head]: _fprop(rest)}
        attr = self.attributes.get(dotted)
        if attr is None or dotted not in attr_alias or dotted in self.late or attr.type in ("list", "record"):
            return None
        if not _same_kind(attr.type, want):
            return None
        return {attr_alias[dotted]: "vn" if want == "number" else "v"}

    def _arith(self, node: ast.AST, plan: _Plan, attr_alias: Mapping[str, str]) -> Any | None:
        if isinstance(node, ast.Constant) and S.is_number(node.value):
            return node.value
        if (
            isinstance(node, ast.UnaryOp)
            and isinstance(node.op, ast.USub)
            and isinstance(node.operand, ast.Constant)
            and isinstance(node.operand.value, (int, float))
            and S.is_number(node.operand.value)
        ):
            return -node.operand.value
        if isinstance(node, (ast.Name, ast.Attribute)):
            # a number read from another fact stays residual: durable-rules evaluating such an
            # operand in a join (reduceExpressionSequence) crashed the process for some layouts of
            # the network (a shard's rules, not the rule itself, decided whether it did)
            return None
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            if isinstance(node.op, ast.Div) and not (
                isinstance(node.right, ast.Constant) and S.is_number(node.right.value) and node.right.value != 0
            ):
                return None  # a divisor that might be zero stays in Python
            left = self._arith(node.left, plan, attr_alias)
            right = self._arith(node.right, plan, attr_alias)
            if left is None or right is None:
                return None
            return {_ARITH[type(node.op)]: {"$l": left, "$r": right}}
        return None

    def _catalog_of(self, plan: _Plan, alias: str) -> str:
        return plan.catalogs_by_alias[alias]

    # tests -----------------------------------------------------------------------------------
    def test(
        self, t: Test, prop: str, declared: str | None, plan: _Plan, attr_alias: Mapping[str, str]
    ) -> dict[str, Any] | None:
        """The durable test for one IR test on property ``prop``, or None when it stays residual."""
        op, operand = t.op, t.operand
        if op == "exists":
            return {"$ex" if operand else "$nex": {prop: 1}}
        if op in ("in", "not_in"):
            values = operand if isinstance(operand, tuple) else ()
            if len(values) > IN_LIST_MAX or not all(_declared_ok(declared, v) for v in values):
                return None
            if op == "in":
                return {"$or": [{prop: safe(v)} for v in values]} if len(values) > 1 else {prop: safe(values[0])}
            return {"$and": [{"$neq": {prop: safe(v)}} for v in values]}
        if op in ORDERING:
            if declared not in ("number", "integer", "scalar"):
                return None
            key = "vn" if prop == "v" else prop
            value = (
                self.ref(operand, plan, attr_alias, "number")
                if isinstance(operand, Ref)
                else (safe(operand) if S.is_number(operand) else None)
            )
            return None if value is None else {_CMP[op]: {key: value}}
        if op in ("eq", "ne"):
            if declared == "scalar" and isinstance(operand, Ref):
                return None
            if isinstance(operand, Ref):
                value = self.ref(operand, plan, attr_alias, declared or "")
            else:
                value = safe(operand) if _declared_ok(declared, operand) else None
            if value is None:
                return None
            return {prop: value} if op == "eq" else {"$neq": {prop: value}}
        return None

    # one variant -------------------------------------------------------------------------------
    def variant(self, v: Variant) -> _Plan:
        plan = _Plan()
        counter = itertools.count(1)
        attr_alias: dict[str, str] = {}
        attr_tests: dict[str, list[dict[str, Any]]] = {}
        # attributes tested against a ref come last (durable-rules resolves a reference only against
        # patterns listed before it), so no ref may read one of them
        with_refs = {
            c.attribute
            for c in v.conditions
            if isinstance(c, AttrCond)
            and any(isinstance(t.operand, Ref) for t in c.tests if t.op not in ("contains", "not_contains"))
        }
        self.late = with_refs
        # attribute patterns first: every required attribute is bound, so refs can read it
        for name in v.required:
            attr_alias[name] = f"a{next(counter)}"
            attr_tests[name] = []
        middle: list[_Pattern] = []
        for cond in v.conditions:
            if isinstance(cond, AttrCond):
                self._attr(cond, plan, attr_alias, attr_tests, middle, counter)
            elif isinstance(cond, ItemCond):
                self._join(cond, plan, attr_alias, middle, counter)
            else:
                self._negation(cond, plan, attr_alias, middle, counter)
        plain = [n for n in v.required if n not in with_refs]
        late = [n for n in v.required if n in with_refs]
        ordered = (
            [_Pattern(attr_alias[n], [{"t": "a"}, {"n": n}, {"ok": 1}, *_ors_last(attr_tests[n])]) for n in plain]
            + middle
            + [_Pattern(attr_alias[n], [{"t": "a"}, {"n": n}, {"ok": 1}, *_ors_last(attr_tests[n])]) for n in late]
        )
        plan.names.update(v.required)
        # past durable-rules' 16 facts per rule, attribute patterns move to Python (presence only)
        if len(ordered) > MAX_PATTERNS:
            keys = {p.alias: {k for t in p.tests for k in _keys(t)} for p in ordered}
            readers = Counter(k for p in ordered for k in keys[p.alias])  # alias -> patterns whose refs read it
            names = {a: n for n, a in attr_alias.items()}
        while len(ordered) > MAX_PATTERNS:
            drop = next((p for p in ordered if p.alias.startswith("a") and not readers[p.alias]), None)
            if drop is None:
                raise _Overflow
            ordered.remove(drop)
            readers.subtract(keys[drop.alias])
            name = names[drop.alias]
            conds = [c for c in v.conditions if isinstance(c, AttrCond) and c.attribute == name]
            plan.residual.extend(conds)
        plan.patterns = ordered
        return plan

    def _attr(
        self,
        cond: AttrCond,
        plan: _Plan,
        attr_alias: dict[str, str],
        attr_tests: dict[str, list[dict[str, Any]]],
        middle: list[_Pattern],
        counter: Iterator[int],
    ) -> None:
        attr = self.attributes[cond.attribute]
        name = attr.name
        rest: list[Test] = []
        for t in cond.tests:
            if t.op in ("contains", "not_contains"):
                member = self._member(t, attr, plan, attr_alias)
                if member is None:
                    rest.append(t)
                    continue
                neg = t.op == "not_contains"
                middle.append(_Pattern(f"m{next(counter)}", [{"t": "m"}, {"n": name}, {"v": member}], neg))
                plan.names.add(name)
                continue
            if t.op == "exists" and t.operand is False:
                middle.append(_Pattern(f"z{next(counter)}", [{"t": "a"}, {"n": name}, {"ok": 0}]))
                plan.names.add(name)
                continue
            if t.op == "exists":
                continue  # the attribute pattern itself requires a value
            if t.op == "empty":
                attr_tests[name].append({"len": 0} if t.operand else {"$gt": {"len": 0}})
                continue
            # an ordering test against another fact crashes durable-rules now and then, depending on
            # the other rules of its ruleset (jruizgit/rules#381): it is checked in Python
            translated = None if _compares_facts(t) else self.test(t, "v", attr.type, plan, attr_alias)
            if translated is None or len(attr_tests[name]) >= MAX_TESTS or name not in attr_alias:
                rest.append(t)
                continue
            attr_tests[name].append(translated)
        if rest:
            plan.residual.append(AttrCond(name, tuple(rest), cond.span))

    def _member(self, t: Test, attr: Attribute, plan: _Plan, attr_alias: Mapping[str, str]) -> Any | None:
        declared = attr.items  # undeclared members may be of any kind: checked in Python
        if declared is None:
            return None
        if isinstance(t.operand, Ref):
            return self.ref(t.operand, plan, attr_alias, declared)
        return safe(t.operand) if _declared_ok(declared, t.operand) else None

    def _join(
        self, cond: ItemCond, plan: _Plan, attr_alias: Mapping[str, str], middle: list[_Pattern], counter: Iterator[int]
    ) -> None:
        alias = f"i{next(counter)}"
        plan.catalogs_by_alias[cond.alias] = cond.catalog
        plan.catalogs.add(cond.catalog)
        tests: list[dict[str, Any]] = [{"t": "i"}, {"c": cond.catalog}]
        wants: list[Want] = []
        for f in cond.where:
            declared = self.field_type(cond.catalog, f.field)
            rest = []
            for t in f.tests:
                # a join test that refers to another item crashes durable-rules now and then
                # (jruizgit/rules#381): such tests are checked in Python
                reads_item = isinstance(t.operand, Ref) and t.operand.reads(plan.catalogs_by_alias)
                translated = (
                    None
                    if reads_item or _compares_facts(t)
                    else self.test(t, _fprop(f.field), declared, plan, attr_alias)
                )
                if translated is None or len(tests) >= MAX_TESTS:
                    rest.append(t)
                else:
                    tests.append(translated)
                    want = self.want(t, cond.catalog, f.field, translated)
                    if want is not None:
                        wants.append(want)
            if rest:
                plan.checks.append((cond.alias, FieldCond(f.field, tuple(rest), f.span)))
        plan.item_aliases[cond.alias] = alias  # refs in later patterns may read it
        middle.append(_Pattern(alias, _ors_last(tests), catalog=cond.catalog, wants=tuple(wants)))

    def _negation(
        self, cond: Not, plan: _Plan, attr_alias: Mapping[str, str], middle: list[_Pattern], counter: Iterator[int]
    ) -> None:
        inner = cond.inner
        if isinstance(inner, ItemCond):
            tests: list[dict[str, Any]] = [{"t": "i"}, {"c": inner.catalog}]
            wants: list[Want] = []
            for f in inner.where:
                for t in f.tests:
                    reads_item = isinstance(t.operand, Ref) and t.operand.reads({*plan.catalogs_by_alias, inner.alias})
                    translated = (
                        None
                        if reads_item
                        else self.test(t, _fprop(f.field), self.field_type(inner.catalog, f.field), plan, attr_alias)
                    )
                    if translated is None:
                        plan.residual.append(cond)
                        return
                    tests.append(translated)
                    want = self.want(t, inner.catalog, f.field, translated)
                    if want is not None:
                        wants.append(want)
            middle.append(
                _Pattern(f"n{next(counter)}", _ors_last(tests), negated=True, catalog=inner.catalog, wants=tuple(wants))
            )
            plan.catalogs.add(inner.catalog)
            return
        attr = self.attributes[inner.attribute]
        ops = {t.op for t in inner.tests}
        if ops <= {"contains", "not_contains"} and len(inner.tests) == 1:
            t = inner.tests[0]
            member = self._member(t, attr, plan, attr_alias)
            if member is not None:
                neg = t.op == "contains"  # not contains = no such member; not not_contains = the member is there
                middle.append(_Pattern(f"m{next(counter)}", [{"t": "m"}, {"n": attr.name}, {"v": member}], neg))
                plan.names.add(attr.name)
                return
        if ops & {"contains", "not_contains", "exists"}:
            plan.residual.append(cond)
            return
        tests = [{"t": "a"}, {"n": attr.name}, {"ok": 1}]
        for t in inner.tests:
            if t.op == "empty":
                tests.append({"len": 0} if t.operand else {"$gt": {"len": 0}})
                continue
            translated = self.test(t, "v", attr.type, plan, attr_alias)
            if translated is None or isinstance(t.operand, Ref):
                plan.residual.append(cond)
                return
            tests.append(translated)
        middle.append(_Pattern(f"n{next(counter)}", _ors_last(tests), negated=True))
        plan.names.add(attr.name)


def _ors_last(tests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A pattern's tests with its '$or' tests (an 'in' list) after the others. After an '$or' that holds,
    durable-rules 2.0.28 passed a fact that failed a later reference test of the pattern now and then (an item
    of label 'small' passed {label: {in: [small, big]}, flag: {ref: b}} with b false, and
    {label: {in: [small, big], ne: {ref: s}}} with s 'small'), where the same tests with the '$or' last held
    exactly; the conformance suite keeps both orders.
    """
    return [t for t in tests if "$or" not in t] + [t for t in tests if "$or" in t]


def _joins_checked_in_python(plan: _Plan) -> bool:
    """Durable-rules would report item combinations that Python then rejects: a join test it cannot
    hold (a ref to another item or a computed number) stayed residual, or a residual condition reads
    a joined item. Each combination durable-rules reports costs an action (a JSON frame of every
    matched fact, decoded in Python), so a join of two catalogs cost hundreds per workload.
    """
    if plan.checks:
        return True
    return any(_reads_items(c, plan.catalogs_by_alias) for c in plan.residual)


def _one_catalog_twice(v: Variant) -> bool:
    """The variant joins a catalog it also joins, or negates a join over, elsewhere. durable-rules
    never matches one fact to two patterns of a rule: it would not bind one item to two aliases,
    and its ``$not`` would overlook the item another pattern bound ("no big thing" would hold for
    the big thing itself). Such joins are matched in Python, whichever way joins go otherwise.
    """
    joined = [c.catalog for c in v.conditions if isinstance(c, ItemCond)]
    negated = [c.inner.catalog for c in v.conditions if isinstance(c, Not) and isinstance(c.inner, ItemCond)]
    return len(set(joined)) < len(joined) or bool(set(joined) & set(negated))


def _reads_items(cond: Simple, aliases: Mapping[str, str]) -> bool:
    """The condition is a join, or reads a joined item's field."""
    return isinstance(cond, ItemCond) or bool(S.aliases_read(cond, frozenset(aliases)))


def _without_joins(translator: _Translator, v: Variant) -> _Plan:
    """The variant's conditions on attributes as durable patterns; its joins, and every condition that
    reads a joined item, checked in Python (``semantics.matches`` binds one item at a time, in the
    rule's order, so a combination is dropped as soon as one of its items fails).
    """
    aliases = dict(v.items)
    joined = [c for c in v.conditions if isinstance(c, ItemCond) or _reads_items(c, aliases)]
    plan = translator.variant(Variant(v.index, tuple(c for c in v.conditions if c not in joined), (), v.required))
    plan.residual.extend(S.scheduled(joined))
    return plan


class _Overflow(Exception):
    """A variant joins more items than durable-rules matches at once: it runs in Python."""


def _compares_facts(t: Test) -> bool:
    """An ordering test whose operand reads another fact (an attribute or an item's field)."""
    return t.op in ORDERING and isinstance(t.operand, Ref) and bool(t.operand.expr.names)


def _same_kind(declared: str, want: str) -> bool:
    numeric = ("number", "integer")
    if want == "number":
        return declared in numeric
    if want in numeric:
        return declared in numeric
    return declared == want and declared in ("string", "boolean")


def _keys(obj: Any) -> Iterator[str]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _keys(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _keys(v)


# -- the compiled rulebase -----------------------------------------------------------------------


@dataclass
class _Rule:
    """One durable rule: a variant of a planned rule, and what Python still checks on its matches."""

    name: str
    planned: PlannedRule
    variant: Variant
    plan: _Plan | None  # None: the whole variant runs in Python
    step: int


@dataclass
class _Shard:
    name: str
    rules: list[_Rule] = field(default_factory=list)
    names: set[str] = field(default_factory=set)
    catalogs: set[str] = field(default_factory=set)
    steps: set[int] = field(default_factory=set)
    keys: dict[tuple[str, Any], int] = field(default_factory=dict)  # fact kind -> patterns testing it
    fields: set[str] = field(default_factory=set)  # catalog field properties (f_<name>) the patterns read
    # the catalogs some pattern matches any item of (asserted whole), and what the patterns of the others ask
    # of their items, by the step of their rule (_Keyed: only the items asked for are asserted, at that step)
    whole: set[str] = field(default_factory=set)
    members: set[str] = field(default_factory=set)  # the lists whose members a pattern tests ({t: m} facts)
    wants: dict[int, list[tuple[str, tuple[Want, ...]]]] = field(default_factory=dict)

    def fits(self, plan: _Plan) -> bool:
        """The variant can join this shard without passing one of durable-rules' fixed limits."""
        if len(self.rules) >= SHARD_RULES or len(self.names | plan.names) > SHARD_NAMES:
            return False
        if len(self.fields | plan.fields_read) > SHARD_FIELDS:
            return False
        return all(self.keys.get(k, 0) + n <= SHARD_KEY_PATTERNS for k, n in plan.pattern_keys.items())

    def add(self, rule: _Rule) -> None:
        assert rule.plan is not None
        self.rules.append(rule)
        self.names |= rule.plan.names
        self.catalogs |= rule.plan.catalogs
        self.steps.add(rule.step)
        for k, n in rule.plan.pattern_keys.items():
            self.keys[k] = self.keys.get(k, 0) + n
        self.fields |= rule.plan.fields_read
        for p in rule.plan.patterns:
            if p.tests[0] == {"t": "m"}:
                self.members.add(p.tests[1]["n"])
            if p.catalog is None:
                continue
            if p.wants:
                self.wants.setdefault(rule.step, []).append((p.catalog, p.wants))
            else:
                self.whole.add(p.catalog)

    def keyed(self) -> set[str]:
        """The catalogs whose items are asserted as the patterns ask for them."""
        return self.catalogs - self.whole


# durable-rules' reduceExpressionSequence (events.c) skips to the end of an '$and' after a test
# that fails by stepping forward *before* it looks: when the failing test is the last reference
# test of a pattern, it steps over the sequence's end marker and reads on through memory until it
# happens upon another, which crashes the process now and then (AddressSanitizer shows the read).
# A last test that always holds (the fact is not the step marker, whose t is "s") means a failing
# test is never the last one.
_ALWAYS = {"$neq": {"t": {"s0": "t"}}}


def _closing_test(pattern: _Pattern, aliases: set[str]) -> list[dict[str, Any]]:
    """The always-true reference test that closes a pattern with reference tests (see _ALWAYS)."""
    return [_ALWAYS] if any(k in aliases for t in pattern.tests for k in _keys(t)) else []


def _fields_read(plan: _Plan) -> set[str]:
    """The catalog field properties a variant's patterns test or refer to (item facts carry only these)."""
    out = set()
    for p in plan.patterns:
        for t in p.tests:
            for token in _tokens(t):
                if token.startswith("f_"):
                    out.add(token)
    return out


def _tokens(obj: Any) -> Iterator[str]:
    """Every key and text value inside a durable-rules test."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _tokens(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _tokens(v)
    elif isinstance(obj, str):
        yield obj


def _pattern_keys(plan: _Plan) -> dict[tuple[str, Any], int]:
    """How many patterns of a variant test each kind of fact (an attribute, a catalog, a list's members).

    durable-rules walks its alpha network with a stack of 64 nodes (``MAX_STACK_SIZE`` in
    ``events.c``); a fact pushes every successor node whose test it passes, so a ruleset in which
    more than 64 patterns could all match one fact fails with error 303. Patterns on different
    kinds of fact part at their first tests (``t``, then ``n`` or ``c``), which a fact passes for
    one branch only; so the patterns on each kind of fact are counted, and kept below that.
    """
    out: dict[tuple[str, Any], int] = {}
    for p in plan.patterns:
        head = {k: v for t in p.tests[:2] for k, v in t.items() if k in ("t", "n", "c") and not isinstance(v, dict)}
        k = (str(head.get("t")), head.get("n", head.get("c")))
        out[k] = out.get(k, 0) + 1
    return out


_hosts = itertools.count(1)


def _nothing(c: Any) -> None:
    """The action of the rules that must exist but never report (the sink, the closing rule)."""


def _quiet_host() -> Any:
    """A durable-rules Host without its two dispatch threads.

    A Host starts threads that call every ruleset's dispatch() and dispatch_timers() every 0.2 s,
    from another thread than the one asserting facts; durable-rules' C engine is not safe for
    that, and the race crashes the process now and then (seen as segmentation faults in
    assert_fact). gpusizer uses neither timers nor queued events, and actions run in the
    asserting thread, so the threads do nothing useful: this Host does not start them, which
    also leaves no threads behind when a rulebase is closed.
    """

    class QuietHost(_durable.Host):  # type: ignore[misc]
        def _run(self) -> None:
            return None

    return QuietHost()


def _readers(shards: list[_Shard]) -> dict[str, list[int]]:
    """Attribute -> the positions of the shards whose rules read it: a value is asserted only there."""
    readers: dict[str, list[int]] = {}
    for i, shard in enumerate(shards):
        for name in shard.names:
            readers.setdefault(name, []).append(i)
    return readers


@dataclass(frozen=True)
class _Layout:
    """A rulebase translated for durable-rules: its rules spread over shards (named when a Host
    registers them), the rules matched in Python by step, and each shard's catalog facts.
    """

    shards: list[_Shard]
    python_rules: dict[int, list[_Rule]]
    catalog_facts: list[list[dict[str, Any]]]  # the items of each shard's catalogs asserted whole
    keyed: list[dict[str, _Keyed]]  # each shard's other catalogs


# per rulebase: (schedule, network_joins) -> its layout. The translation is most of compiling, and
# is the same for every Recommender made from one rulebase.
_LAYOUTS = S.PerObject()


def _layout(rb: Rulebase, schedule: Mapping[str, int], network_joins: bool) -> _Layout:
    key = (tuple(schedule.items()), network_joins)
    return _LAYOUTS.get(rb, key, lambda: _translate(rb, schedule, network_joins))  # type: ignore[no-any-return]


def _translate(rb: Rulebase, schedule: Mapping[str, int], network_joins: bool) -> _Layout:
    python_rules: dict[int, list[_Rule]] = {}
    translator = _Translator(rb)
    shards: list[_Shard] = []
    for rid, planned in rb.rules.items():
        for v in planned.variants:
            name = rid if v.index == 0 else f"{rid}#{v.index + 1}"
            try:
                plan: _Plan | None = translator.variant(v)
                if plan is not None and (
                    _one_catalog_twice(v) or (not network_joins and _joins_checked_in_python(plan))
                ):
                    plan = _without_joins(translator, v)
            except _Overflow:
                plan = None
            rule = _Rule(name, planned, v, plan, schedule[rid])
            if plan is None:
                python_rules.setdefault(rule.step, []).append(rule)
                continue
            shard = shards[-1] if shards else None
            if shard is None or not shard.fits(plan):
                shard = _Shard(str(len(shards) + 1))
                shards.append(shard)
            shard.add(rule)
    catalog_facts = []
    keyed = []
    for shard in shards:
        facts: list[dict[str, Any]] = []
        for cname in sorted(shard.whole):
            facts.extend(_item_fact(shard, cname, item) for item in rb.catalogs[cname].items.values())
        catalog_facts.append(facts)
        keyed.append({c: _Keyed(shard, c, rb.catalogs[c].items.values()) for c in sorted(shard.keyed())})
    return _Layout(shards, python_rules, catalog_facts, keyed)


def _item_fact(shard: _Shard, catalog: str, item: Item) -> dict[str, Any]:
    """A catalog item as a fact of a shard: the fields its patterns read."""
    fact: dict[str, Any] = {"t": "i", "c": catalog, _fprop("id"): item.id}
    if _fprop("name") in shard.fields:
        fact[_fprop("name")] = item.name
    fact.update({_fprop(k): v for k, v in item.fields.items() if v is not None and _fprop(k) in shard.fields})
    return safe(fact)  # type: ignore[no-any-return]


def _field(item: Item, name: str) -> Any:
    return safe(item.get(name))


class _Keyed:
    """The items of a catalog that every pattern of a shard on it tests for equality (an id equal to an
    attribute's value, a kind equal to 'server'): at a step, only the items the step's patterns allow are
    asserted (a pattern cannot match another; the attributes its refs read are final by then), and each item
    once a session. A catalog of 66 activation profiles, joined by the model's family and mode, asserts the
    one or two that can match instead of 66, in every workload.

    An item asserted at a later step matches no rule of an earlier one: that rule's patterns asked for the
    items with their values then, which are the final ones, and it was asserted then if it matched them.
    """

    def __init__(self, shard: _Shard, catalog: str, items: Any) -> None:
        self.facts: list[dict[str, Any]] = []
        self.index: dict[str, dict[Any, list[int]]] = {}
        wanted = {w[0] for _, wants in shard.wants.items() for c, ws in wants if c == catalog for w in ws}
        for i, item in enumerate(items):
            self.facts.append(_item_fact(shard, catalog, item))
            for name in wanted:
                self.index.setdefault(name, {}).setdefault(S.same_key(_field(item, name)), []).append(i)

    def allowed(self, wants: tuple[Want, ...], values: Mapping[str, Any]) -> list[int]:
        """The positions of the items whose fields give what ``wants`` ask, with these attribute values."""
        found: set[int] | None = None
        for name, how, what in wants:
            keys = what if how == "lit" else ((S.same_key(safe(values[what])),) if what in values else ())
            at = self.index[name]
            here = {i for k in keys for i in at.get(k, ())}
            found = here if found is None else found & here
            if not found:
                return []
        return sorted(found or ())


class DurableCompiled:
    """A rulebase compiled into durable-rules rulesets (shards) on one Host."""

    def __init__(self, rb: Rulebase, schedule: Mapping[str, int], *, network_joins: bool = False) -> None:
        if _IMPORT_ERROR is not None:
            raise _import_problem()
        self.rb = rb
        self.lock = threading.Lock()
        self.sids = itertools.count(1)
        self.open_sids: dict[int, str] = {}  # the open sessions' ids, by fnv1a32 (DurableSession)
        # what residual joins whose tests do not read their own item passed, by their operands' values: the
        # same in every run (semantics.matches), so kept for the compiled rulebase's life
        self.memo: dict[Any, Any] = {}
        # a network match's full bindings (item ids), after the checks and residual conditions Python adds, by the
        # rule, the items the network bound and the values those conditions read: for every later session
        self.bound: dict[Any, list[tuple[tuple[str, str], ...]]] = {}
        self.collect: dict[str, list[tuple[_Rule, dict[str, str]]]] = {}
        prefix = f"gpusizer{next(_hosts)}"
        layout = _layout(rb, schedule, network_joins)
        self.python_rules: dict[int, list[_Rule]] = layout.python_rules
        shards = [replace(shard, name=f"{prefix}-{i}") for i, shard in enumerate(layout.shards, start=1)]
        self.shards = shards
        self.readers = _readers(shards)
        self.members = set().union(*(shard.members for shard in shards))  # lists whose members a pattern tests
        self.host = _quiet_host()
        rulesets = self.rulesets()
        try:
            for name, definition in rulesets.items():
                self.host.register_rulesets({name: definition})
        except Exception as exc:  # durable reports bare numeric codes
            raise RuleBug(
                f"durable-rules rejected the compiled rules: {exc}",
                help="this is a bug in gpusizer's durable-rules backend; run with "
                "GPUSIZER_BACKEND=python meanwhile, and report it with the rulebase",
            ) from None
        self.engine = _durable.durable_rules_engine
        # each ruleset's handle in the C engine, and what each of its actions records of a match (send): the rule
        # and its aliases' catalog items, for every rule the ruleset defines (None: those of no gpusizer rule, the
        # sink and closing rules, which record nothing)
        self.handles = {shard.name: self.host.get_ruleset(shard.name)._handle for shard in shards}
        self.actions: dict[str, dict[str, tuple[_Rule, tuple[tuple[str, str], ...]] | None]] = {}
        for shard in shards:
            records = {r.name: (r, tuple(r.plan.item_aliases.items())) for r in shard.rules if r.plan is not None}
            self.actions[shard.name] = {name: records.get(name) for name in rulesets[shard.name]}
        self.catalog_facts = {shard.name: facts for shard, facts in zip(shards, layout.catalog_facts, strict=True)}
        # what Python matches of each rule (a network rule's residual conditions, a Python rule's conditions) as
        # the conditions before its first join (they join no item, and most fail at once: an engine's plan for
        # another engine), then the rest, whose bindings are kept (bound) by the attributes they read
        self.split: dict[int, tuple[tuple[Simple, ...], tuple[Simple, ...]]] = {}
        self.reads: dict[int, tuple[str, ...]] = {}
        for r in [r for shard in shards for r in shard.rules] + [r for rs in self.python_rules.values() for r in rs]:
            ordered = tuple(r.plan.residual) if r.plan is not None else S.scheduled(r.variant.conditions)
            cut = next((i for i, c in enumerate(ordered) if isinstance(c, ItemCond)), len(ordered))
            self.split[id(r)] = (ordered[:cut], ordered[cut:])
            self.reads[id(r)] = S.attributes_read(ordered[cut:], rb.attributes)
        # the rules of each ruleset at each step (a step whose rules the runner all knows is not run there)
        self.rules_at: dict[tuple[str, int], frozenset[str]] = {}
        for shard in shards:
            for step in shard.steps:
                self.rules_at[shard.name, step] = frozenset(r.planned.id for r in shard.rules if r.step == step)
        self.keyed = {shard.name: keyed for shard, keyed in zip(shards, layout.keyed, strict=True)}

    def _definition(self, rule: _Rule) -> dict[str, Any]:
        assert rule.plan is not None
        marker = {"s0": {"$and": [{"t": "s"}, {"k": rule.step}]}}
        names = {"s0"} | {p.alias for p in rule.plan.patterns}
        patterns = [
            {f"{p.alias}$not" if p.negated else p.alias: {"$and": [*safe(p.tests), *_closing_test(p, names)]}}
            for p in rule.plan.patterns
        ]
        # the action durable-rules' Host would run; gpusizer's dispatch (DurableCompiled.send) runs its own
        return {"all": [marker, *patterns], "run": _nothing}

    def send(self, shard: str, facts: dict[str, Any] | list[dict[str, Any]], found: list[Any]) -> None:
        """Assert a fact, or several, into a ruleset and run the actions that starts, in this thread: what
        durable-rules' Host.assert_fact(s) does (engine.py: _handle_function, do_actions, _flush_actions),
        without what no action here uses: a closure and content objects for each action, and the session
        state written back to the engine after each (no action changes it). An action records its match
        (the rule and the ids of its items) in ``found``; one that fails is abandoned and its fault raised.
        """
        engine, handle = self.engine, self.handles[shard]
        text = json.dumps(facts, ensure_ascii=False)
        result = (engine.assert_facts if isinstance(facts, list) else engine.assert_fact)(handle, text)
        if result[0] == 1:
            raise _durable.MessageNotHandledException(facts)
        if result[0] == 2:
            raise _durable.MessageObservedException(facts)
        state = 0 if result[0] == 3 else result[1]
        started = engine.start_action_for_state(handle, state)
        if not started:
            return
        actions = self.actions[shard]
        message = json.loads(started[1])
        while True:
            try:
                ((name, frame),) = message.items()
                action = actions[name]
                if action is not None:
                    rule, aliases = action
                    found.append((rule, {user: frame[dalias][_ID] for user, dalias in aliases}))
            except Exception as exc:
                engine.abandon_action(handle, state)
                raise RuleBug(
                    f"a rule action failed on what durable-rules matched: {type(exc).__name__}: {exc}",
                    help="this is a bug in gpusizer's engine; please report it with the workload",
                ) from None
            following = engine.complete_and_start_action(handle, state)
            if not following:
                return
            message = json.loads(following)

    def open(self) -> DurableSession:
        return DurableSession(self)

    def rulesets(self, action: Callable[[Any], None] | None = None) -> dict[str, dict[str, Any]]:
        """The durable-rules rulesets (one per shard) the rulebase compiles to, by name. With
        ``action``, every rule runs it instead of collecting its matches: the speed benchmark
        replays a session's facts through them (benchmarks/durable_replay.py).
        """
        out: dict[str, dict[str, Any]] = {}
        for shard in self.shards:
            definition: dict[str, Any] = {}
            for r in shard.rules:
                definition[r.name] = self._definition(r) if action is None else dict(self._definition(r), run=action)
            quiet = action or _nothing
            definition["$sink"] = {"all": [{"m": {"$ex": {"t": 1}}}, {"z": {"t": "$never"}}], "run": quiet}
            definition["$close"] = {"all": [{"x": {"t": "x"}}], "run": quiet}
            out[shard.name] = definition
        return out

    def forget(self) -> None:
        """Forget what earlier sessions' joins passed and bound (the memos)."""
        self.memo.clear()
        self.bound.clear()

    def close(self) -> None:
        """Free the rulesets' memory in durable-rules' C engine (dropping the Host does not)."""
        with self.lock:
            engine = _durable.durable_rules_engine
            for shard in self.shards:
                ruleset = self.host.get_ruleset(shard.name)
                engine.delete_ruleset(ruleset._handle)
            self.shards = []
            self.readers = {}
            self.memo.clear()


class DurableSession:
    def __init__(self, compiled: DurableCompiled) -> None:
        self.c = compiled
        # durable-rules finds a session's state by a 32-bit hash of its id alone (getStateNode, state.c): two open
        # sessions whose ids hash alike would share one state, so an id that hashes like an open session's is skipped
        with compiled.lock:
            while True:
                sid = f"w{next(compiled.sids)}"
                sid_hash = fnv1a32(sid)
                if sid_hash not in compiled.open_sids:
                    break
            self.sid, self.sid_hash = sid, sid_hash
            compiled.open_sids[sid_hash] = sid
        self.values: dict[str, Any] = {}
        self._keys = S.ValueKeys(self.values)  # the values as keys of what the compiled rulebase keeps (bound)
        self.started = False
        self.touched: set[str] = set()  # rulesets holding state for this session
        # facts for the rulesets no step has reached yet: a ruleset gets its catalog and the values
        # it reads when a step of one of its rules first comes (rules match only on their step's
        # marker), so a run of one rule (a rule case) loads only that rule's ruleset
        self.waiting: dict[str, list[dict[str, Any]]] = {}
        self.facts = 0  # facts asserted, each with the next of fact_ids
        self.sent: dict[tuple[str, str], set[int]] = {}  # (shard, catalog) -> the keyed items asserted there
        compiled.collect[self.sid] = []

    def _assert(self, shard: _Shard, facts: list[dict[str, Any]]) -> None:
        """Assert facts into one ruleset (it holds state for this session from then on, whatever happens)."""
        if facts:
            ids = self._ids(len(facts))
            self.touched.add(shard.name)
            self._send(shard.name, [dict(f, sid=self.sid, id=i) for f, i in zip(facts, ids, strict=True)])

    def _send(self, shard: str, facts: dict[str, Any] | list[dict[str, Any]]) -> None:
        self.c.send(shard, facts, self.c.collect[self.sid])

    def _ids(self, n: int) -> list[str]:
        """The next ``n`` fact ids of this session (fact_ids: no two hash alike)."""
        start = self.facts
        self.facts += n
        return fact_ids(self.facts)[start : self.facts]

    def assert_values(self, values: Mapping[str, Any]) -> None:
        self._keys.drop(values)
        for name, value in values.items():
            if value is S.ABSENT:
                self.values.pop(name, None)
            else:
                self.values[name] = value
        names = sorted(values)
        readers = self.c.readers
        members = self.c.members
        made = {name: _facts(name, values[name], name in members) for name in names if name in readers}  # once
        with self.c.lock:
            shards = self.c.shards
            if self.started:  # only the rulesets that read one of the values
                shards = [shards[i] for i in sorted({i for name in names for i in readers.get(name, ())})]
            for shard in shards:
                # a list's members only where a pattern tests them: no other pattern matches a member fact
                facts = [
                    f
                    for name in names
                    if name in shard.names
                    for f in (made[name] if name in shard.members else made[name][:1])
                ]
                if not self.started:
                    self.waiting[shard.name] = self.c.catalog_facts[shard.name] + facts
                elif shard.name in self.waiting:
                    self.waiting[shard.name] += facts
                else:
                    self._assert(shard, facts)
            self.started = True

    def match(self, step: int, skip: frozenset[str] = frozenset()) -> list[Match]:
        found = self.c.collect[self.sid]
        found.clear()
        with self.c.lock:
            for shard in self.c.shards:
                if step in shard.steps:
                    if skip and self.c.rules_at[shard.name, step] <= skip:
                        # the runner knows every match of the ruleset's rules at this step: no marker, and the
                        # values wait for the ruleset's next step that is run (if any: one no rule reads is never sent)
                        self.waiting.setdefault(shard.name, [])
                        continue
                    self._assert(shard, self.waiting.pop(shard.name, []) + self._wanted(shard, step))
                    self.touched.add(shard.name)
                    self._send(shard.name, {"sid": self.sid, "id": self._ids(1)[0], "t": "s", "k": step})
        # the values stay put while a step matches: a let's expansion in a ref is kept for the items it reads
        lets: dict[Any, Any] = {}
        # what the checks and residual conditions bound, by the items the network bound and the values they read,
        # are kept from an earlier session that had them (semantics.kept_bindings)
        out = self._network_matches(found, skip, lets) + self._python_matches(step, skip, lets)
        found.clear()
        return out

    def _network_matches(
        self, found: list[tuple[_Rule, dict[str, str]]], skip: frozenset[str], lets: dict[Any, Any]
    ) -> list[Match]:
        """The network's matches that pass what Python checks of them (checks, then residual conditions)."""
        out: list[Match] = []
        memo = self.c.memo  # which items the residual joins passed, by their operands' values (semantics.matches)
        kept = self.c.bound
        catalogs = self.c.rb.catalogs
        for rule, item_ids in found:
            if rule.planned.id in skip:
                continue  # the network matched it as it matches every rule; its matches are not wanted
            assert rule.plan is not None
            items = {a: catalogs[rule.plan.catalogs_by_alias[a]].items[i] for a, i in item_ids.items()}
            bound = S.Env(self.values, catalogs, items, lets)
            if not all(S.item_passes((f,), items[a], bound) for a, f in rule.plan.checks):
                continue
            first, rest = self.c.split[id(rule)]
            if not all(S.holds(c, bound) for c in first):
                continue
            variant = rule.variant
            key = (
                id(rule),
                tuple(item_ids.items()),
                self._keys.key(self.c.reads[id(rule)]),
                self._keys.present(variant.required),
            )
            full_ids = S.kept_bindings(kept, key, rest, bound, variant.required, variant.items, memo)
            out.extend(Match(rule.planned.id, variant.index, ids) for ids in full_ids)
        return out

    def _python_matches(self, step: int, skip: frozenset[str], lets: dict[Any, Any]) -> list[Match]:
        """The matches of the step's rules matched in Python altogether."""
        out: list[Match] = []
        env = S.Env(self.values, self.c.rb.catalogs, {}, lets)
        memo, kept = self.c.memo, self.c.bound
        known: dict[int, bool] = {}  # a condition that reads no item, shared by variants: asked once a step
        for rule in self.c.python_rules.get(step, ()):
            if rule.planned.id in skip:
                continue
            first, rest = self.c.split[id(rule)]
            if not S.all_hold(first, env, known):
                continue
            variant = rule.variant
            key = (id(rule), (), self._keys.key(self.c.reads[id(rule)]), self._keys.present(variant.required))
            full_ids = S.kept_bindings(kept, key, rest, env, variant.required, variant.items, memo)
            out.extend(Match(rule.planned.id, variant.index, ids) for ids in full_ids)
        return out

    def _wanted(self, shard: _Shard, step: int) -> list[dict[str, Any]]:
        """The items of the shard's keyed catalogs that its patterns at this step allow, not asserted yet."""
        out = []
        keyed = self.c.keyed[shard.name]
        for catalog, wants in shard.wants.get(step, ()):
            if catalog not in keyed:
                continue  # asserted whole: another pattern of the shard may match any of its items
            table = keyed[catalog]
            sent = self.sent.setdefault((shard.name, catalog), set())
            for i in table.allowed(wants, self.values):
                if i not in sent:
                    sent.add(i)
                    out.append(table.facts[i])
        return out

    def close(self) -> None:
        with self.c.lock:
            for shard in self.c.shards:
                if shard.name in self.touched:
                    # durable-rules crashes deleting a state in which no rule has fired yet: the
                    # closing fact makes one fire first (and any action still pending from a step that
                    # failed: what it matches goes nowhere, and its fault was the step's to raise)
                    with contextlib.suppress(RuleBug):
                        self._send(shard.name, {"sid": self.sid, "id": self._ids(1)[0], "t": "x"})
                    self.c.host.delete_state(shard.name, self.sid)
            if self.c.open_sids.get(self.sid_hash) == self.sid:
                del self.c.open_sids[self.sid_hash]
        self.touched.clear()
        self.waiting.clear()
        self.sent.clear()
        self.c.collect.pop(self.sid, None)


def _facts(name: str, value: Any, members: bool = True) -> list[dict[str, Any]]:
    """An attribute's value as facts: the value, and with ``members`` a list's distinct members (S.same)."""
    if value is S.ABSENT:
        return [{"t": "a", "n": name, "ok": 0}]
    fact: dict[str, Any] = {"t": "a", "n": name, "ok": 1}
    k = S.kind(value)
    if k in ("number", "text", "boolean"):
        fact["v"] = value
        if k == "number":
            fact["vn"] = value
    out = [fact]
    if isinstance(value, list):
        fact["len"] = len(value)
        seen: set[Any] = set()
        for member in value if members else ():
            key = S.same_key(member)
            if key is not None and key not in seen:
                seen.add(key)
                out.append({"t": "m", "n": name, "v": member})
    return [safe(f) for f in out]


_VENDORED = "vendor/durable_rules-2.0.28+gpusizer.1.tar.gz"


def _import_problem() -> EngineUnavailable:
    """Why durable-rules cannot be used here, and the fix (exit code 69)."""
    exc = _IMPORT_ERROR
    python = ".".join(map(str, sys.version_info[:3]))
    if isinstance(exc, ModuleNotFoundError) and exc.name in ("durable", "durable_rules_engine"):
        return EngineUnavailable(
            f"durable-rules, the rule engine, is not installed for this Python ({python}, {sys.executable})",
            help="install gpusizer with pip from its source tree (pip install .), which installs durable-rules; "
            "it compiles a C extension, so a C compiler is needed (or run with GPUSIZER_BACKEND=python)",
        )
    if "PyEval_CallObject" in str(exc):
        return EngineUnavailable(
            f"durable-rules' C extension does not load on Python {python}: {exc}",
            help="durable-rules 2.0.28 as published on PyPI does not work on Python 3.13 or later; reinstall "
            f"gpusizer with pip from its source tree (pip install .), which builds the fixed copy in {_VENDORED}, "
            f"or replace only durable-rules: pip install --force-reinstall --no-deps <checkout>/{_VENDORED}",
        )
    return EngineUnavailable(
        f"durable-rules' C extension does not load on Python {python}: {exc}",
        help="reinstall it for this Python: pip install --force-reinstall --no-cache-dir --no-deps "
        f"durable-rules==2.0.28 (on Python 3.13 or later, the copy in {_VENDORED}); a C compiler is needed; "
        "or run with GPUSIZER_BACKEND=python",
    )


class DurableBackend:
    """durable-rules 2.0.28 as a backend.

    ``network_joins=True`` leaves joins in durable-rules' network even when Python must check their
    tests on each combination it reports (as before such joins moved to Python); only a rule that
    joins one catalog twice is matched in Python either way. It gives the same answers, slower; the
    conformance suite and the speed benchmark run it to show both.
    """

    name = "durable"

    def __init__(self, *, network_joins: bool = False) -> None:
        self.network_joins = network_joins

    def compile(self, rulebase: Rulebase, schedule: Mapping[str, int]) -> DurableCompiled:
        """Compile the rulebase into durable-rules rulesets on a Host of its own."""
        return DurableCompiled(rulebase, schedule, network_joins=self.network_joins)


__all__ = ["DurableBackend", "unavailable"]
