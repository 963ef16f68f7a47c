"""The documentation site builds with warnings as errors, every internal link and image
reference in the built HTML resolves, and (where Chromium is installed) every page loads
in a real headless browser with its images rendered."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None
        for m in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers")),
    reason="mkdocs-material / mkdocstrings not installed (pip install -e '.[docs]')",
)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                        "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
                       capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert r.returncode == 0, f"mkdocs build --strict failed:\n{r.stdout}\n{r.stderr}"
    return out


class _Refs(HTMLParser):
    """Collects the URLs a page refers to and the ids it defines."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[tuple[str, str]] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        for key in ("href", "src"):
            if a.get(key) and tag in ("a", "img", "link", "script", "source"):
                self.refs.append((tag, a[key]))


def _parse(path: Path) -> _Refs:
    p = _Refs()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def _target(page: Path, url: str, site: Path) -> Path:
    path = unquote(urlsplit(url).path)
    t = (site / path.lstrip("/")) if path.startswith("/") else (page.parent / path)
    t = t.resolve()
    return t / "index.html" if t.is_dir() else t


def test_site_builds_and_every_reference_resolves(site: Path) -> None:
    pages = sorted(site.rglob("*.html"))
    parsed = {p.resolve(): _parse(p) for p in pages}
    broken, n_refs = [], 0
    for page, refs in parsed.items():
        for tag, url in refs.refs:
            parts = urlsplit(url)
            if parts.scheme or parts.netloc or url.startswith(("mailto:", "data:", "javascript:")):
                continue  # external: not part of the site
            n_refs += 1
            target = _target(page, url, site) if parts.path else page
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: <{tag}> {url} -> missing file")
            elif parts.fragment and target.suffix == ".html":
                ids = parsed[target].ids if target in parsed else _parse(target).ids
                if unquote(parts.fragment) not in ids:
                    broken.append(f"{page.relative_to(site)}: {url} -> no anchor")
    print(f"{len(pages)} pages, {n_refs} internal references checked")
    assert not broken, "\n".join(broken)
    # what the hook must have generated: the landing, a guide per docs/*.md, the API
    # reference of every public package, a gallery page per experiment result
    names = {p.relative_to(site).as_posix() for p in pages}
    assert "index.html" in names and "getting-started/index.html" in names
    for md in (ROOT / "docs").glob("*.md"):
        if md.stem not in ("index", "getting-started"):
            assert f"{md.stem}/index.html" in names, md
    for p in (ROOT / "src" / "relulab").iterdir():
        if not p.name.startswith("_") and p.name != "cli" and (
                p.suffix == ".py" or (p / "__init__.py").is_file()):
            assert f"api/relulab.{p.stem}/index.html" in names, p
    for js in (ROOT / "experiments" / "results").glob("*.json"):
        page = site / "gallery" / f"experiments-{js.stem}" / "index.html"
        assert page.is_file(), js
        for png in js.parent.glob(f"{js.stem}*.png"):
            assert png.name in page.read_text(encoding="utf-8"), png


def test_gallery_tables_come_from_the_json(site: Path) -> None:
    """A number measured in a results JSON appears in its gallery page."""
    import json

    for js in sorted((ROOT / "experiments" / "results").glob("*.json")):
        data = json.loads(js.read_text(encoding="utf-8"))
        scalars = [v for v in data.values() if isinstance(v, (int, float))
                   and not isinstance(v, bool)] if isinstance(data, dict) else []
        html = (site / "gallery" / f"experiments-{js.stem}" / "index.html").read_text("utf-8")
        assert "<table>" in html, js
        for v in scalars:
            assert f"{v:.6g}" in html, (js, v)


def test_api_reference_shows_every_exported_name(site: Path) -> None:
    import relulab.verify

    html = (site / "api" / "relulab.verify" / "index.html").read_text(encoding="utf-8")
    for name in relulab.verify.__all__:
        assert f'id="relulab.verify.{name}"' in html, name
    # every docstring's "Example:" renders as an examples section (code), not as text
    n_sections = html.count('doc-section-title">Examples:')
    assert n_sections >= len(relulab.verify.__all__), n_sections


@pytest.mark.skipif(not Path(CHROMIUM).is_file(),
                    reason=f"{CHROMIUM} not found (apt-get install chromium) for the browser check")
def test_every_page_loads_in_headless_chromium(site: Path) -> None:
    spec = importlib.util.spec_from_file_location("check_site", ROOT / "scripts" / "check_site.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    out = mod.check(site, CHROMIUM)
    print(f"{out['pages']} pages, {out['images']} images, {out['internal_links']} links")
    assert out["pages"] == len(list(site.rglob("*.html")))
    assert out["images"] > 0 and out["internal_links"] > 0
    assert not out["problems"], out["problems"]


@pytest.mark.skipif(not Path(CHROMIUM).is_file(),
                    reason=f"{CHROMIUM} not found (apt-get install chromium) for the browser check")
def test_browser_check_finds_broken_pages(tmp_path: Path) -> None:
    """The checker itself: a page with a corrupt image, a missing image, a dead link, a
    missing anchor and a script error is reported on each count; a clean page is not."""
    spec = importlib.util.spec_from_file_location("check_site", ROOT / "scripts" / "check_site.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    shutil.copy(ROOT / "docs" / "assets" / "sawtooth4.png", tmp_path / "ok.png")
    (tmp_path / "bad.png").write_text("not a png")
    (tmp_path / "index.html").write_text(
        '<html><body><h1 id="top">x</h1><img src="ok.png"><img src="bad.png">'
        '<img src="missing.png"><a href="sub/">ok</a><a href="sub/#nope">anchor</a>'
        '<a href="gone.html">gone</a><a href="#top">self</a>'
        '<script>throw new Error("boom")</script></body></html>')
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "index.html").write_text('<html><body><p id="here">s</p></body></html>')
    out = mod.check(tmp_path, CHROMIUM)
    bad = out["problems"]
    assert list(bad) == ["index.html"]
    text = "\n".join(bad["index.html"])
    for what in ("image not rendered: http://127.0.0.1:{}/bad.png",
                 "image not rendered: http://127.0.0.1:{}/missing.png",
                 "broken link (404): http://127.0.0.1:{}/gone.html",
                 "missing anchor: http://127.0.0.1:{}/sub/#nope"):
        assert what.split("{}")[0] in text and what.split("{}")[1] in text, what
    assert "JS exception" in text and "boom" in text
    assert out["pages"] == 2 and out["images"] == 3
