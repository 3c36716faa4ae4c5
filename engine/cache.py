"""A small on-disk memo of rulebases that already passed validation.

Validating the shipped rules and catalogs against their JSON Schemas is the
slowest step of a run; the result depends only on the files' bytes and on
this version of gpusizer, so it is remembered by their sha256. Set
GPUSIZER_NO_CACHE=1 to turn it off; an unwritable cache is silently skipped.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path


def _dir() -> Path | None:
    if os.environ.get("GPUSIZER_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpusizer"


def key(*parts: str) -> str:
    from . import __version__
    h = hashlib.sha256(__version__.encode())
    schema_dir = Path(__file__).parent / "schemas"
    for p in sorted(schema_dir.glob("*.json")):
        h.update(p.read_bytes())
    for part in parts:
        h.update(part.encode())
    return h.hexdigest()


def known(k: str) -> bool:
    d = _dir()
    return bool(d) and (d / f"valid-{k}").is_file()


def remember(k: str) -> None:
    d = _dir()
    if not d:
        return
    try:
        d.mkdir(parents=True, exist_ok=True)
        (d / f"valid-{k}").touch()
    except OSError:
        pass


def template_cache():
    """A Jinja bytecode cache beside the validation memo, or None."""
    d = _dir()
    if not d:
        return None
    try:
        (d / "jinja").mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    import jinja2
    return jinja2.FileSystemBytecodeCache(str(d / "jinja"))


def load_docs(k: str) -> dict:
    """Parsed documents (with positions) of a rulebase seen before, by display name."""
    d = _dir()
    if not d:
        return {}
    try:
        import pickle
        with open(d / f"docs-{k}.pickle", "rb") as f:
            docs = pickle.load(f)
        return docs if isinstance(docs, dict) else {}
    except Exception:  # noqa: BLE001 - a damaged or foreign cache is ignored
        return {}


def save_docs(k: str, docs: dict) -> None:
    d = _dir()
    if not d:
        return
    try:
        import pickle
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f"docs-{k}.pickle.{os.getpid()}"
        with open(tmp, "wb") as f:
            pickle.dump(docs, f, protocol=pickle.HIGHEST_PROTOCOL)
        tmp.replace(d / f"docs-{k}.pickle")
    except OSError:
        pass
