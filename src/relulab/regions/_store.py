"""Stream linear regions to disk in chunks, and read them back.

Enumeration of a network with hundreds of millions of regions does not fit in memory;
:func:`write_regions` streams :func:`iter_regions` into a file chunk by chunk, so memory
stays at one chunk whatever the count.  Two formats, chosen by the suffix:

* ``.parquet``: Apache Parquet through pyarrow (``pip install relulab[parquet]``), one
  row group per chunk, one row per region; array fields are stored flat (``list<double>``)
  with their shapes implied by ``d`` (input dimension), ``m`` (outputs) and the row
  counts ``n_facets`` / ``n_vertices``.  Any Parquet reader (pandas, polars, DuckDB,
  Spark) opens it.
* ``.jsonl``: relulab's native format, one JSON object per region per line, no dependency.

The file is written atomically: a stopped run (Ctrl-C, a limit) leaves the regions
written so far in a complete file marked partial in the summary, never a torn file.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..domain import Box, Polytope
from ..errors import RelulabError, is_int_at_least, require
from ..io import atomic_path
from ..network import Network
from ..results import Result
from ._enumerate import iter_regions
from ._types import Region

__all__ = ["write_regions", "read_regions", "StoreSummary", "REGION_FORMATS"]

#: File suffixes that :func:`write_regions` and :func:`read_regions` understand.
REGION_FORMATS = (".parquet", ".jsonl")

# Regions buffered before a chunk is flushed: about 10-50 MB for typical region sizes.
DEFAULT_CHUNK = 50_000


@dataclass(frozen=True)
class StoreSummary(Result):
    """What :func:`write_regions` wrote.

    Attributes:
        path: the file.
        format: ``"parquet"`` or ``"jsonl"``.
        regions: regions written.
        chunks: chunks (Parquet row groups) written.
        status: ``"complete"`` (every region of the domain), ``"partial"`` (stopped at
            ``max_regions``, by the memory budget or by Ctrl-C: the file holds the regions
            found so far) or ``"uncertified"`` (the enumeration ran to its end but is not
            certified complete: on R^d past the artificial box, or after a sign decision
            too close to call, see ``RegionSet.certified``).
        stopped: why a partial file ends where it does (max_regions, the engine's
            memory message, Ctrl-C), else None.

    Example:
        >>> StoreSummary("r.jsonl", "jsonl", 4, 1, "complete").to_dict()["regions"]
        4
    """

    path: str
    format: str
    regions: int
    chunks: int
    status: str
    stopped: str | None = None


def _format_of(path: str | os.PathLike) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise RelulabError(f"region files: the path must be a file name, got {path!r}")
    suffix = Path(path).suffix.lower()
    if suffix not in REGION_FORMATS:
        raise RelulabError(f"{path}: region files end in {' or '.join(REGION_FORMATS)}, "
                           f"not {suffix or 'no suffix'!r}")
    return suffix[1:]


def _row(r: Region) -> dict[str, Any]:
    """One region as a flat record (arrays flattened; shapes follow from d, m, counts)."""
    C, c = r.affine
    return {
        "index": int(r.index),
        "pattern": np.asarray(r.pattern, bool).tolist(),
        "d": int(r.vertices.shape[1]) if r.vertices.ndim == 2 else int(C.shape[1]),
        "m": int(C.shape[0]),
        "n_facets": int(r.A.shape[0]),
        "A": np.asarray(r.A, float).ravel().tolist(),
        "b": np.asarray(r.b, float).tolist(),
        "facet_ids": np.asarray(r.facet_ids, np.int64).tolist(),
        "n_vertices": int(r.vertices.shape[0]),
        "vertices": np.asarray(r.vertices, float).ravel().tolist(),
        "interior_point": np.asarray(r.interior_point, float).tolist(),
        "radius": float(r.radius),
        "C": np.asarray(C, float).ravel().tolist(),
        "c": np.asarray(c, float).tolist(),
        "bounded": bool(r.bounded),
        "touches_domain": bool(r.touches_domain),
    }


def _region(row: dict[str, Any]) -> Region:
    d, m = int(row["d"]), int(row["m"])
    pattern = np.asarray(row["pattern"], bool)
    return Region(
        index=int(row["index"]),
        pattern=pattern,
        A=np.asarray(row["A"], float).reshape(int(row["n_facets"]), d),
        b=np.asarray(row["b"], float),
        facet_ids=np.asarray(row["facet_ids"], np.int64),
        vertices=np.asarray(row["vertices"], float).reshape(int(row["n_vertices"]), d),
        interior_point=np.asarray(row["interior_point"], float),
        radius=float(row["radius"]),
        affine=(np.asarray(row["C"], float).reshape(m, d), np.asarray(row["c"], float)),
        bounded=bool(row["bounded"]),
        touches_domain=bool(row["touches_domain"]),
        n_neurons=len(pattern),
    )


INTERRUPTED = "interrupted (Ctrl-C)"


def _chunks(regions: Iterable[Region], chunk: int, limit: int | None,
            stopped: list[str | None]) -> Iterator[list[dict]]:
    """Group the stream into lists of rows, at most ``limit`` rows in all; Ctrl-C, or a
    region beyond the limit, ends the stream and puts the reason in ``stopped[0]``."""
    buf: list[dict] = []
    n = 0
    try:
        for r in regions:
            if limit is not None and n >= limit:
                # a region beyond the limit exists: the file is partial
                stopped[0] = f"max_regions ({limit}) reached"
                break
            buf.append(_row(r))
            n += 1
            if len(buf) >= chunk:
                yield buf
                buf = []
    except KeyboardInterrupt:
        stopped[0] = INTERRUPTED   # the same flag as the limit once said "max_regions (None) reached"
    if buf:
        yield buf


def _write_parquet(tmp: str, chunks: Iterator[list[dict]], stopped: list[str | None]) -> tuple[int, int]:
    pa = require("pyarrow", "parquet")
    import pyarrow.parquet as pq

    schema = pa.schema([
        ("index", pa.int64()), ("pattern", pa.list_(pa.bool_())), ("d", pa.int32()),
        ("m", pa.int32()), ("n_facets", pa.int32()), ("A", pa.list_(pa.float64())),
        ("b", pa.list_(pa.float64())), ("facet_ids", pa.list_(pa.int64())),
        ("n_vertices", pa.int32()), ("vertices", pa.list_(pa.float64())),
        ("interior_point", pa.list_(pa.float64())), ("radius", pa.float64()),
        ("C", pa.list_(pa.float64())), ("c", pa.list_(pa.float64())),
        ("bounded", pa.bool_()), ("touches_domain", pa.bool_()),
    ])
    n = k = 0
    with pq.ParquetWriter(tmp, schema) as writer:
        try:
            for rows in chunks:
                table = pa.Table.from_pylist(rows, schema=schema)
                # Ctrl-C is raised only between Python steps: a row group is written whole
                # or not at all
                writer.write_table(table)
                n, k = n + len(rows), k + 1
        except KeyboardInterrupt:
            stopped[0] = INTERRUPTED
    return n, k


def _write_jsonl(tmp: str, chunks: Iterator[list[dict]], stopped: list[str | None]) -> tuple[int, int]:
    n = k = 0
    with open(tmp, "w") as fh:
        good = 0   # the file's length after the last whole chunk
        try:
            for rows in chunks:
                fh.writelines(json.dumps(row, separators=(",", ":")) + "\n" for row in rows)
                fh.flush()
                good = fh.tell()
                n, k = n + len(rows), k + 1
        except KeyboardInterrupt:
            # a Ctrl-C inside the writer escaped write_regions; it now ends the file after
            # the last whole chunk, as one between regions does
            stopped[0] = INTERRUPTED
            fh.flush()
            fh.seek(good)
            fh.truncate()
    return n, k


def write_regions(
    net: Network,
    path: str | os.PathLike,
    domain: Box | Polytope | None = None,
    *,
    chunk: int = DEFAULT_CHUNK,
    max_regions: int | None = None,
    progress: bool = False,
) -> StoreSummary:
    """Enumerate the linear regions of ``net`` in ``domain`` straight into a file.

    Memory stays at one chunk of ``chunk`` regions whatever the total; the format follows
    the suffix (``.parquet`` or ``.jsonl``, see the module docstring).  The regions and
    their order are those of :func:`relulab.regions.iter_regions`.

    Example:
        >>> import os, tempfile
        >>> from relulab import Network, Box, regions
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> p = os.path.join(tempfile.mkdtemp(), "r.jsonl")
        >>> regions.write_regions(net, p, Box([-1], [1])).regions
        2
        >>> [r.pattern.tolist() for r in regions.read_regions(p)]
        [[True, False], [False, True]]
    """
    fmt = _format_of(path)
    if isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1:
        raise RelulabError(f"write_regions: chunk must be a positive integer, got {chunk!r}")
    if fmt == "parquet":
        require("pyarrow", "parquet")  # fail before any enumeration work
    stopped: list[str | None] = [None]
    if max_regions is not None and not is_int_at_least(max_regions, 1):
        raise RelulabError(f"write_regions: max_regions must be a positive integer or None, got {max_regions!r}")
    # one region more than asked tells a complete enumeration from a cut one
    report: dict = {}
    stream = iter_regions(net, domain, progress=progress, report=report,
                          max_regions=None if max_regions is None else max_regions + 1)
    with atomic_path(path) as tmp:
        writer = _write_parquet if fmt == "parquet" else _write_jsonl
        n, k = writer(tmp, _chunks(stream, chunk, max_regions, stopped), stopped)
    why = None
    if stopped[0] is not None:
        status, why = "partial", stopped[0]
    elif not report.get("certified", False):
        status = "uncertified"
    else:
        status = "partial" if report.get("partial", True) else "complete"
    if status == "partial" and why is None:
        # the engine's reason (an allocation that failed, an interruption): an empty file
        # answered "partial" with no reason
        why = report.get("stopped") or "the enumeration ended early"
    return StoreSummary(str(path), fmt, n, k, status, why)


def read_regions(path: str | os.PathLike) -> Iterator[Region]:
    """Stream the regions of a file written by :func:`write_regions`, one chunk in memory.

    Example:
        >>> import os, tempfile
        >>> from relulab import Network, Box, regions
        >>> net = Network([[[1.0], [-1.0]], [[1.0, 1.0]]], [[0.0, 0.0], [0.0]])
        >>> p = os.path.join(tempfile.mkdtemp(), "r.jsonl")
        >>> _ = regions.write_regions(net, p, Box([-1], [1]))
        >>> sum(1 for _ in regions.read_regions(p))
        2
    """
    fmt = _format_of(path)
    if not Path(path).is_file():
        raise RelulabError(f"{path}: no such region file")
    if fmt == "parquet":
        require("pyarrow", "parquet")
        import pyarrow.parquet as pq

        try:
            pf = pq.ParquetFile(path)
        except Exception as exc:  # pyarrow raises several types for a bad file
            raise RelulabError(f"{path}: not a Parquet region file ({exc})") from None
        k = 0
        for g in range(pf.num_row_groups):
            for row in pf.read_row_group(g).to_pylist():
                k += 1
                try:
                    region = _region(row)
                except (ValueError, KeyError, TypeError, OverflowError) as exc:  # another layout
                    raise RelulabError(f"{path}: row {k} is not a region record (missing or bad {exc})") from None
                yield region
        return
    with open(path, encoding="utf-8") as fh:
        lineno = 0
        try:
            for lineno, line in enumerate(fh, 1):  # noqa: B007 - named in the error below
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    region = _region(row)
                except (ValueError, KeyError, TypeError, OverflowError) as exc:   # 1e999: inf
                    raise RelulabError(f"{path}:{lineno}: not a region record ({exc})") from None
                yield region
        except UnicodeDecodeError:
            raise RelulabError(f"{path}:{lineno + 1}: not a region file (the text is not UTF-8)") from None
