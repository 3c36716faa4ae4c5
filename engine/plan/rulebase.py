"""The planned rulebase: every rule resolved, bound and placed in a stratum."""

from __future__ import annotations

import dataclasses
import gc
import weakref
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..errors import GpusizerError, InputError, Problems, hint
from ..lang.ir import AnyOf, Attribute, Catalog, Formula, InputValue, ItemCond, Not, Rule, list_catalog
from ..load.loader import PARSED, Loaded, load_rulebase_files, read_rulebase_files
from ..load.workload import InputSchema
from .formulas import check_formulas
from .resolve import PlannedRule, first_words_of, plan_rule


@dataclass(frozen=True)
class Rulebase:
    """Attributes, catalogs, constants and planned rules, ordered by (stratum, id)."""

    rule_dirs: tuple[Path, ...]
    knowledge_dirs: tuple[Path, ...]
    attributes: Mapping[str, Attribute]
    catalogs: Mapping[str, Catalog]
    constants: Mapping[str, InputValue]
    rules: Mapping[str, PlannedRule]
    inputs: InputSchema
    strata: int
    writers: Mapping[str, tuple[str, ...]]  # attribute -> ids of the rules that conclude it
    final_at: Mapping[int, tuple[str, ...]]  # stratum -> attributes final at its end
    never_written: tuple[str, ...]  # declared, concluded by no rule: always without a value
    sha256: str
    files: Mapping[str, str]
    overlays: tuple[Mapping[str, Any], ...]
    formulas: Mapping[str, Formula] = dataclasses.field(default_factory=dict)

    def attribute(self, name: str, where: str = "") -> Attribute:
        """The declared attribute, or an input error naming the closest one (for command-line names)."""
        attr = self.attributes.get(name)
        if attr is None:
            raise InputError(
                f"{where}unknown attribute '{name}'",
                help=f"{hint(name, self.attributes)}see the conclusions in 'gpusizer recommend FILE'",
            )
        return attr

    def readers(self) -> dict[str, list[str]]:
        """For each attribute, the ids of the rules that read it."""
        out: dict[str, list[str]] = {}
        for r in self.rules.values():
            for a in sorted(r.reads):
                out.setdefault(a, []).append(r.id)
        return out


def load_rulebase(
    rule_dirs: Sequence[Path | str] | None = None, knowledge_dirs: Sequence[Path | str] | None = None
) -> Rulebase:
    """Load, check and plan; raises InputError/Problems naming file:line for anything wrong.

    The files are read every time; a rulebase planned from the same bytes of the same directories
    under the same limits, and still held somewhere in this process (by a Recommender, a test session),
    is the one returned: a Rulebase is immutable, and loading is deterministic. Reading costs a few
    milliseconds; parsing and planning most of a second.
    """
    read = read_rulebase_files(rule_dirs, knowledge_dirs)
    key = read.fingerprint()
    held = _HELD.get(key) if key is not None else None
    if held is not None:
        return held
    # a process that loads a second rulebase (a test run, a program trying overlays) may load more:
    # from then on it keeps the files it parses for the next load (a single load keeps nothing)
    parsed = PARSED if _HELD else None
    # Parsing and planning make some 160,000 objects and almost no cyclic garbage, yet the cyclic
    # collector walks them again and again while they are made (about a tenth of a fresh process's load):
    # it pauses while they are made, and resumes as it was.
    enabled = gc.isenabled()
    gc.disable()
    try:
        rulebase = plan(load_rulebase_files(read=read, parsed=parsed))
    finally:
        if enabled:
            gc.enable()
    if key is not None:
        _HELD[key] = rulebase
    return rulebase


# fingerprint of the files read -> the rulebase planned from them, while something else holds it
_HELD: weakref.WeakValueDictionary[str, Rulebase] = weakref.WeakValueDictionary()


def plan(loaded: Loaded) -> Rulebase:
    """Resolve, bind and stratify every loaded rule; errors of all rules are reported together."""
    errors: list[GpusizerError] = list(_unit_errors(loaded.attributes))
    formula_errors = check_formulas(loaded.formulas, loaded.attributes, loaded.catalogs)
    if formula_errors:  # a rule calling a broken formula would only repeat its error
        raise Problems([*errors, *formula_errors])
    planned: dict[str, PlannedRule] = {}
    words = first_words_of(loaded.attributes)
    catalogs = with_lists(loaded.catalogs, loaded.rules.values())
    for rid, rule in loaded.rules.items():
        try:
            planned[rid] = plan_rule(rule, loaded.attributes, catalogs, words, loaded.formulas)
        except GpusizerError as exc:
            errors.append(exc)
    if errors:
        raise Problems(errors)
    strata = stratify(planned)
    ordered = {rid: dataclasses.replace(r, stratum=strata[rid]) for rid, r in planned.items()}
    ordered = dict(sorted(ordered.items(), key=lambda kv: (kv[1].stratum, kv[0])))
    writers: dict[str, list[str]] = {}
    for r in ordered.values():
        for a in r.writes:
            writers.setdefault(a, []).append(r.id)
    final_at: dict[int, list[str]] = {}
    for name, ids in writers.items():
        final_at.setdefault(max(ordered[w].stratum for w in ids), []).append(name)
    never = tuple(sorted(n for n, a in loaded.attributes.items() if not a.given and n not in writers))
    return Rulebase(
        rule_dirs=loaded.rule_dirs,
        knowledge_dirs=loaded.knowledge_dirs,
        attributes=loaded.attributes,
        catalogs=MappingProxyType(catalogs),
        constants=loaded.constants,
        rules=MappingProxyType(ordered),
        inputs=loaded.inputs,
        strata=max((r.stratum for r in ordered.values()), default=0),
        writers=MappingProxyType({a: tuple(ids) for a, ids in writers.items()}),
        final_at=MappingProxyType({k: tuple(sorted(v)) for k, v in sorted(final_at.items())}),
        never_written=never,
        sha256=loaded.sha256,
        files=loaded.files,
        overlays=loaded.overlays,
        formulas=loaded.formulas,
    )


def with_lists(catalogs: Mapping[str, Catalog], rules: Iterable[Rule]) -> dict[str, Catalog]:
    """The knowledge catalogs and, for each list a rule ranges over (``each: [1, 2, 4, 8]``), its catalog."""
    out = dict(catalogs)
    for rule in rules:
        for cond in rule.when:
            for c in cond.branches if isinstance(cond, AnyOf) else ((cond,),):
                for x in c:
                    inner = x.inner if isinstance(x, Not) else x
                    if isinstance(inner, ItemCond) and inner.members is not None and inner.catalog not in out:
                        out[inner.catalog] = list_catalog(inner.members, inner.span)
    return out


def _unit_errors(attributes: Mapping[str, Attribute]) -> list[InputError]:
    """A unit may name other attributes in braces; each must be a text attribute."""

    def text(x: Attribute) -> bool:
        return x.type == "string" or (bool(x.enum) and all(isinstance(e, str) for e in x.enum or ()))

    errors = []
    for a in attributes.values():
        for name in a.unit_names:
            other = attributes.get(name)
            if other is None or not text(other):
                what = "no attribute" if other is None else f"a {other.type} attribute, not text"
                guess = hint(name, [n for n, x in attributes.items() if text(x)])
                errors.append(
                    a.span.error(
                        f"the unit of '{a.name}' names '{name}', which is {what}",
                        f"{guess}a unit's {{name}} must be a text attribute whose value is the unit"
                        ' (unit: "{price.currency}")',
                    )
                )
    return errors


def stratify(rules: Mapping[str, PlannedRule]) -> dict[str, int]:
    """Strata from the static graph attribute -> rule -> attribute; a cycle is a load error.

    graphlib (stdlib) does the topological sort: networkx's dispatch machinery costs tens of
    milliseconds on first use, and this runs on every start.
    """
    preds: dict[tuple[str, str], set[tuple[str, str]]] = {}
    for rule in rules.values():
        node = ("rule", rule.id)
        preds.setdefault(node, set()).update(("attr", a) for a in rule.reads)
        for a in rule.writes:
            preds.setdefault(("attr", a), set()).add(node)
    try:
        order = list(TopologicalSorter(preds).static_order())
    except CycleError as exc:
        cycle = exc.args[1]
        ids = list(dict.fromkeys(n[1] for n in cycle if n[0] == "rule"))
        attrs = list(dict.fromkeys(n[1] for n in cycle if n[0] == "attr"))
        # blame the rule loaded last (an overlay's, a new file's): it closed the cycle
        loaded = {rid: i for i, rid in enumerate(rules)}
        start = ids.index(max(ids, key=loaded.__getitem__))
        ids = ids[start:] + ids[:start]
        first = rules[ids[0]].rule
        raise InputError(
            f"rules form a cycle: {' -> '.join(ids + ids[:1])} (through {', '.join(attrs)})",
            file=first.file,
            line=1,
            col=1,
            rule=first.id,
            help="a rule cannot depend, directly or through other rules, on its own "
            "conclusion; split the attribute or remove one dependency",
        ) from None
    level: dict[tuple[str, str], int] = {}
    out: dict[str, int] = {}
    for node in order:
        below = [level[p] for p in preds.get(node, ())]
        level[node] = max(below, default=0) + (1 if node[0] == "rule" else 0)
        if node[0] == "rule":
            out[node[1]] = level[node]
    return out
