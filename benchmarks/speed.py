"""Speed benchmark: ratios against baselines measured in the same run.

    python benchmarks/speed.py [--workloads 1000] [--runs 10]

1. ``gpusizer recommend`` end to end, against the floor of importing the
   dependencies (python -c "import yaml, networkx, jinja2, durable.engine").
2. In-process throughput over many workloads, each with its full derivation
   graph and JSON report.
3. The engine's own cost: the same rule firings replayed through bare
   durable-rules (same compiled rules, same facts, trivial actions).
Targets (from the project's issue): (1) at most 1.5x, (3) at most 2x.
"""
from __future__ import annotations

import argparse
import itertools
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EXAMPLE = ROOT / "examples" / "llama2-70b-chat.yaml"


def _median_seconds(cmd, runs, env=None):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env, cwd=ROOT)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def end_to_end(runs: int) -> dict:
    py = sys.executable
    floor = _median_seconds([py, "-c", "import yaml, networkx, jinja2, durable.engine"], runs)
    cmd = [py, "-m", "engine", "recommend", str(EXAMPLE)]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, cwd=ROOT)  # warm the validation memo
    warm = _median_seconds(cmd, runs)
    cold = _median_seconds(cmd, runs, env=dict(os.environ, GPUSIZER_NO_CACHE="1"))
    return {"floor_s": floor, "warm_s": warm, "cold_s": cold,
            "warm_ratio": warm / floor, "cold_ratio": cold / floor}


def workloads(n: int) -> list[dict]:
    models = ["llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b", "mistral-7b", "mixtral-8x7b",
              "qwen2.5-7b", "gpt2", "gpt2-xl", "bert-base-uncased", "bert-large-uncased"]
    combos = itertools.cycle(itertools.product(models, ["inference", "training", "fine-tuning"],
                                               ["fp16", "bf16", "int8", "fp32"], [1, 4, 16], [512, 2048, 8192]))
    out = []
    for i, (model, task, prec, batch, seq) in zip(range(n), combos):
        out.append({"name": f"w{i}", "task": task, "model": {"name": model}, "precision": prec,
                    "batch_size": batch, "sequence_length": seq, "needs_fp64": i % 7 == 0,
                    "dataset": {"size_gb": (i % 5) * 60}})
    return out


class _Recorder:
    """Wraps the engine's durable Host, recording every fact asserted, in order."""

    def __init__(self, host):
        self.host, self.log = host, []

    def assert_facts(self, facts):
        self.log.append(("many", [dict(f) for f in facts]))
        return self.host.assert_facts(facts)

    def assert_fact(self, fact):
        self.log.append(("one", dict(fact)))
        return self.host.assert_fact(fact)

    def __getattr__(self, name):
        return getattr(self.host, name)


def throughput_and_overhead(n: int) -> dict:
    from engine import Recommender
    from engine.durable_adapter import Host
    from engine.report import document

    rec = Recommender()
    docs = workloads(n)
    loaded = [rec.load(d) for d in docs]
    # (2) full path: session, firings, graph, JSON document
    t = time.perf_counter()
    firings = 0
    for w in loaded:
        result = rec.recommend(w)
        _ = result.graph
        document(result)
        firings += len(result.firings)
    full = time.perf_counter() - t
    # (3a) the engine alone (sessions, actions, combining), recording the facts it asserts
    recorder = _Recorder(rec.engine.host)
    rec.engine.host = recorder
    t = time.perf_counter()
    for w in loaded:
        rec.engine.run(w)
    engine_only = time.perf_counter() - t
    rec.engine.host = recorder.host
    # (3b) bare durable-rules: same compiled conditions, trivial actions, same facts
    counter = [0]

    def trivial(c):
        counter[0] += 1
    bare = Host({(rid if k == 0 else f"{rid}#{k + 1}"): v.durable(r.stratum, trivial)
                 for rid, r in rec.rulebase.rules.items() for k, v in enumerate(r.variants)})
    # the engine deletes each session when its workload is done; so does the replay
    t = time.perf_counter()
    current = None
    for kind, payload in recorder.log:
        sid = (payload[0]["sid"] if payload else current) if kind == "many" else payload["sid"]
        if current is not None and sid != current:
            bare.delete(current)
        current = sid
        if kind == "many":
            bare.assert_facts(payload)
        else:
            bare.assert_fact(payload)
    if current is not None:
        bare.delete(current)
    bare_s = time.perf_counter() - t
    return {"workloads": n, "firings": firings, "full_s": full, "per_s": n / full,
            "engine_s": engine_only, "bare_s": bare_s, "bare_firings": counter[0],
            "engine_ratio": engine_only / bare_s}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workloads", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    e2e = end_to_end(args.runs)
    tp = throughput_and_overhead(args.workloads)
    print(f"gpusizer speed benchmark ({platform.python_implementation()} {platform.python_version()}, "
          f"{os.cpu_count()} CPUs)")
    print()
    print("1. gpusizer recommend, end to end (median of %d runs)" % args.runs)
    print(f"   floor: import yaml, networkx, jinja2, durable.engine   {e2e['floor_s'] * 1000:7.1f} ms")
    print(f"   recommend (validated rulebase remembered)              {e2e['warm_s'] * 1000:7.1f} ms"
          f"   ratio {e2e['warm_ratio']:.2f}x  (target <= 1.5x)")
    print(f"   recommend (GPUSIZER_NO_CACHE=1, full validation)       {e2e['cold_s'] * 1000:7.1f} ms"
          f"   ratio {e2e['cold_ratio']:.2f}x")
    print()
    print(f"2. in-process throughput, {tp['workloads']} workloads with derivation graphs and JSON reports")
    print(f"   {tp['full_s']:.2f} s, {tp['per_s']:.0f} workloads/s, {tp['firings']} firings")
    print()
    print("3. engine cost against bare durable-rules (same rules, same facts, trivial actions)")
    print(f"   engine sessions {tp['engine_s']:.2f} s, bare durable-rules {tp['bare_s']:.2f} s "
          f"({tp['bare_firings']} firings)   ratio {tp['engine_ratio']:.2f}x  (target <= 2x)")


if __name__ == "__main__":
    main()
