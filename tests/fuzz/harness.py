"""Fuzzing harness for relulab's loaders and command-line parsers (issue 12).

The contract under test: every input either loads or raises relulab's own error class
(:class:`relulab.errors.RelulabError`, or ``OSError`` for the file system) with a one-line
message; no other exception, no hang (each case runs under a time limit), and a
command that fails writes nothing.

Inputs are made from valid seeds by two kinds of mutation: byte-level (flips,
deletions, insertions, truncation) and structure-aware (ONNX graphs with mutated
nodes, attributes, initializers and shapes; VNN-LIB and NNet text mutated token by token;
``.npz`` archives with mutated arrays; torch files holding odd modules and objects).
Everything is seeded: the same ``(kind, seed)`` gives the same cases.

Used by ``tests/fuzz/test_fuzz.py`` (a small budget in CI) and ``benchmarks/fuzz.py``
(a large one).
"""

from __future__ import annotations

import io
import os
import random
import re
import signal
import tempfile
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from relulab.errors import RelulabError

KINDS = ("onnx", "vnnlib", "nnet", "npz", "pt", "cli")
# A case running longer than this is a hang. Generous: mutated shapes can ask for a
# (legitimately slow) multi-gigabyte sparse convolution before the memory budget stops it.
CASE_SECONDS = 60


class Hang(Exception):
    """A case exceeded CASE_SECONDS."""


@contextmanager
def time_limit(seconds: float):
    """SIGALRM-based limit (main thread, Unix): raises :class:`Hang` when it expires."""
    def on_alarm(signum, frame):
        raise Hang(f"no answer within {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@dataclass
class Stats:
    """Outcome counts of one fuzzing run; ``failures`` holds (case, what went wrong)."""

    kind: str
    cases: int = 0
    loaded: int = 0
    rejected: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "cases": self.cases, "loaded": self.loaded,
                "rejected": self.rejected, "failures": len(self.failures)}


# ------------------------------------------------------------------ byte mutations
def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 6)):
        op = rng.random()
        if op < 0.4 and b:
            b[rng.randrange(len(b))] = rng.randrange(256)
        elif op < 0.6 and b:
            i = rng.randrange(len(b))
            del b[i:i + rng.randint(1, 32)]
        elif op < 0.8:
            i = rng.randrange(len(b) + 1)
            b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        elif b:
            b = b[:rng.randrange(len(b))]
    return bytes(b)


# ------------------------------------------------------------------ seeds
def _example(name: str) -> Path:
    from relulab.examples import example_path

    return example_path(name)


def onnx_seeds() -> list[bytes]:
    """Valid ONNX models: dense (from relulab), convolutional with batch norm and pooling,
    and a residual block (built with onnx.helper), float32 and float64."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)

    def init(name, shape, dtype=np.float32):
        return numpy_helper.from_array(rng.normal(size=shape).astype(dtype), name)

    conv = helper.make_graph(
        [helper.make_node("Conv", ["x", "w1", "b1"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
         helper.make_node("BatchNormalization", ["c", "g", "be", "mu", "var"], ["n"]),
         helper.make_node("Relu", ["n"], ["r"]),
         helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
         helper.make_node("Flatten", ["p"], ["f"]),
         helper.make_node("Gemm", ["f", "w2", "b2"], ["y"], transB=1)],
        "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])],
        [init("w1", (2, 1, 3, 3)), init("b1", (2,)), init("g", (2,)), init("be", (2,)),
         init("mu", (2,)), numpy_helper.from_array(np.abs(rng.normal(size=2)).astype(np.float32) + 0.5, "var"),
         init("w2", (3, 8)), init("b2", (3,))])
    res = helper.make_graph(
        [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
         helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("Gemm", ["r", "w2", "b2"], ["z"], transB=1),
         helper.make_node("Add", ["z", "x"], ["s"]),
         helper.make_node("Relu", ["s"], ["t"]),
         helper.make_node("Gemm", ["t", "w3", "b3"], ["y"], transB=1)],
        "residual",
        [helper.make_tensor_value_info("x", TensorProto.DOUBLE, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.DOUBLE, ["N", 2])],
        [init("w1", (5, 4), np.float64), init("b1", (5,), np.float64),
         init("w2", (4, 5), np.float64), init("b2", (4,), np.float64),
         init("w3", (2, 4), np.float64), init("b3", (2,), np.float64)])
    seeds = [_example("tiny_2d.onnx").read_bytes()]
    for g in (conv, res):
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        seeds.append(m.SerializeToString())
    for s in seeds:
        onnx.checker.check_model(onnx.load_from_string(s))
    return seeds


_OPS = ("Relu", "Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Conv", "MaxPool", "AveragePool",
        "Flatten", "Reshape", "Transpose", "Concat", "Slice", "Gather", "BatchNormalization",
        "Softmax", "Sigmoid", "Tanh", "LSTM", "Loop", "If", "Foo", "", "Identity", "Clip",
        "LeakyRelu", "PRelu", "Pad", "Squeeze", "Unsqueeze", "Constant", "Shape", "Cast")


def mutate_onnx(data: bytes, rng: random.Random) -> bytes:
    """Structure-aware ONNX mutation (falls back to bytes when the seed does not parse)."""
    import onnx
    from onnx import helper, numpy_helper

    try:
        m = onnx.load_from_string(data)
    except Exception:  # noqa: BLE001 - a seed that no longer parses is mutated as bytes
        return mutate_bytes(data, rng)
    g = m.graph
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(12)
        nodes = list(g.node)
        if op == 0 and nodes:                                   # another operator
            rng.choice(nodes).op_type = rng.choice(_OPS)
        elif op == 1 and nodes:                                 # drop a node
            g.node.remove(rng.choice(nodes))
        elif op == 2 and nodes:                                 # dangling / renamed input
            n = rng.choice(nodes)
            if n.input:
                n.input[rng.randrange(len(n.input))] = rng.choice(["", "nope", "x", "y", n.output[0]])
        elif op == 3 and nodes:                                 # odd attribute values
            n = rng.choice(nodes)
            name = rng.choice(["kernel_shape", "strides", "pads", "dilations", "group", "axis",
                               "transA", "transB", "alpha", "auto_pad", "perm", "epsilon"])
            val = rng.choice([[0], [-1], [2, 2], [1, 1, 1, 1], [100, 100], 0, -3, 7, 1e300, "VALID",
                              "SAME_UPPER", float("nan")])
            for a in list(n.attribute):
                if a.name == name:
                    n.attribute.remove(a)
            n.attribute.append(helper.make_attribute(name, val))
        elif op == 4 and g.initializer:                         # reshape / poison an initializer
            t = rng.choice(list(g.initializer))
            arr = numpy_helper.to_array(t).copy()
            choice = rng.randrange(4)
            if choice == 0 and arr.size:
                bad = [np.nan, np.inf, -np.inf, 1e38] if arr.dtype.kind == "f" else [-1, 0, 2**31 - 1]
                arr.reshape(-1)[rng.randrange(arr.size)] = rng.choice(bad)
            elif choice == 1:
                arr = arr.reshape(-1)[: max(0, arr.size - rng.randint(1, 3))]
            elif choice == 2:
                arr = np.concatenate([arr.reshape(-1), [1.0]]).astype(arr.dtype)
            else:
                arr = arr.astype(rng.choice([np.int64, np.float16, np.int8, np.bool_]))
            t.CopyFrom(numpy_helper.from_array(arr, t.name))
        elif op == 5 and g.initializer:                         # drop an initializer
            g.initializer.remove(rng.choice(list(g.initializer)))
        elif op == 6:                                           # odd input shape
            vi = rng.choice(list(g.input) or [None])
            if vi is not None and vi.type.tensor_type.shape.dim:
                d = rng.choice(list(vi.type.tensor_type.shape.dim))
                v = rng.choice([0, -1, 1, 2, 3, 10**6, None])
                if v is None:
                    d.dim_param = "batch"
                else:
                    d.dim_value = v
        elif op == 7 and nodes:                                 # duplicate a node (repeated output)
            g.node.append(rng.choice(nodes))
        elif op == 8 and nodes:                                 # a cycle
            n = rng.choice(nodes)
            if n.input:
                n.input[0] = nodes[-1].output[0]
        elif op == 9:                                           # odd element type of the input
            vi = rng.choice(list(g.input) or [None])
            if vi is not None:
                vi.type.tensor_type.elem_type = rng.choice([1, 6, 7, 9, 10, 11, 16])
        elif op == 10:                                          # opset / ir version
            if m.opset_import:
                m.opset_import[0].version = rng.choice([1, 7, 11, 13, 17, 21, 99])
        elif op == 11 and g.output:                             # outputs renamed or removed
            if rng.random() < 0.5:
                g.output[0].name = "nope"
            else:
                g.output.remove(g.output[0])
    try:
        out = m.SerializeToString()
    except Exception:  # noqa: BLE001 - protobuf refused (e.g. an invalid attribute)
        return mutate_bytes(data, rng)
    return mutate_bytes(out, rng) if rng.random() < 0.15 else out


_TOKEN = re.compile(r"\(|\)|[^\s()]+")
_VNN_VOCAB = ("(", ")", "assert", "declare-const", "Real", "Int", "<=", ">=", "<", "=", "and", "or",
              "not", "+", "-", "*", "X_0", "X_1", "X_2", "X_99", "Y_0", "Y_1", "Y_7", "Z_0", "nan",
              "inf", "-inf", "1e999", "-1e-999", "0", "1", "-1", "0.5", "1/3", "#x1F", "\"s\"", ";")


def mutate_tokens(text: str, rng: random.Random, vocab: tuple[str, ...]) -> str:
    toks = _TOKEN.findall(text)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        op = rng.randrange(5)
        i = rng.randrange(len(toks)) if toks else 0
        if op == 0 and toks:
            del toks[i]
        elif op == 1 and toks:
            toks.insert(i, toks[i])
        elif op == 2:
            toks.insert(i, rng.choice(vocab))
        elif op == 3 and toks:
            toks[i] = rng.choice(vocab)
        elif op == 4 and len(toks) > 1:
            j = rng.randrange(len(toks))
            toks[i], toks[j] = toks[j], toks[i]
    return " ".join(toks)


_NUM = re.compile(r"-?\d+(\.\d*)?([eE][-+]?\d+)?")
_NNET_VOCAB = ("nan", "inf", "-inf", "0", "-1", "1e308", "99999999999", "", ",", ",,", "//", "x",
               "2", "5", "1.5")


def mutate_nnet(text: str, rng: random.Random) -> str:
    lines = text.splitlines()
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(5)
        i = rng.randrange(len(lines)) if lines else 0
        if op == 0 and lines:
            del lines[i]
        elif op == 1 and lines:
            lines.insert(i, lines[i])
        elif op == 2 and lines:                              # replace one number
            nums = list(_NUM.finditer(lines[i]))
            if nums:
                mt = rng.choice(nums)
                lines[i] = lines[i][:mt.start()] + rng.choice(_NNET_VOCAB) + lines[i][mt.end():]
        elif op == 3 and lines:                              # drop or add a field
            parts = lines[i].split(",")
            if rng.random() < 0.5 and len(parts) > 1:
                del parts[rng.randrange(len(parts))]
            else:
                parts.insert(rng.randrange(len(parts) + 1), rng.choice(_NNET_VOCAB))
            lines[i] = ",".join(parts)
        elif op == 4:
            lines = lines[:i]
    return "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")


def mutate_npz(data: bytes, rng: random.Random) -> bytes:
    if rng.random() < 0.3:
        return mutate_bytes(data, rng)
    with np.load(io.BytesIO(data), allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    keys = list(arrays)
    for _ in range(rng.randint(1, 3)):
        k = rng.choice(keys) if keys else None
        op = rng.randrange(7)
        if k is None:
            break
        a = arrays[k]
        if op == 0:
            del arrays[k]
            keys.remove(k)
        elif op == 1 and a.size and a.dtype.kind == "f":
            a = a.copy()
            a.reshape(-1)[rng.randrange(a.size)] = rng.choice([np.nan, np.inf, -np.inf])
            arrays[k] = a
        elif op == 2:
            arrays[k] = a.reshape(-1)[: max(0, a.size - 1)]
        elif op == 3:
            arrays[k] = a.reshape(-1) if a.ndim > 1 else a.reshape(1, -1)
        elif op == 4:
            arrays[k] = np.array(rng.choice(["text", "1/3", "nan"]))
        elif op == 5 and a.dtype.kind in "fiub":
            arrays[k] = a.astype(rng.choice([np.int64, np.float32, np.bool_, np.complex128]))
        else:
            arrays[rng.choice(["extra", "weights_9", "biases_-1", "format", "exact"])] = a
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _pt_objects(rng: random.Random):
    """Odd things a .pt file may hold."""
    import torch

    nn = torch.nn
    d = rng.randint(1, 4)
    choices = [
        lambda: nn.Sequential(nn.Linear(d, 3), nn.ReLU(), nn.Linear(3, 1)),
        lambda: nn.Sequential(nn.Linear(d, 3), nn.Sigmoid(), nn.Linear(3, 1)),
        lambda: nn.Sequential(nn.Linear(d, 3), nn.ReLU(), nn.Linear(4, 1)),
        lambda: nn.Sequential(nn.Conv2d(1, 2, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8, 1)),
        lambda: nn.Sequential(nn.Conv2d(1, 2, 3, dilation=2, groups=1), nn.ReLU(), nn.MaxPool2d(2)),
        lambda: nn.Sequential(nn.LSTM(d, 2)),
        lambda: nn.Sequential(),
        lambda: nn.Linear(d, 2),
        lambda: nn.Sequential(nn.Linear(d, 2)).state_dict(),
        lambda: {"model": nn.Sequential(nn.Linear(d, 2)), "input_shape": rng.choice([(d,), (0,), "x", (1, -1), None])},
        lambda: {"model": "not a module"},
        lambda: [1, 2, 3],
        lambda: torch.tensor([float("nan")]),
        lambda: "a string",
        lambda: nn.Sequential(nn.BatchNorm1d(d), nn.Linear(d, 1)),
        lambda: nn.Sequential(nn.Linear(d, 2), nn.Dropout(0.5), nn.LeakyReLU(0.1), nn.Linear(2, 1)),
        lambda: nn.Sequential(nn.Linear(d, 2), nn.Softmax(dim=-1)),
        lambda: nn.Sequential(nn.Linear(d, 2), nn.Hardtanh(), nn.Linear(2, 1)),
    ]
    obj = rng.choice(choices)()
    if isinstance(obj, nn.Module) and rng.random() < 0.3:
        with torch.no_grad():
            for p in obj.parameters():
                p.view(-1)[0] = rng.choice([float("nan"), float("inf"), 1e30])
                break
    return obj


def pt_case(rng: random.Random) -> bytes:
    import torch

    buf = io.BytesIO()
    torch.save(_pt_objects(rng), buf)
    data = buf.getvalue()
    return mutate_bytes(data, rng) if rng.random() < 0.3 else data


# ------------------------------------------------------------------ running cases
def _check_message(e: BaseException) -> str | None:
    """What is wrong with an error, or None if it is relulab's own one-line error."""
    if isinstance(e, Hang):
        return f"hang: {e}"
    if not isinstance(e, (RelulabError, OSError)):
        tb = "".join(traceback.format_exception(type(e), e, e.__traceback__)[-3:])
        return f"{type(e).__name__}: {str(e)[:200]}\n{tb}"
    msg = str(e).strip()
    if not msg:
        return f"{type(e).__name__} with an empty message"
    if re.search(r"np\.(float|int|bool|str_)\w*\(", msg):
        return f"numpy repr in the message: {msg[:200]}"
    return None


def _load(kind: str, path: Path):
    from relulab.io import load_model
    from relulab.io.vnnlib import load_vnnlib

    if kind == "vnnlib":
        return load_vnnlib(path)
    return load_model(path)


def cases(kind: str, n: int, seed: int) -> Iterator[tuple[str, bytes]]:
    """``n`` fuzzed inputs for a loader kind: (label, bytes)."""
    rng = random.Random(f"{kind}-{seed}")
    if kind == "onnx":
        seeds = onnx_seeds()
        for i in range(n):
            yield f"onnx#{i}", mutate_onnx(rng.choice(seeds), rng)
    elif kind == "vnnlib":
        seeds = [_example(f"tiny_2d_{s}.vnnlib").read_text() for s in ("holds", "violated")]
        seeds.append("(declare-const X_0 Real)(declare-const X_1 Real)(declare-const Y_0 Real)"
                     "(declare-const Y_1 Real)(assert (or (and (>= X_0 0) (<= X_0 1) (>= X_1 -1)"
                     " (<= X_1 1)) (and (>= X_0 -1) (<= X_0 0) (>= X_1 0) (<= X_1 1))))"
                     "(assert (or (and (<= Y_0 Y_1)) (and (>= Y_0 0.5) (<= Y_1 -0.5))))")
        for i in range(n):
            text = mutate_tokens(rng.choice(seeds), rng, _VNN_VOCAB)
            yield f"vnnlib#{i}", text.encode()
    elif kind == "nnet":
        seed_text = _example("tiny_2d.nnet").read_text()
        for i in range(n):
            text = mutate_nnet(seed_text, rng)
            yield f"nnet#{i}", (mutate_bytes(text.encode(), rng) if rng.random() < 0.1 else text.encode())
    elif kind == "npz":
        seeds = [_example("tiny_2d.npz").read_bytes(), _example("xor.npz").read_bytes()]
        for i in range(n):
            yield f"npz#{i}", mutate_npz(rng.choice(seeds), rng)
    elif kind == "pt":
        for i in range(n):
            yield f"pt#{i}", pt_case(rng)
    else:
        raise ValueError(kind)


def fuzz_loader(kind: str, n: int, seed: int = 0, folder: str | None = None) -> Stats:
    """Run ``n`` cases of one loader kind; every outcome is counted in the returned Stats."""
    st = Stats(kind)
    folder = folder or tempfile.mkdtemp(prefix=f"relulab-fuzz-{kind}-")
    suffix = {"onnx": ".onnx", "vnnlib": ".vnnlib", "nnet": ".nnet", "npz": ".npz", "pt": ".pt"}[kind]
    for label, data in cases(kind, n, seed):
        path = Path(folder) / f"case{suffix}"
        path.write_bytes(data)
        st.cases += 1
        try:
            with time_limit(CASE_SECONDS):
                _load(kind, path)
            st.loaded += 1
        except BaseException as e:  # noqa: BLE001 - classifying every outcome is the point
            if isinstance(e, KeyboardInterrupt):
                raise
            bad = _check_message(e)
            if bad is None:
                st.rejected += 1
            else:
                keep = Path(folder) / f"fail-{label.replace('#', '-')}{suffix}"
                keep.write_bytes(data)
                st.failures.append((str(keep), bad))
    return st


# ------------------------------------------------------------------ the command line
_CLI_SEEDS = (
    ["info", "example:tiny_2d.onnx"],
    ["eval", "example:tiny_2d.onnx", "--x", "0.1,0.2"],
    ["eval", "example:tiny_2d.npz", "--x", "0.1 0.2", "--x", "1,1"],
    ["convert", "example:tiny_2d.nnet", "{out}.onnx"],
    ["range", "example:tiny_2d.onnx", "--box", "-1:1", "--time-limit", "2"],
    ["verify", "example:tiny_2d.onnx", "example:tiny_2d_holds.vnnlib", "--timeout", "2"],
    ["pathnorm", "example:tiny_2d.onnx", "--q", "1", "2", "inf"],
    ["equiv", "example:tiny_2d.onnx", "example:tiny_2d.nnet", "--box", "0:1", "--timeout", "2"],
    ["regions", "example:tiny_2d.onnx", "--box", "-1:1", "--count"],
    ["construct", "max", "--n", "4", "-o", "{out}.npz"],
    ["fit-minnorm", "example:data_1d.csv", "--bias", "free"],
    ["canonical", "example:tiny_2d.onnx", "-o", "{out}.npz"],
    ["reduce", "example:tiny_2d.onnx", "-o", "{out}.npz", "--box", "-1:1", "--timeout", "2"],
    ["examples", "path", "tiny_2d.onnx"],
)
_CLI_VOCAB = ("nan", "inf", "-inf", "1e999", "-1", "0", "", ",", ":", "::", "0:1:2", "1:0", "a:b",
              "--box", "--json", "--x", "--timeout", "--q", "-1e-300", "example:nope",
              "/nonexistent/model.onnx", "{out}.nnet", "{out}.xyz", "x" * 300, "1,2,3,4,5,6,7",
              "--max-regions", "5", "--n", "1", "--time-limit", "--debug")


def cli_case(rng: random.Random, out: str) -> list[str]:
    args = list(rng.choice(_CLI_SEEDS))
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(4)
        i = rng.randrange(1, len(args)) if len(args) > 1 else 1
        if op == 0 and len(args) > 1:
            del args[i]
        elif op == 1:
            args.insert(i, rng.choice(_CLI_VOCAB))
        elif op == 2 and len(args) > 1:
            args[i] = rng.choice(_CLI_VOCAB)
        else:
            args.insert(i, args[min(i, len(args) - 1)])
    return [a.replace("{out}", out) for a in args if a != "--debug"]


def fuzz_cli(n: int, seed: int = 0, folder: str | None = None,
             run: Callable[[list[str]], None] | None = None) -> Stats:
    """Mutated command lines through the real entry point (with --debug, so that any
    exception surfaces): each must end with SystemExit 0-3 or relulab's own error, and a
    failing command must leave no output file behind."""
    from relulab.cli import main

    run = run or (lambda argv: main(["--debug", *argv]))
    st = Stats("cli")
    rng = random.Random(f"cli-{seed}")
    folder = folder or tempfile.mkdtemp(prefix="relulab-fuzz-cli-")
    for i in range(n):
        out = os.path.join(folder, f"out{i}")
        argv = cli_case(rng, out)
        st.cases += 1
        problem = None
        ok = False
        try:
            with time_limit(CASE_SECONDS):
                run(argv)
            ok = True
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            ok = code == 0
            if code not in (0, 1, 2, 3):
                problem = f"exit code {e.code!r}"
        except BaseException as e:  # noqa: BLE001
            if isinstance(e, KeyboardInterrupt):
                raise
            # click's usage errors (bad option values, missing arguments) surface under
            # --debug as exceptions with an exit code; without it they exit 2 with a message
            if hasattr(e, "exit_code") and hasattr(e, "show") and not isinstance(e, Hang):
                if e.exit_code != 2:
                    problem = f"usage error with exit code {e.exit_code}"
            else:
                problem = _check_message(e)
        leftovers = [p for p in Path(folder).glob(f"out{i}.*")]
        if not ok and problem is None and leftovers:
            problem = f"failed but wrote {[p.name for p in leftovers]}"
        for p in leftovers:
            p.unlink()
        if problem is None:
            st.loaded += ok
            st.rejected += not ok
        else:
            st.failures.append((" ".join(argv), problem))
    return st
