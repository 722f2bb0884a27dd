#!/usr/bin/env python3
"""Hold the output lock of OUT as another stfix run writing OUT would: bind
the abstract socket the library binds, named from the output directory's
device and inode and the file name (lib/io/out_lock.c).

  hold_lock.py OUT CMD [ARG...]   run CMD while holding it; exit with CMD's status
  hold_lock.py OUT --until FILE   hold it, create FILE.held, and let go once FILE exists
                                  (polled every 10 ms for at most 60 s)
"""
import hashlib
import os
import socket
import struct
import subprocess
import sys
import time

out = sys.argv[1]
st = os.stat(os.path.dirname(out) or ".")
h = hashlib.sha256(struct.pack("=QQ", st.st_dev, st.st_ino) + os.path.basename(out).encode())
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0stfix-output-lock/" + h.hexdigest()[:32])
if sys.argv[2] != "--until":
    sys.exit(subprocess.call(sys.argv[2:]))
go = sys.argv[3]
open(go + ".held", "w").close()
for _ in range(6000):
    if os.path.exists(go):
        break
    time.sleep(0.01)
s.close()
