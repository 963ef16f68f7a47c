"""The verifier on a tagged subset of ACAS Xu instances (each solved in about a second),
against the known answers of expected.csv."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from relulab.io import load_model
from relulab.io.vnnlib import load_vnnlib
from relulab.tolerance import FEAS_TOL
from relulab.verify import verify

# (network, property): a mix of holds and violated, all quick here
TAGGED = [
    ("1_1", 1), ("5_5", 4), ("3_1", 3), ("2_2", 3), ("1_2", 4), ("3_4", 4),  # holds
    ("2_1", 2), ("1_7", 3), ("1_9", 4),                                       # violated
]


def _expected(acasxu_dir):
    with open(acasxu_dir / "expected.csv", newline="") as fh:
        return {(r["onnx"], r["vnnlib"]): r["expected"] for r in csv.DictReader(fh)}


@pytest.mark.parametrize("net_id,prop_id", TAGGED)
def test_acasxu_instance_matches_expected(acasxu_dir, net_id, prop_id):
    onnx = f"onnx/ACASXU_run2a_{net_id}_batch_2000.onnx"
    vnn = f"vnnlib/prop_{prop_id}.vnnlib"
    expected = _expected(acasxu_dir)[(onnx, vnn)]
    net = load_model(acasxu_dir / onnx)
    prop = load_vnnlib(acasxu_dir / vnn, n_inputs=5, n_outputs=5)
    r = verify(net, prop, timeout=60)
    assert r.status == expected
    if r.status == "violated":
        x = r.counterexample
        case = prop.cases[0]
        assert case.input_box.contains(x)
        # the output reported is the exact one (rounded once), and unsafe exactly
        from fractions import Fraction

        y = net.exact()(x)
        np.testing.assert_array_equal([float(v) for v in y], r.output)
        assert case.is_unsafe(net(x), tol=FEAS_TOL)
        assert any(all(sum(Fraction(float(c)) * v for c, v in zip(row, y, strict=True)) <= Fraction(float(b))
                       for row, b in zip(t.C, t.d, strict=True)) for t in case.unsafe)
