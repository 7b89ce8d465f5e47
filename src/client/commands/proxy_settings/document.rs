//! The `--json` and `--jq` flags of the commands that print one JSON
//! document (`proxy-settings get`, `diff`, `create --dry-run`): their own
//! file, so that those commands' files need not import each other.

use clap::Args;

/// How one document is shown: `--json`, `--jq`.
#[derive(Args)]
pub struct Document {
    /// Print the result as one JSON document (indented and coloured on a
    /// terminal, one line when piped).
    // The global flag's id and value ("" always): `proxydeck --json
    // proxy-settings diff ...` works too.
    #[arg(long, num_args = 0, default_missing_value = "")]
    pub json: Option<String>,
    /// Filter that JSON document with a jq program, such as
    /// '.backends[].name' (strings print without quotes, as with jq -r).
    #[arg(long, value_name = "EXPR")]
    pub jq: Option<String>,
}
