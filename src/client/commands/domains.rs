//! `proxydeck domains`: a project's custom domains (issue 46): list them
//! with where each one's DNS proof stands, add one (and be told the TXT
//! record that proves it yours), check its record now, remove one.
//! `verify` fails with [`NotVerified`] (exit status 4) while the name does
//! not route, so that a script can wait on it and still tell that apart
//! from any other failure (1).

use clap::{Args, Subcommand};
use reqwest::Method;
use serde_json::{Map, Value, json};

use crate::client::connection::Connection;
use crate::client::http::{Request, v1};
use crate::client::listing::{ListKind, ProjectListing};
use crate::client::names::PROJECT_HELP;
use crate::client::object::{DELETED, Deletion, ObjectKind, ObjectShape, Session, create};
use crate::output::printable;
use crate::output::table::{self, Column};

#[derive(Subcommand)]
pub enum DomainsCommand {
    /// List a project's domains, every page: whether each is verified
    /// (routes), has a certificate, and what its last DNS check found.
    #[command(
        after_help = "Examples:\n  proxydeck domains list acme-corp/acme-shop\n  proxydeck domains list acme-shop --jq '.[] | select(.dns_status | not) | .name'"
    )]
    List(ProjectListing),
    /// Add a domain to a project and print the DNS record that proves it
    /// yours: it is pending, and routes nowhere, until the record is found.
    #[command(
        after_help = concat!("Examples:\n  proxydeck domains add acme-corp/acme-shop shop.example.com\n  proxydeck domains add acme-shop '*.shops.example.com' --jq .verification.record.value", retried_create_note!())
    )]
    Add(Named),
    /// Check a domain's DNS record now and say what was found. Exits 0
    /// when the domain is verified (it routes), 4 when it is not yet, 1 on
    /// any other failure.
    #[command(
        after_help = "Examples:\n  proxydeck domains verify acme-corp/acme-shop shop.example.com\n  until proxydeck domains verify acme-shop shop.example.com; do [ $? -eq 4 ] || exit 1; sleep 60; done"
    )]
    Verify(Named),
    /// Remove a domain from a project: it stops routing there (asks first
    /// on a terminal; --yes does not ask).
    #[command(
        after_help = "Example:\n  proxydeck domains remove acme-corp/acme-shop shop.example.com --yes"
    )]
    Remove(Remove),
}

/// Runs a `domains` command.
pub async fn run(command: DomainsCommand) -> anyhow::Result<()> {
    match command {
        DomainsCommand::List(args) => args.print_all(LISTING, "domains", None).await,
        DomainsCommand::Add(args) => add(args).await,
        DomainsCommand::Verify(args) => verify(args).await,
        DomainsCommand::Remove(args) => remove(args).await,
    }
}

/// The domains' table: DNS is where the proof stands (`verified`,
/// `failing`: verified but the record was missing at the last check,
/// `pending`), SSL whether an edge serves a certificate for the name.
const LISTING: ListKind = ListKind {
    columns: &[
        Column::kept("NAME"),
        Column::kept("DNS"),
        Column::dropped("SSL", 2),
        Column::dropped("LAST CHECK (UTC)", 1),
    ],
    row: |domain, _| {
        let verification = &domain["verification"];
        let last_check = match verification["last_result"].as_str() {
            Some(result) => format!(
                "{result}, {}",
                table::when(&verification["checked_at"], "-")
            ),
            None => "-".to_owned(),
        };
        vec![
            table::cell(&domain["name"]),
            table::cell(&verification["status"]),
            if domain["ssl_status"] == true {
                "yes"
            } else {
                "no"
            }
            .to_owned(),
            last_check,
        ]
    },
    schema: "Domain",
    plural: "domains",
    names_organizations: false,
};

const DOMAIN: ObjectKind = ObjectKind {
    schema: "Domain",
    plural: "domains",
    title: |domain| format!("domain {}", table::cell(&domain["name"])),
};

/// One domain of a project.
#[derive(Args)]
pub struct Named {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    /// The domain's name, such as shop.example.com; *.example.com for
    /// every name one label under example.com. Kept in its ASCII form, in
    /// lower case.
    #[arg(value_name = "NAME")]
    name: String,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct Remove {
    #[arg(value_name = "PROJECT", help = PROJECT_HELP)]
    project: String,
    /// The domain's name.
    #[arg(value_name = "NAME")]
    name: String,
    #[command(flatten)]
    deletion: Deletion,
}

/// `domains verify` found the name not verified: the exit status is 4.
#[derive(Debug, thiserror::Error)]
#[error("{0} is not verified")]
pub struct NotVerified(String);

async fn add(args: Named) -> anyhow::Result<()> {
    let session = Session::open(&args.connection, &args.shape, DOMAIN)?;
    let id = session.project(&args.project).await?;
    let path = v1(&["projects", &id, "domains"]);
    let members = Map::from_iter([("name".to_owned(), Value::String(args.name))]);
    let project = args.project;
    session
        .exchange_told(create(&path, members), |domain, _| {
            let name = table::cell(&domain["name"]);
            let status = table::cell(&domain["verification"]["status"]);
            lines(&[
                format!("Added {name} to {project} ({status})."),
                "Create this DNS record to prove you own it:".to_owned(),
                record(domain),
                format!(
                    "proxydeck checks it now and again until it is found; `proxydeck domains verify {project} {name}` checks at once."
                ),
            ])
        })
        .await?;
    Ok(())
}

async fn verify(args: Named) -> anyhow::Result<()> {
    let session = Session::open(&args.connection, &args.shape, DOMAIN)?;
    let id = session.project(&args.project).await?;
    let path = v1(&["projects", &id, "domains", &args.name]);
    let request = Request::new(Method::POST, &path).body(json!({"dns_status": true}));
    let project = args.project;
    let domain = session
        .exchange_told(request, |domain, _| checked(domain, &project))
        .await?;
    if domain["dns_status"] == true {
        Ok(())
    } else {
        Err(NotVerified(table::cell(&domain["name"])).into())
    }
}

/// What a check found, for people: whether the name routes, what the
/// check saw, and the record again when it is wanted.
fn checked(domain: &Value, project: &str) -> String {
    let name = table::cell(&domain["name"]);
    let verification = &domain["verification"];
    let found = table::cell(&verification["message"]);
    match verification["status"].as_str() {
        Some("verified") => lines(&[format!(
            "{name} is verified: it routes to {project} ({found})."
        )]),
        Some("failing") => lines(&[
            format!(
                "{name} routes to {project}, but its record is missing ({found}): it stops routing at {} UTC unless this record is back by then:",
                table::when(&verification["routes_until"], "-")
            ),
            record(domain),
        ]),
        _ => lines(&[
            format!("{name} is not verified, so it does not route: {found}."),
            "Create this DNS record to prove you own it:".to_owned(),
            record(domain),
        ]),
    }
}

/// The record to create, as a zone file line: `TXT  NAME  "VALUE"`.
fn record(domain: &Value) -> String {
    let record = &domain["verification"]["record"];
    format!(
        "  {}  {}  \"{}\"",
        table::cell(&record["type"]),
        table::cell(&record["name"]),
        table::cell(&record["value"])
    )
}

/// `said`, a line each, each [`printable`].
fn lines(said: &[String]) -> String {
    said.iter()
        .map(|line| format!("{}\n", printable(line)))
        .collect()
}

async fn remove(args: Remove) -> anyhow::Result<()> {
    let deletion = args.deletion;
    deletion.confirm(&format!(
        "remove domain {} from project {}",
        args.name, args.project
    ))?;
    let session = Session::open(&deletion.connection, &deletion.shape, DELETED)?;
    let id = session.project(&args.project).await?;
    deletion
        .send(session, &v1(&["projects", &id, "domains", &args.name]))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain(status: &str, message: &str) -> Value {
        json!({"name": "shop.example.com", "dns_status": status != "pending",
               "verification": {"status": status, "message": message,
                                "routes_until": "2026-01-05T09:00:00.000Z",
                                "record": {"type": "TXT", "name": "_proxydeck-challenge.shop.example.com",
                                           "value": "proxydeck-verification=t"}}})
    }

    #[test]
    fn a_check_says_whether_the_name_routes_and_the_record_when_wanted() {
        let record = "  TXT  _proxydeck-challenge.shop.example.com  \"proxydeck-verification=t\"\n";
        assert_eq!(
            checked(&domain("verified", "found it"), "acme/shop"),
            "shop.example.com is verified: it routes to acme/shop (found it).\n"
        );
        assert_eq!(
            checked(&domain("pending", "none\u{1b}[2J"), "acme/shop"),
            format!(
                "shop.example.com is not verified, so it does not route: none\\u{{1b}}[2J.\nCreate this DNS record to prove you own it:\n{record}"
            )
        );
        let failing = checked(&domain("failing", "gone"), "acme/shop");
        assert!(
            failing.contains("stops routing at 2026-01-05 09:00 UTC") && failing.ends_with(record),
            "{failing}"
        );
    }
}
