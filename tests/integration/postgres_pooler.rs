//! PostgreSQL through a transaction pooler (Debian's pgbouncer, `pool_mode
//! = transaction`, stock settings): what only the pooler shows. The API,
//! store and command-line suites run through it too when
//! `PROXYDECK_TEST_POSTGRES_POOLER_URL` names one (`.ci/run` starts it with
//! `.ci/pgbouncer`); without it these tests are skipped with a loud line,
//! or fail under `PROXYDECK_REQUIRE_POOLER`.

use proxydeck::store::{self, DatabaseUrl, Pooler, StoreOptions};

use crate::helpers::*;

/// A schema reached through the pooler, or `None` (the test is skipped).
fn pooled_schema() -> Option<Schema> {
    if unavailable(Backend::Postgres) {
        return None;
    }
    if pooler_url().is_none() {
        if std::env::var_os("PROXYDECK_REQUIRE_POOLER").is_some() {
            panic!(
                "a pooler is required (PROXYDECK_REQUIRE_POOLER): set PROXYDECK_TEST_POSTGRES_POOLER_URL"
            );
        }
        eprintln!(
            "\n######## SKIPPED: no transaction pooler (PROXYDECK_TEST_POSTGRES_POOLER_URL; .ci/pgbouncer starts one).\n"
        );
        return None;
    }
    Some(Schema::create(postgres_base_url().expect("PostgreSQL")))
}

/// A store that takes the pooler for PostgreSQL is refused at start, with
/// the settings that make it work, not left to fail on its first
/// statement; with them it opens and answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_through_the_pooler_is_refused_with_the_settings_that_work() {
    let Some(schema) = pooled_schema() else {
        return;
    };
    let url = DatabaseUrl::Postgres(schema.url());
    let error = store::open(&url, &StoreOptions::default())
        .await
        .map(drop)
        .expect_err("pgbouncer refuses the session options");
    let text = format!("{error:#}");
    assert!(
        text.contains("give --database-pooler transaction and --database-direct-url"),
        "{text}"
    );
    assert!(text.contains("unsupported startup parameter"), "{text}");

    let options = StoreOptions {
        pooler: schema.pooler(),
        ..StoreOptions::default()
    };
    assert!(matches!(options.pooler, Pooler::Transaction { .. }));
    let app = TestApp::on(TestStore::at(url, options).await).await;
    app.seed(vec![org(1), user("u1", &[1]), project("p1", 1, 0)])
        .await;
    let token = app.token("u1").await;
    let (status, body) = app.get_json("/v1/projects/p1", &token).await;
    assert_eq!(status, 200, "{body}");
}
