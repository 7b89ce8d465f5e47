//! What both measurements share: concurrent tasks reading one page over and
//! over, timed, with the CPU spent by this process and by PostgreSQL's.

use std::future::Future;
use std::time::Instant;

/// Concurrent tasks, each reading pages of these organizations in turn.
pub const CONCURRENCY: usize = 32;
pub const ORGS: usize = 10;

/// CPU ticks (utime + stime) of this process and of every postgres process.
fn cpu_ticks() -> (u64, u64) {
    let ticks = |stat: &str| -> u64 {
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    };
    let own = ticks(&std::fs::read_to_string("/proc/self/stat").unwrap());

    let mut pg = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let path = entry.path();
        if std::fs::read_to_string(path.join("comm")).is_ok_and(|c| c.trim() == "postgres") {
            pg += std::fs::read_to_string(path.join("stat"))
                .map(|s| ticks(&s))
                .unwrap_or(0);
        }
    }
    (own, pg)
}

/// Queries per second of `query` run `per_task` times by each task.
pub async fn measure<F, Fut>(per_task: usize, query: F) -> f64
where
    F: Fn(usize) -> Fut + Clone + Send + Sync + 'static,
    Fut: Future<Output = usize> + Send,
{
    let before = cpu_ticks();
    let started = Instant::now();
    let tasks: Vec<_> = (0..CONCURRENCY)
        .map(|t| {
            let query = query.clone();
            tokio::spawn(async move {
                let mut rows = 0;
                for i in 0..per_task {
                    rows += query((t + i) % ORGS).await;
                }
                rows
            })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), per_task * 21);
    }
    let after = cpu_ticks();
    let per_query = |ticks: u64| ticks as f64 * 10_000.0 / (CONCURRENCY * per_task) as f64;
    eprintln!(
        "  CPU per query: this process {:.1} us, postgres {:.1} us",
        per_query(after.0 - before.0),
        per_query(after.1 - before.1)
    );
    (CONCURRENCY * per_task) as f64 / started.elapsed().as_secs_f64()
}
