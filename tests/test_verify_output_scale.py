"""The proof margin of the structured (torch) bounder scales with the output layer's terms.

A 1x1 convolution h = relu([x - 1/4, 1/4 - x]) over 1000 positions, then
y = lin1(h) + relu(lin2(h)): lin1 has integer weights up to 2^30 whose terms cancel
(its bias takes the linear part away exactly), lin2 a spike of height 1e-5 at x = 1/4
on the last 8 positions.  The point x* = (hi_A, 1/4, ...) violates y < y(x*) - 5e-6,
checked in exact rational arithmetic.  The margin used to be scaled by the activation
bounds alone (all small), so bound rounding of the 2^30-weighted sums passed for a
proof: `holds` in 0.5 s.  The answer must be `violated` or `unknown`.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")

from relulab import Box  # noqa: E402
from relulab.spec import OutputConstraint, Property, Specification  # noqa: E402
from relulab.verify import load_for_verify, verify  # noqa: E402

N, NB, C0, HS = 1000, 8, 0.25, 1e-5


class Spiky(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv1d(1, 2, 1)
        self.lin1 = torch.nn.Linear(2 * N, 1)
        self.lin2 = torch.nn.Linear(2 * N, 1)

    def forward(self, x):
        h = torch.relu(self.conv(x)).flatten(1)
        return self.lin1(h) + torch.relu(self.lin2(h))


def test_large_output_weights_do_not_turn_rounding_into_a_proof(tmp_path):
    rng = np.random.default_rng(0)
    na = N - NB
    w = rng.integers(1, 2**30, na).astype(np.float64)
    hi_a = rng.integers(512, 1025, na) / 1024.0
    lo = np.concatenate([np.full(na, 0.5), np.zeros(NB)])
    hi = np.concatenate([hi_a, np.ones(NB)])
    S = float(np.sum(w * (hi_a - C0)))
    W1 = np.zeros((1, 2 * N))
    W1[0, :na] = w
    W2 = np.zeros((1, 2 * N))
    W2[0, na:N] = W2[0, N + na:] = -10.0 * HS
    m = Spiky().double().eval()
    with torch.no_grad():
        m.conv.weight.copy_(torch.tensor([[[1.0]], [[-1.0]]]))
        m.conv.bias.copy_(torch.tensor([-C0, C0]))
        m.lin1.weight.copy_(torch.tensor(W1))
        m.lin1.bias.fill_(-S)
        m.lin2.weight.copy_(torch.tensor(W2))
        m.lin2.bias.fill_(HS)
    path = tmp_path / "spiky.onnx"
    torch.onnx.export(m, torch.zeros(1, 1, N, dtype=torch.float64), str(path), input_names=["x"],
                      output_names=["y"], opset_version=13, dynamo=False)
    # y at x* exactly, from the same float64 numbers
    xs = hi.copy()
    xs[na:] = C0
    F = Fraction
    h = [max(F(s) * F(v) + F(-s * C0), F(0)) for s in (1.0, -1.0) for v in xs]
    l1 = sum(F(a) * b for a, b in zip(W1[0], h, strict=True) if a) + F(-S)
    l2 = sum(F(a) * b for a, b in zip(W2[0], h, strict=True) if a) + F(HS)
    y_star = l1 + max(l2, F(0))
    with torch.no_grad():
        t = float(m(torch.tensor(xs).reshape(1, 1, N)).item()) - HS / 2
    assert y_star - F(t) > 0            # x* is in the box and violates y < t
    net = load_for_verify(str(path))
    assert not hasattr(net, "weights")      # the structured bounder, not a dense network
    unsafe = OutputConstraint(np.array([[-1.0]]), np.array([-t]))       # y >= t
    prop = Property([Specification(Box(lo, hi), [unsafe])])
    r = verify(net, prop, timeout=3)
    assert r.status in ("violated", "unknown"), r
    if r.status == "violated":
        assert net.forward(r.counterexample[None])[0, 0] >= t
