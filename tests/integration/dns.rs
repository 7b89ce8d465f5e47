//! The custom domains' TXT lookups (`proxydeck::dns`): the real resolver
//! against the tests' DNS server on loopback (`helpers::DnsServer`), the
//! only server any of them asks. What a lookup tells apart (the records,
//! none, no answer), that it keeps no cache, and that it ends within its
//! time however the server behaves.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use proxydeck::dns::{ATTEMPTS, Lookup, Resolver};
use proxydeck::domain::domains::{challenge_name, challenge_value, holds};

use crate::helpers::DnsServer;

const NAME: &str = "_proxydeck-challenge.example.com";

/// A resolver that asks `server` alone.
fn resolver(server: &DnsServer) -> Resolver {
    Resolver::new(Some(server.addr())).expect("a resolver for the loopback server")
}

fn found(values: &[&str]) -> Lookup {
    Lookup::Found(values.iter().map(|value| value.to_string()).collect())
}

#[tokio::test]
async fn a_challenge_record_is_found_and_holds_its_token() {
    let server = DnsServer::start();
    let name = challenge_name("example.com");
    server.set_txt(&name, &[&challenge_value("t0k3n")]);

    let Lookup::Found(records) = resolver(&server).txt(&name).await else {
        panic!("the record was not found");
    };
    assert_eq!(records, ["proxydeck-verification=t0k3n"]);
    assert!(holds(&records, "t0k3n"));
    assert!(!holds(&records, "other"));
}

#[tokio::test]
async fn a_record_in_several_character_strings_is_read_as_one_text() {
    let server = DnsServer::start();
    server.set_txt_strings(NAME, &[&["proxydeck-verification=", "t0k3n"]]);
    assert_eq!(
        resolver(&server).txt(NAME).await,
        found(&["proxydeck-verification=t0k3n"])
    );

    // A value longer than one character-string (255 bytes) is split by
    // the server, and joined again.
    let long = format!("proxydeck-verification={}", "x".repeat(300));
    server.set_txt(NAME, &[&long]);
    assert_eq!(resolver(&server).txt(NAME).await, found(&[&long]));
}

#[tokio::test]
async fn every_txt_record_of_the_name_is_found() {
    let server = DnsServer::start();
    server.set_txt(
        NAME,
        &[
            "v=spf1 -all",
            "proxydeck-verification=old",
            "proxydeck-verification=new",
        ],
    );
    let Lookup::Found(mut records) = resolver(&server).txt(NAME).await else {
        panic!("the records were not found");
    };
    records.sort();
    assert_eq!(
        records,
        [
            "proxydeck-verification=new",
            "proxydeck-verification=old",
            "v=spf1 -all"
        ]
    );
    assert!(holds(&records, "new"));
}

#[tokio::test]
async fn an_answer_too_long_for_a_datagram_comes_over_tcp() {
    let server = DnsServer::start();
    let values: Vec<String> = (0..10).map(|i| format!("{i}{}", "y".repeat(200))).collect();
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    server.set_txt(NAME, &values);

    let Lookup::Found(records) = resolver(&server).txt(NAME).await else {
        panic!("the records were not found");
    };
    assert_eq!(records.len(), values.len());
    assert!(
        server.tcp_queries() >= 1,
        "the long answer was not asked over TCP"
    );
}

#[tokio::test]
async fn a_name_that_does_not_exist_or_has_no_txt_record_is_absent() {
    let server = DnsServer::start();
    let resolver = resolver(&server);
    assert_eq!(resolver.txt(NAME).await, Lookup::Absent);

    server.set_a(NAME, Ipv4Addr::new(192, 0, 2, 1));
    assert_eq!(resolver.txt(NAME).await, Lookup::Absent);
    // Both were answers, asked once each: nothing to try again.
    assert_eq!(server.queries(), 2);
}

#[tokio::test]
async fn servfail_is_a_failure_asked_at_most_twice() {
    let server = DnsServer::start();
    server.set_servfail(NAME);
    assert_eq!(resolver(&server).txt(NAME).await, Lookup::Failed);
    assert_eq!(server.queries(), ATTEMPTS as usize);
}

#[tokio::test]
async fn a_silent_server_is_a_failure_within_the_timeout() {
    let server = DnsServer::start();
    server.set_silent(NAME);
    let resolver = resolver(&server).with_timeout(Duration::from_millis(300));

    let started = Instant::now();
    assert_eq!(resolver.txt(NAME).await, Lookup::Failed);
    let elapsed = started.elapsed();
    // A bound, not a timing target: 300 ms asked, far below 2 s.
    assert!(elapsed < Duration::from_secs(2), "took {elapsed:?}");
    assert!(server.queries() >= 1);
}

#[tokio::test]
async fn a_resolver_that_is_gone_is_a_failure() {
    let server = DnsServer::start();
    let addr = server.addr();
    drop(server);
    let resolver = Resolver::new(Some(addr))
        .expect("a resolver")
        .with_timeout(Duration::from_millis(300));
    let started = Instant::now();
    assert_eq!(resolver.txt(NAME).await, Lookup::Failed);
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn each_lookup_sees_the_record_as_it_is_now() {
    let server = DnsServer::start();
    let resolver = resolver(&server);
    // Checked before the customer created it: no cached NXDOMAIN after.
    assert_eq!(resolver.txt(NAME).await, Lookup::Absent);
    server.set_txt(NAME, &["proxydeck-verification=first"]);
    assert_eq!(
        resolver.txt(NAME).await,
        found(&["proxydeck-verification=first"])
    );
    server.set_txt(NAME, &["proxydeck-verification=second"]);
    assert_eq!(
        resolver.txt(NAME).await,
        found(&["proxydeck-verification=second"])
    );
    server.remove(NAME);
    assert_eq!(resolver.txt(NAME).await, Lookup::Absent);
    assert_eq!(server.queries(), 4);
}

#[tokio::test]
async fn names_compare_without_case_and_trailing_dot() {
    let server = DnsServer::start();
    server.set_txt(
        "_PROXYDECK-Challenge.Example.COM.",
        &["proxydeck-verification=t0k3n"],
    );
    let resolver = resolver(&server);
    for name in [
        "_proxydeck-challenge.example.com",
        "_proxydeck-challenge.EXAMPLE.com.",
    ] {
        assert_eq!(
            resolver.txt(name).await,
            found(&["proxydeck-verification=t0k3n"]),
            "{name}"
        );
    }
}

#[tokio::test]
async fn a_name_that_cannot_be_asked_is_a_failure_without_a_query() {
    let server = DnsServer::start();
    assert_eq!(resolver(&server).txt("a..b").await, Lookup::Failed);
    assert_eq!(server.queries(), 0);
}
