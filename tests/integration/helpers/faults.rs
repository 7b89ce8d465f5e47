//! Requests flowing through a fault, the process's metrics, and waiting for
//! state another connection or process holds.

use super::*;

/// One answer seen by a [`RequestLoad`].
#[derive(Debug)]
pub struct LoadAnswer {
    pub sent: std::time::Instant,
    pub took: Duration,
    pub status: u16,
    pub body: Value,
}

/// Pause between two requests of a [`RequestLoad`] client: a steady flow
/// that stays under a token's rate limit and leaves the shared machine's
/// cores to the server. Pacing, not a wait: nothing is waited for.
const LOAD_PAUSE: Duration = Duration::from_millis(5);

/// Clients sending GET requests one after the other, each on its own,
/// until [`RequestLoad::finish`]: requests flowing while a test breaks
/// something.
pub struct RequestLoad {
    stop: Arc<std::sync::atomic::AtomicBool>,
    clients: Vec<JoinHandle<Vec<LoadAnswer>>>,
    progress: tokio::sync::watch::Receiver<LoadProgress>,
}

/// The answers a [`RequestLoad`] has had so far: when each request was
/// sent, and its status, in the order they came.
#[derive(Default, Debug)]
pub struct LoadProgress {
    pub answers: Vec<(std::time::Instant, u16)>,
}

impl LoadProgress {
    /// How many requests sent after `after` were answered `status`.
    pub fn count(&self, status: u16, after: std::time::Instant) -> usize {
        self.answers
            .iter()
            .filter(|(sent, seen)| *sent > after && *seen == status)
            .count()
    }

    /// How many requests sent after `after` were answered at all.
    pub fn answered_after(&self, after: std::time::Instant) -> usize {
        self.answers
            .iter()
            .filter(|(sent, _)| *sent > after)
            .count()
    }
}

impl RequestLoad {
    pub fn start(app: &TestApp, path: &str, token: &str, clients: usize) -> Self {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (report, progress) = tokio::sync::watch::channel(LoadProgress::default());
        let report = Arc::new(report);
        let clients = (0..clients)
            .map(|_| {
                let (stop, client, url, token, report) = (
                    stop.clone(),
                    app.client.clone(),
                    app.url(path),
                    token.to_owned(),
                    report.clone(),
                );
                tokio::spawn(async move {
                    let mut answers = Vec::new();
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let sent = std::time::Instant::now();
                        let response = client
                            .get(&url)
                            .bearer_auth(&token)
                            .send()
                            .await
                            .expect("an answer");
                        let status = response.status().as_u16();
                        let body: Value = response.json().await.expect("a JSON body");
                        report.send_modify(|progress| progress.answers.push((sent, status)));
                        answers.push(LoadAnswer {
                            sent,
                            took: sent.elapsed(),
                            status,
                            body,
                        });
                        tokio::time::sleep(LOAD_PAUSE).await;
                    }
                    answers
                })
            })
            .collect();
        Self {
            stop,
            clients,
            progress,
        }
    }

    /// Waits until the answers so far satisfy `done`: 10 s at most, then
    /// the test fails naming `what`.
    pub async fn until(&self, what: &str, done: impl FnMut(&LoadProgress) -> bool) {
        let mut progress = self.progress.clone();
        tokio::time::timeout(Duration::from_secs(10), progress.wait_for(done))
            .await
            .unwrap_or_else(|_| panic!("waited 10 s for: {what}"))
            .expect("the load's clients run");
    }

    /// Stops the clients; answers everything they saw.
    pub async fn finish(self) -> Vec<LoadAnswer> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut answers = Vec::new();
        for client in self.clients {
            answers.extend(client.await.expect("a client loop ends"));
        }
        answers
    }
}

/// Checks the answers of requests that flowed through a store outage:
/// none took `longest` or more; each is a 200, or a 503 `api_error` given
/// after the outage began; some saw it; and every one sent after
/// `recovered_by` is a 200 again.
pub fn assert_outage_answers(
    answers: &[LoadAnswer],
    outage_began: std::time::Instant,
    recovered_by: std::time::Instant,
    longest: Duration,
) {
    let mut unavailable = 0;
    for LoadAnswer {
        sent,
        took,
        status,
        body,
    } in answers
    {
        assert!(*took < longest, "a request took {took:?}");
        match status {
            200 => {}
            503 => {
                unavailable += 1;
                assert_eq!(assert_error_shape(body), "api_error");
                assert!(
                    *sent + *took >= outage_began,
                    "a 503 before the outage began"
                );
            }
            other => panic!("unexpected status {other}: {body}"),
        }
    }
    let timeline: Vec<(u128, u16)> = answers
        .iter()
        .map(|a| {
            (
                a.sent.saturating_duration_since(outage_began).as_millis(),
                a.status,
            )
        })
        .collect();
    assert!(
        unavailable > 0,
        "no request saw the outage: {} answers; {timeline:?}",
        answers.len()
    );
    let after: Vec<&LoadAnswer> = answers.iter().filter(|a| a.sent > recovered_by).collect();
    assert!(!after.is_empty(), "no request after recovery: {timeline:?}");
    assert!(
        after.iter().all(|a| a.status == 200),
        "still failing after recovery: {timeline:?}"
    );
}

/// A project body counter of the page memories, as `/metrics` shows it
/// (the process's own: nextest runs each test in a process of its own).
pub fn page_bodies(from: &str) -> f64 {
    metric(&format!(
        "proxydeck_db_page_bodies_total{{from=\"{from}\"}}"
    ))
}

/// A series of this process's `/metrics` (`name{labels}` as written
/// there); 0 while absent. Only under nextest (see below).
pub fn metric(series: &str) -> f64 {
    // The recorder is global to the process: under `cargo test` every test
    // of the binary records into it at once, and a difference of counts
    // would include other tests' work. nextest gives each test a process.
    assert_eq!(
        std::env::var("NEXTEST_EXECUTION_MODE").as_deref(),
        Ok("process-per-test"),
        "this test counts its process's metrics: run it with `cargo nextest run` \
         (one process per test), not `cargo test`"
    );
    sample(&proxydeck::metrics::render(&[], &[]), series).unwrap_or(0.0)
}

/// The value of `series` (`name{labels}`) in a `/metrics` text.
pub fn sample(metrics: &str, series: &str) -> Option<f64> {
    let series = format!("{series} ");
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(&series))
        .map(|value| value.parse().expect("a number"))
}

/// Waits until `condition` holds (checked every 5 ms, for 10 s at most,
/// then the test fails naming `what`). For state the test can only look
/// at, held by another process or connection (a lock, a file, a log, the
/// system's clock): there is no event to wait on.
pub async fn until(what: &str, mut condition: impl FnMut() -> bool) {
    eventually(what, || std::future::ready(condition())).await;
}

/// [`until`] for a condition that must be asked for (a request, a query):
/// for state only a try can show, such as whether a server answers again.
pub async fn eventually<F: std::future::Future<Output = bool>>(
    what: &str,
    mut condition: impl FnMut() -> F,
) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !condition().await {
        assert!(
            std::time::Instant::now() < deadline,
            "waited 10 s for: {what}"
        );
        // The one poll of the suite: see the doc comment of `until`.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until the system's clock shows a later millisecond than when
/// called: what the binary writes next carries a later time than what it
/// wrote before.
pub async fn a_millisecond_passes() {
    let now = Timestamp::now();
    until("the clock moves on", || Timestamp::now() > now).await;
}
