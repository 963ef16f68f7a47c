"""The atomic writer behind every save: what it replaces, keeps and refuses."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from relulab import Network
from relulab.errors import RelulabError
from relulab.io import atomic_path, check_writable, load_model, save_model

NET2 = Network([np.eye(2)], [np.zeros(2)])
NET3 = Network([np.eye(3)], [np.zeros(3)])


def test_an_overwritten_file_keeps_its_permissions(tmp_path: Path) -> None:
    p = tmp_path / "private.npz"
    save_model(NET2, p)
    os.chmod(p, 0o600)
    save_model(NET3, p)
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600 and load_model(p) == NET3


def test_a_symlink_is_written_through(tmp_path: Path) -> None:
    real, link = tmp_path / "real.npz", tmp_path / "link.npz"
    save_model(NET2, real)
    os.symlink(real, link)
    save_model(NET3, link)
    assert link.is_symlink() and load_model(real) == NET3


def test_a_folder_or_a_file_in_the_way_is_one_clear_error(tmp_path: Path) -> None:
    (tmp_path / "isdir.npz").mkdir()
    with pytest.raises(RelulabError, match=r"isdir\.npz: it is a folder"):
        save_model(NET2, tmp_path / "isdir.npz")
    save_model(NET2, tmp_path / "file.npz")
    with pytest.raises(RelulabError, match=r"file\.npz/sub/x\.npz: .*file\.npz is not a folder"):
        save_model(NET2, tmp_path / "file.npz" / "sub" / "x.npz")
    assert sorted(q.name for q in tmp_path.iterdir()) == ["file.npz", "isdir.npz"]  # no temp files


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    p = tmp_path / "a.txt"
    p.write_text("old")
    with pytest.raises(ZeroDivisionError), atomic_path(p) as tmp:
        Path(tmp).write_text("half")
        1 / 0  # noqa: B018
    assert p.read_text() == "old" and [q.name for q in tmp_path.iterdir()] == ["a.txt"]


def test_a_path_ending_in_a_separator_names_a_folder_and_is_refused(tmp_path: Path, capsys) -> None:
    # os.path.realpath drops the trailing "/", so "--plot p.png/" wrote the file p.png

    folder_name = str(tmp_path / "out.npz") + os.sep
    with pytest.raises(RelulabError, match="names a folder"):
        save_model(NET2, folder_name)
    with pytest.raises(RelulabError, match=r"^--plot .*: ends in '/'"):
        check_writable(folder_name, "--plot")
    code, _, err = run_cli(capsys, "regions", "example:tiny_2d.onnx", "--plot", str(tmp_path / "p.png") + os.sep)
    assert code == 1 and "names a folder" in err
    assert list(tmp_path.iterdir()) == []


def test_a_pipe_or_device_is_written_in_place_not_replaced(tmp_path: Path) -> None:
    # os.replace swapped a regular file in for the target whatever it was: through a
    # symlink to /dev/null, "-o out.npz" as root replaced the system's /dev/null. A FIFO
    # here (with a reader) stands in for the device
    import threading

    fifo = tmp_path / "pipe.npz"
    os.mkfifo(fifo)
    link = tmp_path / "link.npz"
    os.symlink(fifo, link)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    check_writable(link, "-o")
    save_model(NET2, link)
    reader.join(timeout=30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)          # still the pipe, not a file
    assert got and got[0][:2] == b"PK"                   # the reader got the .npz (a zip)
    assert sorted(q.name for q in tmp_path.iterdir()) == ["link.npz", "pipe.npz"]


def test_a_write_error_names_the_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    # a full disk gave only "[Errno 28] No space left on device"
    import errno

    target = tmp_path / "a.txt"
    with pytest.raises(RelulabError, match=r"cannot write .*a\.txt: No space left on device"):
        with atomic_path(target) as tmp:
            open(tmp, "w").write("partial")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    assert list(tmp_path.iterdir()) == []


def test_convert_through_a_link_to_a_pipe_takes_the_links_suffix(tmp_path: Path, capsys) -> None:
    # out.onnx -> a device or pipe was refused for the target's missing suffix (the
    # written path was the target's), and a re-read of a pipe would wait forever
    import json
    import threading

    import onnx

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "out.onnx"
    os.symlink(fifo, link)
    save_model(NET2, tmp_path / "m.npz")
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    code, out, err = run_cli(capsys, "convert", tmp_path / "m.npz", link, "--json")
    reader.join(timeout=30)
    assert code == 0, err
    assert json.loads(out)["max_abs_difference"] is None            # not read back
    model = onnx.load_from_string(got[0])                             # the reader got ONNX
    assert [i.name for i in model.graph.input] and stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_name_that_is_only_a_suffix_is_refused_before_any_work(tmp_path: Path, capsys) -> None:
    # "DST .onnx" has the suffix ".onnx" but ".onnx" has none: the check passed and the
    # write failed naming a temporary suffix
    save_model(NET2, tmp_path / "m.npz")
    code, _, err = run_cli(capsys, "convert", tmp_path / "m.npz", tmp_path / ".onnx")
    assert code == 1 and "starts with a dot" in err and ".onnx" in err
    assert sorted(q.name for q in tmp_path.iterdir()) == ["m.npz"]
    with pytest.raises(RelulabError, match="no suffix"):
        save_model(NET2, tmp_path / ".npz")
