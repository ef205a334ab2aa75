#!/usr/bin/env python3
"""The core's module graph: which layer reaches up, and which gateway modules go in circles.

Reads every ``.rs`` file under ``plugin/core/src`` with nothing but the standard library, maps
each file to its module (``src/gateway/listing/answer.rs`` is ``gateway::listing::answer``,
``src/gateway.rs`` and ``src/gateway/mod.rs`` are ``gateway``) and collects the paths its code
names: ``use`` trees starting at ``crate``, ``super`` or ``self``, and such paths written
inline (``crate::state::audit::Outputs``). Comments (doc links included), string and char
literals are stripped first, so only code counts. Each path is reduced to a node: a top-level
area (``wire``, ``policy``, ``state``, ``config``, ``gateway``, ``transcript``) or one of its
direct submodules (``gateway::listing``); a file counts for the node it belongs to.

The intended layering, left to right, is wire -> policy -> state -> config -> gateway (then
``transcript``, outside the product build): a module may use the layers to its left. An edge
from a left area to a right one (``policy`` naming ``gateway``) is an upward arrow.

It prints the upward arrows with every site that causes them; the cycles (strongly connected
components of more than one module) among the second-level modules of ``gateway``, with one
example site per edge inside each; and the totals.

Only named paths are seen. A method that another file adds to a type (``impl Engine`` in
``listing.rs``) and is called as ``self.method()`` is a dependency this graph does not show, so
the cycles it finds are the least there are, not all of them.

    module-graph.py [SRC] [--markdown] [--no-tests]

``SRC`` defaults to ``plugin/core/src`` beside this script. ``--markdown`` prints compact
tables instead; ``--no-tests`` leaves out code inside ``#[cfg(test)]`` modules (kept by
default, marked ``(test)``).
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

LAYERS = ["wire", "policy", "state", "config", "gateway", "transcript"]
RANK = {name: i for i, name in enumerate(LAYERS)}
INSIDE = "gateway"
REPO = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Site:
    """One place a file names another module."""

    file: str
    line: int
    path: str
    test: bool


def strip_code(text: str) -> str:
    """The text with comments, string and char literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)

    def blank(s: str) -> str:
        return "".join(c if c == "\n" else " " for c in s)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j]))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(blank(text[i:j]))
            i = j
        elif (m := re.match(r'b?r(#*)"', text[i:i + 300])) and not _word_before(text, i):
            close = '"' + m.group(1)
            j = text.find(close, i + m.end())
            j = n if j < 0 else j + len(close)
            out.append(blank(text[i:j]))
            i = j
        elif c == '"' or (c == "b" and text.startswith('b"', i) and not _word_before(text, i)):
            j = i + (2 if c == "b" else 1)
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(blank(text[i:j + 1]))
            i = j + 1
        elif c == "'":
            # A char literal ('x', '\n', '\u{1F600}'), or a lifetime ('a), which stays.
            if i + 1 < n and text[i + 1] == "\\":
                j = text.find("'", i + 3)
                j = n if j < 0 else j + 1
            elif i + 2 < n and text[i + 2] == "'":
                j = i + 3
            else:
                out.append(c)
                i += 1
                continue
            out.append(blank(text[i:j]))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _word_before(text: str, i: int) -> bool:
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")


def module_of(src: Path, file: Path) -> list[str]:
    """The module path of a file (``[]`` for the crate root)."""
    parts = list(file.relative_to(src).with_suffix("").parts)
    if parts[-1] in ("mod", "lib", "main"):
        parts.pop()
    return parts


def inline_modules(code: str) -> list[tuple[int, int, str, bool]]:
    """Every inline ``mod NAME { ... }``: its span, name and whether it is ``#[cfg(test)]``."""
    spans = []
    for m in re.finditer(r"\bmod\s+(\w+)\s*\{", code):
        depth, j = 1, m.end()
        while j < len(code) and depth:
            depth += {"{": 1, "}": -1}.get(code[j], 0)
            j += 1
        before = code[max(0, m.start() - 200):m.start()]
        test = bool(re.search(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s*)?$", before))
        spans.append((m.end(), j, m.group(1), test))
    return spans


def scope_at(spans, pos: int) -> tuple[list[str], bool]:
    """The inline modules around `pos`, outermost first, and whether one is a test module."""
    names, test = [], False
    for start, end, name, is_test in sorted(spans):
        if start <= pos < end:
            names.append(name)
            test = test or is_test
    return names, test


def use_leaves(tree: str, base: int) -> list[tuple[list[str], int]]:
    """The leaf paths of a use tree (``a::{b, c::{d as e}}``) with their offsets."""
    tokens = [(m.group(), base + m.start()) for m in re.finditer(r"\w+|::|[{},*]", tree)]
    leaves: list[tuple[list[str], int]] = []

    def walk(k: int, prefix: list[str]) -> int:
        path, start = list(prefix), None
        while k < len(tokens):
            tok, pos = tokens[k]
            if tok == "{":
                k += 1
                while k < len(tokens) and tokens[k][0] != "}":
                    k = walk(k, path)
                    if k < len(tokens) and tokens[k][0] == ",":
                        k += 1
                return k + 1
            if tok in (",", "}"):
                break
            if tok == "as":
                k += 2
                continue
            if tok not in ("::", "*"):
                start = pos if start is None else start
                if tok != "self":
                    path.append(tok)
            k += 1
        if len(path) > len(prefix) or start is not None:
            leaves.append((path, start if start is not None else base))
        return k

    walk(0, [])
    return leaves


def resolve(segs: list[str], here: list[str]) -> list[str] | None:
    """An absolute module path from a path starting at crate, super or self."""
    if not segs:
        return None
    if segs[0] == "crate":
        return segs[1:]
    if segs[0] in ("super", "self"):
        cur = list(here)
        k = 0
        while k < len(segs) and segs[k] in ("super", "self"):
            if segs[k] == "super":
                if not cur:
                    return None
                cur.pop()
            k += 1
        return cur + segs[k:]
    return None


def node_of(path: list[str], modules: set[tuple[str, ...]]) -> str | None:
    """The graph node a module path falls in: an area or one of its direct submodules."""
    if not path or path[0] not in RANK:
        return None
    if len(path) > 1 and (path[0], path[1]) in modules:
        return f"{path[0]}::{path[1]}"
    return path[0]


def collect(src: Path, with_tests: bool):
    files = sorted(src.rglob("*.rs"))
    modules = {tuple(module_of(src, f)) for f in files}
    edges: dict[tuple[str, str], list[Site]] = defaultdict(list)
    for file in files:
        here_file = module_of(src, file)
        source = node_of(here_file, modules)
        if source is None:
            continue
        rel = _shown(file)
        code = strip_code(file.read_text(encoding="utf-8"))
        spans = inline_modules(code)
        line_at = _line_index(code)
        found: list[tuple[list[str], int, str]] = []
        blanked = list(code)
        use_re = r"\buse\s+((?:crate|super|self)\b[^;]*);"
        for m in re.finditer(use_re, code):
            for segs, pos in use_leaves(m.group(1), m.start(1)):
                found.append((segs, pos, "::".join(segs)))
            blanked[m.start():m.end()] = [c if c == "\n" else " " for c in m.group()]
        rest = "".join(blanked)
        for m in re.finditer(r"(?<![\w$:])(?:crate|super|self)(?:::(?:\w+))+", rest):
            found.append((m.group().split("::"), m.start(), m.group()))
        seen = set()
        for segs, pos, text in found:
            inner, test = scope_at(spans, pos)
            if test and not with_tests:
                continue
            target = node_of(resolve(segs, here_file + inner) or [], modules)
            if target is None or target == source:
                continue
            line = line_at(pos)
            if (target, line) in seen:
                continue
            seen.add((target, line))
            edges[(source, target)].append(Site(rel, line, text, test))
    return edges


def _shown(file: Path) -> str:
    """A file's path from the repository root, when it is inside it."""
    try:
        return file.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return file.as_posix()


def _line_index(code: str):
    starts = [0] + [m.end() for m in re.finditer("\n", code)]

    def line_at(pos: int) -> int:
        lo, hi = 0, len(starts)
        while lo + 1 < hi:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if starts[mid] <= pos else (lo, mid)
        return lo + 1

    return line_at


def area(node: str) -> str:
    return node.split("::")[0]


def upward(edges):
    """(from area, to area) -> sites, for every edge against the layering."""
    up: dict[tuple[str, str], list[tuple[str, str, Site]]] = defaultdict(list)
    for (a, b), sites in edges.items():
        if RANK[area(a)] < RANK[area(b)]:
            for s in sites:
                up[(area(a), area(b))].append((a, b, s))
    return dict(sorted(up.items(), key=lambda kv: (RANK[kv[0][0]], RANK[kv[0][1]])))


def strongly_connected(nodes, succ) -> list[list[str]]:
    """Tarjan's strongly connected components, each sorted, largest first."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(succ.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(out, key=lambda c: (-len(c), c))


def cycles(edges, prefix: str):
    inner = {(a, b): s for (a, b), s in edges.items()
             if a.startswith(prefix) and b.startswith(prefix)}
    succ: dict[str, set[str]] = defaultdict(set)
    nodes = set()
    for a, b in inner:
        succ[a].add(b)
        nodes |= {a, b}
    comps = [c for c in strongly_connected(nodes, succ) if len(c) > 1]
    result = []
    for comp in comps:
        members = set(comp)
        within = sorted((a, b) for (a, b) in inner if a in members and b in members)
        result.append((comp, [(a, b, sorted(inner[(a, b)], key=_site_key)[0]) for a, b in within]))
    return result


def _site_key(s: Site):
    return (s.test, s.file, s.line)


def short(node: str) -> str:
    return node[len(INSIDE) + 2:] if node.startswith(INSIDE + "::") else node


def where(s: Site) -> str:
    return f"{s.file}:{s.line}" + (" (test)" if s.test else "")


def print_text(up, cyc):
    print(f"Layering, left may be used by right: {' -> '.join(LAYERS)}")
    print()
    print(f"(a) Upward arrows between top-level areas: {len(up)}")
    for (a, b), sites in up.items():
        print(f"  {a} -> {b}  ({len(sites)} site{'s' * (len(sites) != 1)})")
        for frm, to, s in sorted(sites, key=lambda t: _site_key(t[2])):
            print(f"    {where(s)}: {s.path}   [{frm} -> {to}]")
    print()
    print(f"(b) Cycles among the modules of `{INSIDE}`: {len(cyc)}")
    for comp, within in cyc:
        print(f"  {len(comp)} modules: {', '.join(short(c) for c in comp)}")
        print(f"    {len(within)} edges inside; one site each:")
        for a, b, s in within:
            print(f"    {short(a)} -> {short(b)}: {where(s)}: {s.path}")
    print()
    in_cycles = sorted({m for comp, _ in cyc for m in comp})
    print("(c) Totals")
    print(f"  upward arrows: {len(up)} ({sum(len(s) for s in up.values())} sites)")
    print(f"  cycles in {INSIDE}: {len(cyc)}, {len(in_cycles)} modules in them"
          + (f": {', '.join(short(m) for m in in_cycles)}" if in_cycles else ""))


def _tail(s: Site) -> str:
    """A site as `file:line`, the file from the crate's `src/` (tables stay narrow)."""
    return f"{s.file.split('/src/', 1)[-1]}:{s.line}"


def print_markdown(up, cyc):
    print("| upward arrow | sites | where |")
    print("|---|---:|---|")
    for (a, b), sites in up.items():
        files = defaultdict(list)
        for _, _, s in sorted(sites, key=lambda t: _site_key(t[2])):
            files[_tail(s).rsplit(":", 1)[0]].append(str(s.line) + ("t" if s.test else ""))
        spots = "; ".join(f"`{f}`:{','.join(lines)}" for f, lines in files.items())
        print(f"| `{a}` → `{b}` | {len(sites)} | {spots} |")
    print()
    print(f"| cycle in `{INSIDE}` | modules | an edge each (`from → to`: site) |")
    print("|---|---:|---|")
    for k, (comp, within) in enumerate(cyc, 1):
        ex = "; ".join(f"{short(a)} → {short(b)}: `{_tail(s)}`" for a, b, s in within)
        print(f"| {k}: {', '.join(short(c) for c in comp)} | {len(comp)} | {ex} |")
    in_cycles = {m for comp, _ in cyc for m in comp}
    print()
    print(f"Upward arrows: {len(up)} ({sum(len(s) for s in up.values())} sites). "
          f"Cycles in `{INSIDE}`: {len(cyc)}, {len(in_cycles)} modules in them. "
          "Lines marked `t` are in `#[cfg(test)]` code.")


def main() -> int:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the output quietly
    default = REPO / "plugin" / "core" / "src"
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("src", nargs="?", type=Path, default=default)
    ap.add_argument("--markdown", action="store_true", help="compact tables")
    ap.add_argument("--no-tests", action="store_true", help="leave out #[cfg(test)] code")
    args = ap.parse_args()
    if not args.src.is_dir():
        print(f"module-graph: {args.src} is not a directory; pass the crate's src/",
              file=sys.stderr)
        return 2
    edges = collect(args.src, with_tests=not args.no_tests)
    up, cyc = upward(edges), cycles(edges, INSIDE + "::")
    (print_markdown if args.markdown else print_text)(up, cyc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
