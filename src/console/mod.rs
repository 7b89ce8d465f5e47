//! The web console at `/console`: a page, a script and a style sheet,
//! embedded in the binary (nothing is fetched from elsewhere at run time).
//!
//! The console is a client of the public API and nothing more: the script
//! calls `/v1/...` with the token the person signs in with, kept in the
//! tab's session storage. No route here reads the store or a token, so
//! the console has no way around the API's roles, limits and errors
//! (docs/console.md).

use axum::routing::get;

use crate::http::conditional::content_tag;
use crate::http::routes::{Routes, get_only};
use axum::body::Body;
use axum::extract::Path;
use axum::http::{HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::LazyLock;

/// Where the console is served.
pub const PATH: &str = "/console";

/// Scripts and styles from this origin's files only (no inline script, no
/// `eval`, no outside origin), requests to this origin only, no framing
/// (clickjacking), no form posted anywhere (the sign-in form is handled
/// by the script; were it ever submitted, the token would go nowhere).
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    bytes: &'static [u8],
}

/// A script of the console: an ES module (`console.js` imports the rest).
macro_rules! script {
    ($name:literal) => {
        Asset {
            name: $name,
            content_type: "text/javascript; charset=utf-8",
            bytes: include_bytes!(concat!("assets/", $name)),
        }
    };
}

const ASSETS: &[Asset] = &[
    Asset {
        name: "index.html",
        content_type: "text/html; charset=utf-8",
        bytes: include_bytes!("assets/index.html"),
    },
    script!("console.js"),
    script!("api.js"),
    script!("dom.js"),
    script!("nav.js"),
    script!("session.js"),
    script!("projects.js"),
    script!("project-form.js"),
    script!("project-edit.js"),
    script!("domains.js"),
    script!("revisions.js"),
    script!("revision-diff.js"),
    script!("revision-form.js"),
    script!("rollouts.js"),
    script!("tokens.js"),
    script!("forms.js"),
    script!("organizations.js"),
    script!("accept.js"),
    Asset {
        name: "console.css",
        content_type: "text/css; charset=utf-8",
        bytes: include_bytes!("assets/console.css"),
    },
    Asset {
        name: "icon.svg",
        content_type: "image/svg+xml",
        bytes: include_bytes!("assets/icon.svg"),
    },
];

/// Each asset's strong entity tag, computed once: a reload asks with
/// `If-None-Match` and gets a 304.
static TAGS: LazyLock<Vec<HeaderValue>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|asset| content_tag(asset.bytes))
        .collect()
});

/// The console's routes: the page, and its files.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Routes<S> {
    Routes::new()
        .route(PATH, get_only(get(page)))
        .unlisted("/console/", get_only(get(page)))
        .unlisted("/console/{name}", get_only(get(asset)))
}

/// `GET /console`: the page.
async fn page() -> Response {
    answer("index.html")
}

/// `GET /console/{name}`: the page's files; anything else is a 404.
async fn asset(Path(name): Path<String>) -> Response {
    answer(&name)
}

fn answer(name: &str) -> Response {
    let Some(index) = ASSETS.iter().position(|asset| asset.name == name) else {
        return (StatusCode::NOT_FOUND, "no such file in the console\n").into_response();
    };
    let asset = &ASSETS[index];
    let headers = [
        (
            header::CONTENT_TYPE,
            HeaderValue::from_static(asset.content_type),
        ),
        (header::ETAG, TAGS[index].clone()),
        // Always revalidated (a 304 when unchanged), so a new binary's
        // console is used at the next load.
        (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (
            HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ),
    ];
    (headers, Body::from(asset.bytes)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(name: &str) -> &'static str {
        let asset = ASSETS.iter().find(|asset| asset.name == name).unwrap();
        std::str::from_utf8(asset.bytes).unwrap()
    }

    /// The policy forbids inline script and markup built from strings:
    /// the page holds no inline script or handler, and the script never
    /// turns text into markup or code, so no text from the store can
    /// become either.
    #[test]
    fn the_console_never_turns_text_into_markup_or_code() {
        let page = text("index.html");
        assert!(!page.contains("<script>"), "inline script in the page");
        let lower = page.to_lowercase();
        let handler = lower.match_indices(" on").any(|(at, _)| {
            let name: String = lower[at + 3..]
                .chars()
                .take_while(char::is_ascii_lowercase)
                .collect();
            !name.is_empty() && lower[at + 3 + name.len()..].starts_with('=')
        });
        assert!(!handler, "an inline event handler in the page");
        assert!(!page.contains("style="), "an inline style");
        for script in ASSETS.iter().filter(|asset| asset.name.ends_with(".js")) {
            let code = std::str::from_utf8(script.bytes).unwrap();
            for sink in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
                "new Function",
                "setTimeout(\"",
                "localStorage",
                "console.log",
            ] {
                assert!(!code.contains(sink), "{} uses {sink}", script.name);
            }
        }
    }

    /// Every file of `assets/` is served, and every script is fetched at
    /// once with the page (`modulepreload`) rather than one import after
    /// another.
    #[test]
    fn every_asset_is_served_and_every_script_preloaded() {
        let folder = concat!(env!("CARGO_MANIFEST_DIR"), "/src/console/assets");
        let page = text("index.html");
        for entry in std::fs::read_dir(folder).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            assert!(
                ASSETS.iter().any(|asset| asset.name == name),
                "{name} is in assets/ but not served"
            );
            if name.ends_with(".js") && name != "console.js" {
                let preload = format!(r#"<link rel="modulepreload" href="/console/{name}">"#);
                assert!(
                    page.contains(&preload),
                    "index.html does not preload {name}"
                );
            }
        }
    }
}
