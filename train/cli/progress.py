"""Progress of a long loop: tqdm's bar on a terminal, plain lines on stdout at a steady pace anywhere else.

A bar redrawn in place means nothing in a log file, a pipe or a CI console, and tqdm draws nothing there; without
these lines a run under nohup would print nothing for a whole epoch.
"""
import math
import sys
import time

from tqdm import tqdm

EVERY_S = 30.0   # seconds between two progress lines when the output is not a terminal


class Lines:
    """A tqdm-like progress reporter that writes one plain line every `every` seconds, and one when it closes (when
    `leave` is false, only if it had written one before: a short loop stays silent)."""

    def __init__(self, total, initial=0, desc="", unit="it", file=None, every=EVERY_S, leave=True,
                 clock=time.monotonic):
        self.total, self.n, self.desc, self.unit = total, initial, desc, unit
        self.file = sys.stdout if file is None else file
        self.every, self.leave, self.clock = every, leave, clock
        self.postfix, self.written, self.closed = "", 0, False
        self.last = clock()

    def update(self, n=1):
        self.n += n
        now = self.clock()
        self.last = min(self.last, now)   # a clock set back: the interval counts from there, not from the future
        if now - self.last >= self.every:
            self.write()

    def set_postfix_str(self, text, refresh=True):
        self.postfix = text

    def write(self):
        done = f" ({100 * self.n / self.total:.0f}%)" if self.total else ""
        units = self.unit + ("es" if self.unit.endswith(("ch", "sh", "s", "x")) else "s")
        print(f"{self.desc}: {self.n}/{self.total} {units}{done}" + (f", {self.postfix}" if self.postfix else ""),
              file=self.file, flush=True)
        self.written += 1
        self.last = self.clock()

    def close(self):
        if not self.closed and (self.leave or self.written):
            self.write()
        self.closed = True


def bar(total, initial=0, desc="", unit="it", enabled=True, leave=True, terminal=None):
    """A tqdm bar on stderr when it is a terminal (or `terminal`, a file), else Lines on stdout, with the run's other
    lines (stderr is kept for warnings and errors); a silent one when not enabled."""
    terminal = sys.stderr if terminal is None else terminal
    if enabled and not _is_terminal(terminal):
        return Lines(total, initial, desc, unit, sys.stdout, leave=leave)
    return tqdm(total=total, initial=initial, desc=desc, unit=unit, dynamic_ncols=True, leave=leave, file=terminal,
                disable=not enabled)


def iterate(items, desc="", unit="it", enabled=True, leave=True):
    """Yield the items of a list while reporting progress as bar() does."""
    progress = bar(len(items), desc=desc, unit=unit, enabled=enabled, leave=leave)
    try:
        for item in items:
            yield item
            progress.update(1)
    finally:
        progress.close()


def _is_terminal(file):
    try:
        return file.isatty()
    except (AttributeError, ValueError):   # no isatty, or a closed file
        return False


def elapsed(start, now):
    """Seconds from one reading of a clock to a later one; 0.0 when the clock stood still or went back (a frozen
    fake time, a clock set back), so that no speed or time left is negative."""
    return max(0.0, now - start)


def per_second(amount, seconds):
    """amount / seconds; None (unknown) when no time has passed."""
    return amount / seconds if seconds > 0 else None


def training_postfix(window, steps_left):
    """The recent loss (the mean of the steps since the last train record; the epoch line gives the epoch's mean),
    learning rate, speed and the time left for the whole run (steps_left of them; the bar shows the epoch's); "?"
    for a speed or time left when no time has passed.
    window: the trainer's sums since the last record, with the last record's figures when it holds no step yet."""
    w = window
    loss = w["loss"] / w["steps"] if w["steps"] else w.get("last", float("nan"))
    recent = w["steps"] or w.get("last_steps", 0)
    speed = per_second(w["tokens"], w["time"]) if w["steps"] else w.get("speed")
    step_time = w["time"] / w["steps"] if w["steps"] else w.get("step_time")
    seconds = steps_left * step_time if step_time else (0.0 if steps_left == 0 else None)
    eta = f"{int(seconds // 3600)}:{int(seconds % 3600 // 60):02d}:{int(seconds % 60):02d}" \
        if seconds is not None and math.isfinite(seconds) else "?"
    return (f"label-smoothed loss {loss:.3f} (last {recent} step{'s' if recent != 1 else ''}), lr "
            f"{w.get('lr', 0):.2e}, {'?' if speed is None else f'{speed:,.0f}'} tok/s, run ETA {eta}")
