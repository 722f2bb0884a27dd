"""A small HTTP server for the remote-input tests, serving the files of one
directory with range support and misbehaving on purpose, by the first part
of the path:

  /ok/NAME            ranges as asked (206, Content-Range, ETag)
  /ignore-range/NAME  200 and the whole file, whatever the Range
  /wrong-range/NAME   206 whose Content-Range starts one byte late
  /change/NAME        a new ETag on every answer after the first
  /short/NAME         the body of a range cut at half, the connection closed
  /busy-N/NAME        503 with Retry-After: 0 for the first N requests, then ok
  /slow-N/NAME        429 with Retry-After: 0 for the first N requests, then ok
  /to-ftp/NAME        302 to ftp://HOST/NAME
  /hop/HOST:PORT/REST 302 to http://HOST:PORT/REST (another host name)
  /delay-MS/NAME      as /ok/NAME, each answer MS milliseconds late
  /after-N-MODE/NAME  as /ok/NAME for the first N requests, then as
                      /MODE/NAME (ignore-range, wrong-range, short) or, for
                      MODE busy, 503 without Retry-After
  /ORG/REPO/resolve/REV/NAME   as /ok/NAME (the hub's layout)

Each request is logged to LOG as one line: method, path, Range, status,
body bytes sent, and the Authorization header ("-" when absent). LOG.open
gets one line per request as it starts: how many requests were open then,
itself included, so that its largest number is the most requests the
server had in flight at once.

usage: python3 fault_server.py DIR PORTFILE LOG
It binds 127.0.0.1 on a free port, writes the port to PORTFILE, and serves
until killed.
"""
import http.server
import os
import re
import socketserver
import sys
import threading
import time

ROOT, PORTFILE, LOG = sys.argv[1], sys.argv[2], sys.argv[3]
lock = threading.Lock()
counts = {}
open_now = 0


def count(key):
    with lock:
        counts[key] = counts.get(key, 0) + 1
        return counts[key]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args):
        pass

    def log(self, status, nbytes):
        with lock, open(LOG, "a") as f:
            f.write("%s %s %s %d %d %s\n" % (self.command, self.path,
                                            self.headers.get("Range", "-"), status, nbytes,
                                            self.headers.get("Authorization", "-")))

    # Each request is logged before its answer is sent, so that a client
    # that has its answer finds the line in the log, in the order asked.
    def plain(self, status, extra=()):
        self.log(status, 0)
        self.send_response(status)
        for k, v in extra:
            self.send_header(k, v)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        global open_now
        with lock:
            open_now += 1
            with open(LOG + ".open", "a") as f:
                f.write("%d\n" % open_now)
        try:
            self.answer()
        finally:
            with lock:
                open_now -= 1

    def answer(self):
        parts = self.path.split("/", 2)
        mode, name = (parts[1], parts[2]) if len(parts) == 3 else ("", "")
        a = re.match(r"^after-(\d+)-(ignore-range|wrong-range|short|busy)$", mode)
        if a:
            mode = a.group(2) if count(self.path) > int(a.group(1)) else "ok"
            if mode == "busy":
                return self.plain(503)
        m = re.match(r"^(busy|slow)-(\d+)$", mode)
        if m and count(self.path) <= int(m.group(2)):
            return self.plain(503 if m.group(1) == "busy" else 429, [("Retry-After", "0")])
        if mode == "to-ftp":
            return self.plain(302, [("Location", "ftp://127.0.0.1/" + name)])
        if mode == "hop":
            return self.plain(302, [("Location", "http://" + name)])
        d = re.match(r"^delay-(\d+)$", mode)
        if d:
            time.sleep(int(d.group(1)) / 1000.0)
            mode = "ok"
        hub = re.match(r"^[^/]+/[^/]+/resolve/[^/]+/(.*)$", self.path[1:])
        if hub:
            mode, name = "ok", hub.group(1)
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path):
            return self.plain(404)
        size = os.path.getsize(path)
        n = count("etag " + self.path)
        etag = '"v%d"' % (n if mode == "change" else 1)
        rng = re.match(r"^bytes=(\d+)-(\d+)$", self.headers.get("Range", ""))
        if mode == "ignore-range" or not rng:
            a, b, status = 0, size - 1, 200
        else:
            a, b, status = int(rng.group(1)), min(int(rng.group(2)), size - 1), 206
        with open(path, "rb") as f:
            f.seek(a)
            body = f.read(b - a + 1)
        sent = body[: len(body) // 2] if mode == "short" else body
        self.log(status, len(sent))
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("ETag", etag)
        self.send_header("Content-Length", str(len(body)))
        if status == 206:
            s = a + 1 if mode == "wrong-range" else a
            self.send_header("Content-Range", "bytes %d-%d/%d" % (s, b + (s - a), size))
        self.end_headers()
        if mode == "short":
            self.close_connection = True
        try:
            self.wfile.write(sent)
            self.wfile.flush()
        except OSError:
            pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 128  # a listen backlog for many connections at once

    def handle_error(self, request, client_address):
        pass  # a client that stops reading, as stfix does on purpose


srv = Server(("127.0.0.1", 0), Handler)
with open(PORTFILE + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
