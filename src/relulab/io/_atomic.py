"""Write files atomically so that a failure never leaves a half-written file."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..errors import RelulabError

# The prefix that names a shipped example (``relulab.examples.PREFIX``): read-only, never
# a place to write.  Defined here because relulab.examples reads through relulab.io.
EXAMPLE_PREFIX = "example:"


def refuse_example(path: str | os.PathLike, what: str) -> None:
    """Refuse to write to ``path`` when it names a shipped example (``example:NAME``), in
    one line starting with ``what`` (the option or argument that gave it): else a file
    literally named "example:x.npz" is written, which every command then reads as the
    name of a shipped example, never as this file.

    Example:
        >>> refuse_example("net.onnx", "--save")
        >>> refuse_example("example:x.npz", "--save")
        Traceback (most recent call last):
        relulab.errors.RelulabError: --save 'example:x.npz': the 'example:' prefix names shipped examples, which are read-only sources; give a file path to write to
    """
    if str(path).startswith(EXAMPLE_PREFIX):
        raise RelulabError(f"{what} {str(path)!r}: the {EXAMPLE_PREFIX!r} prefix names shipped "
                           "examples, which are read-only sources; give a file path to write to")


def check_writable(path: str | os.PathLike, what: str) -> None:
    """Refuse, before any work, a path :func:`atomic_path` could not write: a folder, a
    parent that is a file, or a folder one may not write in (one line starting with
    ``what``).  The test is a real write (a probe file, or a probe folder where folders
    are still to be made, removed at once), as only that sees read-only mounts and
    /proc when running as root; the missing folders themselves are made when writing.

    Example:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> check_writable(os.path.join(folder, "new", "net.npz"), "-o")   # made when written
        >>> _ = open(os.path.join(folder, "f"), "w").close()
        >>> check_writable(os.path.join(folder, "f", "net.npz"), "-o")    # doctest: +ELLIPSIS
        Traceback (most recent call last):
        relulab.errors.RelulabError: -o .../f/net.npz: .../f is not a folder
    """
    refuse_example(path, what)
    refuse_folder_name(path, what)
    try:
        target = Path(os.path.realpath(path))
        if target.is_dir():
            raise RelulabError(f"{what} {path}: it is a folder")
        folder = target.parent
        while not folder.exists():  # the nearest folder that exists is the one written into
            folder = folder.parent
        if not folder.is_dir():
            raise RelulabError(f"{what} {path}: {_first_non_folder(target.parent)} is not a folder")
    except OSError as e:  # a folder on the way one may not search
        raise RelulabError(f"{what} {path}: cannot reach it ({e.strerror or e})") from None
    if target.exists() and not target.is_file():
        _check_special(target, path, what)  # a device or a pipe: written in place
        return
    # a real probe, not os.access: as root os.access says yes to /proc and to read-only
    # mounts, and the write failed after the work
    try:
        if folder != target.parent:  # folders are to be made: can the first one be?
            os.rmdir(tempfile.mkdtemp(prefix=".relulab-probe-", dir=folder))
        else:
            fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
            os.close(fd)
            os.unlink(tmp)
    except OSError as e:
        raise RelulabError(f"{what} {path}: cannot write in {folder} ({e.strerror or e})") from None


def refuse_folder_name(path: str | os.PathLike, what: str) -> None:
    """Refuse a path that ends in a path separator: it names a folder, and
    ``os.path.realpath`` drops the separator, so ``-o out.png/`` was written as the
    file ``out.png``.

    Example:
        >>> refuse_folder_name("plots/a.png", "--plot")
        >>> refuse_folder_name("plots/", "--plot")
        Traceback (most recent call last):
        relulab.errors.RelulabError: --plot plots/: ends in '/', which names a folder; give a file name
    """
    text = os.fspath(path)
    seps = (os.sep, os.altsep) if os.altsep else (os.sep,)
    if text.endswith(seps):
        raise RelulabError(f"{what} {text}: ends in {text[-1]!r}, which names a folder; "
                           "give a file name")


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[str]:
    """Yield a temporary path beside ``path``; on success it replaces ``path``.  A path
    that names a shipped example (``example:NAME``) is refused.

    Example:
        >>> import tempfile, os
        >>> p = os.path.join(tempfile.mkdtemp(), "a.txt")
        >>> with atomic_path(p) as tmp:
        ...     _ = open(tmp, "w").write("hi")
        >>> open(p).read()
        'hi'
    """
    refuse_example(path, "cannot write")
    refuse_folder_name(path, "cannot write")
    # Through a symlink the file it points to is replaced (as open(path, "w") would).
    target = Path(os.path.realpath(path))
    if target.is_dir():
        raise RelulabError(f"cannot write {path}: it is a folder")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise RelulabError(f"cannot write {path}: {_first_non_folder(target.parent)} is not a folder") from None
    except OSError as e:  # /proc, a read-only mount, no permission: name the target
        raise RelulabError(f"cannot write {path}: cannot make its folder ({e.strerror or e})") from None
    if target.exists() and not target.is_file():
        # a device, a pipe or a socket (/dev/null, a FIFO another program reads): written
        # in place, never replaced by a regular file (os.replace through a symlink to
        # /dev/null replaced the system's /dev/null); nothing half-written can remain
        # there, as nothing is kept there.  The name given is yielded (opening a symlink
        # writes to its target): writers pick the format from its suffix, and out.onnx ->
        # /dev/null was refused for the suffix of "/dev/null".
        yield os.fspath(path)
        return
    old_mode = stat.S_IMODE(target.stat().st_mode) if target.is_file() else None
    try:
        # the suffix of the name given, not of a symlink's target: writers pick the format
        # from it (out.onnx -> weights.npz was written as .npz and could not be read back)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=Path(path).suffix, dir=target.parent)
    except OSError as e:  # a folder one cannot write in (/proc, read-only): name the target
        raise RelulabError(f"cannot write {path}: {e.strerror or e}") from None
    os.close(fd)
    try:
        yield tmp
        if old_mode is None:
            # mkstemp creates the file 0600; give it the permissions a plain open() would
            umask = os.umask(0)
            os.umask(umask)
            old_mode = 0o666 & ~umask
        os.chmod(tmp, old_mode)  # an overwritten file keeps its permissions
        os.replace(tmp, target)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        # a full disk said only "[Errno 28] No space left on device": name the file
        raise RelulabError(f"cannot write {path}: {e.strerror or e} (the old file, if any, is unchanged)") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _check_special(target: Path, path: str | os.PathLike, what: str) -> None:
    """Refuse a device one may not open for writing (opened and closed at once, without
    waiting).  A pipe is not probed: opening and closing it would hand its reader an
    end of file before the data."""
    if stat.S_ISFIFO(target.stat().st_mode):
        return
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as e:
        raise RelulabError(f"{what} {path}: cannot write to {target} ({e.strerror or e})") from None
    os.close(fd)


def _first_non_folder(path: Path) -> Path:
    """The first ancestor of ``path`` (from the root) that exists and is not a folder."""
    for p in (*reversed(path.parents), path):
        if p.exists() and not p.is_dir():
            return p
    return path
