"""The status line: one line on a terminal saying what is still running, rewritten in place.

Plain text and carriage returns, no rich: a launch on a terminal shows it while the contexts'
commands run, so it is kept apart from start.ui.display, which a launch never imports.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import IO, TYPE_CHECKING

from start.ui.console import printable

if TYPE_CHECKING:
    import threading


class StatusLine:
    """One line on a terminal saying what is still running, rewritten in place; `([])` clears it.

    With `elapsed`, the line also counts the whole seconds since it was first shown, as uv's
    does, redrawn each second by a thread of its own until it is cleared. Plain text and carriage
    returns only, so it works on any terminal, dumb ones included.
    """

    def __init__(
        self,
        stream: IO[str] | None = None,
        prefix: str = "start: running ",
        *,
        elapsed: bool = False,
        clock: Callable[[], float] | None = None,
    ) -> None:
        import time

        self.stream = stream if stream is not None else sys.stderr
        self.prefix = prefix
        self.shown = 0  # characters on the line now
        self.elapsed = elapsed
        self.clock = clock or time.monotonic
        self.running: list[str] = []
        self.started: float | None = None
        self._stop: threading.Event | None = None
        self._lock: threading.Lock | None = None

    def __call__(self, running: list[str]) -> None:
        if not self.elapsed:
            self.running = list(running)
            self._draw(running)
            return
        import threading

        if self._lock is None:
            self._lock = threading.Lock()
        with self._lock:
            self.running = list(running)
            if running and self.started is None:
                self.started = self.clock()
            if not running:
                self.started = None
            self._draw(self.running)
        if running and self._stop is None:
            self._stop = threading.Event()
            threading.Thread(target=self._tick, args=(self._stop,), daemon=True).start()
        elif not running and self._stop is not None:
            self._stop.set()
            self._stop = None

    def above(self, write: Callable[[], None]) -> None:
        """Let `write()` write whole lines on the stream above the line: the line is cleared
        first and drawn again after, so the two never mix. Called by one thread at a time (the
        caller's), while the line's own thread may redraw it."""
        import threading

        if self._lock is None:
            self._lock = threading.Lock()
        with self._lock:
            if self.shown:
                self._write("\r" + " " * self.shown + "\r")
                self.shown = 0
            write()
            if self.running:
                self._draw(self.running)

    def _tick(self, stop: threading.Event) -> None:
        """Redraw at each whole second since the line was first shown, until stopped."""
        while True:
            started = self.started
            wait = 1.0 if started is None else 1.0 - (self.clock() - started) % 1.0
            if stop.wait(max(wait, 0.05)):
                return
            self.tick()

    def tick(self) -> None:
        """Redraw the line with the time elapsed now."""
        assert self._lock is not None
        with self._lock:
            if self.running:
                self._draw(self.running)

    def _draw(self, running: list[str]) -> None:
        text = ""
        if running:
            text = printable(self.prefix + ", ".join(running) + " …")
            seconds = int(self.clock() - self.started) if self.started is not None else 0
            clock = f" {seconds} s" if seconds >= 1 else ""
            try:
                width = os.get_terminal_size(self.stream.fileno()).columns
            except (OSError, ValueError, AttributeError):
                width = 0
            width = width or 80  # a new pty may report 0 columns
            if len(text + clock) > width - 1:  # the time stays in view; the names are cut
                text = text[: max(0, width - 2 - len(clock))] + "…"
            text += clock
        if not text and not self.shown:
            return  # nothing on the line to clear
        self._write("\r" + text.ljust(self.shown) + ("\r" if not text else ""))
        self.shown = len(text)

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except OSError:
            pass  # the terminal went away (SIGHUP): a status line is not worth an error
