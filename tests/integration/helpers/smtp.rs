//! A real SMTP server on loopback for the invitations' emails: Debian's
//! python3-aiosmtpd, its Mailbox handler writing a maildir the tests read.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::binary::{Exit, accepts, free_port};

/// aiosmtpd on a loopback port, keeping what it receives in a maildir.
pub struct SmtpServer {
    pub port: u16,
    dir: tempfile::TempDir,
    exit: Option<Exit>,
}

impl SmtpServer {
    pub fn start() -> Self {
        let dir = tempfile::tempdir().expect("a folder");
        let port = free_port();
        let child = Command::new("/usr/bin/python3")
            .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}")])
            .args(["-c", "aiosmtpd.handlers.Mailbox"])
            .arg(dir.path().join("mail"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3-aiosmtpd is installed (.ci/run installs it)");
        let exit = Exit::of(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while !accepts(port) {
            assert!(Instant::now() < deadline, "aiosmtpd did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            port,
            dir,
            exit: Some(exit),
        }
    }

    pub fn stop(&mut self) {
        if let Some(exit) = self.exit.take() {
            exit.kill();
        }
        while accepts(self.port) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The messages received, as their text (quoted-printable undone).
    pub fn messages(&self) -> Vec<String> {
        let mut found = Vec::new();
        for folder in ["new", "cur"] {
            let Ok(entries) = std::fs::read_dir(self.dir.path().join("mail").join(folder)) else {
                continue;
            };
            for entry in entries.flatten() {
                let raw = std::fs::read_to_string(entry.path()).expect("a message");
                found.push(unquote(&raw));
            }
        }
        found
    }

    pub async fn one_message(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let [one] = self.messages().as_slice() {
                return one.clone();
            }
            assert!(Instant::now() < deadline, "no message arrived");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Quoted-printable undone (soft line breaks, `=XX`), so that a long link
/// reads whole whichever transfer encoding was chosen.
fn unquote(text: &str) -> String {
    let joined = text.replace("=\r\n", "").replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'=', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
