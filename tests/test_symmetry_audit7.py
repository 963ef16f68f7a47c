"""aud_sym7: transforms that would change the function, the CLI on exact models, and
argument names.  Independent checks: exact Fraction evaluation of the networks."""

from fractions import Fraction as F

import numpy as np
import pytest
from typer.testing import CliRunner

from relulab import Network
from relulab.cli import app
from relulab.errors import RelulabError
from relulab.io import load_model, save_model
from relulab.network import NetworkError
from relulab.symmetry import neuron_scores, plan, rescale

runner = CliRunner()


def test_a_rescaling_that_underflows_a_weight_is_refused():
    net = Network([[[1e-8]], [[1e-8]]], [[0.0], [0.0]])       # 1e-16 relu(x)
    assert rescale(net, [[1e-290]])([1.0])[0] == pytest.approx(1e-16)   # still in range: fine
    with pytest.raises(NetworkError, match="below float64's normal range"):
        rescale(net, [[1e-316]])      # 1e-8 x 1e-316 is 0: the neuron would turn constant


def _exact_relu_via_cancellation() -> Network:
    e = F(1, 2**60)    # 2^60 relu((1 + 2^-60) x) - 2^60 relu(x) = relu(x); its float copy is 0
    return Network([[[1 + e], [F(1)]], [[F(2**60), -F(2**60)]]], [[0, 0], [0]], exact=True)


def test_canonical_of_an_exact_model_is_checked_exactly_and_written(tmp_path):
    src, out = tmp_path / "ref.npz", tmp_path / "can.npz"
    save_model(_exact_relu_via_cancellation(), str(src))
    res = runner.invoke(app, ["canonical", str(src), "-o", str(out), "--box", "0:1"])
    assert res.exit_code == 0, res.output
    can = load_model(str(out))
    for x in (F(0), F(1, 3), F(1), F(-1, 7)):
        assert can([x])[0] == _exact_relu_via_cancellation()([x])[0]


def test_equiv_prints_an_exact_witness_as_its_fraction(tmp_path):
    e, a = F(1, 10**30), F(1, 3)
    tent = Network([[[F(1)], [F(1)], [F(1)]], [[F(1), F(-2), F(1)]]], [[-a, -a - e, -a - 2 * e], [F(0)]])
    zero = Network([[[F(1)]], [[F(0)]]], [[F(0)], [F(0)]])
    save_model(tent, str(tmp_path / "tent.npz"))
    save_model(zero, str(tmp_path / "zero.npz"))
    res = runner.invoke(app, ["equiv", str(tmp_path / "tent.npz"), str(tmp_path / "zero.npz"), "--whole-space"])
    assert "different" in res.output
    shown = res.output.split("witness x = [")[1].split("]")[0].replace("\n", "").replace(" ", "")
    x = F(shown)
    assert tent([x])[0] != zero([x])[0]          # the printed witness is one


def test_mechanism_names_the_function_and_refuses_a_bool_keep():
    net = Network([[[1.0, 2.0]], [[1.0]]], [[0.0], [0.0]])
    with pytest.raises(RelulabError, match="^neuron_scores: data has shape"):
        neuron_scores(net, np.zeros(2))
    with pytest.raises(RelulabError, match="plan: keep must be"):
        plan([np.array([0.3, 0.1, 0.2])], True)


def test_rescaling_a_network_that_already_holds_a_subnormal_weight_is_allowed():
    net = Network([[[1.0, 1e-310], [2.0, 1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
    for c in ([1.0, 1.0], [2.0, 1.0]):
        g = rescale(net, [c])
        X = np.random.default_rng(0).normal(size=(50, 2))
        np.testing.assert_allclose(g(X), net(X), rtol=1e-14)
