#!/usr/bin/env python3
"""One member holding its most change feed streams against another
organization's reads (issue 44, item 4).

    CARGO_TARGET_DIR=... python3 bench/fairness.py              # the binary of $CARGO_TARGET_DIR/debug
    python3 bench/fairness.py --binary target/release/proxydeck --requests 600

On a SQLite file of its own (a temporary directory), `proxydeck serve`
with its default limits (`--rate-limit off` only, so that the reader's own
pace is not what is measured): organization A with member u1 (three
tokens), organization B with member u2, 20 projects each. Then phases,
alternating, in one run:

- idle: u2 reads `GET /v1/projects?limit=20` --requests times, one at a
  time on one kept-alive connection;
- held: u1 holds its most streams (`--feed-follows-per-user`, 50 by
  default: 20 + 20 + 10 on its three tokens, read by one process of its
  own) and tries --extra more (each must be refused with 429); meanwhile
  u2 reads as in idle.

With --writes, u1 also writes a change every 50 ms in both phases (each
carried by its 50 streams in held): what holding streams costs on top of
a member's writes.

Prints each phase's p50 and p99 and held ÷ idle; exits 1 when an extra
stream was not refused, or held p99 is 2× idle p99 or more. Timings are
from a shared machine: compare the ratio, measured in one run.
"""

import argparse
import http.client
import json
import multiprocessing
import os
import selectors
import socket
import subprocess
import sys
import tempfile
import time


def run(binary, database, *args):
    out = subprocess.run(
        [binary, *args, "--database", database, "--json"],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout) if out.stdout.strip() else None


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def request(conn, method, path, token, body=None):
    headers = {"Authorization": f"Bearer {token}"}
    if body is not None:
        headers["Content-Type"] = "application/json"
        body = json.dumps(body)
    conn.request(method, path, body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    return response.status, data


def open_stream(port, token):
    """A stream's socket once its status line came; (status, socket)."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(
        (
            "GET /v1/changes HTTP/1.1\r\nHost: bench\r\n"
            f"Authorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    status = int(head.split(b" ", 2)[1]) if head.startswith(b"HTTP/1.1") else 0
    return status, sock


def hold(port, tokens, project, extra, streams, writes, ready, stop, refused):
    """The member, in a process of its own (the reader's timings owe
    nothing to its work): opens its most streams, tries `extra` more,
    then reads every stream (one selector) and writes a change every
    50 ms until told to stop."""
    held = []
    for token, count in zip(tokens, (20, 20, 10) if streams else ()):
        for _ in range(count):
            status, sock = open_stream(port, token)
            assert status == 200, status
            sock.setblocking(False)
            held.append(sock)
    for i in range(extra if streams else 0):
        status, sock = open_stream(port, tokens[i % 3])
        refused.value += status == 429
        sock.close()
    selector = selectors.DefaultSelector()
    for sock in held:
        selector.register(sock, selectors.EVENT_READ)
    conn = http.client.HTTPConnection("127.0.0.1", port)
    ready.set()
    n = 0
    next_write = time.monotonic()
    while not stop.is_set():
        for key, _ in selector.select(timeout=0.01):
            try:
                key.fileobj.recv(65536)
            except BlockingIOError:
                pass
        if not held:
            time.sleep(0.01)
        if writes and time.monotonic() >= next_write:
            n += 1
            request(conn, "POST", f"/v1/projects/{project}", tokens[0],
                    {"description": f"change {n}"})
            next_write += 0.05
    conn.close()
    for sock in held:
        sock.close()


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def reads(port, token, count):
    conn = http.client.HTTPConnection("127.0.0.1", port)
    took = []
    for _ in range(count):
        started = time.perf_counter()
        status, _ = request(conn, "GET", "/v1/projects?limit=20", token)
        took.append(time.perf_counter() - started)
        assert status == 200, status
    conn.close()
    return took


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    target = os.environ.get("CARGO_TARGET_DIR", "target")
    parser.add_argument("--binary", default=os.path.join(target, "debug", "proxydeck"))
    parser.add_argument("--requests", type=int, default=400, help="reads per phase")
    parser.add_argument("--rounds", type=int, default=2, help="idle/held pairs")
    parser.add_argument("--extra", type=int, default=200, help="streams tried past the most")
    parser.add_argument("--writes", action="store_true",
                        help="the member also writes a change every 50 ms, in both phases")
    args = parser.parse_args()

    work = tempfile.mkdtemp(prefix="proxydeck-fairness-")
    database = f"sqlite://{work}/bench.db"
    run(args.binary, database, "migrate")
    tokens = {}
    orgs = {"a": "00000000-0000-7000-8000-00000000000a", "b": "00000000-0000-7000-8000-00000000000b"}
    for org, user in (("a", "u1"), ("b", "u2")):
        org_id = orgs[org]
        run(args.binary, database, "admin", "org", "create", "--name", f"Org {org}", "--id", org_id)
        run(args.binary, database, "admin", "user", "create", "--email",
            f"{user}@example.com", "--org", org_id, "--id", user)
        tokens[user] = [
            run(args.binary, database, "admin", "token", "create", "--user", user,
                "--name", f"t{i}")["token"]
            for i in range(3 if user == "u1" else 1)
        ]
    port = free_port()
    server = subprocess.Popen(
        [args.binary, "serve", "--database", database, "--listen", f"127.0.0.1:{port}",
         "--rate-limit", "off"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                time.sleep(0.1)
        conn = http.client.HTTPConnection("127.0.0.1", port)
        for org, user in (("a", "u1"), ("b", "u2")):
            for i in range(20):
                body = {"organization_id": orgs[org], "slug": f"p{i}"}
                status, data = request(conn, "POST", "/v1/projects", tokens[user][0], body)
                assert status == 200, data
        status, data = request(conn, "GET", "/v1/projects?limit=1", tokens["u1"][0])
        project = json.loads(data)["data"][0]["id"]
        conn.close()
        reads(port, tokens["u2"][0], 50)  # warm up

        phases = {"idle": [], "held": []}
        refused = multiprocessing.Value("i", 0)
        for _ in range(args.rounds):
            for phase, streams in (("idle", False), ("held", True)):
                ready, stop = multiprocessing.Event(), multiprocessing.Event()
                member = multiprocessing.Process(
                    target=hold,
                    args=(port, tokens["u1"], project, args.extra, streams, args.writes,
                          ready, stop, refused),
                )
                member.start()
                ready.wait()
                phases[phase] += reads(port, tokens["u2"][0], args.requests)
                stop.set()
                member.join()
                time.sleep(0.5)  # the server lets the closed streams go
        ms = lambda s: f"{s * 1000:.2f} ms"
        result = {}
        for name, took in phases.items():
            result[name] = (percentile(took, 50), percentile(took, 99))
            print(f"{name}: {len(took)} reads, p50 {ms(result[name][0])}, p99 {ms(result[name][1])}")
        ratio = result["held"][1] / result["idle"][1]
        print(f"held ÷ idle: p50 {result['held'][0] / result['idle'][0]:.2f}, p99 {ratio:.2f}")
        print(f"streams past the most refused with 429: {refused.value} of {args.extra * args.rounds}")
        ok = refused.value == args.extra * args.rounds and ratio < 2
        print("ok" if ok else "FAILED")
        return 0 if ok else 1
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    sys.exit(main())
