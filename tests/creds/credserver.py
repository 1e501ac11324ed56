#!/usr/bin/env python3
"""credserver.py - the AWS credential endpoints of the credential tests, on
127.0.0.1, speaking the real protocols (stdlib only):

  EC2 IMDS   PUT  /latest/api/token            (needs the TTL header)
             GET  /latest/meta-data/iam/security-credentials/[ROLE]
                  (IMDSv2: X-aws-ec2-metadata-token must be a token it
                  gave; in mode imds=v1only the PUT answers 404 and no
                  token is needed)
  container  GET  /container/creds             (Authorization must be the
                                                token given with --ctoken)
  STS        POST /  Action=AssumeRoleWithWebIdentity (WebIdentityToken
                  must be the content of --webid-file) or Action=AssumeRole
                  (SigV4-signed with keys of the keys file; a temporary
                  signer must send its x-amz-security-token, signed)
  SSO        GET  /federation/credentials?account_id&role_name
                  (x-amz-sso_bearer_token must be --sso-token)
  process    GET  /process/creds               (credential_process JSON:
                                                a script curls it)
  control    POST /_ctl?ttl=S&fail=N&bad=N&imds=v1only|v2&redirect=URL
                  &hold=SUBSTR&hold_s=S
             GET  /_stats                      (JSON: requests, issued)

With --proxy URL it is instead a reverse proxy in front of the S3 server
at URL (Host and every header passed as sent, so signatures hold): the
first request whose path contains the hold string is answered 503 with
Retry-After: hold_s, and every request is logged as
"proxy METHOD PATH ACCESS-KEY STATUS" (the retry test).

Every answer with credentials mints new ones (AK "ASIA" + source + number,
a random secret and token) valid for ttl seconds (default 3600) and
appends them to the keys file, which tests/s3/s3server.js --keys reads:
so the S3 server accepts exactly what was handed out, until it expires.
fail=N: the next N credential answers are HTTP 500; bad=N: the next N are
malformed (JSON or XML cut in the middle).  redirect=URL: every request
but /_ctl and /_stats is answered 307 to URL + path (the redirect test);
requests are logged to the log file as "METHOD PATH HEADER-NAMES...",
with x-amz-security-token and Authorization values marked present.

  credserver.py PORTFILE KEYSFILE [--ctoken T] [--webid-file F]
                [--sso-token T] [--log FILE] [--proxy URL]
"""
import datetime
import hashlib
import http.client
import re
import hmac
import json
import os
import secrets
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

args = sys.argv[1:]
if len(args) < 2:
    sys.exit(__doc__)
PORTFILE, KEYSFILE = args[0], args[1]
opt = {}
i = 2
while i < len(args):
    opt[args[i]] = args[i + 1]
    i += 2

lock = threading.Lock()
state = {"ttl": 3600, "fail": 0, "bad": 0, "imds": "v2", "redirect": "",
         "hold": "", "hold_s": 5,
         "n": 0, "requests": {}, "issued": {}, "tokens": set()}
LOG = opt.get("--log")


def log(line):
    if LOG:
        with lock, open(LOG, "a") as f:
            f.write(line + "\n")


def keys():
    out = {}
    try:
        with open(KEYSFILE) as f:
            for line in f:
                if line.strip():
                    k = json.loads(line)
                    out[k["ak"]] = k
    except FileNotFoundError:
        pass
    return out


def mint(src):
    with lock:
        state["n"] += 1
        n = state["n"]
        ttl = state["ttl"]
        state["issued"][src] = state["issued"].get(src, 0) + 1
    k = {"ak": "ASIA%s%06d" % (src.upper()[:6], n),
         "sk": secrets.token_hex(20), "token": "TOK" + secrets.token_hex(40),
         "exp": int(time.time()) + ttl}
    with lock, open(KEYSFILE, "a") as f:
        f.write(json.dumps(k) + "\n")
    return k


def iso(t):
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def sigv4_ok(h, body):
    """Checks a SigV4 Authorization against the keys file, as STS does."""
    auth = h.headers.get("Authorization", "")
    try:
        algo, rest = auth.split(" ", 1)
        parts = dict(p.strip().split("=", 1) for p in rest.split(","))
        ak, date, region, service, term = parts["Credential"].split("/")
        signed = parts["SignedHeaders"].split(";")
        sig = parts["Signature"]
    except (ValueError, KeyError):
        return "no SigV4 Authorization"
    k = keys().get(ak)
    if not k:
        return "unknown key"
    if k.get("token"):
        if h.headers.get("x-amz-security-token") != k["token"] or "x-amz-security-token" not in signed:
            return "missing or unsigned session token"
        if k.get("exp") and time.time() >= k["exp"]:
            return "expired"
    u = urllib.parse.urlsplit(h.path)
    q = sorted(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
    cq = "&".join("%s=%s" % (urllib.parse.quote(a, safe="-_.~"), urllib.parse.quote(b, safe="-_.~")) for a, b in q)
    ch = "".join("%s:%s\n" % (n, " ".join((h.headers.get(n) or "").split())) for n in signed)
    creq = "\n".join([h.command, u.path or "/", cq, ch, ";".join(signed),
                      hashlib.sha256(body).hexdigest()])
    amzdate = h.headers.get("x-amz-date", "")
    scope = "/".join([date, region, service, term])
    sts = "\n".join([algo, amzdate, scope, hashlib.sha256(creq.encode()).hexdigest()])
    key = ("AWS4" + k["sk"]).encode()
    for m in (date, region, service, term):
        key = hmac.new(key, m.encode(), hashlib.sha256).digest()
    want = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    return None if hmac.compare_digest(want, sig) else "signature mismatch"


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def proxy(self):
        """Forwards this request to the S3 server, or holds it (503)."""
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else None
        m = re.search(r"Credential=([^/]+)/", self.headers.get("Authorization", ""))
        ak = m.group(1) if m else "-"
        with lock:
            held = state["hold"] and state["hold"] in self.path
            if held:
                state["hold"] = ""
            hold_s = state["hold_s"]
        if held:
            log("proxy %s %s %s 503" % (self.command, self.path, ak))
            return self.send(503, "<Error><Code>SlowDown</Code><Message>held</Message></Error>",
                             "application/xml", {"Retry-After": str(hold_s)})
        u = urllib.parse.urlsplit(opt["--proxy"])
        c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
        c.putrequest(self.command, self.path, skip_host=True, skip_accept_encoding=True)
        for k, v in self.headers.items():
            c.putheader(k, v)
        c.endheaders(body)
        r = c.getresponse()
        data = r.read()
        log("proxy %s %s %s %d" % (self.command, self.path, ak, r.status))
        self.send_response(r.status)
        head = self.command == "HEAD"
        for k, v in r.getheaders():
            if k.lower() in ("transfer-encoding", "connection") or (k.lower() == "content-length" and not head):
                continue
            self.send_header(k, v)
        if not head:
            self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        c.close()

    def log_message(self, fmt, *a):
        pass

    def send(self, code, body, ctype="application/json", extra=None):
        if isinstance(body, str):
            body = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def count(self, what):
        with lock:
            state["requests"][what] = state["requests"].get(what, 0) + 1

    def faulty(self):
        """500 or a malformed answer, if the test asked for it."""
        with lock:
            if state["fail"] > 0:
                state["fail"] -= 1
                return "fail"
            if state["bad"] > 0:
                state["bad"] -= 1
                return "bad"
        return None

    def creds_json(self, src, fmt):
        f = self.faulty()
        if f == "fail":
            return self.send(500, "internal error")
        k = mint(src)
        if fmt == "process":
            d = {"Version": 1, "AccessKeyId": k["ak"], "SecretAccessKey": k["sk"],
                 "SessionToken": k["token"], "Expiration": iso(k["exp"])}
        else:
            d = {"Code": "Success", "LastUpdated": iso(time.time()), "Type": "AWS-HMAC",
                 "AccessKeyId": k["ak"], "SecretAccessKey": k["sk"], "Token": k["token"],
                 "Expiration": iso(k["exp"])}
        body = json.dumps(d)
        if f == "bad":
            body = body[: len(body) // 2]
        self.send(200, body)

    def logreq(self):
        names = []
        for n in self.headers.keys():
            ln = n.lower()
            names.append(ln + ("=PRESENT" if ln in ("authorization", "x-amz-security-token") else ""))
        log("%s %s %s" % (self.command, self.path, " ".join(names)))

    def redirected(self):
        with lock:
            r = state["redirect"]
        if r and not self.path.startswith("/_"):
            self.send(307, "", "text/plain", {"Location": r + self.path})
            return True
        return False

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        if "--proxy" in opt and not self.path.startswith("/_"):
            return self.proxy()
        self.logreq()
        if self.redirected():
            return
        u = urllib.parse.urlsplit(self.path)
        if u.path == "/_stats":
            with lock:
                d = {"requests": state["requests"], "issued": state["issued"]}
            return self.send(200, json.dumps(d))
        if u.path.startswith("/latest/meta-data/iam/security-credentials"):
            self.count("imds-get")
            with lock:
                v2 = state["imds"] == "v2"
                ok = self.headers.get("X-aws-ec2-metadata-token") in state["tokens"]
            if v2 and not ok:
                return self.send(401, "", "text/plain")
            rest = u.path[len("/latest/meta-data/iam/security-credentials"):]
            if rest in ("", "/"):
                return self.send(200, "test-role", "text/plain")
            if rest != "/test-role":
                return self.send(404, "", "text/plain")
            return self.creds_json("imds", "metadata")
        if u.path == "/container/creds":
            self.count("container")
            if self.headers.get("Authorization") != opt.get("--ctoken"):
                return self.send(401, '{"message":"bad authorization"}')
            return self.creds_json("ctr", "metadata")
        if u.path == "/process/creds":
            self.count("process")
            return self.creds_json("proc", "process")
        if u.path == "/federation/credentials":
            self.count("sso")
            q = dict(urllib.parse.parse_qsl(u.query))
            if self.headers.get("x-amz-sso_bearer_token") != opt.get("--sso-token"):
                return self.send(401, '{"message":"Session token not found or invalid"}')
            if q.get("account_id") != "123456789012" or q.get("role_name") != "ReadS3":
                return self.send(403, '{"message":"No access"}')
            f = self.faulty()
            if f == "fail":
                return self.send(500, "{}")
            k = mint("sso")
            body = json.dumps({"roleCredentials": {"accessKeyId": k["ak"], "secretAccessKey": k["sk"],
                                                   "sessionToken": k["token"], "expiration": k["exp"] * 1000}})
            if f == "bad":
                body = body[:20]
            return self.send(200, body)
        self.send(404, "not found", "text/plain")

    def do_PUT(self):
        if "--proxy" in opt and not self.path.startswith("/_"):
            return self.proxy()
        self.logreq()
        if self.redirected():
            return
        n = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(n)
        if self.path == "/latest/api/token":
            self.count("imds-token")
            with lock:
                v1only = state["imds"] == "v1only"
            if v1only:
                return self.send(404, "", "text/plain")
            ttl = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds")
            if not ttl or not ttl.isdigit() or not 1 <= int(ttl) <= 21600:
                return self.send(400, "", "text/plain")
            t = "IMDSTOK" + secrets.token_hex(16)
            with lock:
                state["tokens"].add(t)
            return self.send(200, t, "text/plain",
                             {"X-aws-ec2-metadata-token-ttl-seconds": ttl})
        self.send(404, "", "text/plain")

    def do_POST(self):
        if "--proxy" in opt and not self.path.startswith("/_"):
            return self.proxy()
        self.logreq()
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n)
        u = urllib.parse.urlsplit(self.path)
        if u.path == "/_ctl":
            q = dict(urllib.parse.parse_qsl(u.query))
            with lock:
                for k in ("ttl", "fail", "bad", "hold_s"):
                    if k in q:
                        state[k] = int(q[k])
                for k in ("imds", "redirect", "hold"):
                    if k in q:
                        state[k] = q[k]
            return self.send(200, "{}")
        if self.redirected():
            return
        form = dict(urllib.parse.parse_qsl(body.decode("utf-8", "replace")))
        act = form.get("Action")
        err = None
        if act == "AssumeRoleWithWebIdentity":
            self.count("sts-webid")
            want = open(opt["--webid-file"]).read().strip() if "--webid-file" in opt else None
            if not want or form.get("WebIdentityToken") != want:
                err = ("InvalidIdentityToken", "Couldn't verify the web identity token")
            elif not form.get("RoleArn") or not form.get("RoleSessionName"):
                err = ("ValidationError", "RoleArn and RoleSessionName are required")
        elif act == "AssumeRole":
            self.count("sts-role")
            why = sigv4_ok(self, body)
            if why:
                err = ("SignatureDoesNotMatch" if "signature" in why else "InvalidClientTokenId",
                       "request refused: " + why)
                log("sts-refused " + why)
        else:
            err = ("InvalidAction", "unknown action")
        if err:
            x = ('<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error>'
                 '<Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error>'
                 '<RequestId>1</RequestId></ErrorResponse>' % err)
            return self.send(403, x, "text/xml")
        f = self.faulty()
        if f == "fail":
            return self.send(500, "<ErrorResponse/>", "text/xml")
        k = mint("webid" if act == "AssumeRoleWithWebIdentity" else "role")
        x = ('<%sResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><%sResult>'
             '<Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey>'
             '<SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials>'
             '<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/r/s</Arn>'
             '<AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser></%sResult>'
             '<ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></%sResponse>'
             % (act, act, k["ak"], k["sk"], k["token"], iso(k["exp"]), act, act))
        if f == "bad":
            x = x[: len(x) // 2]
        self.send(200, x, "text/xml")


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
srv.daemon_threads = True
parent = int(os.environ.get("PF_PARENT_PID", "0"))


def watch():
    while True:
        time.sleep(1)
        try:
            os.kill(parent, 0)
        except OSError:
            os._exit(0)


if parent > 0:
    threading.Thread(target=watch, daemon=True).start()
with open(PORTFILE + ".tmp", "w") as f:
    f.write("%d\n" % srv.server_address[1])
os.rename(PORTFILE + ".tmp", PORTFILE)
srv.serve_forever()
