//! Throwaway PostgreSQL clusters made with `initdb` and `pg_ctl`: one
//! shared by the test processes of a run when no server is given, and
//! private ones that a fault test may stop and start.
//!
//! Clusters listen only on a Unix socket in their own folder, so they take
//! no TCP port. As root, the server programs run as the `postgres` user.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A cluster in `dir`, listening on `dir/.s.PGSQL.<port>`.
pub struct Cluster {
    dir: PathBuf,
    port: u16,
}

impl Cluster {
    /// Makes a new cluster in `dir` (which must not hold one yet) and
    /// starts it.
    pub fn create(dir: &Path, port: u16) -> Result<Self, String> {
        let cluster = Self {
            dir: dir.to_owned(),
            port,
        };
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        hand_to_postgres_user(dir)?;
        run(server_command("initdb")?
            .arg("-D")
            .arg(cluster.data())
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "--no-sync",
                "-E",
                "UTF8",
                "--locale=C",
            ]))?;
        cluster.start()?;
        Ok(cluster)
    }

    /// The cluster already in `dir`, started if it was not running.
    pub fn reuse(dir: &Path, port: u16) -> Result<Self, String> {
        let cluster = Self {
            dir: dir.to_owned(),
            port,
        };
        if !cluster.running() {
            cluster.start()?;
        }
        Ok(cluster)
    }

    pub fn exists(dir: &Path) -> bool {
        dir.join("data").join("PG_VERSION").exists()
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// A URL to its `postgres` database. The authority stays empty: a host
    /// there would be tried before the socket folder given as `host=`.
    pub fn url(&self) -> String {
        format!(
            "postgres:///postgres?host={}&port={}&user=postgres",
            self.dir.display(),
            self.port
        )
    }

    pub fn start(&self) -> Result<(), String> {
        let options = format!(
            "-k {} -c listen_addresses='' -p {} -c fsync=off -c max_connections=200",
            self.dir.display(),
            self.port
        );
        run(server_command("pg_ctl")?
            .arg("-D")
            .arg(self.data())
            .arg("-l")
            .arg(self.dir.join("server.log"))
            .args(["-o", &options, "-w", "-t", "30", "start"]))
    }

    /// Stops the server at once, as a crash or a kill would.
    pub fn stop(&self) -> Result<(), String> {
        run(server_command("pg_ctl")?.arg("-D").arg(self.data()).args([
            "-m",
            "immediate",
            "-w",
            "stop",
        ]))
    }

    fn running(&self) -> bool {
        server_command("pg_ctl")
            .and_then(|mut command| {
                command
                    .arg("-D")
                    .arg(self.data())
                    .arg("status")
                    .output()
                    .map_err(|e| e.to_string())
            })
            .is_ok_and(|output| output.status.success())
    }
}

/// Where `initdb`, `pg_ctl` and `postgres` are: on the PATH, or in the
/// Debian/Ubuntu layout.
pub fn server_bin() -> Option<PathBuf> {
    if let Some(found) = std::env::var_os("PATH").and_then(|path| {
        std::env::split_paths(&path)
            .find(|dir| dir.join("initdb").is_file() && dir.join("pg_ctl").is_file())
    }) {
        return Some(found);
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|entry| entry.ok().map(|e| e.path().join("bin")))
        .filter(|bin| bin.join("initdb").is_file() && bin.join("pg_ctl").is_file())
        .collect();
    versions.sort();
    versions.pop()
}

fn running_as_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|output| String::from_utf8_lossy(&output.stdout).trim() == "0")
}

/// A server program; as root, run as the `postgres` user (the server
/// refuses to run as root).
fn server_command(program: &str) -> Result<Command, String> {
    let bin = server_bin().ok_or("initdb and pg_ctl are not installed")?;
    let path = bin.join(program);
    Ok(if running_as_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(path);
        command
    } else {
        Command::new(path)
    })
}

/// As root, the cluster's folder must belong to the `postgres` user.
fn hand_to_postgres_user(dir: &Path) -> Result<(), String> {
    if !running_as_root() {
        return Ok(());
    }
    let id = |flag: &str| -> Result<u32, String> {
        let output = Command::new("id")
            .args([flag, "postgres"])
            .output()
            .map_err(|e| e.to_string())?;
        String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse()
            .map_err(|_| "there is no postgres user to run the server as".to_owned())
    };
    std::os::unix::fs::chown(dir, Some(id("-u")?), Some(id("-g")?))
        .map_err(|e| format!("cannot give {} to the postgres user: {e}", dir.display()))
}

fn run(command: &mut Command) -> Result<(), String> {
    let output = command.output().map_err(|e| format!("{command:?}: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{command:?} failed: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ))
    }
}
