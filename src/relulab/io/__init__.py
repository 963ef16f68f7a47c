"""Model exchange: torch, ONNX, NNet, VNN-LIB properties and relulab's native .npz.

``load_model(path)`` and ``save_model(net, path)`` pick the format from the file
suffix (``.onnx``, ``.nnet``, ``.npz``; ``.pt``/``.pth`` for a pickled torch
``nn.Sequential``).

Example:
    >>> import numpy as np, tempfile, os
    >>> from relulab import Network
    >>> from relulab.io import save_model, load_model
    >>> net = Network([np.eye(2)], [np.zeros(2)])
    >>> p = os.path.join(tempfile.mkdtemp(), "n.npz"); save_model(net, p)
    >>> load_model(p) == net
    True
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import FormatError
from ..network import Network
from ._atomic import EXAMPLE_PREFIX, atomic_path, check_writable, refuse_example

__all__ = ["load_model", "save_model", "check_model_target", "check_regular_file", "MODEL_SUFFIXES", "atomic_path",
           "refuse_example", "check_writable", "EXAMPLE_PREFIX"]

MODEL_SUFFIXES = (".onnx", ".nnet", ".npz", ".pt", ".pth")


def _suffix(path: str | os.PathLike, label: str | None = None) -> str:
    """The model suffix of ``path`` (lower case), or a one-line error that starts with
    ``label`` (default: the path).  The suffix is the path's own: a name of the suffix
    alone (".onnx") has none, as for ``pathlib``, and a label put in front of it must not
    give it one ("DST .onnx" has the suffix ".onnx")."""
    suf = Path(path).suffix.lower()
    if suf not in MODEL_SUFFIXES:
        hidden = not suf and Path(path).name.lower() in MODEL_SUFFIXES
        raise FormatError(
            f"{label or path}: unknown model format '{suf or '(no suffix)'}'"
            + (f" (a name that starts with a dot has no suffix: give a name before "
               f"{Path(path).name!r})" if hidden else "")
            + f"; relulab reads and writes {', '.join(MODEL_SUFFIXES)}"
        )
    return suf


def check_model_target(path: str | os.PathLike, flag: str = "output") -> None:
    """Refuse, before any work, a path :func:`save_model` would refuse after it: an
    ``example:`` name, an unknown suffix, a folder, or a place one cannot write (one line
    naming ``flag``).

    Example:
        >>> check_model_target("net.onnx")
        >>> check_model_target("net.txt", "--save")
        Traceback (most recent call last):
        relulab.errors.FormatError: --save net.txt: unknown model format '.txt'; relulab reads and writes .onnx, .nnet, .npz, .pt, .pth
    """
    refuse_example(path, flag)
    _suffix(path, f"{flag} {path}")
    check_writable(path, flag)


def check_regular_file(path: str | os.PathLike) -> None:
    """One error unless ``path`` is a regular file: a directory, a pipe or a device (which
    a reader would block on or never finish) and a missing path each say which.

    Example:
        >>> check_regular_file("/dev/null")
        Traceback (most recent call last):
        ...
        relulab.errors.FormatError: /dev/null: not a regular file (a device)
    """
    p = Path(path)
    if p.is_file():
        return
    if p.is_dir():
        raise FormatError(f"{path}: a directory, not a file")
    if p.exists():
        kind = "a pipe" if p.is_fifo() else "a socket" if p.is_socket() else "a device"
        raise FormatError(f"{path}: not a regular file ({kind})")
    raise FormatError(f"{path}: no such file")


def load_model(path: str | os.PathLike) -> Network:
    """Load a network from a file, the format chosen by its suffix.

    Example:
        >>> import os, tempfile
        >>> from relulab.examples import xor_net
        >>> path = os.path.join(tempfile.mkdtemp(), "xor.nnet")
        >>> save_model(xor_net(), path)
        >>> load_model(path)([[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]).ravel().tolist()
        [0.0, 1.0, 0.0]
    """
    suf = _suffix(path)
    check_regular_file(path)
    if suf == ".onnx":
        from .onnx import load_onnx

        return load_onnx(path)
    if suf == ".nnet":
        from .nnet import load_nnet

        return load_nnet(path)
    if suf == ".npz":
        from .native import load

        return load(path)
    from .torch import load_torch_file

    return load_torch_file(path)


def save_model(net: Network, path: str | os.PathLike) -> None:
    """Save a network to a file, the format chosen by its suffix (written atomically).

    Example:
        >>> import os, tempfile
        >>> from relulab import Network
        >>> net = Network([[[1.0, -1.0], [0.5, 2.0]], [[1.0, -2.0]]], [[0.0, -0.5], [0.1]])
        >>> folder = tempfile.mkdtemp()
        >>> for name in ("net.npz", "net.nnet"):
        ...     save_model(net, os.path.join(folder, name))
        >>> sorted(os.listdir(folder))
        ['net.nnet', 'net.npz']
        >>> load_model(os.path.join(folder, "net.npz")) == net
        True
    """
    suf = _suffix(path)
    if suf == ".onnx":
        from .onnx import save_onnx

        save_onnx(net, path)
    elif suf == ".nnet":
        from .nnet import save_nnet

        save_nnet(net, path)
    elif suf == ".npz":
        from .native import save

        save(net, path)
    else:
        from .torch import save_torch_file

        save_torch_file(net, path)
