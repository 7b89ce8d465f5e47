#!/usr/bin/env python3
"""What one request may cost (issue 44): the CPU a write's regex checks take.

    python3 bench/request_costs.py BINARY [BINARY ...]
    CASES=activate-1000,dropped-1000 python3 bench/request_costs.py BINARY   # some cases only

For each binary (a release build: the main commit's and this one's, say),
on a fresh SQLite file: organization 1 with `writer` (admin) and project
p1, organization 2 with `other` and its project q1, and revision 2 of p1,
inactive, imported with 1,000 distinct Unicode `\\w{20}` routes. Then, each
request alone, the server's CPU (utime + stime of its process, from
/proc) from sending it until the process is idle again (no CPU for
300 ms), so that work going on after the answer counts:

- revision-1000: createProjectProxySettings, 1,000 distinct `\\w{20}` routes;
- stranger-1000: the same body from `other` to a project that does not exist;
- project-1000: createProject, 1,000 distinct `\\w{20}` cache rules;
- heaviest-revision: 5 distinct `\\w{200}` routes (about 53 MiB compiled,
  the most of that size under the 64 MiB budget);
- activate-1000: updateProjectProxySettings dry run activating revision 2;
- dropped-1000: revision-1000 with the connection closed a second after sending.

Then item 2's case: two clients sending dry-run activations of revision 2
in a loop for 10 s, while `other` lists its projects one request after
another: that listing's p50 and p99, against the same listing alone.

Timings are printed, never asserted.
"""

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def cpu_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def idle_cpu(pid, quiet=0.3, limit=300):
    """The process's CPU once it has used none for `quiet` seconds."""
    started = time.time()
    last = cpu_of(pid)
    while time.time() - started < limit:
        time.sleep(quiet)
        now = cpu_of(pid)
        if now == last:
            return now
        last = now
    return last


def org_id(n):
    return f"00000000-0000-7000-8000-{n:012x}"


def admin(binary, db, *args):
    out = subprocess.run([binary, *args, "--database", db, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out) if out.strip() else None


def routes(paths):
    return [{"path": p, "regex": True, "backend_name": "origin"} for p in paths]


def revision(paths):
    return {"description": "regexes",
            "backends": [{"name": "origin", "address": "origin.example.com", "default": True}],
            "routes": routes(paths)}


def w20(n, salt=""):
    return [f"^/\\w{{20}}/{salt}{i}$" for i in range(n)]


def setup(binary, folder):
    db = f"sqlite://{folder}/x.db"
    subprocess.run([binary, "migrate", "--database", db], capture_output=True)
    tokens = {}
    for n, user in [(1, "writer"), (2, "other")]:
        admin(binary, db, "admin", "org", "create", "--name", f"Org {n}", "--id", org_id(n))
        admin(binary, db, "admin", "user", "create", "--email", f"{user}@example.com",
              "--org", org_id(n), "--id", user)
        tokens[user] = admin(binary, db, "admin", "token", "create", "--user", user,
                             "--name", "bench")["token"]
    stamp = "2026-01-01T00:00:00Z"
    lines = []
    for pid, org in [("p1", 1), ("q1", 2)]:
        lines.append({"object": "project", "id": pid, "organization_id": org_id(org), "slug": pid,
                      "created_at": stamp, "updated_at": stamp})
    for number, active, paths in [(1, True, ["^/$"]), (2, False, w20(1000, "s"))]:
        body = revision(paths)
        body.update({"object": "proxy_settings", "project_id": "p1", "revision": number,
                     "is_active": active, "description": f"r{number}"})
        lines.append(body)
    path = os.path.join(folder, "import.ndjson")
    with open(path, "w") as f:
        f.write("\n".join(json.dumps(line) for line in lines) + "\n")
    admin(binary, db, "admin", "import", path)
    return db, tokens


def serve(binary, db):
    process = subprocess.Popen([binary, "serve", "--listen", "127.0.0.1:0", "--database", db,
                                "--rate-limit", "off"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in process.stderr:
        if "serving" in line:
            address = line.split("address=")[1].split()[0]
            host, port = address.rsplit(":", 1)
            threading.Thread(target=lambda: process.stderr.read(), daemon=True).start()
            return process, host, int(port)
    raise SystemExit("the server did not start")


def request(host, port, token, path, body, timeout=600):
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    connection.request("POST" if body is not None else "GET", path,
                       body=json.dumps(body) if body is not None else None,
                       headers={"Authorization": f"Bearer {token}",
                                "Content-Type": "application/json"})
    response = connection.getresponse()
    answer = response.read()
    connection.close()
    return response.status, answer


def dropped(host, port, token, path, body):
    data = json.dumps(body).encode()
    head = (f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n\r\n").encode()
    s = socket.create_connection((host, port))
    s.sendall(head + data)
    # Long enough for the server to begin its checks.
    time.sleep(1)
    s.close()
    return "closed", b""


def main():
    binaries = sys.argv[1:]
    if not binaries:
        raise SystemExit(__doc__)
    for binary in binaries:
        with tempfile.TemporaryDirectory() as folder:
            db, tokens = setup(binary, folder)
            process, host, port = serve(binary, db)
            try:
                run(binary, process.pid, host, port, tokens)
            finally:
                process.terminate()
                process.wait()


def run(binary, pid, host, port, tokens):
    print(f"== {binary}")
    writer, other = tokens["writer"], tokens["other"]
    project = {"organization_id": org_id(1), "slug": "new",
               "override_cache": [{"path": p, "regex": True, "ttl": 60} for p in w20(1000, "c")]}
    cases = [
        ("revision-1000", request, writer, "/v1/projects/p1/proxy-settings", revision(w20(1000, "a"))),
        ("stranger-1000", request, other, "/v1/projects/nope/proxy-settings", revision(w20(1000, "b"))),
        ("project-1000", request, writer, "/v1/projects", project),
        ("heaviest-revision", request, writer, "/v1/projects/p1/proxy-settings",
         revision([f"^/\\w{{200}}/{i}$" for i in range(5)])),
        ("activate-1000", request, writer, "/v1/projects/p1/proxy-settings/2?dry_run=true",
         {"is_active": True}),
        ("dropped-1000", dropped, writer, "/v1/projects/p1/proxy-settings", revision(w20(1000, "d"))),
    ]
    only = os.environ.get("CASES")
    for name, send, token, path, body in cases:
        if only is not None and name not in only.split(","):
            continue
        before = idle_cpu(pid)
        started = time.time()
        status, answer = send(host, port, token, path, body)
        took = time.time() - started
        after = idle_cpu(pid)
        print(f"{name:20} status {status} answered in {took:6.2f} s, server CPU {after - before:6.2f} s"
              f"  {answer[:120]!r}")

    def listing(seconds):
        latencies = []
        end = time.time() + seconds
        while time.time() < end:
            started = time.time()
            try:
                request(host, port, other, "/v1/projects", None, timeout=60)
            except TimeoutError:
                print("other org GET /v1/projects: no answer within 60 s")
            latencies.append(time.time() - started)
        latencies.sort()
        return statistics.median(latencies), latencies[int(len(latencies) * 0.99) - 1], len(latencies)

    alone = listing(5)
    stop = threading.Event()

    def dry_runs():
        while not stop.is_set():
            request(host, port, writer, "/v1/projects/p1/proxy-settings/2?dry_run=true",
                    {"is_active": True})

    loops = [threading.Thread(target=dry_runs) for _ in range(2)]
    for loop in loops:
        loop.start()
    time.sleep(0.5)
    busy = listing(10)
    stop.set()
    for loop in loops:
        loop.join()
    idle_cpu(pid)
    for name, (p50, p99, count) in [("alone", alone), ("2 dry runs", busy)]:
        print(f"other org GET /v1/projects, {name:10}: p50 {p50 * 1000:8.2f} ms, p99 {p99 * 1000:8.2f} ms"
              f" ({count} requests)")


if __name__ == "__main__":
    main()
