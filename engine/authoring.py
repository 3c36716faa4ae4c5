"""Commands for rule authors: validate, test, rules list/show, new rule, schema, docs."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from .errors import GpusizerError, InputError
from .resources import data_dir

EXIT_OK, EXIT_FINDINGS, EXIT_UNREADABLE = 0, 1, 2


def dirs(args):
    rules = [data_dir("rules")] + list(getattr(args, "rules", None) or [])
    knowledge = [data_dir("knowledge")] + list(getattr(args, "knowledge", None) or [])
    return rules, knowledge


def _split_paths(paths):
    """validate PATH...: directories of rules or knowledge, and workload files."""
    rules, knowledge, workloads = [], [], []
    for p in map(Path, paths):
        if not p.exists():
            raise InputError("no such file or directory", file=str(p), help="check the path")
        if p.is_dir():
            is_knowledge = (p / "workload.schema.json").is_file() or any(
                _looks_like_catalog(f) for f in p.glob("*.yaml"))
            (knowledge if is_knowledge else rules).append(p)
        else:
            workloads.append(p)
    return rules, knowledge, workloads


def _stack(shipped: list, given: list) -> list:
    """A rules directory with its own _attributes.yaml and no _overlay.yaml is a whole rulebase;
    any other is an overlay on the shipped rules."""
    if given and (given[0] / "_attributes.yaml").is_file() and not (given[0] / "_overlay.yaml").is_file():
        return given
    return shipped + given


def _with_paths(args):
    """The rulebase that validate/test PATH... means: the shipped one, with the paths laid over it."""
    extra_rules, extra_knowledge, workloads = _split_paths(args.paths)
    rules, knowledge = dirs(args)
    return _stack(rules, extra_rules), knowledge + extra_knowledge, workloads


def _looks_like_catalog(path: Path) -> bool:
    try:
        head = path.read_text(encoding="utf-8", errors="replace")[:2000]
    except OSError:
        return False
    return any(line.startswith("catalog:") for line in head.splitlines())


def cmd_validate(args) -> int:
    from .lint import lint, to_json

    try:
        rules, knowledge, workloads = _with_paths(args)
    except GpusizerError as exc:
        print(exc.render(), file=sys.stderr)
        return EXIT_UNREADABLE
    if not args.paths:
        workloads = sorted(Path(p) for p in Path("examples").glob("*.yaml")) if Path("examples").is_dir() else []
    findings, _ = lint(rules, knowledge, workloads)
    unreadable = any(f.code == "load" and ("file not found" in f.message or "not UTF-8" in f.message
                                           or "cannot read" in f.message) for f in findings)
    if args.format == "json":
        sys.stdout.write(to_json(findings))
    else:
        for f in findings:
            print(f.render())
        errors = sum(f.level == "error" for f in findings)
        warnings = len(findings) - errors
        print(f"{errors} error(s), {warnings} warning(s)")
    if unreadable:
        return EXIT_UNREADABLE
    return EXIT_FINDINGS if any(f.level == "error" for f in findings) else EXIT_OK


def cmd_test(args) -> int:
    from .api import Recommender
    from .rulebase import load_rulebase
    from .testing import run_all, run_workload_case, workload_cases

    rules, knowledge, _ = _with_paths(args)
    rb = load_rulebase(rules, knowledge)
    outcomes, cov = run_all(rb)
    for folder in args.workloads or []:
        rec = Recommender(rulebase=rb)
        outcomes += [run_workload_case(rec, c) for c in workload_cases(Path(folder))]
    failed = [o for o in outcomes if not o.passed]
    for o in failed:
        print(f"FAIL {o.case.id}\n{o.message}")
    status = EXIT_OK if not failed else EXIT_FINDINGS
    if args.coverage:
        print(f"rule coverage: {cov.percent:.1f}% of {len(cov.all_rules)} rules both fired and stayed silent")
        for title, items in (("never fired", cov.never_fired), ("never stayed silent", cov.never_silent),
                             ("attributes no case checks", cov.unchecked_attrs)):
            print(f"  {title}: {', '.join(items) if items else 'none'}")
        if args.min_coverage is not None and cov.percent < args.min_coverage:
            print(f"coverage {cov.percent:.1f}% is below --min-coverage {args.min_coverage:g}%")
            status = EXIT_FINDINGS
    print(f"{len(outcomes) - len(failed)} passed, {len(failed)} failed")
    return status


def _rule_record(rb, rule) -> dict:
    feeds = sorted({r.id for r in rb.rules.values() if set(rule.writes) & r.reads})
    fed_by = sorted({w for a in rule.reads for w in rb.writers.get(a, [])})
    tests = []
    if rule.test_file:
        from .yamlsrc import load
        tests = [c.get("name") for c in (load(rule.test_file).data or {}).get("cases", [])]
    then = {}
    for attr, e in rule.then.items():
        then[attr] = {k: v.source for k, v in e.items()} if isinstance(e, dict) else e.source
    return {"id": rule.id, "area": rule.area, "summary": rule.summary, "file": rule.file,
            "priority": rule.priority, "stratum": rule.stratum, "overlay": rule.overlay,
            "when": rule.when, "let": {k: v.source for k, v in rule.let.items()}, "then": then,
            "sources": [s.as_dict() for s in rule.sources], "tests": tests,
            "reads": sorted(rule.reads), "writes": list(rule.writes), "fed_by": fed_by, "feeds": feeds}


def cmd_rules(args) -> int:
    from .report import environment
    from .rulebase import load_rulebase

    rb = load_rulebase(*dirs(args))
    if args.action == "show":
        rule = rb.rules.get(args.id)
        if rule is None:
            from .validate import closest
            guess = closest(args.id, rb.rules)
            raise InputError(f"unknown rule '{args.id}'", help=(f"did you mean '{guess}'? " if guess else "")
                             + "see 'gpusizer rules list'")
        records = [_rule_record(rb, rule)]
    else:
        records = [_rule_record(rb, r) for r in sorted(rb.rules.values(), key=lambda r: (r.area, r.id))]
    if args.format == "json":
        sys.stdout.write(json.dumps(records if args.action == "list" else records[0], indent=2,
                                    ensure_ascii=False) + "\n")
        return EXIT_OK
    ext = {"text": "txt", "markdown": "md"}[args.format]
    tmpl = environment().get_template(f"rules-{args.action}.{ext}.j2")
    sys.stdout.write(tmpl.render(rules=records, rule=records[0] if records else None))
    return EXIT_OK


def render_docs(rb) -> str:
    from .report import environment
    from .yamlsrc import load

    records = [_rule_record(rb, r) for r in sorted(rb.rules.values(), key=lambda r: (r.area, r.id))]
    guidance = None
    path = Path(rb.rule_dirs[0]) / "_guidance.yaml"
    if path.is_file():
        guidance = load(path).data
    attributes = [{"name": a.name, "type": a.type, "unit": a.unit, "combine": a.combine,
                   "description": a.description, "input": a.input,
                   "writers": rb.writers.get(a.name, [])} for a in sorted(rb.attributes.values(), key=lambda a: a.name)]
    return environment().get_template("rules-doc.md.j2").render(rules=records, guidance=guidance,
                                                                   attributes=attributes, known=set(rb.rules))


def cmd_docs(args) -> int:
    from .rulebase import load_rulebase

    text = render_docs(load_rulebase(*dirs(args)))
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return EXIT_OK


RULE_SKELETON = """\
id: {id}
summary: TODO one line saying what this rule concludes and why.
when:
  - task: training
then:
  warnings: "'{id}: replace this conclusion'"
source:
  doc: TODO the seed file, paper or datasheet this rule comes from
  quote: TODO a short quote that supports it
"""

TEST_SKELETON = """\
rule: {id}
cases:
  - name: fires-for-training
    given: {{task: training}}
    expect:
      warnings: ["{id}: replace this conclusion"]
  - name: silent-for-inference
    given: {{task: inference}}
    expect: {{}}
"""


def cmd_new(args) -> int:
    import re

    target = args.target
    if "/" not in target:
        raise InputError(f"'{target}' needs an area: AREA/ID, e.g. ram/ram-site-floor",
                         help="the area is the folder under rules/")
    area, rid = target.split("/", 1)
    if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rid) or not re.fullmatch(r"[a-z0-9_-]+", area):
        raise InputError(f"'{target}': ids are kebab-case (lower-case words joined by '-')",
                         help="e.g. gpusizer new rule ram/ram-site-floor")
    root = Path(args.rules) if args.rules else data_dir("rules")
    folder = root / area
    rule_path, test_path = folder / f"{rid}.yaml", folder / f"{rid}.test.yaml"
    existing = list(root.rglob(f"{rid}.yaml"))
    if existing:
        raise InputError(f"rule '{rid}' already exists", file=str(existing[0]),
                         help="rule ids are unique and permanent; pick another id")
    folder.mkdir(parents=True, exist_ok=True)
    rule_path.write_text(RULE_SKELETON.format(id=rid), encoding="utf-8")
    test_path.write_text(TEST_SKELETON.format(id=rid), encoding="utf-8")
    print(f"wrote {rule_path}\nwrote {test_path}\n"
          "next: edit both, then run 'gpusizer validate' and 'gpusizer test'")
    return EXIT_OK


def cmd_schema(args) -> int:
    if args.kind == "workload":
        text = (data_dir("knowledge") / "workload.schema.json").read_text(encoding="utf-8")
    else:
        text = (Path(__file__).parent / "schemas" / f"{args.kind}.schema.json").read_text(encoding="utf-8")
    sys.stdout.write(text)
    return EXIT_OK
