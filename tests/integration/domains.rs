//! Custom domains (docs/domains.md): the five operations, the names' one
//! form, who owns a name, and its DNS checks against a real DNS server on
//! loopback (`helpers::dns_server`): no test asks any other resolver.

use std::time::{Duration, Instant};

use proxydeck::domain::domains::CheckSchedule;
use proxydeck::domain_checks::DomainOptions;
use proxydeck::store::operations::domains::{DomainLimits, TakeDueChecks};
use reqwest::Method;
use serde_json::{Value, json};

use super::BACKEND;
use crate::helpers::*;

/// The grace period the tests run with: long enough for the checks in
/// between, short enough to wait for.
const GRACE_MILLIS: i64 = 1500;

fn options(dns: &DnsServer) -> proxydeck::app::ServiceOptions {
    options_with(dns, |_| {})
}

fn options_with(
    dns: &DnsServer,
    change: impl FnOnce(&mut DomainOptions),
) -> proxydeck::app::ServiceOptions {
    let mut domains = DomainOptions {
        resolver: Some(dns.addr()),
        lookup_timeout: Duration::from_millis(500),
        poll: Duration::from_millis(50),
        schedule: CheckSchedule {
            first_retry_millis: 100,
            most_retry_millis: 400,
            recheck_millis: 200,
            grace_millis: GRACE_MILLIS,
            give_up_after_millis: 60_000,
        },
        ..DomainOptions::default()
    };
    change(&mut domains);
    proxydeck::app::ServiceOptions {
        domains,
        ..test_options()
    }
}

async fn fixture(dns: &DnsServer) -> (TestApp, String, String) {
    two_organizations_with(BACKEND, options(dns)).await
}

fn domains_path(project: &str) -> String {
    format!("/v1/projects/{project}/domains")
}

async fn add(app: &TestApp, token: &str, project: &str, name: &str) -> (u16, Value) {
    let (status, answer, _) = create(app, token, project, &json!({ "name": name })).await;
    (status, answer)
}

/// createProjectDomain with `body`: the status, the answer and its tag.
async fn create(
    app: &TestApp,
    token: &str,
    project: &str,
    body: &Value,
) -> (u16, Value, Option<String>) {
    let path = domains_path(project);
    send(app, Method::POST, &path, token, &[], Some(body)).await
}

async fn check_now(app: &TestApp, token: &str, project: &str, name: &str) -> (u16, Value) {
    let path = format!("{}/{name}", domains_path(project));
    let body = json!({ "dns_status": true });
    let (status, answer, _) = send(app, Method::POST, &path, token, &[], Some(&body)).await;
    (status, answer)
}

/// Creates the TXT record `domain` (an answer) asks for.
fn publish(dns: &DnsServer, domains: &[&Value]) {
    let name = domains[0]["verification"]["record"]["name"]
        .as_str()
        .unwrap();
    let values: Vec<&str> = domains
        .iter()
        .map(|d| d["verification"]["record"]["value"].as_str().unwrap())
        .collect();
    dns.set_txt(name, &values);
}

/// A domain added to `project`, its record published, once its check
/// has verified it.
async fn verified(app: &TestApp, dns: &DnsServer, token: &str, project: &str, name: &str) -> Value {
    let (status, added) = add(app, token, project, name).await;
    assert_eq!(status, 200, "{added}");
    publish(dns, &[&added]);
    domain_once(app, token, project, name, |d| d["dns_status"] == true).await
}

/// The domain as getProjectDomain answers it, once `until` holds of it
/// (the background checks run on their own): waits for the event, not for
/// a time.
async fn domain_once(
    app: &TestApp,
    token: &str,
    project: &str,
    name: &str,
    until: impl Fn(&Value) -> bool,
) -> Value {
    let path = format!("{}/{name}", domains_path(project));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (status, domain) = app.get_json(&path, token).await;
        assert_eq!(status, 200, "{domain}");
        if until(&domain) {
            return domain;
        }
        assert!(Instant::now() < deadline, "never came: {domain}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test]
async fn a_domain_is_added_pending_and_verified_by_its_txt_record() {
    require!(BACKEND);
    let dns = DnsServer::start();
    let (app, u1, _) = fixture(&dns).await;
    let cursor = poll(&app, &u1, "").await["cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let body = json!({ "name": "Shop.Example.COM." });
    let (status, added, tag) = create(&app, &u1, "p1", &body).await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(tag.as_deref(), Some("\"v1\""));
    assert_eq!(added["object"], "domain");
    assert_eq!(added["name"], "shop.example.com");
    assert_eq!(added["project_id"], "p1");
    assert_eq!(added["dns_status"], false);
    assert_eq!(added["ssl_status"], false);
    assert_eq!(added["created_at"], added["updated_at"]);
    let verification = &added["verification"];
    assert_eq!(verification["status"], "pending");
    assert_eq!(verification["record"]["type"], "TXT");
    assert_eq!(
        verification["record"]["name"],
        "_proxydeck-challenge.shop.example.com"
    );
    let value = verification["record"]["value"].as_str().unwrap();
    assert!(value.starts_with("proxydeck-verification="), "{value}");
    assert!(
        value.len() > "proxydeck-verification=".len() + 30,
        "{value}"
    );
    // Checked at once, not found: still pending, and the checks go on.
    let absent = domain_once(&app, &u1, "p1", "shop.example.com", |d| {
        d["verification"]["last_result"] == "absent"
    })
    .await;
    assert_eq!(absent["dns_status"], false);
    assert!(
        absent["verification"]["next_check_at"].is_string(),
        "{absent}"
    );
    publish(&dns, &[&added]);
    let verified = domain_once(&app, &u1, "p1", "SHOP.example.com", |d| {
        d["dns_status"] == true
    })
    .await;
    assert_eq!(verified["verification"]["status"], "verified");
    assert_eq!(verified["verification"]["last_result"], "found");
    assert_ne!(verified["updated_at"], added["updated_at"]);
    let (status, page) = app.get_json(&domains_path("p1"), &u1).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["object"], "list");
    assert_eq!(page["url"], "/v1/projects/p1/domains");
    assert_eq!(page["has_more"], false);
    assert_eq!(page["last_key"], "shop.example.com");
    assert_eq!(page["data"][0]["dns_status"], true);
    // The feed tells both, naming the domain.
    let changes = poll(&app, &u1, &format!("?after={cursor}")).await;
    let told: Vec<(String, String)> = changes["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap().to_owned(),
                c["domain"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        told,
        [
            ("domain.created".into(), "shop.example.com".into()),
            ("domain.updated".into(), "shop.example.com".into()),
        ]
    );
    let audit = audit_of(&app, Some("p1/shop.example.com")).await;
    assert_eq!(
        audit.last().map(|r| r.operation.as_str()),
        Some("createProjectDomain")
    );
}

#[tokio::test]
async fn a_check_now_answers_what_it_found() {
    require!(BACKEND);
    let dns = DnsServer::start();
    let (app, u1, _) = fixture(&dns).await;
    let (_, added) = add(&app, &u1, "p1", "api.example.net").await;
    let (status, checked) = check_now(&app, &u1, "p1", "api.example.net").await;
    assert_eq!(status, 200, "{checked}");
    assert_eq!(checked["dns_status"], false);
    assert_eq!(checked["verification"]["last_result"], "absent");
    // Counted by what it found.
    let metrics = app.client.get(app.url("/metrics")).send().await.unwrap();
    let metrics = metrics.text().await.unwrap();
    assert!(
        metrics.contains("proxydeck_domain_checks_total{result=\"absent\"}"),
        "{metrics}"
    );
    // A record that holds another value is not this domain's.
    let record = added["verification"]["record"]["name"].as_str().unwrap();
    dns.set_txt(record, &["proxydeck-verification=someone-else"]);
    let (_, checked) = check_now(&app, &u1, "p1", "api.example.net").await;
    assert_eq!(checked["verification"]["last_result"], "mismatch");
    publish(&dns, &[&added]);
    let (status, checked) = check_now(&app, &u1, "p1", "api.example.net").await;
    assert_eq!(status, 200, "{checked}");
    assert_eq!(checked["dns_status"], true, "{checked}");
    assert_eq!(
        checked["verification"]["message"],
        "the TXT record holds this domain's value"
    );
    // `false` asks for nothing a name can be asked.
    let path = format!("{}/api.example.net", domains_path("p1"));
    let body = json!({"dns_status": false});
    let (status, refused, _) = send(&app, Method::POST, &path, &u1, &[], Some(&body)).await;
    assert_eq!(status, 400);
    assert_eq!(params(&refused), ["dns_status"]);
    // An edge reports its certificate.
    let body = json!({"ssl_status": true});
    let (status, reported, _) = send(&app, Method::POST, &path, &u1, &[], Some(&body)).await;
    assert_eq!(status, 200, "{reported}");
    assert_eq!(reported["ssl_status"], true);
}

#[tokio::test]
async fn names_are_refused_by_the_rule_they_break() {
    require!(BACKEND);
    let dns = DnsServer::start();
    let (app, u1, _) = fixture(&dns).await;
    for name in [
        "example",
        "10.0.0.1",
        "[::1]",
        "shop.example.com:443",
        "a.*.example.com",
        "*.com",
        "-shop.example.com",
        "shop_1.example.com",
        "",
    ] {
        let (status, refused) = add(&app, &u1, "p1", name).await;
        assert_eq!(status, 400, "{name}: {refused}");
        assert_eq!(params(&refused), ["name"], "{name}: {refused}");
    }
    let body = json!({"name": "ok.example.com", "dns_status": true});
    let (status, refused, _) = create(&app, &u1, "p1", &body).await;
    assert_eq!(status, 400);
    assert_eq!(params(&refused), ["dns_status"]);
    let (status, refused) = app
        .get_json(&format!("{}/not%20a%20name", domains_path("p1")), &u1)
        .await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(error_param(&refused), "name");
    let (status, _) = app
        .get_json(&format!("{}/absent.example.com", domains_path("p1")), &u1)
        .await;
    assert_eq!(status, 404);
    // A Unicode name is its ASCII form, in a body and in a path.
    let (status, added) = add(&app, &u1, "p1", "Bücher.example").await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(added["name"], "xn--bcher-kva.example");
    let (status, found) = app
        .get_json(&format!("{}/b%C3%BCcher.example", domains_path("p1")), &u1)
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["name"], "xn--bcher-kva.example");
}

#[tokio::test]
async fn a_name_is_verified_in_one_organization_at_most() {
    require!(BACKEND);
    let dns = DnsServer::start();
    let (app, u1, u3) = fixture(&dns).await;
    // Pending in two organizations at once.
    let (status, mine) = add(&app, &u1, "p1", "both.example.org").await;
    assert_eq!(status, 200, "{mine}");
    let (status, theirs) = add(&app, &u3, "p3", "both.example.org").await;
    assert_eq!(status, 200, "{theirs}");
    assert_ne!(
        mine["verification"]["record"]["value"],
        theirs["verification"]["record"]["value"]
    );
    // The record names one of them: that one is verified.
    publish(&dns, &[&theirs]);
    let (_, checked) = check_now(&app, &u1, "p1", "both.example.org").await;
    assert_eq!(checked["verification"]["last_result"], "mismatch");
    let (_, checked) = check_now(&app, &u3, "p3", "both.example.org").await;
    assert_eq!(checked["dns_status"], true, "{checked}");
    // Both values published: the first verification keeps it.
    publish(&dns, &[&theirs, &mine]);
    let (_, checked) = check_now(&app, &u1, "p1", "both.example.org").await;
    assert_eq!(checked["dns_status"], false, "{checked}");
    assert_eq!(checked["verification"]["last_result"], "verified_elsewhere");
    // Once verified, claiming it elsewhere is a 409, in any spelling.
    let path = format!("{}/both.example.org", domains_path("p1"));
    let (status, _, _) = send(&app, Method::DELETE, &path, &u1, &[], None).await;
    assert_eq!(status, 200);
    for spelling in [
        "both.example.org",
        "BOTH.Example.org.",
        "ｂｏｔｈ.example.org",
    ] {
        let (status, refused) = add(&app, &u1, "p1", spelling).await;
        assert_eq!(status, 409, "{spelling}: {refused}");
        let message = refused["error"]["message"].as_str().unwrap();
        assert!(message.contains("another organization"), "{message}");
    }
    // Nor can another organization read, check, report on or remove it.
    let path = format!("{}/both.example.org", domains_path("p3"));
    for (method, body) in [
        (Method::GET, None),
        (Method::POST, Some(json!({"dns_status": true}))),
        (Method::POST, Some(json!({"ssl_status": true}))),
        (Method::DELETE, None),
    ] {
        let (status, refused, _) = send(&app, method.clone(), &path, &u1, &[], body.as_ref()).await;
        assert_eq!(status, 404, "{method} {refused}");
    }
    let (status, _) = app.get_json(&domains_path("p3"), &u1).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_verified_name_whose_record_is_gone_routes_through_its_grace_then_stops() {
    require!(BACKEND);
    let dns = DnsServer::start();
    let (app, u1, _) = fixture(&dns).await;
    let (_, added) = add(&app, &u1, "p1", "*.example.com").await;
    assert_eq!(
        added["verification"]["record"]["name"],
        "_proxydeck-challenge.example.com"
    );
    publish(&dns, &[&added]);
    domain_once(&app, &u1, "p1", "*.example.com", |d| {
        d["dns_status"] == true
    })
    .await;
    dns.remove("_proxydeck-challenge.example.com");
    let failing = domain_once(&app, &u1, "p1", "*.example.com", |d| {
        d["verification"]["status"] == "failing"
    })
    .await;
    assert_eq!(failing["dns_status"], true, "{failing}");
    assert!(
        failing["verification"]["routes_until"].is_string(),
        "{failing}"
    );
    let stopped = domain_once(&app, &u1, "p1", "*.example.com", |d| {
        d["dns_status"] == false
    })
    .await;
    assert_eq!(stopped["verification"]["status"], "pending");
    assert_eq!(stopped["ssl_status"], false);
}

#[tokio::test]
async fn a_resolver_that_fails_concludes_nothing_and_costs_a_request_its_timeout_at_most() {
    require!(BACKEND);
    let dns = DnsServer::start();
    let (app, u1, _) = fixture(&dns).await;
    verified(&app, &dns, &u1, "p1", "slow.example.com").await;
    dns.set_silent("_proxydeck-challenge.slow.example.com");
    let started = Instant::now();
    let (status, checked) = check_now(&app, &u1, "p1", "slow.example.com").await;
    assert_eq!(status, 200, "{checked}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(checked["verification"]["last_result"], "lookup_failed");
    assert_eq!(checked["dns_status"], true, "{checked}");
    dns.set_servfail("_proxydeck-challenge.slow.example.com");
    let (_, checked) = check_now(&app, &u1, "p1", "slow.example.com").await;
    assert_eq!(checked["verification"]["last_result"], "lookup_failed");
    assert_eq!(checked["verification"]["status"], "verified");
}

#[tokio::test]
async fn names_are_bounded_per_project_and_pending_per_organization() {
    require!(BACKEND);
    let dns = DnsServer::start();
    let limited = options_with(&dns, |domains| {
        domains.limits = DomainLimits {
            per_project: 3,
            pending_per_organization: 4,
        };
    });
    let (app, u1, _) = two_organizations_with(BACKEND, limited).await;
    app.seed(vec![project("p1b", 1, 1)]).await;
    for n in 0..3 {
        let (status, added) = add(&app, &u1, "p1", &format!("n{n}.example.com")).await;
        assert_eq!(status, 200, "{added}");
    }
    let (status, refused) = add(&app, &u1, "p1", "n3.example.com").await;
    assert_eq!(status, 400, "{refused}");
    assert_eq!(params(&refused), ["name"]);
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 3"),
        "{refused}"
    );
    let (status, _) = add(&app, &u1, "p1b", "m0.example.com").await;
    assert_eq!(status, 200);
    let (status, refused) = add(&app, &u1, "p1b", "m1.example.com").await;
    assert_eq!(status, 400, "{refused}");
    assert!(
        refused["error"]["message"]
            .as_str()
            .unwrap()
            .contains("at most 4"),
        "{refused}"
    );
    // A name in another project of the organization is a 409 naming it.
    let (status, refused) = add(&app, &u1, "p1b", "n0.example.com").await;
    assert_eq!(status, 409, "{refused}");
}

#[tokio::test]
async fn writes_take_if_match_and_idempotency_keys_and_go_with_their_project() {
    require!(BACKEND);
    let dns = DnsServer::start();
    let (app, u1, _) = fixture(&dns).await;
    let body = json!({"name": "once.example.com"});
    let key = [("Idempotency-Key", "add-once")];
    let path = domains_path("p1");
    let (status, first, _) = send(&app, Method::POST, &path, &u1, &key, Some(&body)).await;
    assert_eq!(status, 200, "{first}");
    let (status, again, _) = send(&app, Method::POST, &path, &u1, &key, Some(&body)).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again, first);
    let one = format!("{path}/once.example.com");
    let stale = [("If-Match", "\"v999\"")];
    let (status, _, _) = send(&app, Method::DELETE, &one, &u1, &stale, None).await;
    assert_eq!(status, 412);
    let (status, deleted, _) = send(&app, Method::DELETE, &one, &u1, &[], None).await;
    assert_eq!(status, 200, "{deleted}");
    assert_eq!(
        deleted,
        json!({"object": "domain", "id": "once.example.com", "deleted": true})
    );
    let (status, _) = app.get_json(&one, &u1).await;
    assert_eq!(status, 404);
    // A project's domains go with it.
    let (status, _) = add(&app, &u1, "p1", "gone.example.com").await;
    assert_eq!(status, 200);
    let (status, _, _) = send(&app, Method::DELETE, "/v1/projects/p1", &u1, &[], None).await;
    assert_eq!(status, 200);
    let count = app
        .data
        .count("SELECT COUNT(*) FROM domains WHERE project_id = 'p1'");
    assert_eq!(count, 0);
}

#[tokio::test]
async fn a_member_reports_certificates_and_changes_nothing_else() {
    require!(BACKEND);
    let dns = DnsServer::start();
    let (app, u1, _) = fixture(&dns).await;
    verified(&app, &dns, &u1, "p1", "edge.example.com").await;
    app.data
        .execute("UPDATE memberships SET role = 'member' WHERE user_id = 'u1'");
    let member = app.token("u1").await;
    let (status, _) = add(&app, &member, "p1", "other.example.com").await;
    assert_eq!(status, 403);
    let (status, _) = check_now(&app, &member, "p1", "edge.example.com").await;
    assert_eq!(status, 403);
    let path = format!("{}/edge.example.com", domains_path("p1"));
    let (status, _, _) = send(&app, Method::DELETE, &path, &member, &[], None).await;
    assert_eq!(status, 403);
    let body = json!({"ssl_status": true});
    let (status, reported, _) = send(&app, Method::POST, &path, &member, &[], Some(&body)).await;
    assert_eq!(status, 200, "{reported}");
    assert_eq!(reported["ssl_status"], true);
}

/// The generated client of the public document adds, lists, reads,
/// checks and removes domains: every member it knows reads as its type.
#[tokio::test]
async fn the_generated_client_manages_domains() {
    require!(BACKEND);
    let dns = DnsServer::start();
    let (app, u1, _) = fixture(&dns).await;
    let client = generated_client(&app, &u1);
    let created = client
        .create_project_domain()
        .id("p1")
        .body_map(|b| b.name("Client.Example.com".to_owned()))
        .send()
        .await
        .expect("createProjectDomain")
        .into_inner();
    assert_eq!(created.name.as_deref(), Some("client.example.com"));
    assert_eq!(created.project_id.as_deref(), Some("p1"));
    assert_eq!(created.dns_status, Some(false));
    assert_eq!(created.ssl_status, Some(false));
    let list = client
        .list_project_domains()
        .id("p1")
        .send()
        .await
        .expect("listProjectDomains")
        .into_inner();
    assert_eq!(list.data.len(), 1);
    assert_eq!(list.has_more, Some(false));
    let (_, added) = app
        .get_json(&format!("{}/client.example.com", domains_path("p1")), &u1)
        .await;
    publish(&dns, &[&added]);
    let checked = client
        .update_project_domain()
        .id("p1")
        .name("client.example.com")
        .body_map(|b| b.dns_status(true))
        .send()
        .await
        .expect("updateProjectDomain")
        .into_inner();
    assert_eq!(checked.dns_status, Some(true));
    let got = client
        .get_project_domain()
        .id("p1")
        .name("CLIENT.example.com")
        .send()
        .await
        .expect("getProjectDomain")
        .into_inner();
    assert_eq!(got.dns_status, Some(true));
    let deleted = client
        .delete_project_domain()
        .id("p1")
        .name("client.example.com")
        .send()
        .await
        .expect("deleteProjectDomain")
        .into_inner();
    assert_eq!(deleted.deleted, Some(true));
    assert_eq!(deleted.id.as_deref(), Some("client.example.com"));
}

/// Instances taking the names due at once never take one name twice:
/// each name is checked by one of them (PostgreSQL runs them side by
/// side; SQLite one after the other).
#[tokio::test]
async fn instances_taking_due_checks_at_once_take_each_name_once() {
    require!(BACKEND);
    let dns = DnsServer::start();
    // The service's own checks sleep: only the test takes names.
    let asleep = options_with(&dns, |domains| domains.poll = Duration::from_secs(3600));
    let (app, _, _) = two_organizations_with(BACKEND, asleep).await;
    let now = proxydeck::domain::time::Timestamp::now().as_millis();
    for n in 0..60 {
        app.data.execute(&format!(
            "INSERT INTO domains (project_id, name, organization_number, token, verified, ssl,
                                  created_at, updated_at, version, next_check_at, misses)
             SELECT id, 'n{n}.example.com', organization_number, 't{n}', {f}, {f}, {now}, {now},
                    1, {now}, 0
               FROM projects WHERE id = 'p1'",
            f = if BACKEND == Backend::Postgres {
                "FALSE"
            } else {
                "0"
            },
        ));
    }
    // An hour from now: every name is due, even one the service's own
    // first round (at its start) took and put off meanwhile.
    let later = proxydeck::domain::time::Timestamp::now()
        .plus_seconds(3600)
        .unwrap();
    let take = || {
        app.store.run(TakeDueChecks {
            now: later,
            limit: 40,
            lease_millis: 60_000,
        })
    };
    let (first, second) = tokio::join!(take(), take());
    let mut taken: Vec<String> = first
        .unwrap()
        .into_iter()
        .chain(second.unwrap())
        .map(|c| c.name)
        .collect();
    // An instance that met the other's rows takes fewer this round (it
    // finds them no longer due): the next rounds take the rest, once.
    loop {
        let more = take().await.unwrap();
        if more.is_empty() {
            break;
        }
        taken.extend(more.into_iter().map(|c| c.name));
    }
    let count = taken.len();
    taken.sort();
    taken.dedup();
    assert_eq!(taken.len(), count, "a name taken twice");
    assert_eq!(count, 60);
}

/// The import format carries domains (docs/cli.md): a restore routes what
/// routed, the names in their one form, each claim's token kept; the
/// rules hold (a name in one project of an organization, verified in one
/// project at most, a project that exists, a certificate only on a name
/// that routes), each refusal naming its line and field; importing the
/// same lines again changes nothing; the feed tells the new ones.
#[tokio::test]
async fn domains_are_imported_by_their_rules_and_import_twice_changes_nothing() {
    require!(BACKEND);
    let dns = DnsServer::start();
    let asleep = options_with(&dns, |domains| domains.poll = Duration::from_secs(3600));
    let (app, u1, _) = two_organizations_with(BACKEND, asleep).await;
    let cursor = poll(&app, &u1, "").await["cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let restored = json!({"object": "domain", "project_id": "p1", "name": "Shop.Example.COM",
        "verification_token": "0123456789abcdef0123456789abcdef", "dns_status": true, "ssl_status": true,
        "created_at": "2026-01-02T03:04:05.000Z", "updated_at": "2026-01-03T03:04:05.000Z"});
    let bare = json!({"object": "domain", "project_id": "p1", "name": "*.example.net"});
    let counts = app.seed(vec![restored.clone(), bare.clone()]).await;
    assert_eq!(counts.domains, 2);
    let (_, shop) = app
        .get_json(&format!("{}/shop.example.com", domains_path("p1")), &u1)
        .await;
    assert_eq!(shop["dns_status"], true, "{shop}");
    assert_eq!(shop["ssl_status"], true);
    assert_eq!(shop["created_at"], "2026-01-02T03:04:05.000Z");
    assert_eq!(
        shop["verification"]["record"]["value"],
        "proxydeck-verification=0123456789abcdef0123456789abcdef"
    );
    let (_, wildcard) = app
        .get_json(&format!("{}/*.example.net", domains_path("p1")), &u1)
        .await;
    assert_eq!(wildcard["dns_status"], false, "{wildcard}");
    let changes = poll(&app, &u1, &format!("?after={cursor}")).await;
    let told: Vec<&str> = changes["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["domain"].as_str().unwrap())
        .collect();
    assert_eq!(told, ["shop.example.com", "*.example.net"]);
    // Again: nothing changes, not even the token a line leaves out.
    app.seed(vec![restored.clone(), bare]).await;
    let (_, again) = app
        .get_json(&format!("{}/*.example.net", domains_path("p1")), &u1)
        .await;
    assert_eq!(again, wildcard);
    let changes = poll(&app, &u1, &format!("?after={cursor}")).await;
    assert_eq!(changes["data"].as_array().unwrap().len(), 2, "{changes}");
    // The rules, each named by line and field.
    app.seed(vec![project("p1b", 1, 1), project("p3b", 3, 1)])
        .await;
    let line = |project: &str, name: &str, dns: bool, ssl: bool| {
        json!({"object": "domain", "project_id": project, "name": name,
               "dns_status": dns, "ssl_status": ssl})
    };
    for (bad, field) in [
        (line("nowhere", "a.example.com", false, false), "project_id"),
        (line("p1b", "shop.example.com", false, false), "name"),
        (line("p3b", "SHOP.example.com", true, false), "dns_status"),
        (line("p1b", "b.example.com", false, true), "ssl_status"),
        (line("p1b", "not a name", false, false), "name"),
    ] {
        let error = seed(app.store.as_ref(), vec![org(1), bad.clone()])
            .await
            .unwrap_err();
        assert_eq!(error.line, 2, "{bad}: {error}");
        assert_eq!(error.field.as_deref(), Some(field), "{bad}: {error}");
    }
    // Pending in another organization is a claim of its own.
    let counts = app
        .seed(vec![line("p3b", "shop.example.com", false, false)])
        .await;
    assert_eq!(counts.domains, 1);
}
