//! Property tests: how many cases, and how a failing input is shown.

/// Cases a property test runs: `PROPTEST_CASES` when set, else `default`
/// (each case talks to a real server, so fewer than proptest's 256).
pub fn property_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|cases| cases.parse().ok())
        .unwrap_or(default)
}

/// Runs `test` on `cases` values drawn from `strategy`. A failure (an
/// `Err` or a panic) is shrunk to a small failing value, within a bounded
/// number of tries since each one talks to the server, and reported.
pub fn check_property<S: proptest::strategy::Strategy>(
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> proptest::test_runner::TestCaseResult,
) {
    let config = proptest::test_runner::Config {
        cases,
        max_shrink_iters: 200,
        // The failing value is printed; nothing is written into the tree.
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    if let Err(failure) = runner.run(&strategy, test) {
        panic!("{failure}");
    }
}

/// A runtime for a property test: its cases run one by one with
/// `block_on`, while the server's tasks run on the worker threads.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime")
}

/// `path` with `query` (name, value pairs) form-encoded after `?`.
pub fn with_query(path: &str, query: &[(&str, &str)]) -> String {
    if query.is_empty() {
        return path.to_owned();
    }
    let mut encoded = form_urlencoded::Serializer::new(String::new());
    for (name, value) in query {
        encoded.append_pair(name, value);
    }
    format!("{path}?{}", encoded.finish())
}
