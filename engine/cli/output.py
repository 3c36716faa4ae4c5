"""Where a command's output goes: standard output, a stream, or a file replaced whole.

``-o PATH`` writes the path it names, and nothing else:

* a **stream** is written as a stream: standard output or error named by a path (``/dev/stdout``,
  ``/dev/fd/N``, ``/proc/self/fd/N``, or a link to one of them) is written through the descriptor
  the shell opened, so ``-o /dev/stdout >> log.txt`` appends and ``-o /dev/stdout | less`` pipes;
  a named pipe, a terminal or another character device is opened and written in place;
* a **regular file** is written to a temporary file beside it and renamed over it, whole or not at
  all; it keeps its permission bits (and, where the user may set them, its owner and group);
* a **symbolic link** to a regular file (or to nothing) is replaced by the new file: the file it
  pointed to is never touched;
* a new file gets the mode the shell would give it (0666 less the umask).

Where the shell's own redirection would be refused, so is ``-o``: a file not writable by the
user, and in a world-writable folder with the sticky bit (``/tmp``) a file, named pipe or link
that belongs to neither the user nor the folder's owner (the kernel's ``protected_regular``,
``protected_fifos`` and ``protected_symlinks`` rules, applied whatever the sysctls say). A block
device or a folder is refused too. Every failure is an ``OutputError`` (exit code 73).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import sys
import tempfile
from pathlib import Path
from typing import IO, Any

from ..errors import OutputError

__all__ = ["Sink", "is_stream", "make_dir", "open_output", "write_atomic", "write_output"]

_LINK_HOPS = 40  # as the kernel's MAXSYMLINKS


class Sink:
    """An output that reports are written to one after the other; ``commit`` finishes it."""

    name = "<stdout>"

    def write(self, text: str) -> None:  # pragma: no cover - every sink overrides it
        """Write one piece of the output."""
        raise NotImplementedError

    def commit(self) -> None:
        """Finish the output: flush a stream, rename a file into place."""

    def abort(self) -> None:
        """Drop what was written, where that is possible (a file's temporary copy)."""

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, kind: Any, *rest: object) -> None:
        if kind is None:
            self.commit()
        else:
            self.abort()


class _Text(Sink):
    """Standard output or standard error, through Python's own stream (which tests may capture)."""

    def __init__(self, stream: IO[str], name: str) -> None:
        self.stream = stream
        self.name = name

    def write(self, text: str) -> None:
        try:
            self.stream.write(text)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise self._error(exc) from None

    def commit(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise self._error(exc) from None

    def _error(self, exc: OSError) -> OutputError:
        if self.stream is sys.stdout:
            return stdout_error(exc)
        return OutputError(
            f"cannot write to {self.name}: {exc.strerror or exc}",
            file=self.name,
            help="the output was lost; check where the stream goes",
        )


class _Descriptor(Sink):
    """A descriptor this process holds (``/dev/fd/N``): written at its offset, in its mode."""

    def __init__(self, fd: int, name: str, close: bool = False) -> None:
        self.fd = fd
        self.name = name
        self.close = close

    def write(self, text: str) -> None:
        data = memoryview(text.encode("utf-8"))
        try:
            while data:
                n = os.write(self.fd, data)
                data = data[n:]
        except OSError as exc:
            raise _failed(exc, self.name) from None

    def commit(self) -> None:
        if self.close:
            self.close = False
            try:
                os.close(self.fd)
            except OSError as exc:
                raise _failed(exc, self.name) from None

    def abort(self) -> None:
        if self.close:
            self.close = False
            with contextlib.suppress(OSError):
                os.close(self.fd)


class _Replace(Sink):
    """A regular file (new, or replacing a file or a link): a temporary file beside it, then a rename."""

    def __init__(self, path: Path, shown: str, old: os.stat_result | None) -> None:
        self.path = path
        self.name = shown
        self.old = old  # what was at the path when it was checked (lstat), or None
        self.tmp: str | None = None
        self.file: IO[bytes] | None = None
        try:
            fd, self.tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
            self.file = os.fdopen(fd, "wb")
        except OSError as exc:
            self.abort()
            raise _failed(exc, shown, path) from None

    def write(self, text: str) -> None:
        assert self.file is not None
        try:
            self.file.write(text.encode("utf-8"))
        except OSError as exc:
            self.abort()
            raise _failed(exc, self.name, self.path) from None

    def commit(self) -> None:
        if self.file is None or self.tmp is None:
            return
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            self.file.close()
            self.file = None
            self._settle()
            now = _lstat(self.path)
            if not _same(now, self.old):  # something else took the path meanwhile: check it again
                _refuse(self.path, self.name, now)
                self.old = now
                self._settle()
            if now is None:
                # a new file never replaces one made meanwhile: link() fails where rename() would clobber
                os.link(self.tmp, self.path)
                os.unlink(self.tmp)
            else:
                os.replace(self.tmp, self.path)
            self.tmp = None
        except OSError as exc:
            self.abort()
            raise _failed(exc, self.name, self.path) from None
        except BaseException:
            self.abort()
            raise

    def _settle(self) -> None:
        """The new file's mode: the old file's permission bits, or what the shell gives a new file."""
        assert self.tmp is not None
        old = self.old if self.old is not None and stat.S_ISREG(self.old.st_mode) else None
        os.chmod(self.tmp, stat.S_IMODE(old.st_mode) & 0o777 if old else 0o666 & ~_umask())
        if old is not None and (old.st_uid, old.st_gid) != (os.geteuid(), os.getegid()):
            with contextlib.suppress(OSError):  # only where the user may: root, or a group of theirs
                os.chown(self.tmp, old.st_uid, old.st_gid)

    def abort(self) -> None:
        if self.file is not None:
            with contextlib.suppress(OSError):
                self.file.close()
            self.file = None
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.tmp)
            self.tmp = None


# -- choosing the sink ------------------------------------------------------------------------------

_FD_PATH = re.compile(r"/(?:dev/fd|proc/(?:self|thread-self|(?P<pid>[0-9]+))/fd)/(?P<fd>[0-9]+)")
_STD = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}


def _descriptor_named(path: str) -> int | None:
    """The descriptor of this process a path names, following links to it: /dev/stdout, /dev/fd/1,
    /proc/self/fd/1, or a link whose chain reaches one of them.
    """
    p = os.path.normpath(os.path.abspath(path))
    for _ in range(_LINK_HOPS):
        if p in _STD:
            return _STD[p]
        m = _FD_PATH.fullmatch(p)
        if m and (m.group("pid") is None or int(m.group("pid")) == os.getpid()):
            return int(m.group("fd"))
        try:
            target = os.readlink(p)
        except OSError:
            return None
        p = os.path.normpath(os.path.join(os.path.dirname(p), target))
    return None


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether ``-o PATH`` names a stream (standard output, a pipe, a terminal, a device), which
    takes every report one after the other even when several workloads would make it a folder.
    """
    if _descriptor_named(os.fspath(path)) is not None:
        return True
    st = _stat(Path(path))
    return st is not None and not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode)


def open_output(path: str | os.PathLike[str] | None) -> Sink:
    """The sink for ``-o PATH`` (standard output when None), checked before anything is computed."""
    if path is None:
        return _Text(sys.stdout, "<stdout>")
    shown = os.fspath(path)
    fd = _descriptor_named(shown)
    if fd == 1:
        return _Text(sys.stdout, shown)
    if fd == 2:
        return _Text(sys.stderr, shown)
    if fd is not None:
        try:
            os.fstat(fd)
        except OSError as exc:
            raise _failed(exc, shown) from None
        return _Descriptor(fd, shown)
    p = Path(shown)
    old = _lstat(p)
    _refuse(p, shown, old)
    if old is not None and stat.S_ISLNK(old.st_mode):
        target = _stat(p)
        if target is not None and not stat.S_ISREG(target.st_mode):
            return _stream(p, shown, target)
        return _Replace(p, shown, old)  # the link itself is replaced; its target is never written
    if old is not None and not stat.S_ISREG(old.st_mode):
        return _stream(p, shown, old)
    return _Replace(p, shown, old)


def _stream(path: Path, shown: str, st: os.stat_result) -> Sink:
    """A named pipe, a terminal or another character device: opened and written in place."""
    if stat.S_ISDIR(st.st_mode):
        raise _failed(IsADirectoryError(errno.EISDIR, "is a directory"), shown, path)
    if stat.S_ISBLK(st.st_mode):
        raise OutputError(
            f"cannot write {shown}: it is a block device",
            file=shown,
            help="gpusizer writes reports to files and streams, never onto a disk; name a file",
        )
    flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)  # no O_CREAT, no O_TRUNC: a stream is written, not made or emptied
    except OSError as exc:
        raise _failed(exc, shown, path) from None
    return _Descriptor(fd, shown, close=True)


# -- the shell's refusals -----------------------------------------------------------------------------


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return None  # a missing or unreadable folder: creating the temporary file says why


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except OSError:
        return None


def _same(a: os.stat_result | None, b: os.stat_result | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.st_dev, a.st_ino, a.st_uid, a.st_mode) == (b.st_dev, b.st_ino, b.st_uid, b.st_mode)


def shell_refuses(st: os.stat_result, folder: os.stat_result, uid: int) -> str | None:
    """Why the shell's ``> path`` would be refused for the entry ``st`` in ``folder``, or None.

    In a world-writable folder with the sticky bit, an entry owned by neither the user nor the
    folder's owner is not followed (a link: protected_symlinks) or opened for writing (a file or a
    named pipe: protected_regular, protected_fifos); elsewhere a file the user may not write is
    refused by its permissions.
    """
    sticky = folder.st_mode & stat.S_ISVTX and folder.st_mode & stat.S_IWOTH
    foreign = st.st_uid not in (uid, folder.st_uid)
    if sticky and foreign:
        kind = "link" if stat.S_ISLNK(st.st_mode) else "named pipe" if stat.S_ISFIFO(st.st_mode) else "file"
        if stat.S_ISLNK(st.st_mode) or stat.S_ISFIFO(st.st_mode) or stat.S_ISREG(st.st_mode):
            return f"it is a {kind} of another user in a shared folder with the sticky bit"
    return None


def _refuse(path: Path, shown: str, st: os.stat_result | None) -> None:
    """An OutputError where the shell would refuse to write ``path``."""
    if st is None:
        return
    folder = _stat(path.parent if str(path.parent) else Path("."))
    why = shell_refuses(st, folder, os.geteuid()) if folder is not None else None
    if why is None and stat.S_ISLNK(st.st_mode):
        target = _stat(path)
        if target is not None and stat.S_ISFIFO(target.st_mode):
            real = Path(os.path.realpath(path))
            tfolder = _stat(real.parent)
            why = shell_refuses(target, tfolder, os.geteuid()) if tfolder is not None else None
    if why is None and stat.S_ISREG(st.st_mode) and not _writable(path):
        raise _failed(PermissionError(errno.EACCES, "Permission denied"), shown, path)
    if why is not None:
        raise OutputError(
            f"cannot write {shown}: {why}",
            file=shown,
            help="an entry another user placed in a shared folder is never written through or over, as the "
            "shell refuses it where the kernel protects such folders (fs.protected_regular, fs.protected_symlinks); "
            "remove it if it is yours to remove, or name another place",
        )


def _writable(path: Path) -> bool:
    effective = os.access in os.supports_effective_ids
    return os.access(path, os.W_OK, effective_ids=effective, follow_symlinks=False)


# -- messages -----------------------------------------------------------------------------------------


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
    if exc.errno == errno.EBADF:
        return "no such descriptor is open for writing; open it in the shell (e.g. 3>file) or name a file"
    if exc.errno == errno.EPIPE:
        return "the reader of the pipe has gone"
    return "check that the folder exists, is writable and has space"


def _failed(exc: OSError, shown: str, path: Path | None = None) -> OutputError:
    if exc.errno == errno.EACCES and path is not None and _lstat(path) is not None:
        help = f"'{shown}' is not writable by you; change its permissions or name another place"
    else:
        help = _why(exc, path if path is not None else Path(shown))
    return OutputError(f"cannot write {shown}: {exc.strerror or exc}", file=shown, help=help)


def stdout_error(exc: OSError) -> OutputError:
    """Standard output failed (a full disk, a closed pipe): exit 73; what is left is dropped."""
    silence_stdout()
    return OutputError(
        f"cannot write to standard output: {exc.strerror or exc}",
        file="<stdout>",
        help="the output was lost; check where standard output goes (a full disk, a closed terminal)",
    )


def silence_stdout() -> None:
    """Point standard output at /dev/null, so that the flush at exit does not fail again."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # a captured stream (tests)
        return
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, fd)
    os.close(null)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# -- the whole-text helpers -----------------------------------------------------------------------------


def write_output(text: str, path: str | os.PathLike[str] | None) -> None:
    """Write ``text`` to ``path`` (see the module's docstring) or to standard output."""
    with open_output(path) as sink:
        sink.write(text)


def write_atomic(path: Path, text: str) -> None:
    """A whole file or none at ``path`` (a stream is written in place); exit code 73 if it fails."""
    write_output(text, path)


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
