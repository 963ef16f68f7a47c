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


def _blocks(net: Network, exact: bool):
    """Yield per path group ``(vals, cols)`` arrays of shape ``(n_group_paths, row_len)``."""
    lay = parameter_layout(net)
    dims = lay.dims
    L = net.depth
    dtype = object if exact else np.float64
    Ws = [np.asarray(W, dtype=dtype) for W in net.weights]
    bs = [np.asarray(b, dtype=dtype) for b in net.biases]
    suf = _suffixes(Ws, dims[-1], dtype)
    for kind, k, shape in path_group_shapes(net):
        size = math.prod(shape)
        if kind == "skip":
            o = lay.skip_offset
            cols = (o + np.arange(dims[-1])[None, :] * dims[0] + np.arange(dims[0])[:, None]).reshape(size, 1)
            ones = np.ones((size, 1), dtype=dtype) if not exact else np.full((size, 1), 1, dtype=object)
            yield ones, cols
            continue
        start = 0 if kind == "input" else k  # the first layer (of nodes) on the path
        # axis a of the group's block is layer start + a
        vals_list, cols_list = [], []
        if kind == "bias":
            # d/d b_k[j_k] = suffix from h_k[j_k]
            v = np.broadcast_to(suf[k], shape)
            c = lay.b_offset[k - 1] + np.arange(dims[k]).reshape((-1,) + (1,) * (len(shape) - 1))
            vals_list.append(v)
            cols_list.append(np.broadcast_to(c, shape))
            if k == L and net.skip is not None:
                vals_list.append(v)
                cols_list.append(np.broadcast_to(lay.skip_offset + dims[-1] * dims[0] + np.arange(dims[-1]), shape))
            prefix = bs[k - 1]
        else:
            prefix = np.ones(dims[0], dtype=dtype) if not exact else np.array([1] * dims[0], dtype=object)
        # prefix: products up to layer t-1, shape (n_start, .., n_{t-1})
        for t in range(start + 1, L + 1):
            W = Ws[t - 1]
            a_prev = t - 1 - start  # axis of layer t-1 in the block
            nd = len(shape)
            pre = prefix.reshape(prefix.shape + (1,) * (nd - prefix.ndim))
            post = suf[t].reshape((1,) * (a_prev + 1) + suf[t].shape)
            vals_list.append(np.broadcast_to(pre * post, shape))
            jt = np.arange(dims[t]).reshape((1,) * (a_prev + 1) + (-1,) + (1,) * (nd - a_prev - 2))
            jp = np.arange(dims[t - 1]).reshape((1,) * a_prev + (-1,) + (1,) * (nd - a_prev - 1))
            cols_list.append(np.broadcast_to(lay.w_offset[t - 1] + jt * dims[t - 1] + jp, shape))
            prefix = prefix[..., None] * W.T
        vals = np.stack([v.reshape(size) for v in vals_list], axis=1)
        cols = np.stack([c.reshape(size) for c in cols_list], axis=1)
        yield vals, cols


def _check_size(net: Network) -> None:
    nnz = 0
    L = net.depth
    for kind, k, shape in path_group_shapes(net):
        length = 1 if kind == "skip" else (L if kind == "input" else L - k + 1)
        nnz += math.prod(shape) * length
    if nnz > MAX_NNZ:
        raise RelulabError(
            f"{net!r}: the path-lifting Jacobian has {nnz} nonzeros, more than {MAX_NNZ}"
        )


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

    _check_size(net)
    lay = parameter_layout(net)
    vals, cols, lens = [], [], []
    exact = net.is_exact
    for v, c in _blocks(net, exact):
        vals.append(v.reshape(-1).astype(float) if exact else v.reshape(-1))
        cols.append(c.reshape(-1))
        lens.append(np.full(v.shape[0], v.shape[1], dtype=np.int64))
    data = np.concatenate(vals)
    indices = np.concatenate(cols).astype(np.int64)
    indptr = np.concatenate([[0], np.cumsum(np.concatenate(lens))])
    if indptr[-1] < 2**31:
        indices = indices.astype(np.int32)
        indptr = indptr.astype(np.int32)
    J = sp.csr_matrix((data, indices, indptr), shape=(len(indptr) - 1, lay.size))
    J.has_sorted_indices = True
    return J


def path_lifting_jacobian_dense(net: Network) -> np.ndarray:
    """The same Jacobian as a dense array, exact (object dtype) for an exact network."""
    lay = parameter_layout(net)
    rows = []
    for v, c in _blocks(net, net.is_exact):
        block = np.zeros((v.shape[0], lay.size), dtype=object if net.is_exact else float)
        if net.is_exact:
            block[:] = 0
        np.put_along_axis(block, c, v, axis=1)
        rows.append(block)
    return np.concatenate(rows, axis=0)


def path_lifting_rank(net: Network, exact: bool | None = None) -> RankInfo:
    """The rank of the path-lifting Jacobian, with the singular-value gap.

    ``exact=True`` (the default for an exact network) computes it in rational arithmetic
    and reports ``method="exact"``; for generic parameters (all nonzero) the rank is
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
        net_e = net.exact()
        r = exact_rank(path_lifting_jacobian_dense(net_e))
        shape = (int(sum(math.prod(s) for _, _, s in path_group_shapes(net))), net.n_params)
        return RankInfo(r, shape, 0.0, math.nan, None, None, math.inf, "exact")
    return numerical_rank(path_lifting_jacobian(net))
