"""Kernel ridge on singular kernels, the damped Levenberg-Marquardt step, recorders under
train's time limit, and argument checks of relulab.dynamics."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from relulab import Box  # noqa: E402
from relulab.dynamics import KernelRidge, RegionCount, kernel_ridge, mlp, ntk, saddle_events, train  # noqa: E402
from relulab.dynamics._model import DynamicsError  # noqa: E402
from relulab.dynamics.kernels import KernelError  # noqa: E402
from relulab.dynamics.multistart import _damped_step  # noqa: E402


def test_ridge_zero_on_a_singular_kernel_is_the_least_squares_fit() -> None:
    # a repeated point with two targets: the kernel is singular, Cholesky did not fail
    # (a tiny positive pivot) and 55 of 200 seeds gave a fit wrong at every point
    for seed in range(40):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(6, 3))
        X[5] = X[0]
        y = rng.normal(size=6)
        y[5] = y[0] + 1.0
        K = ntk(X, depth=2)
        want = K @ np.linalg.lstsq(K, y, rcond=None)[0]
        assert np.allclose(kernel_ridge(K, y, K), want, atol=1e-8), seed
        got = KernelRidge("ntk", depth=2).fit(X, y).predict(X)
        assert np.allclose(got, want, atol=1e-8), seed


@pytest.mark.parametrize(("n", "P"), [(3, 40), (12, 9), (5, 5)])
def test_the_damped_step_solves_the_damped_normal_equations(n, P) -> None:
    rng = np.random.default_rng(n * P)
    J = rng.normal(size=(4, n, P))
    J[:, :, 0] = 0.0   # a dead unit: a zero column, damped by the floor alone
    g = rng.normal(size=(4, P))
    g[:, 0] = 0.0
    d = rng.uniform(1e-3, 2.0, size=(4, P))
    d[:, 0] = 1e-12
    M = J.transpose(0, 2, 1) @ J + d[:, :, None] * np.eye(P)
    step = _damped_step(J, g, d)
    assert np.allclose(np.einsum("rpq,rq->rp", M, step), g, atol=1e-8)


def test_a_region_count_recorder_stops_at_trains_time_limit() -> None:
    # the recorder counted regions with no limit: a 2 s run went on for minutes
    model = mlp([2, 6, 1], seed=0)
    X, y = np.eye(2), np.ones(2)
    with pytest.warns(UserWarning, match="the time limit came first"):
        t = train(model, X, y, steps=50, every=1, time_limit=1e-9, record=[RegionCount(box=Box([-1, -1], [1, 1]))])
    assert t.status == "time_limit" and np.isnan(t.records["regions"][0])
    free = train(mlp([2, 6, 1], seed=0), X, y, steps=2, every=1, record=[RegionCount(box=Box([-1, -1], [1, 1]))])
    assert all(v >= 1 for v in free.records["regions"])


@pytest.mark.parametrize(("call", "err", "msg"), [
    (lambda: mlp([2, 3.7, 1]), DynamicsError, "every width must be an integer"),
    (lambda: mlp([2, 3, 1], dtype="float128"), DynamicsError, "dtype must be"),
    (lambda: train(mlp([2, 3, 1]), np.eye(2), np.ones(2), seed=1.5), DynamicsError, "seed=1.5"),
    (lambda: train(mlp([2, 3, 1]), np.eye(2), np.ones(2), seed=-3), DynamicsError, "seed=-3"),
    (lambda: train(mlp([2, 3, 1]), np.eye(2), np.ones(2), weight_decay=0.1, no_decay="skp"),
     DynamicsError, "'skp' starts no parameter's name"),
    (lambda: KernelRidge("ntk", ridge="x").fit(np.eye(2), np.ones(2)), KernelError, "ridge"),
    (lambda: train(mlp([2, 3, 1]), np.eye(2), np.ones(2), optimizer="gd", batch_size=1), DynamicsError,
     "uses the full batch"),
])
def test_bad_arguments_are_one_error(call, err, msg) -> None:
    with pytest.raises(err, match=msg):
        call()


@pytest.mark.parametrize("share", [float("nan"), -1.0, 5.0])
def test_saddle_events_refuses_an_active_share_outside_zero_one(share) -> None:
    t = train(mlp([2, 2, 1], seed=0), np.eye(2), np.ones(2), steps=20, every=2)
    with pytest.raises(DynamicsError, match="active_share"):
        saddle_events(t, active_share=share)


def test_a_refused_kernel_ridge_refit_keeps_the_previous_model():
    # the new points were stored before y was checked: predict then paired them with the
    # old coefficients and answered numbers of neither model
    from relulab.dynamics import KernelError, KernelRidge

    rng = np.random.default_rng(0)
    X1 = rng.normal(size=(6, 2))
    y1 = np.sin(X1[:, 0])
    m = KernelRidge("ntk").fit(X1, y1)
    before = m.predict(X1)
    with pytest.raises(KernelError, match="NaN or infinite targets, first at row 2"):
        m.fit(rng.normal(size=(6, 2)) * 3, [1.0, 2.0, np.nan, 0.0, 0.0, 0.0])
    assert np.array_equal(m.X_, X1) and np.array_equal(m.predict(X1), before)


def test_repeated_points_are_found_exactly_by_their_normalised_rows():
    # multiples of one augmented point are one hyperplane; rows one ulp apart are not (the
    # rows are keyed by their division by the first nonzero entry, in rationals)
    from relulab.dynamics.dichotomies import _distinct_hyperplanes

    Xa = np.array([[1.0, 2.0, 3.0], [-2.0, -4.0, -6.0], [1.0, 2.0, 3.0000000000000004], [0.0, 0.0, 1.0],
                   [0.0, 0.0, -3.0], [0.5, 1.0, 1.5]])
    assert _distinct_hyperplanes(Xa).tolist() == [[1.0, 2.0, 3.0], [1.0, 2.0, 3.0000000000000004], [0.0, 0.0, 1.0]]
    rng = np.random.default_rng(1)
    X = np.vstack([rng.integers(-3, 4, size=(40, 3)).astype(float)] * 2) * 1e-7
    X = X[np.any(X != 0, axis=1)]
    got = _distinct_hyperplanes(X)
    from fractions import Fraction

    def multiples(a, b):
        a, b = [Fraction(v) for v in a], [Fraction(v) for v in b]
        return all(a[p] * b[q] == a[q] * b[p] for p in range(3) for q in range(p + 1, 3))

    assert all(any(multiples(x, g) for g in got) for x in X)          # every row is covered
    assert not any(multiples(got[i], got[j]) for i in range(len(got)) for j in range(i))


def test_the_flow_check_skips_steps_across_activation_pattern_changes():
    # a 2-8-1 regression whose patterns on the data change: the first-order prediction
    # missed the decrease by ~30% at those steps whatever the step size, and ok was False
    # at every lr; the other steps follow the flow, closer as lr shrinks
    rng = np.random.default_rng(0)
    X = rng.normal(size=(10, 2))
    y = np.sin(2 * X[:, 0]) + X[:, 1]
    errs = []
    for lr in (0.005, 0.02):
        t = train(mlp([2, 8, 1], seed=1), X, y, optimizer="flow", lr=lr, steps=int(round(5.0 / lr)), every=1)
        assert t.flow.kinks > 0 and t.flow.checked > 0
        assert t.flow.ok, (lr, t.flow)
        errs.append(t.flow.max_rel_error)
    assert errs[0] < errs[1]          # first order: the error shrinks with the step


def test_empirical_ntk_of_a_general_module_checks_its_memory():
    # relulab's own mlp() is not a bare Sequential: it takes the torch.func path, which
    # allocated its Jacobians blindly (9.6 GB under a 1 GB budget: torch's raw RuntimeError)
    from relulab.dynamics import empirical_ntk
    from relulab.limits import ResourceLimitError, memory_limit

    m = mlp([10, 64, 1], seed=0)                       # 769 parameters
    X = np.random.default_rng(0).normal(size=(200, 10))
    with memory_limit(1 << 20), pytest.raises(ResourceLimitError, match="empirical_ntk"):
        empirical_ntk(m, X)                            # 200 x 769 Jacobians: > 1 MB
    K = empirical_ntk(m, X[:5])                        # small: computed
    assert K.shape == (5, 5) and np.allclose(K, K.T)


def test_a_segment_count_stops_at_its_time_limit():
    # along_segment took no time limit, and a step-0 RegionCount(segment=...) ran seconds
    # past train's limit; past the limit no segment is returned, and the record is NaN
    import warnings

    from relulab import Network, regions
    from relulab.errors import UncertifiedCount

    rng = np.random.default_rng(0)
    dims = [2, 30, 30, 1]
    net = Network([rng.normal(size=(dims[k + 1], dims[k])) for k in range(3)],
                  [rng.normal(size=dims[k + 1]) for k in range(3)])
    full = regions.along_segment(net, [-3.0, -3.0], [3.0, 3.0], time_limit=60.0)
    assert full.n_pieces == regions.along_segment(net, [-3.0, -3.0], [3.0, 3.0]).n_pieces
    with pytest.raises(UncertifiedCount, match="time limit"):
        regions.along_segment(net, [-3.0, -3.0], [3.0, 3.0], time_limit=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = train(net, rng.normal(size=(5, 2)), rng.normal(size=5), steps=3, every=1, time_limit=1e-9,
                  record=[RegionCount(segment=([-3.0, -3.0], [3.0, 3.0]))])
    assert np.isnan(t.records["regions"]).all()


def test_effective_width_at_small_tolerances_and_tiny_rows():
    # distances from 2 - 2 cos resolve about 1e-8: at tol 1e-8 or 0 a row and its positive
    # multiple counted as two directions; a row of size 1e-170 squared to 0 and was dropped
    from relulab.dynamics import effective_width

    rng = np.random.default_rng(0)
    V = rng.normal(size=(200, 3))
    V2 = np.vstack([V, rng.uniform(0.1, 10, size=(200, 1)) * V])
    for tol in (1e-6, 1e-8, 1e-9, 0.0):
        assert effective_width(V2, tol=tol) == 200, tol
    a = np.array([1.0, 0.0, 0.0])
    assert effective_width(np.vstack([a, [1.0, 3e-9, 0.0]]), tol=1e-8) == 1
    assert effective_width(np.vstack([a, [1.0, 2e-8, 0.0]]), tol=1e-8) == 2
    assert effective_width([[1e-170, 2e-170], [1.0, 0.0]]) == 2


def test_the_flow_check_does_not_excuse_a_kink_step_that_raises_the_loss():
    # lr = 1 overshoots: the loss went 0.57 -> 3.39 -> 6.61, every such step crossed a
    # kink and was skipped, and ok was True (aud_sess10 F1); gradient flow never raises
    # the loss, which the recorded losses show independently
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 2))
    y = np.sin(X[:, :1] * 2)
    t = train(mlp([2, 16, 1], seed=1), X, y, loss="mse", optimizer="flow", lr=1.0, steps=50, every=1)
    rises = int(np.sum(np.diff(t.loss) > 0))
    assert rises > 0 and t.flow.kink_failures >= 1 and not t.flow.ok
    small = train(mlp([2, 16, 1], seed=1), X, y, loss="mse", optimizer="flow", lr=0.01, steps=2000, every=1)
    assert np.all(np.diff(small.loss) < 0)                     # descent at every step
    assert small.flow.kinks > 0 and small.flow.kink_failures == 0 and small.flow.ok


def test_the_flow_check_fails_a_kink_step_far_from_its_prediction():
    # lr = 0.3 on a 2-22-1 net: the first step fell by 6 % of a predicted 5.68 on a loss
    # of 1.42, and the run's loss was 21x, 25x and 2.4x the flow's at steps 1-3, with
    # ok=True as those steps crossed kinks (aud_sess11 F1); the flow is approximated
    # independently by gradient descent with 40x smaller steps
    d, h, X, y = _random_case(seed=7, index=11)
    t = train(mlp([d, h, 1], seed=11), X, y, optimizer="flow", lr=0.3, steps=60, every=1, record=[])
    ref = train(mlp([d, h, 1], seed=11), X, y, optimizer="gd", lr=0.3 / 40, steps=60 * 40, every=2400,
                record=[]).loss[::40]
    assert np.max(np.abs(t.loss - ref) / ref) > 1.0            # far from the flow
    assert t.flow.kink_failures >= 1 and not t.flow.ok


def test_the_generic_ntk_path_works_in_chunks_of_points_and_matches_per_point_gradients():
    # vmap ran every point at once: a 2-parameter module with a 400,000-wide activation on
    # 1,500 points asked torch for 2.4 GB, a raw RuntimeError (aud_sess10 F2)
    import torch

    from relulab.dynamics import empirical_ntk
    from relulab.dynamics.kernels import _NTK_CHUNK
    from relulab.limits import ResourceLimitError

    class Wide(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 1).double()
            self.register_buffer("B", torch.linspace(-1, 1, 50, dtype=torch.float64))

        def forward(self, x):
            return torch.relu(self.lin(x) * self.B).sum(-1, keepdim=True)

    torch.manual_seed(0)
    m = Wide()
    X = np.random.default_rng(0).normal(size=(2 * _NTK_CHUNK + 5, 2))
    K = empirical_ntk(m, X)
    grads = []
    for x in X:                                   # one autograd pass per point
        m.zero_grad()
        m(torch.as_tensor(x[None])).sum().backward()
        grads.append(torch.cat([p.grad.reshape(-1) for p in m.parameters()]).numpy())
    G = np.array(grads)
    assert np.allclose(K, G @ G.T, rtol=1e-12, atol=1e-12)   # tol: float64 sums in another order

    class Greedy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(1, 1)

            self.calls = 0

        def forward(self, x):
            self.calls += 1                  # the first call sizes the outputs; then vmap's
            if self.calls > 1:
                raise RuntimeError("[enforce fail at alloc_cpu.cpp:127] DefaultCPUAllocator: can't allocate memory")
            return self.lin(x)

    with pytest.raises(ResourceLimitError, match="empirical_ntk: torch could not allocate"):
        empirical_ntk(Greedy(), np.zeros((3, 1)))


def test_a_callable_kernel_of_the_wrong_shape_is_named():
    # numpy's "operands could not be broadcast together with shapes (10,11) (10,10)"
    from relulab.dynamics.kernels import KernelError, KernelRidge

    X = np.random.default_rng(0).random((10, 3))
    with pytest.raises(KernelError, match=r"returned shape \(10, 11\) .* expected \(10, 10\)"):
        KernelRidge(lambda A, B: np.ones((A.shape[0], B.shape[0] + 1))).fit(X, np.zeros(10))
    m = KernelRidge(lambda A, B: A @ B.T + 1.0, ridge=1e-3).fit(X, X[:, 0])
    assert np.allclose(m.predict(X), (X @ X.T + 1.0) @ m.alpha_)
    m.kernel = lambda A, B: np.ones(3)
    with pytest.raises(KernelError, match=r"returned shape \(3,\)"):
        m.predict(X[:4])


def test_along_segment_reads_the_clock_inside_a_wide_exact_layer(monkeypatch):
    # the limit was read between layers only: one 244 x 300 x 300 Fraction product ran
    # 170 s past a 0.6 s limit; a clock that runs out during layer 2 must stop there
    import relulab.regions._slices as S
    from relulab import Network, regions
    from relulab.errors import UncertifiedCount

    rng = np.random.default_rng(0)
    net = Network([rng.normal(size=(12, 1)), rng.normal(size=(12, 12)), rng.normal(size=(1, 12))],
                  [rng.normal(size=12), rng.normal(size=12), np.zeros(1)]).exact()
    full = regions.along_segment(net, [-3.0], [3.0])
    assert full.breakpoints.dtype == object
    same = regions.along_segment(net, [-3.0], [3.0], time_limit=600.0)
    assert list(same.breakpoints) == list(full.breakpoints)       # exact: equal as Fractions

    class Clock:                       # expires at its 6th reading: inside layer 2's rows
        def __init__(self, seconds):
            self.reads = 0

        def expired(self):
            self.reads += 1
            return self.reads > 5

    monkeypatch.setattr(S, "Deadline", Clock)
    with pytest.raises(UncertifiedCount, match=r"ran out in layer 2 \(at piece 2 of"):
        regions.along_segment(net, [-3.0], [3.0], time_limit=1.0)


def test_a_run_whose_finite_weights_overflow_keeps_its_trajectory():
    # lr = 1 ran away to finite weights whose float64 forward pass overflows: to_network
    # raised a FormatError about torch.onnx.export out of train() and the run was lost
    # (aud_sess11 F3)
    import warnings

    d, h, X, y = _random_case(seed=0, index=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = train(mlp([d, h, 1], seed=3), X, y, optimizer="flow", lr=1.0, steps=100, every=1, record=[])
    assert t.loss.size >= 2 and t.flow is not None and not t.flow.ok
    assert t.network is None or np.all(np.isfinite(t.network.float()(X)))


def _random_case(seed: int, index: int) -> tuple[int, int, np.ndarray, np.ndarray]:
    """Case ``index`` of the auditors' stream of random regressions (input size d, hidden
    width h, X, y = sin(sum x) + noise), drawn in order from ``default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    for _ in range(index + 1):
        d, n, h = int(rng.integers(1, 4)), int(rng.integers(5, 30)), int(rng.integers(4, 32))
        X = rng.normal(size=(n, d))
        y = np.sin(X.sum(1)) + 0.1 * rng.normal(size=n)
    return d, h, X, y
