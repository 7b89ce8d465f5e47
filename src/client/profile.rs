//! The terminal client's profiles: the URL and token `proxydeck login`
//! keeps in a file of the user's configuration folder
//! (`$XDG_CONFIG_HOME/proxydeck/profiles/NAME.toml`, else
//! `~/.config/proxydeck/profiles/NAME.toml`), readable by its owner only.
//! Only the files are here, beneath both their readers (`connection`:
//! which URL and token a command uses) and their writers (`login`).

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow, bail};
use clap::Args;
use serde::{Deserialize, Serialize};

/// The profile used when none is named.
const DEFAULT_PROFILE: &str = "default";

#[derive(Args, Clone)]
pub struct ProfileArg {
    /// The profile `proxydeck login` saved the URL and token in.
    #[arg(
        long,
        env = "PROXYDECK_PROFILE",
        default_value = DEFAULT_PROFILE,
        value_parser = parse_profile_name,
        value_name = "NAME"
    )]
    pub profile: String,
}

/// A profile's name becomes a file name: letters, digits, `-`, `_`, `.`.
fn parse_profile_name(text: &str) -> Result<String, String> {
    let fits = !text.is_empty()
        && text.len() <= 64
        && !text.starts_with('.')
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if fits {
        Ok(text.to_owned())
    } else {
        Err(
            "a profile name is up to 64 letters, digits, '-', '_' and '.', not starting with '.'"
                .into(),
        )
    }
}

/// What a profile file holds. No `Debug`: it holds the token.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Saved {
    pub url: String,
    pub token: String,
}

/// The folder of the profiles.
fn folder() -> anyhow::Result<PathBuf> {
    use etcetera::BaseStrategy as _;
    let base = etcetera::choose_base_strategy().map_err(|_| {
        anyhow!("cannot find your configuration folder: set HOME or XDG_CONFIG_HOME")
    })?;
    Ok(base.config_dir().join("proxydeck").join("profiles"))
}

/// The file of the profile `profile`.
pub fn file_of(profile: &str) -> anyhow::Result<PathBuf> {
    Ok(folder()?.join(format!("{profile}.toml")))
}

/// The profile in `file`, if there is one. Errors never quote the file:
/// it holds a token.
pub fn load(file: &Path) -> anyhow::Result<Option<Saved>> {
    let text = match std::fs::read_to_string(file) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => bail!("cannot read the profile {}: {error}", file.display()),
    };
    toml::from_str(&text).map(Some).map_err(|_| {
        anyhow!(
            "the profile {} is not one `proxydeck login` wrote; run it again",
            file.display()
        )
    })
}

/// Writes `saved` to `file` whole or not at all, readable by its owner
/// only from the start: a temporary file beside it (created with mode
/// 0600) renamed over it.
pub fn save(file: &Path, saved: &Saved) -> anyhow::Result<()> {
    let folder = file.parent().expect("a profile file is in a folder");
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
        .create(folder)
        .with_context(|| format!("cannot create {}", folder.display()))?;
    let text = toml::to_string(saved).context("cannot write the profile")?;
    let mut temporary = tempfile::Builder::new()
        .prefix(".profile-")
        .tempfile_in(folder)
        .with_context(|| format!("cannot write in {}", folder.display()))?;
    temporary.write_all(text.as_bytes())?;
    temporary.as_file().sync_all()?;
    temporary
        .persist(file)
        .map_err(|error| anyhow!("cannot write {}: {}", file.display(), error.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_are_file_names() {
        for good in ["default", "staging", "eu-west_2", "a.b"] {
            assert_eq!(parse_profile_name(good).unwrap(), good);
        }
        for bad in ["", "../x", "a/b", ".hidden", "with space", &"x".repeat(65)] {
            assert!(parse_profile_name(bad).is_err(), "{bad:?}");
        }
    }
}
