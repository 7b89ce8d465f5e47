//! Teams in the console (docs/teams.md): an admin invites by link (no
//! SMTP), a second browser opens the link, accepts and sees the
//! organization's projects; removed, that person's next write is refused
//! at once and their reads stop within the token cache's delay; an admin
//! changes a role (and cannot demote the last admin); a member leaves; an
//! organization is created, renamed (If-Match) and deleted (refused while
//! it has projects). Each step is checked through the API, not only on
//! the page.

use std::time::{Duration, Instant};

use super::*;

const ACME: &str = "0190b7a4-0000-7000-8000-000000000001";

/// The members of `organization`, as the API lists them: (email, role).
async fn members(server: &Server, organization: &str, token: &str) -> Vec<(String, String)> {
    let path = format!("/v1/organizations/{organization}/users?limit=100");
    let (status, body) = server.get(&path, token).await;
    assert_eq!(status, 200, "{body}");
    let mut found: Vec<(String, String)> = body["data"]
        .as_array()
        .expect("data")
        .iter()
        .map(|m| {
            (
                m["email"].as_str().unwrap().to_owned(),
                m["role"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    found.sort();
    found
}

/// The id of the member whose email is `email`.
async fn member_id(server: &Server, organization: &str, token: &str, email: &str) -> String {
    let path = format!("/v1/organizations/{organization}/users?limit=100");
    let (_, body) = server.get(&path, token).await;
    body["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["email"] == json!(email))
        .unwrap_or_else(|| panic!("{email} in {body}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The invitations of `organization` the API lists.
async fn invitations(server: &Server, organization: &str, token: &str) -> Vec<Value> {
    let path = format!("/v1/invitations?organization_id={organization}&limit=100");
    let (status, body) = server.get(&path, token).await;
    assert_eq!(status, 200, "{body}");
    body["data"].as_array().expect("data").clone()
}

/// Loads the console at `path` afresh (a whole page load, even when only
/// the `#` part differs from where the browser is).
async fn reload(browser: &Browser, path: &str) {
    browser.visit(path).await;
    browser.client.refresh().await.expect("the page reloads");
}

/// Opens `browser` on the organization's page (from the header's link,
/// then the organization's) and waits for its members.
async fn open_organization(browser: &Browser, name: &str, id: &str) {
    browser.click("nav a[data-nav=organizations]").await;
    browser.sees("h1", "Organizations").await;
    browser
        .click(&format!("tr[data-organization='{id}'] a"))
        .await;
    browser.sees("h1", name).await;
    browser.element("#member-list").await;
}

#[tokio::test]
async fn an_invited_person_joins_by_link_and_loses_access_when_removed() {
    let sandbox = Sandbox::new();
    // A short token cache: a removed member's reads stop within a second.
    let (server, admin) = demo_with(&sandbox, &["--token-cache-ttl", "1s"]);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&admin).await;
    open_organization(&browser, "Acme Corp", ACME).await;

    // Invited by link: the answer's link, shown once with a Copy button.
    browser.fill("#invite-email", "Newcomer@Acme.example").await;
    browser.choose("#invite-role", "editor").await;
    browser.click("#invite button[type=submit]").await;
    browser
        .sees("#invitation-made", "only time it is shown")
        .await;
    browser.element("#copy-invitation").await;
    let link = browser
        .run(
            "return document.getElementById('invitation-link').value",
            vec![],
        )
        .await;
    let link = link.as_str().unwrap().to_owned();
    let prefix = format!("{}/console/#/accept?invitation=pxi_", server.base);
    assert!(link.starts_with(&prefix), "{link}");
    let secret = link.split("invitation=").nth(1).unwrap().to_owned();
    assert!(!browser.exposed().await.contains(&secret));
    browser
        .sees("#invitation-rows", "Newcomer@Acme.example")
        .await;
    let pending = invitations(&server, ACME, &admin).await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["email"], json!("Newcomer@Acme.example"));
    assert_eq!(pending[0]["role"], json!("editor"));
    assert_eq!(pending[0]["status"], json!("pending"));
    assert!(!pending[0].to_string().contains(&secret));
    browser.screenshot("organization").await;

    // A second browser (its own profile) opens the link: the secret
    // leaves the address at once.
    let Some(newcomer) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    newcomer
        .visit(link.strip_prefix(&server.base).unwrap())
        .await;
    newcomer.sees("h1", "Accept an invitation").await;
    let exposed = newcomer.exposed().await;
    assert!(!exposed.contains(&secret), "{exposed}");
    assert!(exposed.contains("#/accept"), "{exposed}");
    newcomer
        .fill("#accept-email", "newcomer@acme.example")
        .await;
    newcomer.fill("#accept-name", "New Comer").await;
    newcomer.screenshot("accept").await;
    newcomer.click("#accept button[type=submit]").await;
    newcomer.sees("h1", "Projects").await;
    newcomer
        .sees("#notice", "Welcome to Acme Corp: you are editor there.")
        .await;
    newcomer.sees("#projects", "acme-shop").await;
    assert_eq!(
        newcomer
            .run(
                "return document.getElementById('filter-organization').value",
                vec![]
            )
            .await,
        json!(ACME)
    );
    // Signed in with the token the acceptance answered, kept in this tab.
    let token = newcomer
        .run("return sessionStorage.getItem('proxydeck.token')", vec![])
        .await;
    let token = token
        .as_str()
        .expect("a token in sessionStorage")
        .to_owned();
    let (status, me) = server.get("/v1/users/me", &token).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["name"], json!("New Comer"), "{me}");
    assert_eq!(me["roles"], json!({ACME: "editor"}), "{me}");
    assert!(
        members(&server, ACME, &admin)
            .await
            .contains(&("newcomer@acme.example".to_owned(), "editor".to_owned()))
    );
    assert!(invitations(&server, ACME, &admin).await.is_empty());

    // The same link again: the API's one refusal, as it words it.
    newcomer
        .visit(link.strip_prefix(&server.base).unwrap())
        .await;
    newcomer.sees("h1", "Accept an invitation").await;
    newcomer.click("#accept button[type=submit]").await;
    newcomer
        .sees(
            "#accept-problem",
            "this invitation cannot be accepted: it may have been revoked, used or expired",
        )
        .await;

    // The newcomer, an editor, opens a project; the admin removes them.
    newcomer.visit("/console#/projects/acme-shop").await;
    newcomer
        .element("#revisions li[data-revision='2'] button.activate")
        .await;
    let id = member_id(&server, ACME, &admin, "newcomer@acme.example").await;
    reload(&browser, &format!("/console#/organizations/{ACME}")).await;
    browser
        .click(&format!("tr[data-member='{id}'] button.remove-member"))
        .await;
    browser
        .sees("#confirm-title", "Remove New Comer (newcomer@acme.example)")
        .await;
    browser.click("#confirm-ok").await;
    browser.sees("#notice", "was removed from Acme Corp.").await;
    browser
        .until(&format!(
            "document.querySelector('#member-list') && !document.querySelector(\"tr[data-member='{id}']\")"
        ))
        .await;
    assert!(
        !members(&server, ACME, &admin)
            .await
            .iter()
            .any(|(email, _)| email == "newcomer@acme.example")
    );

    // Their next write is refused at once, and changes nothing.
    newcomer
        .click("#revisions li[data-revision='2'] button.activate")
        .await;
    newcomer.click("#confirm-ok").await;
    newcomer.element("#revisions [role=alert]").await;
    assert_eq!(active_revision(&server, "acme-shop", &admin).await, 3);

    // Their reads stop within the token cache's delay: the project page,
    // loaded again until it says "Not found" (bounded).
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        reload(&newcomer, "/console#/projects/acme-shop").await;
        newcomer
            .until("document.querySelector('#revisions li') || document.querySelector('main [role=alert]')")
            .await;
        let text = newcomer.text("main").await;
        if text.contains("Not found: it does not exist, or it is not visible to you.") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the removed member still reads: {text}"
        );
    }
    assert_eq!(server.get("/v1/projects/acme-shop", &token).await.0, 404);
    // Still a user: it signs in and reads itself, in no organization.
    let (status, me) = server.get("/v1/users/me", &token).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["roles"], json!({}), "{me}");
}

#[tokio::test]
async fn an_admin_changes_a_role_and_a_member_leaves() {
    let sandbox = Sandbox::new();
    let (server, admin) = demo(&sandbox);
    sandbox.json(&[
        "admin",
        "user",
        "create",
        "--email",
        "viewer@acme.example",
        "--name",
        "Acme Viewer",
        "--org",
        &format!("{ACME}:member"),
        "--id",
        "acme-viewer",
    ]);
    let viewer = sandbox.token("acme-viewer", "console");
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&admin).await;
    open_organization(&browser, "Acme Corp", ACME).await;
    browser
        .sees("tr[data-member='acme-viewer'] td.role", "")
        .await;

    // member -> editor, with the select.
    browser
        .choose("tr[data-member='acme-viewer'] select.member-role", "editor")
        .await;
    browser
        .click("tr[data-member='acme-viewer'] button.set-role")
        .await;
    browser
        .sees("#notice", "viewer@acme.example is now editor of Acme Corp.")
        .await;
    assert!(
        members(&server, ACME, &admin)
            .await
            .contains(&("viewer@acme.example".to_owned(), "editor".to_owned()))
    );

    // The last admin cannot become member: the API's words, nothing changed.
    browser
        .choose("tr[data-member='demo-user'] select.member-role", "member")
        .await;
    browser
        .click("tr[data-member='demo-user'] button.set-role")
        .await;
    browser
        .sees(
            "#members [role=alert]",
            "the organization's last admin cannot leave, be removed or become editor or member",
        )
        .await;
    assert!(
        members(&server, ACME, &admin)
            .await
            .contains(&("demo@proxydeck.example".to_owned(), "admin".to_owned()))
    );

    // On a phone, the admin's page (members with their selects, the
    // invitation form) does not scroll sideways.
    let Some(phone) = Browser::open(&server.base, Screen::Phone).await else {
        return;
    };
    phone.sign_in(&admin).await;
    open_organization(&phone, "Acme Corp", ACME).await;
    phone.element("#invite").await;
    assert!(
        !phone.overflows().await,
        "the organization page scrolls sideways"
    );
    phone.screenshot("phone-organization").await;

    // The (now) editor: no admin controls, told why; leaves.
    browser.click("#sign-out").await;
    browser.sign_in(&viewer).await;
    open_organization(&browser, "Acme Corp", ACME).await;
    browser
        .sees("#members", "Your role in Acme Corp is editor")
        .await;
    let controls = browser
        .texts("select.member-role, button.remove-member, #invitations, #delete-organization, #rename-organization")
        .await;
    assert!(controls.is_empty(), "{controls:?}");
    browser
        .click("tr[data-member='acme-viewer'] button.leave")
        .await;
    browser.sees("#confirm-title", "Leave Acme Corp?").await;
    browser.click("#confirm-ok").await;
    browser.sees("#notice", "You left Acme Corp.").await;
    browser.sees("h1", "Organizations").await;
    assert!(
        !members(&server, ACME, &admin)
            .await
            .iter()
            .any(|(email, _)| email == "viewer@acme.example")
    );

    // Invited back: signed out, the link finds their account exists (the
    // API's 409, as worded); "sign in first" keeps the link's secret in
    // the tab, and they accept with their token.
    let (status, invited) = api(
        &server,
        reqwest::Method::POST,
        "/v1/invitations",
        &admin,
        json!({"organization_id": ACME, "email": "viewer@acme.example", "role": "member"}),
    )
    .await;
    assert_eq!(status, 200, "{invited}");
    let link = invited["accept_url"].as_str().unwrap().to_owned();
    browser.click("#sign-out").await;
    browser
        .visit(link.strip_prefix(&server.base).unwrap())
        .await;
    browser.sees("h1", "Accept an invitation").await;
    browser.fill("#accept-email", "viewer@acme.example").await;
    browser.click("#accept button[type=submit]").await;
    browser
        .sees(
            "#accept-problem",
            "an account with this email exists: sign in",
        )
        .await;
    browser.click("#accept-sign-in").await;
    browser.fill("#token", &viewer).await;
    browser.click("form.sign-in button[type=submit]").await;
    browser.sees("h1", "Accept an invitation").await;
    browser
        .sees("main", "You are signed in as Acme Viewer")
        .await;
    browser.click("#accept button[type=submit]").await;
    browser
        .sees("#notice", "Welcome to Acme Corp: you are member there.")
        .await;
    browser.sees("#projects", "acme-shop").await;
    assert!(
        members(&server, ACME, &admin)
            .await
            .contains(&("viewer@acme.example".to_owned(), "member".to_owned()))
    );
    // No new token was made for a signed-in acceptance.
    assert_eq!(server.tokens(&viewer).await.len(), 1);
}

#[tokio::test]
async fn an_organization_is_created_renamed_and_deleted_once_it_has_no_project() {
    let sandbox = Sandbox::new();
    let (server, admin) = demo(&sandbox);
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&admin).await;
    browser.click("nav a[data-nav=organizations]").await;
    browser.sees("h1", "Organizations").await;

    // A slug the API refuses: its rule next to the slug field.
    browser.fill("#new-org-name", "Umbrella Labs").await;
    assert_eq!(
        browser
            .run(
                "return document.getElementById('new-org-slug').value",
                vec![]
            )
            .await,
        json!("umbrella-labs")
    );
    browser.fill("#new-org-slug", "Not A Slug").await;
    browser
        .click("#create-organization button[type=submit]")
        .await;
    browser.sees("#new-org-slug-error", "slug ").await;
    assert_eq!(
        browser
            .run(
                "return document.getElementById('new-org-slug').getAttribute('aria-invalid')",
                vec![]
            )
            .await,
        json!("true")
    );
    browser.fill("#new-org-slug", "umbrella-labs").await;
    browser
        .click("#create-organization button[type=submit]")
        .await;
    browser.sees("h1", "Umbrella Labs").await;
    browser.sees("#notice", "you are its admin").await;
    let (_, listed) = server.get("/v1/organizations?limit=100", &admin).await;
    let made = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["slug"] == json!("umbrella-labs"))
        .unwrap_or_else(|| panic!("{listed}"))
        .clone();
    let id = made["id"].as_str().unwrap().to_owned();
    assert_eq!(made["name"], json!("Umbrella Labs"));
    assert_eq!(
        members(&server, &id, &admin).await,
        [("demo@proxydeck.example".to_owned(), "admin".to_owned())]
    );

    // Renamed with If-Match: fine once; refused (412) after a change made
    // behind the page's back, which stays as the API holds it.
    browser.fill("#org-name", "Umbrella Research").await;
    browser
        .click("#rename-organization button[type=submit]")
        .await;
    browser
        .sees("#notice", "The organization is now Umbrella Research")
        .await;
    browser.sees("h1", "Umbrella Research").await;
    let (_, now) = server.get(&format!("/v1/organizations/{id}"), &admin).await;
    assert_eq!(now["name"], json!("Umbrella Research"), "{now}");
    let (status, body) = api(
        &server,
        reqwest::Method::POST,
        &format!("/v1/organizations/{id}"),
        &admin,
        json!({"id": id, "name": "Umbrella Elsewhere"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    browser.fill("#org-name", "Umbrella Again").await;
    browser
        .click("#rename-organization button[type=submit]")
        .await;
    browser
        .sees(
            "#organization [role=alert]",
            "Someone changed this since you loaded it",
        )
        .await;
    let (_, now) = server.get(&format!("/v1/organizations/{id}"), &admin).await;
    assert_eq!(now["name"], json!("Umbrella Elsewhere"), "{now}");

    // An invitation revoked after confirming: the API lists it no more.
    reload(&browser, &format!("/console#/organizations/{id}")).await;
    browser
        .fill("#invite-email", "someone@umbrella.example")
        .await;
    browser.click("#invite button[type=submit]").await;
    browser
        .sees("#invitation-rows", "someone@umbrella.example")
        .await;
    assert_eq!(invitations(&server, &id, &admin).await.len(), 1);
    browser
        .click("#invitation-rows button.revoke-invitation")
        .await;
    browser
        .sees(
            "#confirm-title",
            "Revoke the invitation for someone@umbrella.example?",
        )
        .await;
    browser.click("#confirm-ok").await;
    browser.sees("#invitations", "No invitation waits").await;
    assert!(invitations(&server, &id, &admin).await.is_empty());

    // Deleting it while it has a project: the API's 409, and the way out.
    let (status, body) = api(
        &server,
        reqwest::Method::POST,
        "/v1/projects",
        &admin,
        json!({"organization_id": id, "slug": "umbrella-site"}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let project = body["id"].as_str().unwrap().to_owned();
    browser.click("#delete-organization-button").await;
    browser
        .sees("#confirm-title", "Delete Umbrella Elsewhere?")
        .await;
    browser.click("#confirm-ok").await;
    browser
        .sees("#delete-organization [role=alert]", "project")
        .await;
    browser
        .sees("#delete-organization", "Delete its projects first")
        .await;
    assert_eq!(
        server
            .get(&format!("/v1/organizations/{id}"), &admin)
            .await
            .0,
        200
    );
    let (status, body) = api(
        &server,
        reqwest::Method::DELETE,
        &format!("/v1/projects/{project}"),
        &admin,
        Value::Null,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    reload(&browser, &format!("/console#/organizations/{id}")).await;
    browser.click("#delete-organization-button").await;
    browser.click("#confirm-ok").await;
    browser
        .sees("#notice", "Umbrella Elsewhere was deleted.")
        .await;
    browser.sees("h1", "Organizations").await;
    assert_eq!(
        server
            .get(&format!("/v1/organizations/{id}"), &admin)
            .await
            .0,
        404
    );
}

/// With SMTP (a real aiosmtpd on loopback), the admin is told the
/// invitation was emailed and is shown no link; the email holds it, and
/// the link, opened on this service, lets the invited person in.
#[tokio::test]
async fn an_emailed_invitation_says_so_and_its_link_lets_the_person_in() {
    let mut smtp = crate::helpers::SmtpServer::start();
    let sandbox = Sandbox::new();
    let smtp_url = format!("smtp://127.0.0.1:{}", smtp.port);
    let (server, admin) = demo_with(
        &sandbox,
        &[
            "--smtp-url",
            &smtp_url,
            "--smtp-from",
            "deck@example.com",
            "--public-url",
            "https://deck.example.test",
        ],
    );
    let Some(browser) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    browser.sign_in(&admin).await;
    open_organization(&browser, "Acme Corp", ACME).await;
    browser.fill("#invite-email", "mailed@acme.example").await;
    browser.choose("#invite-role", "member").await;
    browser.click("#invite button[type=submit]").await;
    browser
        .sees(
            "#invitation-made",
            "An invitation was emailed to mailed@acme.example, as member.",
        )
        .await;
    let no_link = browser
        .run(
            "return document.getElementById('invitation-link') === null",
            vec![],
        )
        .await;
    assert_eq!(no_link, json!(true));

    let message = smtp.one_message().await;
    let link_start = message
        .find("https://deck.example.test/console/#/accept?invitation=pxi_")
        .unwrap_or_else(|| panic!("the link in {message}"));
    let secret: String = message[link_start..]
        .split("invitation=")
        .nth(1)
        .unwrap()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    assert!(!browser.exposed().await.contains(&secret));
    let pending = invitations(&server, ACME, &admin).await;
    assert_eq!(pending.len(), 1, "{pending:?}");
    assert_eq!(pending[0]["email"], json!("mailed@acme.example"));

    let Some(invited) = Browser::open(&server.base, Screen::Desktop).await else {
        return;
    };
    invited
        .visit(&format!("/console/#/accept?invitation={secret}"))
        .await;
    invited.sees("h1", "Accept an invitation").await;
    invited.fill("#accept-email", "mailed@acme.example").await;
    invited.click("#accept button[type=submit]").await;
    invited
        .sees("#notice", "Welcome to Acme Corp: you are member there.")
        .await;
    assert!(
        members(&server, ACME, &admin)
            .await
            .contains(&("mailed@acme.example".to_owned(), "member".to_owned()))
    );
    smtp.stop();
}
