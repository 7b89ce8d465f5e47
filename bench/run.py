#!/usr/bin/env python3
"""proxydeck's benchmark: generate data, start the release build, drive load
over loopback with keep-alive, print tables.

    bench/run.py                      # 1,000,000 projects on SQLite (several minutes)
    bench/run.py --quick              # small data, seconds: checks responses only (CI)
    bench/run.py --postgres URL       # also the same figures on PostgreSQL
    bench/run.py --mix                # the realistic traffic instead (about 20 minutes a
                                      # store, both cores busy; see below)
    bench/run.py --mix --quick        # its smoke version on small data, a minute or two per store
    bench/run.py --mix --writes-only  # the mix scenario, then the HTTP write runs alone
    bench/run.py --mix --compare A B  # two builds (before/after a change) side by side, rounds alternating
    bench/run.py --feed               # the change feed: 10,000 idle followers and 1,000 active ones
                                      # held open, memory per follower, a write's fan-out latency
    bench/run.py --mix --compare P P --b-flags "--caches token,shared-reads,page-memory"
                                      # one build, a cache switched off on B: an accelerator's A/B

The fixed scenarios (the default): one page asked over and over by one
token (the first page of projects, a page at 90% depth, the token list, a
proxy-settings list). Load comes from `oha` (installed with `cargo install
oha --locked` when missing). Every scenario's responses are checked (status
200, the page's size, JSON) before and during the load; in --quick mode
that is all that is checked.

The realistic traffic (--mix): a mix data set (`generate --mix`: 1,000,000
projects in 1,000 organizations of skewed sizes, 10,000 users, most in 1-3
organizations, 1% in 50-1,000; `bench-user` in one big organization,
`bench-agency` in all), tokens for every user (`bench_store mint`, through
the store's own write path), and request files drawn from what the data
holds, with a seeded random: each line a token of a pool of 1,000 (users
drawn evenly) and a page that token may read. Scenarios: "mix" (half
projects, a quarter tokens, a quarter proxy settings), each part alone,
"agency random pages" against "one-organization random pages" (a caller in
1,000 organizations against one in a single one), and "first page, one
connection" (bench-agency, latency alone). Load comes from `wrk` (Debian's
package, installed with apt-get when missing) running bench/mix.lua, which
sends each request from the next line of the file. While it runs,
`bench_store write` makes about 50 writes a second through the store's
write paths (projects imported again, tokens created and revoked). After
the read scenarios, the HTTP write runs: createProject and updateProject
over the management API (bench/mix.lua sends those lines as POSTs), at
full speed and paced at about 100 a second, while readers run the mix at
half its maximum rate (the store's writer stopped by then); they give
writes per second and the readers' p99 next to the mix's target. Each store runs twice, with the server's caches on and off (`--caches none`,
when the binary has the flag). For each scenario: requests/s at full load
in rounds alternating with the ceiling (`examples/ceiling.rs`, the same
HTTP stack answering a fixed body of the scenario's mean response size,
driven with the very same requests file), latency at half that rate (paced)
against the ceiling's at the same rate, CPU per request of the server (and
of PostgreSQL). Every answer must be 2xx: a scenario with any other status
or a socket error stops the run, naming it. With --quick, wrk counts the
statuses itself and the writer must have written.

Two builds, or two settings of one (--compare A B): the binaries serve one
prepared store side by side (the mix data, tokens and request files as
above), while `bench_store write` makes about 50 writes a second (unless
--no-writer), and each scenario runs in rounds alternating between them
(A B A B ...), so that the machine's drift and the other sessions' load
fall on both alike; each round of B is divided by A's round of the same
turn, and the median and range of those ratios are printed, both ways
(B/A and A/B). Each side runs with the server's defaults unless
--a-flags / --b-flags give it `serve` flags (e.g. `--b-flags "--caches
token,shared-reads,page-memory"`); --b-flags given several times makes a B
side for each, all served at once, each turn A then the B sides (their
order turned by one each time). Scenarios: "mix",
"first page, one connection", "agency random pages" (bench-agency, in all
1,000 organizations, asking random pages) and "dashboard polling" (200
users of the organizations with most members, each its own token, asking
the first page of its organization's projects again and again: a team's
dashboards); --scenario picks some. The earlier behaviour (caches off, no
writer, two scenarios) is `--a-flags=--caches=none --b-flags=--caches=none
--no-writer --scenario mix --scenario "first page, one connection"`.

The change feed (--feed): one server holds IDLE followers of
`GET /v1/changes` whose scope sees no change (10,000) and ACTIVE ones
following the organization written to (1,000), all streams of Server-Sent
Events opened by `examples/feed_followers.rs`; the server's resident
memory is read before and after they open (per follower: the difference
over their number) and its CPU over 10 s of them idle; then WRITES
(50) updates of one project, ten a second, through the API: for each,
how long after it was sent each active follower had it (p50, p99, max
over every follower and write), and whether every follower got every
write. On SQLite, and on PostgreSQL with --postgres. --quick: 200 idle,
50 active, 5 writes.

Timings are printed, never asserted: these machines are shared and noisy,
so read ratios measured in one run. Release binaries are looked for in
$CARGO_TARGET_DIR/release (default: target/release beside this folder);
with PROXYDECK_BENCH_PROFILE=dev, the dev profile's in .../debug (CI's
--quick runs: answers checked, no figure worth reading).
"""

import argparse
import bisect
import concurrent.futures
import contextlib
import itertools
import json
import os
import random
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import defaultdict
from types import SimpleNamespace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The binaries measured: the release profile's. PROXYDECK_BENCH_PROFILE=dev
# takes the dev profile's instead (target/debug, which the tests' build has
# already made): for CI's --quick runs, which check answers and never
# timings, so that CI does not spend a release build with LTO on them.
DEV_PROFILE = os.environ.get("PROXYDECK_BENCH_PROFILE") == "dev"
CARGO_PROFILE = [] if DEV_PROFILE else ["--release"]
# cargo's own rule: $CARGO_TARGET_DIR, relative to where cargo runs (ROOT).
BINARIES = os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR") or "target", "debug" if DEV_PROFILE else "release")
PROXYDECK = os.path.join(BINARIES, "proxydeck")
TOKENS = 25  # the benchmark user's tokens: more than a page of them


def log(message):
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def run(args, **kwargs):
    return subprocess.run(args, check=True, **kwargs)


def build(mix=False):
    """The binaries the run needs (cargo honours CARGO_TARGET_DIR)."""
    log(f"building the binaries ({'dev' if DEV_PROFILE else 'release'} profile)")
    examples = ["--example", "generate", "--example", "ceiling"]
    if mix:
        examples += ["--example", "bench_store"]
    run(["cargo", "build", *CARGO_PROFILE, "--quiet", "--bin", "proxydeck", *examples], cwd=ROOT)


def ensure_oha():
    if shutil.which("oha") is None:
        log("installing oha (cargo install oha --locked)")
        run(["cargo", "install", "oha", "--locked", "--quiet"])


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fetch(url, token):
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()
    except OSError:
        return None, b""


class Process:
    """A server process; its start is timed to the first answered request."""

    def __init__(self, args, env, stderr_path):
        self.stderr = open(stderr_path, "wb")
        self.started = time.monotonic()
        self.process = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=self.stderr)

    def wait_answering(self, url, token):
        """Milliseconds from the spawn to the first 200."""
        deadline = self.started + 30
        while time.monotonic() < deadline:
            status, _ = fetch(url, token)
            if status == 200:
                return (time.monotonic() - self.started) * 1000
            if self.process.poll() is not None:
                raise SystemExit(f"the server exited with {self.process.returncode}")
            time.sleep(0.002)
        raise SystemExit("the server did not answer within 30 s")

    def peak_rss_mib(self):
        return memory_mib(self.process.pid, "VmHWM")

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.stderr.close()


def load(url, token, seconds, connections, rate=None):
    """oha's figures for `seconds` of load; every answer must be a 200."""
    # Uncompressed: what is measured is the service, not gzip (and the
    # ceiling's filler body would compress to nothing).
    args = ["oha", "-z", f"{seconds}s", "-c", str(connections), "--no-tui", "--disable-compression",
            "--output-format", "json", "-H", f"Authorization: Bearer {token}", url]
    if rate:
        args += ["-q", str(int(rate))]
    report = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    statuses = report.get("statusCodeDistribution", {})
    if set(statuses) != {"200"}:
        raise SystemExit(f"{url}: answers other than 200 under load: {statuses}")
    summary, percentiles = report["summary"], report["latencyPercentiles"]
    return {
        "rps": summary["requestsPerSec"],
        "p50": percentiles["p50"] * 1000,
        "p99": percentiles["p99"] * 1000,
        "bytes": summary.get("sizePerRequest") or 0,
    }


def check_page(name, url, token, expect_items, expect_more):
    """The scenario answers what it should: status, JSON, page size."""
    status, body = fetch(url, token)
    if status != 200:
        raise SystemExit(f"{name}: {url} answered {status}: {body[:300]!r}")
    page = json.loads(body)
    items = len(page["data"])
    if items != expect_items:
        raise SystemExit(f"{name}: {items} items, expected {expect_items}")
    if expect_more is not None and page.get("has_more") != expect_more:
        raise SystemExit(f"{name}: has_more is {page.get('has_more')}, expected {expect_more}")
    return len(body)


def prepare(database, data_file, env):
    """Imports the data set and makes the benchmark user's tokens; answers
    (import seconds, a token secret)."""
    started = time.monotonic()
    run([PROXYDECK, "--database", database, "admin", "import", data_file, "--quiet", "--json"],
        env=env, stdout=subprocess.DEVNULL)
    seconds = time.monotonic() - started
    secret = None
    for i in range(TOKENS):
        made = run([PROXYDECK, "--database", database, "admin", "token", "create",
                    "--user", "bench-user", "--name", f"bench-{i:02}", "--json"],
                   env=env, capture_output=True, text=True)
        secret = json.loads(made.stdout)["token"]
    return seconds, secret


def bench_backend(label, database, data_file, shape, args, env, work):
    log(f"{label}: importing {shape['projects']:,} projects")
    import_seconds, token = prepare(database, data_file, env)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # One token drives 20k-40k requests/s, far over the default per-token
    # limit (1000/s): a limit no run reaches keeps the limiter in the path,
    # so its cost is measured, without ever refusing a request.
    server = Process([PROXYDECK, "--database", database, "serve", "--listen", f"127.0.0.1:{port}",
                      "--rate-limit", "1000000"],
                     env, os.path.join(work, f"serve-{label}.log"))
    try:
        startup_ms = server.wait_answering(f"{base}/v1/projects?limit=1", token)
        deep = f"prj-{shape['focus'] // 10:08}"  # about 90% down the newest-first list
        scenarios = [
            ("first page of projects", f"{base}/v1/projects?limit=20", 20, True),
            ("page at 90% depth", f"{base}/v1/projects?limit=20&start_key={deep}", 20, True),
            ("api_tokens list", f"{base}/v1/api_tokens?limit=20", 20, None),
            ("proxy-settings list", f"{base}/v1/projects/prj-00000000/proxy-settings?limit=20", 20, True),
        ]
        sizes = {name: check_page(name, url, token, n, more) for name, url, n, more in scenarios}
        results = []
        load(scenarios[0][1], token, args.warmup, args.connections)
        with Ceiling(sizes["first page of projects"], args, env, work) as ceiling:
            for name, url, _, _ in scenarios:
                log(f"{label}: {name}, {args.rounds} rounds alternating with the ceiling")
                figures = alternate(ceiling, lambda: load(url, token, args.seconds, args.connections),
                                    args.rounds)
                figures["bytes"] = figures["bytes"] or sizes[name]
                results.append((name, figures))
            # Latency at a fixed rate, the ceiling's at the same rate just
            # before: on a VM whose CPU the hypervisor steals, the ceiling's
            # p99 shows what the machine alone adds.
            half_rate = results[0][1]["rps"] / 2
            log(f"{label}: first page at half the maximum rate ({half_rate:.0f}/s), after the ceiling")
            half_ceiling = ceiling.measure(seconds=2 * args.seconds, rate=half_rate)
            half = load(scenarios[0][1], token, 2 * args.seconds, args.connections, rate=half_rate)
        for name, url, n, more in scenarios:
            check_page(name, url, token, n, more)
        rss = server.peak_rss_mib()
    finally:
        server.stop()
    return {
        "label": label, "import_seconds": import_seconds, "startup_ms": startup_ms,
        "results": results, "half": half, "half_ceiling": half_ceiling, "rss": rss,
    }


def alternate(ceiling, measure, rounds):
    """A scenario measured in `rounds` short rounds, each right after a
    round of the ceiling: the machine's speed drifts over a run (on a shared
    VM by a quarter within minutes), so a share compares two figures taken
    back to back, and the median of the rounds' shares is kept. The other
    figures are those of the scenario's median round."""
    pairs = []
    for _ in range(rounds):
        ceiling_figures = ceiling.measure()
        pairs.append((measure(), ceiling_figures))
    pairs.sort(key=lambda pair: pair[0]["rps"] / pair[1]["rps"])
    figures, ceiling_figures = pairs[len(pairs) // 2]
    figures["ceiling"] = ceiling_figures
    figures["shares"] = [pair[0]["rps"] / pair[1]["rps"] for pair in pairs]
    return figures


class Ceiling:
    """The ceiling server (`examples/ceiling.rs`: the same HTTP stack
    answering a fixed body of `size` bytes), kept running beside the
    service so that it can be measured in turn with each scenario."""

    def __init__(self, size, args, env, work):
        self.args = args
        port = free_port()
        self.url = f"http://127.0.0.1:{port}/v1/projects?limit=20"
        self.server = Process([os.path.join(BINARIES, "examples", "ceiling"), f"127.0.0.1:{port}", str(size)],
                              env, os.path.join(work, f"ceiling-{port}.log"))

    def __enter__(self):
        self.server.wait_answering(self.url, "none")
        load(self.url, "none", self.args.warmup, self.args.connections)
        return self

    def measure(self, seconds=None, rate=None):
        return load(self.url, "none", seconds or self.args.seconds, self.args.connections, rate)

    def __exit__(self, *_):
        self.server.stop()


def share(figures):
    """A scenario's median share of the ceiling."""
    return sorted(figures["shares"])[len(figures["shares"]) // 2]


def report(runs, shape, args):
    print()
    print(f"Data: {shape['projects']:,} projects over {shape['organizations']:,} organizations; "
          f"the benchmark user's organization holds {shape['focus']:,}; "
          f"{shape['revised']} projects with {shape['revisions']} revisions; "
          f"load: oha, {args.connections} connections, keep-alive, uncompressed; each scenario in "
          f"{args.rounds} rounds of {args.seconds} s, each right after {args.seconds} s of the ceiling; "
          f"the round of the median share shown, with the range of the shares.")
    print()
    print("| backend | scenario | requests/s | p50 ms | p99 ms | response bytes | ceiling requests/s | of ceiling | range |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for run_ in runs:
        for name, f in run_["results"]:
            print(f"| {run_['label']} | {name} | {f['rps']:,.0f} | {f['p50']:.2f} | {f['p99']:.2f} | "
                  f"{f['bytes']:,.0f} | {f['ceiling']['rps']:,.0f} | {100 * share(f):.0f}% | "
                  f"{100 * min(f['shares']):.0f}-{100 * max(f['shares']):.0f}% |")
    print()
    for run_ in runs:
        first, deep = run_["results"][0][1], run_["results"][1][1]
        half = run_["half"]
        print(f"{run_['label']}: import {shape['projects'] / run_['import_seconds']:,.0f} projects/s "
              f"({run_['import_seconds']:.1f} s); first answer {run_['startup_ms']:.0f} ms after start; "
              f"peak RSS {run_['rss']:.0f} MiB; 90%-depth page at {100 * share(deep) / share(first):.0f}% "
              f"of the first page (shares of the ceiling compared); p99 at half the maximum rate ({half['rps']:,.0f}/s): {half['p99']:.2f} ms "
              f"(the ceiling at the same rate: {run_['half_ceiling']['p99']:.2f} ms)")


# ---------------------------------------------------------------------------
# The realistic traffic (--mix)
# ---------------------------------------------------------------------------

MIX_LUA = os.path.join(ROOT, "bench", "mix.lua")
BENCH_STORE = os.path.join(BINARIES, "examples", "bench_store")
# The names `bench_store mint` gives a user's tokens, in turn.
MINT_NAMES = ("ci", "deploy", "laptop", "terraform", "monitoring")
WRITES_PER_SECOND = 50
# "dashboard polling" (--compare): this many users, each its own token.
DASHBOARD_USERS = 200
# The HTTP write runs (write_runs): connections of the writers, and the
# rate of the paced run (a busy platform team's provisioning, and more).
WRITE_CONNECTIONS = 4
HTTP_WRITES_PER_SECOND = 100
SERVE_APPLICATION = "proxydeck-bench-serve"  # the server's PostgreSQL application_name
WRITER_APPLICATION = "proxydeck-bench-writer"
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")

# The scenarios, in the order they run: name; whether latency is also
# measured at half the maximum rate; connections (None: --connections).
# (Before a page cost the same whatever the caller's organizations, the
# two compared callers had to run at 4 connections: 32 of bench-agency's
# pages at once queued into 503s on PostgreSQL.)
MIX_SCENARIOS = [
    ("mix", True, None),
    ("projects", True, None),
    ("api_tokens", True, None),
    ("proxy settings", True, None),
    ("agency random pages", False, None),
    ("one-organization random pages", False, None),
    ("first page, one connection", False, 1),
]


def ensure_wrk():
    """wrk from Debian's packages, when it is missing."""
    if shutil.which("wrk") is None:
        log("wrk is missing: installing it with apt-get (.ci/apt-install)")
        run([os.path.join(ROOT, ".ci", "apt-install"), "wrk"])


def org_id(n):
    """The id `generate` gives organization n (examples/bench_data::org_id)."""
    return f"{n + 1:08x}-0000-7000-8000-{n:012x}"


def project_id(i):
    """The id `generate` gives project i (numbers follow creation order)."""
    return f"prj-{i:08}"


class MixData:
    """What the request files are drawn from: `generate --mix --meta`'s
    meta.json and the tokens `bench_store mint` made (user -> [(token id,
    secret)], in mint order)."""

    def __init__(self, meta, tokens):
        self.organizations = meta["organizations"]
        self.projects = sum(len(projects) for projects in self.organizations)
        self.user_ids = [user for user, _ in meta["users"]]
        self.organizations_of = {user: organizations for user, organizations in meta["users"]}
        owner = [0] * self.projects
        for n, projects in enumerate(self.organizations):
            for i in projects:
                owner[i] = n
        self.revised_of = defaultdict(list)  # organization -> [(project, revision count)]
        for i, count in meta["revised"]:
            self.revised_of[owner[i]].append((i, count))
        self.tokens = tokens
        self._cumulative = {}

    def visible_project(self, user, rng):
        """A project of one of `user`'s organizations, each as likely."""
        organizations = self.organizations_of[user]
        if len(organizations) == len(self.organizations):
            return rng.randrange(self.projects)
        cumulative = self._cumulative.get(user)
        if cumulative is None:
            sizes = (len(self.organizations[n]) for n in organizations)
            cumulative = self._cumulative[user] = list(itertools.accumulate(sizes))
        k = rng.randrange(cumulative[-1])
        slot = bisect.bisect_right(cumulative, k)
        return self.organizations[organizations[slot]][k - (cumulative[slot - 1] if slot else 0)]


def query(path, params):
    """`path` with its query string (none when `params` is empty)."""
    return f"{path}?{urllib.parse.urlencode(params)}" if params else path


def projects_path(data, user, rng):
    """A page of /v1/projects that `user` may read: 40% first pages, the
    rest after a random start key it can see; a third oldest first
    (`order_direction=ASC`); a fifth of one of its organizations
    (`organization_id`, start keys then from it); `limit=20` 80% of the
    time, the default (20) 15%, `limit=100` 5%."""
    params = []
    organization = None
    if rng.random() < 0.2:
        organization = rng.choice([n for n in data.organizations_of[user] if data.organizations[n]])
        params.append(("organization_id", org_id(organization)))
    limit = rng.random()
    if limit < 0.8:
        params.append(("limit", 20))
    elif limit >= 0.95:
        params.append(("limit", 100))
    if rng.random() >= 0.4:
        start = (rng.choice(data.organizations[organization]) if organization is not None
                 else data.visible_project(user, rng))
        params.append(("start_key", project_id(start)))
    if rng.random() < 1 / 3:
        params.append(("order_direction", "ASC"))
    return query("/v1/projects", params)


def api_tokens_path(data, user, rng):
    """A page of `user`'s own /v1/api_tokens: 45% first pages, 25% first
    pages of one name (`name=`, one its tokens have), 30% after one of its
    own tokens (`start_key`, from the mint output); a third oldest first;
    `limit=20` 80% of the time, the default (20) otherwise."""
    tokens = data.tokens[user]
    params = []
    kind = rng.random()
    if kind < 0.25:
        params.append(("name", MINT_NAMES[rng.randrange(min(len(tokens), len(MINT_NAMES)))]))
    if rng.random() < 0.8:
        params.append(("limit", 20))
    if 0.25 <= kind < 0.55:
        params.append(("start_key", rng.choice(tokens)[0]))
    if rng.random() < 1 / 3:
        params.append(("order_direction", "ASC"))
    return query("/v1/api_tokens", params)


def proxy_settings_path(data, user, rng):
    """The proxy settings of a revised project that `user` may read (one of
    its organizations drawn, then one of that organization's revised
    projects): `limit=20` or the default (100) half the time each; 30% of
    those with two revisions or more after a revision below the last
    (`start_key`)."""
    organizations = [n for n in data.organizations_of[user] if data.revised_of[n]]
    project, count = rng.choice(data.revised_of[rng.choice(organizations)])
    params = []
    if rng.random() < 0.5:
        params.append(("limit", 20))
    if count > 1 and rng.random() < 0.3:
        params.append(("start_key", rng.randint(1, count - 1)))
    return query(f"/v1/projects/{project_id(project)}/proxy-settings", params)


def token_pool(data, rng, size):
    """`size` distinct tokens (user, secret), each of a user drawn evenly
    from all users, so that about 1% belong to users in many
    organizations."""
    total = sum(len(tokens) for tokens in data.tokens.values())
    size = min(size, total // 2)
    pool, seen = [], set()
    while len(pool) < size:
        user = rng.choice(data.user_ids)
        token_id, secret = rng.choice(data.tokens[user])
        if token_id not in seen:
            seen.add(token_id)
            pool.append((user, secret))
    return pool


def dashboard_callers(data, users):
    """The callers of "dashboard polling": a team's dashboards, each user
    with a token of its own asking the first page of one organization's
    projects. Organizations are taken by their number of members, most
    first (five at full size: the data's biggest teams have 66-68), and
    their members not yet taken (not bench-user nor bench-agency) until
    `users` are; answers [(secret, organization)], each user's first
    minted token."""
    members = defaultdict(list)
    for user in data.user_ids:
        if not user.startswith("bench-"):
            for n in data.organizations_of[user]:
                members[n].append(user)
    callers, taken = [], set()
    for n in sorted(members, key=lambda n: (-len(members[n]), n)):
        for user in members[n]:
            if user not in taken and len(callers) < users:
                taken.add(user)
                callers.append((data.tokens[user][0][1], n))
        if len(callers) >= users:
            break
    return callers


def make_request_files(data, folder, lines, pool_size, seed):
    """Writes one requests file per scenario (`TOKEN<TAB>PATH` lines, what
    bench/mix.lua reads) into `folder`; answers {scenario: path}. The same
    seed, data and tokens give the same files."""
    rng = random.Random(seed)
    pool = token_pool(data, rng, pool_size)
    kinds = {"projects": projects_path, "api_tokens": api_tokens_path,
             "proxy settings": proxy_settings_path}

    def mixed(rng):
        draw = rng.random()
        return kinds["projects" if draw < 0.5 else "api_tokens" if draw < 0.75 else "proxy settings"]

    def from_pool(choose_kind):
        for _ in range(lines):
            user, secret = rng.choice(pool)
            yield secret, choose_kind(rng)(data, user, rng)

    def secrets_of(user):
        return [secret for _, secret in data.tokens[user]]

    agency, one = secrets_of("bench-agency"), secrets_of("bench-user")
    organization_0 = data.organizations[0]
    dashboards = dashboard_callers(data, DASHBOARD_USERS)
    contents = {
        "mix": from_pool(mixed),
        **{name: from_pool(lambda _, kind=kind: kind) for name, kind in kinds.items()},
        "agency random pages": (
            (rng.choice(agency), f"/v1/projects?start_key={project_id(rng.randrange(data.projects))}")
            for _ in range(lines)),
        "one-organization random pages": (
            (rng.choice(one), f"/v1/projects?start_key={project_id(rng.choice(organization_0))}")
            for _ in range(lines)),
        "first page, one connection": ((rng.choice(agency), "/v1/projects") for _ in range(min(lines, 1000))),
        "dashboard polling": (
            (secret, f"/v1/projects?organization_id={org_id(organization)}")
            for secret, organization in (rng.choice(dashboards) for _ in range(lines))),
    }
    os.makedirs(folder, exist_ok=True)
    files = {}
    for name, requests in contents.items():
        files[name] = os.path.join(folder, name.replace(" ", "-").replace(",", "") + ".tsv")
        with open(files[name], "w") as out:
            out.writelines(f"{secret}\t{path}\n" for secret, path in requests)
    return files


def make_write_files(data, folder, lines, pool_size, seed):
    """Writes the request files of the HTTP write runs (lines `TOKEN<TAB>
    PATH<TAB>METHOD<TAB>BODY`, see bench/mix.lua) into `folder`; answers
    {run: path}. Tokens from a pool drawn as the readers' are. "creates":
    createProject in one of the caller's organizations (every mix user is
    an admin in each of its own), each slug new (`seed` is in the slugs,
    so that each server run of a store has slugs of its own); "updates":
    updateProject, a new description on a project the caller may change;
    "writes": both, alternating. A file is never asked past its end in a
    run (one wrk thread walks it from the top), so no create repeats."""
    rng = random.Random(seed)
    pool = token_pool(data, rng, pool_size)

    def create(k):
        user, secret = rng.choice(pool)
        organization = rng.choice(data.organizations_of[user])
        body = {"organization_id": org_id(organization), "slug": f"bench-{seed}-{k}",
                "description": f"made by the write benchmark ({k})"}
        return secret, "/v1/projects", "POST", body

    def update(k):
        user, secret = rng.choice(pool)
        body = {"description": f"changed by the write benchmark ({k})"}
        return secret, f"/v1/projects/{project_id(data.visible_project(user, rng))}", "POST", body

    contents = {
        "creates": (create(k) for k in range(lines)),
        "updates": (update(k) for k in range(lines)),
        "writes": ((create if k % 2 else update)(lines + k) for k in range(lines)),
    }
    os.makedirs(folder, exist_ok=True)
    files = {}
    for name, requests in contents.items():
        files[name] = os.path.join(folder, f"{name}-{seed}.tsv")
        with open(files[name], "w") as out:
            out.writelines(f"{secret}\t{path}\t{method}\t{json.dumps(body)}\n"
                           for secret, path, method, body in requests)
    return files


def cpu_seconds(pid):
    """A process's CPU time so far, user and system (/proc/PID/stat's utime
    and stime)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def postgres_processes():
    """CPU seconds of every process of this machine named `postgres` (a
    local cluster's postmaster, background processes and backends), by pid."""
    spent = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as comm:
                if comm.read().strip() != "postgres":
                    continue
            spent[int(entry)] = cpu_seconds(entry)
        except (OSError, IndexError, ValueError):
            continue  # gone meanwhile
    return spent


def psql(url, sql):
    """One statement's rows, as psql's unaligned output."""
    return run(["psql", url, "-qAtc", sql], capture_output=True, text=True).stdout


def parent_of(pid):
    """A process's parent pid (/proc/PID/stat's ppid)."""
    with open(f"/proc/{pid}/stat") as stat:
        return int(stat.read().rsplit(")", 1)[1].split()[1])


def children_cpu(pid):
    """CPU time of a process's children that ended and were waited for
    (/proc/PID/stat's cutime and cstime)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / CLOCK_TICKS


class PsqlSession:
    """One psql process kept open for many small queries (a query costs no
    process start, so it can be asked often while a measurement runs)."""

    END = "-- end of answer --"

    def __init__(self, url):
        self.process = subprocess.Popen(["psql", url, "-qAtX", "-v", "ON_ERROR_STOP=1"], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True, bufsize=1)
        self.lock = threading.Lock()

    def rows(self, sql):
        """The rows of one statement, each a list of its columns' texts."""
        with self.lock:
            self.process.stdin.write(f"{sql};\nSELECT '{self.END}';\n")
            self.process.stdin.flush()
            rows = []
            for line in self.process.stdout:
                line = line.rstrip("\n")
                if line == self.END:
                    return rows
                rows.append(line.split("|"))
            raise SystemExit(f"psql ended (exit {self.process.wait()}) while asked: {sql}")

    def close(self):
        self.process.stdin.close()
        self.process.wait(timeout=10)


class CpuMeter:
    """CPU time a measurement cost: the process `pid`'s and, given
    `postgres` (an admin URL of the cluster the server uses), PostgreSQL's:
    `pg_serving`, the backends of the server's connections (found by their
    application_name), and `pg_all`, every process of that cluster (the
    writer's statements, background work, and whatever else runs on it
    included).

    The server closes a connection whose transaction a request left
    unfinished (wrk ends with requests in flight), and opens another when it
    next needs one, so backends come and go within a measurement: a thread
    looks for the server's backends every 200 ms and notes each one's CPU
    every 50 ms, and a gone one counts what it was last seen at. For
    `pg_all`, ended processes are counted exactly, through the postmaster's
    CPU of children waited for."""

    def __init__(self, pid, postgres=None):
        self.pid = pid
        self.session = PsqlSession(postgres) if postgres else None
        self.others_seen = 0  # other clients found active on the cluster
        self.serving = {}  # serving backend pid -> CPU seconds last seen
        self.postmaster = None
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        if postgres:
            self._find_serving()
            threading.Thread(target=self._watch, daemon=True).start()

    def _watch(self):
        tick = 0
        while not self.stopped.wait(0.05):
            tick += 1
            if tick % 4 == 0:
                self._find_serving()
            self._note_serving()

    def _find_serving(self):
        rows = self.session.rows("SELECT pid, application_name, state FROM pg_stat_activity "
                                 "WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()")
        for backend, application, state in rows:
            if application == SERVE_APPLICATION:
                with self.lock:
                    self.serving.setdefault(int(backend), 0.0)
                if self.postmaster is None:
                    self.postmaster = parent_of_or_none(int(backend))
            elif state == "active" and not application.startswith("proxydeck-bench"):
                self.others_seen += 1

    def _note_serving(self):
        with self.lock:
            for backend in list(self.serving):
                try:
                    self.serving[backend] = cpu_seconds(backend)
                except (OSError, IndexError, ValueError):
                    pass  # gone: keeps what it was last seen at

    def close(self):
        self.stopped.set()
        if self.session:
            self.session.close()

    def snapshot(self):
        """The counters now."""
        taken = {"process": cpu_seconds(self.pid)}
        if self.session:
            self._find_serving()
            self._note_serving()
            with self.lock:
                taken["serving"] = dict(self.serving)
            if self.postmaster:
                taken["cluster"] = {backend: spent for backend, spent in postgres_processes().items()
                                    if backend == self.postmaster
                                    or parent_of_or_none(backend) == self.postmaster}
                taken["reaped"] = children_cpu(self.postmaster)
        return taken

    @staticmethod
    def spent(before, after):
        """CPU seconds between two snapshots: `process`, and on PostgreSQL
        `pg_serving` and `pg_all` (a process born meanwhile counts whole)."""
        spent = {"process": after["process"] - before["process"]}
        if "serving" in after:
            old, new = before["serving"], after["serving"]
            spent["pg_serving"] = sum(new[backend] - old.get(backend, 0) for backend in new)
        if "cluster" in after and "cluster" in before:
            old, new = before["cluster"], after["cluster"]
            ended = sum(old[backend] for backend in old if backend not in new)
            spent["pg_all"] = (sum(new[backend] - old.get(backend, 0) for backend in new)
                               + after["reaped"] - before["reaped"] - ended)
        return spent


def parent_of_or_none(pid):
    """`parent_of`, or None for a process gone meanwhile."""
    try:
        return parent_of(pid)
    except (OSError, IndexError, ValueError):
        return None


def wrk(url, requests_file, seconds, connections, delay_ms=None, count_status=False, threads=2):
    """One wrk run of bench/mix.lua on `requests_file`; answers its JSON
    line (see mix.lua). Two threads by default (one for one connection)."""
    args = ["wrk", f"-t{min(threads, connections)}", f"-c{connections}", f"-d{seconds}s", "--timeout", "10s",
            "-s", MIX_LUA, url, "--", requests_file]
    if delay_ms is not None:
        args.append(f"{delay_ms:.4f}")
    env = dict(os.environ, MIX_COUNT_STATUS="1" if count_status else "0")
    done = subprocess.run(args, capture_output=True, text=True, env=env)
    results = [line for line in done.stdout.splitlines() if line.startswith('{"requests"')]
    if done.returncode != 0 or not results:
        raise SystemExit(f"wrk failed (exit {done.returncode}): {done.stderr.strip()} {done.stdout.strip()}")
    return json.loads(results[-1])


def measure_mix(scenario, target, url, requests_file, seconds, connections, args, meter, delay_ms=None,
                threads=2):
    """`seconds` of wrk on `target` (the service or the ceiling) with the
    scenario's requests file: throughput, latency (µs), CPU. Stops the run
    when any answer was not 2xx or any socket error happened."""
    before = meter.snapshot()
    result = wrk(url, requests_file, seconds, connections, delay_ms, count_status=args.quick, threads=threads)
    spent = meter.spent(before, meter.snapshot())
    errors = result["errors"]
    if result["non_2xx"] or any(errors.values()):
        raise SystemExit(f"scenario {scenario!r} on {target}: {result['non_2xx']} answers not 2xx, "
                         f"errors {errors} in {result['requests']} requests")
    requests = max(result["requests"], 1)
    return {
        "rps": result["requests_per_s"], "requests": result["requests"],
        "seconds": result["duration_us"] / 1e6, "bytes_per_request": result["bytes"] / requests,
        "latency_us": result["latency_us"], "cpu_seconds": spent, "delay_ms": delay_ms,
    }


def spot_check(scenario, base, requests_file, samples):
    """Asks `samples` lines of the file, spread over it, with urllib: each
    must answer 200 with a JSON object holding `data`. Answers the bodies'
    mean size in bytes."""
    with open(requests_file) as lines:
        requests = [line.rstrip("\n").split("\t", 1) for line in lines]
    step = max(1, len(requests) // samples)
    sizes = []
    for token, path in requests[::step][:samples]:
        status, body = fetch(base + path, token)
        if status != 200:
            raise SystemExit(f"scenario {scenario!r}: {path} answered {status}: {body[:300]!r}")
        page = json.loads(body)
        if not isinstance(page.get("data"), list):
            raise SystemExit(f"scenario {scenario!r}: {path} answered no data list: {body[:300]!r}")
        sizes.append(len(body))
    return sum(sizes) / len(sizes)


class MixCeiling:
    """The ceiling (examples/ceiling.rs) answering the scenario's mean body
    size, driven with the scenario's own requests file and connections (its
    paths and tokens are ignored, but wrk does the same work), so that a
    share compares like with like."""

    def __init__(self, scenario, size, requests_file, connections, args, env, work):
        self.scenario, self.requests_file, self.connections, self.args = scenario, requests_file, connections, args
        port = free_port()
        self.base = f"http://127.0.0.1:{port}/"
        self.log = os.path.join(work, f"ceiling-{port}.log")
        self.server = Process([os.path.join(BINARIES, "examples", "ceiling"), f"127.0.0.1:{port}", str(round(size))],
                              env, self.log)

    def __enter__(self):
        self.server.wait_answering(self.base, "none")
        self.meter = CpuMeter(self.server.process.pid)
        return self

    def measure(self, seconds=None, delay_ms=None):
        """One measurement of the ceiling (as `alternate()` wants it)."""
        return measure_mix(self.scenario, "the ceiling", self.base, self.requests_file,
                           seconds or self.args.seconds, self.connections, self.args, self.meter, delay_ms)

    def __exit__(self, failure, *_):
        self.server.stop()
        if failure is None:
            os.remove(self.log)  # as long as the service's, and of no interest once it went well


def paced(measure, rate, connections, calibrate_seconds, seconds):
    """Latency at about `rate` requests/s: `measure(seconds, delay_ms)` with
    each of `connections` waiting a delay between an answer and its next
    request. The delay is first 1000 * connections / rate ms; with
    `calibrate_seconds`, a first run finds what a cycle costs beyond the
    delay (the request's own time, the timer's slack) and the delay is
    shortened by as much. The achieved rate is in the figures (`rps`)."""
    delay = 1000 * connections / rate
    if calibrate_seconds:
        probe = measure(calibrate_seconds, delay)
        overhead = 1000 * connections / probe["rps"] - delay
        delay = max(0.0, delay - overhead)
    figures = measure(seconds, delay)
    figures["target_rps"] = rate
    return figures


def per_request_us(measurements, key):
    """CPU µs per request over `measurements` (None when not measured)."""
    requests = sum(m["requests"] for m in measurements)
    if not requests or key not in measurements[0]["cpu_seconds"]:
        return None
    return 1e6 * sum(m["cpu_seconds"][key] for m in measurements) / requests


def mix_scenario(name, paced_too, connections, base, requests_file, meter, args, env, work):
    """One scenario against a running server: spot check, then rounds
    alternating with the ceiling, then (when `paced_too`) latency at half
    the measured rate, the ceiling's at the same rate after it."""
    connections = connections or args.connections
    size = spot_check(name, base, requests_file, args.samples)
    log(f"  {name}: mean body {size:,.0f} bytes; {args.rounds} rounds of {args.seconds} s "
        f"alternating with the ceiling, {connections} connections")
    service_rounds, ceiling_rounds = [], []

    def service(seconds=None, delay_ms=None):
        return measure_mix(name, "proxydeck", base, requests_file, seconds or args.seconds, connections,
                           args, meter, delay_ms)

    with MixCeiling(name, size, requests_file, connections, args, env, work) as ceiling:
        if args.warmup:
            service(args.warmup)
            ceiling.measure(args.warmup)

        def ceiling_round():
            figures = ceiling.measure()
            ceiling_rounds.append(figures)
            return figures

        def service_round():
            figures = service()
            service_rounds.append(figures)
            return figures

        figures = alternate(SimpleNamespace(measure=ceiling_round), service_round, args.rounds)
        result = {
            "scenario": name, "connections": connections, "body_bytes": size, "full": figures,
            "cpu_us": {key: per_request_us(service_rounds, key) for key in ("process", "pg_serving", "pg_all")},
            "ceiling_cpu_us": per_request_us(ceiling_rounds, "process"),
        }
        if paced_too:
            rate = figures["rps"] / 2
            log(f"  {name}: latency at {rate:,.0f} requests/s (half the maximum), then the ceiling's")
            result["half"] = paced(service, rate, connections, args.calibrate, args.paced_seconds)
            result["half_ceiling"] = paced(ceiling.measure, rate, connections, args.calibrate, args.paced_seconds)
    return result


def together(*calls):
    """Runs `calls` at once (each in a thread); answers their results in
    order, raising the first failure."""
    with concurrent.futures.ThreadPoolExecutor(len(calls)) as pool:
        return [future.result() for future in [pool.submit(call) for call in calls]]


def write_runs(mix, base, files, meter, args):
    """Creates and updates over the HTTP management API while readers run
    the mix at half its maximum rate (the very delay of the mix scenario's
    paced run, so that they ask the same rate). Four runs of
    `args.paced_seconds`: the readers alone; with creates at full speed;
    with updates at full speed (each WRITE_CONNECTIONS connections, no
    pause); with creates and updates alternating at about
    HTTP_WRITES_PER_SECOND. Every answer, readers' and writers', must be
    2xx. Answers the figures of each run. (mix_mode stops the store's
    writer before: these are the API's writes alone.)"""
    delay = mix["half"]["delay_ms"]
    connections = mix["connections"]
    log(f"  writes over HTTP: readers of the mix at {mix['half']['target_rps']:,.0f} requests/s asked, "
        f"{args.paced_seconds} s a run")

    def readers():
        return measure_mix("mix (readers)", "proxydeck", base, files["mix"], args.paced_seconds, connections,
                           args, meter, delay)

    def writers(name, delay_ms=None):
        return lambda: measure_mix(f"{name} over HTTP", "proxydeck", base, files[name], args.paced_seconds,
                                   WRITE_CONNECTIONS, args, meter, delay_ms, threads=1)

    runs = [{"run": "readers alone", "readers": readers()}]
    for name, label in (("creates", "createProject at full speed"), ("updates", "updateProject at full speed")):
        reading, writing = together(readers, writers(name))
        runs.append({"run": label, "readers": reading, "writes": writing})
    paced_delay = 1000 * WRITE_CONNECTIONS / HTTP_WRITES_PER_SECOND
    reading, writing = together(readers, writers("writes", paced_delay))
    runs.append({"run": f"creates and updates at about {HTTP_WRITES_PER_SECOND}/s", "readers": reading,
                 "writes": writing})
    return {"ceiling_p99_us": mix["half_ceiling"]["latency_us"]["p99"], "runs": runs}


class Writer:
    """`bench_store write` beside the server: about WRITES_PER_SECOND writes
    a second through the store's own write paths, until `stop()`."""

    def __init__(self, database, meta_path, env, stderr_path, seed):
        self.stderr = open(stderr_path, "wb")
        self.process = subprocess.Popen(
            [BENCH_STORE, "write", "--database", database, "--meta", meta_path,
             "--rate", str(WRITES_PER_SECOND), "--seed", str(seed)],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True)

    def stop(self):
        """Ends the writer (its stdin closed) and answers its counts."""
        out, _ = self.process.communicate(timeout=60)
        self.stderr.close()
        if self.process.returncode != 0 or not out.strip():
            raise SystemExit(f"the writer failed (exit {self.process.returncode}); see {self.stderr.name}")
        return json.loads(out.strip().splitlines()[-1])


def caches_flag_supported():
    """Whether this proxydeck's `serve` takes `--caches` (being added on main)."""
    shown = subprocess.run([PROXYDECK, "serve", "--help"], capture_output=True, text=True)
    return re.search(r"--caches(?![\w-])", shown.stdout + shown.stderr) is not None


def mix_modes():
    """The server runs of each store: (label, serve flags)."""
    if caches_flag_supported():
        return [("on", ["--caches", "all"]), ("off", ["--caches", "none"])]
    log("this proxydeck has no --caches flag: the caches-off rows run with the caches on, labelled so")
    return [("on", []), ("off: not supported by this binary", [])]


def warm_file_cache(database):
    """Reads a SQLite store's files once, so that each run starts from the
    state of a server whose data is in the OS cache (the normal state with
    memory to spare). This machine's kernel pages out file pages left idle
    for a minute (DAMON), which would otherwise make a run's first scenarios
    read from disk and the later ones not."""
    if not database.startswith("sqlite://"):
        return
    path = database[len("sqlite://"):]
    for name in (path, path + "-wal"):
        if os.path.exists(name):
            with open(name, "rb") as file:
                while file.read(1 << 20):
                    pass


def mix_mode(store, caches, flags, urls, files, data, meta_path, args, env, work, seed):
    """One server (caches on or off) and one writer on an imported store:
    every scenario, then the HTTP write runs. Answers the figures, the
    writer's counts, peak RSS."""
    warm_file_cache(urls["serve"])
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    log(f"{store}, caches {caches}: serving on {base}")
    server = Process([PROXYDECK, "--database", urls["serve"], "serve", "--listen", f"127.0.0.1:{port}",
                      "--rate-limit", "off", *flags],
                     env, os.path.join(work, f"serve-{store}-{caches.split(':')[0]}.log"))
    try:
        with open(files["mix"]) as first:
            token = first.readline().split("\t", 1)[0]
        server.wait_answering(f"{base}/v1/projects?limit=1", token)
        meter = CpuMeter(server.process.pid, urls.get("admin"))
        writer = Writer(urls["writer"], meta_path, env,
                        os.path.join(work, f"writer-{store}-{caches.split(':')[0]}.log"), seed)
        try:
            scenarios = [mix_scenario(name, paced_too, connections, base, files[name], meter, args, env, work)
                         for name, paced_too, connections in MIX_SCENARIOS
                         if not args.writes_only or name == "mix"]
        finally:
            writes = writer.stop()
        if writes["writes"] == 0 or (args.quick and writes["errors"]):
            raise SystemExit(f"{store}, caches {caches}: the writer made {writes['writes']} writes "
                             f"and {writes['errors']} errors")
        # The store's writer is stopped first: on SQLite its transactions
        # (projects imported again) hold the file's write lock much of the
        # time, and these runs measure the API's writes, not that wait.
        try:
            write_files = make_write_files(data, os.path.join(work, f"requests-{store}"),
                                           max(args.lines // 2, 10_000), args.pool, seed)
            http_writes = write_runs(scenarios[0], base, {**files, **write_files}, meter, args)
        finally:
            meter.close()
        rss = server.peak_rss_mib()
    finally:
        server.stop()
    return {"caches": caches, "scenarios": scenarios, "http_writes": http_writes, "writer": writes, "rss_mib": rss,
            "other_postgres_clients_seen": meter.others_seen if urls.get("admin") else None}


def mix_store(store, urls, data_file, meta_path, meta, modes, args, env, work):
    """A store's whole run: the store prepared, then each mode (caches on, off)."""
    prepared, files, data = prepare_store(store, urls, data_file, meta_path, meta, args, env, work)
    prepared["runs"] = [mix_mode(store, caches, flags, urls, files, data, meta_path, args, env, work, seed=k + 1)
                        for k, (caches, flags) in enumerate(modes)]
    return prepared


def prepare_store(store, urls, data_file, meta_path, meta, args, env, work):
    """Import (timed), VACUUM ANALYZE on PostgreSQL, tokens, request files.
    Answers the store's figures, the request files by scenario and what
    they were drawn from (a MixData)."""
    log(f"{store}: importing")
    started = time.monotonic()
    run([PROXYDECK, "--database", urls["import"], "admin", "import", data_file, "--quiet", "--json"],
        env=env, stdout=subprocess.DEVNULL)
    import_seconds = time.monotonic() - started
    log(f"{store}: minting tokens (bench_store mint)")
    started = time.monotonic()
    minted = run([BENCH_STORE, "mint", "--database", urls["import"], "--meta", meta_path, "--per-user", "2",
                  "--extra", "bench-user:25", "--extra", "bench-agency:25"],
                 env=env, capture_output=True, text=True).stdout
    mint_seconds = time.monotonic() - started
    tokens = defaultdict(list)
    for line in minted.splitlines():
        user, token_id, secret = line.split("\t")
        tokens[user].append((token_id, secret))
    if "admin" in urls:
        log(f"{store}: VACUUM ANALYZE of the schema's tables (as autovacuum would)")
        tables = psql(urls["admin"], f"SELECT tablename FROM pg_tables WHERE schemaname = '{urls['schema']}'").split()
        run(["psql", urls["admin"], "-qc", "VACUUM ANALYZE " + ", ".join(f"{urls['schema']}.{t}" for t in tables)])
    log(f"{store}: writing the request files")
    data = MixData(meta, tokens)
    files = make_request_files(data, os.path.join(work, f"requests-{store}"), args.lines, args.pool, seed=1)
    return ({"store": store, "import_seconds": import_seconds, "mint_seconds": mint_seconds,
             "tokens": sum(len(t) for t in tokens.values())}, files, data)


# --compare: the scenarios driven at both binaries, and their connections
# (None: --connections). "--scenario NAME" picks some of them.
COMPARED_SCENARIOS = [
    ("mix", None),
    ("first page, one connection", 1),
    ("agency random pages", None),
    ("dashboard polling", None),
]


def compared_sides(args):
    """--compare's servers: [(label, binary, serve flags)]. A is the first
    binary with --a-flags; B the second with --b-flags, or, when --b-flags
    is given more than once, one B side for each (B1, B2, ...), all of the
    second binary."""
    b_flags = args.b_flags or [""]
    sides = [("A", args.compare[0], shlex.split(args.a_flags or ""))]
    for k, flags in enumerate(b_flags):
        label = "B" if len(b_flags) == 1 else f"B{k + 1}"
        sides.append((label, args.compare[1], shlex.split(flags)))
    return sides


def compare_store(store, urls, data_file, meta_path, meta, args, env, work):
    """--compare: the binaries serve the prepared store side by side, each
    with its own flags (default: none, the server's defaults), and each
    scenario's rounds alternate between them (A B A B ...; with several B
    sides A B1 B2 ... A B1 B2 ...), so that the machine's drift and other
    load fall on all alike. The store's writer (about WRITES_PER_SECOND
    writes/s) runs all along unless --no-writer."""
    prepared, files, _ = prepare_store(store, urls, data_file, meta_path, meta, args, env, work)
    warm_file_cache(urls["serve"])
    with open(files["mix"]) as first:
        token = first.readline().split("\t", 1)[0]
    sides = compared_sides(args)
    names = args.scenario or [name for name, _ in COMPARED_SCENARIOS]
    servers, meters, writer, writes = [], [], None, None
    try:
        for label, binary, flags in sides:
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            log(f"{store}: {label} = {binary} {' '.join(flags) or '(the server defaults)'}, serving on {base}")
            server = Process([binary, "--database", urls["serve"], "serve", "--listen", f"127.0.0.1:{port}",
                              "--rate-limit", "off", *flags],
                             env, os.path.join(work, f"serve-{store}-{label}.log"))
            servers.append((label, base, server))
            server.wait_answering(f"{base}/v1/projects?limit=1", token)
            meters.append(CpuMeter(server.process.pid, urls.get("admin")))
        if not args.no_writer:
            writer = Writer(urls["writer"], meta_path, env, os.path.join(work, f"writer-{store}-compare.log"), seed=1)
        scenarios = []
        for name, connections in COMPARED_SCENARIOS:
            if name not in names:
                continue
            connections = connections or args.connections
            log(f"  {name}: {args.rounds} rounds of {args.seconds} s on each of {len(servers)}, alternating, "
                f"{connections} connections")
            rounds = {label: [] for label, _, _ in servers}
            for (_, base, _), meter in zip(servers, meters):
                spot_check(name, base, files[name], args.samples)
                if args.warmup:
                    measure_mix(name, "warm-up", base, files[name], args.warmup, connections, args, meter)
            sides_now = list(zip(servers, meters))
            for k in range(args.rounds):
                # A first, then the B sides, turned by one each round: no B
                # always runs right after another.
                others = sides_now[1:]
                turned = others[k % len(others):] + others[:k % len(others)]
                for (label, base, _), meter in sides_now[:1] + turned:
                    rounds[label].append(measure_mix(name, label, base, files[name], args.seconds, connections,
                                                     args, meter))
            scenarios.append({"scenario": name, "connections": connections, "rounds": rounds})
        if writer:
            writes, writer = writer.stop(), None
            if writes["writes"] == 0 or (args.quick and writes["errors"]):
                raise SystemExit(f"{store}: the writer made {writes['writes']} writes and {writes['errors']} errors")
        prepared["compared"] = {
            "sides": {label: {"path": binary, "bytes": os.path.getsize(binary), "flags": flags}
                      for label, binary, flags in sides},
            "scenarios": scenarios,
            "writer": writes,
            "rss_mib": {label: server.peak_rss_mib() for label, _, server in servers},
        }
    finally:
        if writer:
            with contextlib.suppress(SystemExit):
                writer.stop()
        for meter in meters:
            meter.close()
        for _, _, server in servers:
            server.stop()
    return prepared


def report_compare(stores, shape, args):
    """The Markdown tables of a --compare run, on stdout: each side's
    figures and, for each B side, its ratios to A round by round."""
    writer = ("no writer" if args.no_writer else
              f"a writer makes about {WRITES_PER_SECOND} writes/s (bench_store write) all along")
    print()
    print(f"Data: {shape['projects']:,} projects in {shape['organizations']:,} organizations, "
          f"{shape['users']:,} users. The binaries serve the same store at once; {writer}; "
          f"each scenario: {args.rounds} rounds of {args.seconds} s on each side, alternating "
          f"(A B A B; with several B sides, A then each B in each round, the B sides' order turned by one each round). Ratios: each round of a side against the "
          f"round of A in the same round, median (range). Connections: {args.connections} "
          f"(\"first page, one connection\": 1). Latency: the median round's, from wrk.")
    for store in stores:
        compared = store["compared"]
        print()
        for label, side in compared["sides"].items():
            print(f"- {label}: {side['path']} {' '.join(side['flags']) or '(the server defaults)'}; "
                  f"{side['bytes']:,} bytes, server peak RSS {compared['rss_mib'][label]:.0f} MiB")
        w = compared.get("writer")
        if w:
            print(f"- writer: {w['writes']:,} writes in {w['seconds']:.0f} s "
                  f"({w['writes'] / max(w['seconds'], 1e-9):.0f}/s), {w['errors']} errors")
        print()
        print("| store | scenario | side | requests/s median (range) | side/A requests/s | A/side requests/s "
              "| CPU µs/req | side/A CPU per request | p50 / p99 µs |")
        print("|---|---|---|---|---|---|---:|---|---|")
        median = statistics.median
        for s in compared["scenarios"]:
            a = s["rounds"]["A"]
            cpu = lambda rounds: [1e6 * r["cpu_seconds"]["process"] / max(r["requests"], 1) for r in rounds]
            for label, rounds in s["rounds"].items():
                rps = sorted(r["rps"] for r in rounds)
                latency = sorted(rounds, key=lambda r: r["rps"])[len(rounds) // 2]["latency_us"]
                if label == "A":
                    ratio = inverse = cpu_ratio = "1"
                else:
                    ratios = sorted(y["rps"] / x["rps"] for x, y in zip(a, rounds))
                    inverses = sorted(1 / r for r in ratios)
                    cpu_ratios = sorted(y / x for x, y in zip(cpu(a), cpu(rounds)) if x)
                    spread = lambda values: f"{median(values):.3f} ({values[0]:.3f}-{values[-1]:.3f})"
                    ratio, inverse = f"**{spread(ratios)}**", spread(inverses)
                    cpu_ratio = spread(cpu_ratios) if cpu_ratios else "-"
                print(f"| {store['store']} | {s['scenario']} | {label} "
                      f"| {median(rps):,.0f} ({rps[0]:,.0f}-{rps[-1]:,.0f}) | {ratio} | {inverse} "
                      f"| {per_request_us(rounds, 'process'):,.1f} | {cpu_ratio} "
                      f"| {latency['p50']:,} / {latency['p99']:,} |")


def postgres_urls(base, schema):
    """The URLs of a run in `schema` of the database `base`: each client
    names itself (application_name) so that its backends can be told apart."""
    separator = "&" if "?" in base else "?"
    in_schema = f"{base}{separator}options=-csearch_path%3D{schema}"
    return {"import": in_schema, "serve": f"{in_schema}&application_name={SERVE_APPLICATION}",
            "writer": f"{in_schema}&application_name={WRITER_APPLICATION}", "admin": base, "schema": schema}


def fmt(value, pattern="{:,.0f}"):
    """A figure for a table ("-" when not measured)."""
    return "-" if value is None else pattern.format(value)


def pct(ratio):
    """A share in percent: whole under 10% would hide the small ones."""
    return f"{100 * ratio:.0f}%" if ratio >= 0.1 else f"{100 * ratio:.2g}%"


def report_mix(stores, shape, args):
    """The Markdown tables of a --mix run, on stdout."""
    print()
    print(f"Data: {shape['projects']:,} projects in {shape['organizations']:,} organizations "
          f"({shape['big']} big), {shape['users']:,} users plus bench-user (one big organization) and "
          f"bench-agency (all of them). Requests: {args.lines:,} lines a file, tokens from a pool of "
          f"{args.pool:,} (users drawn evenly). Load: wrk + bench/mix.lua, {args.connections} connections "
          f"(\"first page, one connection\": 1), "
          f"2 threads, keep-alive, uncompressed; a writer makes about {WRITES_PER_SECOND} writes/s all along. "
          f"Each scenario: {args.rounds} rounds of {args.seconds} s, each right after {args.seconds} s of the "
          f"ceiling (the same HTTP stack answering a fixed body of the scenario's mean size, driven with the "
          f"same requests); the round of the median share is shown.")
    print()
    print("Throughput at full load. CPU µs/request: over all rounds, the server process's own (utime+stime), "
          "the ceiling's, and on PostgreSQL the backends of the server's connections / every PostgreSQL "
          "process (the writer's statements and background work included).")
    print()
    print("| store | caches | scenario | requests/s | of ceiling (median) | range | ceiling requests/s "
          "| mean body bytes | server CPU µs/req | ceiling CPU µs/req | PostgreSQL CPU µs/req (serving / all) |")
    print("|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|")
    for store in stores:
        for run_ in store["runs"]:
            for s in run_["scenarios"]:
                f = s["full"]
                pg = (f"{fmt(s['cpu_us']['pg_serving'])} / {fmt(s['cpu_us']['pg_all'])}"
                      if s["cpu_us"]["pg_all"] is not None else "-")
                print(f"| {store['store']} | {run_['caches']} | {s['scenario']} | {f['rps']:,.0f} | "
                      f"{pct(share(f))} | {pct(min(f['shares']))}-{pct(max(f['shares']))} | "
                      f"{f['ceiling']['rps']:,.0f} | {s['body_bytes']:,.0f} | {fmt(s['cpu_us']['process'])} | "
                      f"{fmt(s['ceiling_cpu_us'])} | {pg} |")
    print()
    print("Latency at half the maximum rate (paced: each connection waits between an answer and its next "
          "request), in µs, from wrk (request written to answer read); the ceiling at the same asked rate, "
          "just after. Rates: asked / achieved.")
    print()
    print("| store | caches | scenario | rate asked | achieved | p50 | p99 | p99.9 | max "
          "| ceiling achieved | ceiling p50 | p99 | p99.9 | max |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for store in stores:
        for run_ in store["runs"]:
            for s in run_["scenarios"]:
                if "half" not in s:
                    continue
                h, c = s["half"], s["half_ceiling"]
                hl, cl = h["latency_us"], c["latency_us"]
                print(f"| {store['store']} | {run_['caches']} | {s['scenario']} | {h['target_rps']:,.0f} | "
                      f"{h['rps']:,.0f} | {hl['p50']:,} | {hl['p99']:,} | {hl['p99_9']:,} | {hl['max']:,} | "
                      f"{c['rps']:,.0f} | {cl['p50']:,} | {cl['p99']:,} | {cl['p99_9']:,} | {cl['max']:,} |")
    print()
    print("Latency at full load (the median round), in µs, against the ceiling's in the round just before.")
    print()
    print("| store | caches | scenario | connections | p50 | p99 | p99.9 | max | ceiling p50 | p99 | p99.9 | max |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for store in stores:
        for run_ in store["runs"]:
            for s in run_["scenarios"]:
                fl, cl = s["full"]["latency_us"], s["full"]["ceiling"]["latency_us"]
                print(f"| {store['store']} | {run_['caches']} | {s['scenario']} | {s['connections']} | "
                      f"{fl['p50']:,} | {fl['p99']:,} | {fl['p99_9']:,} | {fl['max']:,} | "
                      f"{cl['p50']:,} | {cl['p99']:,} | {cl['p99_9']:,} | {cl['max']:,} |")
    print()
    print(f"Writes over the HTTP management API (bench/mix.lua sending POSTs, one wrk thread, {WRITE_CONNECTIONS} "
          f"connections) while readers run the mix paced at half its maximum rate ({args.connections} "
          f"connections, the mix's own paced delay), after the read scenarios, the store's writer stopped; "
          f"{args.paced_seconds} s a run, every answer 2xx. "
          f"Readers' p99 against the mix's target: at most 2x the ceiling's p99 at the same rate (measured in "
          f"the mix scenario).")
    print()
    print("| store | caches | run | writes/s | write p50 / p99 µs | readers achieved/s | readers p50 | p99 "
          "| p99.9 | readers' p99 / ceiling's | within 2x |")
    print("|---|---|---|---:|---|---:|---:|---:|---:|---:|---|")
    for store in stores:
        for run_ in store["runs"]:
            writes = run_["http_writes"]
            for r in writes["runs"]:
                w, rl = r.get("writes"), r["readers"]["latency_us"]
                ratio = rl["p99"] / max(writes["ceiling_p99_us"], 1)
                print(f"| {store['store']} | {run_['caches']} | {r['run']} | {fmt(w and w['rps'])} | "
                      + (f"{w['latency_us']['p50']:,} / {w['latency_us']['p99']:,}" if w else "-")
                      + f" | {r['readers']['rps']:,.0f} | {rl['p50']:,} | {rl['p99']:,} | {rl['p99_9']:,} | "
                      f"{ratio:.1f} | {'yes' if ratio <= 2 else 'no'} |")
    print()
    for store in stores:
        print(f"{store['store']}: import {shape['projects'] / store['import_seconds']:,.0f} projects/s "
              f"({store['import_seconds']:.1f} s for the whole data set); {store['tokens']:,} tokens minted "
              f"in {store['mint_seconds']:.1f} s.")
        for run_ in store["runs"]:
            w = run_["writer"]
            by = {s["scenario"]: s["full"] for s in run_["scenarios"]}
            agency, one = by.get("agency random pages"), by.get("one-organization random pages")
            others = run_["other_postgres_clients_seen"]
            print(f"- caches {run_['caches']}: server peak RSS {run_['rss_mib']:.0f} MiB; writer: {w['writes']:,} "
                  f"writes in {w['seconds']:.0f} s ({w['writes'] / max(w['seconds'], 1e-9):.0f}/s: "
                  f"{w['projects_imported']:,} projects imported again, {w['tokens_created']:,} tokens created, "
                  f"{w['tokens_revoked']:,} revoked), {w['errors']} errors"
                  + (f"; agency random pages at {pct(share(agency) / share(one))} of one-organization random "
                     f"pages (shares of the ceiling compared)" if agency and one else "")
                  + (f"; other clients seen active on the PostgreSQL cluster: {others} times" if others else "")
                  + ".")


def run_mix(args):
    """The realistic-traffic benchmark (--mix): every store, every mode."""
    if args.quick:
        shape = dict(projects=20_000, organizations=100, users=500, big=8)
        settings = dict(seconds=1, warmup=0, rounds=1, connections=4, lines=2_000, pool=500,
                        samples=20, calibrate=1, paced_seconds=1)
    else:
        shape = dict(projects=1_000_000, organizations=1_000, users=10_000, big=8)
        seconds = args.seconds or 5
        settings = dict(seconds=seconds, warmup=min(3, seconds), rounds=5, connections=32, lines=200_000,
                        pool=1_000, samples=100, calibrate=min(2, seconds), paced_seconds=2 * seconds)
    for key in ("projects", "organizations", "users"):
        if getattr(args, key) is not None:
            shape[key] = getattr(args, key)
    for key, value in settings.items():
        if getattr(args, key, None) is None:
            setattr(args, key, value)

    if not args.no_build:
        build(mix=True)
    ensure_wrk()
    modes = mix_modes()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYDECK_")}
    env["RUST_LOG"] = env.get("RUST_LOG", "info,refinery_core=warn")
    stores = []
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    folder = contextlib.nullcontext(args.keep) if args.keep else tempfile.TemporaryDirectory(prefix="proxydeck-mix-")
    with folder as work:
        data_file, meta_path = os.path.join(work, "data.ndjson"), os.path.join(work, "meta.json")
        log(f"generating the mix data: {shape['projects']:,} projects, {shape['organizations']:,} "
            f"organizations, {shape['users']:,} users")
        with open(data_file, "w") as out:
            run([os.path.join(BINARIES, "examples", "generate"), "--mix", "--projects", str(shape["projects"]),
                 "--organizations", str(shape["organizations"]), "--users", str(shape["users"]),
                 "--big-organizations", str(shape["big"]), "--meta", meta_path], stdout=out)
        with open(meta_path) as file:
            meta = json.load(file)
        def one_store(store, urls):
            if args.compare:
                return compare_store(store, urls, data_file, meta_path, meta, args, env, work)
            return mix_store(store, urls, data_file, meta_path, meta, modes, args, env, work)

        if not args.skip_sqlite:
            urls = {"import": f"sqlite://{work}/mix.db"}
            urls["serve"] = urls["writer"] = urls["import"]
            stores.append(one_store("SQLite", urls))
        if args.postgres:
            schema = f"proxydeck_mix_{os.getpid()}"
            run(["psql", args.postgres, "-qc", f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"])
            try:
                stores.append(one_store("PostgreSQL", postgres_urls(args.postgres, schema)))
            finally:
                run(["psql", args.postgres, "-qc", f"DROP SCHEMA IF EXISTS {schema} CASCADE"])
    if args.compare:
        report_compare(stores, shape, args)
    else:
        report_mix(stores, shape, args)
    if args.json_out:
        with open(args.json_out, "w") as out:
            json.dump({"shape": shape, "settings": {k: getattr(args, k) for k in settings},
                       "writes_per_second": WRITES_PER_SECOND, "stores": stores}, out, indent=1)
        log(f"figures written to {args.json_out}")
    if args.quick:
        wrote = "" if args.compare and args.no_writer else " and the writer wrote"
        print(f"\nquick mode: every answer under load was counted 2xx by wrk{wrote}; "
              "timings above are not meaningful.")


FEED_ORG_BUSY = "00000000-0000-7000-8000-00000000fee1"
FEED_ORG_QUIET = "00000000-0000-7000-8000-00000000fee2"


def raise_open_files():
    """Lets a spawned process hold as many sockets as its hard limit allows."""
    import resource
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def memory_mib(pid, field):
    """A memory figure of /proc/PID/status (VmRSS: resident now; VmHWM: its
    peak), in MiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def feed_store(label, database, args, env, work, across=False):
    """One store's feed run: its figures. `across`: the writes go through a
    second instance on the same database, the followers stay on the first."""
    data_file = os.path.join(work, f"feed-{label}.ndjson")
    with open(data_file, "w") as out:
        for line in [
            {"object": "organization", "id": FEED_ORG_BUSY, "name": "Busy"},
            {"object": "organization", "id": FEED_ORG_QUIET, "name": "Quiet"},
            {"object": "user", "id": "feed-user", "email": "feed@example.com",
             "roles": {FEED_ORG_BUSY: "admin", FEED_ORG_QUIET: "admin"}},
            {"object": "project", "id": "busy", "organization_id": FEED_ORG_BUSY, "slug": "busy"},
            {"object": "project", "id": "quiet", "organization_id": FEED_ORG_QUIET, "slug": "quiet"},
        ]:
            out.write(json.dumps(line) + "\n")
    run([PROXYDECK, "--database", database, "admin", "import", data_file, "--quiet", "--json"],
        env=env, stdout=subprocess.DEVNULL)
    made = run([PROXYDECK, "--database", database, "admin", "token", "create", "--user", "feed-user",
                "--name", "feed", "--json"], env=env, capture_output=True, text=True)
    token = json.loads(made.stdout)["token"]
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    connections = args.idle + args.active + 1000
    stderr = open(os.path.join(work, f"feed-serve-{label}.log"), "wb")
    server = subprocess.Popen(
        [PROXYDECK, "--database", database, "serve", "--listen", f"127.0.0.1:{port}",
         "--rate-limit", "1000000", "--max-connections", str(connections),
         # Every follower is the one bench user's, on one token: the
         # per-caller bounds (docs/security.md) are lifted to the load.
         "--feed-follows-per-token", str(connections), "--feed-follows-per-user", str(connections)],
        env=env, stdout=subprocess.DEVNULL, stderr=stderr, preexec_fn=raise_open_files)
    writer = None
    write_base = base
    if across:
        write_port = free_port()
        write_base = f"http://127.0.0.1:{write_port}"
        writer = subprocess.Popen(
            [PROXYDECK, "--database", database, "serve", "--listen", f"127.0.0.1:{write_port}",
             "--rate-limit", "1000000"],
            env=env, stdout=subprocess.DEVNULL, stderr=stderr)
    follower = None
    try:
        deadline = time.monotonic() + 30
        for url in {base, write_base}:
            while fetch(f"{url}/v1/changes", token)[0] != 200:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit(f"{label}: the server did not answer")
                time.sleep(0.01)
        rss_before = memory_mib(server.pid, "VmRSS")
        log(f"{label}: opening {args.idle:,} idle and {args.active:,} active followers")
        follower = subprocess.Popen(
            [os.path.join(BINARIES, "examples", "feed_followers"), base, token, "?project_id=quiet",
             str(args.idle), f"?organization_id={FEED_ORG_BUSY}", str(args.active),
             "/v1/projects/busy", str(args.writes), write_base],
            env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            preexec_fn=raise_open_files)
        opened = json.loads(follower.stdout.readline() or "null") or {}
        if opened.get("opened") != args.idle + args.active:
            raise SystemExit(f"{label}: the followers did not all open: {opened}")
        rss_open = memory_mib(server.pid, "VmRSS")
        cpu_before = cpu_seconds(server.pid)
        time.sleep(args.idle_seconds)
        idle_cpu = (cpu_seconds(server.pid) - cpu_before) / args.idle_seconds
        log(f"{label}: {args.writes} writes, ten a second")
        follower.stdin.write("go\n")
        follower.stdin.flush()
        fanout = json.loads(follower.stdout.readline() or "null") or {}
        rss_after = memory_mib(server.pid, "VmRSS")
    finally:
        if follower is not None:
            follower.kill()
            follower.wait()
        for process in (server, writer):
            if process is not None:
                process.terminate()
                process.wait(timeout=60)
        stderr.close()
    followers = args.idle + args.active
    return {
        "label": label, "followers": followers, "open_seconds": opened.get("open_seconds"),
        "rss_before": rss_before, "rss_open": rss_open, "rss_after": rss_after,
        "per_follower_kib": (rss_open - rss_before) * 1024 / followers,
        "idle_cpu": idle_cpu, **fanout,
    }


def run_feed(args):
    """The change feed's capacity (--feed)."""
    if args.quick:
        args.idle, args.active, args.writes, args.idle_seconds = 200, 50, 5, 1
    else:
        args.idle, args.active, args.writes, args.idle_seconds = 10_000, 1_000, 50, 10
    if not args.no_build:
        log(f"building the binaries ({'dev' if DEV_PROFILE else 'release'} profile)")
        run(["cargo", "build", *CARGO_PROFILE, "--quiet", "--bin", "proxydeck",
             "--example", "feed_followers"], cwd=ROOT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYDECK_")}
    env["RUST_LOG"] = env.get("RUST_LOG", "info,refinery_core=warn")
    runs = []
    with tempfile.TemporaryDirectory(prefix="proxydeck-feed-") as work:
        runs.append(feed_store("SQLite", f"sqlite://{work}/feed.db", args, env, work))
        if args.postgres:
            schema = f"proxydeck_feed_{os.getpid()}"
            run(["psql", args.postgres, "-qc", f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"])
            try:
                url = postgres_urls(args.postgres, schema)["serve"]
                runs.append(feed_store("PostgreSQL", url, args, env, work))
                # The writes through a second instance: the followers' tail
                # finds them by its poll.
                runs.append(feed_store("PostgreSQL, writes via another instance", url, args, env, work,
                                       across=True))
            finally:
                run(["psql", args.postgres, "-qc", f"DROP SCHEMA IF EXISTS {schema} CASCADE"])
    print(f"\nThe change feed: {args.idle:,} idle followers (their scope sees no change) and "
          f"{args.active:,} following the organization written to, one server, {args.writes} writes "
          f"ten a second")
    print("| store | streams opened in | RSS before -> open -> after writes | per follower | "
          "CPU, all idle | received / expected | p50 | p99 | max |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        print(f"| {r['label']} | {r['open_seconds']:.1f} s | {r['rss_before']:.0f} -> {r['rss_open']:.0f} -> "
              f"{r['rss_after']:.0f} MiB | {r['per_follower_kib']:.1f} KiB | {r['idle_cpu'] * 100:.1f}% of a core | "
              f"{r.get('received')} / {r.get('expected')} | {r.get('p50_ms')} ms | {r.get('p99_ms')} ms | "
              f"{r.get('max_ms')} ms |")
    missing = [r["label"] for r in runs if r.get("received") is None or r.get("received") != r.get("expected")]
    if missing:
        raise SystemExit(f"followers missed writes on: {', '.join(missing)}")
    if args.quick:
        print("\nquick mode: every follower opened and received every write; timings are not meaningful.")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small data and short runs: checks responses only")
    parser.add_argument("--no-build", action="store_true",
                        help="use the release binaries already built (e.g. --compare of builds made elsewhere, "
                             "while the tree has changes the data tools need not be rebuilt for)")
    parser.add_argument("--postgres", metavar="URL", help="also run on this PostgreSQL database (a schema is made in it)")
    parser.add_argument("--connections", type=int, default=None,
                        help="concurrent connections under load (default 32; --quick: 4)")
    parser.add_argument("--mix", action="store_true", help="the realistic traffic instead of the fixed scenarios")
    parser.add_argument("--feed", action="store_true",
                        help="the change feed: followers held open, memory per follower, a write's fan-out")
    parser.add_argument("--skip-sqlite", action="store_true",
                        help="with --mix --postgres: PostgreSQL's runs alone (each store's run is about 20 minutes)")
    parser.add_argument("--writes-only", action="store_true",
                        help="with --mix: of the read scenarios only \"mix\" (the readers' rate and the ceiling "
                             "the HTTP write runs need), then the write runs")
    parser.add_argument("--json-out", metavar="FILE", help="with --mix: also write every figure to FILE as JSON")
    parser.add_argument("--keep", metavar="DIR",
                        help="with --mix: work in DIR and leave what is made there (data, SQLite store, tokens, "
                             "request files) for a profile afterwards")
    parser.add_argument("--compare", nargs=2, metavar=("A", "B"),
                        help="with --mix: two proxydeck binaries (a build before and after a change, or one "
                             "binary twice with different --a-flags/--b-flags) serve the same store side by "
                             "side, the store's writer running, and each scenario's rounds alternate between "
                             "them (A B A B); prints each one's figures, B/A and A/B")
    parser.add_argument("--a-flags", metavar="FLAGS",
                        help="with --compare: A's extra `serve` flags, one string split as a shell would, e.g. "
                             "--a-flags \"--caches all\" (a value without a space is written "
                             "--a-flags=--caches=all); default none: the server's defaults")
    parser.add_argument("--b-flags", metavar="FLAGS", action="append",
                        help="with --compare: B's extra `serve` flags, as --a-flags; given more than once, each "
                             "is a B side of its own (B1, B2, ..., all the second binary), served at once, each "
                             "round running A B1 B2 ... and each side compared with A's round")
    parser.add_argument("--no-writer", action="store_true",
                        help="with --compare: no store writer during the rounds (the earlier --compare: add "
                             "--a-flags=--caches=none --b-flags=--caches=none --no-writer --scenario mix "
                             "--scenario \"first page, one connection\")")
    parser.add_argument("--scenario", action="append", metavar="NAME",
                        choices=[name for name, _ in COMPARED_SCENARIOS],
                        help="with --compare: run this scenario (repeat for several); default all of "
                             + ", ".join(f'"{name}"' for name, _ in COMPARED_SCENARIOS))
    mix = parser.add_argument_group("with --mix, to try small custom sizes and short runs")
    for flag in ("projects", "organizations", "users", "seconds", "rounds"):
        mix.add_argument(f"--{flag}", type=int)
    args = parser.parse_args()
    if args.skip_sqlite and not (args.mix and args.postgres):
        parser.error("--skip-sqlite goes with --mix --postgres URL")
    if args.compare and not args.mix:
        parser.error("--compare goes with --mix")
    if (args.a_flags or args.b_flags or args.no_writer or args.scenario) and not args.compare:
        parser.error("--a-flags, --b-flags, --no-writer and --scenario go with --mix --compare A B")
    if args.writes_only and (not args.mix or args.compare):
        parser.error("--writes-only goes with --mix (and not --compare)")
    if args.feed:
        run_feed(args)
        return
    if args.mix:
        run_mix(args)
        return
    if args.connections is None:
        args.connections = 32
    if args.quick:
        shape = dict(projects=3000, organizations=10, focus=1000, revised=2, revisions=50)
        args.seconds, args.warmup, args.connections, args.rounds = 1, 1, 4, 1
    else:
        shape = dict(projects=1_000_000, organizations=1000, focus=100_000, revised=100, revisions=50)
        args.seconds, args.warmup, args.rounds = 5, 3, 5

    if not args.no_build:
        build()
    ensure_oha()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROXYDECK_")}
    env["RUST_LOG"] = env.get("RUST_LOG", "info,refinery_core=warn")
    with tempfile.TemporaryDirectory(prefix="proxydeck-bench-") as work:
        data_file = os.path.join(work, "data.ndjson")
        log(f"generating {shape['projects']:,} projects")
        with open(data_file, "w") as out:
            run([os.path.join(BINARIES, "examples", "generate"),
                 "--projects", str(shape["projects"]), "--organizations", str(shape["organizations"]),
                 "--focus-projects", str(shape["focus"]), "--revised-projects", str(shape["revised"]),
                 "--revisions", str(shape["revisions"])], stdout=out)
        runs = [bench_backend("SQLite", f"sqlite://{work}/bench.db", data_file, shape, args, env, work)]
        if args.postgres:
            schema = "proxydeck_bench"
            run(["psql", args.postgres, "-qc", f"DROP SCHEMA IF EXISTS {schema} CASCADE; CREATE SCHEMA {schema}"])
            separator = "&" if "?" in args.postgres else "?"
            url = f"{args.postgres}{separator}options=-csearch_path%3D{schema}"
            try:
                runs.append(bench_backend("PostgreSQL", url, data_file, shape, args, env, work))
            finally:
                run(["psql", args.postgres, "-qc", f"DROP SCHEMA IF EXISTS {schema} CASCADE"])
    report(runs, shape, args)
    if args.quick:
        print("\nquick mode: every response was checked; timings above are not meaningful.")


if __name__ == "__main__":
    main()
