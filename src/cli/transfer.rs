//! `admin import` and `admin export`: data in and out as NDJSON, streamed
//! both ways so memory stays flat whatever the size, with a progress bar on
//! a terminal.

use std::io::{BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, bail};
use tokio::sync::mpsc;

use crate::domain::import::{ObjectCounts, read_records};
use crate::output::Output;
use crate::output::progress;
use crate::store::Store;
use crate::store::operator::export::{CountObjects, Export};
use crate::store::operator::import::Import;

/// Lines on their way from the store to the file: enough to keep both
/// sides busy, few enough to keep memory flat.
const EXPORT_BUFFER_LINES: usize = 512;
const IO_BUFFER_BYTES: usize = 1 << 16;

pub async fn import(store: &Store, file: &str, quiet: bool, out: &Output) -> anyhow::Result<()> {
    let records = if file == "-" {
        let bar = progress::bytes(None, quiet);
        read_records(BufReader::with_capacity(
            IO_BUFFER_BYTES,
            bar.wrap_read(std::io::stdin()),
        ))
    } else {
        let opened = std::fs::File::open(file).with_context(|| format!("cannot open {file}"))?;
        let size = opened.metadata().map(|m| m.len()).ok();
        let bar = progress::bytes(size, quiet);
        read_records(BufReader::with_capacity(
            IO_BUFFER_BYTES,
            bar.wrap_read(opened),
        ))
    };
    let counts = match Import::outcome(store.run(Import::new(records)).await) {
        Ok(counts) => counts,
        Err(error) => bail!("import failed, nothing was written: {error}"),
    };
    out.print(&counts, || format!("imported {}", describe(&counts)))
}

pub async fn export(
    store: Arc<Store>,
    file: Option<String>,
    quiet: bool,
    out: &Output,
) -> anyhow::Result<()> {
    let destination = file.filter(|f| f != "-").map(PathBuf::from);
    let sink = match &destination {
        None => Sink::Stdout,
        // Written beside the destination, renamed into place when complete:
        // a failed export never leaves a partial file under the real name.
        Some(path) => Sink::File(temporary_beside(path)?),
    };
    let expected = store.run(CountObjects).await?;
    let bar = progress::lines(
        expected.organizations + expected.users + expected.projects + expected.proxy_settings,
        quiet,
    );
    let (sender, receiver) = mpsc::channel::<String>(EXPORT_BUFFER_LINES);
    let writer = {
        let bar = bar.clone();
        tokio::task::spawn_blocking(move || sink.write(receiver, &bar))
    };
    let exported = store.run(Export(sender)).await;
    // The writer ends when the store drops its sender. Its error (a full
    // disk, a closed pipe) is the first cause when both fail.
    let sink = writer.await.context("the export writer stopped")??;
    let counts = exported?;
    bar.finish_and_clear();
    match (sink, destination) {
        (Sink::File(written), Some(path)) => {
            written
                .persist(&path)
                .with_context(|| format!("cannot write {}", path.display()))?;
            out.print(&counts, || format!("exported {}", describe(&counts)))
        }
        _ if quiet => Ok(()),
        // stdout holds the data: the summary goes to stderr.
        _ if out.json => {
            eprintln!("{}", serde_json::to_string(&counts)?);
            Ok(())
        }
        _ => {
            eprintln!("exported {}", describe(&counts));
            Ok(())
        }
    }
}

/// A new file in `path`'s folder with the mode a file written there would
/// get: the mode of the file it will replace, or the usual one (0666 less
/// the umask), not a temporary file's private 0600.
fn temporary_beside(path: &Path) -> anyhow::Result<tempfile::NamedTempFile> {
    use std::os::unix::fs::PermissionsExt as _;
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let replaced = std::fs::metadata(path).ok().map(|m| m.permissions());
    let temporary = tempfile::Builder::new()
        .prefix(".proxydeck-export")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(folder)
        .with_context(|| format!("cannot create a file in {}", folder.display()))?;
    if let Some(permissions) = replaced {
        temporary.as_file().set_permissions(permissions)?;
    }
    Ok(temporary)
}

enum Sink {
    Stdout,
    File(tempfile::NamedTempFile),
}

impl Sink {
    /// Writes every received line, then flushes (and syncs a file), and
    /// hands the sink back.
    fn write(
        self,
        mut lines: mpsc::Receiver<String>,
        bar: &indicatif::ProgressBar,
    ) -> anyhow::Result<Self> {
        let mut write_all = |sink: &mut dyn Write| -> std::io::Result<()> {
            while let Some(line) = lines.blocking_recv() {
                sink.write_all(line.as_bytes())?;
                sink.write_all(b"\n")?;
                bar.inc(1);
            }
            sink.flush()
        };
        match self {
            Self::Stdout => {
                let mut stdout =
                    BufWriter::with_capacity(IO_BUFFER_BYTES, std::io::stdout().lock());
                write_all(&mut stdout).context("cannot write to stdout")?;
                Ok(Self::Stdout)
            }
            Self::File(temporary) => {
                let mut file = BufWriter::with_capacity(IO_BUFFER_BYTES, temporary);
                write_all(&mut file).context("cannot write the export")?;
                let temporary = file.into_inner().map_err(|e| e.into_error())?;
                temporary.as_file().sync_all()?;
                Ok(Self::File(temporary))
            }
        }
    }
}

fn describe(counts: &ObjectCounts) -> String {
    format!(
        "{} organizations, {} users, {} projects, {} proxy settings revisions",
        counts.organizations, counts.users, counts.projects, counts.proxy_settings
    )
}
