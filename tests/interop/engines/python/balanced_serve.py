"""Three `skade serve` behind nginx for a suite that is not in Python (the Java REST kit, the JDBC
suite): scaleout.BalancedServers, the setup of engines_python_balanced (servers with the same
arguments on one warehouse and one shared key, nginx round robin with no affinity), started and
judged from a shell script.

    balanced_serve.py --warehouse DIR --out DIR --expect flight|rest [--expect …] [--no-rest]
                      [-- SERVE ARGS…]

Once everything listens it writes one line to stdout:
    ready flight=grpc://127.0.0.1:P rest=http://127.0.0.1:Q pids=A,B,C
(rest=- with --no-rest), then runs until SIGTERM or SIGINT (or until its parent exits). It then
stops nginx and the servers and judges the run from nginx's access log (kept in --out with the
servers' logs):
  - every server answered at least one call on each protocol named by --expect (a balanced run
    that used one server proves nothing);
  - nginx never had to pass a call on to another server or answer one itself (502/504): the
    balancer must not hide a server that refused or dropped a call;
  - every server was up to the end and stopped cleanly.
Exit 0 when all hold, 1 when not (why, on stderr), 77 when nginx is missing (a plain message).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import time
from pathlib import Path

import scaleout
import skade_harness as sk

SKIP = 77
FLIGHT_PREFIX = "/arrow.flight.protocol.FlightService/"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warehouse", required=True, type=Path)
    parser.add_argument("--out", required=True, type=Path, help="the servers' and nginx's logs go here")
    parser.add_argument("--expect", action="append", choices=["flight", "rest"], default=[],
                        help="a protocol on which every server must answer at least one call")
    parser.add_argument("--no-rest", action="store_true", help="servers without a REST port")
    parser.add_argument("--instances", type=int, default=3)
    parser.add_argument("serve_args", nargs="*", help="more arguments of `skade serve` (after --)")
    args = parser.parse_args(argv)
    if not args.expect:
        parser.error("name at least one --expect")
    if args.no_rest and "rest" in args.expect:
        parser.error("--expect rest needs the REST port")
    return args


def judge(servers: scaleout.BalancedServers, records: list[scaleout.LbRecord], expect: list[str]) -> list[str]:
    """What went wrong in the calls nginx logged (see the module's docstring)."""
    lb = servers.balancer
    problems = []
    listeners = {"flight": (lb.grpc_port, lambda s: s.flight_port), "rest": (lb.http_port, lambda s: s.rest_port)}
    for kind in expect:
        port, backend_port = listeners[kind]
        mine = [r for r in records if r.port == port]
        answered = {f"127.0.0.1:{backend_port(s)}": 0 for s in servers.servers}
        for r in mine:
            if r.served_by in answered and r.upstream_statuses and r.upstream_statuses[-1] not in ("502", "504"):
                answered[r.served_by] += 1
        counts = ", ".join(f"server {i} ({addr}) {n}" for i, (addr, n) in enumerate(answered.items()))
        print(f"balanced_serve: {len(mine)} {kind} calls through nginx; answered by {counts}", file=sys.stderr)
        idle = [addr for addr, n in answered.items() if n == 0]
        if idle:
            problems.append(f"{kind}: server(s) {', '.join(idle)} answered no call of {len(mine)}: the run was "
                            f"not spread over all {len(answered)} servers")
    for r in records:
        # 499 without a server: the client gave up before nginx passed the call on (its choice).
        if len(r.upstreams) > 1 or r.status in (502, 504) or (not r.upstreams and r.status != 499):
            call = r.uri[len(FLIGHT_PREFIX):] if r.uri.startswith(FLIGHT_PREFIX) else r.uri
            problems.append(f"nginx could not hand {r.method} {call} to one server: status {r.status}, tried "
                            f"{', '.join(r.upstreams) or 'none'} ({', '.join(r.upstream_statuses) or '-'})")
    return problems


def main(argv: list[str]) -> int:
    args = parse(argv)
    if scaleout.nginx_binary() is None:
        print("balanced_serve: nginx is not installed (scripts/setup.sh installs it)", file=sys.stderr)
        return SKIP
    args.out.mkdir(parents=True, exist_ok=True)
    # The handler only appends to a list. It runs in the main thread between two bytecodes, so it
    # must take no lock: a threading.Event's set() deadlocks when the signal lands while this same
    # thread, inside Event.wait(), holds the Event's lock (CI hung here once until ctest's timeout).
    stopping: list[int] = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda signum, _frame: stopping.append(signum))
    parent = os.getppid()

    servers = scaleout.BalancedServers(args.warehouse, "--host", "127.0.0.1", *args.serve_args,
                                       rest=not args.no_rest, log_dir=args.out, instances=args.instances)
    problems: list[str] = []
    try:
        lb = servers.balancer
        rest = "-" if args.no_rest else lb.rest_uri
        pids = ",".join(str(s.proc.pid) for s in servers.servers)
        print(f"ready flight={lb.flight_uri} rest={rest} pids={pids}", flush=True)
        # A parent that died without stopping us (SIGKILL at a ctest timeout) must not leave
        # servers behind.
        while not stopping:
            time.sleep(0.5)  # the handler runs during the sleep; the loop sees it within 0.5 s
            if os.getppid() != parent:
                problems.append("the parent exited without stopping the balanced servers")
                break
        # Stopping: later signals are ignored. CPython puts back the default action of a signal
        # whose handler is Python code when it finalizes, so a second SIGTERM landing then would
        # kill this process and lose its verdict (exit 143); an ignored one stays ignored.
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, signal.SIG_IGN)
        lb.stop()  # graceful: the access log is complete
        records = lb.records()
        for name in ("access.log", "error.log"):
            if (lb.dir / name).exists():
                shutil.copy(lb.dir / name, args.out / f"nginx-{name}")
        problems += judge(servers, records, args.expect)
    finally:
        try:
            servers.stop()
        except AssertionError as e:
            problems.append(str(e)[-4000:])
    for p in problems:
        print(f"balanced_serve: FAIL: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
