//! `proxydeck admin ...`: organizations, users, tokens, projects, and
//! moving data in and out.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::Subcommand;

use super::transfer;
use crate::domain::api_token::validate_name;
use crate::domain::directory::{
    self, Organization, OrganizationTag, OrganizationType, User, UserTag,
};
use crate::domain::ids;
use crate::domain::time::Timestamp;
use crate::output::Output;
use crate::output::duration::parse_duration;
use crate::output::table;
use crate::store::operator::admin::{
    CreateOrganization, CreateToken, CreateUser, RemoveProject, RevokeToken,
};
use crate::store::operator::audit::AuditQuery;
use crate::store::operator::export::{AllOrganizations, AllUsers, UserTokens};
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
        after_help = "Example:\n  proxydeck admin token create --user demo-user --name ci --expires-in 90d"
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
    /// The audit log of the management API's writes, newest first: when,
    /// who (user, token, request id), which operation on which object, and
    /// the object's version before and after.
    #[command(
        after_help = "Examples:\n  proxydeck admin audit --since 24h\n  proxydeck admin audit --user USER_ID --since 2026-05-01T00:00:00Z --json"
    )]
    Audit {
        /// Only records from this time on: an RFC 3339 time, or a duration
        /// back from now (90d, 12h, 30m).
        #[arg(long, value_name = "TIME|DURATION")]
        since: Option<String>,
        /// Only the writes of this user.
        #[arg(long, value_name = "ID")]
        user: Option<String>,
        /// Only the writes to this object (a project id, say; a project's
        /// include those to its proxy settings revisions).
        #[arg(long, value_name = "ID")]
        object: Option<String>,
        /// At most this many records, the newest (1 to 10000); narrow with
        /// --since, --user and --object to reach older ones.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10000))]
        limit: u32,
    },
    /// Load an NDJSON file (organizations, users, projects, proxy settings):
    /// all of it or nothing, upserting by id. Shows progress on a terminal.
    #[command(
        after_help = "Example:\n  proxydeck admin import data.ndjson\n  gunzip -c data.ndjson.gz | proxydeck admin import -"
    )]
    Import {
        /// The file, or - for standard input.
        file: String,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Write the whole store, tokens excepted, as NDJSON that `import` reads
    /// back: organizations, users, projects, proxy settings, each in
    /// creation order, from one snapshot. Shows progress on a terminal.
    #[command(
        after_help = "Examples:\n  proxydeck admin export backup.ndjson\n  proxydeck admin export | gzip > backup.ndjson.gz\n\nA FILE is written whole or not at all (through a temporary file beside it).\nWhen exporting to stdout, the summary goes to stderr."
    )]
    Export {
        /// The file to write; stdout when omitted or -.
        file: Option<String>,
        /// No progress bar and, when exporting to stdout, no summary.
        #[arg(long, short)]
        quiet: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum OrgCommand {
    /// List every organization, oldest first.
    #[command(after_help = "Example:\n  proxydeck admin org list --json")]
    List,
    /// Create an organization.
    #[command(after_help = "Example:\n  proxydeck admin org create --name \"Acme Corp\"")]
    Create {
        /// The organization's name.
        #[arg(long)]
        name: String,
        /// A UUID; a new UUIDv7 when omitted.
        #[arg(long)]
        id: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum UserCommand {
    /// List every user with its roles in its organizations, oldest first.
    #[command(after_help = "Example:\n  proxydeck admin user list")]
    List,
    /// Create a user belonging to one or more organizations.
    #[command(
        after_help = "Example:\n  proxydeck admin user create --email ops@example.com --org 0190b7a4-0000-7000-8000-000000000001:editor"
    )]
    Create {
        /// The user's email address.
        #[arg(long)]
        email: String,
        /// The user's name; the part of the email before `@` when omitted.
        #[arg(long)]
        name: Option<String>,
        /// An organization id and the user's role there (admin, editor or
        /// member; admin when omitted); repeat for several.
        #[arg(long = "org", required = true, value_name = "ORG_ID[:ROLE]")]
        organizations: Vec<String>,
        /// 1 to 64 characters of A-Z a-z 0-9 _ -; a new UUIDv7 when omitted.
        #[arg(long)]
        id: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum TokenCommand {
    /// List a user's tokens, revoked ones included (never their secrets).
    #[command(after_help = "Example:\n  proxydeck admin token list --user demo-user")]
    List {
        /// The user whose tokens to list.
        #[arg(long = "user", value_name = "USER_ID")]
        user_id: String,
    },
    /// Create an API token; its secret is printed this once and never again.
    #[command(
        after_help = "Example:\n  proxydeck admin token create --user demo-user --name ci --expires-in 90d --json"
    )]
    Create {
        /// The user the token authenticates.
        #[arg(long = "user", value_name = "USER_ID")]
        user_id: String,
        /// The token's name (names need not be unique).
        #[arg(long)]
        name: String,
        /// Lifetime such as 90d, 12h, 30m or 45s; the token never expires when omitted.
        #[arg(long, value_parser = parse_duration, value_name = "DURATION")]
        expires_in: Option<Duration>,
    },
    /// Revoke an API token: it stops authenticating (within the token cache delay of running servers).
    #[command(
        after_help = "Example:\n  proxydeck admin token revoke TOKEN_ID   (the id `admin token list` shows)"
    )]
    Revoke {
        /// The token's id (as `admin token list` shows it).
        #[arg(value_name = "TOKEN_ID")]
        token_id: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum ProjectCommand {
    /// Remove a project from every listing.
    #[command(after_help = "Example:\n  proxydeck admin project delete initech-status")]
    Delete {
        /// The project's id.
        #[arg(value_name = "PROJECT_ID")]
        project_id: String,
    },
}

pub async fn run(command: AdminCommand, store: Arc<Store>, out: &Output) -> anyhow::Result<()> {
    match command {
        AdminCommand::Org {
            command: OrgCommand::List,
        } => {
            let organizations = store.run(AllOrganizations).await?;
            out.print(&organizations, || {
                table::render(
                    &["ID", "NAME", "CREATED"],
                    organizations
                        .iter()
                        .map(|o| vec![o.id.clone(), o.name.clone(), shown(o.created_at)]),
                )
            })
        }
        AdminCommand::User {
            command: UserCommand::List,
        } => {
            let users = store.run(AllUsers).await?;
            out.print(&users, || {
                table::render(
                    &["ID", "EMAIL", "NAME", "ROLES", "CREATED"],
                    users.iter().map(|u| {
                        let roles: Vec<String> = u
                            .roles
                            .iter()
                            .map(|(org, role)| format!("{org}:{}", role.as_str()))
                            .collect();
                        vec![
                            u.id.clone(),
                            u.email.clone(),
                            u.name.clone().unwrap_or_default(),
                            roles.join(","),
                            shown(u.created_at),
                        ]
                    }),
                )
            })
        }
        AdminCommand::Token {
            command: TokenCommand::List { user_id },
        } => {
            let tokens = store.run(UserTokens(user_id.clone())).await?;
            let now = Timestamp::now();
            out.print(&tokens, || {
                table::render(
                    &[
                        "ID",
                        "NAME",
                        "TOKEN",
                        "STATUS",
                        "LAST USED",
                        "EXPIRES",
                        "CREATED",
                    ],
                    tokens.iter().map(|record| {
                        let t = &record.token;
                        let status = if record.revoked_at.is_some() {
                            "revoked"
                        } else if t.expires_at.is_some_and(|e| e <= now) {
                            "expired"
                        } else {
                            "active"
                        };
                        vec![
                            t.id.clone(),
                            t.name.clone(),
                            t.token.clone(),
                            status.into(),
                            shown(t.last_used_at),
                            shown(t.expires_at),
                            t.created_at.to_string(),
                        ]
                    }),
                )
            })
        }
        AdminCommand::Org {
            command: OrgCommand::Create { name, id },
        } => {
            let mut organization = Organization {
                object: OrganizationTag::Tag,
                id: id.unwrap_or_else(ids::new_id),
                name,
                slug: None,
                kind: OrganizationType::Pro,
                created_at: None,
            };
            organization.normalize_and_validate()?;
            let organization = store.run(CreateOrganization(organization)).await?;
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
                    name,
                    organizations,
                    id,
                },
        } => {
            let mut roles = BTreeMap::new();
            for membership in &organizations {
                let (organization, role) =
                    directory::parse_membership(membership).map_err(anyhow::Error::msg)?;
                if roles.insert(organization, role).is_some() {
                    anyhow::bail!("--org {membership}: that organization is given twice");
                }
            }
            let mut user = User {
                object: UserTag::Tag,
                id: id.unwrap_or_else(ids::new_id),
                email,
                name,
                roles,
                organizations: None,
                created_at: None,
            };
            user.normalize_and_validate()?;
            let user = store.run(CreateUser(user)).await?;
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
            let mut token = store.run(CreateToken(new_token)).await?;
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
            store.run(RevokeToken(token_id.clone())).await?;
            out.print(
                &serde_json::json!({"id": token_id, "revoked": true}),
                || format!("revoked API token {token_id}"),
            )
        }
        AdminCommand::Project {
            command: ProjectCommand::Delete { project_id },
        } => {
            store.run(RemoveProject(project_id.clone())).await?;
            out.print(
                &serde_json::json!({"id": project_id, "deleted": true}),
                || format!("deleted project {project_id}"),
            )
        }
        AdminCommand::Audit {
            since,
            user,
            object,
            limit,
        } => {
            let since = since.map(|text| since_time(&text)).transpose()?;
            let records = store
                .run(AuditQuery {
                    since,
                    user_id: user,
                    object_id: object,
                    limit,
                })
                .await?;
            out.print(&records, || {
                table::render(
                    &[
                        "AT",
                        "USER",
                        "TOKEN",
                        "REQUEST",
                        "OPERATION",
                        "OBJECT",
                        "ID",
                        "VERSION",
                    ],
                    records.iter().map(|r| {
                        let version = |v: Option<i64>| v.map_or("-".into(), |v| v.to_string());
                        vec![
                            r.at.to_string(),
                            r.user_id.clone(),
                            r.token_id.clone(),
                            r.request_id.clone(),
                            r.operation.clone(),
                            r.object.clone(),
                            r.object_id.clone(),
                            format!(
                                "{} -> {}",
                                version(r.version_before),
                                version(r.version_after)
                            ),
                        ]
                    }),
                )
            })
        }
        AdminCommand::Import { file, quiet } => {
            transfer::import(store.as_ref(), &file, quiet, out).await
        }
        AdminCommand::Export { file, quiet } => transfer::export(store, file, quiet, out).await,
    }
}

/// `--since`: an RFC 3339 time, or a duration back from now.
fn since_time(text: &str) -> anyhow::Result<Timestamp> {
    if let Ok(at) = Timestamp::parse(text) {
        return Ok(at);
    }
    let back = parse_duration(text).map_err(|why| {
        anyhow::anyhow!("--since {text:?}: neither an RFC 3339 time nor a duration ({why})")
    })?;
    let millis = i64::try_from(back.as_millis()).unwrap_or(i64::MAX);
    Ok(
        Timestamp::from_millis(Timestamp::now().as_millis().saturating_sub(millis))
            .unwrap_or(Timestamp::now()),
    )
}

/// A timestamp for a table cell; `-` when there is none.
fn shown(at: Option<Timestamp>) -> String {
    at.map_or_else(|| "-".into(), |t| t.to_string())
}
