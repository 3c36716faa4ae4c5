"""What a recommendation returns: values, explanations and the derivation graph."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from ..lang.ir import Attribute
from ..load.workload import Workload
from ..plan.rulebase import Rulebase
from ..run.session import Conclusion, Firing, Outcome


def value_node(attr: str) -> str:
    """The derivation graph's node of an attribute's value."""
    return f"v:{attr}"


def firing_node(index: int) -> str:
    """The derivation graph's node of a firing."""
    return f"f:{index}"


def item_node(catalog: str, item_id: str) -> str:
    """The derivation graph's node of a catalog item."""
    return f"i:{catalog}:{item_id}"


@dataclass(frozen=True)
class Result:
    """One recommendation: final values, how each was concluded, and the derivation graph."""

    rulebase: Rulebase
    outcome: Outcome

    # -- values ------------------------------------------------------------
    @property
    def workload(self) -> Workload:
        """The workload this recommendation is for."""
        assert self.outcome.workload is not None
        return self.outcome.workload

    @property
    def values(self) -> Mapping[str, Any]:
        """Every final value: inputs, constants and conclusions."""
        return self.outcome.values

    def unit(self, attr: str) -> str | None:
        """The unit of an attribute's value, its ``{name}`` parts filled in from this result
        (``{price.currency}`` -> ``USD``).
        """
        a = self.rulebase.attributes.get(attr)
        return a.unit_for(self.outcome.values) if a is not None else None

    def __getitem__(self, attr: str) -> Any:
        return self.outcome.values[attr]

    def get(self, attr: str, default: Any = None) -> Any:
        """One final value, or ``default``."""
        return self.outcome.values.get(attr, default)

    @property
    def conclusions(self) -> Mapping[str, Conclusion]:
        """Every concluded attribute, with its contributions and how they combined."""
        return self.outcome.conclusions

    @property
    def firings(self) -> tuple[Firing, ...]:
        """Every rule firing, in order."""
        return self.outcome.firings

    # -- the derivation graph --------------------------------------------------
    @cached_property
    def graph(self) -> Any:
        """networkx.DiGraph: value, item and firing nodes; premise -> firing -> conclusion."""
        import networkx as nx

        rb = self.rulebase
        g = nx.DiGraph()
        for attr, iv in self.outcome.inputs.items():
            g.add_node(
                value_node(attr),
                kind="value",
                attribute=attr,
                value=iv.value,
                unit=self.unit(attr),
                origin=iv.origin,
                detail=iv.detail,
            )
        for attr, c in self.outcome.conclusions.items():
            a = rb.attributes[attr]
            g.add_node(
                value_node(attr),
                kind="value",
                attribute=attr,
                value=c.value,
                unit=self.unit(attr),
                origin="rule",
                combine=a.combine,
                note=c.combined.note,
            )
        for f in self.outcome.firings:
            rule = rb.rules[f.rule].rule
            fn = firing_node(f.index)
            g.add_node(
                fn,
                kind="firing",
                rule=f.rule,
                summary=rule.summary,
                stratum=f.stratum,
                sources=[s.as_dict() for s in rule.sources],
                file=rule.file,
                lets=f.lets_dict(),
                outputs=dict(f.outputs),
            )
            for attr, value in f.attrs.items():
                g.add_edge(value_node(attr), fn, kind="premise", value=value)
            for alias, (catalog, item_id) in f.items.items():
                item = rb.catalogs[catalog].items[item_id]
                node = item_node(catalog, item_id)
                if node not in g:
                    g.add_node(
                        node,
                        kind="item",
                        catalog=catalog,
                        id=item_id,
                        name=item.name,
                        file=item.file,
                        line=item.line,
                        sources=[s.as_dict() for s in item.sources],
                    )
                g.add_edge(node, fn, kind="premise", alias=alias)
        for attr, c in self.outcome.conclusions.items():
            for i, contrib in enumerate(c.contributions):
                g.add_edge(
                    firing_node(contrib.firing),
                    value_node(attr),
                    kind="contribution",
                    value=contrib.value,
                    binding=i in c.combined.binding,
                )
        return g

    # -- explanations ------------------------------------------------------------
    def explain(self, attr: str, *, formulas: bool = True) -> dict[str, Any]:
        """One step: the value, the rule(s) that set it, what they used, what lost; with
        ``formulas``, each contribution's named-formula calls too (the report and the drawings,
        which do not show them, leave them out: computing them is most of an explanation's work).
        """
        rb = self.rulebase
        a = rb.attributes[attr]
        if attr in self.outcome.inputs:
            iv = self.outcome.inputs[attr]
            return {
                "attribute": attr,
                "value": iv.value,
                "unit": self.unit(attr),
                "description": a.description,
                "origin": iv.origin,
                "detail": iv.detail,
            }
        c = self.outcome.conclusions.get(attr)
        if c is None:
            return {
                "attribute": attr,
                "value": None,
                "unit": self.unit(attr),
                "description": a.description,
                "origin": "none",
                "detail": "no rule concluded it for this workload",
                "writers": list(rb.writers.get(attr, ())),
            }
        contributions = []
        rules: dict[str, dict[str, Any]] = {}
        for i, contrib in enumerate(c.contributions):
            f = self.outcome.firings[contrib.firing]
            planned = rb.rules[contrib.rule]
            rule = planned.rule
            about = rules.get(rule.id)
            if about is None:
                about = rules[rule.id] = {
                    "summary": rule.summary,
                    "file": rule.file,
                    "overlay": rule.overlay,
                    "sources": [s.as_dict() for s in rule.sources],
                }
            binds = i in c.combined.binding
            contributions.append(
                {
                    "rule": rule.id,
                    # a beaten contribution's rule is told once, in the step's 'rules' (sixty candidates of
                    # one rule would repeat its sources sixty times)
                    **(about if binds else {}),
                    "value": contrib.value,
                    "binding": binds,
                    "priority": rule.priority,
                    "inputs": {k: v for k, v in sorted(f.attrs.items())},
                    "items": {al: {"catalog": cat, "id": iid} for al, (cat, iid) in sorted(f.items.items())},
                    "lets": f.lets_dict(),
                }
            )
            if formulas and planned.calls:
                contributions[-1]["formulas"] = self._formula_calls(f)
        binding = [x for x in contributions if x["binding"]]
        return {
            "attribute": attr,
            "value": c.value,
            "unit": self.unit(attr),
            "description": a.description,
            "origin": "rule",
            "combine": a.combine,
            "note": c.combined.note,
            "rule": binding[0]["rule"],
            "binding": binding,
            "beaten": [x for x in contributions if not x["binding"]],
            "rules": dict(sorted(rules.items())),
        }

    def _formula_calls(self, f: Firing) -> list[dict[str, Any]]:
        """The formula calls of a firing's rule, computed from what the firing read; a unit that
        names an attribute (``{price.currency}``) shows its value.
        """
        rb = self.rulebase
        items = {alias: rb.catalogs[cat].items[iid] for alias, (cat, iid) in f.items.items()}
        calls = rb.rules[f.rule].formula_calls(f.attrs, items, f.lets)
        for call in calls:
            unit = call["unit"]
            if "{" in unit:
                call["unit"] = Attribute("formula", "number", "", unit=unit).unit_for(self.outcome.values)
        return calls

    def explain_tree(self, attr: str, depth: int | None = None) -> dict[str, Any]:
        """The derivation of ``attr`` down to the input facts (or ``depth`` levels)."""
        seen: set[str] = set()

        def walk(name: str, level: int) -> dict[str, Any]:
            step = self.explain(name)
            if step["origin"] != "rule" or (depth is not None and level >= depth) or name in seen:
                step["premises"] = []
                step["truncated"] = step["origin"] == "rule" and (name in seen or depth is not None)
                return step
            seen.add(name)
            step["truncated"] = False
            premises: list[dict[str, Any]] = []
            for contrib in step["binding"]:
                for pname in contrib["inputs"]:
                    if pname not in [p["attribute"] for p in premises]:
                        premises.append(walk(pname, level + 1))
            step["premises"] = premises
            return step

        return walk(attr, 0)
