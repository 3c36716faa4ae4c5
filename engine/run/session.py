"""Run workloads through a planned rulebase, stratum by stratum, on any backend.

The backend only matches; everything else happens here, the same for every backend: the
``let`` and ``then`` expressions of each match are evaluated, every firing is recorded, and
when a stratum is done the attributes it finalised are combined by their policies and handed
back to the backend as facts for the next stratum.
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..backends import Backend, Compiled, Match, get_backend
from ..errors import GpusizerError, RuleBug, RuleError
from ..lang import expr as X
from ..lang import semantics as S
from ..lang.ir import LIST_PREFIX, Attribute, InputValue, Item
from ..load.workload import Workload
from ..plan.resolve import LetGroup, PlannedRule
from ..plan.rulebase import Rulebase
from .combine import Combined, ConflictError, Contribution, canonical, combine


@dataclass(frozen=True)
class Firing:
    """One rule firing: what it read, which items it joined, its lets and its outputs."""

    index: int
    rule: str
    stratum: int
    attrs: Mapping[str, Any]  # attribute -> value read
    items: Mapping[str, tuple[str, str]]  # alias -> (catalog, id)
    lets: Mapping[str, Any]
    outputs: Mapping[str, Any]  # attribute -> value contributed

    def lets_dict(self) -> dict[str, Any]:
        """The lets as a dict of their own (in dependency order)."""
        lets = self.lets
        return lets.as_dict() if isinstance(lets, _FrameLets) else dict(lets)


class _FrameLets(Mapping[str, Any]):
    """A firing's lets, read from its frame when asked for: most firings of a run are never explained,
    and a rule such as a serving plan has a hundred lets (a dict of them cost a tenth of the firing).
    """

    __slots__ = ("_dict", "_frame", "_slots")

    def __init__(self, frame: list[Any], slots: Mapping[str, int]) -> None:
        self._frame = frame
        self._slots = slots
        self._dict: dict[str, Any] | None = None

    def __getitem__(self, name: str) -> Any:
        return self._frame[self._slots[name]]

    def __iter__(self) -> Iterator[str]:
        return iter(self._slots)

    def __len__(self) -> int:
        return len(self._slots)

    def __repr__(self) -> str:
        return repr(self.as_dict())

    def as_dict(self) -> dict[str, Any]:
        """The lets as a dict of their own (``dict(lets)`` would call ``__getitem__`` once a let); made
        once, copied for each caller.
        """
        made = self._dict
        if made is None:
            frame = self._frame
            made = self._dict = {name: frame[i] for name, i in self._slots.items()}
        return made.copy()


@dataclass(frozen=True)
class Conclusion:
    """One attribute's final value, its contributions and how they combined."""

    attribute: str
    value: Any
    contributions: tuple[Contribution, ...]
    combined: Combined


@dataclass(frozen=True)
class Outcome:
    """Everything one run produced; ``explain.result.Result`` wraps it for users."""

    workload: Workload | None
    values: Mapping[str, Any]  # attribute -> final value (inputs and constants included)
    inputs: Mapping[str, InputValue]  # attribute -> where each given value came from
    conclusions: Mapping[str, Conclusion]
    firings: tuple[Firing, ...]


def rule_error(
    rule: PlannedRule, message: str, help: str | None = None, items: Mapping[str, Item] | None = None
) -> RuleError:
    """A rule failed while running: name it and point at its 'then'.

    A rule of the first rules directory failing on items of the first knowledge directory is a bug in
    gpusizer (exit 70): nothing the user wrote made it fail. A rule, or an item it joined, from a
    directory laid over those (an overlay) is the user's input to fix (exit 2).
    """
    span = rule.rule.then_span
    theirs = sorted({i.overlay for i in (items or {}).values() if i.overlay is not None})
    if rule.rule.overlay is None and not theirs:
        return RuleBug(
            f"rule '{rule.id}' failed {message}: a bug in gpusizer",
            file=span.file,
            line=span.line,
            col=1,
            snippet=span.snippet,
            rule=rule.id,
            help="the shipped rule failed on the shipped catalogs, not on your input: please report it with the "
            "workload file",
        )
    joined = ", ".join(f"{i.catalog} '{i.id}'" for i in (items or {}).values() if i.overlay is not None)
    return RuleError(
        f"rule '{rule.id}' failed {message}",
        file=span.file,
        line=span.line,
        col=1,
        snippet=span.snippet,
        rule=rule.id,
        help=(
            f"check what your knowledge overlay {', '.join(theirs)} gives {joined} (an empty or missing field), "
            "or guard the rule with a condition in 'when'"
            if theirs and rule.rule.overlay is None
            else help or "fix the rule's expression or guard it with a condition in 'when'"
        ),
    )


class SessionRunner:
    """A compiled rulebase on one backend; each workload runs in a session of its own.

    ``isolated``: every rule runs at a step of its own, so that one rule can run alone (rule tests).
    """

    def __init__(self, rulebase: Rulebase, backend: Backend | None = None, *, isolated: bool = False) -> None:
        self.rb = rulebase
        self.backend = backend or get_backend()
        if isolated:
            self.schedule = {rid: n for n, rid in enumerate(rulebase.rules, start=1)}
        else:
            self.schedule = {rid: r.stratum for rid, r in rulebase.rules.items()}
        self.compiled: Compiled | None = self.backend.compile(rulebase, self.schedule)
        self._lock = threading.Lock()
        # each step's rules in id order, the order their firings are made in, and what each rule reads
        at: dict[int, list[PlannedRule]] = {}
        for rid in sorted(rulebase.rules):
            at.setdefault(self.schedule[rid], []).append(rulebase.rules[rid])
        self._at = {k: tuple(rules) for k, rules in at.items()}
        self._reads = {rid: tuple(sorted(r.reads)) for rid, r in rulebase.rules.items()}
        self.memo = RuleMemo()
        self.lets = LetMemo()

    def close(self) -> None:
        """Release the backend's resources; the runner cannot be used afterwards."""
        if self.compiled is not None:
            self.compiled.close()
            self.compiled = None

    def forget(self) -> None:
        """Forget what earlier runs computed (the rules' firings, the lets' values, the backend's joins): the
        next run computes everything, as the first did. What a run concludes is the same either way.
        """
        with self._lock:
            self.memo.clear()
            self.lets.clear()
            if self.compiled is not None:
                self.compiled.forget()

    def _open(self) -> Any:
        if self.compiled is None:
            raise RuntimeError("this recommender is closed")
        return self.compiled.open()

    def run(self, workload: Workload) -> Outcome:
        """Run one workload through every stratum; what it concluded and how."""
        rb = self.rb
        given: dict[str, InputValue] = dict(rb.constants)
        given.update(workload.inputs)
        run = _Run(rb, dict(given), self.lets)
        initial: dict[str, Any] = {}
        for name, attr in rb.attributes.items():
            if attr.given:
                iv = given.get(name)
                run.set(name, iv.value if iv is not None else S.ABSENT)
                initial[name] = run.values.get(name, S.ABSENT)
        for name in rb.never_written:
            initial[name] = S.ABSENT
        with self._lock:
            session = self._open()
            try:
                session.assert_values(initial)
                for k in range(1, rb.strata + 1):
                    self._step(run, session, k)
                    new = {}
                    for name in rb.final_at.get(k, ()):
                        run.conclude(name)
                        new[name] = run.values.get(name, S.ABSENT)
                    run.check()
                    session.assert_values(new)
            finally:
                session.close()
        values = {n: v for n, v in run.values.items()}
        return Outcome(
            workload=workload, values=values, inputs=given, conclusions=run.conclusions, firings=tuple(run.firings)
        )

    def run_rule(self, rule_id: str, given: Mapping[str, Any]) -> tuple[dict[str, Any], list[Firing]]:
        """Fire one rule alone on ``given`` attribute values; its combined conclusions and firings."""
        rule = self.rb.rules[rule_id]
        run = _Run(self.rb, {})
        facts: dict[str, Any] = {}
        # named constants are knowledge, like catalogs: a case need not give them (but may)
        known = {n: iv.value for n, iv in self.rb.constants.items() if n in rule.reads}
        known.update(given)
        for name in sorted(set(known) | rule.reads):
            if name in known:
                run.set(name, known[name])
            facts[name] = known.get(name, S.ABSENT)
        with self._lock:
            session = self._open()
            try:
                session.assert_values(facts)
                self._fire(run, session.match(self.schedule[rule_id]))
                for name in sorted(run.pending):
                    run.conclude(name)
                run.check()
            finally:
                session.close()
        return {n: c.value for n, c in sorted(run.conclusions.items())}, run.firings

    def _step(self, run: _Run, session: Any, k: int) -> None:
        """Fire the rules of step ``k``. A rule that read these values in an earlier run of this runner (the memo)
        makes the firings it made then, unmatched and uncomputed: what a rule matches and concludes is a
        function of the values of the attributes it reads, the catalogs being the runner's own. Its firings are
        recorded here as they were made, in the same order, so the run is the one it would have been.
        """
        rules = self._at.get(k, ())
        memo = self.memo
        keys: dict[str, Any] = {}
        kept: dict[str, list[_Made]] = {}
        for rule in rules:
            key = keys[rule.id] = run.key(self._reads[rule.id])
            made = memo.get(rule.id, key)
            if made is not None:
                kept[rule.id] = made
        matches = session.match(k, frozenset(kept)) if kept else session.match(k)
        by_rule: dict[str, list[Match]] = {}
        for m in sorted(matches):
            by_rule.setdefault(m.rule, []).append(m)
        for rule in rules:
            made = kept.get(rule.id)
            if made is None:
                errors = len(run.errors)
                fired = [self._fire_one(run, rule, m) for m in by_rule.get(rule.id, ())]
                if len(run.errors) != errors:
                    continue  # a firing failed: the run stops at the step's end, and the next one tries again
                made = [f for f in fired if f is not None]
                memo.put(rule.id, keys[rule.id], made)
            for one in made:
                run.record(rule, one)
        run.check()

    def _fire_one(self, run: _Run, rule: PlannedRule, m: Match) -> _Made | None:
        variant = rule.variants[m.variant]
        catalogs = self.rb.catalogs
        items = {alias: catalogs[cat].items[iid] for (alias, iid), (_, cat) in zip(m.items, variant.items, strict=True)}
        return run.compute(rule, variant.required, items)

    def _fire(self, run: _Run, matches: list[Match]) -> None:
        # firing order inside a stratum is the backend's business; ours is deterministic
        for m in sorted(matches):
            rule = self.rb.rules[m.rule]
            made = self._fire_one(run, rule, m)
            if made is not None:
                run.record(rule, made)
        run.check()


class _Made:
    """What one firing computed: the attribute values it read, its items, lets and outputs; and, made once for
    every run that records it (the memo), its items sorted and their text that orders contributions.
    """

    __slots__ = ("attrs", "items", "lets", "order", "outputs", "sorted_items")

    def __init__(
        self,
        attrs: Mapping[str, Any],
        items: Mapping[str, tuple[str, str]],  # alias -> (catalog, id)
        lets: Mapping[str, Any],
        outputs: Mapping[str, Any],
    ) -> None:
        self.attrs, self.items, self.lets, self.outputs = attrs, items, lets, outputs
        self.sorted_items = tuple(sorted(items.items()))
        self.order: str | None = None  # _Run._items_key


def _keep(kept: dict[Any, Any], key: Any, value: Any, limit: int) -> None:
    """Keep ``value`` under ``key``, forgetting the oldest key once more than ``limit`` are kept."""
    kept[key] = value
    if len(kept) > limit:
        del kept[next(iter(kept))]


class RuleMemo:
    """The firings each rule made, by the values of the attributes it read (``semantics.frozen``), for the
    later runs of one runner: a sweep's cases differ in a few inputs, and most rules read none of them. A rule
    keeps its last ``KEYS`` keys (a sweep's neighbouring cases share them), so memory stays bounded however
    many cases run. Only runs without a failed firing are kept.
    """

    KEYS = 16

    def __init__(self) -> None:
        self._by: dict[str, dict[Any, list[_Made]]] = {}
        self.hits = 0
        self.misses = 0

    def get(self, rule: str, key: Any) -> list[_Made] | None:
        """The firings the rule made on these values, or None."""
        made = self._by.get(rule, {}).get(key)
        if made is None:
            self.misses += 1
        else:
            self.hits += 1
        return made

    def put(self, rule: str, key: Any, made: list[_Made]) -> None:
        """Keep the firings the rule made on these values."""
        _keep(self._by.setdefault(rule, {}), key, made, self.KEYS)

    def clear(self) -> None:
        """Forget every firing."""
        self._by.clear()


class LetMemo:
    """The values a rule's let groups took in a runner's runs, by the values of the attributes each group reads
    and then by the items it reads, with the work each took (``expr`` steps): a serving plan's card and layout
    give the same cache sizes whatever the users and the market. A group keeps its last ``KEYS`` attribute
    values.
    """

    KEYS = 16

    def __init__(self) -> None:
        self._by: dict[int, dict[Any, dict[Any, tuple[list[Any], int]]]] = {}

    def store(self, group: LetGroup, key: Any) -> dict[Any, tuple[list[Any], int]]:
        """The group's values on these attribute values, by its items' key (filled in by the run)."""
        kept = self._by.setdefault(id(group), {})
        store = kept.get(key)
        if store is None:
            store = {}
            _keep(kept, key, store, self.KEYS)
        return store

    def clear(self) -> None:
        """Forget every value."""
        self._by.clear()


class _Run:
    """The state of one workload's run: values, firings, pending contributions, conclusions."""

    def __init__(self, rb: Rulebase, inputs: dict[str, InputValue], kept: LetMemo | None = None) -> None:
        self.rb = rb
        self.inputs = inputs
        self.values: dict[str, Any] = {}
        self.firings: list[Firing] = []
        self.pending: dict[str, list[Contribution]] = {}
        self.conclusions: dict[str, Conclusion] = {}
        self.errors: list[GpusizerError] = []
        # (rule, items) -> the canonical outputs of its firings from those items, computed only
        # when a second firing of the rule binds the same items (two alternatives of an 'any')
        self.seen: dict[tuple[str, tuple[tuple[str, tuple[str, str]], ...]], list[Any]] = {}
        self.made: list[_Made] = []  # what each firing computed, by its index
        self._places: dict[str, dict[str, str]] = {}  # a list catalog -> its members' places as text (_place)
        # a let group (by id: the rulebase holds it) -> the ids of the items it reads -> its values (_lets)
        self.memo: dict[int, dict[Any, list[Any]]] = {}
        # a rule and its variant's required attributes (by ids: the rulebase holds both) -> the rule's frame
        # with the attribute values filled in, and the values of those attributes (fire)
        self.read: dict[tuple[int, int], tuple[list[Any], dict[str, Any]]] = {}
        # a rule (by id) -> the frame of its last firing whose lets were all computed (fire)
        self.last: dict[int, list[Any]] = {}
        self.keys = S.ValueKeys(self.values)  # the values as keys of what the runner keeps (key)
        self.kept = kept  # the runner's let values of earlier runs (_lets), or None
        self.stores: dict[int, dict[Any, tuple[list[Any], int]]] = {}  # a let group (by id) -> its values in kept

    def set(self, name: str, value: Any) -> None:
        if value is S.ABSENT:
            self.values.pop(name, None)
        else:
            self.values[name] = value

    def key(self, reads: tuple[str, ...]) -> tuple[Any, ...]:
        """The values of these attributes as a key (``semantics.ValueKeys``): each made once a run, as the
        attributes are final when a rule reads them.
        """
        keys = self.keys
        if keys.values is not self.values:  # the values were replaced (a rule fired alone on given values)
            keys = self.keys = S.ValueKeys(self.values)
        return keys.key(reads)

    def fire(self, rule: PlannedRule, required: tuple[str, ...], items: dict[str, Item]) -> None:
        """Compute one firing and record it."""
        made = self.compute(rule, required, items)
        if made is not None:
            self.record(rule, made)

    def compute(self, rule: PlannedRule, required: tuple[str, ...], items: dict[str, Item]) -> _Made | None:
        """One firing's lets and outputs (None, with the error kept, where it fails)."""
        # what a rule reads of the attributes is the same in each of its firings: a rule fires at one
        # stratum and reads only what earlier strata made final (its frame with them, and the values
        # its variant requires, are made at its first firing in the run and shared by the others)
        at = (id(rule), id(required))
        known = self.read.get(at)
        if known is None:
            values = self.values
            template: list[Any] = [None] * rule.frame.size
            for name, i in rule.frame.attrs:
                template[i] = values[name]
            known = self.read[at] = (template, {name: values[name] for name in required})
        template, attrs = known
        frame, changed = self._frame(rule, template, items)
        try:
            with X.Budget():  # the firing's lets and conclusions share one budget of work
                self._lets(rule, frame, changed)
                self.last[id(rule)] = frame
                outputs: dict[str, Any] = {}
                for attr, out in rule.outputs:
                    if isinstance(out, tuple):
                        outputs[attr] = {k: g(frame) for k, g in out}
                    else:
                        outputs[attr] = out(frame)
        except X.ExprError as exc:
            self.errors.append(rule_error(rule, f"while firing: {exc.message}", exc.help, items))
            return None
        except (ArithmeticError, TypeError, ValueError, KeyError, RecursionError, MemoryError) as exc:
            self.errors.append(rule_error(rule, f"while firing: {type(exc).__name__}: {exc}", items=items))
            return None
        lets = _FrameLets(frame, rule.frame.let_slots)
        return _Made(attrs, {a: (i.catalog, i.id) for a, i in items.items()}, lets, outputs)

    def record(self, rule: PlannedRule, made: _Made) -> None:
        """Record a firing and its contributions."""
        item_ids, outputs = made.items, made.outputs
        # two alternatives of one rule ('any') can both hold: the same conclusion from the same
        # items is one firing, not two (a 'sum' attribute would otherwise count it twice). Equal
        # items are equal mappings of plain strings, so only firings of one rule from the same
        # items need their outputs compared, as canonical text (which tells 1 from 1.0 and true).
        key = (rule.id, made.sorted_items)
        earlier = self.seen.get(key)
        if earlier is None:
            self.seen[key] = [outputs]
        else:
            mine = canonical(outputs)
            for i, other in enumerate(earlier):
                if not isinstance(other, str):
                    other = earlier[i] = canonical(other)
                if other == mine:
                    return
            earlier.append(mine)
        idx = len(self.firings)
        self.firings.append(Firing(idx, rule.id, rule.stratum, made.attrs, item_ids, made.lets, outputs))
        self.made.append(made)
        for attr, value in outputs.items():
            self.pending.setdefault(attr, []).append(Contribution(rule.id, idx, value, rule.rule.priority))

    def _frame(self, rule: PlannedRule, template: list[Any], items: dict[str, Item]) -> tuple[list[Any], int]:
        """A firing's frame with its items in place, and the bits ``1 << slot`` of the items that changed since
        the rule's last firing whose lets were all computed (-1: none was). That firing's frame holds the same
        attribute values, and the lets of a group that reads none of the changed items have the values they
        had there: firings come sorted by their items, so a serving plan's next platform keeps its card's and
        its layout's.
        """
        prev = self.last.get(id(rule))
        slots = rule.frame.items
        if prev is None:
            frame = template.copy()
            for alias, i in slots:
                frame[i] = items[alias]
            return frame, -1
        frame = prev.copy()
        changed = 0
        for alias, i in slots:
            item = items[alias]
            if frame[i] is not item:
                frame[i] = item
                changed |= 1 << i
        return frame, changed

    def _lets(self, rule: PlannedRule, frame: list[Any], changed: int = -1) -> None:
        """Compute the firing's lets into its frame. A group of lets that reads fewer items than
        the firing binds (the card, not the card and the platform) has the same values in every
        firing of the run that binds the same items, so it is computed once for them: the rule's
        attributes are final before its stratum fires, and an expression reads nothing else. (Its
        work is charged to the budget of the firing that computed it.) ``changed`` (``_frame``): a group
        that reads none of the items that changed keeps the values the frame came with.
        """
        memo = self.memo
        kept = self.kept
        for group in rule.let_groups:
            if not changed & group.mask and changed != -1:
                continue  # the frame came from a firing with the same items for this group: its values are there
            if not group.shared and kept is None:
                for i, let in group.lets:
                    frame[i] = let(frame)
                continue
            key = group.key(frame)
            known: dict[Any, list[Any]] | None = None
            if group.shared:
                known = memo.get(id(group))
                if known is None:
                    known = memo[id(group)] = {}
                values = known.get(key)
                if values is not None:
                    start, stop = group.span
                    frame[start:stop] = values
                    continue
            store: dict[Any, tuple[list[Any], int]] | None = None
            if kept is not None:
                # an earlier run of the runner computed the group on the same attribute values and items: its
                # values, and the work they took charged as computing them would charge it
                store = self.stores.get(id(group))
                if store is None:
                    store = self.stores[id(group)] = kept.store(group, self.key(group.attrs))
                got = store.get(key)
                if got is not None:
                    values, cost = got
                    X.charge(cost)
                    if known is not None:
                        known[key] = values
                    start, stop = group.span
                    frame[start:stop] = values
                    continue
                before = X.steps_left()
            computed = []
            for i, let in group.lets:
                v = frame[i] = let(frame)
                computed.append(v)
            if known is not None:
                known[key] = computed
            if store is not None:
                store[key] = (computed, before - X.steps_left())

    def conclude(self, name: str) -> None:
        attr = self.rb.attributes[name]
        contribs = self.pending.pop(name, [])
        if not contribs:
            self.set(name, S.ABSENT)
            return
        if len(contribs) > 1:
            contribs = self._ordered(contribs)
        try:
            coerced = []
            for c in contribs:
                v = self._coerce(attr, c)
                coerced.append(c if v is c.value else replace(c, value=v))
            contribs = coerced
            combined = combine(attr, contribs)
        except ConflictError as exc:
            rule = self.rb.rules[contribs[0].rule]
            self.errors.append(
                rule_error(
                    rule,
                    str(exc),
                    "give one rule a condition that excludes the "
                    "other case, or declare a combine policy for the attribute",
                    self._items_of(contribs[0].firing),
                )
            )
            self.set(name, S.ABSENT)
            return
        except GpusizerError as exc:
            self.errors.append(exc)
            self.set(name, S.ABSENT)
            return
        value = combined.value
        if attr.type == "integer" and isinstance(value, float) and value.is_integer():
            value = int(value)
        self.set(name, value)
        self.conclusions[name] = Conclusion(name, value, tuple(contribs), combined)

    def _items_key(self, firing: int) -> str:
        """The firing's items as text that orders contributions: by catalog and id, a list's
        members by their place in the list (1, 2, 4, 16, not 1, 16, 2, 4).
        """
        made = self.made[firing]
        key = made.order
        if key is None:
            items = made.items
            if any(cat.startswith(LIST_PREFIX) for cat, _ in items.values()):
                items = {a: (cat, self._place(cat, i)) for a, (cat, i) in items.items()}
            key = made.order = canonical(items)
        return key

    def _place(self, catalog: str, item: str) -> str:
        if not catalog.startswith(LIST_PREFIX):
            return item
        places = self._places.get(catalog)
        if places is None:  # a list's members by their place, once a run
            places = self._places[catalog] = {m: f"{i:09d}" for i, m in enumerate(self.rb.catalogs[catalog].items)}
        return places[item]

    def _ordered(self, contribs: list[Contribution]) -> list[Contribution]:
        """Contributions by rule, then items, then value (as canonical text): the value's text is
        made only where two contributions share a rule and items (which needs an 'any').
        """
        keyed = [((c.rule, self._items_key(c.firing)), c) for c in contribs]
        keyed.sort(key=lambda kc: kc[0])
        if any(a[0] == b[0] for a, b in itertools.pairwise(keyed)):  # tied: the value's text decides
            keyed.sort(key=lambda kc: (kc[0], canonical(kc[1].value)))
        return [c for _, c in keyed]

    def _items_of(self, firing: int) -> dict[str, Item]:
        """The catalog items a recorded firing joined."""
        return {a: self.rb.catalogs[c].items[i] for a, (c, i) in self.firings[firing].items.items()}

    def check(self) -> None:
        """Raise the first error a firing or a combination met."""
        if self.errors:
            raise self.errors[0]

    def _coerce(self, attr: Attribute, c: Contribution) -> Any:
        v = c.value
        t = attr.type
        ok = True
        if t in ("number", "integer"):
            ok = S.is_number(v) and math.isfinite(v)
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
            if ok:
                ok = all(isinstance(v.get(k), (int, float)) for k in attr.key)  # a number, or true or false
            if ok and attr.first_by:
                ok = isinstance(v.get(attr.first_by), (int, float))  # bool is an int
            if ok and attr.within:
                ok = S.is_number(v.get(attr.within[0]))
        if ok and attr.enum and S.kind(v) in ("number", "text", "boolean") and v not in attr.enum:
            ok = False
        if ok and isinstance(v, float) and not math.isfinite(v):
            ok = False
        if not ok:
            rule = self.rb.rules[c.rule]
            want = f"one of {', '.join(map(str, attr.enum))}" if attr.enum else f"a {t}"
            message = f"it concluded {canonical(v)} for '{attr.name}', which must be {want}"
            raise rule_error(rule, message, items=self._items_of(c.firing))
        return v
