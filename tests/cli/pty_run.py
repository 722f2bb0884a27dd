"""Run a command with its stderr on a pseudo-terminal (as in an interactive
shell) and its stdout to a file.

    pty_run.py OUT ERR CMD [ARG...]

OUT gets the command's stdout, ERR the bytes it wrote to the terminal;
the exit status is the command's. For the progress scenarios of
tests/cli/progress.sh: a progress line appears only on a terminal.
"""
import os
import pty
import subprocess
import sys


def main():
    out_path, err_path, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
    master, slave = pty.openpty()
    with open(out_path, "wb") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=slave)
    os.close(slave)
    got = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO once the child has closed its end
            break
        if not chunk:
            break
        got += chunk
    os.close(master)
    with open(err_path, "wb") as err:
        err.write(got)
    sys.exit(proc.wait())


if __name__ == "__main__":
    main()
