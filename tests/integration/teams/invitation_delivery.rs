//! Invitations sent by email (docs/teams.md, "Invitations"): `proxydeck
//! serve` with `--smtp-url` against a real SMTP server on loopback
//! (`helpers::SmtpServer`: Debian's python3-aiosmtpd, a maildir),
//! the link in the email followed to accept; the mail server gone, the
//! answer carries the link. Neither secret nor address reaches the log.

use serde_json::{Value, json};

use super::super::BACKEND;
use crate::binary::{Sandbox, Server};
use crate::helpers::*;

async fn post(server: &Server, path: &str, token: Option<&str>, body: Value) -> (u16, Value) {
    let mut request = server.client.post(server.url(path)).json(&body);
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.expect("answered");
    let status = response.status().as_u16();
    (status, response.json().await.expect("JSON"))
}

#[tokio::test]
async fn the_email_carries_the_link_and_a_refusing_server_gives_it_to_the_admin() {
    require!(BACKEND);
    let mut smtp = SmtpServer::start();
    let sandbox = Sandbox::on(BACKEND);
    let token = sandbox.directory(1, "u1");
    let smtp_url = format!("smtp://127.0.0.1:{}", smtp.port);
    let server = sandbox.serve(&[
        "--smtp-url",
        &smtp_url,
        "--smtp-from",
        "proxydeck <deck@example.com>",
        "--public-url",
        "https://deck.example.test/",
    ]);
    let body =
        json!({"organization_id": org_id(1), "email": "Invitee@Example.com", "role": "editor"});
    let (status, created) = post(&server, "/v1/invitations", Some(&token), body).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["delivery"], "email");
    assert!(created.get("secret").is_none() && created.get("accept_url").is_none());

    // The email: who invites, to what, as what, the link, the expiry.
    let message = smtp.one_message().await;
    assert!(message.contains("Invitee@Example.com"), "{message}");
    assert!(
        message.contains("u1 invited you to join the organization Org 1"),
        "{message}"
    );
    assert!(message.contains("as editor"), "{message}");
    let expires = created["expires_at"].as_str().unwrap();
    assert!(message.contains(expires), "{expires}: {message}");
    let link_start = "https://deck.example.test/console/#/accept?invitation=";
    let at = message.find(link_start).expect("the link") + link_start.len();
    let secret = message[at..at + 42].to_owned();
    assert!(proxydeck::domain::teams::is_secret(&secret), "{secret}");

    // Followed: the invited person is in.
    let (status, accepted) = post(
        &server,
        "/v1/invitations/accept",
        None,
        json!({"secret": secret, "email": "invitee@example.com"}),
    )
    .await;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(accepted["user"]["roles"][org_id(1)], "editor");
    // Named for the email as the acceptance gave it.
    assert_eq!(accepted["user"]["name"], "invitee");

    // The mail server gone: the admin gets the link instead.
    smtp.stop();
    let body =
        json!({"organization_id": org_id(1), "email": "second@example.com", "role": "member"});
    let (status, linked) = post(&server, "/v1/invitations", Some(&token), body).await;
    assert_eq!(status, 200, "{linked}");
    assert_eq!(linked["delivery"], "link");
    let second = linked["secret"].as_str().unwrap();
    assert_eq!(
        linked["accept_url"],
        format!("https://deck.example.test/console/#/accept?invitation={second}")
    );
    let log = server
        .log_once(|log| log.contains("the invitation's email was not sent"))
        .await;
    assert!(log.contains("the invitation's email was not sent"), "{log}");
    for leak in [
        secret.as_str(),
        &secret[4..],
        second,
        &second[4..],
        "nvitee@",
        "second@example.com",
    ] {
        assert!(!log.contains(leak), "{leak} in the log:\n{log}");
    }
}

/// `config check` refuses SMTP without a sender or a public URL.
#[test]
fn smtp_needs_a_sender_and_a_public_url() {
    let sandbox = Sandbox::new();
    let refused = sandbox.run(&["config", "check", "--smtp-url", "smtp://127.0.0.1:2525"]);
    assert!(
        refused
            .error(&["--smtp-url needs --smtp-from"])
            .contains("smtp-from"),
        "{refused:?}"
    );
    let refused = sandbox.run(&[
        "config",
        "check",
        "--smtp-url",
        "smtp://127.0.0.1:2525",
        "--smtp-from",
        "deck@example.com",
    ]);
    refused.error(&["--smtp-url needs --public-url"]);
    let accepted = sandbox.run(&[
        "config",
        "check",
        "--smtp-url",
        "smtp://user:hunter2@127.0.0.1:2525",
        "--smtp-from",
        "deck@example.com",
        "--public-url",
        "https://deck.example.test",
        "--json",
    ]);
    let text = format!("{:?}", accepted.json());
    assert!(!text.contains("hunter2"), "{text}");
}
