#!/usr/bin/env python3
"""How far one primary goes: the figures of docs/deployment.md's "Sizing".

    CARGO_TARGET_DIR=... python3 bench/sizing.py            # 5 rounds of 8 s a side, then the write runs
    python3 bench/sizing.py --rounds 1 --seconds 3         # checks it works

What it does, under target/tmp/sizing (kept for the next run):

1. A throwaway primary: a copy of bench/floor.py's cluster (its data dir,
   stopped, copied once from --from; it holds `bench/run.py --mix`'s data,
   200,000 projects in 200 organizations, 2,000 users, and the mix request
   file), started on 127.0.0.1 and a Unix socket; a streaming replica made
   from it with `pg_basebackup -R` (its own cluster, port and socket); a
   pgbouncer 1.18 in transaction mode in front of the primary (Debian's,
   stock settings but for its address, as .ci/pgbouncer), reached as a
   role named after the data's schema (no search_path passes a pooler;
   the role's own `search_path` setting, applied at each server
   connection's start, finds the schema).
2. Sides, all served at once by one binary: the primary alone, caches on
   (the default) and off (`--caches none`); the same with
   `--database-replica` (reads on the replica); the primary over its Unix
   socket; the primary through pgbouncer (`--database-pooler transaction
   --database-direct-url ...`), caches on and off. `bench_store write`
   writes about 50 a second on the primary meanwhile (the mix's writer).
3. Rounds: each side in turn (the order turned by one each round) serves
   the mix (wrk + bench/mix.lua, 32 connections) for --seconds; CPU per
   request of the service process, of each cluster (every process of it,
   ended ones included: the writer's work, replay, background and the
   other sides' idle polling too), of pgbouncer, and of wrk.
4. Write runs (the writer stopped), on the primary alone and with the
   replica, caches on: createProject over HTTP at full speed, 4 and 16
   connections, alone and with the mix's readers at full speed beside
   (32 connections); writes/s, reads/s and where the CPU went.

The write runs' projects stay in the primary's copy (about 50,000 a
run): remove target/tmp/sizing/primary-data for the data as the mix
builds it.

Timings are printed, never asserted: compare ratios measured in one run.
"""

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import run as mixbench  # noqa: E402
import floor  # noqa: E402

HERE = os.path.join(mixbench.ROOT, "target", "tmp", "sizing")
SCHEMA = "mix_p200000_o200_u2000"
DATABASE = "floor"


def log(message):
    print(f"[sizing] {message}", file=sys.stderr, flush=True)


class Cluster:
    def __init__(self, name, data):
        self.name, self.data = name, data
        self.socket_dir = os.path.join(HERE, f"{name}-socket")

    def start(self):
        status = subprocess.run(floor.server_command("pg_ctl", "-D", self.data, "status"), capture_output=True)
        if status.returncode == 0:
            mixbench.run(floor.server_command("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop"),
                         stdout=subprocess.DEVNULL)
        os.makedirs(self.socket_dir, exist_ok=True)
        floor.hand_to_postgres(self.socket_dir)
        self.port = mixbench.free_port()
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.socket_dir} -c logging_collector=off"
        mixbench.run(floor.server_command("pg_ctl", "-D", self.data, "-l", os.path.join(HERE, f"{self.name}.log"),
                                          "-o", options, "-w", "-t", "120", "start"), stdout=subprocess.DEVNULL)
        with open(os.path.join(self.data, "postmaster.pid")) as pid:
            self.postmaster = int(pid.readline())
        log(f"{self.name}: {self.data} on 127.0.0.1:{self.port} (postmaster {self.postmaster})")

    def stop(self):
        mixbench.run(floor.server_command("pg_ctl", "-D", self.data, "-m", "fast", "-w", "stop"),
                     stdout=subprocess.DEVNULL)

    def url(self, user="postgres", socket=False, **params):
        query = f"?{urllib.parse.urlencode(params, quote_via=urllib.parse.quote)}" if params else ""
        if socket:
            params = dict(params, host=self.socket_dir, port=self.port)
            return f"postgres://{user}@/{DATABASE}?{urllib.parse.urlencode(params, quote_via=urllib.parse.quote)}"
        return f"postgres://{user}@127.0.0.1:{self.port}/{DATABASE}{query}"

    def cpu(self):
        live = {pid: spent for pid, spent in mixbench.postgres_processes().items()
                if pid == self.postmaster or mixbench.parent_of_or_none(pid) == self.postmaster}
        return live, mixbench.children_cpu(self.postmaster)


def setup(source):
    os.makedirs(HERE, exist_ok=True)
    floor.hand_to_postgres(HERE)
    primary = Cluster("primary", os.path.join(HERE, "primary-data"))
    if not os.path.exists(os.path.join(primary.data, "PG_VERSION")):
        log(f"copying {source}/data (stopped) to {primary.data}")
        mixbench.run(["cp", "-a", os.path.join(source, "data"), primary.data])
    primary.start()
    replica = Cluster("replica", os.path.join(HERE, "replica-data"))
    if os.path.exists(replica.data):
        subprocess.run(floor.server_command("pg_ctl", "-D", replica.data, "-m", "immediate", "-w", "stop"),
                       capture_output=True)
        shutil.rmtree(replica.data)
    log("pg_basebackup -R of the primary")
    started = time.monotonic()
    basebackup = shutil.which("pg_basebackup") or "/usr/lib/postgresql/15/bin/pg_basebackup"
    as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    mixbench.run([*as_postgres, basebackup, "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
                                      "-D", replica.data, "-R", "-X", "stream", "-c", "fast"])
    log(f"  {time.monotonic() - started:.0f} s")
    replica.start()
    admin = primary.url()
    role = SCHEMA
    mixbench.run(["psql", admin, "-qc",
                  f"DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{role}') THEN "
                  f"CREATE ROLE {role} LOGIN SUPERUSER; END IF; END $$; "
                  f"ALTER ROLE {role} SET search_path = {SCHEMA}"])
    return primary, replica


def start_pgbouncer(primary):
    folder = os.path.join(HERE, "pgbouncer")
    os.makedirs(folder, exist_ok=True)
    port = mixbench.free_port()
    with open(os.path.join(folder, "pgbouncer.ini"), "w") as ini:
        ini.write(f"[databases]\n* = host=127.0.0.1 port={primary.port}\n\n[pgbouncer]\n"
                  f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\npool_mode = transaction\n"
                  f"auth_type = trust\nauth_file = {folder}/users.txt\nauth_user = postgres\n"
                  f"max_client_conn = 1000\nlogfile = {folder}/pgbouncer.log\npidfile = {folder}/pgbouncer.pid\n")
    with open(os.path.join(folder, "users.txt"), "w") as users:
        users.write('"postgres" ""\n')
    as_user = []
    if os.geteuid() == 0:
        mixbench.run(["chown", "-R", "postgres", folder])
        as_user = ["-u", "postgres"]
    mixbench.run(["/usr/sbin/pgbouncer", "-d", *as_user, os.path.join(folder, "pgbouncer.ini")])
    time.sleep(1)
    with open(os.path.join(folder, "pgbouncer.pid")) as pid:
        return port, int(pid.read())


def users_of(base, tokens):
    """token -> user id, asked of the service (/v1/users/me)."""
    found = {}
    for token in tokens:
        status, body = mixbench.fetch(base + "/v1/users/me", token)
        if status != 200:
            raise SystemExit(f"/v1/users/me answered {status}: {body[:200]!r}")
        found[token] = json.loads(body)["id"]
    return found


def create_file(pool, meta_users, path, lines, seed):
    """createProject lines (bench/mix.lua's TOKEN PATH METHOD BODY), each
    slug new; callers from `pool` [(token, user)], in one of their
    organizations (mix users are admins of their own)."""
    rng = random.Random(seed)
    with open(path, "w") as out:
        for k in range(lines):
            token, user = rng.choice(pool)
            organization = rng.choice(meta_users[user])
            body = {"organization_id": mixbench.org_id(organization), "slug": f"sizing-{seed}-{k}",
                    "description": f"made by bench/sizing.py ({k})"}
            out.write(f"{token}\t/v1/projects\tPOST\t{json.dumps(body)}\n")
    return path


def measure(calls, clusters, others):
    """Runs `calls` (name -> function answering a wrk result) at once;
    answers each result and the CPU seconds spent meanwhile by each
    cluster and each of `others` (name -> pid), and by wrk."""
    before = ({c.name: c.cpu() for c in clusters}, {n: mixbench.cpu_seconds(p) for n, p in others.items()},
              floor.client_cpu())
    results = dict(zip(calls, mixbench.together(*calls.values())))
    after = ({c.name: c.cpu() for c in clusters}, {n: mixbench.cpu_seconds(p) for n, p in others.items()},
             floor.client_cpu())
    cpu = {name: floor.Cluster.cpu_spent(before[0][name], after[0][name]) for name in before[0]}
    cpu.update({name: after[1][name] - before[1][name] for name in others})
    cpu["wrk"] = after[2] - before[2]
    for name, result in results.items():
        if result is None:
            continue
        if result["non_2xx"] or any(result["errors"].values()):
            raise SystemExit(f"{name}: {result['non_2xx']} answers not 2xx, errors {result['errors']}")
    return results, cpu


class WaitSampler:
    """What the service's active backends on the primary wait on, sampled
    every 20 ms while a run lasts (pg_stat_activity's wait_event; "CPU"
    when none)."""

    def __init__(self, url):
        self.session = mixbench.PsqlSession(url)
        self.counts = {}
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self):
        while not self.stopped.wait(0.02):
            for event, in self.session.rows(
                    "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') FROM pg_stat_activity "
                    "WHERE application_name = 'sizing' AND state = 'active'"):
                self.counts[event] = self.counts.get(event, 0) + 1

    def stop(self):
        self.stopped.set()
        self.thread.join()
        self.session.close()
        total = sum(self.counts.values()) or 1
        return ", ".join(f"{event} {100 * n / total:.0f}%"
                         for event, n in sorted(self.counts.items(), key=lambda item: -item[1])[:4])


def spread(values):
    values = sorted(values)
    return f"{statistics.median(values):.3f} ({values[0]:.3f}-{values[-1]:.3f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--from", dest="source", default=floor.CLUSTER,
                        help="bench/floor.py's cluster folder (its data made with the mix's 200,000 projects)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=int, default=8)
    parser.add_argument("--connections", type=int, default=32)
    parser.add_argument("--json-out")
    parser.add_argument("--skip-writes", action="store_true")
    args = parser.parse_args()
    work = os.path.join(HERE, "work", SCHEMA)
    if not os.path.exists(work):
        mixbench.run(["cp", "-a", os.path.join(args.source, "work", SCHEMA), work])
    requests_file = os.path.join(work, "requests-PostgreSQL", "mix.tsv")
    with open(os.path.join(work, "meta.json")) as file:
        meta = json.load(file)
    meta_path = os.path.join(work, "meta.json")
    env = dict(os.environ, RUST_LOG="warn")

    primary, replica = setup(args.source)
    bouncer_port, bouncer_pid = start_pgbouncer(primary)
    schema = f"-c search_path={SCHEMA}"
    direct = primary.url(options=schema, application_name="sizing")
    replica_url = replica.url(options=schema, application_name="sizing")
    socket_url = primary.url(socket=True, options=schema, application_name="sizing")
    pooled = f"postgres://{SCHEMA}@127.0.0.1:{bouncer_port}/{DATABASE}"
    direct_role = primary.url(user=SCHEMA)
    with_replica = ["--database-replica", replica_url, "--replica-max-lag", "5s"]
    through_pooler = ["--database-pooler", "transaction", "--database-direct-url", direct_role]
    sides = {
        "primary, caches on": (direct, []),
        "primary, caches off": (direct, ["--caches", "none"]),
        "primary + replica, caches on": (direct, with_replica),
        "primary + replica, caches off": (direct, with_replica + ["--caches", "none"]),
        "primary over its Unix socket, caches on": (socket_url, []),
        "primary through pgbouncer, caches on": (pooled, through_pooler),
        "primary through pgbouncer, caches off": (pooled, through_pooler + ["--caches", "none"]),
    }
    servers, bases = {}, {}
    with open(requests_file) as lines:
        first_token = lines.readline().split("\t")[0]
    for k, (name, (url, flags)) in enumerate(sides.items()):
        port = mixbench.free_port()
        servers[name] = mixbench.Process([mixbench.PROXYDECK, "--database", url, "serve", "--listen",
                                          f"127.0.0.1:{port}", "--rate-limit", "off", *flags],
                                         env, os.path.join(HERE, f"server-{k}.log"))
        bases[name] = f"http://127.0.0.1:{port}"
        servers[name].wait_answering(bases[name] + "/v1/users/me", first_token)
    log(f"{len(sides)} servers answering")
    clusters = [primary, replica]
    others = {"pgbouncer": bouncer_pid}
    writer = mixbench.Writer(primary.url(options=schema, application_name="sizing-writer"), meta_path, env,
                             os.path.join(HERE, "writer.log"), seed=int(time.time()))
    names = list(sides)
    rounds = {name: [] for name in names}
    for name in names:  # one short warm-up each (caches, the replica's and pgbouncer's connections)
        mixbench.wrk(bases[name], requests_file, 2, args.connections)
    idle_side = "idle (no load: the writer, the servers' background)"
    for r in range(args.rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        order.insert(r % (len(order) + 1), idle_side)
        for name in order:
            if name == idle_side:
                _, cpu = measure({name: lambda: time.sleep(args.seconds) or None}, clusters,
                                 dict(others, service=servers[names[0]].process.pid))
                rounds.setdefault(name, []).append({"seconds": args.seconds, "cpu": cpu})
                continue
            server = servers[name]
            results, cpu = measure(
                {name: lambda: mixbench.wrk(bases[name], requests_file, args.seconds, args.connections)},
                clusters, dict(others, service=server.process.pid))
            result = results[name]
            rounds[name].append({"requests": result["requests"], "rps": result["requests_per_s"],
                                 "latency_us": result["latency_us"], "cpu": cpu})
            log(f"round {r + 1} {name}: {result['requests_per_s']:,.0f}/s")
    written = writer.stop()
    log(f"the writer: {written}")
    reads = {}
    for name in names:
        status, body = mixbench.fetch(bases[name] + "/metrics", first_token)
        reads[name] = [line for line in body.decode(errors="replace").splitlines()
                       if line.startswith("proxydeck_db_reads_total")]

    figures = {"rounds": rounds, "reads_total": reads, "writer": written, "write_runs": []}
    print(f"\n## Sizing: the mix, {args.rounds} rounds of {args.seconds} s a side, {args.connections} connections, "
          f"sides alternating\n")
    print("| side | requests/s (median of rounds) | ÷ primary, caches on (median, range) | CPU µs/request: "
          "service | primary (all its processes) | replica | pgbouncer | wrk | p50 / p99 µs (median round) |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    idle = rounds.get(idle_side)
    if idle:
        spent = sum(x["seconds"] for x in idle)
        print(f"| {idle_side} | - | - | - | {sum(x['cpu']['primary'] for x in idle) / spent:.3f} CPU s/s | "
              f"{sum(x['cpu']['replica'] for x in idle) / spent:.3f} CPU s/s | "
              f"{sum(x['cpu']['pgbouncer'] for x in idle) / spent:.3f} CPU s/s | - | - |")
    base_rounds = rounds[names[0]]
    for name in names:
        rs = rounds[name]
        total = sum(x["requests"] for x in rs)
        per = {key: 1e6 * sum(x["cpu"][key] for x in rs) / total
               for key in ("service", "primary", "replica", "pgbouncer", "wrk")}
        ratio = spread([x["rps"] / b["rps"] for x, b in zip(rs, base_rounds)])
        mid = sorted(rs, key=lambda x: x["rps"])[len(rs) // 2]
        print(f"| {name} | {statistics.median(x['rps'] for x in rs):,.0f} | {ratio} | {per['service']:.1f} | "
              f"{per['primary']:.1f} | {per['replica']:.1f} | {per['pgbouncer']:.1f} | {per['wrk']:.1f} | "
              f"{mid['latency_us']['p50']:,.0f} / {mid['latency_us']['p99']:,.0f} |")
    print("\nreads by server (/metrics):")
    for name in names:
        print(f"  {name}: {' '.join(reads[name]) or '-'}")

    if not args.skip_writes:
        users = users_of(bases[names[0]], sorted({line.split('\t')[0] for line in open(requests_file)}))
        pool = sorted(users.items())
        meta_users = {user: organizations for user, organizations in meta["users"]}
        print("\n## Writes: createProject over HTTP at full speed (the store's writer stopped)\n")
        print("| side | run | creates/s | readers' requests/s | CPU µs/create (alone) | CPU seconds a second: "
              "service | primary | replica | wrk | readers' p99 µs | creates' p50 / p99 µs |")
        print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
        seed = int(time.time())
        for r in range(max(1, args.rounds // 2)):
            for name in ("primary, caches on", "primary + replica, caches on"):
                for writers, readers in ((4, False), (16, False), (4, True)):
                    seed += 1
                    path = create_file(pool, meta_users, os.path.join(HERE, f"creates-{seed}.tsv"), 100_000, seed)
                    calls = {"creates": lambda: mixbench.wrk(bases[name], path, args.seconds, writers, threads=1)}
                    if readers:
                        calls["readers"] = lambda: mixbench.wrk(bases[name], requests_file, args.seconds,
                                                                args.connections)
                    sampler = WaitSampler(primary.url())
                    results, cpu = measure(calls, clusters, dict(others, service=servers[name].process.pid))
                    waits = sampler.stop()
                    creates = results["creates"]
                    run_name = f"{writers} writers" + (f", {args.connections} readers" if readers else "")
                    per_create = (1e6 * (cpu["service"] + cpu["primary"] + cpu["replica"]) / creates["requests"]
                                  if not readers else None)
                    figures["write_runs"].append({"round": r, "side": name, "run": run_name, "cpu": cpu,
                                                  "creates": creates,
                                                  "readers": results.get("readers"), "waits": waits})
                    print(f"| {name} | {run_name} | {creates['requests_per_s']:,.0f} | "
                          f"{results['readers']['requests_per_s'] if readers else 0:,.0f} | "
                          f"{per_create or 0:,.0f} | {cpu['service'] / args.seconds:.2f} | "
                          f"{cpu['primary'] / args.seconds:.2f} | {cpu['replica'] / args.seconds:.2f} | "
                          f"{cpu['wrk'] / args.seconds:.2f} | "
                          f"{results['readers']['latency_us']['p99'] if readers else 0:,.0f} | "
                          f"{creates['latency_us']['p50']:,.0f} / {creates['latency_us']['p99']:,.0f} | {waits} |",
                          flush=True)
    if args.json_out:
        with open(args.json_out, "w") as out:
            json.dump(figures, out, indent=1)
    for server in servers.values():
        server.stop()
    subprocess.run(["kill", str(bouncer_pid)])
    replica.stop()
    primary.stop()


if __name__ == "__main__":
    main()
