"""A non-editable install (a wheel) finds the shipped rules, knowledge and templates."""

import os
import subprocess
import sys
import zipfile

from corpus import ROOT


def test_wheel_carries_the_data_and_runs(tmp_path):
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr
    (wheel,) = dist.glob("gpusizer-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    from engine import __version__  # the one place the version is written (pyproject: tool.hatch.version)

    assert wheel.name.startswith(f"gpusizer-{__version__}-")
    assert any(n.startswith(f"gpusizer-{__version__}.dist-info/") and n.endswith("/LICENSE") for n in names)
    for expected in (
        "engine/_data/rules/_attributes.yaml",
        "engine/_data/knowledge/workload.schema.json",
        "engine/_data/templates/recommend.txt.j2",
        "engine/load/schemas/rule.schema.json",
        "engine/_data/templates/serve.html.j2",
        "engine/serve/static/htmx.min.js",  # the page works offline: its script ships in the package
        "engine/serve/static/htmx-LICENSE.txt",
        "engine/load/schemas/sweep.schema.json",
        "engine/_data/templates/sweep.yaml",
        "engine/_data/templates/sweep.html.j2",
        "engine/sweep/js/vega.min.js",
        "engine/sweep/js/vega-lite.min.js",
        "engine/sweep/js/vega-embed.min.js",
        "engine/sweep/js/LICENSE.vega",
    ):
        assert expected in names
    target = tmp_path / "site"
    inst = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
    )
    assert inst.returncode == 0, inst.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = dict(os.environ, PYTHONPATH=str(target))
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import engine, engine.load.resources as r, sys;"
            "print(engine.__file__); print(r.data_dir('rules'));"
            "from engine.cli import main; sys.exit(main(['recommend', sys.argv[1], '--format', 'json']))",
            str(ROOT / "examples" / "llama2-70b-chat.yaml"),
        ],
        cwd=elsewhere,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    first, second = run.stdout.splitlines()[:2]
    assert first.startswith(str(target)) and second.startswith(str(target))
    assert '"gpu.model"' in run.stdout
