"""Fuzzing in CI, with a small budget (``RELULAB_FUZZ_CASES`` cases per loader, default
120; ``benchmarks/fuzz.py`` runs the large budget and reports the counts).

Every mutated input must load or raise relulab's own one-line error; no other exception,
no hang, and a failing command writes nothing (see harness.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import harness  # noqa: E402

CASES = int(os.environ.get("RELULAB_FUZZ_CASES", "120"))


def _report(st) -> str:
    return "\n".join(f"{case}: {why}" for case, why in st.failures[:5])


@pytest.mark.parametrize("kind", ["onnx", "vnnlib", "nnet", "npz", "pt"])
def test_loader_fuzz(kind, tmp_path):
    if kind in ("onnx", "pt"):
        pytest.importorskip("onnx" if kind == "onnx" else "torch")
    st = harness.fuzz_loader(kind, CASES, seed=0, folder=str(tmp_path))
    assert st.cases == CASES and st.loaded + st.rejected + len(st.failures) == CASES
    assert not st.failures, _report(st)
    assert st.rejected > 0            # the mutations do produce bad inputs
    assert st.loaded > 0              # and some that still load (the seeds are valid)


def test_cli_fuzz(tmp_path, capsys):
    st = harness.fuzz_cli(max(20, CASES // 3), seed=0, folder=str(tmp_path))
    capsys.readouterr()
    assert not st.failures, _report(st)
    assert st.rejected > 0 and st.loaded > 0


def test_harness_catches_a_crashing_loader(tmp_path, monkeypatch):
    """The harness itself can fail: a loader raising a foreign exception is reported."""
    def broken(kind, path):
        raise KeyError("boom")

    monkeypatch.setattr(harness, "_load", broken)
    st = harness.fuzz_loader("nnet", 3, folder=str(tmp_path))
    assert len(st.failures) == 3 and "KeyError" in st.failures[0][1]
