#!/usr/bin/env python3
"""Run one command settled and measured, for the end-to-end benchmarks.

Before the command starts, dirty pages are written back: sync(2), then wait
until Dirty + Writeback in /proc/meminfo fall below a threshold (bounded),
so the command neither pays for nor profits from write-back that an earlier
command left. Then the command runs with its output to LOG, and one line
goes to RESULT:

    WALL_S USER_S SYS_S PEAK_RSS_KIB EXIT SETTLED

WALL_S is monotonic wall time from fork to reap; USER_S and SYS_S are the
command's CPU time and PEAK_RSS_KIB its maximum resident set, from wait4(2)
(children the command waited for included); SETTLED is 1 when the dirty
pages drained below the threshold in time, else 0.

Usage: timed.py RESULT LOG COMMAND [ARG]...
  BENCH_DIRTY_KIB  the threshold (default 16384)
  BENCH_SETTLE_S   the longest wait for it, in seconds (default 60)
Python 3 standard library only.
"""
import os
import sys
import time


def dirty_kib():
    n = 0
    with open("/proc/meminfo") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("Dirty", "Writeback"):
                n += int(v.split()[0])
    return n


def settle(limit_kib, limit_s):
    os.sync()
    end = time.monotonic() + limit_s
    while True:
        try:
            if dirty_kib() < limit_kib:
                return 1
        except OSError:  # no /proc: sync(2) alone has to do
            return 1
        if time.monotonic() > end:
            return 0
        time.sleep(0.05)
        os.sync()


def main():
    if len(sys.argv) < 4:
        sys.exit("usage: timed.py RESULT LOG COMMAND [ARG]...")
    result, log, argv = sys.argv[1], sys.argv[2], sys.argv[3:]
    settled = settle(int(os.environ.get("BENCH_DIRTY_KIB", "16384")),
                     float(os.environ.get("BENCH_SETTLE_S", "60")))
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        try:
            os.execvp(argv[0], argv)
        finally:
            os._exit(127)
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    os.close(fd)
    code = os.waitstatus_to_exitcode(status)
    with open(result, "w") as f:
        f.write("%.6f %.6f %.6f %d %d %d\n" % (wall, ru.ru_utime, ru.ru_stime, ru.ru_maxrss,
                                               code, settled))


if __name__ == "__main__":
    main()
