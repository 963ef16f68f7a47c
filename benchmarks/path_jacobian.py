"""Path-lifting Jacobian: relulab's sparse construction vs torch autograd, same inputs, same run.

relulab builds the Jacobian of the path-lifting from the path-incidence structure (prefix
and suffix products, no backpropagation) as a CSR matrix.  The anchor is the same
Jacobian from autograd: ``torch.func.jacrev`` of the path-lifting written in torch (the
issue's baseline), and, because the Jacobian is tall (#paths >> #params), also
``torch.func.jacfwd``, the stronger autograd choice for it.  Every row checks that the
two Jacobians agree.  Autograd builds a dense (#paths x #params) matrix and jacrev's
vectorised backward holds #paths x #paths intermediates, so sizes whose estimated
footprint exceeds ``--mem-gb`` are skipped for torch (marked ``-``).

Run:  python benchmarks/path_jacobian.py [--mem-gb 3] [--threads 1] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

from relulab import Network
from relulab.params import parameter_vector, path_lifting_jacobian
from relulab.params.pathlift import n_paths


def torch_path_lifting(theta, dims, torch):
    """The path-lifting in torch, in relulab's order (no skip)."""
    L = len(dims) - 1
    off = 0
    Ws, bs = [], []
    for k in range(L):
        n, p = dims[k + 1], dims[k]
        Ws.append(theta[off : off + n * p].reshape(n, p))
        off += n * p
        bs.append(theta[off : off + n])
        off += n
    blocks = []
    A = Ws[0].T
    for W in Ws[1:]:
        A = A.unsqueeze(-1) * W.T
    blocks.append(A.reshape(-1))
    for k in range(1, L + 1):
        B = bs[k - 1]
        for W in Ws[k:]:
            B = B.unsqueeze(-1) * W.T
        blocks.append(B.reshape(-1))
    return torch.cat(blocks)


def random_net(dims, seed=0) -> Network:
    rng = np.random.default_rng(seed)
    Ws = [rng.normal(size=(dims[k + 1], dims[k])) / np.sqrt(dims[k]) for k in range(len(dims) - 1)]
    bs = [rng.normal(size=dims[k + 1]) * 0.1 for k in range(len(dims) - 1)]
    return Network(Ws, bs)


def best_time(fn, repeats: int) -> tuple[float, object]:
    out = None
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def run_case(dims, mem_gb: float, torch, repeats: int) -> dict:
    net = random_net(dims)
    P, N = net.n_params, n_paths(net)
    t_ours, J = best_time(lambda: path_lifting_jacobian(net), repeats)
    row = {
        "dims": list(dims),
        "n_params": P,
        "n_paths": N,
        "nnz": int(J.nnz),
        "ours_s": t_ours,
        "jacrev_s": None,
        "jacfwd_s": None,
        "max_abs_diff": None,
    }
    theta = torch.tensor(parameter_vector(net), dtype=torch.float64)

    def phi(t):
        return torch_path_lifting(t, dims, torch)

    dense_gb = 8 * N * P / 1e9
    # jacrev vmaps the backward over N cotangents: intermediates of N x (block size) <= N x N
    rev_gb = 8 * N * (N + P) * 2 / 1e9
    # jacfwd vmaps the forward over P tangents: intermediates of P x N
    fwd_gb = 8 * N * P * 3 / 1e9
    Jt = None
    if rev_gb <= mem_gb:
        f = torch.func.jacrev(phi)
        f(theta)  # warm-up (tracing, allocation)
        row["jacrev_s"], Jt = best_time(lambda: f(theta), max(1, repeats // 2))
    if fwd_gb <= mem_gb:
        g = torch.func.jacfwd(phi)
        g(theta)
        row["jacfwd_s"], Jf = best_time(lambda: g(theta), max(1, repeats // 2))
        Jt = Jf if Jt is None else Jt
    if Jt is not None and dense_gb <= mem_gb:
        row["max_abs_diff"] = float(np.abs(J.toarray() - Jt.numpy()).max())
    return row


def fmt_s(v) -> str:
    return "-" if v is None else f"{v * 1e3:.2f}"


def fmt_ratio(a, b) -> str:
    return "-" if a is None or b is None else f"{a / b:.0f}x"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mem-gb", type=float, default=3.0, help="memory budget for autograd")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (numpy runs on one)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", default=None, help="write the rows to this JSON file")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    cases = [("width", [4, w, w, 2]) for w in (4, 8, 16, 24, 32, 48, 64, 128)]
    cases += [("depth", [4, *([8] * h), 2]) for h in (1, 2, 3, 4, 5, 6)]
    path_lifting_jacobian(random_net([2, 2, 1]))  # warm-up: first import of scipy.sparse
    rows = []
    header = (
        f"{'sweep':6} {'dims':>22} {'params':>7} {'paths':>10} {'ours ms':>9} "
        f"{'jacrev ms':>10} {'jacfwd ms':>10} {'rev/ours':>9} {'fwd/ours':>9} {'max|diff|':>10}"
    )
    print(
        f"torch {torch.__version__}, {args.threads} thread(s); memory budget {args.mem_gb} GB "
        "for autograd; times are the best of repeats"
    )
    print(header)
    print("-" * len(header))
    for sweep, dims in cases:
        r = run_case(dims, args.mem_gb, torch, args.repeats)
        r["sweep"] = sweep
        rows.append(r)
        diff = "-" if r["max_abs_diff"] is None else f"{r['max_abs_diff']:.1e}"
        print(
            f"{sweep:6} {'-'.join(map(str, dims)):>22} {r['n_params']:>7} {r['n_paths']:>10} "
            f"{fmt_s(r['ours_s']):>9} {fmt_s(r['jacrev_s']):>10} {fmt_s(r['jacfwd_s']):>10} "
            f"{fmt_ratio(r['jacrev_s'], r['ours_s']):>9} "
            f"{fmt_ratio(r['jacfwd_s'], r['ours_s']):>9} "
            f"{diff:>10}",
            flush=True,
        )
    with_rev = [r for r in rows if r["jacrev_s"] is not None]
    if with_rev:
        big = max(with_rev, key=lambda r: r["n_paths"])
        print(
            f"\nlargest size jacrev held in {args.mem_gb} GB: {'-'.join(map(str, big['dims']))} "
            f"({big['n_paths']} paths): ours {big['ours_s'] * 1e3:.2f} ms, jacrev "
            f"{big['jacrev_s'] * 1e3:.1f} ms, speed-up {big['jacrev_s'] / big['ours_s']:.0f}x"
        )
        print(
            f"median speed-up over jacrev: "
            f"{statistics.median(r['jacrev_s'] / r['ours_s'] for r in with_rev):.0f}x"
        )
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
