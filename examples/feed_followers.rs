//! The change feed's load (`bench/run.py --feed`): many followers of
//! `GET /v1/changes` held open at once, some idle (their scope sees no
//! change), some active, then writes that every active follower must
//! receive. Prints one JSON line: how many streams opened, and for each
//! write how long after it was sent each active follower had it.
//!
//! cargo run --release --example feed_followers -- URL TOKEN IDLE_QUERY IDLE ACTIVE_QUERY ACTIVE WRITE_PATH WRITES [WRITE_URL]
//!
//! WRITE_URL: where the writes go (another instance on the same
//! database), when not URL.
//!
//! Each stream is a raw HTTP/1.1 connection read line by line: the client
//! costs little, so that the server's cost is what is measured. A change
//! is known by its `version` (the writes update one project in turn).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::Mutex;

struct Shared {
    opened: AtomicUsize,
    /// (version, when it arrived) of every change an active follower got.
    received: Mutex<Vec<(u64, Instant)>>,
}

async fn follow(
    address: String,
    path: String,
    token: String,
    active: bool,
    shared: Arc<Shared>,
) -> anyhow::Result<()> {
    let stream = TcpStream::connect(&address).await?;
    stream.set_nodelay(true)?;
    let (read, mut write) = stream.into_split();
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {address}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    );
    write.write_all(request.as_bytes()).await?;
    let mut lines = BufReader::with_capacity(1024, read).lines();
    let status = lines.next_line().await?.unwrap_or_default();
    anyhow::ensure!(status.contains(" 200 "), "the stream answered {status}");
    let mut opened = false;
    while let Some(line) = lines.next_line().await? {
        if !opened && line.starts_with("retry:") {
            opened = true;
            shared.opened.fetch_add(1, Ordering::Relaxed);
        }
        if active
            && line.starts_with("data:")
            && let Some(at) = line.find("\"version\":")
        {
            let digits: String = line[at + 10..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            let arrived = Instant::now();
            shared
                .received
                .lock()
                .await
                .push((digits.parse()?, arrived));
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let write_url = (args.len() == 9).then(|| args.remove(8));
    let [
        url,
        token,
        idle_query,
        idle,
        active_query,
        active,
        write_path,
        writes,
    ] = &args[..]
    else {
        anyhow::bail!(
            "usage: feed_followers URL TOKEN IDLE_QUERY IDLE ACTIVE_QUERY ACTIVE WRITE_PATH WRITES [WRITE_URL]"
        );
    };
    let write_url = write_url.unwrap_or_else(|| url.clone());
    let address = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_owned();
    let (idle, active, writes): (usize, usize, u64) =
        (idle.parse()?, active.parse()?, writes.parse()?);
    // Every follower's socket, and the server's.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let shared = Arc::new(Shared {
        opened: AtomicUsize::new(0),
        received: Mutex::new(Vec::new()),
    });
    let started = Instant::now();
    let mut followers = Vec::new();
    for n in 0..idle + active {
        let is_active = n >= idle;
        let query = if is_active { active_query } else { idle_query };
        let task = follow(
            address.clone(),
            format!("/v1/changes{query}"),
            token.clone(),
            is_active,
            shared.clone(),
        );
        followers.push(tokio::spawn(async move {
            if let Err(error) = task.await {
                eprintln!("a follower failed: {error}");
            }
        }));
        // Connecting in bursts of a hundred keeps the listen queue short.
        if n % 100 == 99 {
            tokio::task::yield_now().await;
        }
    }
    while shared.opened.load(Ordering::Relaxed) < idle + active {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(120),
            "only {} of {} streams opened in 120 s",
            shared.opened.load(Ordering::Relaxed),
            idle + active
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let open_seconds = started.elapsed().as_secs_f64();
    // Tell the harness, which measures the server at rest, then wait for
    // its go (a line on stdin).
    println!(
        "{{\"opened\": {}, \"open_seconds\": {open_seconds:.2}}}",
        idle + active
    );
    tokio::task::spawn_blocking(|| std::io::stdin().read_line(&mut String::new())).await??;

    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder().no_proxy().build()?;
    // When each version was sent, by version.
    let mut sent = std::collections::HashMap::new();
    for n in 0..writes {
        let at = Instant::now();
        let answer = client
            .post(format!("{write_url}{write_path}"))
            .bearer_auth(token)
            .json(&serde_json::json!({"description": format!("write {n}")}))
            .send()
            .await?;
        anyhow::ensure!(
            answer.status().is_success(),
            "a write answered {}",
            answer.status()
        );
        // The strong ETag `"vN"` is the version the change carries.
        let tag = answer.headers()["etag"].to_str()?.to_owned();
        let version: u64 = tag.trim_matches('"').trim_start_matches('v').parse()?;
        sent.insert(version, at);
        // Ten writes a second: each write's fan-out is measured apart.
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Every active follower has every write, or 10 s have passed.
    let expected = active * writes as usize;
    let deadline = Instant::now() + Duration::from_secs(10);
    while shared.received.lock().await.len() < expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let received = shared.received.lock().await.clone();
    let mut latencies: Vec<f64> = received
        .iter()
        .filter_map(|(version, at)| {
            let write = sent.get(version)?;
            Some(at.saturating_duration_since(*write).as_secs_f64() * 1000.0)
        })
        .collect();
    latencies.sort_by(f64::total_cmp);
    let quantile = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .copied()
            .unwrap_or(f64::NAN)
    };
    println!(
        "{{\"expected\": {expected}, \"received\": {}, \"p50_ms\": {:.1}, \"p99_ms\": {:.1}, \"max_ms\": {:.1}}}",
        received.len(),
        quantile(0.5),
        quantile(0.99),
        latencies.last().copied().unwrap_or(f64::NAN)
    );
    for follower in followers {
        follower.abort();
    }
    Ok(())
}
