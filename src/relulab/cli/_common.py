"""Shared pieces of the command line: the app, error handling, output, argument parsing."""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np
import typer
from rich.console import Console

from ..errors import RelulabError
from ..results import to_jsonable

app = typer.Typer(
    name="relulab",
    help="Exact answers about ReLU networks: regions, verification, constructions, "
    "parameter-space quantities. Run `relulab tour` first.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

console = Console()
err_console = Console(stderr=True)

_state = {"debug": False}


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors."),
) -> None:
    _state["debug"] = debug


# The topic modules in `relulab --help` and tour order; set by relulab.cli (a topic module
# reading relulab.cli.TOPICS itself would make an import cycle).
_TOPICS: tuple = ()


def set_topics(topics: tuple) -> None:
    """Record the topic modules (called once by :mod:`relulab.cli`)."""
    global _TOPICS
    _TOPICS = tuple(topics)


def topics() -> tuple:
    """The topic modules, in tour order."""
    return _TOPICS


JSON_OPT = typer.Option(False, "--json", help="Print the result as JSON on stdout.")


def print_json(obj: Any) -> None:
    """Write ``obj`` as JSON to stdout (plain print: rich would wrap long lines)."""
    sys.stdout.write(json.dumps(to_jsonable(obj), indent=2) + "\n")


def parse_floats(text: str, what: str) -> np.ndarray:
    """Parse "1,2,3" or "1 2 3" into a float vector, with a clear error."""
    parts = [p for p in text.replace(",", " ").split() if p]
    try:
        return np.array([float(p) for p in parts], dtype=np.float64)
    except ValueError:
        raise RelulabError(f"{what}: cannot read numbers from {text!r}") from None


def parse_box(spec: str | None, dim: int) -> Any:
    """Parse ``--box`` as "lo:hi" (every coordinate), or "lo1:hi1,lo2:hi2,..."."""
    from ..domain import Box

    if spec is None:
        return Box(-np.ones(dim), np.ones(dim))
    items = [s for s in spec.replace(" ", "").split(",") if s]
    try:
        pairs = [tuple(float(v) for v in it.split(":")) for it in items]
    except ValueError:
        raise RelulabError(f"--box: cannot read {spec!r}; write lo:hi or lo1:hi1,lo2:hi2,...") from None
    if any(len(p) != 2 for p in pairs):
        raise RelulabError(f"--box: cannot read {spec!r}; write lo:hi or lo1:hi1,lo2:hi2,...")
    if len(pairs) == 1:
        pairs = pairs * dim
    if len(pairs) != dim:
        raise RelulabError(f"--box gives {len(pairs)} intervals; the model takes {dim} inputs")
    return Box([p[0] for p in pairs], [p[1] for p in pairs])


def load_model_arg(path: str):
    from ..io import load_model

    return load_model(path)


def run_app(argv: list[str]) -> None:
    """Run the app; bad input becomes one line on stderr and exit code 1 (unless --debug)."""
    # --debug is accepted anywhere on the line, not only before the command name
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    _state["debug"] = debug
    try:
        app(args=argv, standalone_mode=False)
    except SystemExit:
        raise
    except KeyboardInterrupt:
        err_console.print("interrupted")
        raise SystemExit(130) from None
    except Exception as e:  # noqa: BLE001 - the CLI boundary turns every error into one line
        if debug:
            raise
        # typer's own exceptions (usage errors, Exit, Abort) come from the click it vendors;
        # recognise them by their interface rather than by a private import path.
        if hasattr(e, "show") and hasattr(e, "exit_code"):
            e.show()
            raise SystemExit(e.exit_code) from None
        if hasattr(e, "exit_code") and not isinstance(e, RelulabError):
            raise SystemExit(e.exit_code) from None
        if type(e).__name__ == "Abort":
            raise SystemExit(1) from None
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if not isinstance(e, (RelulabError, OSError)):
            msg = f"{type(e).__name__}: {msg}"
        err_console.print(f"[red]error:[/red] {msg}", highlight=False, soft_wrap=True)
        raise SystemExit(1) from None
