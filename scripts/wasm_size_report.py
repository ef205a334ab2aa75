#!/usr/bin/env python3
"""Where the bytes of a .wasm go: its sections, its code by crate and by function.

Reads a module built with its name section (``--profile wasm-names``, see
scripts/wasm-size-report.sh), with nothing but the standard library: the code section gives
each function's body size, the name section its (mangled) Rust name, which is demangled far
enough to tell the crate and the path. The crate of a function is the crate of the item it
was compiled from; a generic function instantiated for another crate's types counts for the
crate that defines it (``serde_json::de::...<toolseal_core::...>`` is serde_json's).

    wasm_size_report.py MODULE.wasm [--top N] [--markdown] [--retained REGEX]

``--retained REGEX`` adds, for every function whose demangled name matches, the code that only
it keeps in the module: what leaves if that function goes (its share of the direct-call graph
from the exports and the function table). It reads the calls from `wasm2wat` (wabt, a Debian
package), the only part of the report that needs a tool.
"""

from __future__ import annotations

import argparse
import re
import shutil
import signal
import subprocess
import sys
from collections import defaultdict
from pathlib import Path


def leb128(data: bytes, pos: int) -> tuple[int, int]:
    """An unsigned LEB128 at ``pos``: (value, position after it)."""
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return result, pos


SECTION_NAMES = {0: "custom", 1: "type", 2: "import", 3: "function", 4: "table", 5: "memory",
                 6: "global", 7: "export", 8: "start", 9: "elem", 10: "code", 11: "data",
                 12: "datacount"}


class Module:
    """The parts of a module this report needs."""

    def __init__(self, data: bytes) -> None:
        if data[:4] != b"\0asm":
            raise SystemExit("not a WebAssembly module")
        self.sections: list[tuple[str, int]] = []
        self.imported_functions = 0
        self.bodies: list[int] = []
        self.names: dict[int, str] = {}
        self.data_segments: list[int] = []
        pos = 8
        while pos < len(data):
            kind = data[pos]
            size, start = leb128(data, pos + 1)
            end = start + size
            name = SECTION_NAMES.get(kind, f"section {kind}")
            if kind == 0:
                length, at = leb128(data, start)
                custom = data[at:at + length].decode("utf-8", "replace")
                name = f"custom {custom!r}"
                if custom == "name":
                    self._names(data, at + length, end)
            elif kind == 2:
                self._imports(data, start)
            elif kind == 10:
                self._code(data, start)
            elif kind == 11:
                self._data(data, start)
            self.sections.append((name, end - pos))
            pos = end

    def _imports(self, data: bytes, pos: int) -> None:
        count, pos = leb128(data, pos)
        for _ in range(count):
            for _field in range(2):
                length, pos = leb128(data, pos)
                pos += length
            kind = data[pos]
            pos += 1
            if kind == 0:
                self.imported_functions += 1
                _, pos = leb128(data, pos)
            elif kind == 1:  # table: element type, limits
                pos += 1
                flags, pos = leb128(data, pos)
                _, pos = leb128(data, pos)
                if flags & 1:
                    _, pos = leb128(data, pos)
            elif kind == 2:  # memory: limits
                flags, pos = leb128(data, pos)
                _, pos = leb128(data, pos)
                if flags & 1:
                    _, pos = leb128(data, pos)
            elif kind == 3:  # global: type, mutability
                pos += 2
            else:
                raise SystemExit(f"unknown import kind {kind}")

    def _code(self, data: bytes, pos: int) -> None:
        count, pos = leb128(data, pos)
        for _ in range(count):
            size, body = leb128(data, pos)
            self.bodies.append(body + size - pos)
            pos = body + size

    def _data(self, data: bytes, pos: int) -> None:
        count, pos = leb128(data, pos)
        for _ in range(count):
            start = pos
            flags, pos = leb128(data, pos)
            if flags == 2:
                _, pos = leb128(data, pos)
            if flags in (0, 2):
                while data[pos] != 0x0B:  # the offset expression, up to `end`
                    pos += 1
                pos += 1
            size, pos = leb128(data, pos)
            pos += size
            self.data_segments.append(pos - start)

    def _names(self, data: bytes, pos: int, end: int) -> None:
        while pos < end:
            kind = data[pos]
            size, start = leb128(data, pos + 1)
            if kind == 1:
                count, at = leb128(data, start)
                for _ in range(count):
                    index, at = leb128(data, at)
                    length, at = leb128(data, at)
                    self.names[index] = data[at:at + length].decode("utf-8", "replace")
                    at += length
            pos = start + size


ESCAPES = {"$LT$": "<", "$GT$": ">", "$RF$": "&", "$BP$": "*", "$C$": ",", "$SP$": "@",
           "$u20$": " ", "$u27$": "'", "$u5b$": "[", "$u5d$": "]", "$u7b$": "{", "$u7d$": "}",
           "$u7e$": "~", "$u3b$": ";", "$u2b$": "+", "$u22$": '"', "$u21$": "!", "$u3d$": "="}


BASIC_TYPES = {"a": "i8", "b": "bool", "c": "char", "d": "f64", "e": "str", "f": "f32",
               "h": "u8", "i": "isize", "j": "usize", "l": "i32", "m": "u32", "n": "i128",
               "o": "u128", "s": "i16", "t": "u16", "u": "()", "v": "...", "x": "i64",
               "y": "u64", "z": "!", "p": "_"}


class V0:
    """A demangler for Rust's v0 symbols (the standard library is built with them): paths,
    generic arguments and types, with back-references; crate hashes left out."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.depth = text, 0, 0

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def take(self) -> str:
        char = self.peek()
        self.pos += 1
        return char

    def base62(self) -> int:
        if self.peek() == "_":
            self.pos += 1
            return 0
        value = 0
        while (char := self.take()) != "_":
            if not char:
                raise ValueError("end of symbol in a number")
            digit = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".index(char)
            value = value * 62 + digit
        return value + 1

    def disambiguator(self) -> None:
        if self.peek() == "s":
            self.pos += 1
            self.base62()

    def ident(self) -> str:
        self.disambiguator()
        if self.peek() == "u":
            self.pos += 1
        digits = re.match(r"\d+", self.text[self.pos:])
        if not digits:
            raise ValueError("expected an identifier")
        self.pos += len(digits.group())
        if self.peek() == "_":
            self.pos += 1
        length = int(digits.group())
        name = self.text[self.pos:self.pos + length]
        self.pos += length
        return name

    def backref(self, parse) -> str:
        target = self.base62()
        saved, self.pos = self.pos, target
        self.depth += 1
        if self.depth > 64:
            raise ValueError("back-references nest too deep")
        try:
            return parse()
        finally:
            self.pos = saved
            self.depth -= 1

    def path(self) -> str:
        tag = self.take()
        if tag == "C":
            return self.ident()
        if tag == "N":
            namespace = self.take()
            parent = self.path()
            name = self.ident()
            if namespace == "C":
                return f"{parent}::{{closure}}"
            if namespace == "S":
                return f"{parent}::{{shim:{name}}}" if name else f"{parent}::{{shim}}"
            return f"{parent}::{name}" if name else parent
        if tag == "M":
            self.disambiguator()
            self.path()
            return f"<{self.type()}>"
        if tag == "X":
            self.disambiguator()
            self.path()
            implementing = self.type()
            return f"<{implementing} as {self.path()}>"
        if tag == "Y":
            implementing = self.type()
            return f"<{implementing} as {self.path()}>"
        if tag == "I":
            base = self.path()
            args = []
            while self.peek() != "E":
                args.append(self.generic_arg())
            self.pos += 1
            return f"{base}::<{', '.join(a for a in args if a)}>"
        if tag == "B":
            return self.backref(self.path)
        raise ValueError(f"unknown path tag {tag!r}")

    def generic_arg(self) -> str:
        if self.peek() == "L":
            self.pos += 1
            self.base62()
            return ""
        if self.peek() == "K":
            self.pos += 1
            return self.const()
        return self.type()

    def const(self) -> str:
        if self.peek() == "p":
            self.pos += 1
            return "_"
        if self.peek() == "B":
            self.pos += 1
            return self.backref(self.const)
        self.type()
        negative = self.peek() == "n"
        if negative:
            self.pos += 1
        digits = re.match(r"[0-9a-f]*", self.text[self.pos:]).group()
        self.pos += len(digits) + 1
        return ("-" if negative else "") + str(int(digits or "0", 16))

    def type(self) -> str:
        tag = self.peek()
        if tag in BASIC_TYPES:
            self.pos += 1
            return BASIC_TYPES[tag]
        self.pos += 1
        if tag == "A":
            inner = self.type()
            return f"[{inner}; {self.const()}]"
        if tag == "S":
            return f"[{self.type()}]"
        if tag == "T":
            items = []
            while self.peek() != "E":
                items.append(self.type())
            self.pos += 1
            return f"({', '.join(items)})"
        if tag in "RQ":
            if self.peek() == "L":
                self.pos += 1
                self.base62()
            return ("&" if tag == "R" else "&mut ") + self.type()
        if tag in "PO":
            return ("*const " if tag == "P" else "*mut ") + self.type()
        if tag == "F":
            if self.peek() == "G":
                self.pos += 1
                self.base62()
            if self.peek() == "U":
                self.pos += 1
            if self.peek() == "K":
                self.pos += 1
                if self.peek() == "C":
                    self.pos += 1
                else:
                    self.ident()
            params = []
            while self.peek() != "E":
                params.append(self.type())
            self.pos += 1
            result = self.type()
            return f"fn({', '.join(params)}) -> {result}"
        if tag == "D":
            if self.peek() == "G":
                self.pos += 1
                self.base62()
            traits = []
            while self.peek() != "E":
                trait = self.path()
                while self.peek() == "p":
                    self.pos += 1
                    self.ident()
                    self.type()
                traits.append(trait)
            self.pos += 1
            if self.peek() == "L":
                self.pos += 1
                self.base62()
            return "dyn " + " + ".join(traits)
        if tag == "B":
            return self.backref(self.type)
        self.pos -= 1
        return self.path()


def demangle(name: str) -> str:
    """A Rust symbol as a path: legacy (``_ZN…E``) and v0 (``_R…``) names; anything else (C
    functions, exports) as it is."""
    if name.startswith("_ZN") and name.endswith("E"):
        parts, pos, body = [], 3, name[:-1]
        while pos < len(body):
            digits = re.match(r"\d+", body[pos:])
            if not digits:
                break
            pos += len(digits.group())
            length = int(digits.group())
            parts.append(body[pos:pos + length])
            pos += length
        if parts and re.fullmatch(r"h[0-9a-f]{16}", parts[-1]):
            parts.pop()
        text = "::".join(parts)
        text = re.sub(r"\$u?[0-9A-Za-z]+\$", lambda m: ESCAPES.get(m.group(), m.group()), text)
        return text.replace("..", "::").replace("::_<", "::<").removeprefix("_")
    if name.startswith("_R"):
        body = re.sub(r"^\d*", "", name[2:])
        offset = len(name) - 2 - len(body)
        parser = V0(name[2:])
        parser.pos = offset
        try:
            return parser.path()
        except (ValueError, IndexError):
            return name
    return name


PRIMITIVES = {"str", "char", "bool", "f32", "f64", "u8", "u16", "u32", "u64", "u128", "usize",
              "i8", "i16", "i32", "i64", "i128", "isize", "_"}


def crate_of(path: str) -> str:
    """The crate a demangled path belongs to: its first segment (``<T as Trait>`` impls: the
    crate of ``T``)."""
    path = path.lstrip("<&*")
    for prefix in ("mut ", "const ", "dyn ", "[", "("):
        path = path.removeprefix(prefix)
    head = re.match(r"[A-Za-z_][0-9A-Za-z_]*", path)
    if not head:
        return "(other)"
    crate = head.group()
    if crate in PRIMITIVES:
        return "core"  # inherent methods of primitive types (`<str>::find`, `<f64>::...`)
    if crate == "__rustc":
        return "std"  # the allocator shims
    if "::" not in path:
        if crate.startswith("proxy_") or crate == "_initialize":
            return "toolseal_plugin"  # the exported callbacks, #[no_mangle]
        # C symbols without a path: wasi-libc (malloc, string functions), compiler-builtins.
        return "(C: wasi-libc, compiler-builtins)"
    return crate


def without_arguments(path: str) -> str:
    """``path`` with its generic arguments left out (``Vec<u8>`` → ``Vec``, ``f::<T>`` → ``f``;
    the angle brackets of ``<T as Trait>`` stay), so that every instantiation of one generic
    function has the same name."""
    out, i = [], 0
    while i < len(path):
        char = path[i]
        if char == "<" and out and (out[-1].isalnum() or out[-1] in "_:"):
            depth = 0
            while i < len(path):
                depth += {"<": 1, ">": -1}.get(path[i], 0)
                i += 1
                if depth == 0:
                    break
            while out and out[-1] == ":":
                out.pop()
            continue
        out.append(char)
        i += 1
    return "".join(out)


def call_graph(path: Path) -> tuple[dict[str, set[str]], set[str]]:
    """Direct calls by function name, and the roots (exports and the function table), read from
    the module's text form."""
    wat = subprocess.run(["wasm2wat", str(path)], check=True, capture_output=True,
                         text=True).stdout
    calls: dict[str, set[str]] = defaultdict(set)
    roots: set[str] = set()
    current = None
    for line in wat.split("\n"):
        if line.startswith("  (func $"):
            current = line.split()[1][1:].rstrip(")")
        elif line.startswith("  (export ") and "(func $" in line:
            roots.add(line.split("(func $")[1].split(")")[0])
        elif line.startswith("  (elem "):
            roots.update(n.rstrip(")") for n in re.findall(r"\$(\S+)", line))
        elif current and "call $" in line:
            calls[current].add(line.split("call $")[1].split()[0].rstrip(")"))
    return calls, roots


def retained(path: Path, sizes: dict[str, int], pattern: str) -> list[tuple[int, int, str]]:
    """For each function matching `pattern`: the bytes and the number of functions reachable
    only through it."""
    calls, roots = call_graph(path)

    def reach(without: str | None) -> set[str]:
        seen: set[str] = set()
        stack = [r for r in roots if r != without]
        while stack:
            name = stack.pop()
            if name in seen or name == without:
                continue
            seen.add(name)
            stack.extend(c for c in calls.get(name, ()) if c not in seen)
        return seen

    everything = reach(None)
    rows = []
    for name in everything:
        if name in sizes and re.search(pattern, demangle(name)):
            lost = everything - reach(name)
            rows.append((sum(sizes.get(n, 0) for n in lost), len(lost), demangle(name)))
    return sorted(rows, reverse=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("module", type=Path)
    parser.add_argument("--top", type=int, default=40, help="functions to list (default 40)")
    parser.add_argument("--markdown", action="store_true", help="tables as Markdown")
    parser.add_argument("--retained", metavar="REGEX",
                        help="the code only each matching function keeps (needs wasm2wat)")
    args = parser.parse_args()
    data = args.module.read_bytes()
    module = Module(data)
    # Shares are of the module as shipped: without its custom sections (names, debug info).
    total = len(data) - sum(size for name, size in module.sections if name.startswith("custom"))
    functions = []
    for offset, size in enumerate(module.bodies):
        raw = module.names.get(module.imported_functions + offset, f"func[{offset}]")
        path = demangle(raw)
        functions.append((size, path, crate_of(path)))
    code = sum(module.bodies)

    def table(title: str, header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
        print(f"\n{title}\n")
        if args.markdown:
            print("| " + " | ".join(header) + " |")
            print("|" + "|".join("---:" if h in ("bytes", "share", "functions") else "---"
                                 for h in header) + "|")
            for row in rows:
                print("| " + " | ".join(row) + " |")
        else:
            widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
            print("  ".join(h.ljust(w) for h, w in zip(header, widths)))
            for row in rows:
                print("  ".join(c.ljust(w) for c, w in zip(row, widths)))

    pct = lambda n: f"{100 * n / total:.1f}%"  # noqa: E731
    print(f"{args.module}: {len(data):,} bytes, {total:,} without custom sections, "
          f"{len(module.bodies)} functions, code {code:,} bytes")
    table("sections", ("section", "bytes", "share"),
          [(name, f"{size:,}", pct(size)) for name, size in module.sections])
    by_crate: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for size, _path, crate in functions:
        by_crate[crate][0] += size
        by_crate[crate][1] += 1
    rows = sorted(by_crate.items(), key=lambda kv: -kv[1][0])
    table("code by crate", ("crate", "bytes", "share", "functions"),
          [(c, f"{b:,}", pct(b), str(n)) for c, (b, n) in rows])
    by_module: dict[str, int] = defaultdict(int)
    for size, path, crate in functions:
        if crate.startswith("toolseal"):
            # A method's module is its type's (`<toolseal_core::gateway::engine::Engine>::f`).
            segments = re.match(r"[^<> ]*", path.lstrip("<&*")).group().split("::")
            by_module["::".join(segments[:3] if len(segments) > 3 else segments[:2])] += size
    rows = sorted(by_module.items(), key=lambda kv: -kv[1])
    table("toolseal code by module", ("module", "bytes", "share"),
          [(m, f"{b:,}", pct(b)) for m, b in rows])
    generics: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for size, path, _crate in functions:
        generic = without_arguments(path)
        if generic != path:
            generics[generic][0] += size
            generics[generic][1] += 1
    rows = sorted(((g, b, n) for g, (b, n) in generics.items() if n > 1), key=lambda r: -r[1])
    table("generic functions instantiated more than once", ("function", "bytes", "functions"),
          [(g[:110], f"{b:,}", str(n)) for g, b, n in rows[:args.top]])
    top = sorted(functions, key=lambda f: -f[0])[:args.top]
    table(f"the {args.top} largest functions", ("bytes", "function"),
          [(f"{size:,}", path[:150]) for size, path, _ in top])
    if args.retained:
        if shutil.which("wasm2wat") is None:
            print("--retained needs wasm2wat (Debian package wabt)", file=sys.stderr)
            return 1
        sizes = {module.names.get(module.imported_functions + i, f"func[{i}]"): size
                 for i, size in enumerate(module.bodies)}
        rows = retained(args.module, sizes, args.retained)[:args.top]
        table(f"code kept only by functions matching {args.retained!r}",
              ("bytes", "functions", "function"),
              [(f"{b:,}", str(n), path[:150]) for b, n, path in rows])
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the report quietly
    sys.exit(main())
