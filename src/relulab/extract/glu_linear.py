"""The value branch, orientation and magnitude of a GLU block once its gate directions
``g_k`` (unit rows of ``G``) and output directions ``w_k`` (unit columns of ``W``) are
known (stages 3 to 5 of :func:`relulab.extract.extract_glu`).

With ``act(z) - act(-z) = z`` the paired parts of a unit
``(w_k / c_k) act(s_k c_k g_k . x)(s_k v_k . x)`` (orientation ``s_k``, gate magnitude
``c_k``) are

* even: ``(f(x) + f(-x)) / 2 = sum_k w_k (g_k . x)(v_k . x) / 2`` - linear in ``V``,
  free of ``s`` and ``c``: :func:`value_rows` solves it (preconditioned conjugate
  gradients on the normal equations, matrix-free);
* odd: ``(f(x) - f(-x)) / 2 = sum_k s_k w_k psi(c_k g_k . x) / c_k (v_k . x) / 2`` with
  ``psi(z) = act(z) + act(-z)``; far out ``psi(c z) / c -> |z|``, so at a large scale it
  is linear in ``s`` (:func:`orientations`), and at scale one it fixes ``c``
  (:func:`magnitudes`, Gauss-Newton over the ``hidden`` scalars).

All normal matrices of the per-unit scalars have the form ``(W^T W) * (F^T F)``
(Hadamard), ``hidden x hidden``, whatever the number of queries.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> G = np.linalg.qr(rng.normal(size=(4, 2)))[0].T
    >>> W = np.linalg.qr(rng.normal(size=(3, 2)))[0]
    >>> V = rng.normal(size=(2, 4))
    >>> X = rng.normal(size=(40, 4))
    >>> E = 0.5 * ((X @ G.T) * (X @ V.T)) @ W.T
    >>> bool(np.allclose(value_rows(X, E, G, W).V, V, atol=1e-8))
    True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..limits import Deadline
from ..results import Result
from ..tolerance import TINY, or_default

__all__ = ["ValueSolve", "value_rows", "orientations", "magnitudes", "psi_ratio", "even_fit"]

CG_RTOL = 1e-14  # tol: conjugate gradients stop at float64 precision of the normal equations
GN_RTOL = 1e-12  # tol: Gauss-Newton on the magnitudes stops when the residual stalls to this
LM_DAMP = 1e-6  # tol: initial Levenberg damping of the magnitude steps (relative to the diagonal)
FIT_CG_RTOL = 1e-11  # tol: even_fit's default inner solve: near float64 precision of its normal equations


@dataclass(frozen=True)
class ValueSolve(Result):
    """The value rows of :func:`value_rows` and how the solve ended.

    Attributes:
        V: the rows (hidden, d).  residual: relative residual of the normal equations.
        iterations: conjugate-gradient steps.  converged: the residual reached
            ``CG_RTOL`` (False: stopped by ``max_iter`` or ``time_limit``).

    Example:
        >>> ValueSolve(np.zeros((1, 2)), 0.0, 3, True).to_dict()["converged"]
        True
    """

    V: np.ndarray
    residual: float
    iterations: int
    converged: bool


def value_rows(X: np.ndarray, E: np.ndarray, G: np.ndarray, W: np.ndarray,
               max_iter: int = 3000, time_limit: float = math.inf,
               V0: np.ndarray | None = None, odd: bool = False, rtol: float | None = None) -> ValueSolve:
    """Least-squares ``V`` of ``E = ((X G^T) * (X V^T)) W^T / 2`` (module docstring), or
    with ``odd`` of ``E = (|X G^T| * (X V^T)) W^T / 2`` (the odd part far out, whose
    rows are the value rows times the orientations).  ``rtol``: the relative residual of
    the normal equations to stop at (None: ``CG_RTOL``, float64 precision).

    Returns a :class:`ValueSolve` (rows, residual, iterations, converged).

    Example:
        >>> import numpy as np
        >>> X = np.eye(2)
        >>> r = value_rows(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
        ...                np.array([[1.0], [0.0], [1.5]]), np.array([[1.0, 0.0]]), np.ones((1, 1)))
        >>> np.round(r.V, 6).tolist(), r.converged
        ([[2.0, 1.0]], True)
    """
    rtol = or_default(rtol, CG_RTOL)  # stop at this relative residual of the normal equations
    A = X @ G.T                                    # (n, h) gate pre-activations
    if odd:
        A = np.abs(A)
    WtW_diag = np.einsum("ij,ij->j", W, W)

    def normal(V: np.ndarray) -> np.ndarray:
        P = 0.5 * (A * (X @ V.T)) @ W.T
        return (0.5 * ((P @ W) * A)).T @ X

    rhs = (0.5 * ((E @ W) * A)).T @ X
    # block preconditioner per unit: for Gaussian-like inputs sum_n (g.x)^2 x x^T is about
    # n (|g|^2 I + 2 g g^T), whose inverse is analytic; scaled to the data's diagonal
    Gn = G / np.maximum(np.linalg.norm(G, axis=1, keepdims=True), TINY)
    diag = 0.25 * WtW_diag * np.sum(A * A, axis=0) * float(np.mean(X * X))  # (h,)
    diag = np.maximum(diag, TINY)

    def precond(R: np.ndarray) -> np.ndarray:
        return (R - (2.0 / 3.0) * np.sum(R * Gn, axis=1, keepdims=True) * Gn) / diag[:, None]
    V = np.zeros_like(rhs) if V0 is None else V0.copy()
    R = rhs - normal(V)
    Z = precond(R)
    Pd = Z.copy()
    rz = float(np.sum(R * Z))
    bn = max(float(np.linalg.norm(rhs)), TINY)
    deadline = Deadline(time_limit)
    it = 0
    for _ in range(max_iter):
        it += 1
        Q = normal(Pd)
        alpha = rz / max(float(np.sum(Pd * Q)), TINY)
        V += alpha * Pd
        R -= alpha * Q
        if np.linalg.norm(R) <= rtol * bn or deadline.expired():
            break
        Z = precond(R)
        rz_new = float(np.sum(R * Z))
        Pd = Z + (rz_new / rz) * Pd
        rz = rz_new
    res = float(np.linalg.norm(R) / bn)
    return ValueSolve(V, res, it, res <= rtol)


def _solve_hadamard(W: np.ndarray, F: np.ndarray, Y: np.ndarray, damp: float = 0.0) -> np.ndarray:
    """Least squares ``y_n = W diag(F_n) a`` over all n: ``((W^T W) * (F^T F)) a = sum_n F_n * (W^T y_n)``."""
    M = (W.T @ W) * (F.T @ F)
    b = np.sum(F * (Y @ W), axis=0)
    if damp:
        M = M + damp * np.diag(np.diag(M))
    # M is a Hadamard product of Gram matrices (positive semidefinite): Cholesky, ~10x
    # cheaper than the SVD of lstsq at hidden = 1024; lstsq only when M is singular
    from scipy.linalg import LinAlgError, cho_factor, cho_solve

    try:
        return cho_solve(cho_factor(M), b)
    except LinAlgError:
        return np.linalg.lstsq(M, b, rcond=None)[0]


def orientations(X: np.ndarray, O: np.ndarray, G: np.ndarray, W: np.ndarray,
                 V: np.ndarray, odd: bool = True) -> np.ndarray:
    """Per-unit coefficients ``s`` of the large-scale odd part
    ``O = sum_k s_k w_k |g_k . x| (v_k . x) / 2`` (about +1 or -1 each); with ``odd``
    False of the even part ``sum_k s_k w_k (g_k . x)(v_k . x) / 2`` instead.

    Example:
        >>> import numpy as np
        >>> X = np.random.default_rng(0).normal(size=(20, 2))
        >>> G, W, V = np.array([[1.0, 0.0]]), np.ones((1, 1)), np.array([[0.0, 1.0]])
        >>> O = -0.5 * np.abs(X[:, :1]) * X[:, 1:]
        >>> np.round(orientations(X, O, G, W, V), 9).tolist()
        [-1.0]
    """
    A = X @ G.T
    F = 0.5 * (np.abs(A) if odd else A) * (X @ V.T)
    return _solve_hadamard(W, F, O)


def psi_ratio(z: np.ndarray, c: np.ndarray, act: str, deriv: bool = False) -> np.ndarray:
    """``psi(c z) / c`` with ``psi(z) = act(z) + act(-z)`` (or its derivative in ``c``):
    ``z tanh(c z / 2)`` for SiLU, ``z erf(c z / sqrt 2)`` for GELU, ``|z|`` for ReLU.

    Example:
        >>> import numpy as np
        >>> float(psi_ratio(np.array(2.0), np.array(1.0), "silu"))  # silu(2) + silu(-2)
        1.5231883119115297
    """
    if act == "relu":
        return np.zeros_like(z) if deriv else np.abs(z)
    u = c * z
    if act == "silu":
        th = np.tanh(0.5 * u)
        return 0.5 * z * z * (1.0 - th * th) if deriv else z * th
    from scipy.special import erf

    if deriv:
        return z * z * math.sqrt(2.0 / math.pi) * np.exp(-0.5 * u * u)
    return z * erf(u / math.sqrt(2.0))


def magnitudes(X: np.ndarray, O: np.ndarray, G: np.ndarray, W: np.ndarray, V: np.ndarray,
               s: np.ndarray, act: str, iters: int = 60) -> tuple[np.ndarray, float]:
    """Gate magnitudes ``c`` (positive) of the odd part at scale one,
    ``O = sum_k s_k w_k psi(c_k g_k . x) / c_k (v_k . x) / 2``, by a common scale on a
    log grid, then damped Gauss-Newton in ``log c``.  Returns ``(c, relative residual)``.

    Example:
        >>> import numpy as np
        >>> X = np.random.default_rng(0).normal(size=(50, 2))
        >>> G, W, V = np.array([[1.0, 0.0]]), np.ones((1, 1)), np.array([[0.0, 1.0]])
        >>> O = 0.5 * psi_ratio(X[:, :1], np.array([1.7]), "silu") * X[:, 1:]
        >>> c, res = magnitudes(X, O, G, W, V, np.ones(1), "silu")
        >>> round(float(c[0]), 9)
        1.7
    """
    A, B = X @ G.T, X @ V.T
    on = max(float(np.linalg.norm(O)), TINY)

    def resid(c: np.ndarray) -> np.ndarray:
        return O - (0.5 * s * psi_ratio(A, c, act) * B) @ W.T

    grid = np.exp(np.linspace(math.log(0.05), math.log(20.0), 25))
    errs = [np.linalg.norm(resid(np.full(G.shape[0], g))) for g in grid]
    c = np.full(G.shape[0], grid[int(np.argmin(errs))])
    R = resid(c)
    err = float(np.linalg.norm(R))
    damp = LM_DAMP
    for _ in range(iters):
        J = 0.5 * s * psi_ratio(A, c, act, deriv=True) * B * c  # d/d(log c)
        step = _solve_hadamard(W, J, R, damp)
        c_new = c * np.exp(np.clip(step, -2.0, 2.0))
        R_new = resid(c_new)
        e_new = float(np.linalg.norm(R_new))
        if e_new < err:
            done = e_new > err * (1 - GN_RTOL)
            c, R, err, damp = c_new, R_new, e_new, damp / 3
            if done or err <= GN_RTOL * on:
                break
        else:
            damp *= 10
            if damp > 1e6:
                break
    return c, err / on



def _gn_direction(X: np.ndarray, R: np.ndarray, G: np.ndarray, V: np.ndarray, W: np.ndarray,
                  cg_iter: int, cg_rtol: float) -> list:
    """One Gauss-Newton direction ``[dG, dV, dW]`` of :func:`even_fit` for the residual ``R``."""
    A, B = X @ G.T, X @ V.T
    F = 0.5 * A * B

    def jac(dG: np.ndarray, dV: np.ndarray, dW: np.ndarray) -> np.ndarray:
        return 0.5 * ((X @ dG.T) * B + A * (X @ dV.T)) @ W.T + F @ dW.T

    def jac_t(R: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        RW = R @ W
        return (0.5 * (RW * B)).T @ X, (0.5 * (RW * A)).T @ X, R.T @ F

    # preconditioned CG on the normal equations (the scale gauge makes them singular
    # but consistent); per unit the Gaussian-input blocks of J^T J are
    # c (|g|^2 I + 2 g g^T) for v, c (|v|^2 I + 2 v v^T) for g: analytic inverses
    c = 0.25 * np.einsum("ij,ij->j", W, W) * X.shape[0] * float(np.mean(X * X))
    gn2, vn2 = np.einsum("ij,ij->i", G, G), np.einsum("ij,ij->i", V, V)
    Gh = G / np.sqrt(np.maximum(gn2, TINY))[:, None]
    Vh = V / np.sqrt(np.maximum(vn2, TINY))[:, None]
    dv = np.maximum(c * gn2, TINY)[:, None]
    dg = np.maximum(c * vn2, TINY)[:, None]
    dw = np.maximum(np.einsum("ij,ij->j", F, F), TINY)[None, :]

    def prec(r: list) -> list:
        rg, rv, rw = r
        return [(rg - (2.0 / 3.0) * np.sum(rg * Vh, axis=1, keepdims=True) * Vh) / dg,
                (rv - (2.0 / 3.0) * np.sum(rv * Gh, axis=1, keepdims=True) * Gh) / dv,
                rw / dw]

    def dot(a: list, b: list) -> float:
        return sum(float(np.sum(u * w)) for u, w in zip(a, b, strict=True))

    b = list(jac_t(R))
    x = [np.zeros_like(t) for t in b]
    r = [t.copy() for t in b]
    z = prec(r)
    p = [t.copy() for t in z]
    rz = dot(r, z)
    bn = math.sqrt(dot(b, b))
    for _ in range(cg_iter):
        Jp = jac(*p)
        q = list(jac_t(Jp))
        alpha = rz / max(float(np.sum(Jp * Jp)), TINY)
        x = [a + alpha * u for a, u in zip(x, p, strict=True)]
        r = [a - alpha * u for a, u in zip(r, q, strict=True)]
        if math.sqrt(dot(r, r)) <= cg_rtol * bn:
            break
        z = prec(r)
        rz_new = dot(r, z)
        p = [a + (rz_new / rz) * u for a, u in zip(z, p, strict=True)]
        rz = rz_new
    return x


def even_fit(X: np.ndarray, E: np.ndarray, G: np.ndarray, V: np.ndarray, W: np.ndarray,
             steps: int = 8, cg_iter: int = 200, cg_rtol: float = FIT_CG_RTOL) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Gauss-Newton on the even part ``E = ((X G^T) * (X V^T)) W^T / 2`` over ``G``,
    ``V`` and ``W`` together (each step a linear least-squares problem, solved by
    matrix-free conjugate gradients): noisy gate rows (finite differences) and output
    directions are re-fitted to every even-part equation at once.  Rows of ``G`` and
    columns of ``W`` are returned unit (their scales moved into ``V``) with their signs
    kept.  Returns ``(G, V, W, median relative residual)``.

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> G = np.linalg.qr(rng.normal(size=(6, 3)))[0].T
        >>> W = np.linalg.qr(rng.normal(size=(6, 3)))[0]
        >>> V = rng.normal(size=(3, 6))
        >>> X = rng.normal(size=(200, 6))
        >>> E = 0.5 * ((X @ G.T) * (X @ V.T)) @ W.T
        >>> G0 = G + 0.01 * rng.normal(size=G.shape)
        >>> G1, V1, W1, res = even_fit(X, E, G0 / np.linalg.norm(G0, axis=1, keepdims=True), V, W)
        >>> bool(np.abs(np.abs(np.sum(G1 * G, axis=1)) - 1).max() < 1e-9), res < 1e-9
        (True, True)
    """
    en = np.maximum(np.linalg.norm(E, axis=1), TINY)
    G, V, W = G.copy(), V.copy(), W.copy()

    def model(G: np.ndarray, V: np.ndarray, W: np.ndarray) -> np.ndarray:
        return 0.5 * ((X @ G.T) * (X @ V.T)) @ W.T

    R = E - model(G, V, W)
    err = float(np.sum(R * R))
    for _ in range(steps):
        x = _gn_direction(X, R, G, V, W, cg_iter, cg_rtol)
        # step halving keeps every step a descent step
        for t in (1.0, 0.5, 0.25, 0.125):
            Gt, Vt, Wt = G + t * x[0], V + t * x[1], W + t * x[2]
            Rt = E - model(Gt, Vt, Wt)
            et = float(np.sum(Rt * Rt))
            if et < err:
                break
        if not et < err:
            break
        done = et > err * (1 - GN_RTOL)
        G, V, W, R, err = Gt, Vt, Wt, Rt, et
        if done:
            break
    ng = np.maximum(np.linalg.norm(G, axis=1), TINY)
    nw = np.maximum(np.linalg.norm(W, axis=0), TINY)
    G, W, V = G / ng[:, None], W / nw, V * (ng * nw)[:, None]
    res = float(np.median(np.linalg.norm(R, axis=1) / en))
    return G, V, W, res

