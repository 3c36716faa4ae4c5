"""How durable-rules is installed on each Python (README, "Two commands on a fresh machine")."""

import hashlib
import importlib.metadata
import importlib.util
import sys
import tarfile
import tomllib

from corpus import ROOT

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PYPI, VENDORED = "python_version < '3.13'", "python_version >= '3.13'"
_spec = importlib.util.spec_from_file_location("make_durable_rules", ROOT / "vendor" / "make_durable_rules.py")
MAKER = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(MAKER)


def durable_requirements() -> dict:
    """marker -> requirement, for the durable-rules lines of the dependencies."""
    found = {}
    for line in PYPROJECT["project"]["dependencies"]:
        spec, _, marker = line.partition(";")
        if spec.startswith("durable-rules"):
            found[marker.strip()] = spec.strip()
    return found


def vendored_url() -> tuple:
    """(path, sha256) of the vendored tarball, from its direct reference."""
    url = durable_requirements()[VENDORED].partition("@")[2].strip()
    assert url.startswith("{root:uri}/"), url
    url, _, digest = url.partition("#sha256=")
    return ROOT / url.removeprefix("{root:uri}/"), digest


def vendored_tarball():
    return vendored_url()[0]


def test_pypi_release_below_3_13_and_the_vendored_copy_from_3_13():
    assert durable_requirements() == {
        PYPI: "durable-rules==2.0.28",
        VENDORED: "durable-rules @ {root:uri}/"
        + vendored_tarball().relative_to(ROOT).as_posix()
        + "#sha256="
        + vendored_url()[1],
    }
    assert PYPROJECT["tool"]["hatch"]["metadata"]["allow-direct-references"] is True
    assert "vendor" in PYPROJECT["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]


def test_the_vendored_copy_is_2_0_28_with_the_two_fixes():
    path = vendored_tarball()
    assert path.is_file(), f"{path} is missing: see vendor/README.md"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert digest == vendored_url()[1], f"{path.name} changed: put #sha256={digest} in pyproject.toml"
    maker = MAKER
    assert path == maker.OUT and maker.VERSION.startswith("2.0.28+")
    top = f"durable_rules-{maker.VERSION}"
    with tarfile.open(path) as tar:
        text = {
            name: tar.extractfile(f"{top}/{name}").read().decode()
            for name in ("setup.py", "PKG-INFO", "LICENSE", "src/rulespy/rules.c", "libpy/durable/engine.py")
        }
    assert f"version = '{maker.VERSION}'," in text["setup.py"]
    assert f"\nVersion: {maker.VERSION}\n" in text["PKG-INFO"]
    assert "MIT License" in text["LICENSE"]
    assert "PyEval_CallObject" not in text["src/rulespy/rules.c"]
    assert "utcfromtimestamp" not in text["libpy/durable/engine.py"]
    assert text["src/rulespy/rules.c"].count("PyObject_CallObject(callback, arglist)") == 5


def test_the_installed_durable_rules_is_the_one_for_this_python():
    import durable_rules_engine  # noqa: F401 - the C extension loads

    expected = MAKER.VERSION if sys.version_info >= (3, 13) else "2.0.28"
    assert importlib.metadata.version("durable-rules") == expected, (
        "durable-rules was not installed as the README says; reinstall with pip install -e '.[test,serve,dask]'"
    )


def test_ci_runs_the_readme_test_command():
    command = "python3 -m venv .venv && .venv/bin/pip install -e '.[test,serve,dask]' && .venv/bin/python -m pytest"
    assert command in (ROOT / "README.md").read_text(encoding="utf-8")
    assert command in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
