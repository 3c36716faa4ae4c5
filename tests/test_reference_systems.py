"""Reference systems (tests/reference_systems.yaml): gpusizer's configuration for the workload each system is bought
for, held against its published specification within the file's tolerances.

A check named in a system's ``differs`` is a deliberate difference: the test asserts that the difference is still
there, so the explanation beside it cannot go stale, and prints why.
"""

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
DOC = yaml.safe_load((Path(__file__).parent / "reference_systems.yaml").read_text(encoding="utf-8"))
TOL = DOC["tolerances"]
SYSTEMS = {s["id"]: s for s in DOC["systems"]}


@pytest.fixture(scope="module")
def results(recommender):
    cache = {}

    def get(sid):
        if sid not in cache:
            cache[sid] = recommender.recommend(SYSTEMS[sid]["workload"]).conclusions
        return cache[sid]

    return get


def _value(c, attr):
    return c[attr].value if attr in c else None


def _ratio(ours, published):
    return None if ours is None or not published else ours / published


def _checks(system, c):
    """(name, holds, detail) for every check the system's published figures allow."""
    pub = system["published"]
    lo_hi = {
        "ram": ("ram.system_gb", "ram_gb"),
        "cores": ("cpu.cores", "cores"),
        "nvme": ("storage.capacity_tb", "nvme_tb"),
    }
    out = [
        ("gpu", _value(c, "gpu.model") == pub["gpu"], f"{_value(c, 'gpu.model')} against {pub['gpu']}"),
        (
            "gpus_per_node",
            _value(c, "gpu.per_node") == pub["gpus_per_node"],
            f"{_value(c, 'gpu.per_node')} against {pub['gpus_per_node']}",
        ),
    ]
    for name, (attr, key) in lo_hi.items():
        if key in pub:
            lo, hi = TOL[name]
            r = _ratio(_value(c, attr), pub[key])
            out.append((name, r is not None and lo <= r <= hi, f"{attr} {_value(c, attr)} against {pub[key]} ({r})"))
    if "max_watts" in pub:
        load = _value(c, "power.load_watts")
        out.append(
            (
                "power",
                load is not None and load >= TOL["power"] * pub["max_watts"],
                f"{load} W against {pub['max_watts']}",
            )
        )
    if "front_adapters" in pub:
        front = (_value(c, "gpu.selection") or {}).get("front_nics")
        out.append(("front", front == pub["front_adapters"], f"{front} against {pub['front_adapters']}"))
    if "adapters" in pub and (_value(c, "nodes") or 1) > 1:
        got = (_value(c, "network.adapters"), _value(c, "network.adapter_gbps"))
        want = (pub["adapters"], pub["adapter_gbps"])
        out.append(("network", got == want, f"{got} against {want}"))
    return out


@pytest.mark.parametrize("sid", sorted(SYSTEMS))
def test_reference_system(sid, results):
    system = SYSTEMS[sid]
    c = results(sid)
    differs = system.get("differs", {})
    assert set(differs) <= {name for name, _, _ in _checks(system, c)}, "differs names a check that does not apply"
    for name, holds, detail in _checks(system, c):
        if name in differs:
            assert not holds, f"{sid}: {name} now agrees with the reference ({detail}); drop the 'differs' entry"
        else:
            assert holds, f"{sid}: {name} out of tolerance: {detail}"
    warnings = " ".join(_value(c, "warnings") or [])
    for word in system.get("warns", []):
        assert word in warnings, f"{sid}: no warning mentions {word!r}"


def test_every_system_cites_its_figures():
    for s in SYSTEMS.values():
        assert s["bought_for"] and s["published"]["gpu"], s["id"]
        assert s["source"] and all(src.get("url") and (src.get("quote") or src.get("note")) for src in s["source"]), s[
            "id"
        ]
        for reason in s.get("differs", {}).values():
            assert len(reason) > 6, s["id"]
