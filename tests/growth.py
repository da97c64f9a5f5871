"""How cost grows with input, checked without a wall clock (issue 44): the CPU time this process
spends on two sizes of one input, compared in one run. A busy machine slows both alike, and CPU
time does not count the time another process had the core, so the ratio holds where an absolute
limit ("over 20 s: not linear") failed on a loaded 2-core machine. Speed targets are benchmarks
(benchmarks/, `make bench`), not tests."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

# Linear work on `FACTOR` times the input costs about FACTOR times as much (measured: 7.5 to 9.5
# for the parsers of tests/config/interop/test_hostile_text.py); quadratic work, FACTOR squared (64).
# Up to SLACK times linear passes: between the two, with room for a busy machine's noise.
FACTOR = 8
SLACK = 3
# The smaller input is worked on until this much CPU time is spent, so that its figure is not
# lost in the clock's noise.
MEASURED = 0.05


class NotLinearError(AssertionError):
    """The larger input cost more than SLACK times what linear growth allows."""


def cpu_seconds(work: Callable[[], object], at_least: float = 0.0) -> float:
    """The CPU time of this process for one run of `work`: the mean of as many runs as it
    takes to spend `at_least` seconds (one at least)."""
    runs = 0
    began = time.process_time()
    while True:
        work()
        runs += 1
        spent = time.process_time() - began
        if spent >= at_least:
            return spent / runs


@contextmanager
def _cpu_budget(seconds: float, message: str) -> Iterator[None]:
    """NotLinearError once this process has spent `seconds` of CPU time inside the block: a
    quadratic case fails at its budget rather than after minutes."""

    def over(signum: int, frame: object) -> None:
        raise NotLinearError(message)

    previous = signal.signal(signal.SIGPROF, over)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)


def assert_linear(make: Callable[[int], Callable[[], object]], size: int) -> None:
    """`make(n)` is the work on an input of n units (built outside the measure); the work on
    FACTOR times `size` must cost at most SLACK times FACTOR times the work on `size`."""
    small, large = make(size), make(size * FACTOR)
    small()  # once unmeasured: imports, compiled patterns and caches are not the input's cost
    unit = cpu_seconds(small, MEASURED)
    allowed = unit * FACTOR * SLACK
    message = (
        f"{FACTOR} times the input cost more than {FACTOR * SLACK} times as much CPU time "
        f"({unit:.4f} s for {size:,}): not linear"
    )
    with _cpu_budget(allowed, message):
        spent = cpu_seconds(large)
    assert spent <= allowed, message
