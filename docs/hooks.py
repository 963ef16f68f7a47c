"""MkDocs hook that builds the parts of the site that must follow the code base.

Nothing here lists a topic by hand, so a new topic appears on the site as soon as its
files exist:

* guides: every ``docs/*.md`` (except the landing and getting-started pages), in the
  order of ``GUIDE_ORDER`` and then alphabetically;
* API reference: one page per public module or package under ``src/relulab`` (names
  without a leading underscore, ``cli`` excepted: its interface is ``relulab --help``),
  rendered by mkdocstrings from the names in its ``__all__``; public submodules of a
  package get a section for the names the package does not re-export;
* gallery: one page per ``experiments/results/*.json`` (and ``benchmarks/results/*.json``),
  with the script's docstring (the claim), every figure ``<name>*.png`` and the measured
  numbers rendered as tables from the JSON, regenerated at every build.
"""

from __future__ import annotations

import ast
import json
import logging
import math
import re
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PKG = SRC / "relulab"

# Guides in reading order; a docs/*.md not listed here follows alphabetically.
GUIDE_ORDER = ["io", "formats", "verify", "regions", "construct", "params", "symmetry", "train"]
NOT_GUIDES = {"index.md", "getting-started.md"}
# Modules without API pages, and why.
NO_API = {"cli": "the command line; its reference is `relulab --help` and the guides"}
# Where the gallery looks for measured results, with the section title.
GALLERY_SOURCES = [("experiments", "Experiments"), ("benchmarks", "Benchmarks")]
MAX_ROWS = 40  # longer tables are cut (the JSON linked on the page has everything)
MAX_LIST = 8  # longer lists of numbers are summarised as "n values, min .. max"
MAX_DEPTH = 4  # deeper JSON nesting is summarised, not tabulated
MAX_LINES = 3000  # a gallery page's measured section stops here (the JSON has the rest)


# ---------------------------------------------------------------- discovery


def _all_names(path: Path) -> list[str] | None:
    """The literal ``__all__`` of a module file, read without importing it."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value:
            try:
                return [str(x) for x in ast.literal_eval(node.value)]
            except ValueError:
                return None
    return None


def public_modules() -> list[tuple[str, Path]]:
    """``(dotted name, file)`` of relulab and every public top-level module/package."""
    out = [("relulab", PKG / "__init__.py")]
    for p in sorted(PKG.iterdir()):
        name = p.stem if p.suffix == ".py" else p.name
        if name.startswith("_") or name in NO_API:
            continue
        if p.suffix == ".py":
            out.append((f"relulab.{name}", p))
        elif (p / "__init__.py").is_file():
            out.append((f"relulab.{name}", p / "__init__.py"))
    return out


def _submodules(pkg_init: Path) -> list[tuple[str, Path]]:
    return [(p.stem, p) for p in sorted(pkg_init.parent.glob("*.py"))
            if not p.stem.startswith("_")]


def guide_pages(docs_dir: Path) -> list[str]:
    names = [p.name for p in docs_dir.glob("*.md") if p.name not in NOT_GUIDES]
    rank = {f"{n}.md": i for i, n in enumerate(GUIDE_ORDER)}
    return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))


def _h1(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    return path.stem


def _short(title: str) -> str:
    """A sidebar label: the title up to its first colon or parenthesis."""
    return re.split(r"[:(]", title)[0].strip() or title


# ---------------------------------------------------------------- API pages


def api_page(name: str, path: Path) -> str:
    names = _all_names(path)
    exported = [n for n in (names or []) if not n.startswith("__")]
    # Without __all__, mkdocstrings shows the module's public names.
    members = [f"      members: {json.dumps(exported)}"] if names is not None else []
    lines = [f"# `{name}`", "", f"::: {name}", "    options:",
             "      show_root_heading: false", *members, ""]
    if path.name == "__init__.py" and name != "relulab":  # top-level modules have own pages
        for sub, sub_path in _submodules(path):
            extra = [n for n in (_all_names(sub_path) or []) if n not in exported]
            if extra:
                lines += [f"## `{name}.{sub}`", "", f"::: {name}.{sub}", "    options:",
                          "      show_root_heading: false", "      heading_level: 3",
                          f"      members: {json.dumps(extra)}", ""]
    return "\n".join(lines)


def api_index(mods: list[tuple[str, Path]]) -> str:
    lines = ["# API reference", "",
             "Generated from the docstrings at every build: one page per public module, "
             "listing the names in its `__all__`. Every example is a doctest that the "
             "test suite runs.", "", "| module | what |", "|---|---|"]
    for name, path in mods:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        first = " ".join(doc.split("\n\n")[0].split()) if doc else ""
        lines.append(f"| [`{name}`]({name}.md) | {_cell(first)} |")
    lines += ["", *(f"Not here: `relulab.{k}`, {v}." for k, v in NO_API.items())]
    return "\n".join(lines)


# ---------------------------------------------------------------- gallery


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.6g}"
    if isinstance(v, (int, str)):
        return str(v)
    if isinstance(v, list):
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
            if len(v) <= MAX_LIST:
                return "[" + ", ".join(_fmt(x) for x in v) + "]"
            finite = [x for x in v if not (isinstance(x, float) and math.isnan(x))]
            rng = f", {_fmt(min(finite))} .. {_fmt(max(finite))}" if finite else ""
            return f"{len(v)} values{rng}"
        if len(v) <= MAX_LIST and all(_is_scalar(x) for x in v):
            return "[" + ", ".join(_fmt(x) for x in v) + "]"
        return f"{len(v)} items"
    if isinstance(v, dict):
        return f"{len(v)} fields"
    return str(v)


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _cellable(v: Any) -> bool:
    """Shown in a table cell: scalars and lists of scalars (summarised when long)."""
    return _is_scalar(v) or (isinstance(v, list) and all(_is_scalar(x) for x in v))


def _cell(text: str) -> str:
    text = " ".join(str(text).split())
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def _records_table(rows: list[dict]) -> list[str]:
    cols: list[str] = []
    for r in rows:
        cols += [k for k, v in r.items() if _cellable(v) and k not in cols]
    if not cols:
        return []
    out = ["| " + " | ".join(_cell(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for r in rows[:MAX_ROWS]:
        out.append("| " + " | ".join(_cell(_fmt(r[c])) if c in r else "" for c in cols) + " |")
    if len(rows) > MAX_ROWS:
        out.append(f"\n*{len(rows) - MAX_ROWS} more rows in the JSON.*")
    return out + [""]


def render_json(obj: Any, title: str = "", depth: int = 0) -> list[str]:
    """Markdown tables for one JSON value: scalars as a key/value table, lists of
    objects as row tables, nested objects as subsections."""
    head = [f"{'#' * min(2 + depth, 6)} {_cell(title)}", ""] if title else []
    if (isinstance(obj, dict) and len(obj) > 1 and all(isinstance(v, dict) for v in obj.values())
            and all(_cellable(x) for v in obj.values() for x in v.values())):
        # a dict of flat records (e.g. results by dimension): one table, key first
        return head + _records_table([{"key": k, **v} for k, v in obj.items()])
    if isinstance(obj, dict):
        flat = {k: v for k, v in obj.items() if _cellable(v)}
        out = head[:]
        if flat:
            out += ["| field | value |", "|---|---|"]
            out += [f"| {_cell(k)} | {_cell(_fmt(v))} |" for k, v in flat.items()]
            out.append("")
        for k, v in obj.items():
            if k in flat:
                continue
            if depth >= MAX_DEPTH:
                out += [f"*{_cell(k)}: {_fmt(v)} (see the JSON)*", ""]
            else:
                out += render_json(v, f"{title} / {k}" if title else str(k), depth + 1)
        return out
    if isinstance(obj, list):
        if obj and all(isinstance(r, dict) for r in obj):
            table = _records_table(obj)
            nested = [k for k in obj[0] if not _cellable(obj[0][k])]
            note = ([f"*Nested fields per row ({', '.join(nested)}) are in the JSON.*", ""]
                    if nested else [])
            return head + table + note if table else head + note
        if obj and all(isinstance(r, list) for r in obj) and depth < MAX_DEPTH:
            out = head[:]
            for i, r in enumerate(obj[:MAX_ROWS]):
                out += render_json(r, f"{title} [{i}]", depth + 1)
            return out
        return head + [_cell(_fmt(obj)), ""]
    return head + [_cell(_fmt(obj)), ""]


def _plain(text: str) -> str:
    """A script docstring as Markdown: its paragraphs and ``code`` kept, while brackets
    and angle brackets outside code (usage lines such as ``[--quick]``) stay literal."""
    parts = re.split(r"(``.+?``|`[^`]+`)", text, flags=re.DOTALL)
    for i in range(0, len(parts), 2):
        parts[i] = (parts[i].replace("\\", "\\\\").replace("[", "\\[")
                    .replace("]", "\\]").replace("<", "&lt;"))
    return "".join(parts)


def _script_doc(script: Path) -> tuple[str, str]:
    """(title, body) from a script's module docstring."""
    if not script.is_file():
        return script.stem.replace("_", " "), ""
    doc = ast.get_docstring(ast.parse(script.read_text(encoding="utf-8"))) or ""
    title, _, body = doc.partition("\n\n")  # the first paragraph is the title
    return " ".join(title.split()) or script.stem, body.strip()


def gallery_items() -> list[dict]:
    items = []
    for folder, section in GALLERY_SOURCES:
        for js in sorted((ROOT / folder / "results").glob("*.json")):
            title, body = _script_doc(ROOT / folder / f"{js.stem}.py")
            pngs = sorted(js.parent.glob(f"{js.stem}*.png"))
            items.append({"slug": f"{folder}-{js.stem}", "name": js.stem, "folder": folder,
                          "section": section, "json": js, "pngs": pngs,
                          "title": title, "body": body})
    return items


def gallery_page(item: dict) -> str:
    name, folder = item["name"], item["folder"]
    lines = [f"# {_cell(item['title'])}", "",
             f"`{folder}/{name}.py` · measured numbers: [{name}.json](img/{item['slug']}.json)",
             ""]
    if item["body"]:
        lines += [_plain(item["body"]), ""]
    for png in item["pngs"]:
        lines += [f"![{png.stem}](img/{item['slug']}--{png.name})", ""]
    try:
        data = json.loads(item["json"].read_text(encoding="utf-8"))
    except ValueError as e:
        return "\n".join(lines + [f"*The JSON could not be read: {_cell(str(e))}*"])
    measured = render_json(data, "", 1) if isinstance(data, dict) else render_json(data, "values", 1)
    if len(measured) > MAX_LINES:
        measured = measured[:MAX_LINES] + ["", f"*The rest is in [{name}.json](img/{item['slug']}.json).*"]
    return "\n".join(lines + ["## Measured", ""] + measured)


def gallery_index(items: list[dict]) -> str:
    lines = ["# Gallery", "",
             "Every experiment reproduces one claim from the literature and every benchmark "
             "measures relulab against the tool a user would pick instead. These pages are "
             "regenerated from the JSON and figures in `experiments/results/` and "
             "`benchmarks/results/` at every build of the site.", ""]
    for _, section in GALLERY_SOURCES:
        group = [it for it in items if it["section"] == section]
        if not group:
            continue
        lines += [f"## {section}", "", '<div class="grid cards" markdown>', ""]
        for it in group:
            lines.append(f"-   **[{_cell(it['title'])}]({it['slug']}.md)**")
            if it["pngs"]:
                lines += ["", f"    ![{it['name']}](img/{it['slug']}--{it['pngs'][0].name})"]
            lines.append("")
        lines += ["</div>", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- mkdocs events


class _TextInBrackets(logging.Filter):
    """relulab's docstrings never use Markdown cross-references (they write Sphinx roles,
    shown as code), so an "unresolved cross-reference" whose target is not a dotted name,
    e.g. the ``W[k][i]`` of a formula, is text that rightly renders as written: report it
    as info instead of failing the strict build.  A dotted name (``[relulab.x][]``) that
    fails to resolve stays a warning."""

    _name = re.compile(r"Could not find cross-reference target '([^']*)'")

    def filter(self, record: logging.LogRecord) -> bool:
        m = self._name.search(record.getMessage())
        if m and not re.fullmatch(r"[A-Za-z_]\w*(\.\w+)+", m.group(1)):
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


# Filters act on the logger that emits; autorefs logs under its module's name.
for _name in ("mkdocs_autorefs", "mkdocs_autorefs.plugin", "mkdocs_autorefs._internal.plugin"):
    logging.getLogger(f"mkdocs.plugins.{_name}").addFilter(_TextInBrackets())



def on_config(config: Any) -> Any:
    if str(SRC) not in sys.path:
        sys.path.insert(0, str(SRC))
    docs_dir = Path(config["docs_dir"])
    guides = [{_short(_h1(docs_dir / g)): g} for g in guide_pages(docs_dir)]
    api = [{"Overview": "api/index.md"}] + [{name: f"api/{name}.md"}
                                            for name, _ in public_modules()]
    gallery = [{"Overview": "gallery/index.md"}]
    for _, section in GALLERY_SOURCES:
        group = [it for it in gallery_items() if it["section"] == section]
        if group:
            gallery.append({section: [{it["name"]: f"gallery/{it['slug']}.md"} for it in group]})
    config["nav"] = [{"Home": "index.md"}, {"Getting started": "getting-started.md"},
                     {"Guides": guides}, {"Gallery": gallery}, {"API reference": api}]
    return config


def on_files(files: Files, config: Any) -> Files:
    mods = public_modules()
    files.append(File.generated(config, "api/index.md", content=api_index(mods)))
    for name, path in mods:
        files.append(File.generated(config, f"api/{name}.md", content=api_page(name, path)))
    items = gallery_items()
    files.append(File.generated(config, "gallery/index.md", content=gallery_index(items)))
    for it in items:
        files.append(File.generated(config, f"gallery/{it['slug']}.md", content=gallery_page(it)))
        files.append(File.generated(config, f"gallery/img/{it['slug']}.json",
                                    abs_src_path=str(it["json"])))
        for png in it["pngs"]:
            files.append(File.generated(config, f"gallery/img/{it['slug']}--{png.name}",
                                        abs_src_path=str(png)))
    return files


# ---------------------------------------------------------------- griffe extension

try:
    import griffe

    class ExampleSections(griffe.Extension):
        """Read relulab's ``Example:`` docstring headers as Google-style ``Examples:``
        sections, so the doctests render as code (griffe otherwise treats the singular
        as an admonition and the doctest lines as Markdown)."""

        _header = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)
        # Sphinx roles (:func:`x`, :class:`~a.B`) read as inline code in Markdown.
        _role = re.compile(r":(?:func|class|meth|mod|attr|data|exc|obj):`~?([^`]+)`")

        def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
            if obj.docstring is not None:
                text = self._header.sub(r"\1Examples:", obj.docstring.value)
                obj.docstring.value = self._role.sub(r"`\1`", text)

except ImportError:  # griffe comes with mkdocstrings; without it there is no API reference
    pass
