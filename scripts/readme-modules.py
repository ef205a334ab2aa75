#!/usr/bin/env python3
"""Checks that plugin/core/README.md names every module of plugin/core/src, and only those.

The modules are read from the code: every `mod name;` (any visibility) reached from
`lib.rs`, except the `tests` modules of unit tests. The README's names are read from its
"Where things are" table: the first column names an area (`gateway/`, `config.rs`, ...), and
every backticked path in a row that ends in `.rs` or `/` names a module relative to that area
(`listing/pages.rs` is `gateway::listing::pages`, `schema/` is `policy::schema`; the row of
`state/` names its own root as `state.rs`). Prints what is missing and what is named but
does not exist; exits 1 when either list is not empty.

Usage: python3 scripts/readme-modules.py
"""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "plugin/core/src"
README = ROOT / "plugin/core/README.md"

MOD = re.compile(r"^\s*(?:pub(?:\([a-z]+\))?\s+)?mod\s+([a-z_][a-z0-9_]*)\s*;", re.M)


def declared(path: Path, module: tuple) -> set:
    """The modules declared from `path` (the file of `module`), recursively."""
    found = set()
    text = path.read_text()
    for name in MOD.findall(text):
        if name == "tests":
            continue
        child = module + (name,)
        found.add(child)
        # A module's own file is `dir/name.rs` beside its parent's directory.
        base = path.parent if path.name in ("lib.rs", "mod.rs") else path.with_suffix("")
        candidates = [base / f"{name}.rs", base / name / "mod.rs"]
        child_file = next((c for c in candidates if c.exists()), None)
        if child_file is None:
            print(f"{path}: `mod {name};` has no file", file=sys.stderr)
            continue
        found |= declared(child_file, child)
    return found


def named() -> set:
    """The modules the README's table names."""
    text = README.read_text()
    start = text.index("## Where things are")
    end = text.index("\n## ", start + 1)
    names = set()
    for line in text[start:end].splitlines():
        if not line.startswith("| `"):
            continue
        cells = line.split("|")
        area_cell, rest = cells[1], "|".join(cells[2:])
        area = re.search(r"`([^`]+)`", area_cell).group(1)
        area_path = tuple(area.rstrip("/").removesuffix(".rs").split("/"))
        names.add(area_path)
        for token in re.findall(r"`([a-z_/]+(?:\.rs|/))`", rest):
            parts = token.rstrip("/").removesuffix(".rs").split("/")
            if tuple(parts) == area_path:
                continue  # the area's own root, e.g. `state.rs` in the row of `state/`
            names.add(area_path + tuple(parts))
    return names


def main() -> int:
    code = declared(SRC / "lib.rs", ())
    readme = named()
    missing = sorted(code - readme)
    stale = sorted(readme - code)
    for module in missing:
        print(f"not in the README: {'::'.join(module)}")
    for module in stale:
        print(f"in the README, not in the code: {'::'.join(module)}")
    if not missing and not stale:
        print(f"plugin/core/README.md names all {len(code)} modules, and only those")
    return 1 if missing or stale else 0


if __name__ == "__main__":
    sys.exit(main())
