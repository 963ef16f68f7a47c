"""Structure checks of the package itself (static: no relulab algorithm runs here).

* the tolerance policy: no float literal below 1e-5 in ``src/relulab`` outside
  ``tolerance.py`` unless its line carries a ``# tol: reason`` comment, and every
  public tolerance argument defaults to ``None`` (the policy's default);
* the import graph (module-level and function-level imports, read with ``ast``): no
  cycle between modules, no import of ``relulab.cli`` from outside ``cli/``, and no
  module importing a private name (leading underscore) or a private module of
  another package.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import io
import tokenize
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "relulab"
LITERAL_LIMIT = 1e-5
MARKER = "tol:"


def _modules() -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (file, is_package)."""
    out = {}
    for p in sorted(SRC.rglob("*.py")):
        parts = list(p.relative_to(SRC.parent).with_suffix("").parts)
        is_pkg = parts[-1] == "__init__"
        if is_pkg:
            parts = parts[:-1]
        out[".".join(parts)] = (p, is_pkg)
    return out


MODULES = _modules()


def _package(mod: str) -> str:
    return mod if MODULES[mod][1] else mod.rsplit(".", 1)[0]


def _comments(src: str) -> dict[int, str]:
    """Line number -> the comment on that line."""
    out = {}
    for tok in tokenize.generate_tokens(io.StringIO(src).readline):
        if tok.type == tokenize.COMMENT:
            out[tok.start[0]] = tok.string
    return out


# ---------------------------------------------------------------- tolerance policy
def _tolerance_literals() -> list[str]:
    bad = []
    for mod, (path, _) in MODULES.items():
        if mod == "relulab.tolerance":
            continue
        src = path.read_text()
        comments = _comments(src)
        for node in ast.walk(ast.parse(src)):
            if (isinstance(node, ast.Constant) and isinstance(node.value, float)
                    and 0 < abs(node.value) < LITERAL_LIMIT):
                # a literal may span lines inside an expression: its own line counts
                if MARKER not in comments.get(node.lineno, ""):
                    line = src.splitlines()[node.lineno - 1].strip()
                    bad.append(f"{path.relative_to(SRC)}:{node.lineno}: {line}")
    return bad


def test_no_stray_tolerance_literals():
    bad = _tolerance_literals()
    assert not bad, (
        "float literals below 1e-5 outside relulab/tolerance.py: use a named constant "
        f"from relulab.tolerance or add a '# {MARKER} reason' comment:\n" + "\n".join(bad)
    )


def test_literal_scan_sees_literals(tmp_path):
    # the scan itself: a bare literal is found, a marked one is not
    src = "x = 1e-9\ny = 2e-12  # tol: rounding of a dot product\nz = 1e-3\n"
    comments = _comments(src)
    found = [n.lineno for n in ast.walk(ast.parse(src))
             if isinstance(n, ast.Constant) and isinstance(n.value, float)
             and 0 < abs(n.value) < LITERAL_LIMIT and MARKER not in comments.get(n.lineno, "")]
    assert found == [1]


TOL_NAMES = ("tol", "rtol", "gap_tol", "rel_tol", "merge_tol", "mip_gap")


def _public_callables():
    for mod in sorted(MODULES):
        if mod.startswith("relulab.cli") or any(p.startswith("_") for p in mod.split(".")[1:]):
            continue
        m = importlib.import_module(mod)
        for name in getattr(m, "__all__", []):
            obj = getattr(m, name, None)
            if inspect.isclass(obj):
                for an, attr in vars(obj).items():
                    if callable(attr) and not an.startswith("_"):
                        yield f"{mod}.{name}.{an}", attr
            elif callable(obj):
                yield f"{mod}.{name}", obj


def test_public_tolerance_arguments_default_to_policy():
    pytest.importorskip("torch")
    bad = []
    for qual, fn in _public_callables():
        try:
            sig = inspect.signature(fn)
        except (TypeError, ValueError):
            continue
        for p in sig.parameters.values():
            if p.name in TOL_NAMES and p.default is not inspect.Parameter.empty and p.default is not None:
                bad.append(f"{qual}({p.name}={p.default!r})")
    assert not bad, "public tolerance arguments must default to None (the policy): " + ", ".join(sorted(set(bad)))


def test_none_means_policy_default():
    import numpy as np

    from relulab import Box
    from relulab.tolerance import FEAS_TOL

    B = Box([0.0], [1.0])
    x = np.array([1.0 + FEAS_TOL / 2])
    assert B.contains(x) and B.contains(x, tol=None) and not B.contains(x, tol=0.0)


# ---------------------------------------------------------------- import graph
def _imports(mod: str) -> list[tuple[str, str | None, int]]:
    """(target module, imported name or None, line) of every relulab import in ``mod``
    (module-level and inside functions)."""
    path, _ = MODULES[mod]
    pkg = _package(mod)
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names if a.name.startswith("relulab")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg.split(".")[: len(pkg.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if not target.startswith("relulab"):
                continue
            for a in node.names:
                sub = f"{target}.{a.name}"
                out.append((sub, None, node.lineno) if sub in MODULES else (target, a.name, node.lineno))
    return out


def _private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for mod in MODULES:
        for target, _, _ in _imports(mod):
            if target in MODULES and target != mod:
                graph[mod].add(target)
    return graph


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    color: dict[str, int] = {}
    stack: list[str] = []

    def visit(u: str) -> list[str] | None:
        color[u] = 1
        stack.append(u)
        for v in sorted(graph[u]):
            if color.get(v) == 1:
                return stack[stack.index(v):] + [v]
            if v not in color and (c := visit(v)):
                return c
        stack.pop()
        color[u] = 2
        return None

    for u in sorted(graph):
        if u not in color and (c := visit(u)):
            return c
    return None


def test_no_import_cycles():
    cycle = _find_cycle(_import_graph())
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_cycle_finder_finds_cycles():
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _find_cycle({"a": {"b"}, "b": set()}) is None


def test_only_cli_imports_cli():
    bad = [f"{m}:{ln} imports {t}" for m in MODULES if not m.startswith("relulab.cli")
           for t, _, ln in _imports(m) if t.startswith("relulab.cli")]
    assert not bad, "algorithm modules must not import the CLI:\n" + "\n".join(bad)


def test_no_private_imports_across_packages():
    bad = []
    for mod in MODULES:
        mine = _package(mod)
        for target, name, ln in _imports(mod):
            if name is not None and _private(name):
                # a shared core module (relulab.bounds, relulab.lp, ...) owns its private
                # names alone: every package beside it must use its public ones
                owner = target if target.count(".") == 1 and not MODULES[target][1] else _package(target)
                what = f"{target}.{name}"
            else:
                parts = target.split(".")
                idx = [i for i, p in enumerate(parts) if _private(p)]
                if not idx:
                    continue
                owner = ".".join(parts[: idx[0]])  # the package the private module lives in
                what = target
            if not (mine == owner or mine.startswith(owner + ".")):
                bad.append(f"{mod}:{ln} imports the private {what}")
    assert not bad, "use public names of other packages:\n" + "\n".join(bad)


def test_no_module_reaches_around_lp():
    """Only relulab.lp talks to HiGHS: no ``model.h.someHighsMethod`` elsewhere."""
    bad = []
    for mod, (path, _) in MODULES.items():
        if mod == "relulab.lp":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute)
                    and node.value.attr == "h" and node.attr != node.attr.lower()):
                bad.append(f"{path.relative_to(SRC)}:{node.lineno}: .h.{node.attr}")
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + [getattr(node, "module", None) or ""]
                if any(n.split(".")[0] == "highspy" for n in names):
                    bad.append(f"{path.relative_to(SRC)}:{node.lineno}: imports highspy")
    assert not bad, "go through relulab.lp.LPModel:\n" + "\n".join(bad)


def test_every_relulab_import_names_something_that_exists():
    # a local import inside a rarely taken branch (explain's LP tightening imported
    # tighten_bounds from relulab.verify, which does not export it) fails only when run
    import importlib

    bad = []
    for mod in MODULES:
        for target, name, ln in _imports(mod):
            if name is None or name == "*":
                continue
            try:
                module = importlib.import_module(target)
            except ImportError as e:  # an optional third-party dependency: not this test's concern
                if (e.name or "").startswith("relulab"):
                    bad.append(f"{mod}:{ln}: no module {target}")
                continue
            if not hasattr(module, name):
                bad.append(f"{mod}:{ln}: {target} has no {name}")
    assert not bad, "imports that fail when their line runs:\n" + "\n".join(bad)
