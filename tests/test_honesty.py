"""Every public computation that can be cut short (a time limit, a region or pattern budget,
a sample of points) returns a result that says how it ended, and says it in its JSON.

The check walks every exported function of relulab: those with such a parameter must
return a dataclass with a field or property among STATUS_NAMES that ``to_dict()`` (its
JSON) includes. Functions returning bare tuples are internals and must not be exported
from a topic package's top level unless listed in ALLOWED with the reason.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import typing

import relulab

LIMIT_PARAMS = {"time_limit", "timeout", "max_regions", "max_patterns", "deadline", "budget",
                "max_iter", "n_points", "samples"}
STATUS_NAMES = ("status", "partial", "exact", "converged", "found", "all_patterns",
                "global_optimum", "complete")
# exported functions (by name) that return plain data on purpose, with the reason
ALLOWED = {
    "iter_regions": "a generator: stops when the budget is reached, len tells",
    "activation_patterns": "returns (patterns, signs, complete): the flag is the status",
    "enumerate_patterns": "returns the complete pattern list, or None (not proved complete, or the deadline came first)",
    "float32_unsafe": "returns why float32 is unsafe, or None; past its deadline it says unsafe (float64 is always sound)",
    "sample_patterns": "a sample by definition (the name says it)",
    "solve_group_lasso": "solver kernel: its info dict has 'status'",
    "tighten_bounds": "bounds are sound at any time limit (looser when cut short)",
    "milp_term": "returns (status, x, info)",
    "decide_term": "returns (status, x, info)",
    "attack": "None or a re-checked counterexample: either is exact",
    "attack_terms": "None or (term, re-checked counterexample): either is exact",
    "local_search": "a local search by definition: (point, its forward-pass margin)",
    "decide_terms": "returns (status, x, info, term)",
    "preactivation_bounds": "bounds are sound at any time limit (looser when cut short)",
    "crown_batch": "bounds are sound at any deadline (interval bounds for the layers past it)",
    "sdp_bound": "an upper bound re-verified by eigenvalues at any time limit, or an error",
    "sampled_lower": "a sample by definition: None or a certified witness (a lower bound)",
    "ascent_lower": "a heuristic search by definition: None or a certified witness (a lower bound)",
    "exact_rank": "raises RankTimeLimit at its time limit: there is no partial rank",
    "linear_dichotomies": "an exact count or UncertifiedCount (also at its time limit): there is no partial count",
    "along_segment": "every breakpoint, or UncertifiedCount at its time limit: there is no partial segment",
    "subset_signs": "extract kernel (signs module only): the flip set or None; extract_relu reports status",
    "other_subset": "extract kernel (signs module only): a second flip set or None; extract_relu notes it",
    "box_max": "lipschitz kernel: BoxMax.closed says whether the box was settled; lipschitz reports status",
    "pattern_check": "returns (verdict, witness, upper): the verdict says how it ended",
    "polish": "returns (network, PolishReport): the report says accepted, rejected or not started at the limit",
    "effective_width": "an exact count or UncertifiedCount at its deadline: there is no partial count",
    "direction_clusters": "every cluster, or UncertifiedCount at its deadline: there is no partial clustering",
}


def _limited_functions():
    seen = {}
    for m in pkgutil.walk_packages(relulab.__path__, "relulab."):
        if ".cli" in m.name or any(part.startswith("_") for part in m.name.split(".")):
            continue
        mod = importlib.import_module(m.name)
        for name in getattr(mod, "__all__", []):
            f = getattr(mod, name, None)
            if inspect.isfunction(f) and f not in seen.values():
                if set(inspect.signature(f).parameters) & LIMIT_PARAMS:
                    seen[f"{f.__module__}.{f.__name__}"] = f   # where it is defined
    return seen


def test_limited_computations_report_how_they_ended():
    funcs = _limited_functions()
    assert len(funcs) >= 10                      # the walk does find them
    bad = []
    for qual, f in funcs.items():
        if f.__name__ in ALLOWED:
            continue
        rt = typing.get_type_hints(f).get("return")
        if not (inspect.isclass(rt) and dataclasses.is_dataclass(rt)):
            bad.append(f"{qual}: returns {rt}, not a result type")
            continue
        fields = {x.name for x in dataclasses.fields(rt)}
        props = {n for n, v in inspect.getmembers(rt) if isinstance(v, property)}
        have = [n for n in STATUS_NAMES if n in fields or n in props]
        if not have:
            bad.append(f"{qual}: {rt.__name__} has none of {STATUS_NAMES}")
            continue
        src = inspect.getsource(rt.to_dict) if "to_dict" in rt.__dict__ else ""
        if not any(n in fields or f'"{n}"' in src for n in have):
            bad.append(f"{qual}: {rt.__name__}.to_dict() leaves out {have}")
    assert not bad, "\n".join(bad)


def test_reduce_result_says_whether_it_was_verified():
    import numpy as np

    from relulab import Box, Network
    from relulab.symmetry import reduce

    net = Network([[[1.0], [2.0], [1.0], [-1.0]], [[1.0, 0.5, 3.0, 2.0]]],
                  [[0.0, 0.0, -5.0, 4.0], [0.0]])
    r = reduce(net, Box([-1], [1]))
    assert r.status == "verified" and r.to_dict()["status"] == "verified"
    X = np.linspace(-1, 1, 101)[:, None]
    assert np.allclose(r.network(X), net(X))
