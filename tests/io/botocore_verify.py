"""Checks SigV4-signed S3 requests with botocore (Debian python3-botocore), the way S3 does:
the canonical request rebuilt from the request as sent (its URL, the headers its Authorization
names, its x-amz-date and x-amz-content-sha256), signed with the secret key, compared.

Two modes, both run with /usr/bin/python3:

  botocore_verify.py CASES.json
      Each case: {"method", "url", "headers": [[name, value], ...], "access_key", "secret_key",
      "region"}. Prints a JSON list, in order, of {"valid": bool, "reason": str}.

  botocore_verify.py --proxy UPSTREAM ACCESS_KEY SECRET_KEY REGION
      An HTTP proxy in front of an S3 server that does not check signatures itself (s3rver): every
      request must carry a valid signature of ACCESS_KEY, else it is answered 403 (AccessDenied
      without one, SignatureDoesNotMatch with a wrong one) and never reaches UPSTREAM. Prints
      "listening on PORT" once bound (a free port on 127.0.0.1) and counts in a log line per
      request. Runs until killed.
"""

import http.client
import http.server
import json
import re
import socketserver
import sys
import urllib.parse

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, "
    r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$"
)


def verify(method, url, headers, access_key, secret_key, region):
    """(valid, reason) for a request about to be sent as given."""
    by_name = {}
    for name, value in headers:
        by_name.setdefault(name.lower(), []).append(value)
    auth = by_name.get("authorization")
    if not auth:
        return False, "no Authorization header"
    m = _AUTH.match(auth[0])
    if not m:
        return False, "malformed Authorization: " + auth[0]
    key, day, scope_region, signed, signature = m.groups()
    if key != access_key:
        return False, "signed with another access key: " + key
    if scope_region != region:
        return False, "signed for region " + scope_region
    amz_date = by_name.get("x-amz-date", [""])[0]
    if not amz_date.startswith(day):
        return False, "x-amz-date does not match the credential scope"
    names = signed.split(";")
    if "host" not in names or "x-amz-date" not in names or "x-amz-content-sha256" not in names:
        return False, "host, x-amz-date and x-amz-content-sha256 must be signed"
    for name in by_name:
        if name.startswith("x-amz-") and name not in names:
            return False, "unsigned header " + name
    request_headers = {}
    for name in names:
        if name == "host":
            request_headers["host"] = urllib.parse.urlsplit(url).netloc
            continue
        if name not in by_name:
            return False, "signed header " + name + " is missing"
        request_headers[name] = ",".join(by_name[name])
    request = AWSRequest(method=method, url=url, headers=request_headers)
    request.context["timestamp"] = amz_date
    signer = S3SigV4Auth(Credentials(access_key, secret_key), "s3", region)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if expected != signature:
        return False, "SignatureDoesNotMatch (canonical request:\n" + canonical + ")"
    return True, ""


def run_cases(path):
    with open(path, encoding="utf-8") as f:
        cases = json.load(f)
    out = []
    for c in cases:
        valid, reason = verify(c["method"], c["url"], c["headers"], c["access_key"], c["secret_key"], c["region"])
        out.append({"valid": valid, "reason": reason})
    json.dump(out, sys.stdout)


def run_proxy(upstream, access_key, secret_key, region):
    target = urllib.parse.urlsplit(upstream)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt, *args):
            sys.stderr.write("proxy: " + (fmt % args) + "\n")

        def _refuse(self, code, message):
            body = ("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>" + code + "</Code><Message>" +
                    message.replace("&", "&amp;").replace("<", "&lt;") + "</Message></Error>").encode()
            self.send_response(403)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _handle(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            url = "http://" + self.headers.get("Host", "") + self.path
            headers = list(self.headers.items())
            if not any(n.lower() == "authorization" for n, _ in headers):
                sys.stderr.write("proxy: refused unsigned " + self.command + " " + self.path + "\n")
                return self._refuse("AccessDenied", "Anonymous access is denied")
            valid, reason = verify(self.command, url, headers, access_key, secret_key, region)
            if not valid:
                sys.stderr.write("proxy: refused " + self.command + " " + self.path + ": " + reason + "\n")
                return self._refuse("SignatureDoesNotMatch", reason)
            conn = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
            forward = {n: v for n, v in headers if n.lower() not in ("connection", "keep-alive")}
            conn.request(self.command, self.path, body=body if body or self.command in ("PUT", "POST") else None,
                         headers=forward)
            resp = conn.getresponse()
            data = resp.read()
            self.send_response(resp.status)
            for name, value in resp.getheaders():
                if name.lower() in ("transfer-encoding", "connection", "content-length"):
                    continue
                self.send_header(name, value)
            # A HEAD answer has no body but the length of the object's.
            length = resp.getheader("Content-Length") if self.command == "HEAD" else None
            self.send_header("Content-Length", length if length is not None else str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
            conn.close()

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _handle

    class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
        daemon_threads = True

    server = Server(("127.0.0.1", 0), Handler)
    print("listening on", server.server_address[1], flush=True)
    server.serve_forever()


def main():
    if len(sys.argv) == 6 and sys.argv[1] == "--proxy":
        run_proxy(*sys.argv[2:])
    elif len(sys.argv) == 2:
        run_cases(sys.argv[1])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
