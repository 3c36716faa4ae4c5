"""The meaning of the condition language: one evaluator of the IR.

The Python backend matches with it, the durable-rules backend checks with it every test it does
not push into its network, why-not asks it which part of a rule failed, lint asks it whether
tests can hold together, and the conformance suite holds every backend to it.

The rules, for a value under test (an attribute's, or a catalog item's field):

* A value is a number (ints and floats compare as numbers; a boolean is not a number), text, a
  boolean, a list or a record; or it is absent (an attribute without a value, an item without
  that field).
* ``exists: true`` holds when the value is present, ``exists: false`` when it is absent.
* Every other test fails on an absent value, except ``not_contains``, which holds (an absent
  list has no members).
* ``eq`` holds when both sides are of the same kind and equal; ``ne`` when the value is a
  present scalar that ``eq`` does not hold for; ``in`` / ``not_in`` are ``eq`` with any / ``ne``
  with every listed value.
* ``gt``, ``gte``, ``lt``, ``lte`` hold only between two numbers.
* ``contains`` / ``not_contains`` test membership of a list (by ``eq``), ``empty`` its length.
* An operand ``{ref: expression}`` is computed with the expression language; when it cannot be
  computed (a name without a value, a division by zero, a text where a number is needed), the
  test fails.
* A condition holds when all its tests hold; ``not`` holds when its condition does not (for an
  item join: when no item passes); ``any`` when one branch holds. A join binds its alias to each
  item that passes, one match per combination of items.
"""

from __future__ import annotations

import itertools
import math
import threading
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import expr as X
from .ir import ORDERING, AttrCond, Catalog, FieldCond, Item, ItemCond, Not, Ref, Scalar, Simple, Test, Value

ABSENT: Any = object()  # the value of an attribute without a value, or of a missing item field


_KINDS: dict[type, str] = {bool: "boolean", int: "number", float: "number", str: "text", list: "list", dict: "record"}


def kind(value: object) -> str | None:
    """'number', 'text', 'boolean', 'list', 'record', or None for anything else."""
    k = _KINDS.get(type(value))
    if k is not None:  # the common case, without the isinstance chain (a subclass takes it)
        return k
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "record"
    return None


def is_number(value: object) -> bool:
    """A real number, not a boolean."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def same(a: object, b: object) -> bool:
    """``eq``: same kind and equal (numbers numerically, lists and records member by member)."""
    t = type(a)
    if t is type(b) and (t is str or t is int or t is float or t is bool):  # the common case
        return a == b
    ka, kb = kind(a), kind(b)
    if ka != kb or ka is None:
        return False
    if ka == "list":
        assert isinstance(a, list) and isinstance(b, list)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if ka == "record":
        assert isinstance(a, dict) and isinstance(b, dict)
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def _scalar(value: object) -> bool:
    return kind(value) in ("number", "text", "boolean")


def _has(members: Sequence[Any], x: Any) -> bool:
    """``any(same(m, x) for m in members)``: text equals only text, so for text ``in`` says the same."""
    if type(x) is str and isinstance(members, (list, tuple)):
        return x in members
    return any(same(m, x) for m in members)


def apply(op: str, value: Any, operand: Any) -> bool:
    """Does one test hold for ``value`` (``ABSENT`` when there is none)? ``operand`` is computed."""
    if op == "exists":
        return (value is not ABSENT) == bool(operand)
    if op == "not_contains":
        return value is ABSENT or (isinstance(value, list) and not _has(value, operand))
    if value is ABSENT or operand is ABSENT:
        return False
    if op == "eq":
        return same(value, operand)
    if op == "ne":
        return _scalar(value) and not same(value, operand)
    if op in ORDERING:
        if not (is_number(value) and is_number(operand)):
            return False
        if op == "gt":
            return bool(value > operand)
        if op == "gte":
            return bool(value >= operand)
        if op == "lt":
            return bool(value < operand)
        return bool(value <= operand)
    if op == "in":
        return _has(operand, value)
    if op == "not_in":
        return _scalar(value) and not _has(operand, value)
    if op == "contains":
        return isinstance(value, list) and _has(value, operand)
    if op == "empty":
        return isinstance(value, list) and (len(value) == 0) == bool(operand)
    raise ValueError(f"unknown operator {op!r}")  # pragma: no cover - the IR has no other


@dataclass(frozen=True)
class Env:
    """What conditions are evaluated against: final attribute values and bound items."""

    values: Mapping[str, Value]  # attributes that have a value
    catalogs: Mapping[str, Catalog]
    items: Mapping[str, Item]
    # the values of let expansions in refs (expr.LetMark), by the let and the items it reads: given by a
    # caller whose attribute values do not change while it lives (a backend's match of one step)
    lets: dict[Any, Any] | None = None

    def with_item(self, alias: str, item: Item) -> Env:
        """The same values with one more item bound."""
        return Env(self.values, self.catalogs, {**self.items, alias: item}, self.lets)

    def lookup(self, dotted: str) -> Any:
        """The value of a name in a ref: an item's field, or an attribute (and a record's field)."""
        head, _, rest = dotted.partition(".")
        if head in self.items:
            # null where the item lacks the field (the catalog declares it optional), so that a computed ref
            # may test it: 'g.fp8_tflops if g.fp8_tflops != null else g.fp16_tflops'; reading it in arithmetic
            # fails the test, as any fault does, and a ref that is the field alone reads it as absent
            return self.items[head].get(rest)
        name, fields = self._attribute(dotted)
        v: Any = self.values.get(name, ABSENT) if name else ABSENT
        for f in fields:
            v = v.get(f, ABSENT) if isinstance(v, dict) else ABSENT
        if v is ABSENT:
            raise X.ExprError(f"'{dotted}' has no value")
        return v

    def _attribute(self, dotted: str) -> tuple[str | None, tuple[str, ...]]:
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            name = ".".join(parts[:cut])
            if name in self.values:
                return name, tuple(parts[cut:])
        return None, ()


_ENV = "$env"  # where a compiled ref finds the Env it is evaluated in
# where a ref's expression keeps its compiled getter: in the Expr's own __dict__ (as functools.cached_property
# keeps a value), so it is found with one look-up and goes with the expression (and its rulebase)
_GETTER = "semantics_getter"


def _compiled(expr: X.Expr) -> X.Getter:
    """The expression compiled once, reading names from the Env under ``_ENV`` when evaluated."""
    kept = expr.__dict__
    getter: X.Getter | None = kept.get(_GETTER)
    if getter is None:
        name = X.dotted(expr.tree.body)
        if name is not None and name not in X.WORDS:  # one name alone (most refs): no evaluation budget to keep
            getter = _lookup(name)
        else:
            getter = expr.bind(_lookup, let_hook=_kept_let)
        getter = kept.setdefault(_GETTER, getter)  # two threads that compiled it at once keep the same one
    return getter


_UNSEEN: Any = object()


def _kept_let(mark: X.LetMark, getter: X.Getter) -> X.Getter:
    """A let's expansion in a ref, computed once for the items it reads where the Env keeps lets' values
    (``Env.lets``): the attributes are final and the same while one Env's lets live, so the let gives
    the same value for the same items. A fault is not kept: it is raised again where it is met again.
    """
    aliases = mark.items

    def run(d: Any) -> Any:
        env: Env = d[_ENV]
        kept = env.lets
        if kept is None:
            return getter(d)
        items = env.items
        key = (mark, *[id(items.get(a)) for a in aliases])
        value = kept.get(key, _UNSEEN)
        if value is _UNSEEN:
            value = kept[key] = getter(d)
        return value

    return run


def _lookup(dotted: str) -> X.Getter:
    """``Env.lookup(dotted)`` with the name split once, when the ref is compiled."""
    head, _, rest = dotted.partition(".")
    parts = dotted.split(".")
    cuts = [(".".join(parts[:cut]), tuple(parts[cut:])) for cut in range(len(parts), 0, -1)]

    def get(d: Any) -> Any:
        env: Env = d[_ENV]
        items = env.items
        if head in items:
            return items[head].get(rest)
        values = env.values
        for name, fields in cuts:
            if name in values:
                v: Any = values[name]
                for f in fields:
                    v = v.get(f, ABSENT) if isinstance(v, dict) else ABSENT
                if v is ABSENT:
                    break
                return v
        raise X.ExprError(f"'{dotted}' has no value")

    return get


def operand_value(operand: object, env: Env) -> Any:
    """A test's operand, computed: a literal as it is, a ref by the expression language; ABSENT
    when the ref cannot be computed.
    """
    if isinstance(operand, Ref):
        try:
            value = _compiled(operand.expr)({_ENV: env})
        except X.ExprError:
            return ABSENT
        if isinstance(value, float) and not math.isfinite(value):
            return ABSENT
        if value is None and _item_field_alone(operand.expr, env):
            return ABSENT  # an item's field the item lacks, compared as it stands: no value, as in a field test
        return value
    if isinstance(operand, tuple):
        return operand
    return operand


def _item_field_alone(expr: X.Expr, env: Env) -> bool:
    """The expression is one name, a field of a bound item."""
    name = X.dotted(expr.tree.body)
    return name is not None and name.partition(".")[0] in env.items


def test_holds(test: Test, value: Any, env: Env) -> bool:
    """Does the test hold for the value, its operand computed in ``env``?"""
    return apply(test.op, value, operand_value(test.operand, env))


def first_failing(tests: Sequence[Test], value: Any, env: Env) -> Test | None:
    """The first test that does not hold, or None when all hold."""
    return next((t for t in tests if not test_holds(t, value, env)), None)


def attr_value(env: Env, name: str) -> Any:
    """An attribute's value, or ABSENT."""
    return env.values.get(name, ABSENT)


def field_value(item: Item, name: str) -> Any:
    """An item's field value, or ABSENT when the item lacks it."""
    v = item.get(name)
    return ABSENT if v is None else v


def item_passes(where: Sequence[FieldCond], item: Item, env: Env) -> bool:
    """Do all the field tests hold for the item?"""
    return all(first_failing(f.tests, field_value(item, f.field), env) is None for f in where)


class _Join:
    """One join's tests in one ``env``: a ref that does not read the join's own alias cannot differ
    between the catalog's items, so it is computed once, for the candidate lookup and every item.
    """

    def __init__(self, cond: ItemCond, env: Env) -> None:
        self.cond, self.env = cond, env
        alias = cond.alias
        self.shared = {
            id(t)
            for f in cond.where
            for t in f.tests
            if isinstance(t.operand, Ref) and alias not in t.operand.expr.heads
        }
        self.computed: dict[int, Any] = {}

    def outcome_key(self) -> Any:
        """What decides which items pass when no test reads the join's own item: the join and the
        values its operands compute (a field tested against a value says the same in every binding
        that computes that value). None where a test reads the item, or an operand is a list or a
        record.
        """
        key: list[Any] = [id(self.cond)]
        for f in self.cond.where:
            for t in f.tests:
                if not isinstance(t.operand, Ref):
                    continue  # a literal: the join's own, as its id is
                if id(t) not in self.shared:
                    return None
                v = _value_key(self._shared(t))
                if v is None:
                    return None
                key.append(v)
        return tuple(key)

    def _shared(self, t: Test) -> Any:
        k = id(t)
        if k not in self.computed:
            self.computed[k] = operand_value(t.operand, self.env)
        return self.computed[k]

    def passes(self, item: Item) -> bool:
        """``item_passes`` for one item of the join."""
        inner: Env | None = None
        for f in self.cond.where:
            value = field_value(item, f.field)
            for t in f.tests:
                operand = t.operand
                if isinstance(operand, Ref):
                    if id(t) in self.shared:
                        operand = self._shared(t)
                    else:
                        if inner is None:
                            inner = self.env.with_item(self.cond.alias, item)
                        operand = operand_value(operand, inner)
                if not apply(t.op, value, operand):
                    return False
        return True

    def candidates(self) -> Iterable[Item]:
        """The items that can pass, in catalog order: when one test is ``eq`` to a shared ref
        (``baseboard: {ref: g.baseboard}``), only the items whose field has that value (a hash
        join); otherwise every item. Each candidate still passes every test, that one included,
        so the index only saves items that would fail.
        """
        catalog = self.env.catalogs[self.cond.catalog]
        for f in self.cond.where:
            for t in f.tests:
                if t.op != "eq" or id(t) not in self.shared:
                    continue
                value = self._shared(t)
                if value is ABSENT:
                    return ()  # eq against no value holds for no item
                key = same_key(value)
                if key is not None:
                    return _index(catalog, f.field).get(key, ())
        return catalog.items.values()


def holds(cond: Simple, env: Env) -> bool:
    """Does an attribute condition or a negation hold? (A positive join is matched by ``matches``.)"""
    if isinstance(cond, AttrCond):
        return first_failing(cond.tests, attr_value(env, cond.attribute), env) is None
    if isinstance(cond, Not):
        inner = cond.inner
        if isinstance(inner, AttrCond):
            return not holds(inner, env)
        join = _Join(inner, env)
        return not any(join.passes(item) for item in join.candidates())
    raise TypeError("a positive item join is matched, not tested")  # pragma: no cover


def aliases_read(cond: Simple, aliases: frozenset[str]) -> frozenset[str]:
    """The join aliases (of ``aliases``) a condition's refs read; a negated join's own alias is its own."""
    if isinstance(cond, Not):
        inner = cond.inner
        if isinstance(inner, ItemCond):
            return aliases_read(inner, aliases - {inner.alias})
        return aliases_read(inner, aliases)
    tests = cond.tests if isinstance(cond, AttrCond) else [t for f in cond.where for t in f.tests]
    found: set[str] = set()
    for t in tests:
        if isinstance(t.operand, Ref):
            found |= t.operand.expr.heads & aliases
    return frozenset(found)


def scheduled(conditions: Sequence[Simple]) -> tuple[Simple, ...]:
    """The same conditions in an order that prunes early and matches the same bindings in the same order:
    the joins keep their order, and every other condition comes right after the last join whose item it
    reads (before the first join when it reads none): only earlier, since a rule may read only the items
    joined before a condition ("unknown name" at load). A condition computes no value and raises nothing (a
    ref that cannot be computed is a test that fails), so where it runs changes only how many
    combinations are tried: a rule whose base joins four catalogs before the rule's own 'task: inference'
    no longer tries every combination of them for a training run.
    """
    aliases = frozenset(c.alias for c in conditions if isinstance(c, ItemCond))
    joins = [c for c in conditions if isinstance(c, ItemCond)]
    slots: list[list[Simple]] = [[] for _ in range(len(joins) + 1)]
    position = {j.alias: i + 1 for i, j in enumerate(joins)}
    for c in conditions:
        if isinstance(c, ItemCond):
            continue
        read = aliases_read(c, aliases)
        slots[max((position[a] for a in read), default=0)].append(c)
    out: list[Simple] = list(slots[0])
    for j, after in zip(joins, slots[1:], strict=True):
        out.append(j)
        out.extend(after)
    return tuple(out)


def matches(
    conditions: Sequence[Simple], env: Env, required: Sequence[str] = (), memo: dict[Any, Any] | None = None
) -> Iterator[Mapping[str, Item]]:
    """Every binding of the joins' aliases to items under which all ``conditions`` hold, in
    catalog order; ``required`` attributes must have values (those the rule's expressions read).

    ``memo``: which items passed a join whose tests do not read its own item (and whether a negated
    one found none), by the join and the types and values its operands computed, for the other
    bindings and every later call given the same memo: such a join reads nothing but its operands'
    values and its catalog's items, so it passes the same items whenever they compute the same
    values, in any run. A rule that picks the smallest CPU of a platform's family with the cores
    its GPUs want tests the family once for each number of cores wanted, not once for every GPU,
    count and CPU it is tried with, in every run. A memo that grows past ``MEMO_LIMIT`` entries is
    emptied (a sweep of many workloads keeps its memory bounded).
    """
    if memo is None:
        memo = {}
    elif len(memo) > MEMO_LIMIT:
        memo.clear()
    if any(name not in env.values for name in required):
        return
    yield from _match(list(conditions), 0, env, memo)


MEMO_LIMIT = 100_000


def _match(conditions: list[Simple], i: int, env: Env, memo: dict[Any, Any]) -> Iterator[Mapping[str, Item]]:
    if i == len(conditions):
        yield env.items
        return
    cond = conditions[i]
    if isinstance(cond, ItemCond):
        join = _Join(cond, env)
        passing = _kept(memo, join, lambda: [item for item in join.candidates() if join.passes(item)])
        for item in passing:
            yield from _match(conditions, i + 1, env.with_item(cond.alias, item), memo)
        return
    if isinstance(cond, Not) and isinstance(cond.inner, ItemCond):
        inner = _Join(cond.inner, env)
        if _kept(memo, inner, lambda: not any(inner.passes(item) for item in inner.candidates())):
            yield from _match(conditions, i + 1, env, memo)
        return
    if holds(cond, env):
        yield from _match(conditions, i + 1, env, memo)


def _kept(memo: dict[Any, Any], join: _Join, outcome: Callable[[], Any]) -> Any:
    """What ``outcome()`` gives for the join (the items that pass it, or whether none does), from the
    memo where its operands' values were met before; a join that reads its own item is not kept.
    """
    key = join.outcome_key()
    if key is None:
        return outcome()
    found = memo.get(key)
    if found is None:
        found = memo[key] = outcome()
        memo[id(join.cond), "held"] = join.cond  # the key names the join by id: it lives as long as the memo
    return found


def _value_key(value: Any) -> Any:
    """A computed operand as a key (``frozen``: 1, 1.0 and true apart, 0.0 apart from -0.0, no value as
    itself), for a scalar only: None for a list, a record or a number that is not finite.
    """
    t = type(value)
    if t is str or t is int or t is bool or value is ABSENT or value is None or (t is float and math.isfinite(value)):
        return frozen(value)
    return None


def frozen(value: Any) -> Any:
    """A value as a key that tells apart every two values an expression can tell apart: each scalar with
    its type (1, 1.0 and true apart; 0.0 and -0.0 apart), lists member by member, records field by field
    in their order (text() writes them in it), no value (ABSENT) and null as themselves. A value of
    another type gives a key equal to no other.
    """
    t = type(value)
    if t is str or t is int or t is bool:
        return (t, value)
    if t is float:
        return (t, repr(value)) if value == 0.0 or value != value else (t, value)
    if t is list:
        for x in value:
            if type(x) is not str:
                return (t, tuple([frozen(x) for x in value]))
        return (t, tuple(value))  # text members stand for themselves: a member key is a tuple, never text
    if t is dict:
        return (t, tuple([(k, frozen(v)) for k, v in value.items()]))
    if value is ABSENT or value is None:
        return value
    return object()


def attributes_read(conditions: Iterable[Simple | FieldCond], attributes: Collection[str]) -> tuple[str, ...]:
    """Every attribute the conditions (or field tests) test or their refs read, in order: of a dotted name, each
    prefix that is an attribute (more than is read, never less). With the catalogs, what decides whether they
    hold for given items.
    """
    found: set[str] = set()
    for c in conditions:
        inner = c.inner if isinstance(c, Not) else c
        if isinstance(inner, AttrCond):
            found.add(inner.attribute)
            tests: list[Test] = list(inner.tests)
        elif isinstance(inner, FieldCond):
            tests = list(inner.tests)
        else:
            tests = [t for f in inner.where for t in f.tests]
        for t in tests:
            if isinstance(t.operand, Ref):
                for dotted in t.operand.expr.names:
                    parts = dotted.split(".")
                    found.update(n for n in (".".join(parts[:k]) for k in range(1, len(parts) + 1)) if n in attributes)
    return tuple(sorted(found))


class ValueKeys:
    """The values of attributes as keys (``frozen``), each made once while they stay put (``drop`` forgets the
    names whose values change): what a runner and the backends key what they keep for later runs by.
    """

    __slots__ = ("_done", "values")

    def __init__(self, values: Mapping[str, Any]) -> None:
        self.values = values  # read, never written
        self._done: dict[str, Any] = {}

    def key(self, names: Iterable[str]) -> tuple[Any, ...]:
        """The values of these attributes (ABSENT for one without a value), as one key."""
        done, values = self._done, self.values
        out = []
        for name in names:
            k = done.get(name, _UNSEEN)
            if k is _UNSEEN:
                k = done[name] = frozen(values.get(name, ABSENT))
            out.append(k)
        return tuple(out)

    def present(self, names: Iterable[str]) -> tuple[bool, ...]:
        """Which of these attributes have a value."""
        values = self.values
        return tuple([name in values for name in names])

    def drop(self, names: Iterable[str]) -> None:
        """Forget the keys of these attributes (their values change)."""
        for name in names:
            self._done.pop(name, None)


def all_hold(conditions: Iterable[Simple], env: Env, known: dict[int, bool]) -> bool:
    """Do all these conditions (none a positive join) hold? Each is asked once for ``known`` (by its id): the
    conditions before a rule's first join, which its variants and the rules of its base share.
    """
    for c in conditions:
        said = known.get(id(c))
        if said is None:
            said = known[id(c)] = holds(c, env)
        if not said:
            return False
    return True


def kept_bindings(
    kept: dict[Any, list[tuple[tuple[str, str], ...]]],
    key: Any,
    conditions: Sequence[Simple],
    env: Env,
    required: Sequence[str],
    aliases: Sequence[tuple[str, str]],
    memo: dict[Any, Any],
) -> list[tuple[tuple[str, str], ...]]:
    """The bindings (each alias of ``aliases`` with its item's id) that ``matches`` gives, kept in ``kept`` by
    ``key``, which must name everything they depend on: the conditions, the values those read, which of
    ``required`` have one, and the items ``env`` binds. ``kept`` is emptied past ``MEMO_LIMIT`` entries.
    """
    found = kept.get(key)
    if found is None:
        if len(kept) > MEMO_LIMIT:
            kept.clear()
        found = kept[key] = [tuple((a, m[a].id) for a, _ in aliases) for m in matches(conditions, env, required, memo)]
    return found


def same_key(value: Any) -> tuple[str, Any] | None:
    """The key under which ``same`` finds a scalar (1 and 1.0 share one; True and 1 do not)."""
    k = kind(value)
    return (k, value) if k in ("number", "text", "boolean") else None


class PerObject:
    """Values made once for an object while it lives (a catalog's indexes, a rulebase's translation):
    ``get(owner, key, make)`` calls ``make()`` the first time for that owner and key; an owner's
    values go when it is collected, so its id is never found again for another object.
    """

    def __init__(self) -> None:
        self._by: dict[int, dict[Any, Any]] = {}
        self._lock = threading.Lock()

    def get(self, owner: object, key: Any, make: Callable[[], Any]) -> Any:
        """The value for ``owner`` and ``key``, made by ``make()`` the first time."""
        with self._lock:
            per = self._by.get(id(owner))
            if per is None:
                per = self._by[id(owner)] = {}
                weakref.finalize(owner, self._by.pop, id(owner), None)
            if key not in per:
                per[key] = make()
            return per[key]


# per catalog: field -> key -> items in catalog order
_INDEXES = PerObject()


def _index(catalog: Catalog, fieldname: str) -> dict[tuple[str, Any], list[Item]]:
    def make() -> dict[tuple[str, Any], list[Item]]:
        index: dict[tuple[str, Any], list[Item]] = {}
        for item in catalog.items.values():
            key = same_key(field_value(item, fieldname))
            if key is not None:
                index.setdefault(key, []).append(item)
        return index

    return _INDEXES.get(catalog, fieldname, make)  # type: ignore[no-any-return]


def satisfiable(tests: Sequence[Test], enum: Sequence[Scalar] | None = None) -> bool:
    """Can some value pass every literal test (``ref`` operands are left out)? Searches witnesses
    built from the tests' own literals, so the answer follows the evaluator's meaning.
    """
    literal = [t for t in tests if not _has_ref(t)]
    if not literal:
        return True
    candidates: list[Any] = [ABSENT, "", "a different text", True, False, [], ["__member__"]]
    numbers: set[float] = {0.0}
    for t in literal:
        values = t.operand if isinstance(t.operand, tuple) else (t.operand,)
        for v in values:
            candidates.append(v)
            if t.op in ("contains", "not_contains"):
                candidates.append([v])
            if isinstance(v, (int, float)) and is_number(v):
                numbers.add(float(v))
    ordered = sorted(numbers)
    for a, b in itertools.pairwise(ordered):
        candidates.append((a + b) / 2)
    for n in ordered:
        candidates += [n - 1, n + 1, math.nextafter(n, -math.inf), math.nextafter(n, math.inf)]
    if enum is not None:
        candidates = [c for c in candidates if c is ABSENT or not _scalar(c) or any(same(c, e) for e in enum)]
        candidates += list(enum)
    return any(all(apply(t.op, c, t.operand) for t in literal) for c in candidates)


def _has_ref(test: Test) -> bool:
    return isinstance(test.operand, Ref)


Getter = Callable[[dict[str, Any]], Any]
