"""Reference NTK / NNGP values and timings from neural-tangents (JAX), for benchmarks/ntk.py.

Runs under a SEPARATE environment that has neural-tangents (never the project's venv: it
pulls in JAX and TensorFlow).  Combination that imports and computes here (Python 3.11):

    python3 -m venv /work/ntvenv2
    /work/ntvenv2/bin/pip install neural-tangents==0.6.5 jax==0.4.23 jaxlib==0.4.23 \\
        numpy==1.26.4 tf2jax==0.3.6 "tensorflow==2.15.*" "ml_dtypes<0.3"
    XLA_FLAGS=--xla_cpu_multi_thread_eigen=false taskset -c 0 \\
        /work/ntvenv2/bin/python benchmarks/ntk_reference.py

(The newest jax (0.10) lacks ``jax.core.Jaxpr``, which neural-tangents 0.6.5 imports; with
jax 0.4.30 the analytic kernels and two of the three empirical-NTK implementations work
but ``structured_derivatives`` fails on ``jax.interpreters.ad.source_info_util``; jax
0.4.23, the release of neural-tangents 0.6.5's time, runs all of them.)  One CPU core
(``taskset``, single-threaded XLA) as relulab's runs with ``OMP_NUM_THREADS=1``.

It writes ``benchmarks/results/ntk_reference.json``; ``benchmarks/ntk.py`` (the project's
venv) reads it, recomputes relulab's values on the same inputs and prints both side by side.
This script imports nothing from relulab.

What is computed (float64, ``jax_enable_x64``):

1. Infinite width: ``stax.serial(Dense(512, W_std=w1, b_std=b), Relu, [Dense(512, sqrt 2, b),
   Relu] * (depth - 1), Dense(1, sqrt 2, b))`` in neural-tangents' default NTK
   parameterisation (``W_std / sqrt(fan_in) * W_raw + b_std * b_raw``, raw N(0, 1)), its
   analytic ``kernel_fn(X, X, ("nngp", "ntk"))``, depths 1-4, three configurations:

   * ``ntk_param``: ``w1 = 1``, no bias (``b_std=None``): exactly relulab's
     ``ntk(X, depth)`` / ``nngp(X, depth)`` (input layer variance 1/d, then 2/fan_in);
   * ``ntk_param_bias``: ``w1 = 1``, ``b_std = sqrt(0.1)``: relulab's ``bias_var=0.1``;
   * ``he_everywhere``: ``w1 = sqrt 2`` (weight variance 2 in the input layer too), no bias:
     relulab's kernels of the inputs scaled by ``sqrt 2`` (the input layer sees ``x`` only
     through ``W_std^2 x.z / d``).

   Timed: the plain call (best of 3; the first call traces) and ``jax.jit(kernel_fn,
   static_argnames="get")`` (best of 3 after compiling).
   Inputs: the first 16 of benchmarks/ntk.py's 32 points on the unit sphere of R^16
   (``default_rng(0)``, normalised) and 4 Gaussian points of norms 0.3, 1.7, 3 and 6, to
   exercise the diagonal (stored in the JSON; the upper triangles of the kernels too).
2. Empirical NTK of the 2-64-64-1 network of benchmarks/ntk.py's speed test on its 1,000
   points (same seeds; raw weights rebuilt here as ``relulab.dynamics.random_ntk_network``
   draws them), with respect to the *effective* weights and biases (neural-tangents'
   ``parameterization="standard"``), which is ``relulab.dynamics.empirical_ntk(net, X)``.
   Stored: checksums of the weights (so a mismatch of the draws is caught), the trace,
   Frobenius norm and sum of the kernel and 64 sampled entries; timings of
   ``nt.empirical_ntk_fn`` (jit) for its three implementations, first call (with
   compilation) and best of three.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

SPHERE_SEED = 0  # benchmarks/ntk.py sphere_points(32, 16, seed=0)
BIAS_VAR = 0.1
OFF_SPHERE_NORMS = (0.3, 1.7, 3.0, 6.0)


def reference_points() -> np.ndarray:
    X = np.random.default_rng(SPHERE_SEED).normal(size=(32, 16))
    X = X / np.linalg.norm(X, axis=1, keepdims=True)
    G = np.random.default_rng(5).normal(size=(len(OFF_SPHERE_NORMS), 16))
    G = G / np.linalg.norm(G, axis=1, keepdims=True) * np.asarray(OFF_SPHERE_NORMS)[:, None]
    return np.vstack([X[:16], G])


def speed_network() -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
    """The effective weights of random_ntk_network(2, 64, depth=2, rng=0) and the points
    of benchmarks/ntk.py's speed test (same draw order: W raw, b raw per layer)."""
    rng = np.random.default_rng(0)
    dims = [2, 64, 64, 1]
    Ws, bs = [], []
    for k in range(3):
        wsc = float(np.sqrt((1.0 if k == 0 else 2.0) / dims[k]))
        Ws.append(wsc * rng.standard_normal((dims[k + 1], dims[k])))
        bs.append(0.0 * rng.standard_normal(dims[k + 1]))
    X = np.random.default_rng(1).normal(size=(1000, 2))
    return Ws, bs, X


def _triu(K: np.ndarray) -> list[float]:
    return [float(v) for v in K[np.triu_indices(K.shape[0])]]


def infinite_width(jax, stax, X: np.ndarray) -> dict:
    configs = {"ntk_param": (1.0, None), "ntk_param_bias": (1.0, float(np.sqrt(BIAS_VAR))),
               "he_everywhere": (float(np.sqrt(2.0)), None)}
    out = {}
    for name, (w1, b) in configs.items():
        for depth in (1, 2, 3, 4):
            layers = [stax.Dense(512, W_std=w1, b_std=b), stax.Relu()]
            for _ in range(depth - 1):
                layers += [stax.Dense(512, W_std=np.sqrt(2.0), b_std=b), stax.Relu()]
            layers += [stax.Dense(1, W_std=np.sqrt(2.0), b_std=b)]
            _, _, kernel_fn = stax.serial(*layers)
            t0 = time.perf_counter()
            k = kernel_fn(X, X, ("nngp", "ntk"))
            nngp, ntk = np.asarray(k.nngp), np.asarray(k.ntk)
            t_first = time.perf_counter() - t0
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                k = kernel_fn(X, X, ("nngp", "ntk"))
                np.asarray(k.ntk)
                times.append(time.perf_counter() - t0)
            jitted = jax.jit(kernel_fn, static_argnames="get")
            np.asarray(jitted(X, X, ("nngp", "ntk")).ntk)  # compile
            jtimes = []
            for _ in range(3):
                t0 = time.perf_counter()
                np.asarray(jitted(X, X, ("nngp", "ntk")).ntk)
                jtimes.append(time.perf_counter() - t0)
            out[f"{name}/depth{depth}"] = {"config": name, "depth": depth, "W_std_first": w1, "b_std": b,
                                           "nngp_triu": _triu(nngp), "ntk_triu": _triu(ntk),
                                           "seconds_first_call": t_first, "seconds_best": min(times),
                                           "seconds_best_jit": min(jtimes)}
            print(f"  {name:15s} depth {depth}: kernel_fn {min(times) * 1e3:.1f} ms, jit {min(jtimes) * 1e3:.2f} ms "
                  f"(first call {t_first * 1e3:.0f} ms)", flush=True)
    return out


def large(jax, stax) -> dict:
    """Timing on a problem where per-call overhead does not dominate: 2,000 Gaussian
    points in R^16 (``default_rng(3)``), depth 4, no bias; the kernel is checked by its
    trace, sum and 64 sampled entries."""
    X = np.random.default_rng(3).normal(size=(2000, 16))
    layers = [stax.Dense(512, W_std=1.0), stax.Relu()]
    for _ in range(3):
        layers += [stax.Dense(512, W_std=np.sqrt(2.0)), stax.Relu()]
    layers += [stax.Dense(1, W_std=np.sqrt(2.0))]
    _, _, kernel_fn = stax.serial(*layers)
    jitted = jax.jit(kernel_fn, static_argnames="get")
    K = np.asarray(jitted(X, X, "ntk"))
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        np.asarray(jitted(X, X, "ntk"))
        times.append(time.perf_counter() - t0)
    picks = np.random.default_rng(9).integers(0, X.shape[0], size=(64, 2))
    print(f"  2000 points, depth 4: jit kernel_fn {min(times):.3f} s", flush=True)
    return {"points": "default_rng(3).normal(size=(2000, 16))", "depth": 4, "points_sum": float(X.sum()),
            "seconds_best_jit": min(times), "trace": float(np.trace(K)), "sum": float(K.sum()),
            "picks": picks.tolist(), "entries": [float(K[i, j]) for i, j in picks]}


def empirical(nt, stax, jax) -> dict:
    Ws, bs, X = speed_network()
    _, apply_fn, _ = stax.serial(stax.Dense(64, parameterization="standard", b_std=0.0), stax.Relu(),
                                 stax.Dense(64, parameterization="standard", b_std=0.0), stax.Relu(),
                                 stax.Dense(1, parameterization="standard", b_std=0.0))
    params = [(Ws[0].T, bs[0]), (), (Ws[1].T, bs[1]), (), (Ws[2].T, bs[2])]
    picks = np.random.default_rng(9).integers(0, X.shape[0], size=(64, 2))
    res = {"network": "2-64-64-1", "points": int(X.shape[0]),
           "weights_sum": [float(W.sum()) for W in Ws], "weights_sq_sum": [float((W * W).sum()) for W in Ws],
           "points_sum": float(X.sum()), "picks": picks.tolist(), "implementations": {}}
    K_ref = None
    for impl in (1, 2, 3):  # JACOBIAN_CONTRACTION, NTK_VECTOR_PRODUCTS, STRUCTURED_DERIVATIVES
        name = {1: "jacobian_contraction", 2: "ntk_vector_products", 3: "structured_derivatives"}[impl]
        fn = jax.jit(nt.empirical_ntk_fn(apply_fn, vmap_axes=0, implementation=impl))
        t0 = time.perf_counter()
        try:
            K = np.asarray(fn(X, None, params))
        except Exception as e:  # noqa: BLE001 -- a version incompatibility is recorded, not hidden
            res["implementations"][name] = {"failed": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
            print(f"  empirical_ntk_fn {name:24s}: FAILED ({type(e).__name__})", flush=True)
            continue
        t_first = time.perf_counter() - t0
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            np.asarray(fn(X, None, params))
            times.append(time.perf_counter() - t0)
        K = K.reshape(X.shape[0], X.shape[0])
        if K_ref is None:
            K_ref = K
        res["implementations"][name] = {"seconds_first_call": t_first, "seconds_best": min(times),
                                        "max_abs_diff_to_jacobian_contraction": float(np.max(np.abs(K - K_ref)))}
        print(f"  empirical_ntk_fn {name:24s}: {min(times):.4f} s (first call with jit {t_first:.2f} s)", flush=True)
    res.update({"trace": float(np.trace(K_ref)), "frobenius": float(np.linalg.norm(K_ref)),
                "sum": float(K_ref.sum()), "entries": [float(K_ref[i, j]) for i, j in picks]})
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="benchmarks/results/ntk_reference.json")
    a = ap.parse_args()
    import jax

    jax.config.update("jax_enable_x64", True)
    import neural_tangents as nt
    from neural_tangents import stax

    X = reference_points()
    print("neural-tangents infinite-width kernels (analytic kernel_fn), 20 points in R^16")
    inf = infinite_width(jax, stax, X)
    big = large(jax, stax)
    print("neural-tangents empirical NTK, 2-64-64-1, 1000 points")
    emp = empirical(nt, stax, jax)
    from importlib.metadata import version

    out = {"produced_by": "neural-tangents (benchmarks/ntk_reference.py)",
           "versions": {p: version(p) for p in ("neural-tangents", "jax", "jaxlib", "numpy")},
           "python": platform.python_version(),
           "threads": {"XLA_FLAGS": os.environ.get("XLA_FLAGS", ""),
                       "cpu_affinity": sorted(os.sched_getaffinity(0))},
           "bias_var": BIAS_VAR, "points": X.tolist(), "infinite_width": inf, "large": big, "empirical": emp}
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Path(a.out).write_text(json.dumps(out, indent=1))
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
