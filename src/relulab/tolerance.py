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

Example:
    >>> from relulab.tolerance import FEAS_TOL
    >>> FEAS_TOL
    1e-09
"""

FEAS_TOL = 1e-9
STRICT_TOL = 1e-9
MIN_RADIUS = 1e-9
PROOF_MARGIN = 1e-7
RANK_TOL = 1e-9


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
