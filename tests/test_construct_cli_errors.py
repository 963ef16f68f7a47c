"""`relulab construct` names bad input in one line (the audit found bare ValueError,
TypeError and IndexError messages for these)."""

from __future__ import annotations

import json

import pytest
from conftest import run_cli


@pytest.mark.parametrize("spec,message", [
    ('{"A": [[1],[NaN]], "c": [0,0], "groups": [[0,1]]}', "A[1][0] is NaN; expected a finite number"),
    ('{"A": [[1],[null]], "c": [0,0], "groups": [[0,1]]}', "A[1][0] is null; expected a number"),
    ('{"A": [[1],[2]], "c": [0,"x"], "groups": [[0,1]]}', 'c[1] is "x"; expected a finite number'),
    ('{"A": [[1],[2]], "c": [0,0], "groups": [["0",1]]}', 'groups[0][0] is "0"; expected a row index'),
    ('{"A": [[1],[2]], "c": [0,0], "groups": [[0.5,1]]}', "groups[0][0] is 0.5; expected a row index"),
    ('{"A": [[1],[2]], "c": [0,0], "groups": [0,1]}', "groups must be a list of lists of row indices"),
    ('{"A": [[]], "c": [0], "groups": [[0]]}', "A must be a non-empty list of non-empty rows"),
])
def test_lattice_file_errors_name_the_entry(tmp_path, capsys, spec, message):
    path = tmp_path / "lat.json"
    path.write_text(spec)
    code, _, err = run_cli(capsys, "construct", "lattice", "--file", path, "-o", tmp_path / "n.npz")
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert f"lat.json: {message}" in err
    assert not (tmp_path / "n.npz").exists()


def test_a_good_lattice_file_still_builds_its_function(tmp_path, capsys):
    # max(min(x, 1 - x), 0) on R: a hat of height 1/2
    path = tmp_path / "lat.json"
    path.write_text(json.dumps({"A": [[1], [-1], [0]], "c": [0, 1, 0], "groups": [[0, 1], [2]]}))
    code, out, err = run_cli(capsys, "construct", "lattice", "--file", path, "-o", tmp_path / "n.npz")
    assert code == 0, err
    from relulab.io import load_model

    net = load_model(tmp_path / "n.npz")
    assert net([[0.25], [0.5], [2.0], [-1.0]]).ravel().tolist() == [0.25, 0.5, 0.0, 0.0]


@pytest.mark.parametrize("argv,message", [
    (["dnf", "--terms", ""], "--terms: no literals"),
    (["dnf", "--terms", "0"], "literal 0; literals are nonzero"),
    (["cpwl1d", "--breakpoints", "0,1", "--values", "1,2", "--left-slope", ""], "--left-slope: no numbers given"),
    (["subdivision", "--mask", "0,0", "--steps", "3"], "all coefficients are zero"),
])
def test_empty_and_zero_arguments_are_named(capsys, argv, message):
    code, _, err = run_cli(capsys, "construct", *argv)
    assert code == 1 and len(err.strip().splitlines()) == 1 and message in err, err
