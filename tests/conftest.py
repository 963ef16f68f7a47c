"""Shared fixtures: where the shared benchmark data lives, and random networks."""

from __future__ import annotations

import os
from pathlib import Path

# One thread per process for torch and BLAS, set before either is imported: the tests
# use small tensors, CI has 2 cores, and on a shared machine oversubscribed OpenMP
# threads made single bound-computation tests over 100x slower than with one thread.
# Subprocesses (CLI tests, worker pools) inherit it.  An explicit setting wins.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from relulab import Network  # noqa: E402

# CI must be reproducible: property tests draw the same examples on every run.
# HYPOTHESIS_PROFILE=explore searches afresh (what a developer hunting bugs wants).
settings.register_profile("ci", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def data_dir() -> Path | None:
    """The shared data folder: $RELULAB_DATA, else ../shared/data beside the checkout."""
    env = os.environ.get("RELULAB_DATA")
    candidates = [Path(env)] if env else []
    root = Path(__file__).resolve().parents[1]
    candidates += [root.parent / "shared" / "data", root / "shared" / "data"]
    for c in candidates:
        if c.is_dir():
            return c
    return None


@pytest.fixture(scope="session")
def shared_data() -> Path:
    d = data_dir()
    if d is None:
        pytest.skip("shared data not found: set RELULAB_DATA or place it at ../shared/data")
    return d


@pytest.fixture(scope="session")
def acasxu_dir(shared_data: Path) -> Path:
    d = shared_data / "acasxu"
    if not (d / "onnx").is_dir():
        pytest.skip(f"ACAS Xu data not found under {d}")
    return d


def random_network(
    rng: np.random.Generator, dims: list[int], skip: bool = False, scale: float = 1.0
) -> Network:
    """A float64 network with Gaussian weights, layer sizes ``dims`` (input first)."""
    Ws = [rng.normal(size=(dims[i + 1], dims[i])) * scale / np.sqrt(dims[i]) for i in range(len(dims) - 1)]
    bs = [rng.normal(size=dims[i + 1]) * 0.3 for i in range(len(dims) - 1)]
    sk = (rng.normal(size=(dims[-1], dims[0])), rng.normal(size=dims[-1])) if skip else None
    return Network(Ws, bs, sk)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(0)


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    """Run ``relulab ARGS`` through the real entry point; return (exit code, stdout, stderr)."""
    from relulab.cli import main

    code = 0
    try:
        main([str(a) for a in args])
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


def record_kwarg(monkeypatch, owner, name: str, key: str) -> list:
    """Wrap ``owner.name`` so each call records its keyword argument ``key`` (None when
    absent) and then runs as before; returns the list the calls fill."""
    seen: list = []
    real = getattr(owner, name)

    def spy(*args, **kwargs):
        seen.append(kwargs.get(key))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, spy)
    return seen
