"""Each training-dynamics experiment's --quick mode runs and writes the JSON its docs
describe (docs/dynamics.md): every claim with a verdict, plus its measured tables."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[1]

# experiment -> (top-level JSON fields besides claims/quick/seconds/figure, claim count)
FIELDS = {
    "saddle_to_saddle": (["staircase", "interpolation", "m50", "norms", "minnorm_checks",
                          "norm_slope", "minimal_norm_slope"], 3),
    "linear_target_phases": (["runs", "sublinear_tail_runs"], 2),
    "spurious_xor": (["setting", "runs", "median_t_xor"], 3),
    "benign_landscape": (["lam", "univariate", "orthogonal"], 2),
    "skip_landscape": (["kkt_runs", "logistic", "minnorm_univariate_rerun",
                        "minnorm_univariate_summary", "refined_to_optimum",
                        "minnorm_univariate_verdict"], 3),
    "noisy_sgd_collapse": (["setting", "runs"], 3),
}
# the two landscape experiments take ~10-15 s of CPU each (more on a loaded machine)
SLOW = {"benign_landscape", "skip_landscape"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW
                                  else n for n in FIELDS])
def test_experiment_quick_mode_writes_its_json(name, tmp_path):
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    env.setdefault("OMP_NUM_THREADS", "1")
    proc = subprocess.run([sys.executable, str(ROOT / "experiments" / f"{name}.py"), "--quick",
                           "--out", str(tmp_path)], env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    res = json.loads((tmp_path / f"{name}.json").read_text())
    assert (tmp_path / f"{name}.png").stat().st_size > 1000
    assert res["quick"] is True and res["seconds"] > 0 and res["figure"] == f"{name}.png"
    fields, n_claims = FIELDS[name]
    for f in fields:
        assert f in res, f"{name}.json lacks '{f}'"
    assert len(res["claims"]) == n_claims
    for c in res["claims"]:
        assert set(c) == {"claim", "held", "detail"} and c["held"] in (True, False, None)
        # the verdict is printed too
        assert c["claim"] in proc.stdout
