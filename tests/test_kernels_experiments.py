"""Each experiment of the kernels / paths / perturbation / conservation work runs in its
--quick mode and writes the JSON fields its report promises."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("torch")


def run(script: str, tmp_path: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    subprocess.run([sys.executable, "-W", "ignore", str(ROOT / "experiments" / script), "--quick",
                    "--out", str(tmp_path)], check=True, env=env, capture_output=True, timeout=900)
    return json.loads((tmp_path / script.replace(".py", ".json")).read_text())


def test_sign_flip_energy_quick(tmp_path):
    r = run("sign_flip_energy.py", tmp_path)
    assert r["quick"] is True and r["status"].startswith("sampled")
    rows = r["sweep"][-1]["rows"]
    assert all(lo <= x["ratio"] <= hi for x in rows for lo, hi in [x["ci95"]])
    # the alignment constant is sharp even in the quick run
    assert abs(r["quantisation"]["cos2_sign_w"]["mean"] - r["claim"]["cos2_sign_alignment"]) < 0.01
    assert set(r["held"]) == {"ratio_at_smallest_p", "cos2", "post_relu_radial"}


@pytest.mark.slow
def test_conservation_modern_quick(tmp_path):
    r = run("conservation_modern.py", tmp_path)
    assert len(r["rows"]) == 11
    assert r["all_match_expected"] is True
    assert r["max_flow_drift"] < 1e-8
    for row in r["rows"]:
        assert row["lie_bound"] >= row["count"]


@pytest.mark.slow
def test_optimizer_connectivity_quick(tmp_path):
    r = run("optimizer_connectivity.py", tmp_path)
    assert set(r["widths"]) == {"3", "64"}
    # the batched trainer reproduces torch.optim.AdamW / torch.optim.Muon runs
    assert max(r["batched_vs_torch_optim_max_param_diff"].values()) < 1e-10
    for w in r["widths"].values():
        for p in w["pairs"]:
            assert min(p["barrier_bezier"], p["barrier_linear"], p["barrier_polyline"]) >= 0
            assert p["barrier_best"] <= p["barrier_bezier"]
            assert max(p["loss_a"], p["loss_b"]) < r["zero_loss_threshold"]
    assert "same_optimizer_connected_at_large_width" in r["observed"]


@pytest.mark.slow
def test_ntk_vs_network_quick(tmp_path):
    r = run("ntk_vs_network.py", tmp_path)
    assert {"sawtooth", "bandlimited", "parity", "observed", "sawtooth_recipe"} <= set(r)
    rec = r["sawtooth_recipe"]
    for row in rec["claim_vs_measured"]:  # the claim's 4^L growth stated beside the measured counts
        assert row["claim_ntk_4^L_scaled"] == row["ntk_measured"] or row["L"] != rec["claim_vs_measured"][0]["L"]
    assert all(0 <= x["test_rel_mse"] for x in rec["rows"])
    assert r["parity"]["ratio"] > 0
    # the sawtooth target is exactly the depth-L width-2 network the experiment builds
    assert r["sawtooth"]["exact_network_max_error"] < 1e-12
    assert set(r["sawtooth"]["samples_needed"]["1"]) == {"ntk", "net", "oracle_init"}
    assert len(r["sawtooth"]["rows"]) == 9
    # the ERM arm says whether ERM was reached, from the training loss it reports
    erm = r["sawtooth_erm"]
    for row in erm["rows"]:
        for arm in ("random", "fold"):
            assert row[f"{arm}_erm_reached"] == (row[f"{arm}_best_train_rel_mse"] < erm["config"]["erm_train_tol"])
    # the Levenberg-Marquardt ERM arm: ERM claimed only where the training loss is ~0, the
    # interpolating fraction consistent with it, the claim's numbers beside the measured ones
    lm = r["sawtooth_erm_lm"]
    for row in lm["rows"]:
        assert row["erm_reached"] == (row["best_train_rel_mse"] <= 1e-10)
        assert (row["interpolating_fraction"] > 0) >= row["erm_reached"]
        assert row["restarts_completed"] <= row["restarts"]
        assert row["norms"]["balanced_layer_fro"] <= row["norms"]["max_layer_fro"] + 1e-12
    for row in lm["probe_rows"]:
        assert 0 <= row["minimisers_found"] <= row["starts"]
    L0 = lm["claim_vs_measured"][0]
    assert L0["claim_ntk_4^L_scaled"] == L0["ntk_measured"]
    assert isinstance(lm["verdict"], str) and "NTK" in lm["verdict"]
    deep = r["sawtooth_ntk_deep"]
    assert all(0 <= x["ntk_rel_mse"] for x in deep["rows"])
