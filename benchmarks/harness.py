"""Timing and process helpers for the benchmark: one run, interleaved series, medians, the table."""

from __future__ import annotations

import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True, slots=True)
class Sample:
    """One run of one command: its wall time, exit status, and CPU time (user + system).

    The CPU time includes the commands the command ran and reaped. It hardly moves with load,
    so it tells a slow run apart from a run that waited for a CPU.
    """

    seconds: float
    returncode: int
    stderr: str = ""
    cpu: float = 0.0


def run_once(
    argv: Sequence[str], env: Mapping[str, str], cwd: Path, *, capture: bool = False
) -> Sample:
    """Run `argv` with stdin and stdout on /dev/null and time it, start to reaped.

    `capture` keeps stderr (for the first warm-up, to show why a command failed).
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        list(argv),
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE if capture else subprocess.DEVNULL,
        check=False,
    )
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    stderr = proc.stderr.decode("utf-8", "replace") if capture else ""
    return Sample(seconds, proc.returncode, stderr, cpu)


# A child's peak RSS starts at its parent's when it forks, and Linux keeps a process's peak across
# exec. So the harness, which is larger than what it measures, cannot fork the command itself:
# a small interpreter (`python -I -S`, about 8 MiB) forks it, reaps it with wait4 and prints the
# child's ru_maxrss (KiB on Linux). `start` execs the agent in the same process (same pid), so the
# figure is the largest of: the forker's size at fork, `start` itself up to the exec, the agent
# after it (`true`: tiny), and any command `start` ran and reaped (a reaped child's peak is folded
# into its parent's). For a launch, that is `start`'s own peak.
_PEAK = """\
import os, sys
pid = os.fork()
if pid == 0:
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.execvp(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def peak_rss(argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> tuple[int, int]:
    """The exit status and peak resident set size (bytes) of one run of `argv`."""
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", _PEAK, *argv],
        env=dict(env),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return int(out[0]), int(out[1]) * 1024


MIB = 1 << 20


@dataclass
class Series:
    """A command measured repeatedly; `samples` holds the measured runs, not the warm-ups.

    `prepare` runs before every run, warm-ups included, outside the timed region (a cold series
    empties its cache there). `measured_from` is the wall clock (time.time) when the first
    measured run began.
    """

    label: str
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    prepare: Callable[[], None] | None = None
    samples: list[Sample] = field(default_factory=list)
    failure: str | None = None
    measured_from: float | None = None

    @property
    def median(self) -> float:
        return statistics.median(s.seconds for s in self.samples)

    @property
    def cpu_median(self) -> float:
        return statistics.median(s.cpu for s in self.samples)

    def describe(self) -> str:
        if self.failure:
            return f"{self.label}: FAILED: {self.failure}"
        times = sorted(s.seconds for s in self.samples)
        return (
            f"{self.label}: median {ms(self.median)}, min {ms(times[0])}, max {ms(times[-1])}, "
            f"n={len(times)}; CPU median {ms(self.cpu_median)}"
        )


def measure(series: Sequence[Series], runs: int, warmups: int) -> None:
    """Run the series round-robin, so load that comes and goes affects every series alike.

    Each round starts one series later than the previous one, so no series always runs first.
    A series whose command exits non-zero is marked failed and dropped from later rounds.
    """
    live = list(series)
    for round_ in range(warmups + runs):
        shift = round_ % len(live) if live else 0
        for item in live[shift:] + live[:shift]:
            if item.failure:
                continue
            if item.prepare:
                item.prepare()
            if round_ == warmups and item.measured_from is None:
                item.measured_from = time.time()
            sample = run_once(item.argv, item.env, item.cwd, capture=round_ == 0)
            if sample.returncode != 0:
                tail = sample.stderr.strip().splitlines()[-3:]
                item.failure = f"exit {sample.returncode}" + (
                    f": {' / '.join(tail)}" if tail else ""
                )
                continue
            if round_ >= warmups:
                item.samples.append(sample)
        live = [item for item in live if not item.failure]


def paired_ratio(measured: Series, baseline: Series, *, cpu: bool = False) -> float:
    """The median of the per-round ratios measured / baseline, of wall (or CPU) time.

    Both series ran once in every round, within about a second of each other, so a round's
    ratio compares two runs made at the same speed of the machine. On a shared VM that speed
    drifts over a run (the floor's runs span 2x between min and max), and the ratio of two
    medians, each taken over the whole run, moves with the drift; the median of paired ratios
    does not.
    """
    pairs = zip(measured.samples, baseline.samples, strict=True)
    if cpu:
        return statistics.median(m.cpu / b.cpu for m, b in pairs if b.cpu > 0)
    return statistics.median(m.seconds / b.seconds for m, b in pairs)


def paired_interval(
    measured: Series, baseline: Series, confidence: float = 0.95, resamples: int = 2000
) -> tuple[float, float]:
    """A `confidence` interval for `paired_ratio`: the bootstrap of the median of the rounds'
    ratios (the rounds drawn again with replacement, `resamples` times, with a fixed seed so a
    result file can be checked).

    On a noisy machine the median of 41 rounds moves by a few hundredths from one run to the
    next; the interval says how far, so a ratio near its limit is read as near, not as a verdict.
    """
    ratios = [
        m.seconds / b.seconds for m, b in zip(measured.samples, baseline.samples, strict=True)
    ]
    return median_interval(ratios, confidence, resamples)


def median_interval(
    values: Sequence[float], confidence: float = 0.95, resamples: int = 2000
) -> tuple[float, float]:
    """A `confidence` interval for the median of `values` (one a round): their bootstrap, drawn
    again with replacement `resamples` times, with a fixed seed."""
    import random

    draw = random.Random(0)
    medians = sorted(
        statistics.median(draw.choices(values, k=len(values))) for _ in range(resamples)
    )
    tail = (1 - confidence) / 2
    return medians[int(tail * resamples)], medians[min(resamples - 1, int((1 - tail) * resamples))]


def peaks(series: Series, runs: int) -> list[float]:
    """Peak RSS in MiB of `runs` runs of a series (each after its `prepare`); [] on a failure."""
    found = []
    for _ in range(runs):
        if series.prepare:
            series.prepare()
        code, peak = peak_rss(series.argv, series.env, series.cwd)
        if code != 0:
            series.failure = f"exit {code} when measuring memory"
            return []
        found.append(peak / MIB)
    return found


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


@dataclass(frozen=True, slots=True)
class Row:
    target: str
    measured: str
    baseline: str
    ratio: str
    limit: str
    passed: bool | None  # None: shown for information, not judged
    bare: str = ""  # the measured median over that of `python -c pass`, for timed launches
    cpu: str = ""  # the ratio of CPU-time medians (user + system), for timed ratios
    interval: str = ""  # the ratio's 95% interval (paired_interval), for timed ratios

    @property
    def verdict(self) -> str:
        return {True: "pass", False: "FAIL", None: "info"}[self.passed]


COLUMNS = (
    "target",
    "measured",
    "baseline",
    "ratio",
    "95% interval",
    "limit",
    "pass/fail",
    "× python -c pass",
    "CPU ratio",
)


def table(rows: Sequence[Row]) -> str:
    """A Markdown table, aligned so it also reads well in a terminal."""
    cells = [
        COLUMNS,
        *(
            (
                r.target,
                r.measured,
                r.baseline,
                r.ratio,
                r.interval,
                r.limit,
                r.verdict,
                r.bare,
                r.cpu,
            )
            for r in rows
        ),
    ]
    widths = [max(len(row[i]) for row in cells) for i in range(len(COLUMNS))]

    def line(row: Sequence[str]) -> str:
        return (
            "| "
            + " | ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
            + " |"
        )

    rule = "|" + "|".join("-" * (width + 2) for width in widths) + "|"
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


def machine() -> dict[str, str]:
    """The machine the figures come from: kernel, CPU model and count, memory, Python, load."""
    cpu = platform.processor() or "unknown CPU"
    memory = "unknown"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for text in info:
                if text.startswith("model name"):
                    cpu = text.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo", encoding="utf-8") as info:
            for text in info:
                if text.startswith("MemTotal:"):
                    memory = f"{int(text.split()[1]) / (1 << 20):.1f} GiB"
                    break
    except (OSError, ValueError):
        pass
    try:
        uname = subprocess.run(["uname", "-a"], capture_output=True, text=True).stdout.strip()
    except OSError:
        uname = " ".join(platform.uname())
    return {
        "uname -a": uname,
        "CPU": f"{cpu} x {os.cpu_count()}",
        "memory": memory,
        "Python": f"{sys.version.split()[0]} ({sys.executable})",
        "load average before the run": load(),
    }


def load() -> str:
    """The 1, 5 and 15 minute load averages."""
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"
