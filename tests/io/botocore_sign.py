"""Signs requests with botocore (Debian python3-botocore) for sigv4_test.cc.

Usage: /usr/bin/python3 botocore_sign.py CASES.json

Each case names a method, URL (path already encoded by skade), decoded query parameters,
headers, body, credentials, region and a fixed time. Header cases are signed with
S3SigV4Auth and print the headers botocore adds; presign cases are signed with
S3SigV4QueryAuth and print the presigned URL. Prints a JSON list in the order of the cases.
"""

import datetime
import json
import sys
import types
from urllib.parse import quote

import botocore.auth
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials


class _FixedClock(datetime.datetime):
    """A datetime whose utcnow() is the case's fixed time (botocore reads the clock itself)."""

    fixed = None

    @classmethod
    def utcnow(cls):
        return cls.fixed


# botocore.auth calls datetime.datetime.utcnow() and datetime.datetime.strptime().
botocore.auth.datetime = types.SimpleNamespace(datetime=_FixedClock)


def sign(case):
    _FixedClock.fixed = datetime.datetime.utcfromtimestamp(case["time"])
    credentials = Credentials(case["access_key"], case["secret_key"], case["token"] or None)
    params = {name: value for name, value in case["params"]}
    headers = {name: value for name, value in case["headers"]}
    request = AWSRequest(
        method=case["method"],
        url=case["url"],
        headers=headers,
        data=case["body"].encode("utf-8") if case["body"] else None,
        params=params,
    )
    out = {"name": case["name"], "key_encoded": quote(case["key"], safe="/~")}
    if case["mode"] == "header":
        S3SigV4Auth(credentials, "s3", case["region"]).add_auth(request)
        out["headers"] = {name.lower(): value for name, value in request.headers.items()}
    else:
        S3SigV4QueryAuth(credentials, "s3", case["region"], expires=case["expires"]).add_auth(request)
        out["url"] = request.url
    return out


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        cases = json.load(f)
    json.dump([sign(case) for case in cases], sys.stdout)


if __name__ == "__main__":
    main()
