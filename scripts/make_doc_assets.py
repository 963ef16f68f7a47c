"""Draw the small pictures of the documentation site's landing page into docs/assets/.

Every picture is computed by relulab itself (exact regions, exact slices), so the
landing page shows what the library does rather than an illustration of it.

Run:  python scripts/make_doc_assets.py [--out docs/assets]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from relulab import Box, plot, regions
from relulab.construct import sawtooth
from relulab.examples import tiny_2d


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "assets"))
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    net = tiny_2d()
    window = (-2.0, 2.0, -2.0, 2.0)

    fig = plot.regions2d(net, window=window, title="tiny_2d: every linear region")
    fig.set_size_inches(4.0, 3.6)
    fig.savefig(out / "regions_tiny2d.png", dpi=90)

    fig = plot.regions2d(net, window=window, color="output", contours=12,
                         title="tiny_2d: output, exact level lines")
    fig.set_size_inches(4.0, 3.6)
    fig.savefig(out / "output_tiny2d.png", dpi=90)

    G = regions.graph(regions.enumerate(net, Box([window[0], window[2]], [window[1], window[3]])))
    fig = plot.region_graph(G, title="tiny_2d: region adjacency graph")
    fig.set_size_inches(4.0, 3.6)
    fig.savefig(out / "graph_tiny2d.png", dpi=90)

    fig = plot.function1d(sawtooth(4).float(), 0.0, 1.0, title="sawtooth(4): 16 exact pieces")
    fig.set_size_inches(4.0, 2.6)
    fig.savefig(out / "sawtooth4.png", dpi=90)
    for p in sorted(out.glob("*.png")):
        print(f"{p}  {p.stat().st_size // 1024} KiB")


if __name__ == "__main__":
    main()
