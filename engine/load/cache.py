"""A memo of rulebases that already passed schema validation: marker files, never code.

Validating the shipped rules and catalogs against their JSON Schemas is the slowest step of a
run; its result depends only on the files' bytes, the schemas and gpusizer's own code, so a
rulebase that passed is remembered by one sha256 over all of them, as an empty file named after
that hash in a private directory (0700). Nothing is read back from the memo but its name: the
files themselves are always parsed from the very bytes that were hashed, and the meaning checks
always run. Set GPUSIZER_NO_CACHE=1 to turn it off; an unwritable cache is skipped.
"""

from __future__ import annotations

import hashlib
import os
import stat
from functools import lru_cache
from pathlib import Path

_ENGINE = Path(__file__).resolve().parent.parent


def _dir() -> Path | None:
    if os.environ.get("GPUSIZER_NO_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpusizer"


@lru_cache(maxsize=1)
def _code_hash() -> str:
    """Gpusizer's own code and schemas: an edited loader must not trust a memo of another."""
    h = hashlib.sha256()
    for p in sorted(_ENGINE.rglob("*")):
        if p.suffix in (".py", ".json") and p.is_file():
            h.update(p.relative_to(_ENGINE).as_posix().encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def key(fingerprint: str) -> str:
    """The memo key for a rulebase whose files hash to ``fingerprint``."""
    from .. import __version__

    h = hashlib.sha256(__version__.encode())
    h.update(_code_hash().encode())
    h.update(fingerprint.encode())
    return h.hexdigest()


def _private(d: Path) -> bool:
    """The memo directory exists, is ours, and nobody else may write to it."""
    try:
        st = d.stat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def known(k: str) -> bool:
    """The rulebase with this key passed validation before."""
    d = _dir()
    return d is not None and _private(d) and (d / f"valid-{k}").is_file()


def remember(k: str) -> None:
    """Remember that the rulebase with this key passed validation."""
    d = _dir()
    if d is None:
        return
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(d):
            return
        (d / f"valid-{k}").touch()
    except OSError:
        pass
