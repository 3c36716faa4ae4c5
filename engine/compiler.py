"""Compile a rule's YAML conditions into durable-rules' condition language.

Facts in a session (property names never collide with durable's own ``id`` and
``sid``):

* attribute value  ``{t: "a", n: <attribute>, ok: 1, v: <scalar value>}``, plus ``vn: <value>``
  when it is a number (ordering tests read vn, so a text value never meets them); a list's
  carries ``len: <member count>`` instead of ``v``;
  an attribute known to have no value is ``{t: "a", n: <attribute>, ok: 0}``;
* list member      ``{t: "m", n: <attribute>, v: <member>}``, one per member;
* catalog item     ``{t: "i", c: <catalog>, f_<field>: <value>, ...}``;
* stratum marker   ``{t: "s", k: <stratum>}``: a rule's patterns include the
  marker of its stratum, so it fires only once every attribute it reads is final.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Callable

from . import expr as X
from .errors import InputError
from .model import Rule

_CMP = {"gt": "$gt", "gte": "$gte", "lt": "$lt", "lte": "$lte", "ne": "$neq"}
_ARITH = {ast.Add: "$add", ast.Sub: "$sub", ast.Mult: "$mul", ast.Div: "$div"}


def fprop(name: str) -> str:
    return f"f_{name}"


@dataclass
class Binding:
    """How an action reads the facts a firing matched."""

    alias: str  # durable alias
    kind: str  # "attr" | "item"
    name: str  # attribute name, or the user's item alias
    catalog: str | None = None


@dataclass
class CompiledRule:
    conditions: list  # durable "all" list (without the stratum marker)
    bindings: list  # Binding for each positive pattern an action reads
    resolve: Callable = None  # dotted name -> ("attr", name, rest) | ("item", alias, field) | ("let", name, rest)
    getters: dict = field(default_factory=dict)  # attr -> evaluator (env -> value) or {field: evaluator}
    lets: list = field(default_factory=list)  # (name, evaluator)

    def durable(self, stratum: int, action) -> dict:
        marker = {"s0": {"$and": [{"t": "s"}, {"k": stratum}]}}
        return {"all": [marker] + [dict(c) for c in self.conditions], "run": action}


class RuleCompileError(Exception):
    def __init__(self, path: tuple, message: str, help: str | None = None, key: bool = False):
        super().__init__(message)
        self.path, self.message, self.help, self.key = path, message, help, key


class Compiler:
    """Compiles one rule against the declared attributes and catalogs."""

    def __init__(self, rule: Rule, attributes: dict, catalogs: dict):
        self.rule = rule
        self.attributes = attributes
        self.catalogs = catalogs
        self.attr_alias: dict[str, str] = {}
        self.attr_tests: dict[str, list] = {}
        self.absent: set[str] = set()
        self.item_alias: dict[str, tuple[str, str]] = {}  # user alias -> (durable alias, catalog)
        self.patterns: list = []  # item / member / negation patterns in file order
        self.counter = 0
        self.reads: set[str] = set()
        self.ref_tested: set[str] = set()

    # -- names ---------------------------------------------------------------
    def _new(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def attribute(self, name: str, path: tuple):
        attr = self.attributes.get(name)
        if attr is None:
            guess = _closest(name, self.attributes)
            raise RuleCompileError(path, f"unknown attribute '{name}'",
                                   (f"did you mean '{guess}'? " if guess else "")
                                   + "declare it in rules/_attributes.yaml or use a workload input", key=True)
        return attr

    def resolve_name(self, dotted: str, path: tuple, lets=()):
        parts = dotted.split(".")
        if parts[0] in self.item_alias:
            _, catalog = self.item_alias[parts[0]]
            fieldname = ".".join(parts[1:])
            if not fieldname:
                raise RuleCompileError(path, f"'{dotted}' names a whole item; read one of its fields",
                                       f"e.g. {parts[0]}.id")
            if not self.catalogs[catalog].has_field(fieldname):
                guess = _closest(fieldname, ["id", "name", *self.catalogs[catalog].fields])
                raise RuleCompileError(path, f"catalog '{catalog}' has no field '{fieldname}'",
                                       f"did you mean '{parts[0]}.{guess}'?" if guess else
                                       f"declare the field in the '{catalog}' catalog")
            return ("item", parts[0], fieldname)
        if parts[0] in lets:
            return ("let", parts[0], tuple(parts[1:]))
        for cut in range(len(parts), 0, -1):
            name = ".".join(parts[:cut])
            if name in self.attributes:
                rest = tuple(parts[cut:])
                if rest and self.attributes[name].type not in ("record", "scalar"):
                    raise RuleCompileError(path, f"'{name}' is a {self.attributes[name].type}, "
                                                 f"it has no field '{'.'.join(rest)}'")
                if name in self.absent:
                    raise RuleCompileError(path, f"'{name}' is tested with exists: false and cannot be read")
                self.reads.add(name)
                self.bind_attr(name)
                return ("attr", name, rest)
        guess = _closest(dotted, list(self.attributes) + list(self.item_alias) + list(lets))
        raise RuleCompileError(path, f"unknown name '{dotted}'",
                               (f"did you mean '{guess}'? " if guess else "")
                               + "names are attributes, item aliases (from 'as:') or 'let' names")

    def bind_attr(self, name: str) -> str:
        if name not in self.attr_alias:
            self.attr_alias[name] = self._new("a")
            self.attr_tests.setdefault(name, [])
        return self.attr_alias[name]

    # -- operands ------------------------------------------------------------
    def operand(self, value, path: tuple):
        if isinstance(value, dict) and "ref" in value:
            try:
                e = X.parse(value["ref"])
            except X.ExprError as exc:
                raise RuleCompileError(path + ("ref",), f"in ref: {exc.message}", exc.help)
            return self._ref(e.tree.body, path + ("ref",))
        return value

    def _ref(self, node, path):
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, (ast.Name, ast.Attribute)):
            kind, name, rest = self.resolve_name(X.dotted(node), path)
            if kind == "item":
                return {self.item_alias[name][0]: fprop(rest)}
            if rest:
                raise RuleCompileError(path, "a ref can read a record attribute's fields only in 'then'")
            return {self.attr_alias[name]: "v"}
        if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
            return {_ARITH[type(node.op)]: {"$l": self._ref(node.left, path), "$r": self._ref(node.right, path)}}
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return -node.operand.value
        raise RuleCompileError(path, "a ref may only use names, numbers and + - * /",
                               "move other computation into 'let' and compare in a later rule")

    # -- tests ---------------------------------------------------------------
    def tests(self, prop: str, tests, path: tuple, *, is_list: bool = False) -> list:
        if not isinstance(tests, dict) or set(tests) == {"ref"}:
            tests = {"eq": tests}
        out = []
        for op, value in tests.items():
            p = path + (op,)
            if op in ("contains", "not_contains", "empty"):
                continue  # member facts and the list's length, handled by the caller
            if is_list and op not in ("exists",):
                raise RuleCompileError(p, f"'{op}' cannot test a list attribute",
                                       "use contains / not_contains / exists")
            if op == "eq":
                out.append({prop: self.operand(value, p)})
            elif op in _CMP:
                # an attribute's ordering tests read 'vn', present on numbers only: durable-rules fails
                # with error 312 when it orders a text value (gpu.count: auto) against a number
                key = "vn" if prop == "v" and op != "ne" else prop
                out.append({_CMP[op]: {key: self.operand(value, p)}})
            elif op == "in":
                out.append({"$or": [{prop: v} for v in value]} if len(value) > 1 else {prop: value[0]})
            elif op == "not_in":
                out.extend({"$neq": {prop: v}} for v in value)
            elif op == "exists":
                out.append({"$ex" if value else "$nex": {prop: 1}})
        return out

    # -- conditions ------------------------------------------------------------
    def condition(self, cond: dict, path: tuple, negated: bool = False):
        if "not" in cond:
            inner = cond["not"]
            self.condition(inner, path + ("not",), negated=True)
            return
        if "item" in cond:
            catalog = cond["item"]
            if catalog not in self.catalogs:
                guess = _closest(catalog, self.catalogs)
                raise RuleCompileError(path + ("item",), f"unknown catalog '{catalog}'",
                                       (f"did you mean '{guess}'? " if guess else "")
                                       + f"catalogs: {', '.join(sorted(self.catalogs))}")
            alias = cond["as"]
            if alias in self.item_alias or alias in self.attributes or alias.split(".")[0] in {
                    a.split(".")[0] for a in self.attributes}:
                raise RuleCompileError(path + ("as",), f"alias '{alias}' is already used or names an attribute",
                                       "pick a short alias that is not an attribute's first word, e.g. g")
            dalias = self._new("i") + ("$not" if negated else "")
            if not negated:
                self.item_alias[alias] = (dalias, catalog)
            parts = [{"t": "i"}, {"c": catalog}]
            for fname, t in (cond.get("where") or {}).items():
                if not self.catalogs[catalog].has_field(fname):
                    guess = _closest(fname, ["id", "name", *self.catalogs[catalog].fields])
                    raise RuleCompileError(path + ("where", fname), f"catalog '{catalog}' has no field '{fname}'",
                                           (f"did you mean '{guess}'? " if guess else "")
                                           + "the fields are declared at the top of the catalog file", key=True)
                parts += self.tests(fprop(fname), t, path + ("where", fname))
            self.patterns.append({dalias: {"$and": parts}})
            return
        (name, tests), = cond.items()
        attr = self.attribute(name, path + (name,))
        p = path + (name,)
        self.reads.add(name)
        tdict = tests if isinstance(tests, dict) and set(tests) != {"ref"} else {"eq": tests}
        members = [(op, v) for op, v in tdict.items() if op in ("contains", "not_contains")]
        if members and not attr.is_list:
            raise RuleCompileError(p, f"contains needs a list attribute; '{name}' is a {attr.type}")
        if "empty" in tdict and not attr.is_list:
            raise RuleCompileError(p + ("empty",), f"'empty' tests a list attribute; '{name}' is not a list ({attr.type})",
                                   "use exists, or a comparison")
        for op, value in members:
            neg = (op == "not_contains") != negated
            dalias = self._new("m") + ("$not" if neg else "")
            self.patterns.append({dalias: {"$and": [{"t": "m"}, {"n": name}, {"v": self.operand(value, p + (op,))}]}})
            if not neg:
                # a list with a member exists: bind it, so the firing records the list it read
                self.bind_attr(name)
        rest = {op: v for op, v in tdict.items() if op not in ("contains", "not_contains")}
        if not rest:
            return
        if negated:
            dalias = self._new("n") + "$not"
            if rest.get("exists") is False:
                raise RuleCompileError(p, "write 'exists: true' instead of not + exists: false")
            parts = [{"t": "a"}, {"n": name}, {"ok": 1}] + self.tests("v", rest, p, is_list=attr.is_list)
            if "empty" in rest:
                parts.append(_length_test(rest["empty"]))
            self.patterns.append({dalias: {"$and": parts}})
            return
        if rest.get("exists") is False:
            if len(rest) > 1:
                raise RuleCompileError(p, "exists: false cannot be combined with other tests")
            if name in self.attr_alias:
                raise RuleCompileError(p, f"'{name}' is both read and tested with exists: false")
            self.absent.add(name)
            dalias = self._new("z")
            self.patterns.append({dalias: {"$and": [{"t": "a"}, {"n": name}, {"ok": 0}]}})
            return
        rest = {op: v for op, v in rest.items() if not (op == "exists" and v is True)}
        if any(isinstance(v, dict) and "ref" in v for v in rest.values()):
            self.ref_tested.add(name)
        if "empty" in rest:
            self.attr_tests.setdefault(name, [])
            self.attr_tests[name].append(_length_test(rest.pop("empty")))
        self.bind_attr(name)
        self.attr_tests[name].extend(self.tests("v", rest, p, is_list=attr.is_list) if rest else [])

    def compile(self, conditions=None) -> CompiledRule:
        """``conditions``: (path, condition) pairs of one alternative (default: the rule's 'when')."""
        rule = self.rule
        if conditions is None:
            conditions = [(("when", i), cond) for i, cond in enumerate(rule.when)]
        for path, cond in conditions:
            self.condition(cond, path)
        lets: dict[str, object] = {}
        let_getters = []
        for name, e in rule.let.items():
            if name in self.item_alias or name in self.attributes:
                raise RuleCompileError(("let", name), f"let name '{name}' hides an attribute or alias",
                                       "pick another name", key=True)
            let_getters.append((name, self._bind(e, ("let", name), lets)))
            lets[name] = True
        getters = {}
        for attr_name, value in rule.then.items():
            attr = self.attribute(attr_name, ("then", attr_name))
            if attr.input:
                raise RuleCompileError(("then", attr_name), f"'{attr_name}' is a workload input; rules cannot set it",
                                       "conclude a new attribute instead", key=True)
            if isinstance(value, dict):
                if attr.type != "record":
                    raise RuleCompileError(("then", attr_name), f"'{attr_name}' is a {attr.type}, not a record",
                                           "give one expression")
                getters[attr_name] = {k: self._bind(v, ("then", attr_name, k), lets) for k, v in value.items()}
                for need in (attr.key, attr.first_by):
                    if need and need not in value:
                        raise RuleCompileError(("then", attr_name), f"record for '{attr_name}' lacks its field '{need}'",
                                               f"add '{need}: ...' (the combine policy compares it)")
            elif attr.enum and isinstance(value, X.Expr) and value.source in map(str, attr.enum):
                # a bare enum word (scenario.effective: personal) is that value, not a name
                literal = next(e for e in attr.enum if str(e) == value.source)
                getters[attr_name] = lambda env, v=literal: v
            else:
                getters[attr_name] = self._bind(value, ("then", attr_name), lets)
        # attribute patterns first (their tests may only ref other attributes bound earlier)
        plain, with_refs = [], []
        for name in sorted(self.attr_alias):
            parts = [{"t": "a"}, {"n": name}, {"ok": 1}] + self.attr_tests[name]
            pattern = {self.attr_alias[name]: {"$and": parts}}
            (with_refs if name in self.ref_tested else plain).append(pattern)
        # durable-rules resolves a reference against aliases listed before it
        conditions = plain + self.patterns + with_refs
        joined = len(conditions) + 1  # + the stratum marker
        if joined > MAX_FACTS_PER_RULE:
            read = sorted(self.attr_alias)
            raise RuleCompileError(("when",), f"the rule joins {joined} facts (its conditions, the stratum "
                                   f"marker and every attribute it reads: {', '.join(read)}); the rule "
                                   f"engine matches at most {MAX_FACTS_PER_RULE} at once",
                                   "move part of the computation into a rule of its own that concludes an "
                                   "intermediate attribute, and read that one attribute here", key=True)
        bindings = [Binding(a, "attr", n) for n, a in self.attr_alias.items()]
        bindings += [Binding(d, "item", u, c) for u, (d, c) in self.item_alias.items()]
        return CompiledRule(conditions=conditions, bindings=bindings, getters=getters, lets=let_getters)

    def _bind(self, e, path, lets):
        if not isinstance(e, X.Expr):
            try:
                e = X.parse(e)
            except X.ExprError as exc:
                raise RuleCompileError(path, f"in expression {e!r}: {exc.message}", exc.help) from None
        kinds = {}
        for name in sorted(e.names):
            kinds[name] = self.resolve_name(name, path, lets)

        def resolve(dotted):
            kind, name, rest = kinds[dotted]
            if kind == "item":
                return lambda env, n=name, f=rest: env["items"][n].get(f)
            if kind == "let":
                return _field_getter(lambda env, n=name: env["lets"][n], rest, dotted)
            return _field_getter(lambda env, n=name: env["attrs"][n], rest, dotted)
        return e.bind(resolve)


def _field_getter(base, rest, dotted):
    if not rest:
        return base

    def get(env):
        v = base(env)
        for part in rest:
            if not isinstance(v, dict) or part not in v:
                raise X.ExprError(f"'{dotted}': no field '{part}'")
            v = v[part]
        return v
    return get


def _closest(word, options):
    from .validate import closest
    return closest(word, list(options))


MAX_ALTERNATIVES = 16


def alternatives(when: list) -> list:
    """Expand 'any' conditions: one list of (path, condition) per combination of alternatives."""
    combos = [[]]
    for i, cond in enumerate(when):
        if isinstance(cond, dict) and "any" in cond:
            combos = [prefix + [(("when", i, "any", j, m), c) for m, c in enumerate(branch)]
                      for j, branch in enumerate(cond["any"]) for prefix in combos]
        else:
            combos = [prefix + [(("when", i), cond)] for prefix in combos]
    return combos


def _length_test(empty: bool) -> dict:
    """'empty' on a list attribute: a test on the member count its fact carries."""
    return {"len": 0} if empty else {"$gt": {"len": 0}}


# durable-rules keeps the facts one rule instance has matched in a 16-slot table (MAX_MESSAGE_FRAMES
# in its rete); a 17th fails at run time with the bare error 304, so it is refused when compiling.
MAX_FACTS_PER_RULE = 16


def compile_rule(rule: Rule, attributes: dict, catalogs: dict) -> list[CompiledRule]:
    """One CompiledRule per alternative: durable-rules gets one rule each, sharing the action."""
    combos = alternatives(rule.when)
    if len(combos) > MAX_ALTERNATIVES:
        raise rule.doc.error(("when",), f"the 'any' conditions combine into {len(combos)} alternatives; "
                             f"at most {MAX_ALTERNATIVES}", "split the rule in two", key=True)
    out, reads, items = [], set(), {}
    for combo in combos:
        c = Compiler(rule, attributes, catalogs)
        try:
            out.append(c.compile(combo))
        except RuleCompileError as exc:
            raise rule.doc.error(exc.path, exc.message, exc.help, key=exc.key) from None
        except X.ExprError as exc:
            raise InputError(f"in rule '{rule.id}': {exc.message}", file=rule.file, help=exc.help) from None
        reads |= c.reads
        items.update({u: cat for u, (_, cat) in c.item_alias.items()})
    rule.reads = reads
    rule.items = items
    return out
