//! `follow`'s routing index (docs/edge.md): every verified name of the
//! projects it follows, to its project, in `routing.map` (exact names) and
//! `routing-wildcards.map` (wildcards by base), written with the
//! projects' files; against the real service whose DNS checks ask a DNS
//! server on loopback (`helpers::dns_server`).

use std::path::Path;

use proxydeck::domain_checks::DomainOptions;
use reqwest::Method;
use serde_json::json;

use super::{Following, saved_cursor};
use crate::helpers::*;

/// The service, its DNS checks asking `dns` (with their default
/// schedule: these tests verify a name by checking it now).
pub(super) fn options(dns: &DnsServer) -> proxydeck::app::ServiceOptions {
    proxydeck::app::ServiceOptions {
        domains: DomainOptions {
            resolver: Some(dns.addr()),
            ..DomainOptions::default()
        },
        ..test_options()
    }
}

/// Adds `name` to `project`; with `verified`, publishes its record and
/// checks it now, which verifies it.
pub(super) async fn add_domain(
    app: &TestApp,
    dns: &DnsServer,
    token: &str,
    project: &str,
    name: &str,
    verified: bool,
) {
    let path = format!("/v1/projects/{project}/domains");
    let added = write(app, token, Method::POST, &path, Some(json!({"name": name}))).await;
    if !verified {
        return;
    }
    let record = &added["verification"]["record"];
    dns.set_txt(
        record["name"].as_str().unwrap(),
        &[record["value"].as_str().unwrap()],
    );
    let path = format!("{path}/{name}");
    // "Check now" until it verifies, a few times at most. Under CI's load
    // (2026-11-28, twice in one run, about 1 in 10 runs of these tests at
    // 8 at once here) its first answer was `absent` 9 to 14 ms after the
    // name was added, the record already published; the cause is not
    // found yet (the background's first check of a new name runs at the
    // same moment: see the session's note). What these tests need is a
    // verified name, so they wait for that, and say what they saw.
    let mut answers = Vec::new();
    for _ in 0..5 {
        let checked = write(
            app,
            token,
            Method::POST,
            &path,
            Some(json!({"dns_status": true})),
        )
        .await;
        if checked["dns_status"] == true {
            return;
        }
        answers.push(checked);
    }
    panic!("{name} never verified: {answers:#?}");
}

/// The lines of a map of the folder, comments left out.
fn map_lines(dir: &Path, name: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join(name))
        .unwrap_or_default()
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

fn exact(dir: &Path) -> Vec<String> {
    map_lines(dir, "routing.map")
}

fn wildcards(dir: &Path) -> Vec<String> {
    map_lines(dir, "routing-wildcards.map")
}

/// Waits until follow has applied everything written so far: its cursor
/// is the feed's head.
pub(super) async fn caught_up(app: &TestApp, token: &str, dir: &Path) {
    let now = head(app, token).await;
    until("follow applies every change", || {
        saved_cursor(dir) == Some(now.clone())
    })
    .await;
}

/// What `--exec` does in these tests: for each project either map names,
/// its project.json must be there (else a line in ../violations); then
/// the maps as it saw them, appended to ../seen.
const CHECKING_EXEC: &str = "for map in routing.map routing-wildcards.map; do \
       grep -v '^#' $map | while read key project; do \
         test -f \"$project/project.json\" || echo \"$key $project\" >> ../violations; \
       done; \
     done; cat routing.map routing-wildcards.map >> ../seen";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_routes_only_verified_names_to_their_projects() {
    let dns = DnsServer::start();
    let (app, token, _) = two_organizations_with(Backend::Sqlite, options(&dns)).await;
    app.seed(vec![
        project("p2", 1, 1),
        settings("p1", 1, true),
        settings("p2", 1, true),
    ])
    .await;
    // Verified before follow starts: the first sync lists them.
    add_domain(&app, &dns, &token, "p1", "shop.example.com", true).await;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("edge");
    let dir_arg = dir.display().to_string();
    let org1 = org_id(1);
    let args = [
        "--organization",
        &org1,
        "--dir",
        &dir_arg,
        "--no-report",
        "--exec",
        CHECKING_EXEC,
    ];
    let follow = Following::on(&app, &token, work.path(), &args);
    until("the first sync writes the index", || {
        exact(&dir) == ["shop.example.com p1"]
    })
    .await;
    assert_eq!(wildcards(&dir), Vec::<String>::new());

    // Added and verified while followed: exact names to the exact map,
    // a wildcard by its base to the wildcards' map; a pending name never.
    add_domain(&app, &dns, &token, "p1", "pending.example.com", false).await;
    add_domain(&app, &dns, &token, "p2", "*.example.org", true).await;
    add_domain(&app, &dns, &token, "p2", "www.example.org", true).await;
    caught_up(&app, &token, &dir).await;
    assert_eq!(
        exact(&dir),
        ["shop.example.com p1", "www.example.org p2"],
        "{}",
        follow.log()
    );
    assert_eq!(wildcards(&dir), ["example.org p2"]);
    // Its check run again, still without its record: still not routed.
    let pending = "/v1/projects/p1/domains/pending.example.com";
    let checked = write(
        &app,
        &token,
        Method::POST,
        pending,
        Some(json!({"dns_status": true})),
    )
    .await;
    assert_eq!(checked["dns_status"], false, "{checked}");
    caught_up(&app, &token, &dir).await;
    let seen = std::fs::read_to_string(work.path().join("seen")).unwrap();
    assert!(!seen.contains("pending.example.com"), "{seen}");

    // A name deleted goes.
    let shop = "/v1/projects/p1/domains/shop.example.com";
    write(&app, &token, Method::DELETE, shop, None).await;
    until("the deleted name goes", || {
        exact(&dir) == ["www.example.org p2"]
    })
    .await;

    // A project deleted takes its names, the wildcard too, and its folder.
    write(&app, &token, Method::DELETE, "/v1/projects/p2", None).await;
    until("the deleted project's names and folder go", || {
        exact(&dir).is_empty() && wildcards(&dir).is_empty() && !dir.join("p2").exists()
    })
    .await;
    caught_up(&app, &token, &dir).await;

    // Every --exec saw each host's project files beside the index.
    let violations = std::fs::read_to_string(work.path().join("violations"));
    assert!(violations.is_err(), "{violations:?}");
    let seen = std::fs::read_to_string(work.path().join("seen")).unwrap();
    for line in [
        "shop.example.com p1",
        "www.example.org p2",
        "example.org p2",
    ] {
        assert!(seen.contains(line), "{line}: {seen}");
    }
}

/// A restart resumes from the saved cursor with the index the folder
/// holds; a folder kept by a follow without the index (its cursor saved,
/// no maps) is written whole, not resumed, so that names verified before
/// are not missed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follow_resumes_with_its_index_and_writes_one_it_lacks() {
    let dns = DnsServer::start();
    let (app, token, _) = two_organizations_with(Backend::Sqlite, options(&dns)).await;
    app.seed(vec![settings("p1", 1, true)]).await;
    add_domain(&app, &dns, &token, "p1", "a.example.net", true).await;
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("edge");
    let dir_arg = dir.display().to_string();
    let args = ["--project", "p1", "--dir", &dir_arg, "--no-report"];
    let follow = Following::on(&app, &token, work.path(), &args);
    until("the index is written", || {
        exact(&dir) == ["a.example.net p1"]
    })
    .await;
    caught_up(&app, &token, &dir).await;
    drop(follow);

    // Stopped: a name verified meanwhile comes with the changes after
    // the cursor, the one held before stays.
    add_domain(&app, &dns, &token, "p1", "b.example.net", true).await;
    let follow = Following::on(&app, &token, work.path(), &args);
    until("the name verified while stopped comes", || {
        exact(&dir) == ["a.example.net p1", "b.example.net p1"]
    })
    .await;
    assert!(
        follow.log().contains("resuming after cursor"),
        "{}",
        follow.log()
    );
    caught_up(&app, &token, &dir).await;
    drop(follow);

    // The maps gone (a folder an older follow kept), the cursor saved:
    // every file is written again, the index with them.
    std::fs::remove_file(dir.join("routing.map")).unwrap();
    std::fs::remove_file(dir.join("routing-wildcards.map")).unwrap();
    let follow = Following::on(&app, &token, work.path(), &args);
    until("the index is written again", || {
        exact(&dir) == ["a.example.net p1", "b.example.net p1"]
    })
    .await;
    let log = follow.log();
    assert!(log.contains("no routing index yet"), "{log}");
    assert!(!log.contains("resuming after cursor"), "{log}");
}
