"""Where a launch spends its time: `-X importtime` against the floor's imports, and cProfile.

The runs happen in the benchmark's own scratch world (see scenarios.py), warm by default (the
config cache filled by a first run), `--cold` (the config edited before every run, as `make bench`
measures a cold launch) or `--first` (the state directory emptied before every run):

    python benchmarks/launch_profile.py --phases --runs 21           # start -q task t x, small
    python benchmarks/launch_profile.py --importtime --cost
    python benchmarks/launch_profile.py --importtime --cold --tree 0.3
    python benchmarks/launch_profile.py --sort tottime --only start/
    python benchmarks/launch_profile.py --callers 'subprocess.py.*Popen'
    python benchmarks/launch_profile.py --config large --cold -- -q task task-0500 x

`--phases` splits the wall and CPU time of a launch: interpreter, floor, imports, the rest.
`--importtime` reports what the launch imports beyond `python -c "import click, tomllib"` (the
floor): start's own modules by self time, and every other module it pulls in, with its cost and
the module that imported it. `--cost` times those imports without -X importtime. A launch ends
in exec, which would discard a profile, so the cProfile run replaces os.execve with an exit.
Every run is a fresh interpreter, so imports count.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import harness
import scenarios

REPO = Path(__file__).resolve().parents[1]
FLOOR = "import click, tomllib"

_DRIVER = """\
import cProfile, json, os, pstats, runpy, sys
def _exit_instead_of_exec(*args):
    raise SystemExit(0)
os.execve = _exit_instead_of_exec
options = json.loads(sys.argv[1])
sys.argv = ["start", *sys.argv[2:]]
profile = cProfile.Profile()
profile.enable()
try:
    runpy.run_module("start", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
profile.disable()
with open(options["out"], "w") as stream:
    stats = pstats.Stats(profile, stream=stream).sort_stats(options["sort"])
    stats.print_stats(*options["only"], options["top"])
    if options["callers"]:
        stats.print_callers(options["callers"])
"""


@dataclass
class Node:
    """One module in an `-X importtime` trace: its own time, with what it imported, and depth."""

    name: str
    self_us: int
    cumulative_us: int
    depth: int
    children: list[Node] = field(default_factory=list)
    parent: Node | None = None


def parse_importtime(text: str) -> list[Node]:
    """The trace as a forest, in import order: the roots are imports made outside any import.

    Python prints a module after everything it imported, indented one level deeper (post-order).
    """
    stack: list[Node] = []
    for line in text.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        self_us, cumulative, name = line.split(":", 1)[1].split("|")
        if not self_us.strip().isdigit():  # the header line
            continue
        depth = (len(name) - len(name.lstrip()) - 1) // 2
        node = Node(name.strip(), int(self_us), int(cumulative), depth)
        while stack and stack[-1].depth > depth:
            child = stack.pop()
            child.parent = node
            node.children.insert(0, child)
        stack.append(node)
    return stack


def walk(nodes: Sequence[Node]) -> list[Node]:
    """Every node, parents before their children."""
    found = []
    for node in nodes:
        found.append(node)
        found += walk(node.children)
    return found


def own(name: str) -> bool:
    return name == "start" or name.startswith("start.")


def importer(node: Node) -> str:
    if node.name == "runpy" and node.parent is None:
        return "python -m itself (the console script does not import it)"
    # importlib.import_module logs no line for the module it loads, so that module's imports
    # appear at the top level too.
    return node.parent.name if node.parent else "(at run time, or by importlib.import_module)"


@dataclass
class Traces:
    """Repeated traces of one command; times are medians over the runs, in milliseconds."""

    runs: list[list[Node]]

    def __post_init__(self) -> None:
        self._by_name = [{node.name: node for node in walk(run)} for run in self.runs]

    @property
    def last(self) -> list[Node]:
        return self.runs[-1]

    def names(self) -> set[str]:
        return set(self._by_name[-1])

    def cumulative(self, name: str) -> float:
        return statistics.median(t[name].cumulative_us for t in self._by_name if name in t) / 1e3

    def self_ms(self, name: str) -> float:
        return statistics.median(t[name].self_us for t in self._by_name if name in t) / 1e3

    def total(self) -> float:
        return statistics.median(sum(n.cumulative_us for n in run) for run in self.runs) / 1e3


def trace(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    runs: int,
    prepare: Callable[[], None] | None,
) -> Traces:
    found = []
    for _ in range(runs):
        if prepare is not None:
            prepare()
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", *argv],
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            sys.exit(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
        found.append(parse_importtime(proc.stderr))
    return Traces(found)


def print_tree(launch: Traces, floor: set[str], threshold: float) -> None:
    def show(node: Node, indent: int) -> None:
        cost = launch.cumulative(node.name)
        if cost < threshold:
            return
        mark = "  (floor)" if node.name in floor else ""
        print(f"  {cost:7.1f} {launch.self_ms(node.name):6.1f}  {'  ' * indent}{node.name}{mark}")
        if node.name not in floor:
            for child in node.children:
                show(child, indent + 1)

    print(f"\nimport tree, cumulative and self ms, imports under {threshold} ms left out:")
    for root in launch.last:
        show(root, 0)


def importtime(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    runs: int,
    top: int,
    prepare: Callable[[], None] | None,
    tree: float | None,
) -> None:
    launch = trace(["-m", "start", *argv], env, cwd, runs, prepare)
    floor_traces = trace(["-c", FLOOR], env, cwd, runs, None)
    bare = trace(["-c", "pass"], env, cwd, runs, None)
    floor = floor_traces.names()
    extra = [node for node in walk(launch.last) if node.name not in floor]
    ours = [node for node in extra if own(node.name)]
    # A module start or the run itself pulled in, not the floor; its cumulative time includes
    # the other new modules it imported first.
    roots = [
        node
        for node in extra
        if not own(node.name) and (node.parent is None or own(node.parent.name))
    ]
    deeper = [
        node
        for node in extra
        if not own(node.name) and node.parent is not None and not own(node.parent.name)
    ]

    print(f"-X importtime of start {' '.join(argv)}: medians of {runs} runs, in ms")
    print("(-X importtime inflates every import a little; compare the figures with each other)")
    print(f"\n  {bare.total():7.1f}  every import of python -c pass (site, encodings, ...)")
    print(f"  {floor_traces.total():7.1f}  every import of python -c {FLOOR!r} (the floor)")
    print(f"  {launch.total():7.1f}  every import of the launch")
    new_ms = sum(launch.self_ms(node.name) for node in extra)
    print(f"  {new_ms:7.1f}  self time of the {len(extra)} modules the floor does not import:")
    print(f"  {sum(launch.self_ms(n.name) for n in ours):7.1f}    start's own {len(ours)} modules")
    others = sum(launch.self_ms(n.name) for n in extra if not own(n.name))
    print(f"  {others:7.1f}    {len(extra) - len(ours)} other modules")

    print("\nstart's own modules by self time:")
    for node in sorted(ours, key=lambda n: -launch.self_ms(n.name)):
        print(f"  {launch.self_ms(node.name):7.1f}  {node.name}")

    print("\nother modules the floor does not import, by cumulative time, and who imported them")
    print("(each time includes the new modules listed under it):")
    for node in sorted(roots, key=lambda n: -launch.cumulative(n.name)):
        below = list(dict.fromkeys(n.name for n in walk(node.children) if n.name not in floor))
        print(f"  {launch.cumulative(node.name):7.1f}  {node.name}  <- {importer(node)}")
        if below:
            print(f"           {', '.join(below)}")
    if not roots and deeper:
        print("  (none directly; see the tree)")

    print(f"\ntop {top} modules by self time (floor modules included):")
    for name in sorted(launch.names(), key=lambda n: -launch.self_ms(n))[:top]:
        mark = "  (floor)" if name in floor else ""
        print(f"  {launch.self_ms(name):7.1f}  {name}{mark}")
    if tree is not None:
        print_tree(launch, floor, tree)


# Each phase ends by exec'ing `true`, as a launch does, so none pays the interpreter's shutdown
# (tearing down every module), which a launch skips.
_EXEC = "import os; os.execvp('true', ['true'])"
_IMPORT_ONLY = """\
import importlib
for name in {names!r}:
    try:
        importlib.import_module(name)
    except ImportError:
        pass
"""

# The collector is off while timing: a collection lands in whichever import crosses its
# threshold and would be charged to that module. --phases includes it, as a launch pays it.
_COST = """\
import click, gc, importlib, json, sys, time, tomllib
gc.disable()
costs = []
for name in json.loads(sys.argv[1]):
    started, cpu = time.perf_counter(), time.process_time()
    try:
        importlib.import_module(name)
    except ImportError:
        pass
    costs.append((time.perf_counter() - started, time.process_time() - cpu))
print(json.dumps(costs))
"""


def phases(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    runs: int,
    prepare: Callable[[], None] | None,
) -> None:
    """Where the wall time of a launch goes, by subtraction, without a profiler's overhead.

    Four commands run interleaved: an interpreter that does nothing, the floor, a script that
    imports the modules the launch imports (the top-level imports of its importtime trace) and
    nothing else, and the launch. The first three then exec `true`, as the launch does. Each
    difference is the median cost of one phase.
    """
    names = [node.name for node in trace(["-m", "start", *argv], env, cwd, 1, prepare).last]
    py = sys.executable
    series = [
        harness.Series("nothing", (py, "-c", _EXEC), env, cwd),
        harness.Series("floor", (py, "-c", f"{FLOOR}\n{_EXEC}"), env, cwd),
        harness.Series("imports", (py, "-c", _IMPORT_ONLY.format(names=names) + _EXEC), env, cwd),
        harness.Series("launch", (py, "-m", "start", *argv), env, cwd, prepare),
    ]
    harness.measure(series, runs, 2)
    for item in series:
        if item.failure:
            sys.exit(item.describe())
    state = "cold" if prepare is not None else "warm"
    print(f"phases of start {' '.join(argv)} ({state}): medians of {runs} interleaved runs, ms")
    print("     wall    delta      CPU    delta")
    labels = [
        "interpreter start (and exec `true`)",
        f"+ the floor: {FLOOR}",
        f"+ the rest of the launch's imports ({len(names)} top-level imports, nothing run)",
        "+ running: parse the command line, load config, run commands, exec `true`",
    ]
    wall = cpu = 0.0
    for label, item in zip(labels, series, strict=True):
        now, now_cpu = item.median * 1000, item.cpu_median * 1000
        print(f"  {now:7.1f}  {now - wall:+7.1f}  {now_cpu:7.1f}  {now_cpu - cpu:+7.1f}  {label}")
        wall, cpu = now, now_cpu
    print("(a command that does not exec pays the interpreter's shutdown in its last phase)")
    print("spread:")
    for item in series:
        print("  " + item.describe())


def costs(
    names: Sequence[str], env: Mapping[str, str], cwd: Path, runs: int, launch: Traces | None
) -> None:
    """The wall and CPU time of importing each module, in order, after the floor.

    Without names: every module the launch imports that the floor does not, in the order its
    importtime trace lists them (a module after what it imports), so each time is close to that
    module's own cost, measured without -X importtime. Imports that fail (`nt` on Linux) are
    timed too: the search costs. With names, each is timed after the ones before it.
    """
    importers: dict[str, str] = {}
    if not names and launch is not None:
        floor = trace(["-c", FLOOR], env, cwd, 1, None).names()
        ordered = []
        for line in _post_order(launch.last):
            if line.name not in floor and line.name != "runpy":
                ordered.append(line.name)
                importers[line.name] = importer(line)
        names = list(dict.fromkeys(ordered))
    wall: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-c", _COST, json.dumps(list(names))],
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=True,
        )
        for name, (seconds, cpu_seconds) in zip(names, json.loads(proc.stdout), strict=True):
            wall[name].append(seconds * 1000)
            cpu[name].append(cpu_seconds * 1000)
    median = statistics.median
    print(f"\nimport cost after the floor, in order, medians of {runs} runs, ms")
    print("(no -X importtime, no garbage collection; each module after the new modules it")
    print("imports; a submodule imported before its package includes the package's __init__)")
    print("     wall      CPU")
    total_wall = sum(median(wall[name]) for name in names)
    total_cpu = sum(median(cpu[name]) for name in names)
    print(f"  {total_wall:7.2f}  {total_cpu:7.2f}  all {len(names)}")
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault("start" if own(name) else name.split(".")[0], []).append(name)
    print("by package:")
    for group, members in sorted(groups.items(), key=lambda g: -sum(median(cpu[n]) for n in g[1])):
        group_wall = sum(median(wall[n]) for n in members)
        shown = f"{group_wall:7.2f}  {sum(median(cpu[n]) for n in members):7.2f}"
        outside = (importers[n] for n in members if n in importers and importers[n] not in members)
        first = next(outside, "")
        print(f"  {shown}  {group}" + (f"  <- {first}" if first and group != "start" else ""))
    print("by module:")
    for name in sorted(names, key=lambda n: -median(cpu[n])):
        print(f"  {median(wall[name]):7.2f}  {median(cpu[name]):7.2f}  {name}")


def _post_order(nodes: Sequence[Node]) -> list[Node]:
    """Every node, children before their parent: the order -X importtime prints them in."""
    found = []
    for node in nodes:
        found += _post_order(node.children)
        found.append(node)
    return found


def profile(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: Path,
    options: argparse.Namespace,
    prepare: Callable[[], None] | None,
) -> None:
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as out:
        settings = {
            "out": out.name,
            "sort": options.sort,
            "top": options.top,
            "only": options.only,
            "callers": options.callers,
        }
        if prepare is not None:
            prepare()
        subprocess.run(
            [sys.executable, "-c", _DRIVER, json.dumps(settings), *argv],
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            check=True,
        )
        state = "cold" if prepare is not None else "warm"
        print(f"cProfile of start {' '.join(argv)} ({state}, os.execve stubbed), by {options.sort}")
        print(out.read())


# A launch under valgrind, ending as an exec would: without the interpreter's shutdown.
_EXIT_AT_EXEC = """\
import os, runpy, sys
def _exit_instead_of_exec(*args):
    os._exit(0)
os.execve = _exit_instead_of_exec
sys.argv = ["start", *sys.argv[1:]]
runpy.run_module("start", run_name="__main__", alter_sys=True)
"""


def instructions(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, prepare: Callable[[], None] | None
) -> None:
    """Instructions executed (valgrind's callgrind), which, unlike time, do not move with load.

    Commands that `start` runs are not counted (they are other processes), nor the kernel's
    work (fork, exec, page faults): compare the figures with each other, as proportions.
    """
    if shutil.which("valgrind") is None:
        raise SystemExit("--instructions needs valgrind on PATH")

    def count(*args: str) -> float:
        if prepare is not None:
            prepare()
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *args],
            env=dict(env),
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=True,
        )
        found = re.search(r"Collected : (\d+)", proc.stderr)
        if found is None:
            raise SystemExit(f"valgrind reported no count:\n{proc.stderr[-2000:]}")
        return int(found.group(1)) / 1e6

    bare = count(sys.executable, "-c", "import os; os._exit(0)")
    floor = count(sys.executable, "-c", f"{FLOOR}, os; os._exit(0)")
    launch = count(sys.executable, "-c", _EXIT_AT_EXEC, *argv)
    state = "cold" if prepare is not None else "warm"
    print(f"instructions (millions) of start {' '.join(argv)} ({state}), each ending at its exit")
    print(f"  {bare:8.1f}  python, doing nothing")
    print(f"  {floor:8.1f}  the floor: {FLOOR}  ({floor - bare:+.1f})")
    print(f"  {launch:8.1f}  the launch, to its exec  ({launch - floor:+.1f} over the floor, "
          f"{launch / floor:.3f}x)")  # fmt: skip


def main(args: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=["small", "large", "big"], default="small")
    parser.add_argument(
        "--cold", action="store_true", help="edit the config before each run (as make bench does)"
    )
    parser.add_argument(
        "--first",
        action="store_true",
        help="empty the state directory before each run: the first launch after installing",
    )
    parser.add_argument("--importtime", action="store_true", help="import times, not cProfile")
    parser.add_argument(
        "--phases", action="store_true", help="wall time by phase: interpreter, floor, imports, run"
    )
    parser.add_argument(
        "--cost",
        nargs="*",
        metavar="MODULE",
        help="import cost after the floor, in order (no names: the launch's imports beyond it)",
    )
    parser.add_argument(
        "--instructions", action="store_true", help="instructions executed (needs valgrind)"
    )
    parser.add_argument("--runs", type=int, default=7, help="runs for --importtime (medians)")
    parser.add_argument(
        "--tree", type=float, metavar="MS", help="--importtime: print the tree down to MS"
    )
    parser.add_argument("--sort", default="cumulative", help="pstats sort key (e.g. tottime)")
    parser.add_argument("--top", type=int, default=40, help="rows to print")
    parser.add_argument(
        "--only", action="append", default=[], help="cProfile: rows matching this regex"
    )
    parser.add_argument("--callers", help="cProfile: also print the callers of these functions")
    parser.add_argument("argv", nargs="*", help="start's arguments (default: -q task t x)")
    options = parser.parse_args(args)
    argv = options.argv or ["-q", "task", "t", "x"]
    with tempfile.TemporaryDirectory(prefix="start-profile-") as tmp:
        world = scenarios.create(Path(tmp))
        builds: dict[str, Callable[[scenarios.World], object]] = {
            "small": scenarios.small,
            "large": scenarios.large,
            "big": scenarios.big,
        }
        builds[options.config](world)
        cache_home = world.cache("profile")
        env = world.env(options.config, REPO, cache_home)
        # One unmeasured run: bytecode caches exist as after installation, and a warm cache.
        subprocess.run(
            [sys.executable, "-m", "start", *argv],
            env=env,
            cwd=world.repo,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        cold: Callable[[], None] | None = None
        if options.cold:
            cold = scenarios.Editor(Path(env["START_CONFIG_DIR"]) / "config.toml")
        elif options.first:
            cold = functools.partial(scenarios.empty, cache_home)
        if options.phases:
            phases(argv, env, world.repo, options.runs, cold)
        elif options.instructions:
            instructions(argv, env, world.repo, cold)
        elif options.importtime or options.cost is not None:
            if options.importtime:
                importtime(argv, env, world.repo, options.runs, options.top, cold, options.tree)
            if options.cost is not None:
                launch = (
                    None
                    if options.cost
                    else trace(["-m", "start", *argv], env, world.repo, 1, cold)
                )
                costs(options.cost, env, world.repo, options.runs, launch)
        else:
            profile(argv, env, world.repo, options, cold)
    return 0


if __name__ == "__main__":
    sys.exit(main())
