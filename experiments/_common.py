"""Shared plumbing of the experiment scripts: arguments, output folder, verdicts, writing."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from relulab.results import to_jsonable


def args(doc: str, parts: bool = True) -> argparse.Namespace:
    """The command line every experiment takes: ``--out`` (created; a Path), ``--quick``
    and, with ``parts``, ``--only``; ``a.t0`` is the start time."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    ap.add_argument("--quick", action="store_true", help="a short run (< 1 minute)")
    if parts:
        ap.add_argument("--only", default=None, help="re-run one part (scripts that have parts)")
    a = ap.parse_args()
    a.out = Path(a.out)
    a.out.mkdir(parents=True, exist_ok=True)
    a.t0 = time.time()
    return a


def verdict(label: str, held: bool | None, detail: str) -> dict[str, Any]:
    """One claim's outcome: held True / False, or None (not measurable here)."""
    word = {True: "HELD", False: "DID NOT HOLD", None: "NOT DECIDED"}[held]
    print(f"claim {label}: {word} -- {detail}")
    return {"claim": label, "held": held, "detail": detail}


def write(a: argparse.Namespace, name: str, result: dict[str, Any], fig: Any = None) -> None:
    result = dict(result)
    result["quick"] = bool(a.quick)
    result["seconds"] = time.time() - a.t0
    if fig is not None:
        fig.savefig(a.out / f"{name}.png", dpi=120)
        result["figure"] = f"{name}.png"
    (a.out / f"{name}.json").write_text(json.dumps(to_jsonable(result), indent=1))
    print(f"wrote {a.out / name}.json{' and .png' if fig is not None else ''} "
          f"in {result['seconds']:.0f} s")


def figure(rows: int, cols: int, size: tuple[float, float]):
    from matplotlib.figure import Figure

    fig = Figure(figsize=size, layout="constrained")
    return fig, [fig.add_subplot(rows, cols, i + 1) for i in range(rows * cols)]
