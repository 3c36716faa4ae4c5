"""Make vendor/durable_rules-2.0.28+gpusizer.1.tar.gz from durable-rules' own sdist.

    pip download --no-deps --no-binary :all: durable-rules==2.0.28 -d /tmp/dr
    python vendor/make_durable_rules.py /tmp/dr/durable_rules-2.0.28.tar.gz

The output is the PyPI sdist with one fix and a local version label, repacked so that the
same input always gives the same bytes (sorted members, fixed owner, gzip without a timestamp).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import sys
import tarfile
from pathlib import Path

UPSTREAM = "durable_rules-2.0.28"
UPSTREAM_SHA256 = "053b26f5e48d312d4fa27995243f954671be6eece477f150c059c364eb4d7d61"
VERSION = "2.0.28+gpusizer.1"
OUT = Path(__file__).resolve().parent / f"durable_rules-{VERSION}.tar.gz"

# path inside the sdist -> [(old, new, how many times old occurs)]
EDITS = {
    # PyEval_CallObject was removed from the C API in Python 3.13 (deprecated since 3.9).
    # PyObject_CallObject has the same arguments and meaning and exists in every Python 3.
    "src/rulespy/rules.c": [("PyEval_CallObject(", "PyObject_CallObject(", 5)],
    # utcfromtimestamp() is deprecated since 3.12 and warns on every call (tens of thousands of
    # warnings in gpusizer's suite). Its value here is the naive 1970-01-01 00:00, written out.
    "libpy/durable/engine.py": [("datetime.datetime.utcfromtimestamp(0)", "datetime.datetime(1970, 1, 1)", 1)],
    "setup.py": [("version = '2.0.28',", f"version = '{VERSION}',", 1)],
    "PKG-INFO": [("\nVersion: 2.0.28\n", f"\nVersion: {VERSION}\n", 1)],
    "libpy/durable_rules.egg-info/PKG-INFO": [("\nVersion: 2.0.28\n", f"\nVersion: {VERSION}\n", 1)],
}


def main(sdist: str) -> None:
    data = Path(sdist).read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != UPSTREAM_SHA256:
        sys.exit(f"{sdist}: sha256 {digest}, expected PyPI's durable-rules 2.0.28 sdist ({UPSTREAM_SHA256})")
    src = tarfile.open(fileobj=io.BytesIO(data))
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as out:
        done = set()
        for member in sorted(src.getmembers(), key=lambda m: m.name):
            rel = member.name.partition("/")[2]
            member.name = f"durable_rules-{VERSION}" + (f"/{rel}" if rel else "")
            member.uid = member.gid = 0
            member.uname = member.gname = ""
            content = src.extractfile(member).read() if member.isfile() else None
            if rel in EDITS:
                text = content.decode()
                for old, new, count in EDITS[rel]:
                    if text.count(old) != count:
                        sys.exit(f"{rel}: expected {count} x {old!r}, found {text.count(old)}")
                    text = text.replace(old, new)
                content = text.encode()
                done.add(rel)
            if content is not None:
                member.size = len(content)
                out.addfile(member, io.BytesIO(content))
            else:
                out.addfile(member)
    if done != set(EDITS):
        sys.exit(f"not found in the sdist: {sorted(set(EDITS) - done)}")
    with OUT.open("wb") as f, gzip.GzipFile(filename="", mode="wb", fileobj=f, mtime=0) as gz:
        gz.write(raw.getvalue())
    print(f"{OUT.name}  sha256 {hashlib.sha256(OUT.read_bytes()).hexdigest()}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
