"""Draws the benchmark curves as SVG (standard library only: no plotting package needed).

Usage:
    python envoy/bench/plot.py --messages target/bench/messages.json \
        [--envoy target/bench/envoy.json] --out docs/performance-tools.svg

Design decision: one chart, cost per ``tools/list`` against the number of tools, log-log,
one line per measured series: native toolseal-core, the .wasm on wasmtime (``toolseal
bench``), and when the Envoy results are given, Envoy CPU per request with toolseal and with
the router alone. A straight line of slope 1 is linear cost; the gap between the lines is the
ratio the tables print.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

WIDTH, HEIGHT = 760, 440
LEFT, RIGHT, TOP, BOTTOM = 80, 240, 40, 60
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"]


def series_from(messages: dict, envoy: dict | None) -> dict[str, list[tuple[float, float]]]:
    """name -> [(tools, microseconds)]."""
    series: dict[str, list[tuple[float, float]]] = {}
    for row in messages["rows"]:
        if not row["scenario"].startswith("list ") or not row["scenario"].endswith("verified json"):
            continue
        for key, label in (("native_ns", "toolseal-core native"), ("wasm_ns", ".wasm on wasmtime")):
            if row.get(key):
                series.setdefault(label, []).append((row["tools"], row[key] / 1000))
    if envoy:
        for config, label in (("toolseal", "Envoy CPU/req, toolseal"), ("router", "Envoy CPU/req, router only")):
            for name, per_config in envoy["results"].items():
                if name.startswith("list") and name.endswith("_json") and config in per_config:
                    tools = int(name[4:].split("_")[0])
                    series.setdefault(label, []).append((tools, per_config[config]["cpu_us_per_request"]))
    return {k: sorted(v) for k, v in series.items()}


def svg(series: dict[str, list[tuple[float, float]]], title: str) -> str:
    """The chart."""
    xs = [x for points in series.values() for x, _ in points]
    ys = [y for points in series.values() for _, y in points if y > 0]
    x0, x1 = math.floor(math.log10(min(xs))), math.ceil(math.log10(max(xs)))
    y0, y1 = math.floor(math.log10(min(ys))), math.ceil(math.log10(max(ys)))
    x1, y1 = max(x1, x0 + 1), max(y1, y0 + 1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (math.log10(x) - x0) / (x1 - x0) * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - (math.log10(y) - y0) / (y1 - y0) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<text x="{LEFT}" y="{TOP - 15}" font-size="14">{title}</text>']
    for e in range(x0, x1 + 1):
        x = px(10 ** e)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + plot_h}" stroke="#ddd"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 18}" text-anchor="middle">{10 ** e}</text>')
    for e in range(y0, y1 + 1):
        y = py(10 ** e)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{10 ** e:g}</text>')
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 15}" text-anchor="middle">tools in the list</text>')
    out.append(f'<text x="20" y="{TOP + plot_h / 2}" text-anchor="middle" '
               f'transform="rotate(-90 20 {TOP + plot_h / 2})">µs per tools/list (log)</text>')
    for i, (name, points) in enumerate(series.items()):
        color = COLORS[i % len(COLORS)]
        path = " ".join(f"{'M' if j == 0 else 'L'}{px(x):.1f},{py(y):.1f}" for j, (x, y) in enumerate(points))
        out.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, y in points:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{color}"/>')
        ly = TOP + 10 + i * 20
        out.append(f'<line x1="{LEFT + plot_w + 15}" y1="{ly}" x2="{LEFT + plot_w + 35}" y2="{ly}" '
                   f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{LEFT + plot_w + 40}" y="{ly + 4}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description="Draw the tools/list cost curve as SVG.")
    parser.add_argument("--messages", type=Path, required=True, help="toolseal bench --json output")
    parser.add_argument("--envoy", type=Path, help="envoy/bench/run.py --json output")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    messages = json.loads(args.messages.read_text())
    envoy = json.loads(args.envoy.read_text()) if args.envoy and args.envoy.is_file() else None
    series = series_from(messages, envoy)
    if not series:
        raise SystemExit("no tools/list rows to plot")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(svg(series, "tools/list, verified path, JSON response: cost vs number of tools"))
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
