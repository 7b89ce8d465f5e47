//! A real headless Chromium, driven over WebDriver (Debian's `chromium`
//! and `chromedriver`, by the `fantoccini` client). Waits are events: a
//! script in the page resolves when a MutationObserver sees the awaited
//! state, instead of polling on a timer.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{OnceLock, mpsc};
use std::time::Duration;

use fantoccini::elements::Element;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{Value, json};
use tempfile::TempDir;

/// How long a step may wait for the page: generous, for a loaded machine.
const STEP_DEADLINE: Duration = Duration::from_secs(20);

/// The browser and its driver, found where Debian installs them unless
/// `PROXYDECK_TEST_CHROMIUM` / `PROXYDECK_TEST_CHROMEDRIVER` say otherwise.
fn programs() -> Result<(PathBuf, PathBuf), String> {
    let find = |variable: &str, candidates: &[&str]| {
        let given = std::env::var_os(variable).map(PathBuf::from);
        given
            .into_iter()
            .chain(candidates.iter().map(PathBuf::from))
            .find(|path| path.is_file())
            .ok_or_else(|| format!("no {} (set {variable})", candidates[0]))
    };
    Ok((
        // Debian's /usr/bin/chromium is a shell wrapper; the binary itself
        // takes the driver's flags as given.
        find(
            "PROXYDECK_TEST_CHROMIUM",
            &["/usr/lib/chromium/chromium", "/usr/bin/chromium"],
        )?,
        find("PROXYDECK_TEST_CHROMEDRIVER", &["/usr/bin/chromedriver"])?,
    ))
}

/// The screen a test looks through.
#[derive(Clone, Copy)]
pub(crate) enum Screen {
    /// A laptop's window, 1280 x 900.
    Desktop,
    /// A small phone's, 360 x 800 (Chromium's device emulation: a headless
    /// window is never narrower than 500 px).
    Phone,
}

/// The widths every page is audited at ([`Browser::audit`]): a laptop's
/// and the narrowest phone the console is made for (docs/console.md,
/// "Quality").
pub(crate) const AUDIT_WIDTHS: [u32; 2] = [1280, PHONE.0];

/// The phone's viewport, width and height in CSS pixels.
const PHONE: (u32, u32) = (360, 800);

/// A browser for one test. The driver runs in a process group of its
/// own, which its browser processes join; dropping this kills the whole
/// group, so a failing test leaves no browser behind (killing the driver
/// alone would orphan them).
pub(crate) struct Browser {
    pub(crate) client: Client,
    base: String,
    driver: Child,
    screen: Screen,
    _profile: TempDir,
}

impl Drop for Browser {
    fn drop(&mut self) {
        let group = format!("-{}", self.driver.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.driver.wait();
    }
}

impl Browser {
    /// A headless browser showing `screen`, pointed at the server `base`. `None`, with a loud line, when no
    /// Chromium is installed; a failure instead when
    /// `PROXYDECK_REQUIRE_BROWSER` is set (CI sets it).
    pub(crate) async fn open(base: &str, screen: Screen) -> Option<Self> {
        let (chromium, chromedriver) = match programs() {
            Ok(found) => found,
            Err(why) => {
                if std::env::var_os("PROXYDECK_REQUIRE_BROWSER").is_some() {
                    panic!("a browser is required (PROXYDECK_REQUIRE_BROWSER) but: {why}");
                }
                eprintln!(
                    "\n######## SKIPPED: no headless browser for this test ({why}).\n######## apt-get install chromium chromium-driver\n"
                );
                return None;
            }
        };
        let mut driver = Command::new(chromedriver)
            .arg("--port=0")
            .process_group(0)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let port = driver_port(&mut driver);
        let profile = tempfile::tempdir().expect("a profile folder");
        let mut options = json!({
            "binary": chromium,
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-extensions", "--hide-scrollbars",
                "--force-device-scale-factor=1", "--window-size=1280,900",
                format!("--user-data-dir={}", profile.path().display()),
            ],
        });
        if let Screen::Phone = screen {
            options["mobileEmulation"] = json!({
                "deviceMetrics": {"width": PHONE.0, "height": PHONE.1, "pixelRatio": 1, "touch": true},
            });
        }
        let capabilities = json!({ "goog:chromeOptions": options });
        let Value::Object(capabilities) = capabilities else {
            unreachable!()
        };
        let client = ClientBuilder::new(HttpConnector::new())
            .capabilities(capabilities)
            .connect(&format!("http://127.0.0.1:{port}"))
            .await
            .expect("a browser session");
        client
            .update_timeouts(fantoccini::wd::TimeoutConfiguration::new(
                Some(STEP_DEADLINE),
                Some(STEP_DEADLINE),
                None,
            ))
            .await
            .expect("timeouts set");
        Some(Self {
            client,
            base: base.to_owned(),
            driver,
            screen,
            _profile: profile,
        })
    }

    /// Loads `path` of the server (a whole page load).
    pub(crate) async fn visit(&self, path: &str) {
        self.client
            .goto(&format!("{}{path}", self.base))
            .await
            .expect("the page loads");
    }

    /// Runs `script` in the page (its `arguments` are `args`).
    pub(crate) async fn run(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("{script}: {e}"))
    }

    /// Waits until the JavaScript expression `condition` holds in the page,
    /// checking at each change of the page's DOM (a MutationObserver), not
    /// on a timer; fails with the page's main text after the deadline.
    pub(crate) async fn until(&self, condition: &str) {
        let script = format!(
            "const done = arguments[arguments.length - 1];
             const holds = () => {{ try {{ return Boolean({condition}); }} catch (e) {{ return false; }} }};
             if (holds()) {{ done(true); return; }}
             const observer = new MutationObserver(() => {{
               if (holds()) {{ observer.disconnect(); done(true); }}
             }});
             observer.observe(document, {{ subtree: true, childList: true, attributes: true, characterData: true }});"
        );
        if let Err(error) = self.client.execute_async(&script, vec![]).await {
            let text = self
                .client
                .execute("return document.body.innerText", vec![])
                .await
                .unwrap_or_default();
            panic!("the page never showed {condition}: {error}\npage text:\n{text}");
        }
    }

    /// Waits until an element matches `css`; answers it.
    pub(crate) async fn element(&self, css: &str) -> Element {
        let quoted = serde_json::to_string(css).unwrap();
        self.until(&format!("document.querySelector({quoted})"))
            .await;
        self.client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"))
    }

    /// Waits until the text of the element `css` holds `text`.
    pub(crate) async fn sees(&self, css: &str, text: &str) {
        let (css, text) = (
            serde_json::to_string(css).unwrap(),
            serde_json::to_string(text).unwrap(),
        );
        self.until(&format!(
            "[...document.querySelectorAll({css})].some((e) => e.textContent.includes({text}))"
        ))
        .await;
    }

    /// The text of the first element matching `css`, once there is one.
    pub(crate) async fn text(&self, css: &str) -> String {
        self.element(css).await.text().await.expect("its text")
    }

    /// The texts of every element matching `css` now.
    pub(crate) async fn texts(&self, css: &str) -> Vec<String> {
        let css = serde_json::to_string(css).unwrap();
        let found = self
            .run(
                &format!("return [...document.querySelectorAll({css})].map((e) => e.textContent)"),
                vec![],
            )
            .await;
        serde_json::from_value(found).expect("a list of texts")
    }

    pub(crate) async fn click(&self, css: &str) {
        self.element(css)
            .await
            .click()
            .await
            .unwrap_or_else(|e| panic!("click {css}: {e}"));
    }

    /// Types `text` into the field `css`, after clearing it.
    pub(crate) async fn fill(&self, css: &str, text: &str) {
        let field = self.element(css).await;
        field.clear().await.expect("the field clears");
        field.send_keys(text).await.expect("the keys are typed");
    }

    /// Picks the option whose value is `value` in the select `css`.
    pub(crate) async fn choose(&self, css: &str, value: &str) {
        self.element(css)
            .await
            .select_by_value(value)
            .await
            .unwrap_or_else(|e| panic!("{css} = {value}: {e}"));
    }

    /// Signs in with `token` through the form, and waits for the projects.
    pub(crate) async fn sign_in(&self, token: &str) {
        self.visit("/console").await;
        self.fill("#token", token).await;
        self.click("form.sign-in button[type=submit]").await;
        self.sees("h1", "Projects").await;
    }

    /// The page's address, its markup and its storage other than the
    /// session's: the places a secret must never be.
    pub(crate) async fn exposed(&self) -> String {
        let found = self
            .run(
                "return [location.href, document.documentElement.outerHTML, document.cookie,
                         JSON.stringify(history.state), JSON.stringify(Object.assign({}, localStorage))].join('\\n')",
                vec![],
            )
            .await;
        found.as_str().expect("text").to_owned()
    }

    /// Saves a PNG of the window as `name`.png in the run's screenshot
    /// folder (target/tmp/console-screenshots), secrets masked; answers
    /// its path.
    pub(crate) async fn screenshot(&self, name: &str) -> PathBuf {
        let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots");
        std::fs::create_dir_all(&folder).expect("the screenshot folder");
        // The secrets shown once (a new token, an invitation's link) sit
        // in read-only fields: masked while captured, as the pictures are
        // kept and published by CI.
        self.run(
            "window.__masked = [...document.querySelectorAll('input[readonly]')].map((field) => [field, field.value]);
             for (const [field, value] of window.__masked) field.value = '•'.repeat(value.length);",
            vec![],
        )
        .await;
        let png = self.client.screenshot().await.expect("a screenshot");
        self.run(
            "for (const [field, value] of window.__masked) field.value = value;
             delete window.__masked;",
            vec![],
        )
        .await;
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        let path = folder.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("the screenshot is saved");
        path
    }

    /// Whether the page is wider than its layout viewport (a phone would
    /// scroll sideways). Not `innerWidth`: a phone's browser zooms out to
    /// fit a page wider than the screen, and its window widens with it.
    pub(crate) async fn overflows(&self) -> bool {
        self.run(
            "return document.documentElement.scrollWidth > document.documentElement.clientWidth",
            vec![],
        )
        .await
            == json!(true)
    }

    /// Audits what is on screen at each of [`AUDIT_WIDTHS`]: axe-core's
    /// accessibility rules (a `serious` or `critical` violation fails),
    /// no sideways scrolling, and a full-page screenshot kept as
    /// `NAME-1280.png` and `NAME-360.png` (see [`Browser::screenshot`]).
    /// The page is left at the width it had. Wait for the state to audit
    /// before calling it: it looks at the page as it is.
    pub(crate) async fn audit(&self, name: &str) {
        let mut problems = Vec::new();
        for width in AUDIT_WIDTHS {
            self.set_viewport(width, viewport_height(width)).await;
            problems.extend(self.accessibility_problems(width).await);
            if self.overflows().await {
                let wide = self.run(STICKING_OUT, vec![]).await;
                problems.push(format!(
                    "at {width} px the page scrolls sideways; what sticks out: {wide}"
                ));
            }
            self.full_page_screenshot(&format!("{name}-{width}"), width)
                .await;
        }
        self.restore_viewport().await;
        assert!(
            problems.is_empty(),
            "the audit of {name:?} found:\n{}",
            problems.join("\n")
        );
    }

    /// Sets the page's viewport to `width` x `height` CSS pixels within
    /// this session (Chromium's device metrics, through chromedriver's
    /// DevTools endpoint: WebDriver's window size stops at 500 px wide
    /// headless), a phone's below 640 px (its viewport meta obeyed).
    async fn set_viewport(&self, width: u32, height: u32) {
        self.devtools(
            "Emulation.setDeviceMetricsOverride",
            json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 640}),
        )
        .await;
        let seen = self
            .run("return document.documentElement.clientWidth", vec![])
            .await;
        assert_eq!(seen, json!(width), "the viewport did not become {width} px");
    }

    /// Back to the screen the browser was opened with.
    async fn restore_viewport(&self) {
        match self.screen {
            Screen::Desktop => {
                self.devtools("Emulation.clearDeviceMetricsOverride", json!({}))
                    .await;
            }
            Screen::Phone => self.set_viewport(PHONE.0, PHONE.1).await,
        }
    }

    /// A Chrome DevTools Protocol command, sent through chromedriver's
    /// own endpoint for it; answers its result.
    async fn devtools(&self, cmd: &'static str, params: Value) -> Value {
        self.client
            .issue_cmd(DevTools { cmd, params })
            .await
            .unwrap_or_else(|e| panic!("{cmd}: {e}"))
    }

    /// axe-core's violations of the page as it is now, at `width`: a
    /// readable line for each `serious` or `critical` one (rule, help and
    /// the failing nodes' selectors); the others are printed, not failed.
    /// Without axe-core installed, nothing (and a loud line), unless
    /// `PROXYDECK_REQUIRE_BROWSER` is set, where that fails.
    async fn accessibility_problems(&self, width: u32) -> Vec<String> {
        let Some(axe) = axe_source() else {
            return Vec::new();
        };
        // Injected through WebDriver's script execution (DevTools'
        // evaluation, which the page's Content-Security-Policy does not
        // govern): the console's policy stays as strict as it is served.
        if self.run("return typeof window.axe", vec![]).await != json!("object") {
            self.run(&format!("{axe}\n;return typeof window.axe"), vec![])
                .await;
        }
        let found = self
            .client
            .execute_async(RUN_AXE, vec![])
            .await
            .unwrap_or_else(|e| panic!("axe-core did not run: {e}"));
        if let Some(error) = found.get("error") {
            panic!("axe-core failed: {error}");
        }
        let mut problems = Vec::new();
        for violation in found.as_array().expect("axe-core's violations") {
            let impact = violation["impact"].as_str().unwrap_or("unknown");
            let nodes: Vec<String> = violation["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .map(|node| {
                    format!(
                        "      {} ({})",
                        node["target"],
                        node["html"].as_str().unwrap_or("")
                    )
                })
                .collect();
            let line = format!(
                "at {width} px, {impact}: {} ({}), {}\n{}",
                violation["id"].as_str().unwrap_or("?"),
                violation["help"].as_str().unwrap_or("?"),
                violation["helpUrl"].as_str().unwrap_or(""),
                nodes.join("\n")
            );
            if matches!(impact, "serious" | "critical") {
                problems.push(line);
            } else {
                eprintln!("axe-core (not failing) {line}");
            }
        }
        problems
    }

    /// Saves a PNG of the whole page (not only the window) as `name`.png
    /// beside [`Browser::screenshot`]'s, at `width`: the viewport is made
    /// as tall as the page for the capture, then set back.
    async fn full_page_screenshot(&self, name: &str, width: u32) -> PathBuf {
        let height = viewport_height(width);
        let page = self
            .run("return document.documentElement.scrollHeight", vec![])
            .await;
        let page = page.as_u64().expect("a height") as u32;
        // A longer page is cut at MAX_CAPTURE.
        let tall = page.clamp(height, MAX_CAPTURE);
        self.set_viewport(width, tall).await;
        let path = self.screenshot(name).await;
        self.set_viewport(width, height).await;
        path
    }
}

/// The viewport's height at `width` when audited: the phone's at its
/// width, else the desktop window's.
fn viewport_height(width: u32) -> u32 {
    if width == PHONE.0 { PHONE.1 } else { 900 }
}

/// The tallest full-page capture, in CSS pixels.
const MAX_CAPTURE: u32 = 12_000;

/// Runs axe-core on the document (its default rules: WCAG 2.0, 2.1 and
/// 2.2 A and AA, and best practices) and answers its violations, each
/// with its failing nodes.
const RUN_AXE: &str = "const done = arguments[arguments.length - 1];
axe.run(document, { resultTypes: ['violations'] })
  .then((result) => done(result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl,
    nodes: v.nodes.map((n) => ({ target: n.target, html: n.html.slice(0, 160) })),
  }))))
  .catch((error) => done({ error: String(error && error.stack || error) }));";

/// The innermost elements whose right edge passes the window's: what
/// makes a page scroll sideways, as tag#id.class and width.
const STICKING_OUT: &str = "const edge = document.documentElement.clientWidth + 0.5;
const out = [...document.querySelectorAll('body *')].filter((e) => {
  const box = e.getBoundingClientRect();
  return box.right > edge && ![...e.children].some((c) => c.getBoundingClientRect().right > edge);
});
return out.slice(0, 8).map((e) => `${e.tagName.toLowerCase()}${e.id ? '#' + e.id : ''}${e.className ? '.' + String(e.className).split(' ').join('.') : ''} (${Math.round(e.getBoundingClientRect().width)} px)`).join(', ');";

/// axe-core's script (tests/console-tools/, installed by `npm ci` there,
/// as `.ci/run` does; `PROXYDECK_TEST_AXE` names another copy). `None`,
/// with a loud line, when it is not installed; a failure instead when
/// `PROXYDECK_REQUIRE_BROWSER` is set.
fn axe_source() -> Option<&'static str> {
    static SOURCE: OnceLock<Option<String>> = OnceLock::new();
    SOURCE
        .get_or_init(|| {
            let path = std::env::var_os("PROXYDECK_TEST_AXE")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join("tests/console-tools/node_modules/axe-core/axe.min.js")
                });
            match std::fs::read_to_string(&path) {
                Ok(source) => Some(source),
                Err(why) => {
                    if std::env::var_os("PROXYDECK_REQUIRE_BROWSER").is_some() {
                        panic!(
                            "axe-core is required (PROXYDECK_REQUIRE_BROWSER) but {}: {why}; run npm ci --prefix tests/console-tools",
                            path.display()
                        );
                    }
                    eprintln!(
                        "\n######## SKIPPED: the accessibility check (no axe-core at {}: {why}).\n######## npm ci --prefix tests/console-tools\n",
                        path.display()
                    );
                    None
                }
            }
        })
        .as_deref()
}

/// A Chrome DevTools Protocol command through chromedriver's endpoint
/// `POST /session/{id}/goog/cdp/execute`.
#[derive(Debug)]
struct DevTools {
    cmd: &'static str,
    params: Value,
}

impl WebDriverCompatibleCommand for DevTools {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!(
            "session/{}/goog/cdp/execute",
            session_id.expect("a session")
        ))
    }

    fn method_and_body(&self, _: &url::Url) -> (reqwest::Method, Option<String>) {
        let body = json!({"cmd": self.cmd, "params": self.params});
        (reqwest::Method::POST, Some(body.to_string()))
    }
}

/// The port chromedriver prints it listens on (`--port=0` lets it pick).
fn driver_port(driver: &mut Child) -> u16 {
    let stdout = driver.stdout.take().expect("a stdout pipe");
    let (found, port) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Some(rest) = line.split("started successfully on port ").nth(1) {
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let _ = found.send(digits.parse::<u16>().expect("a port number"));
            }
        }
    });
    port.recv_timeout(STEP_DEADLINE)
        .expect("chromedriver says its port")
}
