"""Small example models, properties and data shipped with relulab.

Every command of the ``relulab`` tool accepts ``example:FILE`` wherever a file goes
(``relulab info example:tiny_2d.onnx``); ``relulab examples`` lists the files and
``relulab examples path FILE`` prints where one lies. The tour, the docs and the tests
use them too.

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

from ..io import EXAMPLE_PREFIX
from ..network import Network

__all__ = ["abs_net", "xor_net", "tiny_2d", "load_example", "example_path", "example_files",
           "resolve", "EXAMPLES", "PREFIX"]

EXAMPLES = ("tiny_2d", "xor")
PREFIX = EXAMPLE_PREFIX  # "example:" (relulab.io refuses to write to such a path)

# What each shipped file is (``relulab examples`` prints this).
DESCRIPTIONS = {
    "tiny_2d.npz": "random 2-8-8-1 network (relulab's native format)",
    "tiny_2d.onnx": "the same network as ONNX",
    "tiny_2d.nnet": "the same network as NNet",
    "xor.npz": "XOR on {0,1}^2 with exact rational weights",
    "tiny_2d_holds.vnnlib": "property of tiny_2d on [-1,1]^2 that holds",
    "tiny_2d_violated.vnnlib": "property of tiny_2d on [-1,1]^2 that is violated",
    "data_1d.csv": "12 points (x, y) for fit-minnorm / fit-convex",
}


def example_files() -> dict[str, Path]:
    """Every shipped example file by name.

    Example:
        >>> sorted(example_files())[:2]
        ['data_1d.csv', 'tiny_2d.nnet']
    """
    return {n: Path(__file__).with_name(n) for n in DESCRIPTIONS
            if Path(__file__).with_name(n).is_file()}


def example_path(name: str) -> Path:
    """Path of a shipped example file; a bare name means the ``.npz`` network.

    Example:
        >>> example_path("tiny_2d").name, example_path("tiny_2d.onnx").name
        ('tiny_2d.npz', 'tiny_2d.onnx')
    """
    files = example_files()
    key = name if name in files else f"{name}.npz"
    if key not in files:
        raise FileNotFoundError(f"no shipped example named {name!r}; have {', '.join(sorted(files))}")
    return files[key]


def resolve(path: str | Path) -> Path:
    """``example:NAME`` -> the shipped file's path; any other path is returned unchanged.

    Example:
        >>> resolve("example:xor").name, str(resolve("model.onnx"))
        ('xor.npz', 'model.onnx')
    """
    text = str(path)
    if text.startswith(PREFIX):
        try:
            return example_path(text[len(PREFIX):])
        except FileNotFoundError as e:
            from ..errors import RelulabError

            raise RelulabError(f"{text}: {e}") from None
    return Path(path)


def load_example(name: str) -> Network:
    """Load a shipped example network by name (a bare name: its ``.npz``; else the file's
    own format).

    Example:
        >>> [load_example(name).widths for name in EXAMPLES], load_example("tiny_2d.onnx").widths
        ([(8, 8), (2,)], (8, 8))
    """
    from ..io import load_model

    return load_model(example_path(name))


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


def write_example_files(folder: str | Path) -> list[Path]:
    """(Re)build every shipped example file in ``folder``; returns the paths written.

    The properties are placed 0.05 above and below tiny_2d's exact maximum over
    [-1, 1]^2, so one holds and one is violated; the data are 12 points of a smooth
    curve.  The files in the package were made by this function (a test rebuilds them
    and compares).
    """
    from ..domain import Box
    from ..io import save_model
    from ..io.vnnlib import format_vnnlib
    from ..spec import OutputConstraint, Property, Specification
    from ..verify import maximize

    folder = Path(folder)
    net = tiny_2d()
    box = Box([-1.0, -1.0], [1.0, 1.0])
    top = maximize(net, box).value
    paths = []
    for suffix in (".npz", ".onnx", ".nnet"):
        save_model(net, folder / f"tiny_2d{suffix}")
        paths.append(folder / f"tiny_2d{suffix}")
    save_model(xor_net(), folder / "xor.npz")
    paths.append(folder / "xor.npz")
    for name, threshold in (("holds", round(top + 0.05, 3)), ("violated", round(top - 0.05, 3))):
        # unsafe: y >= threshold, i.e. -y <= -threshold
        unsafe = Specification(box, [OutputConstraint(np.array([[-1.0]]), np.array([-threshold]))])
        path = folder / f"tiny_2d_{name}.vnnlib"
        path.write_text(f"; tiny_2d on [-1,1]^2: is f(x) >= {threshold} possible? ({name})\n"
                        + format_vnnlib(Property([unsafe])))
        paths.append(path)
    x = np.linspace(-1.0, 1.0, 12)
    y = np.round(np.sin(2.5 * x) + 0.3 * x * x, 6)
    (folder / "data_1d.csv").write_text("x,y\n" + "".join(f"{a:.6g},{b:.6g}\n" for a, b in zip(x, y, strict=True)))
    paths.append(folder / "data_1d.csv")
    return paths
