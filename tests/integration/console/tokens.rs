//! API tokens in the console: a new token shown once, then revoked, and
//! a revoked session ended.

use super::*;

#[tokio::test]
async fn a_token_is_shown_once_then_revoked_and_a_revoked_session_ends() {
    let sandbox = Sandbox::new();
    let (server, token) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&token).await;
    browser.click("nav a[data-nav=tokens]").await;
    browser.sees("h1", "API tokens").await;
    browser
        .sees(
            "#tokens",
            &format!("pxd_****{} (this session)", &token[token.len() - 4..]),
        )
        .await;

    browser.fill("#token-name", "deploy bot").await;
    browser.choose("#token-expiry", "30").await;
    browser
        .click("form[aria-label='Create a token'] button[type=submit]")
        .await;
    browser
        .sees("#created-token", "only time it is shown")
        .await;
    let secret = browser
        .run("return document.getElementById('new-secret').value", vec![])
        .await;
    let secret = secret.as_str().unwrap().to_owned();
    assert!(secret.starts_with("pxd_") && secret.len() == 42, "{secret}");
    // The secret works, and is not part of the page's markup.
    let (status, me) = server.get("/v1/users/me", &secret).await;
    assert_eq!(status, 200, "{me}");
    assert!(!browser.exposed().await.contains(&secret));
    browser.click("#hide-secret").await;
    browser.sees("#tokens", "deploy bot").await;
    assert!(
        !browser
            .run(
                "return document.body.textContent + document.documentElement.outerHTML",
                vec![]
            )
            .await
            .as_str()
            .unwrap()
            .contains(&secret),
        "the secret stayed on the page after hiding"
    );
    browser.screenshot("tokens").await;

    // Revoked with a confirmation: listed no more, refused by the API.
    let made = server.tokens(&token).await;
    let id = made
        .iter()
        .find(|t| t["name"] == json!("deploy bot"))
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        made.iter()
            .any(|t| t["name"] == json!("deploy bot") && t.get("expires_at").is_some())
    );
    browser
        .click(&format!("tr[data-token='{id}'] button.danger"))
        .await;
    browser
        .sees("#confirm-title", "Revoke the token “deploy bot”?")
        .await;
    browser.click("#confirm-ok").await;
    browser.sees("#notice", "revoked").await;
    browser
        .until(&format!(
            "document.querySelector('#tokens') && !document.querySelector(\"tr[data-token='{id}']\")"
        ))
        .await;
    assert_eq!(server.get("/v1/users/me", &secret).await.0, 401);

    // The session's own token revoked elsewhere: the next step signs out.
    let own = server.tokens(&token).await;
    let own_id = own[0]["id"].as_str().unwrap().to_owned();
    let (status, _) = api(
        &server,
        reqwest::Method::DELETE,
        &format!("/v1/api_tokens/{own_id}"),
        &token,
        Value::Null,
    )
    .await;
    assert_eq!(status, 200);
    browser.click("nav a[data-nav=projects]").await;
    browser.sees("h1", "Sign in").await;
    browser.sees("#sign-in-problem", "no longer accepted").await;
    assert_eq!(
        browser.run("return sessionStorage.length", vec![]).await,
        json!(0)
    );
}
