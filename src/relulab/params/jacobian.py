"""The Jacobian of the path-lifting with respect to the parameters, without backpropagation.

A path's coordinate is the product of the weights on it, and no path uses a weight
twice, so its derivative with respect to a weight ``w`` on the path is the product of
the *other* weights, ``prefix * suffix`` (the partial products before and after ``w``),
and 0 for a weight off the path.  The sparsity pattern is the path-incidence structure
of the network's skeleton: a path through all ``L`` layers has ``L`` nonzeros, a bias
path starting in layer ``k`` has ``L - k + 1``.  All prefix and suffix products are
built once, layer by layer, with numpy broadcasting, and the CSR arrays are written
directly (each row's columns are already sorted), so the cost is proportional to the
number of nonzeros: no autograd, no dense matrix.

Rows follow :func:`relulab.params.path_lifting`, columns
:func:`relulab.params.parameter_vector`.

Example:
    >>> import numpy as np
    >>> from relulab import Network
    >>> from relulab.params import path_lifting_jacobian
    >>> net = Network([[[2.0]], [[3.0]]], [[1.0], [0.0]])   # paths: x0>h>y, 1>h>y, 1>y
    >>> path_lifting_jacobian(net).toarray().tolist()       # columns: W1, b1, W2, b2
    [[3.0, 0.0, 2.0, 0.0], [0.0, 3.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import RelulabError
from ..network import Network
from ._rank import RankInfo, exact_rank, numerical_rank
from .pathlift import path_group_shapes
from .vector import parameter_layout

__all__ = ["path_lifting_jacobian", "path_lifting_rank", "path_lifting_jacobian_dense"]

#: Refuse to build a Jacobian with more nonzeros than this.
MAX_NNZ = 200_000_000


def _suffixes(Ws: list[np.ndarray], m: int, dtype) -> list[np.ndarray]:
    """``suf[t]`` of shape ``(n_t, .., n_L)``: products of ``W_{t+1} .. W_L`` along every
    continuation from a node of layer ``t`` to an output (``suf[L]`` is all ones)."""
    L = len(Ws)
    suf: list[np.ndarray] = [None] * (L + 1)  # type: ignore[list-item]
    one = np.ones(m, dtype=dtype)
    if dtype is object:
        one = np.array([1] * m, dtype=object)
    suf[L] = one
    for t in range(L - 1, -1, -1):
        W = Ws[t]  # W_{t+1}: (n_{t+1}, n_t)
        nxt = suf[t + 1]
        suf[t] = W.T.reshape(W.shape[1], W.shape[0], *([1] * (nxt.ndim - 1))) * nxt[None]
    return suf


def _row_lengths(net: Network) -> list[tuple[str, int, tuple[int, ...], int]]:
    """Per path group ``(kind, layer, shape, nonzeros per row)``."""
    L = net.depth
    out = []
    for kind, k, shape in path_group_shapes(net):
        if kind == "skip":
            length = 1
        elif kind == "input":
            length = L
        else:
            length = L - k + 1 + (1 if (k == L and net.skip is not None) else 0)
        out.append((kind, k, shape, length))
    return out


def _outer_into(ufunc, out: np.ndarray, a: np.ndarray, b: np.ndarray) -> None:
    """``out[i, j] = ufunc(a[i], b[j])`` into a strided 2-D view, looping over the short side
    so that numpy's inner loops stay long (a broadcast with a trailing axis of 2 would call
    the inner loop once every 2 elements)."""
    A, B = out.shape
    if B <= A and B < 64:
        for j in range(B):
            ufunc(a, b[j], out=out[:, j], casting="unsafe")
    elif A < 64:
        for i in range(A):
            ufunc(a[i], b, out=out[i, :], casting="unsafe")
    else:
        ufunc(a[:, None], b[None, :], out=out, casting="unsafe")


def _column(block: np.ndarray, col: int, A: int, B: int) -> np.ndarray:
    """Column ``col`` of a C-ordered ``(A * B, row_len)`` block as a writable ``(A, B)`` view."""
    c = block[:, col]
    st = c.strides[0]
    return np.lib.stride_tricks.as_strided(c, shape=(A, B), strides=(B * st, st))


def _fill(net: Network, exact: bool, data: np.ndarray, indices: np.ndarray) -> None:
    """Write the CSR ``data`` and ``indices`` arrays of the Jacobian in place.

    The rows of a path group form a contiguous ``(size, row_len)`` block.  Column ``t`` of
    an input or bias group (the weight of layer ``t`` on the path) is an outer product:
    ``prefix[a] * suffix[b]`` over the partial paths ``a`` before the weight and ``b``
    after it, and its column number is an outer sum ``offset + j_{t-1}(a) + n_{t-1}
    j_t(b)``; both are written straight into the block, nothing Jacobian-sized is
    allocated twice."""
    lay = parameter_layout(net)
    dims = lay.dims
    L = net.depth
    dtype = object if exact else np.float64
    Ws = [np.asarray(W, dtype=dtype) for W in net.weights]
    bs = [np.asarray(b, dtype=dtype) for b in net.biases]
    suf = _suffixes(Ws, dims[-1], dtype)
    pos = 0
    for kind, k, shape, length in _row_lengths(net):
        size = math.prod(shape)
        V = data[pos : pos + size * length].reshape(size, length)
        C = indices[pos : pos + size * length].reshape(size, length)
        pos += size * length
        if kind == "skip":
            V[...] = 1
            C[:, 0] = (
                lay.skip_offset
                + np.arange(dims[-1])[None, :] * dims[0]
                + np.arange(dims[0])[:, None]
            ).reshape(-1)
            continue
        start = 0 if kind == "input" else k  # the first layer (of nodes) on the path
        col = 0
        if kind == "bias":
            # d/d b_k[j_k] is the suffix product from h_k[j_k]; its column is b_k's j_k
            sf = suf[k].reshape(-1)
            V[:, col] = sf
            B = size // dims[k]
            _outer_into(
                np.add,
                _column(C, col, dims[k], B),
                lay.b_offset[k - 1] + np.arange(dims[k]),
                np.zeros(B, dtype=np.int64),
            )
            col += 1
            if k == L and net.skip is not None:
                V[:, col] = sf
                C[:, col] = lay.skip_offset + dims[-1] * dims[0] + np.arange(dims[-1])
                col += 1
            prefix = bs[k - 1]
        else:
            prefix = (
                np.ones(dims[0], dtype=dtype)
                if not exact
                else np.array([1] * dims[0], dtype=object)
            )
        # prefix: products of the weights before layer t, shape (n_start, .., n_{t-1})
        for t in range(start + 1, L + 1):
            A, B = prefix.size, suf[t].size
            _outer_into(np.multiply, _column(V, col, A, B), prefix.reshape(-1), suf[t].reshape(-1))
            ca = np.tile(np.arange(dims[t - 1]), A // dims[t - 1])  # j_{t-1}(a)
            cb = np.repeat(np.arange(dims[t]) * dims[t - 1], B // dims[t])  # n_{t-1} j_t(b)
            _outer_into(np.add, _column(C, col, A, B), lay.w_offset[t - 1] + ca, cb)
            col += 1
            prefix = prefix[..., None] * Ws[t - 1].T


def _csr_arrays(net: Network, exact: bool):
    groups = _row_lengths(net)
    nnz = sum(math.prod(shape) * length for _, _, shape, length in groups)
    if nnz > MAX_NNZ:
        raise RelulabError(
            f"{net!r}: the path-lifting Jacobian has {nnz} nonzeros, more than {MAX_NNZ}"
        )
    idx_dtype = np.int32 if max(nnz, net.n_params) < 2**31 else np.int64
    data = np.empty(nnz, dtype=object if exact else np.float64)
    indices = np.empty(nnz, dtype=idx_dtype)
    _fill(net, exact, data, indices)
    lens = [np.full(math.prod(shape), length, dtype=idx_dtype) for _, _, shape, length in groups]
    indptr = np.zeros(sum(v.size for v in lens) + 1, dtype=idx_dtype)
    np.cumsum(np.concatenate(lens), out=indptr[1:])
    return data, indices, indptr


def path_lifting_jacobian(net: Network):
    """The Jacobian of the path-lifting in the parameters, as a ``scipy.sparse.csr_matrix``.

    Shape ``(n_paths, n_params)``; float64 (an exact network's entries are rounded;
    :func:`path_lifting_rank` with ``exact=True`` works on the exact entries).

    Example:
        >>> from relulab import Network
        >>> J = path_lifting_jacobian(Network([[[1.0, 1.0]], [[1.0]]], [[0.0], [0.0]]))
        >>> J.shape, J.nnz
        ((4, 5), 7)
    """
    import scipy.sparse as sp

    data, indices, indptr = _csr_arrays(net, False)  # an exact network's Fractions -> float64
    J = sp.csr_matrix(
        (data, indices, indptr), shape=(indptr.size - 1, parameter_layout(net).size), copy=False
    )
    J.has_sorted_indices = True
    return J


def path_lifting_jacobian_dense(net: Network) -> np.ndarray:
    """The same Jacobian as a dense array, exact (object dtype) for an exact network.

    Example:
        >>> from relulab import Network
        >>> net = Network([[[1.0], [-2.0]], [[3.0, 4.0]]], [[0.5, 0.0], [1.0]]).exact()
        >>> J = path_lifting_jacobian_dense(net)        # rows: paths, columns: parameters
        >>> [str(v) for v in J[0]]                      # d(W1[0,0] W2[0,0]) = (W2[0,0], W1[0,0])
        ['3', '0', '0', '0', '1', '0', '0']
        >>> bool((J == path_lifting_jacobian(net).toarray()).all())
        True
    """
    data, indices, indptr = _csr_arrays(net, net.is_exact)
    n_rows = indptr.size - 1
    out = np.zeros((n_rows, net.n_params), dtype=object if net.is_exact else float)
    if net.is_exact:
        out[:] = 0
    rows = np.repeat(np.arange(n_rows), np.diff(indptr))
    out[rows, indices] = data
    return out


# The exact path-lifting rank is refused beyond this many matrix entries (an exact
# 3-16-16-16-1 network: 16,657 x 625, 59 s; 3-8-8-8-1: 1.1 s)
PATH_RANK_EXACT_MAX_ENTRIES = 2_000_000


def path_lifting_rank(net: Network, exact: bool | None = None) -> RankInfo:
    """The rank of the path-lifting Jacobian, with the singular-value gap.

    ``exact=True`` (the default for an exact network) computes it in rational arithmetic
    and reports ``method="exact"`` (refused beyond ``PATH_RANK_EXACT_MAX_ENTRIES`` matrix
    entries, with an error that says to pass ``exact=False``); for generic parameters (all nonzero) the rank is
    ``n_params - n_hidden`` (each hidden neuron's rescaling is a kernel direction).

    Example:
        >>> import numpy as np
        >>> from relulab import Network
        >>> rng = np.random.default_rng(0)
        >>> net = Network([rng.normal(size=(3, 2)), rng.normal(size=(1, 3))],
        ...               [rng.normal(size=3), rng.normal(size=1)])
        >>> path_lifting_rank(net).rank, net.n_params - net.n_neurons
        (10, 10)
    """
    if exact is None:
        exact = net.is_exact
    if exact:
        shape = (int(sum(math.prod(s) for _, _, s in path_group_shapes(net))), net.n_params)
        if shape[0] * shape[1] > PATH_RANK_EXACT_MAX_ENTRIES:
            raise RelulabError(
                f"path_lifting_rank: the exact rank of the {shape[0]} x {shape[1]} path-lifting "
                f"Jacobian is beyond the size limit ({PATH_RANK_EXACT_MAX_ENTRIES:,} entries: "
                "elimination on big integers; 10 million entries took a minute); pass exact=False "
                "for the numerical rank with its singular-value gap")
        net_e = net.exact()
        r = exact_rank(path_lifting_jacobian_dense(net_e))
        return RankInfo(r, shape, 0.0, math.nan, None, None, math.inf, "exact")
    return numerical_rank(path_lifting_jacobian(net))
