#!/usr/bin/env python3
"""Guest instructions per message, function by function, for one `toolseal bench` row.

    scripts/guest-profile.py --row "list 100 verified json" MODULE.wasm [BASELINE.wasm]

Runs `toolseal bench --scenario ROW --runtime wasm` under callgrind twice (10 and 110
messages; the difference is 100 messages, so setup costs cancel out) with wasmtime writing a
perf map (TOOLSEAL_PERFMAP=1), and attributes every instruction of compiled guest code to
the function the map names. With BASELINE, prints both modules side by side, largest
difference first. Build the modules with their names kept (`cargo build -p toolseal-plugin
--target wasm32-wasip1 --profile wasm-names`): a stripped module's functions are numbers.
The total equals the `guest Ir` column of `toolseal bench --callgrind` for the same module.
"""

import argparse
import bisect
import os
import re
import subprocess
import sys
import tempfile

RUNS = (10, 110)


def position(text, current):
    """A callgrind position: absolute (0x...), relative (+N / -N) or unchanged (*)."""
    if text.startswith("0x"):
        return int(text, 16)
    if text.startswith("+"):
        return current + int(text[1:], 0)
    if text.startswith("-"):
        return current - int(text[1:], 0)
    return current


def self_costs(profile):
    """Instructions per instruction address (self cost; a call's inclusive cost is skipped)."""
    costs, address, after_call = {}, 0, False
    with open(profile) as lines:
        for line in lines:
            if line.startswith("calls="):
                after_call = True
                continue
            if not line or line[0] not in "0123456789+-*":
                continue
            parts = line.split()
            address = position(parts[0], address)
            if after_call:
                after_call = False
                continue
            if len(parts) >= 3 and parts[2] != "*":
                costs[address] = costs.get(address, 0) + int(parts[2])
    return costs


def by_function(profile, perf_map):
    entries = []
    with open(perf_map) as lines:
        for line in lines:
            start, size, name = line.rstrip("\n").split(" ", 2)
            entries.append((int(start, 16), int(size, 16), re.sub(r"17h[0-9a-f]{16}E$", "", name)))
    entries.sort()
    starts = [e[0] for e in entries]
    totals = {}
    for address, cost in self_costs(profile).items():
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and address < entries[i][0] + entries[i][1]:
            totals[entries[i][2]] = totals.get(entries[i][2], 0) + cost
    return totals


def per_message(toolseal, row, module, workdir):
    """Guest instructions per message of each function of `module`."""
    measured = []
    for messages in RUNS:
        out = os.path.join(workdir, f"cg.{messages}")
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--dump-instr=yes", "--smc-check=all-non-file",
             f"--callgrind-out-file={out}", toolseal, "bench", "--scenario", row,
             "--runtime", "wasm", "--wasm", module, "--iters", str(messages)],
            env={**os.environ, "TOOLSEAL_PERFMAP": "1"}, capture_output=True, text=True)
        pid = re.search(r"==(\d+)==", run.stderr)
        perf_map = f"/tmp/perf-{pid.group(1)}.map" if pid else ""
        if run.returncode != 0 or not os.path.exists(perf_map):
            sys.exit(f"guest-profile: the run of {module} failed:\n{run.stderr[-2000:]}")
        measured.append(by_function(out, perf_map))
        os.remove(perf_map)
    first, second = measured
    scale = RUNS[1] - RUNS[0]
    return {name: (second.get(name, 0) - first.get(name, 0)) / scale
            for name in set(first) | set(second)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--row", required=True, help="a `toolseal bench` row name")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--toolseal", default="target/debug/toolseal")
    parser.add_argument("module")
    parser.add_argument("baseline", nargs="?")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        now = per_message(args.toolseal, args.row, args.module, workdir)
        before = per_message(args.toolseal, args.row, args.baseline, workdir) if args.baseline else {}
    print(f"{args.row}: guest instructions per message: {sum(now.values()):,.0f}"
          + (f" (baseline {sum(before.values()):,.0f})" if before else ""))
    names = sorted(set(now) | set(before), key=lambda n: -abs(now.get(n, 0) - before.get(n, 0)))
    for name in names[: args.top]:
        if before:
            print(f"{before.get(name, 0):10,.0f} {now.get(name, 0):10,.0f} "
                  f"{now.get(name, 0) - before.get(name, 0):+10,.0f}  {name[:120]}")
        else:
            print(f"{now.get(name, 0):10,.0f}  {name[:120]}")


if __name__ == "__main__":
    main()
