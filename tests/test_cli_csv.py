"""The CSV reader of the fitting commands (fit-minnorm, fit-convex, fit-quantile)."""

from __future__ import annotations

import json

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


def test_fits_of_data_whose_squares_overflow_are_one_error_naming_the_file(tmp_path, capsys):
    # fit-convex answered objective inf, bound NaN, "gap 0 (to rounding)", exit 0 and saved
    # the zero network; at 1e308 LAPACK wrote to stdout; fit-minnorm said "layer 1: weight
    # contains NaN" (aud_cli5 #2)
    from relulab.cli.train import _shown_gap

    big = tmp_path / "big.csv"
    big.write_text("0,1\n1,1e200\n2,-1e200\n")
    huge = tmp_path / "huge.csv"
    huge.write_text("0,1\n1,1e308\n2,-1e308\n")
    for p in (big, huge):
        code, out, err = run_cli(capsys, "fit-convex", str(p), "--lam", "0.1", "--json",
                                 "-o", str(tmp_path / "fc.npz"))
        assert code == 1 and out == "" and f"{p}" in err and "overflow" in err
    assert not (tmp_path / "fc.npz").exists()
    code, _, err = run_cli(capsys, "fit-minnorm", str(huge))
    assert code == 1 and f"{huge}" in err and "overflow" in err
    code, out, _ = run_cli(capsys, "fit-minnorm", str(big), "--json")   # 1e200 is still fine
    assert code == 0 and json.loads(out)["cost"] == pytest.approx(3e200, rel=1e-9)
    assert _shown_gap(float("nan")) != _shown_gap(-1e-16)
