"""The ``gpusizer`` command line: one module per command, each with ``add_parser`` and ``run``.

Command modules import what they need inside ``run``, so that ``gpusizer --help`` and a plain
``recommend`` load only what they use.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import importlib
import json
import os
import stat
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


def write_output(text: str, path: str | os.PathLike[str] | None) -> None:
    """Write to ``path`` (atomically: a temporary file, then a rename) or to standard output."""
    if path is None:
        try:
            sys.stdout.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise _stdout_error(exc) from None
        return
    write_atomic(Path(path), text)


def _stdout_error(exc: OSError) -> OutputError:
    """Standard output failed (a full disk, a closed pipe): exit 73; what is left is dropped."""
    _silence_stdout()
    return OutputError(
        f"cannot write to standard output: {exc.strerror or exc}",
        file="<stdout>",
        help="the output was lost; check where standard output goes (a full disk, a closed terminal)",
    )


def _why(exc: OSError, path: Path) -> str:
    """The help line for a failed write, by its cause."""
    where = path.parent if str(path.parent) else Path(".")
    if exc.errno == errno.ENOENT:
        return f"the folder '{where}' does not exist; create it first, or name another place"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"'{where}' is not writable by you; name a writable place"
    if exc.errno == errno.ENOSPC:
        return "the device is full; free some space or write elsewhere"
    if exc.errno == errno.EISDIR:
        return "it is a directory; name a file (with several workloads, -o names a directory)"
    if exc.errno == errno.ENOTDIR:
        return f"a part of '{where}' is a file, not a folder"
    return "check that the folder exists, is writable and has space"


def write_atomic(path: Path, text: str) -> None:
    """A whole file or none: a failed write leaves no half file behind (exit code 73 if it fails).

    A regular file (or a new one) is written to a temporary file beside it, then renamed over
    it; a device or a named pipe (``-o /dev/stdout``) is written to directly, since it cannot
    be replaced.
    """
    tmp: str | None = None
    data = text.encode("utf-8")
    try:
        target = Path(os.path.realpath(path))
        try:
            st: os.stat_result | None = target.stat()
        except FileNotFoundError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory")
        if st is not None and not stat.S_ISREG(st.st_mode):
            with open(target, "wb") as stream:
                stream.write(data)
            return
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, stat.S_IMODE(st.st_mode) if st is not None else 0o666 & ~_umask())
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        raise OutputError(
            f"cannot write {path}: {exc.strerror or exc}", file=str(path), help=_why(exc, Path(path))
        ) from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def make_dir(path: Path) -> None:
    """Create an output directory (and its parents), or an output error saying why not."""
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(
            f"cannot write into {path}: it is a file, not a directory",
            file=str(path),
            help="with several workloads (or --record), name a directory",
        ) from None
    except OSError as exc:
        raise OutputError(
            f"cannot create {path}: {exc.strerror or exc}", file=str(path), help=_why(exc, path)
        ) from None


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
            raise _stdout_error(exc) from None
        return code
    except GpusizerError as exc:
        print(exc.render(), file=sys.stderr)
        return int(exc.exit_code)
    except KeyboardInterrupt:
        return ExitCode.INTERRUPTED
    except BrokenPipeError:  # 'gpusizer ... | head': the reader has what it wanted
        _silence_stdout()
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


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the flush at exit does not fail again."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a captured stream (tests)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)
