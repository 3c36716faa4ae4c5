"""The ``gpusizer`` command line: one module per command, each with ``add_parser`` and ``run``.

Command modules import what they need inside ``run``, so that ``gpusizer --help`` and a plain
``recommend`` load only what they use.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import ExitCode, GpusizerError
from .output import make_dir as make_dir
from .output import open_output as open_output
from .output import silence_stdout, stdout_error
from .output import write_atomic as write_atomic
from .output import write_output as write_output

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
    "serve": "serve",
    "sweep": "sweep",
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
    """The Recommender of the shipped rulebase with the command's overlays.

    Loading makes some 160,000 objects that live as long as the process and almost no cyclic
    garbage, yet the cyclic collector walks them again and again while they are made. A command
    loads once, so collection pauses while it loads, and what was loaded is then frozen out of
    the collector's passes (``gc.freeze``); collection resumes for the work that follows.
    """
    from ..api import Recommender

    enabled = gc.isenabled()
    gc.disable()
    try:
        return Recommender(*shipped_dirs(args))
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


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
        code = int(module.run(args))
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise stdout_error(exc) from None
        return code
    except GpusizerError as exc:
        print(exc.render(), file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except BrokenPipeError:  # 'gpusizer ... | head': the reader has what it wanted
        silence_stdout()
        return ExitCode.OK
    except Exception as exc:
        return _internal(exc)


def internal_error(exc: BaseException, what: str = "") -> str:
    """The message of a bug in gpusizer (exit code 70); raises it again under GPUSIZER_DEBUG."""
    if os.environ.get("GPUSIZER_DEBUG"):
        raise exc
    return (
        f"{what}gpusizer: internal error: {type(exc).__name__}: {exc}\n"
        "help: this is a bug in gpusizer; rerun with GPUSIZER_DEBUG=1 for a traceback "
        "and report it with the workload file"
    )


def _internal(exc: BaseException) -> int:
    print(internal_error(exc), file=sys.stderr)
    return ExitCode.INTERNAL
