"""The rounding of the torch engine's pre-activation and output bounds, so that a ReLU's
sign is decided only where it is proved, and every bound is sound.

Bounds are computed rounded to nearest: ``1 + 2^-53 - 1`` reads 0, and a neuron whose
maximum is 2^-53 would read dead (under a weight of 2^60 it is worth 128, and a violated
property read 'holds').  A sign counts as proved when one of two outward bounds has it:

* the interval bounds with their own rounding, carried node by node: each sum of
  ``n + 1`` terms is off by at most ``gamma_{n+1}`` times its terms' sizes (doubled),
  and the inputs' rounding passes through the weights.  A bound whose terms are all exact
  (a ReLU's lower bound 0 under positive weights: residual sums, lowered max-pools) has
  rounding 0, so such a structural 0 stays a decided sign;
* the bound as computed (CROWN's back-substitution), widened by ``ops`` unit roundoffs of
  the terms' sizes ``|W| T + |b|`` carried node by node, doubled.

Every bound is moved to the tighter of the two (so a neuron whose sign neither proves
stays unstable, and an unstable neuron's relaxation is built from sound bounds), and the
output's bounds by :meth:`SignRounding.output_radius`.  The numpy engine does the same
(:func:`relulab.bounds.crown_batch`).

float32 bounds carry their own unit roundoff (2^-24, or TensorFloat-32's 2^-11 on a GPU
that multiplies in it): sound, but on deep networks far looser than float64's (a CIFAR
ResNet's root bound fell from +2.3 to -4e6), which is why proofs run in float64.

Not covered: underflow.  Below the smallest normal number (2^-126 in float32, 2^-1022 in
float64) rounding is absolute, not relative, so products of that size behind weights
that scale them back up (2^-120 then 2^120, in float32) can escape these radii: a float32
upper bound read 1.6e-13 for 5.6e-9.  Branch and bound runs in float64, where that needs
factors near 2^1000.

Both outward bounds come from the operators' own interval functions: every operator of a
:class:`~relulab.crown.graph.BoundGraph` is affine, so ``op.ibp`` on the box ``[-P, Q]``
(``P, Q >= 0``) gives ``b - (W+ P + |W-| Q)`` and ``b + W+ Q + |W-| P``, the sizes of the
terms of a lower and of an upper bound whose inputs have sizes ``P`` (lower ends) and
``Q`` (upper ends).
"""

from __future__ import annotations

from typing import Any

from ..tolerance import UNIT_ROUNDOFF

UNIT32 = 2.0 ** -24  # float32's
UNIT_TF32 = 2.0 ** -11  # TensorFloat-32's (10 stored mantissa bits): CUDA float32 products


def unit_roundoff(t: Any) -> float:
    """The unit roundoff of arithmetic on tensor ``t``'s type and device: float32 on a GPU
    may multiply in TensorFloat-32 (torch's cuDNN convolutions do by default), whose
    rounding is 8,192 times float32's.

    Example:
        >>> import torch
        >>> unit_roundoff(torch.zeros(1, dtype=torch.float64)) == 2.0 ** -53
        True
    """
    import torch

    if t.dtype == torch.float64:
        return UNIT_ROUNDOFF
    if t.is_cuda and (torch.backends.cuda.matmul.allow_tf32 or torch.backends.cudnn.allow_tf32):
        return UNIT_TF32
    return UNIT32


def fan_in(op: Any) -> int:
    """The number of terms one output entry of ``op`` adds up (its bias included).

    Example:
        >>> import torch
        >>> from relulab.crown.ops import Linear
        >>> fan_in(Linear(torch.ones(3, 4, dtype=torch.float64), None))
        5
    """
    params = op.params()
    W = params.get("W", params.get("weight"))
    if W is not None:
        return int(W[0].numel()) + 1
    return 2   # elementwise affine ops and sums of two nodes; reshapes add nothing


class SignRounding:
    """Per node of one bound pass: the interval bounds' rounding ``(eL, eH)`` (the bounds
    minus ``eL`` and plus ``eH`` are sound), the terms' sizes ``T`` and the operations
    ``ops`` behind them.

    Example:
        >>> import torch
        >>> from relulab.crown.ops import Linear
        >>> one = torch.ones(1, 2, dtype=torch.float64)
        >>> sr = SignRounding("x", (one * 0, one))
        >>> op = Linear(torch.tensor([[1.0, 1.0]], dtype=torch.float64), torch.tensor([-1.0], dtype=torch.float64))
        >>> sr.after_op("z", op, [(one * 0, one)], ["x"])
        >>> t = lambda v: torch.tensor([[v]], dtype=torch.float64)
        >>> lo, hi = sr.decide("z", t(-1.0), t(0.0))   # "x0 + x1 - 1 <= 0" is no proof
        >>> bool(0.0 < hi[0, 0] < 1e-12)                     # the neuron stays unstable
        True
    """

    def __init__(self, input_name: str, box: tuple[Any, Any], graph: Any = None) -> None:
        import torch

        xlo, xhi = box
        self.unit = unit_roundoff(xlo)   # float32 bounds carry their (larger) rounding too
        self.err = {input_name: (torch.zeros_like(xlo), torch.zeros_like(xhi))}
        self.mag = {input_name: torch.maximum(xlo.abs(), xhi.abs())}
        self.ops = {input_name: 0}
        # Back-substitution adds more than the forward pass does: a node's coefficients
        # are the sum over its consumers (1,024 consumers summed one by one), and the
        # constant is a running sum over every node it passes (``graph``'s structure; a
        # node fed into 1,024 branches got bounds of [-12800, 12800] for 65408)
        self.fanout: dict[str, int] = {}
        self.graph = graph
        if graph is not None:
            for node in graph.nodes:
                for i in node.inputs:
                    self.fanout[i] = self.fanout.get(i, 0) + 1

    def _through(self, i: str) -> int:
        """The operations of back-substitution down to node ``i``'s coefficients: its
        own, and the sum over its consumers."""
        return self.ops[i] + max(self.fanout.get(i, 1) - 1, 0)

    def _passes(self, name: str) -> int:
        """The operations of a back-substitution from ``name``: down the longest path,
        and the constant's running sum over every node it passes."""
        return self.ops[name] + (len(self.graph.ancestors(name)) if self.graph is not None else 0)

    def after_op(self, name: str, op: Any, ins: list[tuple[Any, Any]], in_names: list[str]) -> None:
        """Carry the rounding through an affine node ``name`` whose interval bounds are
        ``op.ibp(*ins)``."""
        import torch

        g = 2.0 * (fan_in(op) + 1) * self.unit
        zero = op.ibp(*[(torch.zeros_like(lo), torch.zeros_like(lo)) for lo, _ in ins])[0]   # the bias
        boxes = [(-(g * lo.abs() + self.err[i][0]), g * hi.abs() + self.err[i][1])
                 for (lo, hi), i in zip(ins, in_names, strict=True)]
        t_lo, t_hi = op.ibp(*boxes)
        gb = g * zero.abs()
        self.err[name] = ((zero - t_lo) + gb, (t_hi - zero) + gb)
        lo_s, hi_s = op.ibp(*[(-self.mag[i], self.mag[i]) for i in in_names])
        self.mag[name] = torch.maximum(lo_s.abs(), hi_s.abs())
        self.ops[name] = max(self._through(i) for i in in_names) + fan_in(op)

    def radius(self, p: str) -> Any:
        """The rounding of any bound of node ``p`` computed by back-substitution: ``ops``
        unit roundoffs of the terms' sizes, doubled."""
        return (2.0 * self._passes(p) * self.unit) * self.mag[p]

    def decide(self, p: str, plo: Any, phi: Any, iv: tuple[Any, Any] | None = None,
               known: tuple[Any, Any] | None = None) -> tuple[Any, Any]:
        """The bounds ``plo``/``phi`` of node ``p`` (a ReLU's input) moved outward by their
        rounding.  ``iv``: the interval bounds of ``p`` the rounding was carried for
        (default: ``plo``/``phi`` themselves); ``known``: bounds already sound (a parent's,
        moved outward when it was bounded), which the result is intersected with, so that
        they are not widened again in every generation.  Returns sound bounds."""
        import torch

        ilo, ihi = (plo, phi) if iv is None else iv
        eL, eH = self.err[p]
        r = self.radius(p)
        sound_lo = torch.maximum(ilo - eL, plo - r)
        sound_hi = torch.minimum(ihi + eH, phi + r)
        # every bound moved outward (one more ulp for the subtraction's own rounding), not
        # only those deciding a sign: an unstable neuron's upper bound 1.9e-6 for 2.8e-6
        # lost the rest through its relaxation
        plo = torch.where(sound_lo < plo, torch.nextafter(sound_lo, torch.full_like(sound_lo, -torch.inf)), plo)
        phi = torch.where(sound_hi > phi, torch.nextafter(sound_hi, torch.full_like(sound_hi, torch.inf)), phi)
        if known is not None:
            plo, phi = torch.maximum(plo, known[0]), torch.minimum(phi, known[1])
        return plo, torch.maximum(phi, plo)

    def output_radius(self, name: str, rows: Any) -> Any:
        """The rounding of lower bounds of ``rows . y`` at node ``name`` (the output)
        computed by back-substitution: ``ops`` unit roundoffs of ``|rows|`` times the
        terms' sizes, doubled; (B, R) for ``rows`` of shape (B, R, *shape).  The last
        substitution cancels too: 2^40 + 2^40 c - 2^40 rounds to 0."""
        mag = self.mag[name].reshape(rows.shape[0], 1, -1)
        flat = rows.reshape(rows.shape[0], rows.shape[1], -1)
        # the first product (rows @ W) sums one term per entry of a row: those additions are
        # in no node's fan-in (C = ones over 1,000 outputs lost 7,640 half-ulps, "complete")
        ops = self._passes(name) + flat.shape[-1]
        return (2.0 * ops * self.unit) * (flat.abs() * mag).sum(-1)

    def beta_radius(self, g: Any, out: str, bt: dict[str, Any]) -> Any:
        """The rounding of the beta terms ``beta_j s_j z_j`` a split adds to a bound of the
        output ``out`` (B, R): each is back-substituted from its pre-activation ``z_j``,
        whose terms have sizes ``mag[z_j]``, through at most ``ops[out]`` operations, so
        ``2 ops u sum_j |beta_j| mag[z_j]``.  The output's own terms are in
        :meth:`output_radius`; a split neuron that feeds the output with weight 0 is not."""
        total = 0.0
        for name, b in bt.items():
            mag = self.mag[g.by_name[name].inputs[0]]
            total = total + (b.abs() * mag.unsqueeze(1)).flatten(2).sum(-1)
        return (2.0 * self._passes(out) * self.unit) * total

    def after_relu(self, name: str, p: str) -> None:
        """ReLU ``name`` of ``p``: its input bounds were moved outward (:meth:`decide`), so
        its interval bounds carry no rounding."""
        import torch

        z = torch.zeros_like(self.mag[p])
        self.err[name] = (z, z)
        self.mag[name], self.ops[name] = self.mag[p], self._through(p)
