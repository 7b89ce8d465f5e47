//! A real headless Chromium, driven over WebDriver (Debian's `chromium`
//! and `chromedriver`, by the `fantoccini` client). Waits are events: a
//! script in the page resolves when a MutationObserver sees the awaited
//! state, instead of polling on a timer.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use fantoccini::elements::Element;
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
    /// A phone's, 390 x 844 (Chromium's device emulation: a headless
    /// window is never narrower than 500 px).
    Phone,
}

/// A browser for one test. The driver runs in a process group of its
/// own, which its browser processes join; dropping this kills the whole
/// group, so a failing test leaves no browser behind (killing the driver
/// alone would orphan them).
pub(crate) struct Browser {
    pub(crate) client: Client,
    base: String,
    driver: Child,
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
                "deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 1, "touch": true},
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
    /// folder (target/tmp/console-screenshots); answers its path.
    pub(crate) async fn screenshot(&self, name: &str) -> PathBuf {
        let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-screenshots");
        std::fs::create_dir_all(&folder).expect("the screenshot folder");
        let png = self.client.screenshot().await.expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG"), "not a PNG");
        let path = folder.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("the screenshot is saved");
        path
    }

    /// Whether the page is wider than its window (a phone would scroll
    /// sideways). The layout viewport's width (`clientWidth`), not
    /// `innerWidth`: a phone's emulation zooms out to fit a page that is
    /// too wide, and `innerWidth` grows with it, so it never tells.
    pub(crate) async fn overflows(&self) -> bool {
        self.run(
            "return document.documentElement.scrollWidth > document.documentElement.clientWidth",
            vec![],
        )
        .await
            == json!(true)
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
