"""Load every page of the built documentation site in headless Chromium and check it.

Serves the site (``mkdocs build`` output) on 127.0.0.1, drives one Chromium through the
DevTools protocol over a pipe (``--remote-debugging-pipe``: no websocket library needed)
and, for every HTML page, checks that

* the page loads (HTTP 200, the load event fires) without a JavaScript exception;
* every request it makes (CSS, scripts, images) succeeds;
* every image has rendered (``complete`` and ``naturalWidth > 0``);
* every link to the site resolves (HTTP 200) and, when it names an anchor, the target
  page has an element with that id.

Prints one line per page with a problem, then a summary; exits 1 when anything failed.

Run:  python scripts/check_site.py [--site site] [--build] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE_TIMEOUT = 30.0  # seconds for one page to fire its load event

# Runs in the page after the load event: images, links and element ids.
PAGE_PROBE = """(() => {
  const imgs = [...document.images].map(i => ({src: i.currentSrc || i.src,
      ok: i.complete && i.naturalWidth > 0, w: i.naturalWidth}));
  const links = [...document.querySelectorAll('a[href]')].map(a => a.href);
  const ids = [...document.querySelectorAll('[id]')].map(e => e.id);
  return JSON.stringify({imgs, links, ids, title: document.title});
})()"""


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        # the browser drops connections it no longer needs when it leaves a page
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = functools.partial(_Quiet, directory=str(site))
    httpd = _Server(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd, f"http://127.0.0.1:{httpd.server_address[1]}/"


class Browser:
    """Chromium driven by DevTools messages on fds 3 (to it) and 4 (from it)."""

    def __init__(self, exe: str) -> None:
        self.profile = tempfile.mkdtemp(prefix="relulab-chromium-")
        to_r, self._to_w = os.pipe()
        self._from_r, from_w = os.pipe()

        def child_fds() -> None:
            # Put the pipe ends at the fds Chromium expects; go through fds >= 10 first
            # so that neither end is overwritten when it already sits at 3 or 4.
            import fcntl

            high_r = fcntl.fcntl(to_r, fcntl.F_DUPFD, 10)
            high_w = fcntl.fcntl(from_w, fcntl.F_DUPFD, 10)
            os.dup2(high_r, 3)
            os.dup2(high_w, 4)

        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
             "--remote-debugging-pipe", f"--user-data-dir={self.profile}", "about:blank"],
            close_fds=False, preexec_fn=child_fds,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict] = []

    def _read(self, deadline: float) -> dict:
        import select

        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_r], [], [], left)[0]:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._from_r, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self._buf += chunk
        msg, _, self._buf = self._buf.partition(b"\0")
        return json.loads(msg)

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float = PAGE_TIMEOUT) -> dict:
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, session: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            for i, ev in enumerate(self.events):
                if ev.get("method") == method and ev.get("sessionId") == session:
                    return self.events.pop(i)
            self.events.append(self._read(deadline))

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.profile, ignore_errors=True)


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def _page_path(url: str, base: str) -> str:
    """The site-relative page a URL names, '' for the root (fragment dropped)."""
    path = urllib.parse.urlsplit(url).path
    rel = path[len(urllib.parse.urlsplit(base).path):]
    return rel if not rel.endswith("index.html") else rel[: -len("index.html")]


def check(site: Path, exe: str) -> dict:
    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    httpd, base = serve(site)
    browser = Browser(exe)
    problems: dict[str, list[str]] = {}
    ids: dict[str, set[str]] = {}
    links: list[tuple[str, str]] = []
    n_images = 0
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid = browser.send("Target.attachToTarget",
                           {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Network", "Runtime"):
            browser.send(f"{domain}.enable", session=sid)
        for page in pages:
            url = base + page
            bad = problems.setdefault(page, [])
            browser.events.clear()
            nav = browser.send("Page.navigate", {"url": url}, session=sid)
            if nav.get("errorText"):
                bad.append(f"navigation failed: {nav['errorText']}")
                continue
            try:
                browser.wait_event("Page.loadEventFired", sid, PAGE_TIMEOUT)
            except TimeoutError:
                bad.append("load event did not fire")
                continue
            res = browser.send("Runtime.evaluate", {"expression": PAGE_PROBE,
                                                    "returnByValue": True}, session=sid)
            probe = json.loads(res["result"]["value"])
            for ev in browser.events:
                m, p = ev.get("method"), ev.get("params", {})
                if (m == "Network.responseReceived" and p["response"]["status"] >= 400
                        and not p["response"]["url"].endswith("/favicon.ico")):
                    # a 4xx is a missing resource (the browser asks for /favicon.ico
                    # on its own; a favicon the page names is checked as an image/link)
                    bad.append(f"HTTP {p['response']['status']}: {p['response']['url']}")
                elif m == "Network.loadingFailed" and not p.get("canceled"):
                    bad.append(f"request failed ({p.get('errorText')})")
                elif m == "Runtime.exceptionThrown":
                    d = p["exceptionDetails"]
                    bad.append(f"JS exception: {d.get('text', '')} "
                               f"{d.get('exception', {}).get('description', '')}".strip())
            for img in probe["imgs"]:
                n_images += 1
                if not img["ok"]:
                    bad.append(f"image not rendered: {img['src']}")
            ids[_page_path(url, base)] = set(probe["ids"])
            links += [(page, link) for link in probe["links"]]
        checked: dict[str, int] = {}
        for page, link in links:
            if not link.startswith(base):
                continue  # external links are not followed (the check runs offline)
            no_frag, _, frag = link.partition("#")
            if no_frag not in checked:
                checked[no_frag] = _status(no_frag)
            if checked[no_frag] != 200:
                problems[page].append(f"broken link ({checked[no_frag]}): {link}")
            elif frag and no_frag.endswith((".html", "/")):
                known = ids.get(_page_path(no_frag, base))
                if known is not None and urllib.parse.unquote(frag) not in known:
                    problems[page].append(f"missing anchor: {link}")
    finally:
        browser.close()
        httpd.shutdown()
    internal = sum(1 for _, link in links if link.startswith(base))
    return {"pages": len(pages), "images": n_images, "internal_links": internal,
            "problems": {k: v for k, v in problems.items() if v}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--site", default=str(ROOT / "site"), help="the built site (mkdocs build)")
    ap.add_argument("--build", action="store_true", help="run mkdocs build --strict first")
    ap.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    args = ap.parse_args()
    site = Path(args.site)
    if args.build:
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                        "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)], check=True)
        print(f"built {site} in {time.perf_counter() - t:.1f} s")
    if not (site / "index.html").is_file():
        print(f"{site}: no built site (run mkdocs build, or pass --build)", file=sys.stderr)
        return 1
    if not Path(args.chromium).is_file():
        print(f"{args.chromium}: Chromium not found (apt-get install chromium)", file=sys.stderr)
        return 1
    t = time.perf_counter()
    out = check(site, args.chromium)
    for page, bad in out["problems"].items():
        for b in bad:
            print(f"{page}: {b}")
    print(f"{out['pages']} pages, {out['images']} images, {out['internal_links']} internal "
          f"links checked in Chromium in {time.perf_counter() - t:.1f} s: "
          f"{'all pages load, no broken links, all images render' if not out['problems'] else str(sum(map(len, out['problems'].values()))) + ' problems'}")
    return 1 if out["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
