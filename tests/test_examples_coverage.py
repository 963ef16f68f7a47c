"""Every exported function and class has a docstring example that runs as a doctest.

"Exported" means listed in the ``__all__`` of relulab or of any public module under it
(every module path without a leading underscore), found by walking the package, so
packages added later are covered without a change here. The doctests themselves run
through ``--doctest-modules`` (pytest's configuration); this test checks that each
exported object has one that is not skipped.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil

import relulab

# Modules whose exports need no doctest, and why (listed in the printed coverage).
EXEMPT_MODULES = {
    "relulab.cli": "the command line: its examples are the commands in each --help, "
                   "run by tests/test_*cli*.py",
}
EXEMPT_KINDS = "exception classes (raised, not called: each raising function shows them)"


def public_modules() -> list[str]:
    names = ["relulab"]
    for info in pkgutil.walk_packages(relulab.__path__, "relulab."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts):
            continue
        if any(info.name == m or info.name.startswith(m + ".") for m in EXEMPT_MODULES):
            continue
        names.append(info.name)
    return names


def _runnable_examples(obj: object) -> int:
    """Doctest examples in the object's own docstring that are not skipped."""
    doc = obj.__doc__ if isinstance(obj.__doc__, str) else ""
    examples = doctest.DocTestParser().get_examples(doc)
    return sum(1 for e in examples if not e.options.get(doctest.SKIP, False))


def exported(skipped: list[str] | None = None) -> dict[int, tuple[str, str, object]]:
    """Every exported function/class once (by identity), with where it is exported;
    the names not counted (constants, exception classes) go to ``skipped``."""
    seen: dict[int, tuple[str, str, object]] = {}
    for mod_name in public_modules():
        mod = importlib.import_module(mod_name)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)) or (
                    inspect.isclass(obj) and issubclass(obj, BaseException)):
                # constants hold no docstring of their own; exceptions: EXEMPT_KINDS
                if skipped is not None:
                    skipped.append(f"{mod_name}.{name}")
                continue
            seen.setdefault(id(obj), (mod_name, name, obj))
    return seen


def test_every_exported_name_has_a_runnable_example() -> None:
    skipped: list[str] = []
    items = exported(skipped)
    missing = sorted(f"{m}.{n}" for m, n, o in items.values() if not _runnable_examples(o))
    n_func = sum(1 for *_, o in items.values() if inspect.isfunction(o))
    n_cls = len(items) - n_func
    miss_f = sum(1 for m, n, o in items.values() if inspect.isfunction(o) and f"{m}.{n}" in missing)
    miss_c = len(missing) - miss_f
    print(f"\nexamples: functions {n_func - miss_f}/{n_func}, classes {n_cls - miss_c}/{n_cls}, "
          f"all {len(items) - len(missing)}/{len(items)} "
          f"({100 * (len(items) - len(missing)) / max(len(items), 1):.0f}%) over "
          f"{len(public_modules())} public modules")
    for m, why in EXEMPT_MODULES.items():
        print(f"exempt: {m}: {why}")
    print(f"exempt: {EXEMPT_KINDS}; not counted: {len(set(skipped))} exported constants and "
          f"exception classes ({', '.join(sorted(set(skipped)))})")
    assert not missing, f"{len(missing)} exported names without a doctest example:\n" + \
        "\n".join(missing)


def test_the_walk_sees_every_package() -> None:
    """The discovery itself: each public top-level package and its __all__ is seen."""
    mods = set(public_modules())
    for info in pkgutil.iter_modules(relulab.__path__):
        if not info.name.startswith("_") and f"relulab.{info.name}" not in EXEMPT_MODULES:
            assert f"relulab.{info.name}" in mods
    names = {(m, n) for m, n, _ in exported().values()}
    assert ("relulab.verify", "verify") in names or ("relulab.verify.verifier", "verify") in names
    assert any(n == "Network" for _, n in names)
