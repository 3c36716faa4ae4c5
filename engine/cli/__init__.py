"""The ``gpusizer`` command line: one module per command, each with ``add_parser`` and ``run``.

Command modules import what they need inside ``run``, so that ``gpusizer --help`` and a plain
``recommend`` load only what they use.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ExitCode, GpusizerError, OutputError

# command name -> module in engine.cli
COMMANDS = {
    "recommend": "recommend",
    "explain": "explain",
    "why-not": "why_not",
    "what-if": "what_if",
    "graph": "graph",
    "audit": "audit",
    "diff": "diff",
    "inspect-model": "inspect_model",
    "validate": "validate",
    "test": "test",
    "rules": "rules",
    "new": "new",
    "schema": "schema",
    "docs": "docs",
}


def rulebase_args(sp: argparse.ArgumentParser, *, rules: bool = True) -> None:
    """--rules and --knowledge: directories laid over the shipped rulebase."""
    if rules:
        sp.add_argument(
            "--rules",
            action="append",
            metavar="DIR",
            help="a rules directory laid over the shipped rules: adds rules, replaces "
            "rules of the same id, disables rules listed in its _overlay.yaml (repeatable)",
        )
    sp.add_argument(
        "--knowledge",
        action="append",
        metavar="DIR",
        help="a knowledge directory laid over the shipped one: adds catalogs, items "
        "and values, e.g. a local price list (repeatable)",
    )


def shipped_dirs(args: argparse.Namespace) -> tuple[list[Path], list[Path]]:
    """The shipped rules and knowledge, with each --rules / --knowledge directory laid over them."""
    from ..load.resources import data_dir

    rules = [data_dir("rules")] + [Path(p) for p in getattr(args, "rules", None) or []]
    knowledge = [data_dir("knowledge")] + [Path(p) for p in getattr(args, "knowledge", None) or []]
    return rules, knowledge


def recommender(args: argparse.Namespace) -> Any:
    from ..api import Recommender

    return Recommender(*shipped_dirs(args))


def write_output(text: str, path: str | os.PathLike[str] | None) -> None:
    """Write to ``path`` (atomically: a temporary file, then a rename) or to standard output."""
    if path is None:
        sys.stdout.write(text)
        return
    write_atomic(Path(path), text)


def write_atomic(path: Path, text: str) -> None:
    """A whole file or none: a failed write leaves no half file behind (exit code 73 if it fails)."""
    tmp: str | None = None
    try:
        if path.is_dir():
            raise IsADirectoryError(21, "is a directory")
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent if str(path.parent) else ".")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        tmp = None
    except OSError as exc:
        raise OutputError(
            f"cannot write the output: {exc.strerror or exc}",
            file=str(path),
            help="check that the folder exists, is writable and has space; name a file, not a directory",
        ) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def dump_json(obj: Any) -> str:
    return json.dumps(obj, indent=2, ensure_ascii=False, default=str) + "\n"


def _parser() -> argparse.ArgumentParser:
    from .. import __version__

    p = argparse.ArgumentParser(
        prog="gpusizer",
        description="Explained GPU server recommendations for deep-learning workloads, from declarative rules.",
    )
    p.add_argument("--version", action="version", version=f"gpusizer {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name, module in COMMANDS.items():
        importlib.import_module(f"{__name__}.{module}").add_parser(sub, name)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        module = importlib.import_module(f"{__name__}.{COMMANDS[args.command]}")
        return int(module.run(args))
    except GpusizerError as exc:
        print(exc.render(), file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except BrokenPipeError:
        return ExitCode.OK
    except Exception as exc:
        if os.environ.get("GPUSIZER_DEBUG"):
            raise
        print(
            f"gpusizer: internal error: {type(exc).__name__}: {exc}\n"
            "help: this is a bug in gpusizer; rerun with GPUSIZER_DEBUG=1 for a traceback "
            "and report it with the workload file",
            file=sys.stderr,
        )
        return ExitCode.INTERNAL
