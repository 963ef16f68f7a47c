"""Small example networks shipped with relulab (used by the tour, docs and tests).

Example:
    >>> from relulab.examples import abs_net, load_example
    >>> float(abs_net()([-3.0])[0])
    3.0
    >>> load_example("tiny_2d").widths
    (8, 8)
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

from ..network import Network

__all__ = ["abs_net", "xor_net", "tiny_2d", "load_example", "example_path", "EXAMPLES"]

EXAMPLES = ("tiny_2d", "xor")


def example_path(name: str) -> Path:
    """Path of a shipped example file (``.npz``, relulab's native format).

    Example:
        >>> example_path("xor").name
        'xor.npz'
    """
    p = Path(__file__).with_name(f"{name}.npz")
    if not p.is_file():
        raise FileNotFoundError(f"no shipped example named {name!r}; have {', '.join(EXAMPLES)}")
    return p


def load_example(name: str) -> Network:
    """Load a shipped example network by name.

    Example:
        >>> [load_example(name).widths for name in EXAMPLES]
        [(8, 8), (2,)]
    """
    from ..io.native import load

    return load(example_path(name))


def abs_net() -> Network:
    """|x| = relu(x) + relu(-x): one input, two hidden neurons, exact weights.

    Example:
        >>> [str(v) for v in abs_net()([[-2], [Fraction(1, 3)]]).ravel()]
        ['2', '1/3']
    """
    one = Fraction(1)
    return Network([[[one], [-one]], [[one, one]]], [[0, 0], [0]], exact=True)


def xor_net() -> Network:
    """XOR on {0,1}^2 exactly: relu(x1 + x2) - 2 relu(x1 + x2 - 1).

    Example:
        >>> xor_net()([[0, 0], [0, 1], [1, 0], [1, 1]]).ravel().tolist()
        [Fraction(0, 1), Fraction(1, 1), Fraction(1, 1), Fraction(0, 1)]
    """
    return Network([[[1, 1], [1, 1]], [[1, -2]]], [[0, -1], [0]], exact=True)


def tiny_2d(seed: int = 7) -> Network:
    """A random 2-8-8-1 float network (He-style Gaussian weights), the tour's main example.

    Example:
        >>> net = tiny_2d()
        >>> (net.input_dim, net.widths, net.output_dim), tiny_2d() == net
        ((2, (8, 8), 1), True)
    """
    rng = np.random.default_rng(seed)
    dims = [2, 8, 8, 1]
    Ws = [rng.normal(size=(dims[i + 1], dims[i])) * np.sqrt(2 / dims[i]) for i in range(3)]
    bs = [rng.normal(size=dims[i + 1]) * 0.2 for i in range(3)]
    return Network(Ws, bs)
