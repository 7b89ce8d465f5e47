//! Throwaway PostgreSQL clusters made with `initdb` and `pg_ctl`: one
//! shared by the test processes of a run when no server is given, and
//! private ones that a fault test may stop and start.
//!
//! Clusters listen on a Unix socket in their own folder, and take no TCP
//! port unless made with TLS ([`Cluster::create_with_tls`]). As root, the
//! server programs run as the `postgres` user.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A cluster in `dir`, listening on `dir/.s.PGSQL.<port>` (and on
/// 127.0.0.1:`port` with TLS when made with it).
pub struct Cluster {
    dir: PathBuf,
    port: u16,
    tls: bool,
}

/// How a cluster lets clients in.
enum Access<'a> {
    /// Anyone, as the local servers of CI and development do.
    Trust,
    /// With TLS on TCP; trust otherwise.
    Tls(ServerTls<'a>),
    /// Only with the `postgres` user's password (scram-sha-256), on the
    /// socket too.
    Password(&'a str),
}

/// What a cluster with TLS serves: its certificate chain and private key,
/// PEM.
pub struct ServerTls<'a> {
    pub certificates: &'a str,
    pub key: &'a str,
}

impl Cluster {
    /// Makes a new cluster in `dir` (which must not hold one yet) and
    /// starts it.
    pub fn create(dir: &Path, port: u16) -> Result<Self, String> {
        Self::make(dir, port, Access::Trust)
    }

    /// [`Cluster::create`], letting in only clients that give the
    /// `postgres` user's `password` (scram-sha-256).
    pub fn create_with_password(dir: &Path, port: u16, password: &str) -> Result<Self, String> {
        Self::make(dir, port, Access::Password(password))
    }

    /// [`Cluster::create`], also listening on 127.0.0.1:`port` with TLS
    /// on (`ssl=on`), serving `tls`.
    pub fn create_with_tls(dir: &Path, port: u16, tls: ServerTls<'_>) -> Result<Self, String> {
        Self::make(dir, port, Access::Tls(tls))
    }

    fn make(dir: &Path, port: u16, access: Access<'_>) -> Result<Self, String> {
        let cluster = Self {
            dir: dir.to_owned(),
            port,
            tls: matches!(access, Access::Tls(_)),
        };
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let_postgres_pass_to(dir)?;
        hand_to_postgres_user(dir)?;
        let mut initdb = server_command("initdb")?;
        initdb.arg("-D").arg(cluster.data()).args([
            "-U",
            "postgres",
            "--no-sync",
            "-E",
            "UTF8",
            "--locale=C",
        ]);
        if let Access::Password(password) = access {
            let file = dir.join("superuser-password");
            std::fs::write(&file, password)
                .map_err(|e| format!("cannot write {}: {e}", file.display()))?;
            hand_to_postgres_user(&file)?;
            initdb
                .arg("--auth=scram-sha-256")
                .arg("--pwfile")
                .arg(&file);
        } else {
            initdb.arg("--auth=trust");
        }
        run(&mut initdb)?;
        if let Access::Tls(tls) = access {
            // Where ssl_cert_file and ssl_key_file look by default; the
            // server refuses a key others may read.
            for (name, text) in [("server.crt", tls.certificates), ("server.key", tls.key)] {
                let path = cluster.data().join(name);
                std::fs::write(&path, text)
                    .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                    .map_err(|e| format!("cannot restrict {}: {e}", path.display()))?;
                hand_to_postgres_user(&path)?;
            }
        }
        cluster.start()?;
        Ok(cluster)
    }

    /// A streaming replica of `primary` in `dir` (which must not hold a
    /// cluster yet), made by `pg_basebackup -R`, started, and replaying
    /// the primary's log as it comes.
    pub fn replica_of(primary: &Cluster, dir: &Path) -> Result<Self, String> {
        assert!(!primary.tls, "a replica copies a cluster on its socket");
        let replica = Self {
            dir: dir.to_owned(),
            port: primary.port,
            tls: false,
        };
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        hand_to_postgres_user(dir)?;
        run(server_command("pg_basebackup")?
            .arg("-D")
            .arg(replica.data())
            .arg("-h")
            .arg(&primary.dir)
            .args(["-p", &primary.port.to_string(), "-U", "postgres"])
            .args(["-R", "-X", "stream", "--no-sync", "-c", "fast"]))?;
        replica.start()?;
        Ok(replica)
    }

    /// The cluster already in `dir`, started if it was not running.
    pub fn reuse(dir: &Path, port: u16) -> Result<Self, String> {
        let cluster = Self {
            dir: dir.to_owned(),
            port,
            tls: false,
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

    /// A URL to its `postgres` database over TCP, naming the server
    /// `host` (the name a certificate is checked against), with `query`
    /// (`sslmode=...`) added.
    pub fn tcp_url(&self, host: &str, query: &str) -> String {
        assert!(self.tls, "only a cluster with TLS listens on TCP");
        format!("postgres://postgres@{host}:{}/postgres?{query}", self.port)
    }

    pub fn start(&self) -> Result<(), String> {
        let listen = if self.tls {
            "-c listen_addresses=127.0.0.1 -c ssl=on"
        } else {
            "-c listen_addresses=''"
        };
        let options = format!(
            "-k {} {listen} -p {} -c fsync=off -c max_connections=200",
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
        // Where initdb really is, with the other server programs
        // (pg_basebackup), when the PATH holds links to a few of them.
        let real = found.join("initdb").canonicalize().ok();
        return Some(
            real.and_then(|initdb| Some(initdb.parent()?.to_owned()))
                .unwrap_or(found),
        );
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

/// As root, the `postgres` user must be able to pass through every folder
/// above the cluster: a checkout in a folder of `mktemp -d` (mode 0700)
/// would keep it out (initdb: "Permission denied"). Each such folder gets
/// the others' search bit (`o+x`) only: nothing in it becomes readable.
fn let_postgres_pass_to(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    if !running_as_root() {
        return Ok(());
    }
    let absolute = dir
        .canonicalize()
        .map_err(|e| format!("cannot resolve {}: {e}", dir.display()))?;
    for folder in absolute.ancestors().skip(1) {
        let metadata = std::fs::metadata(folder).map_err(|e| e.to_string())?;
        let mode = metadata.permissions().mode();
        if mode & 0o001 == 0 {
            std::fs::set_permissions(folder, std::fs::Permissions::from_mode(mode | 0o001))
                .map_err(|e| format!("cannot let postgres through {}: {e}", folder.display()))?;
        }
    }
    Ok(())
}

/// As root, the cluster's files must belong to the `postgres` user.
fn hand_to_postgres_user(path: &Path) -> Result<(), String> {
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
    std::os::unix::fs::chown(path, Some(id("-u")?), Some(id("-g")?))
        .map_err(|e| format!("cannot give {} to the postgres user: {e}", path.display()))
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

/// A cluster of a test's own, stopped and removed with the guard.
pub struct PrivateCluster {
    pub cluster: Cluster,
    pub dir: PathBuf,
}

impl PrivateCluster {
    /// `None` (the test ends, loudly) when `initdb`/`pg_ctl` are missing,
    /// unless PostgreSQL is required here.
    pub fn start() -> Option<Self> {
        Self::make(|dir| Cluster::create(dir, 5432))
    }

    /// [`PrivateCluster::start`], letting in only the `postgres` user
    /// with `password`.
    pub fn start_with_password(password: &str) -> Option<Self> {
        Self::make(|dir| Cluster::create_with_password(dir, 5432, password))
    }

    /// [`PrivateCluster::start`], with TLS on a free port of 127.0.0.1.
    pub fn start_with_tls(tls: ServerTls<'_>) -> Option<Self> {
        Self::make(|dir| Cluster::create_with_tls(dir, crate::binary::free_port(), tls))
    }

    /// A streaming replica of this cluster, of its own.
    pub fn replica(&self) -> Self {
        Self::make(|dir| Cluster::replica_of(&self.cluster, dir))
            .expect("a cluster was made, so a replica can be")
    }

    fn make(create: impl FnOnce(&Path) -> Result<Cluster, String>) -> Option<Self> {
        if server_bin().is_none() {
            if std::env::var_os("PROXYDECK_REQUIRE_POSTGRES").is_some() {
                panic!("this test needs initdb and pg_ctl to run a server of its own");
            }
            eprintln!(
                "\n######## SKIPPED: initdb/pg_ctl are not installed; the test needs them.\n"
            );
            return None;
        }
        // In the system's temporary folder: the postgres user must be able
        // to reach it, which a checkout in a private folder would not allow.
        let dir = std::env::temp_dir().join(format!(
            "proxydeck-cluster-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let cluster = create(&dir).expect("a throwaway cluster starts");
        Some(Self { cluster, dir })
    }
}

impl Drop for PrivateCluster {
    fn drop(&mut self) {
        let _ = self.cluster.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
