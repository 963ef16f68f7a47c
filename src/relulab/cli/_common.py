"""Shared pieces of the command line: the app, error handling, output, argument parsing."""

from __future__ import annotations

import json
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import typer
from rich.console import Console
from rich.markup import escape

from ..errors import RelulabError
from ..results import to_jsonable


def _natural_help_labels() -> None:
    """Make ``--help`` read naturally under typer 0.2x.

    typer labels every flag ``<bool>``, wraps types in angle brackets and writes
    required arguments as ``{model}`` in the usage line. A flag takes no value, so it
    gets no label; value types read ``FLOAT``, ``TEXT``, ``PATH`` (``... `` when the
    option repeats); arguments read ``MODEL``. The hooks are looked up defensively: on
    a typer without them the defaults stay.
    """
    from typer import core as tcore

    names = {"str": "TEXT", "int": "INT", "float": "FLOAT", "bool": "BOOL", "Path": "PATH"}

    def plain(label: str) -> str:
        inner = label[1:-1] if label.startswith("<") and label.endswith(">") else label
        if inner.startswith("list[") and inner.endswith("]"):
            return plain(inner[5:-1]) + " ..."
        return names.get(inner, inner.upper() if inner.isidentifier() else inner)

    opt, arg = getattr(tcore, "TyperOption", None), getattr(tcore, "TyperArgument", None)
    if opt is not None and hasattr(opt, "display_type_rich") and not hasattr(opt, "_relulab"):
        base = opt.display_type_rich

        def option_label(self, ctx):
            if getattr(self, "is_flag", False):
                return None
            label = base(self, ctx)
            return plain(label) if isinstance(label, str) else label

        opt.display_type_rich, opt._relulab = option_label, True
    if arg is not None and hasattr(arg, "_usage_display_name") and not hasattr(arg, "_relulab"):

        def usage_name(self):
            name = self.display_name_raw.upper()
            name = name if self.required else f"[{name}]"
            return name + ("..." if self.nargs != 1 else "")

        arg._usage_display_name = usage_name
        arg.display_type_rich = lambda self, ctx: None   # the name says what it is
        arg._relulab = True


_natural_help_labels()

#: Exit codes of every command (also listed in ``relulab --help``).
EXIT_OK = 0
EXIT_ERROR = 1        # bad input or a failed computation; one line on stderr
EXIT_USAGE = 2        # unknown option or missing argument (typer's own code)
EXIT_UNVERIFIED = 3   # a result was computed but its check ended unknown (see --allow-unverified)

app = typer.Typer(
    name="relulab",
    help="Exact answers about ReLU networks: regions, verification, constructions, "
    "parameter-space quantities. Run `relulab tour` first.\n\n"
    "Exit codes: 0 success; 1 bad input or failure (one line on stderr); 2 usage error; "
    "3 a result whose check ended unknown (reduce without --allow-unverified).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

console = Console()
err_console = Console(stderr=True)

_state: dict[str, Any] = {"debug": False, "input_shape": None}


def _print_version(value: bool) -> None:
    if value:
        from .. import __version__

        sys.stdout.write(f"relulab {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    debug: bool = typer.Option(False, "--debug", help="Show full tracebacks on errors."),
    version: bool = typer.Option(False, "--version", help="Print relulab's version and exit.",
                                 callback=_print_version, is_eager=True),
    input_shape: str = typer.Option(
        None, "--input-shape",
        help="C,H,W of a torch (.pt) model's input, for every command that loads one (needed "
        "when the file holds a bare convolutional module; a file saved as "
        "{'model': m, 'input_shape': (C, H, W)} carries its own)."),
) -> None:
    _state["debug"] = debug
    _state["input_shape"] = None if input_shape is None else parse_shape(input_shape)


# The topic modules in `relulab --help` and tour order; set by relulab.cli (a topic module
# reading relulab.cli.TOPICS itself would make an import cycle).
_TOPICS: tuple = ()


def set_topics(topics: tuple) -> None:
    """Record the topic modules (called once by :mod:`relulab.cli`, after they registered
    their commands) and reflow the commands' help texts."""
    global _TOPICS
    _TOPICS = tuple(topics)
    for cmd in app.registered_commands:
        if cmd.help is None and cmd.callback is not None and cmd.callback.__doc__:
            cmd.help = reflow_help(cmd.callback.__doc__)


def reflow_help(doc: str) -> str:
    r"""A docstring as ``--help`` shows it: the lines of each paragraph joined, as rich
    re-wraps them anyway (it kept the docstring's own line breaks too, which broke lines
    mid-sentence); list items and indented lines keep their own lines.

    Example:
        >>> reflow_help("First line\n    goes on.\n\n    Example: relulab x\n    - a\n    - b")
        'First line goes on.\n\nExample: relulab x\n- a\n- b'
    """
    import inspect

    out = []
    for para in re.split(r"\n\s*\n", inspect.cleandoc(doc)):
        lines: list[str] = []
        for line in para.splitlines():
            starts_item = line.startswith(("-", "*", " ", "Example:", "$"))
            if lines and not starts_item:
                lines[-1] += " " + line.strip()
            else:
                lines.append(line)
        out.append("\n".join(lines))
    return "\n\n".join(out)


def topics() -> tuple:
    """The topic modules, in tour order."""
    return _TOPICS


JSON_OPT = typer.Option(False, "--json", help="Print the result as JSON on stdout.")


def print_json(obj: Any) -> None:
    """Write ``obj`` as JSON to stdout (plain print: rich would wrap long lines)."""
    sys.stdout.write(json.dumps(to_jsonable(obj), indent=2) + "\n")


def check_seconds(value: float | None, flag: str) -> float | None:
    """A time limit from the command line: None, or a finite number of seconds > 0 (a
    negative or NaN limit is one clear error, not an instant 'unknown')."""
    if value is not None and not (np.isfinite(value) and value > 0):
        raise RelulabError(f"{flag} must be a positive number of seconds, got {value}")
    return value


def check_output_targets(save: str | None, plot: str | None) -> None:
    """Refuse bad --save / --plot paths before the work (a failed --plot after --save was
    written left the model behind, and overwrote an existing one)."""
    from ..io import check_model_target
    from ..plot import check_figure_target

    if save:
        check_model_target(save, "--save/-o")
    if plot:
        check_figure_target(plot)


def check_gigabytes(value: float | None, flag: str = "--memory") -> float | None:
    """A memory budget from the command line: None, or a finite number of GB > 0 (inf
    would overflow the byte count; a negative or NaN one is one clear error)."""
    if value is not None and not (np.isfinite(value) and 0 < value <= 1e9):
        raise RelulabError(f"{flag} must be a positive number of GB (at most 1e9), got {value}")
    return value


def read_float(text: str) -> float:
    """``float(text)`` without Python's digit separators: "1_0" is a typo, not 10
    (ValueError, as for any text that is not a number).

    Example:
        >>> read_float("2.5e3"), read_float("-inf")
        (2500.0, -inf)
        >>> read_float("1_0")
        Traceback (most recent call last):
        ValueError: '1_0' is not a number ('_' is not read as a digit separator)
    """
    if "_" in text:
        raise ValueError(f"{text!r} is not a number ('_' is not read as a digit separator)")
    return float(text)


def parse_floats(text: str, what: str) -> np.ndarray:
    """Parse "1,2,3" or "1 2 3" into a float vector, with a clear error (an empty value
    between commas, as in "1,,2", is one: it was read as "1,2")."""
    pieces = text.split(",")
    if len(pieces) > 1 and any(not p.strip() for p in pieces):
        raise RelulabError(f"{what}: empty value in {text!r}; write numbers like 1,2,3")
    parts = [p for p in text.replace(",", " ").split() if p]
    if not parts:
        raise RelulabError(f"{what}: no numbers given; write numbers like 1,2,3")
    try:
        return np.array([read_float(p) for p in parts], dtype=np.float64)
    except ValueError:
        raise RelulabError(f"{what}: cannot read numbers from {text!r}") from None


def parse_box(spec: str | None, dim: int) -> Any:
    """Parse ``--box`` as "lo:hi" (every coordinate), or "lo1:hi1,lo2:hi2,..."."""
    from ..domain import Box

    if spec is None:
        return Box(-np.ones(dim), np.ones(dim))
    items = [s for s in spec.replace(" ", "").split(",") if s]
    try:
        pairs = [tuple(read_float(v) for v in it.split(":")) for it in items]
    except ValueError:
        raise RelulabError(f"--box: cannot read {spec!r}; write lo:hi or lo1:hi1,lo2:hi2,...") from None
    if any(len(p) != 2 for p in pairs):
        raise RelulabError(f"--box: cannot read {spec!r}; write lo:hi or lo1:hi1,lo2:hi2,...")
    if len(pairs) == 1:
        pairs = pairs * dim
    if len(pairs) != dim:
        raise RelulabError(f"--box gives {len(pairs)} intervals; the model takes {dim} inputs")
    from ..domain import DomainError

    try:
        return Box([p[0] for p in pairs], [p[1] for p in pairs])
    except DomainError as e:  # an empty or non-finite box: say which option gave it
        raise DomainError(f"--box {spec}: {e}") from None


def read_text_arg(path: str | Path, what: str = "a text file") -> str:
    """The text of a file argument (``example:NAME`` allowed), with one-line errors for a
    missing, unreadable or binary file."""
    from ..errors import FormatError

    p = Path(resolve_path(str(path)))
    if not p.is_file():
        raise FormatError(f"{path}: {'a directory, not a file' if p.is_dir() else 'no such file'}")
    try:
        return p.read_text()
    except UnicodeDecodeError as e:
        raise FormatError(f"{path}: not {what} (byte {e.start} is not UTF-8 text)") from None
    except OSError as e:
        raise FormatError(f"{path}: cannot read ({e.strerror})") from None


def box_text(box: Any) -> str:
    """A box as a person writes it: ``[-1, 1]^2`` or ``[0, 1] x [-2, 3]``."""
    lo, hi = np.asarray(box.lo, dtype=float), np.asarray(box.hi, dtype=float)
    if np.all(lo == lo[0]) and np.all(hi == hi[0]):
        return f"[{lo[0]:g}, {hi[0]:g}]^{lo.size}"
    return " x ".join(f"[{a:g}, {b:g}]" for a, b in zip(lo, hi, strict=True))


def resolve_path(path: str) -> str:
    """A file argument: ``example:NAME`` names a file shipped with relulab."""
    from ..examples import resolve

    return str(resolve(path))


def global_input_shape() -> tuple[int, ...] | None:
    """The shape given by the global ``--input-shape`` option, if any."""
    return _state.get("input_shape")


def parse_shape(text: str) -> tuple[int, ...]:
    """Parse "1,28,28" (or "1x28x28") into a shape tuple, with a clear error."""
    pieces = text.replace("x", ",").split(",")
    try:
        # every piece must be a number: "1,x" was read as (1,)
        shape = tuple(int(v) for v in pieces) if all(v.strip() for v in pieces) else ()
    except ValueError:
        shape = ()
    if not shape or min(shape) <= 0:
        raise RelulabError(f"--input-shape: cannot read {text!r}; write C,H,W (positive integers)")
    return shape


def load_model_arg(path: str, input_shape: tuple[int, ...] | None = None, needs_float: bool = True):
    """Load a model argument (``example:NAME`` allowed). Torch files are read by the one
    torch loader, with ``input_shape`` or the global ``--input-shape``.  With
    ``needs_float`` (every command that computes), an exact (Fraction) model whose entries
    exceed float64 is refused here, naming the file, rather than deep inside a command."""
    net = _load_model_arg(path, input_shape)
    if needs_float and net.is_exact:
        from ..network import NetworkError

        try:
            net.float()
        except NetworkError as e:
            raise RelulabError(f"{path}: {e}; relulab's commands compute in float64") from None
    return net


def _load_model_arg(path: str, input_shape: tuple[int, ...] | None):
    from ..io import load_model

    path = resolve_path(path)
    if Path(path).suffix.lower() in (".pt", ".pth"):
        from ..errors import FormatError
        from ..io.torch import load_torch_file

        shape = input_shape or _state.get("input_shape")
        try:
            return load_torch_file(path, shape)
        except FormatError as e:
            if shape is None and "input_shape" in str(e):
                raise FormatError(f"{path}: the model's input size is not fixed by its first "
                                  "layer; give relulab --input-shape C,H,W before the command, "
                                  "or save {'model': m, 'input_shape': (C, H, W)}") from None
            raise
    return load_model(path)


def run_app(argv: list[str]) -> None:
    """Run the app; bad input becomes one line on stderr and exit code 1 (unless --debug)."""
    # --debug is accepted anywhere on the line, not only before the command name
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    _state["debug"] = debug
    try:
        with warnings.catch_warnings():
            if not debug:  # numpy's overflow warnings are not the command's output: errors
                warnings.simplefilter("ignore", RuntimeWarning)  # are one line, answers checked
            # without standalone mode, click returns the code of a typer.Exit instead of exiting
            rc = app(args=argv, prog_name="relulab", standalone_mode=False)
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
        # a numpy scalar inside a message prints as np.float64(1.0): show the value
        msg = re.sub(r"np\.[a-z_]+\d*\(([^()]*)\)", r"\1", msg)
        if not isinstance(e, (RelulabError, OSError)):
            msg = f"{type(e).__name__}: {msg}"
        # the message is data (a file name, an option's value): not rich markup or emoji codes
        err_console.print(f"[red]error:[/red] {escape(msg)}", highlight=False, soft_wrap=True,
                          emoji=False)
        raise SystemExit(EXIT_ERROR) from None
    if isinstance(rc, int) and rc != EXIT_OK:
        raise SystemExit(rc)
