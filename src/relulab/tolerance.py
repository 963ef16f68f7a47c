"""The one tolerance policy of relulab.

relulab computes in float64 unless asked for Fractions.  A float answer counts as
exact when it is certified as follows:

* ``FEAS_TOL`` (1e-9): a point is *in* a domain or satisfies a linear constraint
  ``a @ x <= b`` when ``a @ x <= b + FEAS_TOL``.  Used for membership tests.
* A *counterexample* (``violated``) is always re-checked by a plain forward pass
  of the network at the returned input, which must lie in the input domain with
  ``FEAS_TOL`` and must violate the property by the forward pass (output
  constraints checked with ``FEAS_TOL`` as well).  No re-check, no ``violated``.
* ``holds`` is only answered from sound reasoning (bounds and LPs whose
  conclusions keep a safety margin of ``PROOF_MARGIN`` relative to the scale of
  the numbers involved), never from sampling.
* A region's interior point must satisfy its strict inequalities by at least
  ``STRICT_TOL`` (1e-9), with a Chebyshev radius above ``MIN_RADIUS``.
* Where asked, answers are re-checked in rational arithmetic (``Network.exact()``).

Every tolerance of the package is a named constant below with a one-line reason.
A public argument ``tol=None`` (``rtol``, ``gap_tol``, ``mip_gap`` ...) means "this
policy's default" (the constant its docstring names).  Comparisons of a float
answer against a bound scale the tolerance with the number: :func:`scaled_tol`.

The rule for code (checked by ``tests/test_structure.py``): no float literal below
``1e-5`` in ``src/relulab`` outside this module, except on a line whose comment
contains the marker ``tol:`` followed by the reason, e.g.::

    step = 1e-3 * scale
    floor = 1e-14 * top  # tol: FISTA's step never shrinks below machine precision

Use the marker for numerical constants that belong to one algorithm (a solver's
stopping rule); anything another module could need goes here.

Example:
    >>> from relulab.tolerance import FEAS_TOL, scaled_tol
    >>> FEAS_TOL, scaled_tol(1.0)
    (1e-09, 2e-09)
"""

from __future__ import annotations

# -- answers: membership, certificates, proofs
FEAS_TOL = 1e-9  # a point satisfies a @ x <= b when a @ x <= b + FEAS_TOL (LP solvers' accuracy)
STRICT_TOL = 1e-9  # an interior point satisfies strict inequalities by at least this much
MIN_RADIUS = 1e-9  # a region is full-dimensional when its Chebyshev radius exceeds this
PROOF_MARGIN = 1e-7  # relative safety margin of sound conclusions ('holds', tightened bounds)

# -- geometry of the region engines
SIGN_TOL = 1e-11  # a pre-activation at a vertex counts as zero below this x the vertex's scale
# A vertex value counted as zero by SIGN_TOL but beyond this share of it, on the side
# opposite to its region's decided sign, is a near tie: a region too thin for the float
# enumeration (e.g. an O(1) triangle in a box of half-width 1e11).  Rounding noise is
# about 1e-5 of SIGN_TOL's scale, so this flags only real features; such a result is
# not certified.  (At 1e-2 a kink 0.5 from a vertex, made by a second layer on a box of
# 1e13, read as 0 unseen: 3 regions of 4, certified.)
SIGN_TIE_SHARE = 1e-3
RANK_TOL = 1e-9  # a singular value counts as nonzero above this x the coordinates' scale
PROBE_STEP = 1e-7  # relative step across a facet to find the region on its other side
BFS_STEP = 1e-6  # relative step of the LP search (BFS) across a facet: larger, LPs are coarser

# -- optimisation
MIP_GAP = 1e-9  # relative and absolute MIP gap of exact optimisation (maximize / minimize)
# HiGHS's primal and integrality feasibility tolerances in the verifier's MILPs (its
# defaults, 1e-7 and 1e-6, let a ReLU output drift by 1e-6 x its big-M constant, which
# later weights amplify: a 1e-6 spike under an output weight of 1e6 was missed)
MILP_FEAS_TOL = 1e-9
# ... but never below what float64 resolves on the encoding's rows: this x its largest
# number (with entries near 1e9 an absolute 1e-9 made HiGHS call feasible pieces infeasible)
MILP_FEAS_REL = 1e-15
GAP_TOL = 1e-8  # relative duality gap (to the zero network's objective in convex training, to the cost in minnorm) at which training counts as converged
IPM_TOL = 1e-10  # stopping tolerance handed to the interior-point solver (Clarabel)
HUGE_MILP_VALUE = 1e15  # HiGHS fails on models whose bounds reach about this (1e20 is its infinity)
# primal and dual feasibility of the minimal-norm LPs: their duals certify the lower bound,
# and HiGHS's default 1e-7 left relative gaps near 2e-8 (above GAP_TOL) in one case in six
MINNORM_LP_TOL = 1e-10
HIGHS_DEFAULT_TOL = 1e-7  # HiGHS's own primal / dual feasibility tolerances (a fallback)
HIGHS_SMALL = 1e-9  # HiGHS drops matrix entries of at most this size (its small_matrix_value)
BIG_M_FLOOR = 1e-6  # 1000 x HIGHS_SMALL: smallest big-M an unstable neuron's MILP rows get (a bound within rounding of 0 keeps its neuron unstable)

# -- comparing floats computed along different routes
EQUIV_TOL = 1e-6  # 'equal' functions: outputs differ by at most this x the output scale
MATCH_RTOL = 1e-9  # two weights/rows computed separately are the same up to this (relative)
ROUNDOFF = 1e-12  # relative noise of a few float64 operations: below it numbers are equal
UNIT_ROUNDOFF = 2.0 ** -53  # float64's unit roundoff u (exact: rounding to nearest moves a number by at most u times itself); the outward bounds' rounding analysis
# Two normalised constraint rows closer than this (relative) are one half-space: copies of a
# neuron (rescaled, or composed along another route) differ by a few ulp.  Rows farther
# apart but within the LPs' accuracy are 'near twins' that hide each other's facet.
DUPLICATE_ROW_TOL = 1e-14
TINY = 1e-300  # floor for denominators and scales: avoids 0/0, changes no nonzero value
# the smallest positive float64 (subnormal, 2^-1074): the absolute rounding unit below the
# normal range, and what a nonzero value below float64's range reads as
SMALLEST_SUBNORMAL = 5e-324  # tol: 2^-1074 exactly


def scaled_tol(value, tol: float = FEAS_TOL):
    """The tolerance ``tol * (1 + |value|)`` for comparing numbers of size ``value``.

    Relative for large numbers, absolute near zero: the idiom every comparison of a
    float answer against a bound uses.  Works elementwise on arrays.

    Example:
        >>> scaled_tol(0.0), scaled_tol(-1e9)
        (1e-09, 1.000000001)
    """
    import numpy as np

    out = tol * (1.0 + np.abs(value))
    return float(out) if np.ndim(out) == 0 else out


def or_default(tol: float | None, default: float) -> float:
    """``default`` when ``tol`` is None (a public ``tol=None`` argument), else ``tol``.

    Example:
        >>> or_default(None, FEAS_TOL), or_default(0.5, FEAS_TOL)
        (1e-09, 0.5)
    """
    return default if tol is None else float(tol)


def power_of_two_exponent(values) -> int:
    """The ``e`` with ``2^e <= max |finite value| < 2^(e + 1)`` (0 when there is none):
    scaling by ``2^-e`` is exact (barring underflow) and leaves values of size about 1,
    the size the solvers' absolute tolerances assume.

    Example:
        >>> power_of_two_exponent([3e160, -1.0]), power_of_two_exponent([0.0]), power_of_two_exponent([-0.75])
        (533, 0, -1)
    """
    import math

    import numpy as np

    v = np.asarray(values, dtype=np.float64)
    top = float(np.max(np.abs(v[np.isfinite(v)]), initial=0.0))
    return 0 if top == 0.0 else math.frexp(top)[1] - 1
