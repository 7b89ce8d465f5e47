//! The realistic-traffic benchmark's store side (`bench/run.py --mix`):
//! tokens for the load, and a steady stream of writes while it runs, both
//! through the store's own write paths (the ones `admin token create`,
//! `admin token revoke` and `admin import` use), never through HTTP.
//!
//! Tokens for every user of a mix data set (`generate --mix --meta`), one
//! TSV line each on stdout, `user_id<TAB>token_id<TAB>secret`, in the
//! order of meta.json's users:
//!
//!     bench_store mint --database URL --meta meta.json --per-user 2 \
//!         --extra bench-user:25 --extra bench-agency:25
//!
//! A user's k-th token is named `MINT_NAMES[k % 5]` (`ci`, `deploy`,
//! `laptop`, `terraform`, `monitoring`), so that a `name=` filter finds
//! some of them. `--extra USER:N` gives USER N tokens more than
//! `--per-user`. `--concurrency N` (default 16) creations are under way at
//! once; on PostgreSQL each is a transaction of its own, so that is what
//! makes 20,000 of them quick.
//!
//! Writes until SIGTERM, SIGINT or the end of stdin, about `--rate` a
//! second, one after the other; then one JSON line of counts on stdout:
//!
//!     bench_store write --database URL --meta meta.json --rate 50 [--seed N]
//!
//! Each write is one of: a random project imported again with a new
//! description (`operator::import::Import`, as `admin import` does; about half the
//! writes), a token created for a random user (about 3 in 10; named
//! `writer`), or a token revoked (about 2 in 10; always one this writer
//! created, never one of `mint`'s). A failed write is counted and the
//! stream goes on. Nothing is written anywhere but the given database.
//! Close stdin or send SIGTERM to stop it: started with stdin already at
//! its end (`< /dev/null`), it stops at once.

mod bench_data;

use std::collections::HashMap;
use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bench_data::{Random, project};
use futures_util::StreamExt;
use proxydeck::domain::import::{ImportBatch, ImportError, parse_line};
use proxydeck::store::operator::admin::{CreateToken, RevokeToken};
use proxydeck::store::operator::import::Import;
use proxydeck::store::{self, DatabaseUrl, NewToken, Store, StoreOptions};
use tokio::sync::{mpsc, oneshot};

/// The names `mint` gives a user's tokens, in turn.
const MINT_NAMES: [&str; 5] = ["ci", "deploy", "laptop", "terraform", "monitoring"];

const USAGE: &str = "usage:
  bench_store mint  --database URL --meta meta.json [--per-user N] [--extra USER:N ...] [--concurrency N]
  bench_store write --database URL --meta meta.json [--rate WRITES_PER_SECOND] [--seed N]";

/// The part of `generate --mix --meta`'s file this needs.
#[derive(serde::Deserialize)]
struct Meta {
    /// Each organization's project numbers, oldest first.
    organizations: Vec<Vec<u64>>,
    /// Each user's id and organization numbers.
    users: Vec<(String, Vec<u64>)>,
}

impl Meta {
    fn read(path: &str) -> anyhow::Result<Self> {
        let file = std::fs::File::open(path).with_context(|| format!("cannot open {path}"))?;
        serde_json::from_reader(std::io::BufReader::new(file))
            .with_context(|| format!("{path} is not generate's meta file"))
    }
}

#[derive(Default)]
struct Args {
    database: Option<String>,
    meta: Option<String>,
    per_user: u32,
    extra: Vec<(String, u32)>,
    concurrency: usize,
    rate: f64,
    seed: u64,
}

fn parse_args(mut args: impl Iterator<Item = String>) -> anyhow::Result<Args> {
    let mut parsed = Args {
        per_user: 2,
        concurrency: 16,
        rate: 50.0,
        seed: 1,
        ..Args::default()
    };
    while let Some(flag) = args.next() {
        let value = args
            .next()
            .with_context(|| format!("{flag} needs a value\n{USAGE}"))?;
        match flag.as_str() {
            "--database" => parsed.database = Some(value),
            "--meta" => parsed.meta = Some(value),
            "--per-user" => parsed.per_user = value.parse()?,
            "--extra" => {
                let (user, count) = value
                    .rsplit_once(':')
                    .with_context(|| format!("--extra USER:N, got {value}"))?;
                parsed.extra.push((user.to_owned(), count.parse()?));
            }
            "--concurrency" => parsed.concurrency = value.parse::<usize>()?.max(1),
            "--rate" => {
                parsed.rate = value.parse()?;
                if !(parsed.rate > 0.0 && parsed.rate.is_finite()) {
                    bail!("--rate must be a positive number of writes a second");
                }
            }
            "--seed" => parsed.seed = value.parse()?,
            _ => bail!("unknown flag {flag}\n{USAGE}"),
        }
    }
    Ok(parsed)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut argv = std::env::args().skip(1);
    let mode = argv.next().unwrap_or_default();
    let args = parse_args(argv)?;
    let database = args.database.as_deref().context(USAGE)?;
    let url = DatabaseUrl::parse(database).map_err(anyhow::Error::msg)?;
    let meta = Meta::read(args.meta.as_deref().context(USAGE)?)?;
    // Generous waits: a benchmark's writes queue behind its load, and a
    // write given up on would only be an error to count.
    let options = StoreOptions {
        pool_size: match mode.as_str() {
            "mint" => 2 * args.concurrency as u32,
            _ => 2,
        },
        timeout: Duration::from_secs(30),
        ..StoreOptions::default()
    };
    match mode.as_str() {
        "mint" => {
            let store = Arc::new(store::open(&url, &options).await?);
            mint(store, &meta, &args).await
        }
        "write" => {
            let store = Arc::new(store::open(&url, &options).await?);
            write(store, &meta, &args).await
        }
        _ => bail!("{USAGE}"),
    }
}

/// Makes every user's tokens and prints them as TSV, in meta.json's order.
async fn mint(store: Arc<Store>, meta: &Meta, args: &Args) -> anyhow::Result<()> {
    let mut extra: HashMap<&str, u32> = HashMap::new();
    for (user, count) in &args.extra {
        if !meta.users.iter().any(|(id, _)| id == user) {
            bail!("--extra {user}:{count}: no user {user} in the meta file");
        }
        *extra.entry(user.as_str()).or_default() += count;
    }
    let wanted: Vec<(String, String)> = meta
        .users
        .iter()
        .flat_map(|(user, _)| {
            let count = args.per_user + extra.get(user.as_str()).copied().unwrap_or(0);
            (0..count as usize)
                .map(move |k| (user.clone(), MINT_NAMES[k % MINT_NAMES.len()].to_owned()))
        })
        .collect();
    let started = Instant::now();
    let mut made = futures_util::stream::iter(wanted)
        .map(|(user, name)| {
            let store = store.clone();
            async move {
                let (token, secret) = NewToken::mint(user.clone(), name, None);
                let stored = store
                    .run(CreateToken(token))
                    .await
                    .with_context(|| format!("cannot create a token for {user}"))?;
                anyhow::Ok((user, stored.id, secret))
            }
        })
        .buffered(args.concurrency);
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut count = 0u64;
    while let Some(token) = made.next().await {
        let (user, id, secret) = token?;
        writeln!(out, "{user}\t{id}\t{secret}")?;
        count += 1;
    }
    out.flush()?;
    eprintln!(
        "bench_store mint: {count} tokens in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// What the writer did, printed as one JSON line when it stops.
#[derive(Default, serde::Serialize)]
struct Writes {
    seconds: f64,
    /// Writes that succeeded, all kinds together.
    writes: u64,
    projects_imported: u64,
    tokens_created: u64,
    tokens_revoked: u64,
    /// Writes that failed, all kinds together (the first few are logged on
    /// stderr).
    errors: u64,
}

/// Writes at about `args.rate` a second until told to stop.
async fn write(store: Arc<Store>, meta: &Meta, args: &Args) -> anyhow::Result<()> {
    let owners = project_owners(meta);
    if owners.is_empty() || meta.users.is_empty() {
        bail!("the meta file names no project or no user");
    }
    let mut stop = stop_signal()?;
    let mut random = Random::new(args.seed);
    let mut mine: Vec<String> = Vec::new();
    let mut writes = Writes::default();
    let started = Instant::now();
    let mut ticks = tokio::time::interval(Duration::from_secs_f64(1.0 / args.rate));
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            _ = ticks.tick() => {}
        }
        let choice = random.below(10);
        let outcome = if choice < 5 {
            let i = random.below(owners.len() as u64);
            let organization = u64::from(owners[i as usize]);
            let description = format!(
                "Benchmark project {i} of organization {organization}, rewritten by the writer (write {})",
                writes.writes + writes.errors
            );
            import_project(store.as_ref(), i, organization, description)
                .await
                .map(|()| writes.projects_imported += 1)
        } else if choice < 8 || mine.is_empty() {
            let (user, _) = &meta.users[random.below(meta.users.len() as u64) as usize];
            let (token, _secret) = NewToken::mint(user.clone(), "writer".into(), None);
            match store.run(CreateToken(token)).await {
                Ok(token) => {
                    mine.push(token.id);
                    writes.tokens_created += 1;
                    Ok(())
                }
                Err(e) => Err(anyhow::Error::new(e).context(format!("token for {user}"))),
            }
        } else {
            let id = mine.swap_remove(random.below(mine.len() as u64) as usize);
            match store.run(RevokeToken(id.clone())).await {
                Ok(()) => {
                    writes.tokens_revoked += 1;
                    Ok(())
                }
                Err(e) => Err(anyhow::Error::new(e).context(format!("revoking {id}"))),
            }
        };
        match outcome {
            Ok(()) => writes.writes += 1,
            Err(error) => {
                writes.errors += 1;
                if writes.errors <= 5 {
                    eprintln!("bench_store write: a write failed: {error:#}");
                }
            }
        }
    }
    writes.seconds = started.elapsed().as_secs_f64();
    println!("{}", serde_json::to_string(&writes)?);
    Ok(())
}

/// Each project's organization number, indexed by project number.
fn project_owners(meta: &Meta) -> Vec<u32> {
    let total = meta.organizations.iter().map(Vec::len).sum();
    let mut owners = vec![0u32; total];
    for (organization, projects) in meta.organizations.iter().enumerate() {
        for &i in projects {
            owners[i as usize] = organization as u32;
        }
    }
    owners
}

/// Imports project `i` anew, checked as `admin import` checks a line, in
/// one import of its own. Its `updated_at` is left to the import (the time
/// of import, since the description changed).
async fn import_project(
    store: &Store,
    i: u64,
    organization: u64,
    description: String,
) -> anyhow::Result<()> {
    let mut changed = project(i, organization, description);
    changed.updated_at = None;
    let line = serde_json::to_string(&changed)?;
    let record = parse_line(&line).map_err(|e| ImportError::from_field(1, e))?;
    let (sender, receiver) = mpsc::channel::<ImportBatch>(1);
    sender.send(vec![Ok((1, record))]).await?;
    drop(sender);
    Import::outcome(store.run(Import::new(receiver)).await)
        .with_context(|| format!("importing project {i}"))?;
    Ok(())
}

/// Resolves on SIGTERM, SIGINT, or when stdin reaches its end.
fn stop_signal() -> anyhow::Result<oneshot::Receiver<()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let (sender, receiver) = oneshot::channel();
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let (closed_sender, closed) = oneshot::channel::<()>();
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink());
        let _ = closed_sender.send(());
    });
    tokio::spawn(async move {
        tokio::select! {
            _ = terminate.recv() => {}
            _ = interrupt.recv() => {}
            _ = closed => {}
        }
        let _ = sender.send(());
    });
    Ok(receiver)
}
