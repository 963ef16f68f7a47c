"""The CSV reader of the fitting commands (fit-minnorm, fit-convex, fit-quantile)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import run_cli

from relulab.cli.train import read_csv
from relulab.errors import FormatError


@pytest.mark.parametrize("text, rows", [
    ("\ufeff0.1,1\n0.2,2\n0.3,1.5\n", 3),          # a byte-order mark: the first row was lost
    ("x,y\n0.1,1\n0.2,2\n", 2),                     # a header
    ("# my data\nx,y\n0.1,1\n0.2,2\n", 2),          # a header after a comment was refused
    ("\n# c\n\nx;y\n0.1;1\n", 1),
    ("0.1,1\n0.2,2\n", 2),
])
def test_rows_are_read_exactly_once(tmp_path, text, rows):
    p = tmp_path / "d.csv"
    p.write_text(text, encoding="utf-8")
    X, y = read_csv(str(p))
    data = [ln for ln in text.replace("\ufeff", "").splitlines()
            if ln.strip() and not ln.startswith("#") and ln[0] not in "xX"]
    expect = np.array([[float(v) for v in ln.replace(";", ",").split(",")] for ln in data])
    assert X.shape == (rows, 1) and np.array_equal(np.c_[X, y], expect)


@pytest.mark.parametrize("text, where", [
    ("0.1,abc\n0.2,2\n", "d.csv:1: column 2"),     # some numbers: data, not a header (was skipped)
    ("x,y\nx,y\n0.1,1\n", "d.csv:2: column 1"),     # only one header line
    ("0.1,1\ny,z\n", "d.csv:2: column 1"),
    ("0.1,1\n0.2,1_0\n", "d.csv:2: column 2"),   # was read as 10 (Python's digit separator)
])
def test_bad_cells_are_named_not_skipped(tmp_path, text, where):
    p = tmp_path / "d.csv"
    p.write_text(text)
    with pytest.raises(FormatError, match=where):
        read_csv(str(p))


@pytest.mark.parametrize("text, args, what", [
    ("x,y\n0,1\n0,2\n1,0\n", [], "appears twice with different targets"),
    ("x,y\n0,1\n1,3\n2,1\n", ["--classify"], "labels must be"),
])
def test_fit_minnorm_names_the_data_file_in_a_data_error(tmp_path, capsys, text, args, what):
    # the error read "x = 0.0 appears twice ...", without the file it came from
    p = tmp_path / "dup.csv"
    p.write_text(text, encoding="utf-8")
    code, _, err = run_cli(capsys, "fit-minnorm", str(p), *args)
    assert code == 1 and f"{p}: " in err and what in err and "Traceback" not in err
