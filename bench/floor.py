#!/usr/bin/env python3
"""PostgreSQL's floor under the mix: proxydeck against pgbench running the
very statements proxydeck sent for the same requests.

    CARGO_TARGET_DIR=... python3 bench/floor.py            # 200,000 projects, 300 requests, 7 rounds
    python3 bench/floor.py --quick                         # small data, short rounds: checks it works

What it does, on a PostgreSQL cluster of its own (initdb under
target/tmp/floor-cluster, 127.0.0.1 on a free port, kept for the next run
with its data; `--fresh` makes the data again):

1. The data of `bench/run.py --mix` (`generate --mix`, imported with
   `proxydeck admin import`, tokens by `bench_store mint`, VACUUM ANALYZE)
   and its "mix" request file, drawn by run.py's own code with its seed;
   the sample is the file's first --sample lines.
2. Capture, once with the caches off (`serve --caches none`) and once on
   (`--caches all`): a proxydeck serves the sample one request at a time,
   its sessions logging every statement (`log_min_duration_statement=0`
   in the URL's `options`; the cluster writes a csvlog). After each answer
   a marker statement from another session closes the request, so each
   request's statements are those logged between two markers. With the
   caches on, the sample is served once before the capture (the caches
   warm, as they are in the measurement). What the server's background
   tasks send (seen during 2 s idle before the capture) is left out.
3. pgbench scripts: each request a script of its statements in order
   (transactions stay whole), each `$n` a pgbench variable holding the
   logged value (`-D`), run with `-M prepared` under
   `plan_cache_mode=force_generic_plan`: what proxydeck sends, a prepared
   statement executed with text parameters, one round trip a statement,
   generic plans. (`-M simple` with literals would plan every statement
   anew; `EXECUTE` of an SQL-level PREPARE costs PostgreSQL 7-27 us more
   a statement than the protocol's Bind/Execute: both lower floors.)
   pgbench takes at most 128 script files: the requests are shared among
   128 files, each picking one of its requests at random (`\\if`),
   weighted by how many it holds, so every request is as likely. Every
   script runs once before the rounds (a statement that fails stops the
   run).
4. Rounds, alternating: proxydeck with the caches off serving the sample
   with wrk + bench/mix.lua at --connections, and pgbench replaying the
   caches-off capture with as many clients (`-c`, `-j 2`) for as long;
   then the same with the caches on (pgbench replaying the caches-on
   capture); the order within each pair turned every round. pgbench
   prepares a statement when a client first runs it (a statement of each
   request, for each client), so each of its rounds runs
   --pgbench-warmup seconds before the measured ones. A request is one
   line of the sample for proxydeck, one script for pgbench. Prints
   requests/s and proxydeck / pgbench per round (median and range), CPU
   per request (proxydeck's process, the whole cluster's, the load
   client's) and what the capture found.

Timings are printed, never asserted: compare ratios measured in one run.
"""

import argparse
import csv
import io
import json
import math
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
import urllib.parse
from collections import Counter
from types import SimpleNamespace

sys.dont_write_bytecode = True  # no bench/__pycache__ from importing run.py
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as mixbench  # noqa: E402  (bench/run.py: the mix's data, request files, wrk)

ROOT = mixbench.ROOT
CLUSTER = os.path.join(ROOT, "target", "tmp", "floor-cluster")
DATABASE = "floor"
CAPTURE_APPLICATION = "proxydeck-floor-capture"
MARKER = "floor-marker"
MAX_SCRIPTS = 128  # pgbench's limit on -f files
MODES = [("off", ["--caches", "none"]), ("on", ["--caches", "all"])]


def log(message):
    print(f"[floor] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------
# The cluster
# ---------------------------------------------------------------------------

def server_bin():
    """Where initdb and pg_ctl are: the PATH, or Debian's layout."""
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return os.path.dirname(found)
    versions = sorted(os.path.join("/usr/lib/postgresql", v, "bin") for v in os.listdir("/usr/lib/postgresql"))
    for bin_ in reversed(versions):
        if os.path.isfile(os.path.join(bin_, "pg_ctl")):
            return bin_
    raise SystemExit("initdb and pg_ctl are not installed")


def server_command(program, *args):
    """A server program's command; as root, run as the postgres user (the
    server refuses root)."""
    command = [os.path.join(server_bin(), program), *args]
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def hand_to_postgres(path):
    if os.geteuid() == 0:
        shutil.chown(path, "postgres", "postgres")


class Cluster:
    """A cluster in `CLUSTER`, listening on 127.0.0.1 only, writing a csvlog
    (statements are logged only by the sessions that ask for it)."""

    def __init__(self, folder):
        self.folder = folder
        self.data = os.path.join(folder, "data")
        self.csv = os.path.join(folder, "log", "floor.csv")
        self.port = None

    def start(self):
        if not os.path.exists(os.path.join(self.data, "PG_VERSION")):
            log(f"initdb in {self.data}")
            os.makedirs(self.folder, exist_ok=True)
            hand_to_postgres(self.folder)
            # The locale of Debian's default cluster here (C.UTF-8).
            mixbench.run(server_command("initdb", "-D", self.data, "-U", "postgres", "--auth=trust",
                                        "-E", "UTF8", "--locale=C.UTF-8"), stdout=subprocess.DEVNULL)
        status = subprocess.run(server_command("pg_ctl", "-D", self.data, "status"), capture_output=True)
        if status.returncode == 0:
            mixbench.run(server_command("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop"),
                         stdout=subprocess.DEVNULL)
        self.port = mixbench.free_port()
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.folder} "
                   f"-c logging_collector=on -c log_destination=csvlog "
                   f"-c log_directory={os.path.dirname(self.csv)} -c log_filename=floor.log "
                   f"-c log_rotation_size=0 -c log_rotation_age=0 -c log_parameter_max_length=-1")
        mixbench.run(server_command("pg_ctl", "-D", self.data, "-l", os.path.join(self.folder, "server.log"),
                                    "-o", options, "-w", "-t", "60", "start"), stdout=subprocess.DEVNULL)
        with open(os.path.join(self.data, "postmaster.pid")) as pid:
            self.postmaster = int(pid.readline())
        log(f"cluster {self.data} on 127.0.0.1:{self.port} (postmaster {self.postmaster})")
        if DATABASE not in mixbench.psql(self.url("postgres"), "SELECT datname FROM pg_database").split():
            mixbench.run(["psql", self.url("postgres"), "-qc", f"CREATE DATABASE {DATABASE}"])

    def stop(self):
        mixbench.run(server_command("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop"), stdout=subprocess.DEVNULL)

    def url(self, database=DATABASE, **params):
        query = f"?{urllib.parse.urlencode(params, quote_via=urllib.parse.quote)}" if params else ""
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}{query}"

    def cpu(self):
        """CPU seconds of the cluster so far: the postmaster, its live
        children, and its children that ended (waited for)."""
        live = {pid: spent for pid, spent in mixbench.postgres_processes().items()
                if pid == self.postmaster or mixbench.parent_of_or_none(pid) == self.postmaster}
        return live, mixbench.children_cpu(self.postmaster)

    @staticmethod
    def cpu_spent(before, after):
        (old, reaped_before), (new, reaped_after) = before, after
        ended = sum(spent for pid, spent in old.items() if pid not in new)
        return sum(spent - old.get(pid, 0) for pid, spent in new.items()) + reaped_after - reaped_before - ended


# ---------------------------------------------------------------------------
# The data and the sample
# ---------------------------------------------------------------------------

def prepare(cluster, shape, args, env):
    """The mix data in a schema of the cluster's database (made once per
    shape, reused by the next run) and its mix request file: answers
    (schema, the sample: [(token, path)])."""
    schema = f"mix_p{shape['projects']}_o{shape['organizations']}_u{shape['users']}"
    work = os.path.join(cluster.folder, "work", schema)
    state_path = os.path.join(work, "state.json")
    admin = cluster.url()
    exists = schema in mixbench.psql(admin, "SELECT nspname FROM pg_namespace").split()
    if args.fresh or not (exists and os.path.exists(state_path)):
        log(f"making the mix data: {shape['projects']:,} projects, {shape['organizations']:,} organizations, "
            f"{shape['users']:,} users, in schema {schema}")
        os.makedirs(work, exist_ok=True)
        mixbench.run(["psql", admin, "-qc", f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"])
        data_file, meta_path = os.path.join(work, "data.ndjson"), os.path.join(work, "meta.json")
        with open(data_file, "w") as out:
            mixbench.run([os.path.join(mixbench.RELEASE, "examples", "generate"), "--mix",
                          "--projects", str(shape["projects"]), "--organizations", str(shape["organizations"]),
                          "--users", str(shape["users"]), "--big-organizations", str(shape["big"]),
                          "--meta", meta_path], stdout=out)
        with open(meta_path) as file:
            meta = json.load(file)
        urls = mixbench.postgres_urls(admin, schema)
        # run.py's own preparation (import, tokens, VACUUM ANALYZE, request
        # files); only the mix file is used, and only its first lines.
        _, files, _ = mixbench.prepare_store("PostgreSQL", urls, data_file, meta_path, meta,
                                             SimpleNamespace(lines=max(args.sample, 10_000), pool=1_000), env, work)
        os.remove(data_file)
        with open(state_path, "w") as out:
            json.dump({"shape": shape, "mix": files["mix"]}, out)
    with open(state_path) as file:
        state = json.load(file)
    with open(state["mix"]) as lines:
        sample = [line.rstrip("\n").split("\t", 1) for _, line in zip(range(args.sample), lines)]
    if len(sample) < args.sample:
        raise SystemExit(f"the request file holds {len(sample)} lines, fewer than --sample {args.sample}: use --fresh")
    return schema, sample


# ---------------------------------------------------------------------------
# Capture
# ---------------------------------------------------------------------------

def serve(cluster, schema, flags, env, log_path, application="proxydeck-floor", log_statements=False):
    """A proxydeck serving the schema; answers (process, base URL)."""
    options = f"-c search_path={schema}"
    if log_statements:
        options += " -c log_min_duration_statement=0"
    port = mixbench.free_port()
    server = mixbench.Process([mixbench.PROXYDECK, "--database",
                               cluster.url(options=options, application_name=application),
                               "serve", "--listen", f"127.0.0.1:{port}", "--rate-limit", "off", *flags],
                              env, log_path)
    return server, f"http://127.0.0.1:{port}"


def ask(base, token, path):
    status, body = mixbench.fetch(base + path, token)
    if status != 200:
        raise SystemExit(f"{path} answered {status}: {body[:300]!r}")


LOGGED = re.compile(r"duration: [0-9.]+ ms  (statement|execute [^:]*): (.*)", re.S)
PARAMETER = re.compile(r"\$(\d+) = (NULL|'(?:[^']|'')*')")


def transaction_control(sql):
    return sql.split(None, 1)[0].upper() in ("BEGIN", "COMMIT", "ROLLBACK", "START")


def without_background(statements, background, left_out):
    """The statements of the capture, [(segment, pid, prepared, sql,
    parameters)] in the log's order, less those of the server's background
    tasks: their texts (`background`), writes, and a transaction of
    theirs (BEGIN and COMMIT on the same connection with nothing else
    kept between them, wherever the markers fell). Answers {segment:
    [(prepared, sql, parameters)]}; counts what it left out."""
    kept = []
    for segment, pid, prepared, sql, parameters in statements:
        # The sample's requests are reads: a write is the server's own (the
        # tokens' last use, flushed every 15 s).
        if sql in background or sql.split(None, 1)[0].upper() in ("INSERT", "UPDATE", "DELETE"):
            left_out[sql] += 1
            continue
        if sql.split(None, 1)[0].upper() in ("COMMIT", "ROLLBACK"):
            opened = next((i for i in range(len(kept) - 1, -1, -1) if kept[i][1] == pid), None)
            if opened is not None and kept[opened][3].split(None, 1)[0].upper() in ("BEGIN", "START"):
                left_out[kept[opened][3]] += 1
                left_out[sql] += 1
                del kept[opened]
                continue
        kept.append((segment, pid, prepared, sql, parameters))
    segments = {}
    for segment, _, prepared, sql, parameters in kept:
        segments.setdefault(segment, []).append((prepared, sql, parameters))
    return segments


def balanced(request):
    """Whether a request's transactions each end within it."""
    depth = 0
    for _, sql, _ in request:
        word = sql.split(None, 1)[0].upper()
        depth += 1 if word in ("BEGIN", "START") else -1 if word in ("COMMIT", "ROLLBACK") else 0
        if depth not in (0, 1):
            return False
    return depth == 0


def capture(cluster, schema, caches, flags, sample, env, work):
    """The statements proxydeck sends for each request of `sample`, caches
    as `flags` say: answers ([[...]] a list per
    request, each (prepared or not, sql, {n: text or None}); Counter of
    the background statements left out; their texts)."""
    offset = os.path.getsize(cluster.csv) if os.path.exists(cluster.csv) else 0
    server, base = serve(cluster, schema, flags, env, os.path.join(work, f"capture-{caches}.log"),
                         application=CAPTURE_APPLICATION, log_statements=True)
    markers = mixbench.PsqlSession(cluster.url())
    try:
        token = sample[0][0]
        server.wait_answering(f"{base}/v1/projects?limit=1", token)
        markers.rows("SET log_min_duration_statement = 0")

        def mark(name):
            markers.rows(f"SELECT '{MARKER} {name}'")

        mark("idle")
        time.sleep(2)
        mark("warm")
        if caches == "on":
            for token, path in sample:
                ask(base, token, path)
        mark("capture")
        for k, (token, path) in enumerate(sample):
            ask(base, token, path)
            mark(f"request {k}")
    finally:
        markers.close()
        server.stop()
    time.sleep(1)  # the collector writes what it was sent
    with open(cluster.csv, "rb") as file:
        file.seek(offset)
        rows = list(csv.reader(io.StringIO(file.read().decode())))
    # Split the server's statements at the markers.
    statements, markers_seen, current = [], set(), None
    for row in rows:
        message, detail, application, severity = row[13], row[14], row[22], row[11]
        if application == CAPTURE_APPLICATION and severity in ("ERROR", "FATAL", "PANIC"):
            raise SystemExit(f"proxydeck's session logged {severity}: {message}")
        found = re.fullmatch(rf"duration: [0-9.]+ ms  statement: SELECT '{MARKER} ([^']*)';?", message)
        if found and application != CAPTURE_APPLICATION:
            current = found.group(1)
            markers_seen.add(current)
            continue
        statement = LOGGED.fullmatch(message)
        if application != CAPTURE_APPLICATION or not statement or current is None:
            continue
        parameters = {}
        if detail.lower().startswith("parameters: "):
            for number, value in PARAMETER.findall(detail):
                parameters[int(number)] = None if value == "NULL" else value[1:-1].replace("''", "'")
        statements.append((current, int(row[3]), statement.group(1) != "statement", statement.group(2), parameters))
    background = {sql for segment, _, _, sql, _ in statements
                  if segment == "idle" and not transaction_control(sql)}
    left_out = Counter()
    segments = without_background(statements, background, left_out)
    requests = []
    order = ["capture", *(f"request {k}" for k in range(len(sample) - 1))]
    for name in order:
        if name not in markers_seen:
            raise SystemExit(f"capture: no marker {name!r} in {cluster.csv}")
        requests.append(segments.get(name, []))
        if not balanced(requests[-1]):
            raise SystemExit(f"capture: a transaction of {sample[len(requests) - 1][1]} does not end within it: "
                             f"{[sql for _, sql, _ in requests[-1]]}")
    if f"request {len(sample) - 1}" not in markers_seen:
        raise SystemExit("capture: the last request's marker is missing")
    return requests, left_out, background


# ---------------------------------------------------------------------------
# pgbench scripts
# ---------------------------------------------------------------------------

def scripts(requests, folder):
    """pgbench files for `requests` (each a list of (prepared, sql,
    parameters)): answers ([(path, weight)], the `-D` definitions of the
    parameters, the validation script that runs every request once in
    order).

    Each `$n` of a statement becomes a pgbench variable holding the logged
    value (`-D r<request>_<statement>_<n>=value`), so that `-M prepared`
    sends what proxydeck sent: a prepared statement, executed with its
    parameters as text, one round trip."""
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        os.remove(os.path.join(folder, name))
    defines, bodies = [], []
    for k, request in enumerate(requests):
        body = []
        for j, (_, sql, parameters) in enumerate(request):
            def variable(match):
                n = int(match.group(1))
                if n not in parameters:
                    raise SystemExit(f"capture: no value logged for ${n} of: {sql}")
                if parameters[n] is None:
                    raise SystemExit(f"capture: ${n} is NULL, which a pgbench variable cannot be: {sql}")
                defines.append(f"r{k}_{j}_{n}={parameters[n]}")
                return f":r{k}_{j}_{n}"

            body.append(re.sub(r"\$(\d+)", variable, sql).rstrip().rstrip(";") + ";")
        bodies.append(body or ["SELECT 1;"])  # a request proxydeck answered with no statement
    per = math.ceil(len(bodies) / MAX_SCRIPTS)
    files = []
    for start in range(0, len(bodies), per):
        chunk = bodies[start:start + per]
        lines = []
        if len(chunk) > 1:
            lines.append(f"\\set k random(1, {len(chunk)})")
        for i, body in enumerate(chunk):
            if len(chunk) > 1:
                lines.append(f"\\if :k = {i + 1}" if i == 0 else f"\\elif :k = {i + 1}")
            lines.extend(body)
        if len(chunk) > 1:
            lines.append("\\endif")
        path = os.path.join(folder, f"requests-{start:05}.sql")
        with open(path, "w") as out:
            out.write("\n".join(lines) + "\n")
        files.append((path, len(chunk)))
    validation = os.path.join(folder, "all.sql")
    with open(validation, "w") as out:
        out.write("\n".join(line for body in bodies for line in body) + "\n")
    return files, defines, validation


def pgbench_command(cluster, schema, files, defines, clients, seconds=None, transactions=None):
    command = ["pgbench", "-n", "-M", "prepared", "-c", str(clients), "-j", str(min(2, clients)),
               "-h", "127.0.0.1", "-p", str(cluster.port), "-U", "postgres"]
    command += ["-T", str(seconds), "-P", "1"] if seconds else ["-t", str(transactions)]
    for path, weight in files:
        command += ["-f", f"{path}@{weight}"]
    for define in defines:
        command += ["-D", define]
    env = dict(os.environ, PGSSLMODE="disable", PGAPPNAME="proxydeck-floor-pgbench",
               PGOPTIONS=f"-c search_path={schema} -c plan_cache_mode=force_generic_plan")
    return command + [DATABASE], env


def validate(cluster, schema, validation, defines):
    """Every captured statement once through pgbench (one client, in
    order): a statement pgbench cannot run stops the run here."""
    command, env = pgbench_command(cluster, schema, [(validation, 1)], defines, 1, transactions=1)
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    if done.returncode != 0 or "number of transactions actually processed: 1/1" not in done.stdout:
        raise SystemExit(f"pgbench could not replay the capture (exit {done.returncode}):\n"
                         f"{done.stderr[-3000:]}\n{done.stdout[-2000:]}")


# ---------------------------------------------------------------------------
# Measurement
# ---------------------------------------------------------------------------

def proxydeck_round(cluster, server, base, requests_file, seconds, connections):
    """wrk on proxydeck for `seconds`: requests, requests/s, and CPU
    seconds of the cluster, the server and wrk."""
    before = cluster.cpu(), client_cpu(), mixbench.cpu_seconds(server.process.pid)
    result = mixbench.wrk(base, requests_file, seconds, connections)
    after = cluster.cpu(), client_cpu(), mixbench.cpu_seconds(server.process.pid)
    if result["non_2xx"] or any(result["errors"].values()):
        raise SystemExit(f"proxydeck: {result['non_2xx']} answers not 2xx, errors {result['errors']}")
    return {"requests": result["requests"], "rps": result["requests_per_s"],
            "pg_cpu": Cluster.cpu_spent(before[0], after[0]), "client_cpu": after[1] - before[1],
            "server_cpu": after[2] - before[2]}


def client_cpu():
    """CPU seconds of this process's children that ended (wrk)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


PROGRESS = re.compile(r"progress: ([0-9.]+) s, ([0-9.]+) tps")


def pgbench_round(cluster, schema, files, defines, warmup, seconds, clients):
    """pgbench for `warmup` + `seconds` s (and one more); the figures of
    the `seconds` after the warm-up only: each client prepares a statement the first time it runs
    it, and a client meets most of a few hundred requests within the
    warm-up. Requests/s from pgbench's progress lines (one a second), CPU
    of the cluster and of pgbench between the line at `warmup` and the
    last."""
    # A second more than measured: pgbench may end before its last line.
    command, env = pgbench_command(cluster, schema, files, defines, clients, seconds=warmup + seconds + 1)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    before = after = None
    rates, errors = [], []
    for line in process.stderr:
        progress = PROGRESS.match(line)
        if not progress:
            errors.append(line)
            continue
        at = round(float(progress.group(1)))
        if at == warmup:
            before = cluster.cpu(), mixbench.cpu_seconds(process.pid)
        elif warmup < at <= warmup + seconds and before:
            rates.append(float(progress.group(2)))
            if at == warmup + seconds:
                after = cluster.cpu(), mixbench.cpu_seconds(process.pid)
    out = process.stdout.read()
    if process.wait() != 0 or re.search(r"number of failed transactions: [1-9]", out) or not after:
        raise SystemExit(f"pgbench failed (exit {process.returncode}, or no progress line at {warmup + seconds} s):\n"
                         f"{''.join(errors)[-3000:]}\n{out[-2000:]}")
    rps = statistics.mean(rates)
    return {"requests": rps * seconds, "rps": rps, "pg_cpu": Cluster.cpu_spent(before[0], after[0]),
            "client_cpu": after[1] - before[1], "server_cpu": None}


def spread(values):
    values = sorted(values)
    return f"{statistics.median(values):.3f} ({values[0]:.3f}-{values[-1]:.3f})"


def per_request_us(rounds, key):
    requests = sum(r["requests"] for r in rounds)
    return 1e6 * sum(r[key] for r in rounds) / requests if requests and rounds[0][key] is not None else None


# ---------------------------------------------------------------------------
# What the capture shows
# ---------------------------------------------------------------------------

def kind(sql):
    """A statement's short name for the findings: its first words, or the
    table a SELECT reads first."""
    text = " ".join(sql.split())
    if not text.upper().startswith(("SELECT", "WITH")):
        return text[:60]
    table = re.search(r"\bFROM\s+([a-z_]+)", text, re.I)
    return f"SELECT ... FROM {table.group(1) if table else '?'}"


def describe(requests, paths):
    """Counts for the findings: statements per request, transactions, the
    statement kinds, and the statements of each part of the mix."""
    counts = [len(r) for r in requests]
    begins = sum(1 for r in requests if any(sql.lstrip().upper().startswith("BEGIN") for _, sql, _ in r))
    kinds = Counter(kind(sql) for r in requests for _, sql, _ in r)
    by_part = {}
    for request, path in zip(requests, paths):
        part = ("proxy settings" if "/proxy-settings" in path else
                "api_tokens" if path.startswith("/v1/api_tokens") else "projects")
        by_part.setdefault(part, []).append(len(request))
    distinct = len({sql for r in requests for _, sql, _ in r})
    return {"statements_mean": statistics.mean(counts), "statements_max": max(counts), "with_begin": begins,
            "distinct_statements": distinct, "kinds": kinds.most_common(),
            "by_part": {part: (len(c), statistics.mean(c)) for part, c in by_part.items()},
            "per_request": Counter(counts)}


# ---------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small data, 50 requests, 1 s rounds: checks it works")
    parser.add_argument("--projects", type=int, default=200_000)
    parser.add_argument("--organizations", type=int, default=200)
    parser.add_argument("--users", type=int, default=2_000)
    parser.add_argument("--sample", type=int, default=300, help="mix requests captured and replayed (default 300)")
    parser.add_argument("--connections", type=int, default=32,
                        help="wrk's connections and pgbench's clients (default 32, the mix's)")
    parser.add_argument("--seconds", type=int, default=5, help="a round's length on each side (default 5)")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--pgbench-warmup", type=int, default=8, metavar="SECONDS",
                        help="pgbench's seconds before each round's measured ones, while its clients prepare "
                             "their statements (default 8)")
    parser.add_argument("--pgbench-clients", type=int, metavar="N",
                        help="pgbench's clients (default: --connections, the same concurrency as wrk's)")
    parser.add_argument("--fresh", action="store_true", help="make the data again even if a run left it")
    parser.add_argument("--json-out", metavar="FILE", help="also write every figure to FILE")
    args = parser.parse_args()
    if args.quick:
        args.projects, args.organizations, args.users = 20_000, 100, 500
        args.sample, args.seconds, args.rounds, args.connections, args.pgbench_warmup = 50, 1, 1, 4, 2
    args.pgbench_clients = args.pgbench_clients or args.connections
    shape = dict(projects=args.projects, organizations=args.organizations, users=args.users, big=8)
    for tool in ("pgbench", "psql"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (Debian: postgresql-client)")
    for binary in (mixbench.PROXYDECK, mixbench.BENCH_STORE):
        if not os.path.exists(binary):
            raise SystemExit(f"{binary} is missing: cargo build --release --bin proxydeck --example generate "
                             "--example bench_store (with the same CARGO_TARGET_DIR)")
    if not mixbench.caches_flag_supported():
        raise SystemExit("this proxydeck has no --caches flag")
    mixbench.ensure_wrk()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYDECK_")}
    env["RUST_LOG"] = env.get("RUST_LOG", "info,refinery_core=warn")

    cluster = Cluster(CLUSTER)
    cluster.start()
    try:
        schema, sample = prepare(cluster, shape, args, env)
        work = os.path.join(cluster.folder, "work", schema, "floor")
        os.makedirs(work, exist_ok=True)
        sample_file = os.path.join(work, "sample.tsv")
        with open(sample_file, "w") as out:
            out.writelines(f"{token}\t{path}\n" for token, path in sample)
        paths = [path for _, path in sample]
        replay, found = {}, {}
        for caches, flags in MODES:
            log(f"capture, caches {caches}: {len(sample)} requests one at a time")
            requests, left_out, background = capture(cluster, schema, caches, flags, sample, env, work)
            with open(os.path.join(work, f"capture-{caches}.txt"), "w") as out:
                for path, request in zip(paths, requests):
                    out.write(f"{path}\n" + "".join(
                        f"    {' '.join(sql.split())[:150]}  {[parameters[n] for n in sorted(parameters)]}\n"
                        for _, sql, parameters in request))
            files, defines, validation = scripts(requests, os.path.join(work, f"scripts-{caches}"))
            validate(cluster, schema, validation, defines)
            replay[caches] = files, defines
            found[caches] = {**describe(requests, paths), "left_out": left_out.most_common(),
                             "background": sorted(background)}
            log(f"  {found[caches]['statements_mean']:.2f} statements a request, {found[caches]['with_begin']} "
                f"requests with a transaction; {sum(left_out.values())} background statements left out; "
                f"{len(files)} pgbench files")

        servers = {}
        try:
            for caches, flags in MODES:
                servers[caches] = serve(cluster, schema, flags, env, os.path.join(work, f"serve-{caches}.log"))
                servers[caches][0].wait_answering(f"{servers[caches][1]}/v1/projects?limit=1", sample[0][0])
            for caches, _ in MODES:
                log(f"warm-up, caches {caches}: {min(3, args.seconds)} s of proxydeck")
                mixbench.wrk(servers[caches][1], sample_file, min(3, args.seconds), args.connections)
            rounds = {caches: {"proxydeck": [], "pgbench": []} for caches, _ in MODES}
            for k in range(args.rounds):
                for caches, _ in MODES:
                    server, base = servers[caches]
                    sides = [("proxydeck", lambda: proxydeck_round(cluster, server, base, sample_file, args.seconds,
                                                                   args.connections)),
                             ("pgbench", lambda: pgbench_round(cluster, schema, *replay[caches], args.pgbench_warmup,
                                                               args.seconds, args.pgbench_clients))]
                    for side, measure in (sides if k % 2 == 0 else sides[::-1]):
                        rounds[caches][side].append(measure())
                    pd, pg = rounds[caches]["proxydeck"][-1], rounds[caches]["pgbench"][-1]
                    log(f"round {k + 1}, caches {caches}: proxydeck {pd['rps']:,.0f}/s, pgbench {pg['rps']:,.0f}/s, "
                        f"ratio {pd['rps'] / pg['rps']:.3f}")
        finally:
            for server, _ in servers.values():
                server.stop()
    finally:
        cluster.stop()

    report(rounds, found, shape, args)
    if args.json_out:
        with open(args.json_out, "w") as out:
            json.dump({"shape": shape, "settings": vars(args), "rounds": rounds, "capture": found}, out, indent=1)


def report(rounds, found, shape, args):
    print()
    print(f"Data: bench/run.py --mix's, {shape['projects']:,} projects in {shape['organizations']:,} organizations, "
          f"{shape['users']:,} users, on a cluster of its own (127.0.0.1, no TLS). Sample: the mix request "
          f"file's first {args.sample} lines. {args.rounds} rounds of {args.seconds} s a side, {args.connections} "
          f"connections (wrk) / {args.pgbench_clients} clients (pgbench -M prepared -j 2, generic plans, "
          f"measured after {args.pgbench_warmup} s of its own), alternating. Ratios: "
          f"proxydeck / pgbench in the same round, median (range).")
    print()
    print("| caches | proxydeck requests/s | pgbench requests/s | **proxydeck ÷ pgbench** | CPU µs/request: "
          "proxydeck | PostgreSQL under proxydeck / pgbench | wrk / pgbench (client) |")
    print("|---|---:|---:|---|---:|---|---|")
    median = statistics.median
    for caches, sides in rounds.items():
        pd, pg = sides["proxydeck"], sides["pgbench"]
        ratios = [a["rps"] / b["rps"] for a, b in zip(pd, pg)]
        us = lambda rs, key: f"{per_request_us(rs, key):,.0f}"
        print(f"| {caches} | {median(r['rps'] for r in pd):,.0f} | {median(r['rps'] for r in pg):,.0f} "
              f"| **{spread(ratios)}** | {us(pd, 'server_cpu')} | {us(pd, 'pg_cpu')} / {us(pg, 'pg_cpu')} "
              f"| {us(pd, 'client_cpu')} / {us(pg, 'client_cpu')} |")
    if "on" in rounds and "off" in rounds:
        ratios = [a["rps"] / b["rps"] for a, b in zip(rounds["on"]["proxydeck"], rounds["off"]["pgbench"])]
        print(f"\nproxydeck with the caches on ÷ pgbench replaying the caches-off capture: {spread(ratios)}")
    print()
    print("What the capture found (statements a request: what proxydeck sent for it, each one round trip):")
    for caches, f in found.items():
        parts = ", ".join(f"{part} {n} requests, {mean:.2f}" for part, (n, mean) in sorted(f["by_part"].items()))
        print(f"- caches {caches}: {f['statements_mean']:.2f} statements a request (max {f['statements_max']}; "
              f"{parts}); {f['with_begin']} of {args.sample} requests in a transaction; "
              f"{f['distinct_statements']} distinct statement texts; "
              f"left out as background: {sum(n for _, n in f['left_out'])}")
        print("  " + "; ".join(f"{k}: {n}" for k, n in f["kinds"]))


if __name__ == "__main__":
    main()
