#!/usr/bin/env python3
"""faultd - a static HTTP/1.1 server for tests that injects faults on request.

  faultd.py [-p PORT] [--port-file FILE] [--log-file FILE] [--json-index]
            [--no-etag] [--plain-index] [--fault RULE]... [-v] ROOT

Serves the directory ROOT on 127.0.0.1 like a correct static server (nginx
is the model): HEAD and GET, keep-alive, single byte ranges (bytes=a-b,
bytes=a-, bytes=-n -> 206 with "Content-Range: bytes a-b/total"; 416 with
"bytes */total" when unsatisfiable; a Range that does not parse, or has
several ranges, is ignored -> 200), a strong quoted ETag that changes with
the file (inode, mtime, size), Last-Modified, If-Match (412 on mismatch),
If-None-Match (304), If-Range.  A directory is answered with nginx's HTML
autoindex (exact sizes, dot files hidden, directories first), or with
nginx's JSON autoindex for ?format=json (or always with --json-index; then
?format=html gives HTML); both are byte for byte what nginx 1.22 sends
for the same tree.  A directory without the trailing '/' gets a 301 to
it.  --no-etag leaves the ETag out (python -m http.server, many CDNs):
Last-Modified and If-Unmodified-Since (412 when the file is newer) are
then all a client can pin a version with.  --plain-index answers a
directory with an HTML index without sizes or dates, as python -m
http.server (and Apache, lighttpd) write it.

PORT 0 (the default) lets the kernel choose.  Once listening, faultd
writes the port to FILE (atomically: the file appears complete) and
prints "faultd: serving ROOT on http://127.0.0.1:PORT/" to stderr.  It
runs until SIGTERM or SIGINT, then exits 0 at once, even with requests
hanging.

FAULT RULES.  A rule is a query string, the same on the command line
(--fault 'path=/a.bin&mode=status:500&count=2') and at run time
(curl 'http://127.0.0.1:PORT/_fault?path=/a.bin&mode=status:500&count=2',
GET or POST).  Keys:
  mode=MODE      what to do (below); required
  path=GLOB      URL path (decoded, no query) it applies to, fnmatch
                 pattern; default '*' (every path but the /_ endpoints)
  method=M       only requests with this method (GET, HEAD); default any
  count=N        apply to the next N matching requests, then vanish;
                 default 1; 'inf' for ever
  skip=K         let the first K matching requests pass untouched first
  delay=MS       also delay the response by MS (any mode)
  retry_after=S  add "Retry-After: S" (any status mode)
  rst=1          cut and drop close with a TCP RST instead of a FIN
Modes:
  status:CODE    answer CODE with a small body: 500 -> S3-style
                 <Error><Code>InternalError</Code>, 503 -> <Code>SlowDown,
                 429 -> "Retry-After: 1" unless retry_after= says other,
                 anything else -> a text body.  The connection stays open.
  cut:BYTES      send the headers of the normal answer and BYTES of its
                 body, then close the connection.
  drop           read the request, close the connection without a word.
  ignore_range   a GET with a Range is answered 200 with the whole file
                 (only ranged GETs match).
  wrong_range[:SHIFT]  a ranged GET is answered 206 with the bytes and
                 Content-Range of the range moved by SHIFT bytes (default:
                 its own length, i.e. the next range; wrapped/clamped to
                 the file so that it is always a different, valid range).
  replace_after:N  after N GETs of the file (the rule's path, which must
                 name one file), before answering the next one, replace it
                 atomically (write + rename) with different bytes of the
                 same size (every byte XOR 0xA5): new inode, mtime, ETag.
                 Fires once.  /_replace?path=P does it at once.
  hang           read the request and never answer; the socket is held
                 until faultd exits.
  hang_body[:BYTES]  send the headers (and BYTES of the body, default 0)
                 then stall until faultd exits.
  delay:MS       answer normally after MS milliseconds.
  trickle:BPS    a GET of a file or a directory index: the normal headers,
                 then the body at BPS bytes a second (one write per byte),
                 for ever if need be; stops when faultd exits or the
                 client leaves.
  endless:CODE   answer CODE with no Content-Length (Connection: close)
                 and a body that never ends (1 KiB every 10 ms).
  s3_list:NEW    answer with a ListObjectsV2 page (ListBucketResult).  For
                 the bucket's root (prefix=''): one key "k" and one
                 directory "d/", complete.  For prefix=P: 1000 keys
                 "PkPAGE-I" (size 1) and IsTruncated, NEW=0 with the same
                 NextContinuationToken every page, NEW=1 with a new one
                 each page (a listing without end).  Use with
                 path=/BUCKET, count=inf.
The first rule (in the order added) that matches a request applies to it;
only one rule applies per request.  Control endpoints (never faulted, never
logged):
  GET|POST /_fault?RULE      add a rule -> {"id": N}
  GET /_fault                the rules left, as JSON
  GET|POST|DELETE /_fault?clear=1 (or DELETE /_fault)   remove all rules
  GET|POST /_replace?path=P  replace the file now (as replace_after)
  GET /_log[?since=SEQ]      the request log as JSON lines
  GET|POST|DELETE /_log?clear=1 (or DELETE /_log)   empty it
  GET /_ping                 "pong"

REQUEST LOG.  One JSON object per request, in the order requests are
answered (hang and hang_body are logged when they start to stall):
  {"seq": 1, "t": 0.0123, "conn": 3, "method": "GET", "path": "/a.bin",
   "query": "", "range": "bytes=0-99", "if_match": null, "if_range": null,
   "if_unmodified_since": null,
   "status": 206, "bytes": 100, "asked": [0, 99], "sent": [0, 99],
   "fault": null, "ms": 0.4}
t: seconds since start; conn: connection number (same number = reused
keep-alive connection); status: the status sent (0 for hang and drop);
bytes: body bytes actually sent; asked: the byte range (first, last) the
Range header resolved to for this file, null if none or ignored; sent: the
range the body was declared to hold (Content-Range, or the whole file for
a 200 GET; null for HEAD and error answers; a cut sends fewer bytes than
it declares); fault: the mode that applied, if any; ms: time to answer.
--log-file FILE also appends every line to FILE as it happens; -v prints
a line per request to stderr (http.server's format).

DESIGN: the stdlib ThreadingHTTPServer, one daemonic thread per connection,
so a hanging request never blocks exit; shutdown just sets an event that
hanging threads wait on, stops accepting and leaves with os._exit().  Each
answer opens the file once and takes size, ETag and bytes from that one
descriptor, so a concurrent replacement is never mixed into an answer (it
shows up as a new ETag on the next request, like an object store).  The
rule table and the log are guarded by one lock each.
"""

import argparse
import email.utils
import errno
import fnmatch
import html
import itertools
import json
import os
import signal
import socket
import stat
import struct
import sys
import tempfile
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STOP = threading.Event()
START = time.monotonic()
MODES = ("status", "cut", "drop", "ignore_range", "wrong_range",
         "replace_after", "hang", "hang_body", "delay", "trickle",
         "endless", "s3_list")
RANGE_MODES = ("ignore_range", "wrong_range")
QUIET_ERRNOS = (errno.EPIPE, errno.ECONNRESET, errno.ECONNABORTED,
                errno.EBADF, errno.ENOTCONN, errno.ESHUTDOWN)


def quiet_error(exc):
    """A client that went away: not worth a line."""
    return isinstance(exc, (ConnectionError, TimeoutError)) or \
        (isinstance(exc, OSError) and exc.errno in QUIET_ERRNOS)


class Rule:
    ids = itertools.count(1)

    def __init__(self, qs):
        q = urllib.parse.parse_qs(qs, keep_blank_values=True)
        get = lambda k, d=None: q[k][-1] if k in q else d
        unknown = set(q) - {"mode", "path", "method", "count", "skip",
                            "delay", "retry_after", "rst"}
        if unknown:
            raise ValueError("unknown key(s): " + ", ".join(sorted(unknown)))
        mode = get("mode")
        if not mode:
            raise ValueError("mode= is required")
        name, _, arg = mode.partition(":")
        if name not in MODES:
            raise ValueError("unknown mode " + name)
        self.mode = mode
        self.name = name
        self.arg = int(arg) if arg else None
        if name in ("status", "cut", "replace_after", "delay", "trickle",
                    "endless", "s3_list") and \
                self.arg is None:
            raise ValueError(name + " needs :N")
        if self.arg is not None and self.arg < 0:
            raise ValueError("negative argument")
        if name in ("status", "endless") and not 100 <= self.arg <= 599:
            raise ValueError("bad status")
        self.path = get("path", "*")
        self.method = get("method")
        self.method = self.method.upper() if self.method else None
        c = get("count", "1")
        self.count = None if c in ("inf", "-1") else int(c)
        if self.count is not None and self.count < 1:
            raise ValueError("count must be >= 1 or inf")
        self.skip = int(get("skip", "0"))
        self.delay = int(get("delay", "0"))
        ra = get("retry_after")
        if ra is None and name == "status" and self.arg == 429:
            ra = "1"
        self.retry_after = ra
        self.rst = get("rst", "0") not in ("0", "")
        self.id = next(Rule.ids)
        self.hits = 0
        self.gets = 0		# replace_after: GETs of the file seen

    def describe(self):
        return {"id": self.id, "mode": self.mode, "path": self.path,
                "method": self.method, "count": self.count,
                "skip": self.skip, "delay": self.delay,
                "retry_after": self.retry_after, "rst": self.rst,
                "hits": self.hits}


class State:
    def __init__(self, root, json_index, log_file, no_etag=False,
                 plain_index=False):
        self.root = os.path.realpath(root)
        self.json_index = json_index
        self.no_etag = no_etag
        self.plain_index = plain_index
        self.rules = []
        self.rlock = threading.Lock()
        self.log = []
        self.llock = threading.Lock()
        self.seq = 0
        self.log_file = open(log_file, "a") if log_file else None
        self.conns = itertools.count(1)
        self.replace_lock = threading.Lock()

    def add_rule(self, rule):
        with self.rlock:
            self.rules.append(rule)

    def clear_rules(self):
        with self.rlock:
            self.rules = []

    def match(self, method, path, ranged, fspath):
        """The rule that applies to this request (its count taken), or
        None.  replace_after rules are run here, they never 'apply'."""
        replace = None
        found = None
        with self.rlock:
            for r in list(self.rules):
                if not fnmatch.fnmatchcase(path, r.path):
                    continue
                if r.method and r.method != method:
                    continue
                if r.name == "replace_after":
                    if method != "GET":
                        continue
                    r.gets += 1
                    if r.gets > r.arg:
                        self.rules.remove(r)
                        r.hits += 1
                        replace = r
                    continue
                if found:
                    continue
                if r.name in RANGE_MODES and (method != "GET" or not ranged):
                    continue
                if r.skip > 0:
                    r.skip -= 1
                    continue
                r.hits += 1
                if r.count is not None:
                    r.count -= 1
                    if r.count == 0:
                        self.rules.remove(r)
                found = r
        if replace and fspath:
            self.replace(fspath)
        return found

    def replace(self, fspath):
        """Replace the file at fspath with its bytes XOR 0xA5 (same size),
        atomically: readers that opened it keep the old content."""
        with self.replace_lock:
            d = os.path.dirname(fspath)
            fd, tmp = tempfile.mkstemp(dir=d, prefix=".faultd.")
            try:
                with open(fspath, "rb") as src, os.fdopen(fd, "wb") as dst:
                    while True:
                        b = src.read(1 << 20)
                        if not b:
                            break
                        n = int.from_bytes(b, "little")
                        mask = int.from_bytes(b"\xa5" * len(b), "little")
                        dst.write((n ^ mask).to_bytes(len(b), "little"))
                    st = os.fstat(src.fileno())
                os.chmod(tmp, st.st_mode & 0o7777)
                os.replace(tmp, fspath)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise

    def record(self, entry):
        with self.llock:
            self.seq += 1
            entry = dict(seq=self.seq, t=round(time.monotonic() - START, 6),
                         **entry)
            self.log.append(entry)
            if self.log_file:
                self.log_file.write(json.dumps(entry) + "\n")
                self.log_file.flush()

    def log_since(self, since):
        with self.llock:
            return [e for e in self.log if e["seq"] >= since]

    def clear_log(self):
        with self.llock:
            self.log = []


def etag_of(st):
    return '"%x-%x-%x"' % (st.st_ino, st.st_mtime_ns, st.st_size)


def httpdate(t):
    return email.utils.formatdate(t, usegmt=True)


def etag_list_matches(header, etag):
    """If-Match / If-None-Match: '*' or a list of entity tags."""
    header = header.strip()
    if header == "*":
        return True
    for t in header.split(","):
        t = t.strip()
        if t.startswith("W/"):	# never matches in strong comparison
            t = None
        if t == etag:
            return True
    return False


def parse_range(value, size):
    """(start, end) inclusive, 'unsatisfiable', or None (ignore the
    header: serve the whole file)."""
    if not value:
        return None
    unit, _, spec = value.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    a, sep, b = spec.strip().partition("-")
    if not sep:
        return None
    a, b = a.strip(), b.strip()
    if (a and not a.isdigit()) or (b and not b.isdigit()) or not (a or b):
        return None
    if not a:			# suffix: the last b bytes
        n = int(b)
        if n == 0 or size == 0:
            return "unsatisfiable"
        return (max(0, size - n), size - 1)
    start = int(a)
    end = int(b) if b else size - 1
    if b and end < start:
        return "unsatisfiable"
    if start >= size:
        return "unsatisfiable"
    return (start, min(end, size - 1))


def wrong_range(start, end, size, shift):
    """A valid range of the file different from [start, end]."""
    n = end - start + 1
    if shift is None:
        shift = n
    if n >= size:		# the whole file: send all but the first byte
        return (1, size - 1) if size > 1 else (0, 0)
    s = (start + shift) % size
    if s + n > size:
        s = size - n
    if s == start:
        s = 0 if start else size - n
    return (s, s + n - 1)


def s3_error(code, message, resource):
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code>'
            '<Message>%s</Message><Resource>%s</Resource>'
            '<RequestId>faultd</RequestId></Error>\n' %
            (code, message, html.escape(resource))).encode()


def autoindex_html(urlpath, entries):
    """nginx's autoindex page (autoindex_exact_size on)."""
    title = html.escape(urlpath)
    out = ["<html>\r\n<head><title>Index of %s</title></head>\r\n<body>\r\n"
           "<h1>Index of %s</h1><hr><pre><a href=\"../\">../</a>\r\n" %
           (title, title)]
    for name, isdir, st in entries:
        shown = name + ("/" if isdir else "")
        href = urllib.parse.quote(shown)
        if len(shown) > 50:
            text = html.escape(shown[:47]) + "..&gt;"
            pad = 0
        else:
            text = html.escape(shown)
            pad = 50 - len(shown)
        tm = time.gmtime(st.st_mtime)
        date = time.strftime("%d-%b-%Y %H:%M", tm)
        size = "%19s" % ("-" if isdir else str(st.st_size))
        out.append('<a href="%s">%s</a>%s %s %s\r\n' %
                   (href, text, " " * pad, date, size))
    out.append("</pre><hr></body>\r\n</html>\r\n")
    return "".join(out).encode()


def plain_index(urlpath, entries):
    """python -m http.server's listing: names only."""
    title = html.escape(urlpath)
    out = ['<!DOCTYPE HTML>\n<html lang="en">\n<head>\n<meta charset="utf-8">'
           '\n<title>Directory listing for %s</title>\n</head>\n<body>\n'
           '<h1>Directory listing for %s</h1>\n<hr>\n<ul>\n' % (title, title)]
    for name, isdir, st in entries:
        shown = name + ("/" if isdir else "")
        out.append('<li><a href="%s">%s</a></li>\n' %
                   (urllib.parse.quote(shown), html.escape(shown)))
    out.append("</ul>\n<hr>\n</body>\n</html>\n")
    return "".join(out).encode()


def s3_list_page(bucket, query, new):
    """A ListObjectsV2 page that is never the last (see s3_list)."""
    q = urllib.parse.parse_qs(query)
    prefix = q.get("prefix", [""])[-1]
    tok = q.get("continuation-token", ["0"])[-1]
    page = int(tok) if tok.isdigit() else 0
    nxt = str(page + 1) if new else "7"
    lm = "<LastModified>2026-11-23T09:44:02.000Z</LastModified>"
    if not prefix:
        keys = ("<Contents><Key>k</Key><Size>1</Size><ETag>&quot;e&quot;"
                "</ETag>%s</Contents><CommonPrefixes><Prefix>d/</Prefix>"
                "</CommonPrefixes>" % lm)
        more = "<IsTruncated>false</IsTruncated>"
    else:
        keys = "".join("<Contents><Key>%sk%d-%d</Key><Size>1</Size>"
                       "<ETag>&quot;e%d-%d&quot;</ETag>%s</Contents>" %
                       (html.escape(prefix), page, i, page, i, lm)
                       for i in range(1000))
        more = ("<IsTruncated>true</IsTruncated><NextContinuationToken>%s"
                "</NextContinuationToken>" % nxt)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult>'
            '<Name>%s</Name><Prefix>%s</Prefix><MaxKeys>1000</MaxKeys>'
            '<Delimiter>/</Delimiter>%s%s</ListBucketResult>' %
            (html.escape(bucket), html.escape(prefix), keys,
             more)).encode()


def autoindex_json(entries):
    """nginx's autoindex_format json, laid out as nginx does."""
    items = []
    for name, isdir, st in entries:
        e = '{ "name":%s, "type":"%s", "mtime":"%s"' % (
            json.dumps(name, ensure_ascii=False),
            "directory" if isdir else "file", httpdate(st.st_mtime))
        if not isdir:
            e += ', "size":%d' % st.st_size
        items.append(e + " }")
    return ("[\r\n" + ",\r\n".join(items) + "\r\n]").encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # headers and body are separate writes: without this, Nagle holds
    # the body of a small answer until the client's delayed ACK (40 ms)
    disable_nagle_algorithm = True
    verbose = False

    def version_string(self):
        return "faultd"

    def setup(self):
        super().setup()
        self.conn_id = next(self.server.state.conns)

    def log_message(self, fmt, *args):
        if self.verbose:
            sys.stderr.write("faultd: %s\n" % (fmt % args))

    def handle(self):
        try:
            super().handle()
        except Exception as e:
            self.close_connection = True
            if not quiet_error(e):
                sys.stderr.write("faultd: error serving %s: %r\n" %
                                 (self.path, e))

    def do_GET(self):
        self.serve("GET")

    def do_HEAD(self):
        self.serve("HEAD")

    def do_POST(self):
        self.serve("POST")

    def do_DELETE(self):
        self.serve("DELETE")

    # -- plumbing ---------------------------------------------------------

    def drain_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        while n > 0:
            b = self.rfile.read(min(n, 65536))
            if not b:
                break
            n -= len(b)

    def simple(self, code, body, ctype="text/plain", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        return len(body) if self.command != "HEAD" else 0

    def abort(self, rst):
        """Close the connection now: FIN, or RST with rst.  The socket
        object is detached so that the server's own shutdown(SHUT_WR)
        cannot send a FIN before the RST, and so that the descriptor is
        closed now, not when rfile and wfile let go of it."""
        self.close_connection = True
        try:
            if rst:
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                           struct.pack("ii", 1, 0))
            else:
                self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            os.close(self.connection.detach())
        except OSError:
            pass

    def stall(self, rst):
        STOP.wait()
        self.abort(rst)

    # -- requests ---------------------------------------------------------

    def serve(self, method):
        st = self.server.state
        t0 = time.monotonic()
        self.drain_body()
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        if path.startswith("/_"):
            self.control(path, url.query)
            return
        entry = {"conn": self.conn_id, "method": method, "path": path,
                 "query": url.query, "range": self.headers.get("Range"),
                 "if_match": self.headers.get("If-Match"),
                 "if_range": self.headers.get("If-Range"),
                 "if_unmodified_since":
                     self.headers.get("If-Unmodified-Since"),
                 "status": 0, "bytes": 0, "asked": None, "sent": None,
                 "fault": None}
        fspath = self.fs_path(path)
        rule = st.match(method, path, "Range" in self.headers, fspath)
        self.t0 = t0
        self.logged = False
        try:
            if rule:
                entry["fault"] = rule.mode
                if rule.delay:
                    time.sleep(rule.delay / 1000.0)
            self.answer(method, path, url.query, fspath, rule, entry)
        finally:
            self.log_entry(entry)

    def log_entry(self, entry):
        """Log the request once: before a stall, else when it ends."""
        if not self.logged:
            self.logged = True
            entry["ms"] = round((time.monotonic() - self.t0) * 1000.0, 3)
            self.server.state.record(entry)

    def fs_path(self, path):
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if ".." in parts or "\0" in path:
            return None
        return os.path.join(self.server.state.root, *parts)

    def answer(self, method, path, query, fspath, rule, entry):
        st = self.server.state
        name = rule.name if rule else None
        if name == "delay":
            time.sleep(rule.arg / 1000.0)
        elif name == "status":
            extra = []
            if rule.retry_after is not None:
                extra.append(("Retry-After", rule.retry_after))
            if rule.arg == 500:
                body = s3_error("InternalError", "We encountered an "
                                "internal error. Please try again.", path)
                ctype = "application/xml"
            elif rule.arg == 503:
                body = s3_error("SlowDown", "Please reduce your request "
                                "rate.", path)
                ctype = "application/xml"
            else:
                body = ("%d injected by faultd\n" % rule.arg).encode()
                ctype = "text/plain"
            entry["status"] = rule.arg
            entry["bytes"] = self.simple(rule.arg, body, ctype, extra)
            return
        elif name == "drop":
            self.abort(rule.rst)
            return
        elif name == "hang":
            self.log_entry(entry)
            self.stall(rule.rst)
            return
        elif name == "s3_list":
            entry["status"] = 200
            entry["bytes"] = self.simple(200, s3_list_page(
                path.strip("/"), query, rule.arg), "application/xml")
            return
        elif name == "endless":
            self.log_entry(entry)
            self.close_connection = True
            self.send_response(rule.arg)
            self.send_header("Content-Type", "text/html")
            self.send_header("Connection", "close")
            self.end_headers()
            chunk = b"<p>error</p>" * 85 + b"\n"
            while not STOP.is_set():
                self.wfile.write(chunk)
                self.wfile.flush()
                time.sleep(0.01)
            return

        if fspath is None:
            entry["status"] = 400
            entry["bytes"] = self.simple(400, b"bad path\n")
            return
        try:
            fd = os.open(fspath, os.O_RDONLY | os.O_CLOEXEC)
        except OSError as e:
            code = {errno.ENOENT: 404, errno.ENOTDIR: 404,
                    errno.EACCES: 403, errno.EISDIR: 403}.get(e.errno, 500)
            entry["status"] = code
            entry["bytes"] = self.simple(code, b"%d\n" % code)
            return
        try:
            sb = os.fstat(fd)
            if stat.S_ISDIR(sb.st_mode):
                self.directory(path, query, fspath, entry, rule)
            else:
                self.file(method, fd, sb, rule, entry)
        finally:
            os.close(fd)

    def directory(self, path, query, fspath, entry, rule=None):
        st = self.server.state
        if not path.endswith("/"):
            loc = urllib.parse.quote(path + "/")
            entry["status"] = 301
            entry["bytes"] = self.simple(301, b"moved\n",
                                         extra=[("Location", loc)])
            return
        entries = []
        with os.scandir(fspath) as it:
            for de in it:
                if de.name.startswith("."):
                    continue
                try:
                    s = de.stat()
                except OSError:
                    continue
                entries.append((de.name, de.is_dir(), s))
        entries.sort(key=lambda e: (not e[1], e[0]))
        fmt = urllib.parse.parse_qs(query).get("format", [None])[-1]
        if fmt == "json" or (st.json_index and fmt != "html"):
            body, ctype = autoindex_json(entries), "application/json"
        elif st.plain_index:
            body, ctype = plain_index(path, entries), "text/html"
        else:
            body, ctype = autoindex_html(path, entries), "text/html"
        entry["status"] = 200
        if rule and rule.name == "trickle":
            self.log_entry(entry)
            self.trickle_body(200, body, ctype, rule.arg)
            return
        entry["bytes"] = self.simple(200, body, ctype)

    def file(self, method, fd, sb, rule, entry):
        name = rule.name if rule else None
        size = sb.st_size
        etag = etag_of(sb)
        h = self.headers
        common = [("ETag", etag), ("Last-Modified", httpdate(sb.st_mtime)),
                  ("Accept-Ranges", "bytes")]
        if self.server.state.no_etag:
            common = common[1:]
        ius = h.get("If-Unmodified-Since")
        if ius is not None:
            try:
                t = email.utils.parsedate_to_datetime(ius).timestamp()
            except (TypeError, ValueError):
                t = None
            if t is not None and int(sb.st_mtime) > t:
                entry["status"] = 412
                entry["bytes"] = self.simple(412, b"precondition failed\n",
                                             extra=common)
                return
        im = h.get("If-Match")
        if im is not None and not etag_list_matches(im, etag):
            entry["status"] = 412
            entry["bytes"] = self.simple(412, b"precondition failed\n",
                                         extra=common)
            return
        inm = h.get("If-None-Match")
        if inm is not None and etag_list_matches(inm, etag):
            self.send_response(304)
            for k, v in common:
                self.send_header(k, v)
            self.end_headers()
            entry["status"] = 304
            return
        rng = parse_range(h.get("Range"), size) if method == "GET" else None
        if isinstance(rng, tuple):
            entry["asked"] = list(rng)
        ir = h.get("If-Range")
        if rng is not None and ir is not None and ir.strip() != etag and \
                ir.strip() != httpdate(sb.st_mtime):
            rng = None
        if rng == "unsatisfiable":
            entry["status"] = 416
            entry["bytes"] = self.simple(
                416, b"range not satisfiable\n",
                extra=common + [("Content-Range", "bytes */%d" % size)])
            return
        if name == "ignore_range":
            rng = None
        if rng is not None and name == "wrong_range":
            rng = wrong_range(rng[0], rng[1], size, rule.arg)
        if rng is None:
            code, start, length = 200, 0, size
        else:
            code, start, length = 206, rng[0], rng[1] - rng[0] + 1
        self.send_response(code)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(length))
        if code == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" %
                             (start, start + length - 1, size))
        for k, v in common:
            self.send_header(k, v)
        self.end_headers()
        entry["status"] = code
        if method == "GET" and length:
            entry["sent"] = [start, start + length - 1]
        if method == "HEAD":
            if name == "cut":
                self.abort(rule.rst)
            elif name == "hang_body":
                self.log_entry(entry)
                self.stall(rule.rst)
            return
        send = length
        if name == "cut":
            send = min(length, rule.arg)
        elif name == "hang_body":
            send = min(length, rule.arg or 0)
        elif name == "trickle":
            self.log_entry(entry)
            for i in range(send):
                if STOP.is_set():
                    break
                self.wfile.write(os.pread(fd, 1, start + i))
                self.wfile.flush()
                time.sleep(1.0 / max(rule.arg, 1))
            return
        entry["bytes"] = self.send_range(fd, start, send)
        if name == "cut":
            self.abort(rule.rst)
        elif name == "hang_body":
            self.log_entry(entry)
            self.stall(rule.rst)

    def trickle_body(self, code, body, ctype, bps):
        """Headers, then @body at @bps bytes a second."""
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for i in range(len(body)):
            if STOP.is_set():
                break
            self.wfile.write(body[i:i + 1])
            self.wfile.flush()
            time.sleep(1.0 / max(bps, 1))

    def send_range(self, fd, off, n):
        sent = 0
        out = self.connection.fileno()
        while sent < n:
            k = os.sendfile(out, fd, off + sent, min(n - sent, 1 << 22))
            if k == 0:	# the file shrank under us
                break
            sent += k
        return sent

    # -- control ----------------------------------------------------------

    def control(self, path, query):
        st = self.server.state
        q = urllib.parse.parse_qs(query, keep_blank_values=True)
        clear = self.command == "DELETE" or q.get("clear", ["0"])[-1] == "1"
        try:
            if path == "/_ping":
                self.simple(200, b"pong\n")
            elif path == "/_fault" and clear:
                st.clear_rules()
                self.simple(200, b'{"cleared": true}\n', "application/json")
            elif path == "/_fault" and query:
                r = Rule(query)
                st.add_rule(r)
                self.simple(200, json.dumps({"id": r.id}).encode() + b"\n",
                            "application/json")
            elif path == "/_fault":
                with st.rlock:
                    rules = [r.describe() for r in st.rules]
                self.simple(200, json.dumps(rules).encode() + b"\n",
                            "application/json")
            elif path == "/_log" and clear:
                st.clear_log()
                self.simple(200, b'{"cleared": true}\n', "application/json")
            elif path == "/_log":
                since = int(q.get("since", ["0"])[-1])
                body = "".join(json.dumps(e) + "\n"
                               for e in st.log_since(since)).encode()
                self.simple(200, body, "application/x-ndjson")
            elif path == "/_replace":
                p = q.get("path", [""])[-1]
                fp = self.fs_path(p)
                if not fp or not os.path.isfile(fp):
                    raise ValueError("no such file: " + p)
                st.replace(fp)
                self.simple(200, b'{"replaced": true}\n', "application/json")
            else:
                self.simple(404, b"no such control endpoint\n")
        except ValueError as e:
            self.simple(400, ("faultd: %s\n" % e).encode())


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 512

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if quiet_error(exc):
            return
        sys.stderr.write("faultd: error serving %s: %r\n" %
                         (client_address, exc))


def main():
    ap = argparse.ArgumentParser(
        prog="faultd.py", description="Static HTTP server with faults; "
        "see the top of this file.")
    ap.add_argument("root")
    ap.add_argument("-p", "--port", type=int, default=0)
    ap.add_argument("--port-file")
    ap.add_argument("--log-file")
    ap.add_argument("--json-index", action="store_true")
    ap.add_argument("--no-etag", action="store_true")
    ap.add_argument("--plain-index", action="store_true")
    ap.add_argument("--fault", action="append", default=[],
                    metavar="RULE")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    if not os.path.isdir(a.root):
        sys.exit("faultd: %s is not a directory" % a.root)
    state = State(a.root, a.json_index, a.log_file, a.no_etag,
                  a.plain_index)
    try:
        for f in a.fault:
            state.add_rule(Rule(f))
    except ValueError as e:
        sys.exit("faultd: bad --fault %r: %s" % (f, e))
    Handler.verbose = a.verbose
    try:
        srv = Server(("127.0.0.1", a.port), Handler)
    except OSError as e:
        sys.exit("faultd: cannot listen on 127.0.0.1:%d: %s" %
                 (a.port, e.strerror))
    srv.state = state
    port = srv.server_address[1]

    def stop(signum, frame):
        STOP.set()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    t = threading.Thread(target=srv.serve_forever, kwargs={
                         "poll_interval": 0.1}, daemon=True)
    t.start()
    if a.port_file:
        tmp = a.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write("%d\n" % port)
        os.replace(tmp, a.port_file)
    sys.stderr.write("faultd: serving %s on http://127.0.0.1:%d/\n" %
                     (state.root, port))
    sys.stderr.flush()
    while not STOP.wait(1.0):
        pass
    srv.shutdown()
    srv.server_close()
    if state.log_file:
        with state.llock:
            state.log_file.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
