"""Scale benchmark: the shipped rulebase with 100, 1,000 and 10,000 extra site rules.

    python benchmarks/scale.py [--sizes 100,1000,10000] [--repeat 3] [--out benchmarks/scale-results.txt]

For each size a fresh process builds a Recommender (load, plan, compile: nothing is cached between
runs), makes a first recommendation, then recommends every example workload again ("later"). Each
figure is the median of ``--repeat`` processes, and is given as a ratio to the shipped rulebase
measured in the same run. Targets: 10,000 extra rules load in at most 10 s and recommend within
3x the shipped rulebase's time.

The extra rules look like a site's own: RAM floors by task and model size, notes by scenario,
precision and batch, GPU hints joined with the GPU catalog. Within a family every rule has a band
(of model sizes, of required memory) or a combination of its own, so that a workload fires at most
one rule of each family however many there are, as a site's own distinct rules would; the
firings column shows it. Every rule is valid, and its two cases (one firing, one silent) pass
``gpusizer test``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ATTRIBUTES = """attributes:
  site.ram_floor_gb:
    type: number
    unit: GB
    combine: max
    description: The site's own floor for system RAM.
  site.notes:
    type: list
    items: string
    combine: union
    description: The site's notes on a workload.
  site.smallest_fit_gb:
    type: number
    unit: GB
    combine: min
    description: The smallest card of the catalog that holds the workload's memory.
"""
TASKS = ["training", "fine-tuning", "inference"]
SCENARIOS = ["personal", "sme", "cluster", "hpc"]
PRECISIONS = ["fp32", "bf16", "fp16", "fp8", "int8", "int4"]
SOURCE = "source: {doc: site-handbook.md, note: the site's own figure}\n"


def _bands(n: int) -> int:
    """How many rules each family has: every rule of a family gets a band of its own."""
    return max(1, -(-n // 3))


def _params(k: int, n: int) -> float:
    """The lower edge of model-size band k (of _bands(n), from 1e6 to 1e12 parameters)."""
    return float(f"{10 ** (6 + 6 * k / _bands(n)):.6g}")


def _need(k: int, n: int) -> float:
    """The lower edge of required-memory band k (of _bands(n), from 1 to 190 GB)."""
    return round(1 + 189 * k / _bands(n), 6)


def _note(k: int) -> tuple[str, str, int]:
    """The scenario, precision and batch size of note rule k (a combination of its own)."""
    return SCENARIOS[k % 4], PRECISIONS[(k // 4) % 6], 1 + k // 24


def site_rule(i: int, n: int) -> str:
    """Site rule i of n; its family comes from i, its band (disjoint from its family's others) from i // 3."""
    family, k = i % 3, i // 3
    if family == 0:  # a RAM floor for a task and a band of model sizes
        return (
            f"when:\n  - task: {TASKS[k % 3]}\n"
            f"  - model.params: {{gt: {_params(k, n)!r}, lte: {_params(k + 1, n)!r}}}\n"
            f"then:\n  site.ram_floor_gb: {32 + (i % 97) * 8}\n"
        )
    if family == 1:  # a note for a scenario, a precision and a batch size
        scenario, precision, batch = _note(k)
        return (
            f"when:\n  - scenario.effective: {scenario}\n  - precision: {precision}\n"
            f"  - batch_size: {{gte: {batch}, lt: {batch + 1}}}\n"
            f"then:\n  site.notes: 'site note {i}: batch {{batch_size}} at {{precision}}'\n"
        )
    return (  # the smallest card that holds a band of required memory
        f"when:\n  - memory.vram_required_gb: {{gt: {_need(k, n)!r}, lte: {_need(k + 1, n)!r}}}\n"
        f"  - item: gpu\n    as: g\n    where:\n      vram_bytes: {{gte: {{ref: memory.vram_required_gb * 1e9}}}}\n"
        f"then:\n  site.smallest_fit_gb: round(g.vram_bytes / 1e9, 3)\n"
    )


def site_cases(i: int, n: int, vram: list[int]) -> str:
    """A firing and a silent case for site rule i (``vram``: the GPU catalog's capacities, in bytes)."""
    family, k = i % 3, i // 3
    if family == 0:
        low, high = _params(k, n), _params(k + 1, n)
        fire = f"{{task: {TASKS[k % 3]}, model.params: {(low * high) ** 0.5:.6g}}}"
        silent = f"{{task: {TASKS[k % 3]}, model.params: {high * 1.5:.6g}}}"
        expect = f"{{site.ram_floor_gb: {32 + (i % 97) * 8}}}"
    elif family == 1:
        scenario, precision, batch = _note(k)
        given = f"scenario.effective: {scenario}, precision: {precision}"
        fire, silent = f"{{{given}, batch_size: {batch}}}", f"{{{given}, batch_size: {batch + 1}}}"
        expect = f"{{site.notes: ['site note {i}: batch {batch} at {precision}']}}"
    else:
        low, high = _need(k, n), _need(k + 1, n)
        need = round((low + high) / 2, 9)
        fits = [v for v in vram if v >= need * 1e9]
        fire = f"{{memory.vram_required_gb: {need!r}}}"
        silent = f"{{memory.vram_required_gb: {round(high + (high - low) / 2, 9)!r}}}"
        expect = f"{{site.smallest_fit_gb: {round(min(fits) / 1e9, 3)!r}}}" if fits else "{}"
    return (
        f"rule: site-rule-{i}\ncases:\n  - name: fires\n    given: {fire}\n    expect: {expect}\n"
        f"  - name: silent\n    given: {silent}\n    expect: {{}}\n"
    )


def write_site(folder: Path, n: int) -> None:
    from engine.load.resources import data_dir
    from engine.load.yamlsrc import load

    gpus = load(data_dir("knowledge") / "gpus.yaml").data["items"]
    vram = sorted(g["vram_bytes"] for g in gpus if g.get("vram_bytes"))
    (folder / "site").mkdir(parents=True, exist_ok=True)
    (folder / "_attributes.yaml").write_text(ATTRIBUTES, encoding="utf-8")
    (folder / "_overlay.yaml").write_text("name: site\n", encoding="utf-8")
    for i in range(n):
        rid = f"site-rule-{i}"
        (folder / "site" / f"{rid}.yaml").write_text(
            f"id: {rid}\nsummary: A site rule ({i}).\n{site_rule(i, n)}{SOURCE}", encoding="utf-8"
        )
        (folder / "site" / f"{rid}.test.yaml").write_text(site_cases(i, n, vram), encoding="utf-8")


def measure(site: str | None) -> dict:
    """In this process: build a Recommender, then a first and later recommendations (seconds)."""
    from engine import Recommender
    from engine.load.resources import data_dir

    examples = sorted((ROOT / "examples").glob("*.yaml"))
    t, c = time.perf_counter(), time.process_time()
    rec = Recommender([data_dir("rules"), site] if site else None)
    load, load_cpu = time.perf_counter() - t, time.process_time() - c
    t = time.perf_counter()
    first = rec.recommend(examples[0])
    first_s = time.perf_counter() - t
    later, later_cpu, firings = [], [], len(first.firings)
    for _ in range(3):
        for w in examples:
            rec.runner.forget()  # a later recommendation computes all (nothing kept from the runs before)
            t, c = time.perf_counter(), time.process_time()
            result = rec.recommend(w)
            later.append(time.perf_counter() - t)
            later_cpu.append(time.process_time() - c)
            firings = max(firings, len(result.firings))
    shards = len(getattr(rec.runner.compiled, "shards", []))
    rec.close()
    return {
        "load_s": load,
        "load_cpu_s": load_cpu,
        "first_s": first_s,
        "later_s": statistics.median(later),
        "later_cpu_s": statistics.median(later_cpu),
        "rules": len(rec.rulebase.rules),
        "max_firings": firings,
        "shards": shards,
    }


def run_size(n: int, repeat: int, tmp: Path) -> dict:
    site = None
    if n:
        site = tmp / f"site-{n}"
        write_site(site, n)
    runs = []
    for _ in range(repeat):
        p = subprocess.run(
            [sys.executable, __file__, "--measure", str(site or "")],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env=dict(os.environ, PYTHONPATH=str(ROOT)),
        )
        runs.append(json.loads(p.stdout))
    timed = ("load_s", "load_cpu_s", "first_s", "later_s", "later_cpu_s")
    out = {k: statistics.median(r[k] for r in runs) for k in timed}
    out.update({k: runs[0][k] for k in ("rules", "max_firings", "shards")})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000,10000")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "scale-results.txt"))
    ap.add_argument("--measure", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.measure is not None:
        print(json.dumps(measure(args.measure or None)))
        return
    sizes = [0] + [int(s) for s in args.sizes.split(",")]
    started = time.strftime("%Y-%m-%d")
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    with tempfile.TemporaryDirectory() as tmp:
        results = {n: run_size(n, args.repeat, Path(tmp)) for n in sizes}
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    base = results[0]

    def ratio(r: dict, k: str) -> str:
        return f"{r[k] / base[k]:>5.1f}x"

    lines = [
        f"gpusizer scale benchmark ({platform.python_implementation()} {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {started}; median of {args.repeat} fresh processes per size; "
        f"load average {load_before:.1f} before, {load_after:.1f} after)",
        "",
        f"{'extra rules':>11}  {'rules':>6}  {'shards':>6}  {'load s':>7}  {'ratio':>6}  {'cpu s':>6}  {'ratio':>6}  "
        f"{'first s':>7}  {'ratio':>6}  {'later s':>7}  {'ratio':>6}  {'cpu s':>6}  {'ratio':>6}  {'firings':>7}",
    ]
    for n, r in results.items():
        lines.append(
            f"{n:>11,}  {r['rules']:>6,}  {r['shards']:>6}  "
            f"{r['load_s']:>7.2f}  {ratio(r, 'load_s')}  {r['load_cpu_s']:>6.2f}  {ratio(r, 'load_cpu_s')}  "
            f"{r['first_s']:>7.3f}  {ratio(r, 'first_s')}  "
            f"{r['later_s']:>7.3f}  {ratio(r, 'later_s')}  {r['later_cpu_s']:>6.3f}  {ratio(r, 'later_cpu_s')}  "
            f"{r['max_firings']:>7}"
        )
    big = results[max(sizes)]
    later = big["later_s"] / base["later_s"]
    lines += [
        "",
        f"targets at {max(sizes):,} extra rules: load <= 10 s: "
        f"{big['load_s']:.1f} s wall, {big['load_cpu_s']:.1f} s CPU "
        f"({'met' if big['load_s'] <= 10 else 'MISSED'}); later recommendations <= 3x the shipped rulebase: "
        f"{later:.1f}x wall, {big['later_cpu_s'] / base['later_cpu_s']:.1f}x CPU ({'met' if later <= 3 else 'MISSED'})",
        "load = Recommender(): read, validate, plan, compile into durable-rules (nothing is cached); first = the "
        "first recommendation; later = the median of every example recommended three times more; cpu = the "
        "process's CPU time for the same (on a shared machine, wall time includes waiting for a CPU).",
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
