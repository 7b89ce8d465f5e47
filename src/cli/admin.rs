//! `proxydeck admin ...`: organizations, users, tokens, imports.

use std::io::BufReader;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use clap::Subcommand;

use super::Output;
use super::duration::parse_duration;
use crate::domain::api_token::validate_name;
use crate::domain::directory::{Organization, OrganizationTag, User, UserTag};
use crate::domain::ids;
use crate::domain::import::read_records;
use crate::domain::time::Timestamp;
use crate::store::{NewToken, Store};

#[derive(Subcommand, Debug)]
pub enum AdminCommand {
    /// Organizations.
    #[command(after_help = "Example:\n  proxydeck admin org create --name \"Acme Corp\"")]
    Org {
        #[command(subcommand)]
        command: OrgCommand,
    },
    /// Users.
    #[command(
        after_help = "Example:\n  proxydeck admin user create --email ops@example.com --org ORG_ID"
    )]
    User {
        #[command(subcommand)]
        command: UserCommand,
    },
    /// API tokens.
    #[command(
        after_help = "Example:\n  proxydeck admin token create --user USER_ID --name ci --expires-in 90d"
    )]
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Projects.
    #[command(after_help = "Example:\n  proxydeck admin project delete PROJECT_ID")]
    Project {
        #[command(subcommand)]
        command: ProjectCommand,
    },
    /// Load an NDJSON file (organizations, users, projects, proxy settings):
    /// all of it or nothing, upserting by id.
    #[command(
        after_help = "Example:\n  proxydeck admin import data.ndjson\n  gunzip -c data.ndjson.gz | proxydeck admin import -"
    )]
    Import {
        /// The file, or - for standard input.
        file: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum OrgCommand {
    /// Create an organization.
    #[command(after_help = "Example:\n  proxydeck admin org create --name \"Acme Corp\"")]
    Create {
        #[arg(long)]
        name: String,
        /// A UUID; a new UUIDv7 when omitted.
        #[arg(long)]
        id: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum UserCommand {
    /// Create a user belonging to one or more organizations.
    #[command(
        after_help = "Example:\n  proxydeck admin user create --email ops@example.com --org 0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6f"
    )]
    Create {
        #[arg(long)]
        email: String,
        /// An organization id; repeat for several.
        #[arg(long = "org", required = true, value_name = "ORG_ID")]
        organizations: Vec<String>,
        /// 1 to 64 characters of A-Z a-z 0-9 _ -; a new UUIDv7 when omitted.
        #[arg(long)]
        id: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// Create an API token; its secret is printed this once and never again.
    #[command(
        after_help = "Example:\n  proxydeck admin token create --user 0190b7a4-... --name ci --expires-in 90d --json"
    )]
    Create {
        #[arg(long = "user", value_name = "USER_ID")]
        user_id: String,
        #[arg(long)]
        name: String,
        /// Lifetime such as 90d, 12h, 30m or 45s; the token never expires when omitted.
        #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
        expires_in: Option<Duration>,
    },
    /// Revoke an API token: it stops authenticating (within the token cache delay of running servers).
    #[command(
        after_help = "Example:\n  proxydeck admin token revoke 0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6f"
    )]
    Revoke {
        #[arg(value_name = "TOKEN_ID")]
        token_id: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum ProjectCommand {
    /// Remove a project from every listing.
    #[command(after_help = "Example:\n  proxydeck admin project delete my-project")]
    Delete {
        #[arg(value_name = "PROJECT_ID")]
        project_id: String,
    },
}

pub async fn run(command: AdminCommand, store: &dyn Store, out: &Output) -> anyhow::Result<()> {
    match command {
        AdminCommand::Org {
            command: OrgCommand::Create { name, id },
        } => {
            let mut organization = Organization {
                object: OrganizationTag::Tag,
                id: id.unwrap_or_else(ids::new_id),
                name,
                created_at: None,
            };
            organization.normalize_and_validate()?;
            let organization = store.create_organization(organization).await?;
            out.print(&organization, || {
                format!(
                    "created organization {} ({})",
                    organization.id, organization.name
                )
            })
        }
        AdminCommand::User {
            command:
                UserCommand::Create {
                    email,
                    organizations,
                    id,
                },
        } => {
            let mut user = User {
                object: UserTag::Tag,
                id: id.unwrap_or_else(ids::new_id),
                email,
                organizations,
                created_at: None,
            };
            user.normalize_and_validate()?;
            let user = store.create_user(user).await?;
            out.print(&user, || {
                format!("created user {} ({})", user.id, user.email)
            })
        }
        AdminCommand::Token {
            command:
                TokenCommand::Create {
                    user_id,
                    name,
                    expires_in,
                },
        } => {
            validate_name(&name)?;
            let expires_at = match expires_in {
                None => None,
                Some(lifetime) => {
                    let seconds = i64::try_from(lifetime.as_secs()).unwrap_or(i64::MAX);
                    let at = Timestamp::now()
                        .plus_seconds(seconds)
                        .context("--expires-in is too long")?;
                    Some(at)
                }
            };
            let (new_token, secret) = NewToken::mint(user_id, name, expires_at);
            let mut token = store.create_token(new_token).await?;
            token.token = secret;
            out.print(&token, || {
                format!(
                    "created API token {} for user {}\n\n    {}\n\nThis secret is shown once; store it now.",
                    token.id, token.user_id, token.token
                )
            })
        }
        AdminCommand::Token {
            command: TokenCommand::Revoke { token_id },
        } => {
            store.revoke_token(&token_id).await?;
            out.print(
                &serde_json::json!({"id": token_id, "revoked": true}),
                || format!("revoked API token {token_id}"),
            )
        }
        AdminCommand::Project {
            command: ProjectCommand::Delete { project_id },
        } => {
            store.delete_project(&project_id).await?;
            out.print(
                &serde_json::json!({"id": project_id, "deleted": true}),
                || format!("deleted project {project_id}"),
            )
        }
        AdminCommand::Import { file } => {
            let records = if file == "-" {
                read_records(BufReader::new(std::io::stdin()))
            } else {
                let path = PathBuf::from(&file);
                let opened =
                    std::fs::File::open(&path).with_context(|| format!("cannot open {file}"))?;
                read_records(BufReader::with_capacity(1 << 16, opened))
            };
            let summary = match store.import(records).await {
                Ok(summary) => summary,
                Err(error) => bail!("import failed, nothing was written: {error}"),
            };
            out.print(&summary, || {
                format!(
                    "imported {} organizations, {} users, {} projects, {} proxy settings revisions",
                    summary.organizations, summary.users, summary.projects, summary.proxy_settings
                )
            })
        }
    }
}
