#!/usr/bin/env python3
"""deploy/edge/ at the issue's size (issue 46, item 6): one HAProxy for
10,000 projects and 20,000 names, reloaded under load.

1. A folder as `proxydeck follow --organization` keeps it: 10,000
   projects (project.json, proxy-settings.json: one backend, one route),
   and the routing index in follow's format (routing.map: 18,000 exact
   names; routing-wildcards.map: 2,000 wildcards). Follow's own write of
   such an index is measured by the ignored test
   `follow::files::tests::routing_index_of_10000_projects_and_20000_names_is_written_within_a_second`.
2. deploy/edge/haproxy-apply run on it: HAProxy started, timed (the
   rendering, `haproxy -c`, the start).
3. wrk against HAProxy, with a Host one of the names, for the whole of
   --reloads runs of haproxy-apply, each after a name added to the index
   (a real change: a new configuration and maps, a new process taking the
   listening sockets over with -x, the old one finishing its
   connections). Every answer must be the backend's: wrk's socket errors
   and non-2xx answers are counted, and a name added is checked to route.

    python3 bench/edge.py [--projects 10000] [--names 20000] [--reloads 10] [--connections 50]
    python3 bench/edge.py --quick    # 300 projects, 600 names, 3 reloads: CI's proof it runs

Prints the figures (docs/edge.md keeps them). Needs haproxy, jq, wrk.
Everything on loopback, in a temporary folder.
"""

import argparse
import http.client
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def backend():
    """One HTTP server answering "ok" to every GET, for every project."""

    class Answer(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args):
            pass

    class Server(http.server.ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 1024

        def handle_error(self, request, client_address):
            pass

    server = Server(("127.0.0.1", 0), Answer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"127.0.0.1:{server.server_address[1]}"


def make_folder(folder, projects, names, address):
    for number in range(projects):
        project = f"project-{number:05}"
        os.makedirs(os.path.join(folder, project))
        with open(os.path.join(folder, project, "project.json"), "w") as out:
            json.dump({"object": "project", "id": project}, out)
        with open(os.path.join(folder, project, "proxy-settings.json"), "w") as out:
            json.dump({"object": "proxy_settings", "revision": 1, "is_active": True,
                       "backends": [{"name": "origin", "address": address, "default": True}],
                       "routes": [{"path": "/", "backend_name": "origin", "rank": "1"}]}, out)
    exact, wildcards = [], []
    for number in range(names):
        project = f"project-{number % projects:05}"
        if number % 10 == 9:
            wildcards.append(f"zone-{number}.example.net {project}")
        else:
            exact.append(f"site-{number}.example.com {project}")
    write_maps(folder, exact, wildcards)
    return exact, wildcards


def write_maps(folder, exact, wildcards):
    """The two maps as follow writes them: sorted, each renamed into place."""
    for name, lines in (("routing.map", exact), ("routing-wildcards.map", wildcards)):
        path = os.path.join(folder, name)
        with open(path + ".tmp", "w") as out:
            out.write("# bench/edge.py\n" + "".join(line + "\n" for line in sorted(lines)))
        os.replace(path + ".tmp", path)


def apply(folder, listen):
    started = time.monotonic()
    done = subprocess.run([os.path.join(ROOT, "deploy", "edge", "haproxy-apply")],
                          env=dict(os.environ, PROXYDECK_FOLLOW_DIR=folder, EDGE_LISTEN=listen),
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"haproxy-apply failed: {done.stderr}")
    return time.monotonic() - started


def served(port, host):
    try:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        connection.request("GET", "/", headers={"Host": host})
        answer = connection.getresponse()
        answer.read()
        return answer.status
    except OSError:
        return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--projects", type=int, default=10_000)
    parser.add_argument("--names", type=int, default=20_000)
    parser.add_argument("--reloads", type=int, default=10)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="300 projects, 600 names, 3 reloads")
    args = parser.parse_args()
    if args.quick:
        args.projects, args.names, args.reloads = 300, 600, 3
    for tool in ("haproxy", "jq", "wrk"):
        if shutil.which(tool) is None:
            raise SystemExit(f"needs {tool}")
    work = tempfile.mkdtemp(prefix="proxydeck-edge-bench-")
    folder = os.path.join(work, "edge")
    os.makedirs(folder)
    port = free_port()
    listen = f"127.0.0.1:{port}"
    pid_file = os.path.join(folder, ".haproxy", "haproxy.pid")
    try:
        address = backend()
        made = time.monotonic()
        exact, wildcards = make_folder(folder, args.projects, args.names, address)
        print(f"folder: {args.projects} projects, {len(exact)} exact names, {len(wildcards)} wildcards "
              f"({time.monotonic() - made:.1f} s to make)")
        first = apply(folder, listen)
        config = open(os.path.join(folder, ".haproxy", "haproxy.cfg")).read()
        print(f"haproxy-apply, first start: {first:.2f} s (configuration {len(config) // 1024} KiB)")
        host = exact[len(exact) // 2].split()[0]
        wildcard_host = "a." + wildcards[-1].split()[0]
        for probe in (host, wildcard_host):
            if served(port, probe) != 200:
                raise SystemExit(f"{probe} is not served: {served(port, probe)}")
        if served(port, "unknown.example.org") != 404:
            raise SystemExit("an unknown host is not 404")

        # wrk for as long as the reloads take, then the reloads.
        wrk = subprocess.Popen(
            ["wrk", "-t2", f"-c{args.connections}", "-d600s", "--latency", "-H", f"Host: {host}",
             f"http://{listen}/"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        time.sleep(1)
        took = []
        for reload in range(args.reloads):
            added = f"added-{reload}.example.org project-00001"
            exact.append(added)
            write_maps(folder, exact, wildcards)
            took.append(apply(folder, listen))
            added_host = added.split()[0]
            deadline = time.monotonic() + 10
            while served(port, added_host) != 200:
                if time.monotonic() > deadline:
                    raise SystemExit(f"{added_host} does not route after its reload")
                time.sleep(0.05)
        time.sleep(1)
        wrk.send_signal(signal.SIGINT)
        report, _ = wrk.communicate(timeout=30)
        requests = re.search(r"(\d+) requests in ([\d.]+)(\w+)", report)
        errors = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", report)
        non_2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", report)
        p99 = re.search(r"99%\s+([\d.]+\w+)", report)
        socket_errors = [int(n) for n in errors.groups()] if errors else [0, 0, 0, 0]
        print(f"reloads under wrk ({args.connections} connections): {args.reloads} runs of haproxy-apply, "
              f"each {min(took):.2f} to {max(took):.2f} s (median {sorted(took)[len(took) // 2]:.2f} s); "
              f"each added name routed after its run")
        print(f"wrk: {requests.group(1) if requests else '?'} requests, p99 {p99.group(1) if p99 else '?'}, "
              f"socket errors connect/read/write/timeout {socket_errors}, "
              f"non-2xx {non_2xx.group(1) if non_2xx else 0}")
        if not requests or sum(socket_errors) or non_2xx:
            print(report, file=sys.stderr)
            raise SystemExit("requests failed during the reloads")
    finally:
        if os.path.exists(pid_file):
            for pid in open(pid_file).read().split():
                try:
                    os.kill(int(pid), signal.SIGTERM)
                except (ProcessLookupError, ValueError):
                    pass
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
