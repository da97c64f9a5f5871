"""Where a launch spends its time: cProfile and `-X importtime` of one `start` run.

The run happens in the benchmark's own scratch world (see scenarios.py):

    python benchmarks/launch_profile.py                      # start -q task t x, small config
    python benchmarks/launch_profile.py --config large -- -q task task-0500 x
    python benchmarks/launch_profile.py --importtime --runs 7

A launch ends in exec, which would discard the profile, so the profiled run replaces os.execve
with a function that exits instead. It runs in a fresh interpreter, so imports are included.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

import scenarios

REPO = Path(__file__).resolve().parents[1]

_DRIVER = """\
import cProfile, os, pstats, runpy, sys
def _exit_instead_of_exec(*args):
    raise SystemExit(0)
os.execve = _exit_instead_of_exec
out, sort, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.argv = ["start", *sys.argv[4:]]
profile = cProfile.Profile()
profile.enable()
try:
    runpy.run_module("start", run_name="__main__", alter_sys=True)
except SystemExit:
    pass
profile.disable()
with open(out, "w") as stream:
    pstats.Stats(profile, stream=stream).sort_stats(sort).print_stats(limit)
"""


def parse_importtime(text: str) -> dict[str, tuple[int, int, int]]:
    """{module: (self us, cumulative us, depth)} from `-X importtime` output."""
    found = {}
    for line in text.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2:
            continue
        self_us, cumulative, name = line.split(":", 1)[1].split("|")
        if not self_us.strip().isdigit():  # the header line
            continue
        depth = (len(name) - len(name.lstrip()) - 1) // 2
        found[name.strip()] = (int(self_us), int(cumulative), depth)
    return found


def importtime(argv: Sequence[str], env: dict[str, str], cwd: Path, runs: int, top: int) -> None:
    traces = []
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "start", *argv],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
        )
        traces.append(parse_importtime(proc.stderr))
    names = list(traces[-1])

    def median(name: str, index: int) -> float:
        return statistics.median(t[name][index] for t in traces if name in t)

    print(f"-X importtime of start {' '.join(argv)}: medians of {runs} runs, in ms")
    print("top-level imports by cumulative time:")
    for name in sorted((n for n in names if traces[-1][n][2] == 0), key=lambda n: -median(n, 1)):
        print(f"  {median(name, 1) / 1000:7.1f}  {name}")
    print(f"top {top} modules by self time:")
    for name in sorted(names, key=lambda n: -median(n, 0))[:top]:
        print(f"  {median(name, 0) / 1000:7.1f}  {name}")


def profile(argv: Sequence[str], env: dict[str, str], cwd: Path, sort: str, top: int) -> None:
    with tempfile.NamedTemporaryFile("r", suffix=".txt") as out:
        subprocess.run(
            [sys.executable, "-c", _DRIVER, out.name, sort, str(top), *argv],
            env=env,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            check=True,
        )
        print(f"cProfile of start {' '.join(argv)} (os.execve stubbed), sorted by {sort}")
        print(out.read())


def main(args: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", choices=["small", "large", "big"], default="small")
    parser.add_argument("--importtime", action="store_true", help="import times, not cProfile")
    parser.add_argument("--runs", type=int, default=5, help="runs for --importtime (medians)")
    parser.add_argument("--sort", default="cumulative", help="pstats sort key (e.g. tottime)")
    parser.add_argument("--top", type=int, default=40, help="rows to print")
    parser.add_argument("argv", nargs="*", help="start's arguments (default: -q task t x)")
    options = parser.parse_args(args)
    argv = options.argv or ["-q", "task", "t", "x"]
    with tempfile.TemporaryDirectory(prefix="start-profile-") as tmp:
        world = scenarios.create(Path(tmp))
        {"small": scenarios.small, "large": scenarios.large, "big": scenarios.big}[options.config](
            world
        )
        env = world.env(options.config, REPO)
        # One unmeasured run, so bytecode caches exist as they would after installation.
        subprocess.run(
            [sys.executable, "-m", "start", *argv],
            env=env,
            cwd=world.repo,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        if options.importtime:
            importtime(argv, env, world.repo, options.runs, options.top)
        else:
            profile(argv, env, world.repo, options.sort, options.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
