"""`make bench`: measure the performance targets (issue 6) and print one table; exit 1 on a miss.

Every figure is a median of repeated runs after warm-ups, and every ratio is against a baseline
measured in the same run, interleaved with the command it is compared to. `start` runs as
`python -m start` with the interpreter running this script, and the repository root on PYTHONPATH,
so the harness works in the project's venv and from a checkout alike. Notes on progress and the
machine go to stderr; stdout gets the table only. See docs/performance.md for the method.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import harness
import scenarios
from harness import Row, Series, ms

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
FLOOR = "import click, tomllib, platformdirs"

LAUNCH_LIMIT = 1.25  # target 1: x the floor
SIZE_LIMIT = 1.20  # target 2: x the target-1 task launch
VALIDATE_LIMIT = 0.5  # target 2: seconds
CONCURRENT_LIMIT = 0.8  # target 3: seconds
MEMORY_LIMIT_MB = 100  # target 4: peak RSS, 10^6 bytes
OUTPUT_LIMIT = 2.0  # target 4: x the producer baseline


def start(*args: str) -> tuple[str, ...]:
    return (PYTHON, "-m", "start", *args)


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def ratio_row(
    target: str, measured: Series, baseline: Series, limit: float, passes: bool = True
) -> Row:
    if measured.failure or baseline.failure:
        return Row(target, "error", "" if baseline.failure else ms(baseline.median), "", "", False)
    ratio = measured.median / baseline.median
    verdict = ratio <= limit if passes else None
    return Row(
        target,
        ms(measured.median),
        ms(baseline.median),
        f"{ratio:.2f}×",
        f"≤ {limit:.2f}×" if passes else "",
        verdict,
    )


def absolute_row(target: str, measured: Series, limit: float) -> Row:
    if measured.failure:
        return Row(target, "error", "", "", "", False)
    return Row(target, ms(measured.median), "", "", f"< {ms(limit)}", measured.median < limit)


def capture(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout: float = 60
) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.perf_counter()
    proc = subprocess.run(
        list(argv),
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    return proc, time.perf_counter() - started


def check_large_config(world: scenarios.World) -> str | None:
    """The generated large config must be valid and warning-free, or its figures mean little."""
    proc, _ = capture(start("config", "validate", "--json"), env(world, "large"), world.repo)
    try:
        problems = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return f"config validate --json printed no JSON (exit {proc.returncode}): {proc.stderr}"
    if proc.returncode != 0 or problems:
        shown = "; ".join(f"{p.get('key')}: {p.get('message')}" for p in problems[:5])
        return f"the generated config has {len(problems)} problems: {shown}"
    return None


def env(world: scenarios.World, scenario: str) -> dict[str, str]:
    return world.env(scenario, REPO)


def launch_and_size(world: scenarios.World, runs: int, warmups: int) -> list[Row]:
    """Targets 1 and 2: all the fast commands, interleaved in one set of rounds."""
    small, large = env(world, "small"), env(world, "large")
    floor = Series("floor: python -c " + repr(FLOOR), (PYTHON, "-c", FLOOR), small, world.repo)
    task = Series("start -q task t x", start("-q", "task", "t", "x"), small, world.repo)
    prompt = Series("start -q prompt x", start("-q", "prompt", "x"), small, world.repo)
    session = Series("start -q", start("-q"), small, world.repo)
    big_task = Series(
        f"large: start -q task {scenarios.LARGE_TASK} x",
        start("-q", "task", scenarios.LARGE_TASK, "x"),
        large,
        world.repo,
    )
    validate = Series(
        "large: start config validate", start("config", "validate"), large, world.repo
    )
    every = [floor, task, prompt, session, big_task, validate]
    note(f"targets 1-2: {len(every)} commands x ({warmups} warm-up + {runs} runs), interleaved")
    harness.measure(every, runs, warmups)
    for series in every:
        note("  " + series.describe())
    invalid = check_large_config(world)
    if invalid:
        note("  " + invalid)
        validate.failure = big_task.failure = invalid
    return [
        ratio_row("1a. launch: start task t x (3 contexts, role)", task, floor, LAUNCH_LIMIT),
        ratio_row("1b. launch: start prompt x", prompt, floor, LAUNCH_LIMIT),
        ratio_row("1c. launch: start (bare session)", session, floor, LAUNCH_LIMIT),
        ratio_row(
            f"2a. large config: start task {scenarios.LARGE_TASK} x", big_task, task, SIZE_LIMIT
        ),
        absolute_row("2b. large config: start config validate", validate, VALIDATE_LIMIT),
    ]


def concurrency(world: scenarios.World, runs: int, warmups: int) -> list[Row]:
    """Target 3: four 0.5 s commands run at once; order and per-command outcomes still hold."""
    series = Series(
        "start -q prompt x (4 x sleep 0.5)",
        start("-q", "prompt", "x"),
        env(world, "concurrent"),
        world.repo,
    )
    note(f"target 3: {warmups} warm-up + {runs} runs")
    harness.measure([series], runs, warmups)
    note("  " + series.describe())
    rows = [absolute_row("3a. four required 0.5 s commands", series, CONCURRENT_LIMIT)]

    dry = start("prompt", "x", "--dry-run", "--json")
    proc, _ = capture(dry, env(world, "order"), world.repo)
    expected = [f"order-{i}" for i in range(1, len(scenarios.ORDER_SLEEPS) + 1)]
    try:
        data = json.loads(proc.stdout)
        names = [c["name"] for c in data["contexts"]]
        positions = [data["prompt"].find(name) for name in expected]
        kept = names == expected and -1 not in positions and positions == sorted(positions)
        seen = f"contexts {', '.join(names)}"
    except (json.JSONDecodeError, KeyError, TypeError):
        kept, seen = False, f"no JSON (exit {proc.returncode}): {proc.stderr.strip()[-200:]}"
    note(f"  order: {seen}; prompt {json.dumps(data['prompt']) if kept else 'unchecked'}")
    rows.append(
        Row(
            "3b. prompt keeps definition order (sleeps 0.4..0.1 s)",
            "in order" if kept else "out of order",
            "",
            "",
            "definition order",
            kept,
        )
    )

    proc, elapsed = capture(dry, env(world, "failures"), world.repo)
    want = {"ok": "ok", "fails": "exit code 3", "slow": "timed out", "after": "ok"}
    try:
        data = json.loads(proc.stdout)
        got = {c["name"]: "ok" if c["status"] == "ok" else c["detail"] for c in data["contexts"]}
        matched = all(want[name] in got.get(name, "") for name in want) and list(got) == list(want)
        matched = matched and data["prompt"].startswith("fine\n\nafter")
        seen = ", ".join(f"{name}: {text}" for name, text in got.items())
    except (json.JSONDecodeError, KeyError, TypeError):
        matched, seen = False, f"no JSON (exit {proc.returncode}): {proc.stderr.strip()[-200:]}"
    note(f"  failures ({elapsed:.2f} s): {seen}")
    rows.append(
        Row(
            "3c. one command fails, one times out (1 s)",
            f"both reported, others kept, {elapsed:.1f} s" if matched else "wrong: " + seen,
            "",
            "",
            "per command",
            matched and elapsed < 5,
        )
    )
    return rows


def large_output(world: scenarios.World, runs: int, warmups: int) -> list[Row]:
    """Target 4: a task command prints 200 MB; start keeps the cap and stays fast and small."""
    data = scenarios.big(world)
    shell = scenarios.shell()
    devnull = f"cat '{data}' > /dev/null"
    small = env(world, "small")
    measured = Series(
        "start -q task big x (200 MB)",
        start("-q", "task", "big", "x"),
        env(world, "big"),
        world.repo,
    )
    producer = Series(
        f"floor + {shell} -c {devnull!r}",
        (PYTHON, "-c", f"{FLOOR}, subprocess; subprocess.run([{shell!r}, '-c', {devnull!r}])"),
        small,
        world.repo,
    )
    bare = Series(f"{shell} -c {devnull!r}", (shell, "-c", devnull), small, world.repo)
    note(f"target 4: 3 commands x ({warmups} warm-up + {runs} runs), interleaved")
    harness.measure([measured, producer, bare], runs, warmups)
    for series in (measured, producer, bare):
        note("  " + series.describe())
    peaks = []
    if not measured.failure:
        for _ in range(runs):
            code, peak = harness.peak_rss(measured.argv, measured.env, measured.cwd)
            if code != 0:
                measured.failure = f"exit {code} when measuring memory"
                break
            peaks.append(peak / 1e6)
        note(
            f"  peak RSS of start over {len(peaks)} runs: {', '.join(f'{p:.1f}' for p in peaks)} MB"
        )
    data.unlink()
    if measured.failure or not peaks:
        memory = Row("4a. 200 MB output: peak RSS of start", "error", "", "", "", False)
    else:
        memory = Row(
            "4a. 200 MB output: peak RSS of start",
            f"{max(peaks):.1f} MB",
            "",
            "",
            f"< {MEMORY_LIMIT_MB} MB",
            max(peaks) < MEMORY_LIMIT_MB,
        )
    return [
        memory,
        ratio_row("4b. 200 MB output: wall time vs floor + cat", measured, producer, OUTPUT_LIMIT),
        ratio_row("4c. 200 MB output: wall time vs bare cat", measured, bare, OUTPUT_LIMIT, False),
    ]


HEAVY = ("rich", "tomlkit")


def imported(importtime: str) -> set[str]:
    """Module names from `python -X importtime` output."""
    names = set()
    for line in importtime.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name != "package":
                names.add(name)
    return names


def import_hygiene(world: scenarios.World) -> list[Row]:
    """Target 5: the launch path imports neither rich nor tomlkit (a test asserts it too)."""
    heavy: set[str] = set()
    failed = []
    for args in (("task", "t", "x"), ("prompt", "x"), ()):
        argv = (PYTHON, "-X", "importtime", "-m", "start", "-q", *args)
        proc, _ = capture(argv, env(world, "small"), world.repo)
        if proc.returncode != 0:
            failed.append(f"start {' '.join(args)}: exit {proc.returncode}")
        names = imported(proc.stderr)
        heavy |= {name for name in names if name.split(".")[0] in HEAVY}
    note(f"target 5: heavy modules on the launch path: {', '.join(sorted(heavy)) or 'none'}")
    for failure in failed:
        note("  " + failure)
    tops = sorted({name.split(".")[0] for name in heavy})
    return [
        Row(
            "5. launch path imports rich / tomlkit",
            ", ".join(tops) if tops else "neither",
            "",
            "",
            "neither",
            not heavy and not failed,
        )
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="fewer runs: a smoke test, not figures"
    )
    parser.add_argument("--runs", type=int, help="measured runs of each fast command (default 21)")
    options = parser.parse_args(argv)
    runs = options.runs or (5 if options.quick else 21)
    slow_runs = 3 if options.quick else 5
    warmups = 1 if options.quick else 2

    began = time.perf_counter()
    note(harness.machine())
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="start-bench-") as tmp:
        world = scenarios.create(Path(tmp))
        for build in (
            scenarios.small,
            scenarios.large,
            scenarios.concurrent,
            scenarios.order,
            scenarios.failures,
        ):
            build(world)
        rows += launch_and_size(world, runs, warmups)
        rows += concurrency(world, slow_runs, 1)
        rows += large_output(world, slow_runs, 1)
        rows += import_hygiene(world)
    note(f"finished in {time.perf_counter() - began:.0f} s")
    print(harness.table(rows), flush=True)
    return 1 if any(row.passed is False for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
