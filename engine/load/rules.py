"""Rule files (and the bases that families of rules extend) into :class:`ir.Rule` values."""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..errors import InputError, hint
from ..lang import expr as X
from ..lang.conditions import parse_when
from ..lang.ir import Attribute, Computed, Conclusion, Condition, FieldCond, ItemCond, Let, Rule, Source, Test
from .schema import check, engine_schema
from .yamlsrc import Doc, NodePath

BASE_SUFFIX = ".base.yaml"


def sources_of(raw: Any) -> tuple[Source, ...]:
    """A rule's ``source`` (one mapping or a list) as Source values."""
    items = raw if isinstance(raw, list) else [raw]
    return tuple(Source(**s) for s in items if isinstance(s, dict))


@dataclass(frozen=True)
class Base:
    """A partial rule that rules of one family extend: shared conditions, lets, conclusions, sources."""

    name: str
    doc: Doc
    sha256: str

    @property
    def data(self) -> dict[str, Any]:
        """The base file's mapping."""
        return self.doc.data  # type: ignore[no-any-return]


def load_base(doc: Doc, stem: str, errors: list[InputError]) -> Base | None:
    """One base file; problems go to ``errors`` and give None."""
    found = check(doc, engine_schema("base"), "a rule base")
    if found:
        errors.extend(found)
        return None
    if doc.data["base"] != stem:
        errors.append(
            doc.error(
                ("base",),
                f"base name '{doc.data['base']}' does not match its file name '{stem}{BASE_SUFFIX}'",
                f"rename the file or set base: {stem}",
            )
        )
        return None
    return Base(stem, doc, _sha(doc))


def _sha(doc: Doc) -> str:
    return hashlib.sha256(doc.text.encode("utf-8")).hexdigest()


def _computed(doc: Doc, path: NodePath, raw: Any, text: bool, formulas: Collection[str] = ()) -> Computed:
    """A ``let``/``then`` value: text with {placeholders} (for a text attribute, or any string with a
    '{'), else an expression.
    """
    owner = doc.data.get("id") or doc.data.get("base")
    kind = "rule" if "id" in doc.data else "base"
    try:
        if isinstance(raw, str) and (text or "{" in raw):
            return X.parse_template(raw, formulas)
        if text and isinstance(raw, list):
            raise X.ExprError("give one text (a template) per rule; a list attribute collects them", 1)
        return X.parse(raw, formulas)
    except X.ExprError as exc:
        line, col = doc.where(path)
        raise InputError(
            f"{kind} '{owner}': {exc.message}",
            file=doc.file,
            line=line,
            col=(col + exc.col - 1) if col and exc.col and isinstance(raw, str) else col,
            snippet=doc.line_text(line),
            help=exc.help,
        ) from None


class _Parts:
    """The pieces of one rule or base, parsed, with the document each came from."""

    def __init__(self, doc: Doc, attributes: Mapping[str, Attribute], formulas: Collection[str]) -> None:
        data = doc.data
        self.doc = doc
        self.when: list[Condition] = list(parse_when(doc, data.get("when") or [], formulas=formulas))
        self.lets: dict[str, Let] = {}
        for name, raw in (data.get("let") or {}).items():
            value = _computed(doc, ("let", name), raw, False, formulas)
            self.lets[name] = Let(name, value, doc.span(("let", name), key=True))
        self.then: dict[str, Conclusion] = {}
        for name, raw in (data.get("then") or {}).items():
            attr = attributes.get(name)
            span = doc.span(("then", name), key=True)
            if isinstance(raw, dict):
                fields = tuple(
                    (k, _computed(doc, ("then", name, k), v, bool(attr and attr.takes_text(k)), formulas))
                    for k, v in raw.items()
                )
                self.then[name] = Conclusion(name, None, fields, span)
            else:
                value = _computed(doc, ("then", name), raw, bool(attr and attr.takes_text()), formulas)
                self.then[name] = Conclusion(name, value, None, span)
        self.sources = sources_of(data["source"]) if "source" in data else ()
        self.priority: int | None = data.get("priority")


def _merge_when(base: list[Condition], mine: list[Condition], doc: Doc) -> tuple[Condition, ...]:
    """The base's conditions, then the rule's; a join with an alias the base already joins adds
    its ``where`` tests to the base's (a test of the same operator replaces the base's).
    """
    out = list(base)
    joins = {c.alias: i for i, c in enumerate(out) if isinstance(c, ItemCond)}
    for cond in mine:
        if isinstance(cond, ItemCond) and cond.alias in joins:
            i = joins[cond.alias]
            prior = out[i]
            assert isinstance(prior, ItemCond)
            if prior.catalog != cond.catalog:
                raise cond.span.error(
                    f"alias '{cond.alias}' joins catalog '{cond.catalog}' here but '{prior.catalog}' in the base",
                    "use the base's catalog, or another alias",
                )
            fields: dict[str, dict[str, Test]] = {f.field: {t.op: t for t in f.tests} for f in prior.where}
            spans = {f.field: f.span for f in prior.where}
            for f in cond.where:
                fields.setdefault(f.field, {}).update({t.op: t for t in f.tests})
                spans.setdefault(f.field, f.span)
            where = tuple(FieldCond(name, tuple(tests.values()), spans[name]) for name, tests in fields.items())
            out[i] = ItemCond(prior.catalog, prior.alias, where, prior.span, prior.members)
        else:
            out.append(cond)
    return tuple(out)


def _merge_then(base: dict[str, Conclusion], mine: dict[str, Conclusion], doc: Doc) -> tuple[Conclusion, ...]:
    out = dict(base)
    for name, c in mine.items():
        prior = out.get(name)
        if prior is None:
            out[name] = c
        elif prior.fields is not None and c.fields is not None:
            fields = dict(prior.fields)
            fields.update(dict(c.fields))
            out[name] = Conclusion(name, None, tuple(fields.items()), c.span)
        elif (prior.fields is None) != (c.fields is None):
            raise c.span.error(
                f"'{name}' is a record in the base and a single value here (or the reverse)",
                "give the same shape as the base, or leave it to the base",
            )
        else:
            out[name] = c
    return tuple(out.values())


def load_rule(
    doc: Doc,
    stem: str,
    area: str,
    attributes: Mapping[str, Attribute],
    bases: Mapping[str, Base],
    errors: list[InputError],
    *,
    overlay: str | None = None,
    test_file: str | None = None,
    formulas: Collection[str] = (),
) -> Rule | None:
    """One rule file, its base expanded; problems go to ``errors`` and give None."""
    if not isinstance(doc.data, dict):
        errors.append(
            InputError(
                "a rule file must be a mapping (id, summary, when, then, source)",
                file=doc.file,
                line=1,
                col=1,
                help="see docs/rules.md or an existing rule",
            )
        )
        return None
    found = check(doc, engine_schema("rule"), "a rule")
    if found:
        errors.extend(found)
        return None
    d = doc.data
    if d["id"] != stem:
        errors.append(
            doc.error(
                ("id",),
                f"rule id '{d['id']}' does not match its file name '{stem}.yaml'",
                f"rename the file to {d['id']}.yaml or set id: {stem}",
            )
        )
        return None
    try:
        chain = _base_chain(doc, d.get("extends"), bases)
        mine = _Parts(doc, attributes, formulas)
        parts = [_Parts(b.doc, attributes, formulas) for b in chain] + [mine]
        when: tuple[Condition, ...] = ()
        lets: dict[str, Let] = {}
        then: tuple[Conclusion, ...] = ()
        sources: list[Source] = []
        priority = 0
        for p in parts:
            when = _merge_when(list(when), p.when, p.doc)
            lets.update(p.lets)
            then = _merge_then({c.attribute: c for c in then}, p.then, p.doc)
            sources += [s for s in p.sources if s not in sources]
            priority = p.priority if p.priority is not None else priority
    except InputError as exc:
        errors.append(exc)
        return None
    if not then:
        errors.append(
            doc.error(
                ("then",),
                "the rule concludes nothing (no 'then', and its base has none)",
                "add 'then:' with at least one conclusion",
                key=True,
            )
        )
        return None
    digest = hashlib.sha256(_sha(doc).encode())
    for b in chain:
        digest.update(b.sha256.encode())
    return Rule(
        id=d["id"],
        summary=d["summary"],
        file=doc.file,
        area=area,
        span=doc.span(("id",), key=True),
        sources=tuple(sources),
        when=when,
        lets=tuple(lets.values()),
        then=then,
        then_span=doc.span(("then",), key=True) if "then" in d else chain[-1].doc.span(("then",), key=True),
        sha256=digest.hexdigest() if chain else _sha(doc),
        priority=priority,
        description=d.get("description"),
        extends=d.get("extends"),
        base_files=tuple(b.doc.file for b in chain),
        test_file=test_file,
        overlay=overlay,
        keys=MappingProxyType({k: doc.span((k,), key=True) for k in d}),
        allow=MappingProxyType(dict(d.get("allow") or {})),
    )


def _base_chain(doc: Doc, name: str | None, bases: Mapping[str, Base]) -> list[Base]:
    """The bases a rule extends, outermost first."""
    chain: list[Base] = []
    where: tuple[Doc, NodePath] = (doc, ("extends",))
    while name is not None:
        base = bases.get(name)
        if base is None:
            d, p = where
            raise d.error(
                p,
                f"unknown base '{name}'",
                f"{hint(name, bases)}bases are files named <name>{BASE_SUFFIX} in a rules directory",
            )
        if any(b.name == base.name for b in chain):
            raise doc.error(
                ("extends",),
                f"bases extend each other in a cycle: {' -> '.join(b.name for b in [*chain, base])}",
                "remove one 'extends'",
            )
        chain.insert(0, base)
        where = (base.doc, ("extends",))
        name = base.data.get("extends")
    return chain


__all__ = ["BASE_SUFFIX", "Base", "load_base", "load_rule", "sources_of"]
