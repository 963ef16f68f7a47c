"""aud_reg9: the breadth-first engine never drops a pattern read off a point and still
calls its set certified.

Independent check: the forward pass's pattern at points of the domain, which a certified
set must hold (every point lies in a listed region)."""

import numpy as np

from relulab import Box, Network, regions

# a 1-input network whose last hidden neuron is only rounding noise on x > 0: its row,
# composed in float64, comes out with the other sign there
WS = [[[-0.4103714678112563], [1440763.409450603], [0.07365561912689587]],
      [[-678395.3237202191, 0.09661339360968256, -1889836.0237236882],
       [2337.443414869557, -0.0003328860515174898, -13023.040148955984]],
      [[-1.0779452736826283e-10, -1.5642582580622946e-08]], [[-2074.64324503935]]]
BS = [[0.0, 2881526.818901206, 0.03682780956344794], [-69598.52118783967, 0.0],
      [1.5004679393946407e-05], [0.0]]


def test_bfs_does_not_call_a_set_missing_half_the_domain_certified():
    """Before: 3 regions covering [-1, 0] only, certified, and locate(0.5) = -1."""
    net = Network([np.array(W) for W in WS], [np.array(b) for b in BS])
    rs = regions.enumerate(net, Box([-1.0], [1.0]), method="bfs")
    X = np.linspace(-1.0, 1.0, 401)[:, None]
    covered = rs.locate(X) >= 0
    assert rs.certified is False or covered.all()
    assert not covered.all()   # (the pattern at x > 0 is rounding's: no region holds it)


def test_bfs_stays_certified_on_an_ordinary_network():
    rng = np.random.default_rng(3)
    net = Network([rng.normal(size=(6, 2)), rng.normal(size=(5, 6)), rng.normal(size=(1, 5))],
                  [rng.normal(size=6), rng.normal(size=5), rng.normal(size=1)])
    rs = regions.enumerate(net, Box([-1.0, -1.0], [1.0, 1.0]), method="bfs")
    X = np.random.default_rng(0).uniform(-1, 1, (2000, 2))
    assert rs.certified and np.all(rs.locate(X) >= 0)
