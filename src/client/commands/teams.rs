//! Teams (issue 47, `docs/teams.md`): `proxydeck org` (list, create,
//! rename and delete organizations), `proxydeck members` (list them,
//! change a role, remove one or leave), `proxydeck invite` and
//! `proxydeck invitations` (list, revoke, accept one, which signs a new
//! user in as `proxydeck login` does).
//!
//! An organization is named by its id or its slug (resolved through the
//! organizations listing, `client::names`); a member by their id or their
//! email (resolved through the organization's members listing).

use std::ops::ControlFlow;

use clap::{Args, Subcommand, ValueEnum};
use reqwest::Method;
use serde_json::{Map, Value, json};

use crate::client::connection::{Connection, DEFAULT_URL, Target, resolve_with_sources};
use crate::client::http::{ApiClient, Request, v1};
use crate::client::listing::{ListKind, ListingArgs, Printer, list};
use crate::client::names::resolve_organization;
use crate::client::object::{
    DELETED, Deletion, ObjectKind, ObjectShape, Precondition, Session, create,
};
use crate::client::profile::{Saved, file_of, load, save};
use crate::domain::token;
use crate::output::table::{self, Column};
use crate::output::{BadSetting, Output, printable};

/// The help of every argument that names an organization.
const ORG_HELP: &str = "The organization: its slug (such as acme-corp) or its id";
/// The help of every argument that names a member.
const USER_HELP: &str = "The member: their email (such as ada@example.com) or their user id";

/// The end of `proxydeck invite --help`.
pub const INVITE_AFTER_HELP: &str = concat!(
    "Examples:\n  proxydeck invite ada@example.com --org acme-corp --role editor\n  proxydeck invite ada@example.com --org acme-corp --role member --jq .accept_url",
    retried_create_note!()
);

/// A role in an organization (`docs/teams.md`, "Who may do what").
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Role {
    /// Everything, the members and invitations included.
    Admin,
    /// Changes the organization's projects.
    Editor,
    /// Reads them.
    Member,
}

impl Role {
    fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Editor => "editor",
            Role::Member => "member",
        }
    }
}

#[derive(Subcommand)]
pub enum OrgCommand {
    /// List the organizations you belong to.
    #[command(after_help = "Examples:\n  proxydeck org list\n  proxydeck org list --jq '.[].slug'")]
    List(ListingArgs),
    /// Create an organization: you become its admin.
    #[command(
        after_help = concat!("Examples:\n  proxydeck org create 'Acme Corp' --slug acme-corp\n  proxydeck org create Acme --slug acme --jq .id", retried_create_note!())
    )]
    Create(OrgCreate),
    /// Rename an organization, and change its slug with --slug (admins).
    #[command(
        after_help = "Examples:\n  proxydeck org rename acme-corp 'Acme Corporation'\n  proxydeck org rename acme-corp Acme --slug acme"
    )]
    Rename(OrgRename),
    /// Delete an organization (admins): refused while it has projects;
    /// every membership and pending invitation ends (asks first on a
    /// terminal; --yes does not ask).
    #[command(after_help = "Example:\n  proxydeck org delete acme-corp --yes")]
    Delete(OrgDelete),
}

#[derive(Subcommand)]
pub enum MembersCommand {
    /// List an organization's members and their roles, newest first.
    #[command(
        after_help = "Examples:\n  proxydeck members list acme-corp\n  proxydeck members list acme-corp --role admin --jq '.[].email'"
    )]
    List(MembersList),
    /// Change a member's role (admins). The last admin cannot become
    /// editor or member.
    #[command(
        after_help = "Examples:\n  proxydeck members role acme-corp ada@example.com admin\n  proxydeck members role acme-corp USER_ID member"
    )]
    Role(MemberRole),
    /// Remove a member (admins), or leave, naming yourself. The last admin
    /// cannot leave. Asks first on a terminal; --yes does not ask.
    #[command(
        after_help = "Examples:\n  proxydeck members remove acme-corp ada@example.com --yes\n  proxydeck members remove acme-corp me@example.com --yes   # leave"
    )]
    Remove(MemberRemove),
}

#[derive(Subcommand)]
pub enum InvitationsCommand {
    /// List the pending and expired invitations of an organization, or of
    /// every organization you administer, newest first.
    #[command(
        after_help = "Examples:\n  proxydeck invitations list\n  proxydeck invitations list --org acme-corp --jq '.[].email'"
    )]
    List(InvitationsList),
    /// Revoke an invitation (admins): its link stops working.
    #[command(after_help = "Example:\n  proxydeck invitations revoke INVITATION_ID")]
    Revoke(InvitationRevoke),
    /// Accept an invitation with the secret it came with. Signed in (a
    /// token or a profile for the URL), it joins you to the organization;
    /// else it creates your user and keeps its first API token in the
    /// profile, as `proxydeck login` does.
    #[command(
        after_help = "Examples:\n  proxydeck invitations accept pxi_... --email ada@example.com --name 'Ada Lovelace' --url https://proxydeck.example\n  proxydeck invitations accept pxi_... --email ada@example.com   # signed in already"
    )]
    Accept(InvitationAccept),
}

/// Runs an `org` command.
pub async fn run_org(command: OrgCommand) -> anyhow::Result<()> {
    match command {
        OrgCommand::List(args) => {
            let (client, printing, paging) = args.open(ORGANIZATIONS)?;
            let printer = Printer::new(printing, ORGANIZATIONS);
            list(&client, &v1(&["organizations"]), None, paging, printer).await
        }
        OrgCommand::Create(args) => org_create(args).await,
        OrgCommand::Rename(args) => org_rename(args).await,
        OrgCommand::Delete(args) => org_delete(args).await,
    }
}

/// Runs a `members` command.
pub async fn run_members(command: MembersCommand) -> anyhow::Result<()> {
    match command {
        MembersCommand::List(args) => members_list(args).await,
        MembersCommand::Role(args) => member_role(args).await,
        MembersCommand::Remove(args) => member_remove(args).await,
    }
}

/// Runs an `invitations` command.
pub async fn run_invitations(command: InvitationsCommand, out: &Output) -> anyhow::Result<()> {
    match command {
        InvitationsCommand::List(args) => invitations_list(args).await,
        InvitationsCommand::Revoke(args) => {
            let session = Session::open(&args.connection, &args.shape, DELETED)?;
            let path = v1(&["invitations", &args.id]);
            let request =
                Request::new(Method::DELETE, &path).header("If-Match", args.precondition.if_match);
            session.exchange(request, "revoked").await
        }
        InvitationsCommand::Accept(args) => accept(args, out).await,
    }
}

const ORGANIZATIONS: ListKind = ListKind {
    columns: &[
        Column::kept("ID"),
        Column::kept("SLUG"),
        Column::cut("NAME", 30),
        Column::dropped("CREATED (UTC)", 1),
    ],
    row: |organization, _| {
        vec![
            table::cell(&organization["id"]),
            table::cell(&organization["slug"]),
            table::cell(&organization["name"]),
            table::when(&organization["created_at"], "-"),
        ]
    },
    schema: "Organization",
    plural: "organizations",
    names_organizations: false,
};

const ORGANIZATION: ObjectKind = ObjectKind {
    schema: "Organization",
    plural: "organizations",
    title: |organization| format!("organization {}", table::cell(&organization["slug"])),
};

const MEMBERS: ListKind = ListKind {
    columns: &[
        Column::kept("ID"),
        Column::kept("EMAIL"),
        Column::kept("ROLE"),
        Column::cut("NAME", 30),
        Column::dropped("CREATED (UTC)", 1),
    ],
    row: |member, _| {
        vec![
            table::cell(&member["id"]),
            table::cell(&member["email"]),
            table::cell(&member["role"]),
            table::cell(&member["name"]),
            table::when(&member["created_at"], "-"),
        ]
    },
    schema: "OrganizationUser",
    plural: "members",
    names_organizations: false,
};

const MEMBER: ObjectKind = ObjectKind {
    schema: "OrganizationUser",
    plural: "members",
    title: |member| format!("member {}", table::cell(&member["email"])),
};

const INVITATIONS: ListKind = ListKind {
    columns: &[
        Column::kept("ID"),
        Column::kept("EMAIL"),
        Column::kept("ROLE"),
        Column::dropped("ORGANIZATION", 3),
        Column::kept("STATUS"),
        Column::dropped("EXPIRES (UTC)", 2),
        Column::dropped("CREATED (UTC)", 1),
    ],
    row: |invitation, context| {
        let organization = invitation["organization_id"]
            .as_str()
            .and_then(|id| context.organizations.get(id).cloned())
            .unwrap_or_else(|| table::cell(&invitation["organization_id"]));
        vec![
            table::cell(&invitation["id"]),
            table::cell(&invitation["email"]),
            table::cell(&invitation["role"]),
            organization,
            table::cell(&invitation["status"]),
            table::when(&invitation["expires_at"], "-"),
            table::when(&invitation["created_at"], "-"),
        ]
    },
    schema: "Invitation",
    plural: "invitations",
    names_organizations: true,
};

const INVITATION: ObjectKind = ObjectKind {
    schema: "Invitation",
    plural: "invitations",
    title: |invitation| format!("invitation {}", table::cell(&invitation["id"])),
};

#[derive(Args)]
pub struct OrgCreate {
    /// The organization's name (1 to 100 characters).
    #[arg(value_name = "NAME")]
    name: String,
    /// Its slug, unique across the service: lowercase letters, digits and
    /// '-', 1 to 63, not starting or ending with '-'.
    #[arg(long)]
    slug: String,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct OrgRename {
    #[arg(value_name = "ORG", help = ORG_HELP)]
    org: String,
    /// Its new name (1 to 100 characters).
    #[arg(value_name = "NAME")]
    name: String,
    /// Its new slug (the old one is free again at once).
    #[arg(long)]
    slug: Option<String>,
    #[command(flatten)]
    precondition: Precondition,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct OrgDelete {
    #[arg(value_name = "ORG", help = ORG_HELP)]
    org: String,
    #[command(flatten)]
    deletion: Deletion,
}

#[derive(Args)]
pub struct MembersList {
    #[arg(value_name = "ORG", help = ORG_HELP)]
    org: String,
    /// Only the members with this role.
    #[arg(long, value_enum)]
    role: Option<Role>,
    #[command(flatten)]
    listing: ListingArgs,
}

#[derive(Args)]
pub struct MemberRole {
    #[arg(value_name = "ORG", help = ORG_HELP)]
    org: String,
    #[arg(value_name = "USER", help = USER_HELP)]
    user: String,
    /// The member's new role.
    #[arg(value_name = "ROLE", value_enum)]
    role: Role,
    #[command(flatten)]
    precondition: Precondition,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct MemberRemove {
    #[arg(value_name = "ORG", help = ORG_HELP)]
    org: String,
    #[arg(value_name = "USER", help = USER_HELP)]
    user: String,
    #[command(flatten)]
    deletion: Deletion,
}

#[derive(Args)]
pub struct InviteArgs {
    /// The email to invite: the invitation is for this address only.
    #[arg(value_name = "EMAIL")]
    email: String,
    /// The organization to join.
    #[arg(long, value_name = "ORG", help = ORG_HELP)]
    org: String,
    /// The role the invited person gets.
    #[arg(long, value_enum)]
    role: Role,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct InvitationsList {
    /// Only this organization's invitations (its slug or id).
    #[arg(long, value_name = "ORG")]
    org: Option<String>,
    #[command(flatten)]
    listing: ListingArgs,
}

#[derive(Args)]
pub struct InvitationRevoke {
    /// The invitation's id (`invitations list` shows it).
    #[arg(value_name = "ID")]
    id: String,
    #[command(flatten)]
    precondition: Precondition,
    #[command(flatten)]
    shape: ObjectShape,
    #[command(flatten)]
    connection: Connection,
}

#[derive(Args)]
pub struct InvitationAccept {
    /// The invitation's secret (pxi_...), from its email or link; `-`
    /// reads it from stdin (arguments show in process lists).
    #[arg(value_name = "SECRET")]
    secret: String,
    /// Your email: the address the invitation was sent to.
    #[arg(long)]
    email: String,
    /// Your name, for a new user [default: the email's part before @].
    #[arg(long)]
    name: Option<String>,
    #[command(flatten)]
    connection: Connection,
}

async fn org_create(args: OrgCreate) -> anyhow::Result<()> {
    let session = Session::open(&args.connection, &args.shape, ORGANIZATION)?;
    let path = v1(&["organizations"]);
    let members = Map::from_iter([
        ("name".to_owned(), Value::String(args.name)),
        ("slug".to_owned(), Value::String(args.slug)),
    ]);
    session.exchange(create(&path, members), "created").await
}

async fn org_rename(args: OrgRename) -> anyhow::Result<()> {
    let session = Session::open(&args.connection, &args.shape, ORGANIZATION)?;
    let id = resolve_organization(&session.client, &args.org).await?;
    let mut body = json!({"id": id, "name": args.name});
    if let Some(slug) = args.slug {
        body["slug"] = Value::String(slug);
    }
    let path = v1(&["organizations", &id]);
    let request = Request::new(Method::POST, &path)
        .body(body)
        .header("If-Match", args.precondition.if_match);
    session.exchange(request, "renamed").await
}

async fn org_delete(args: OrgDelete) -> anyhow::Result<()> {
    let deletion = args.deletion;
    deletion.confirm(&format!("delete organization {}", args.org))?;
    let session = Session::open(&deletion.connection, &deletion.shape, DELETED)?;
    let id = resolve_organization(&session.client, &args.org).await?;
    deletion.send(session, &v1(&["organizations", &id])).await
}

async fn members_list(args: MembersList) -> anyhow::Result<()> {
    let (client, printing, paging) = args.listing.open(MEMBERS)?;
    let id = resolve_organization(&client, &args.org).await?;
    let filter = args.role.map(|role| ("role", role.as_str().to_owned()));
    let printer = Printer::new(printing, MEMBERS);
    list(
        &client,
        &v1(&["organizations", &id, "users"]),
        filter,
        paging,
        printer,
    )
    .await
}

/// The id of the member `given` names in the organization `organization`
/// (an id): an email is looked for in its members listing (in any letter
/// case), page by page until found; anything else is taken as an id.
async fn resolve_member(
    client: &ApiClient,
    organization: &str,
    org_given: &str,
    given: &str,
) -> anyhow::Result<String> {
    if !given.contains('@') {
        return Ok(given.to_owned());
    }
    let found = client
        .walk(
            &v1(&["organizations", organization, "users"]),
            &[],
            |members| {
                let named = members.iter().find(|member| {
                    member["email"]
                        .as_str()
                        .is_some_and(|email| email.eq_ignore_ascii_case(given))
                });
                match named.and_then(|member| member["id"].as_str()) {
                    Some(id) => ControlFlow::Break(id.to_owned()),
                    None => ControlFlow::Continue(()),
                }
            },
        )
        .await?;
    found.ok_or_else(|| {
        anyhow::anyhow!("no member with the email {given:?} in the organization {org_given:?}")
    })
}

async fn member_role(args: MemberRole) -> anyhow::Result<()> {
    let session = Session::open(&args.connection, &args.shape, MEMBER)?;
    let organization = resolve_organization(&session.client, &args.org).await?;
    let user = resolve_member(&session.client, &organization, &args.org, &args.user).await?;
    let path = v1(&["organizations", &organization, "users", &user]);
    let request = Request::new(Method::POST, &path)
        .body(json!({"role": args.role.as_str()}))
        .header("If-Match", args.precondition.if_match);
    let org = args.org;
    session
        .exchange_told(request, |member, _| {
            format!(
                "{}\n",
                printable(&format!(
                    "{} is now {} of {org}.",
                    table::cell(&member["email"]),
                    table::cell(&member["role"]),
                ))
            )
        })
        .await?;
    Ok(())
}

async fn member_remove(args: MemberRemove) -> anyhow::Result<()> {
    let deletion = args.deletion;
    deletion.confirm(&format!(
        "remove {} from organization {}",
        args.user, args.org
    ))?;
    let session = Session::open(&deletion.connection, &deletion.shape, DELETED)?;
    let organization = resolve_organization(&session.client, &args.org).await?;
    let user = resolve_member(&session.client, &organization, &args.org, &args.user).await?;
    deletion
        .send(
            session,
            &v1(&["organizations", &organization, "users", &user]),
        )
        .await
}

/// `proxydeck invite`.
pub async fn invite(args: InviteArgs) -> anyhow::Result<()> {
    let session = Session::open(&args.connection, &args.shape, INVITATION)?;
    let organization = resolve_organization(&session.client, &args.org).await?;
    let members = Map::from_iter([
        ("organization_id".to_owned(), Value::String(organization)),
        ("email".to_owned(), Value::String(args.email)),
        (
            "role".to_owned(),
            Value::String(args.role.as_str().to_owned()),
        ),
    ]);
    let path = v1(&["invitations"]);
    let org = args.org;
    let mut told = false;
    let invitation = session
        .exchange_told(create(&path, members), |invitation, _| {
            told = true;
            invited(invitation, &org)
        })
        .await?;
    if !told && invitation.get("secret").is_some() {
        eprintln!(
            "The link and secret (`accept_url`, `secret`) are shown this once and never again: pass them on now."
        );
    }
    Ok(())
}

/// What an invitation's answer tells a person: to whom it went and how,
/// and the link to pass on when the answer carries it.
fn invited(invitation: &Value, org: &str) -> String {
    let email = table::cell(&invitation["email"]);
    let role = table::cell(&invitation["role"]);
    let expires = table::when(&invitation["expires_at"], "-");
    let mut said = vec![format!("Invited {email} to {org} as {role}.")];
    match (
        invitation["delivery"].as_str(),
        invitation["accept_url"].as_str(),
    ) {
        (_, Some(url)) => {
            said.push(format!(
                "Pass this link on to {email}; it is shown this once and never again:"
            ));
            said.push(format!("  {url}"));
            if let Some(secret) = invitation["secret"].as_str() {
                said.push(format!(
                    "or the secret, for `proxydeck invitations accept SECRET --email {email}`:"
                ));
                said.push(format!("  {secret}"));
            }
        }
        (Some("email"), None) => said.push(format!("An email with the link was sent to {email}.")),
        _ => said.push(
            "The answer holds no link (a replayed request never does): revoke the invitation and invite again to get one."
                .to_owned(),
        ),
    }
    said.push(format!(
        "It works once, for {email}, until {expires} UTC (id {}).",
        table::cell(&invitation["id"])
    ));
    said.iter()
        .map(|line| format!("{}\n", printable(line)))
        .collect()
}

async fn invitations_list(args: InvitationsList) -> anyhow::Result<()> {
    let (client, printing, paging) = args.listing.open(INVITATIONS)?;
    let filter = match &args.org {
        Some(org) => Some(("organization_id", resolve_organization(&client, org).await?)),
        None => None,
    };
    let printer = Printer::new(printing, INVITATIONS);
    list(&client, &v1(&["invitations"]), filter, paging, printer).await
}

/// Where `invitations accept` calls, and as whom: with the token of a
/// flag, the environment or the profile (an existing user), else without
/// one (a new user, whose token is then kept in the profile).
struct AcceptTarget {
    url: String,
    token: Option<String>,
    profile: String,
}

fn accept_target(connection: &Connection) -> anyhow::Result<AcceptTarget> {
    match resolve_with_sources(connection) {
        Ok(resolved) => Ok(AcceptTarget {
            url: resolved.target.url,
            token: Some(resolved.target.token),
            profile: resolved.profile,
        }),
        // No token anywhere for this URL: a new user.
        Err(error) if error.is::<BadSetting>() => {
            let profile = connection.profile.profile.clone();
            let saved = load(&file_of(&profile)?)?;
            let url = match (&connection.url, saved) {
                (Some(url), _) => url.clone(),
                (None, Some(saved)) => saved.url,
                (None, None) => DEFAULT_URL.to_owned(),
            };
            Ok(AcceptTarget {
                url,
                token: None,
                profile,
            })
        }
        Err(error) => Err(error),
    }
}

/// `invitations accept`.
async fn accept(args: InvitationAccept, out: &Output) -> anyhow::Result<()> {
    let secret = if args.secret == "-" {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
            .map_err(|error| anyhow::anyhow!("cannot read the secret from stdin: {error}"))?;
        text.trim().to_owned()
    } else {
        args.secret
    };
    let target = accept_target(&args.connection)?;
    let signed_in = target.token.is_some();
    let client = ApiClient::new(&Target {
        url: target.url.clone(),
        token: target.token.unwrap_or_default(),
    })?;
    let mut body = json!({"secret": secret, "email": args.email});
    if let Some(name) = args.name {
        body["name"] = Value::String(name);
    }
    let path = v1(&["invitations", "accept"]);
    let answer = client
        .send(Request::new(Method::POST, &path).body(body))
        .await?;
    let mut accepted: Value = serde_json::from_slice(&answer.body)
        .map_err(|_| anyhow::anyhow!("the server's answer is not a JSON object"))?;
    let new_token = accepted["api_token"]["token"]
        .as_str()
        .map(str::to_owned)
        .filter(|_| !signed_in);
    let mut kept = None;
    if let Some(token) = new_token {
        let file = file_of(&target.profile)?;
        save(
            &file,
            &Saved {
                url: target.url.clone(),
                token: token.clone(),
            },
        )?;
        // Kept, never shown: the listings' hint stands for it.
        accepted["api_token"]["token"] = Value::String(token::hint(&token));
        accepted["profile"] = json!({"name": target.profile, "file": file, "url": target.url});
        kept = Some(file);
    }
    let user = &accepted["user"];
    let who = format!(
        "{} <{}> (id {})",
        table::cell(&user["name"]),
        table::cell(&user["email"]),
        table::cell(&user["id"])
    );
    let role = table::cell(&accepted["role"]);
    let organization = table::cell(&accepted["organization_id"]);
    out.print(&accepted, || {
        let joined = format!("Joined organization {organization} as {role}.");
        let signed_in = match &kept {
            Some(file) => format!(
                "Signed in to {} as {who}: the new API token is kept in {} (profile {:?}).",
                target.url,
                file.display(),
                target.profile
            ),
            None => format!("Signed in to {} as {who}.", target.url),
        };
        format!("{}\n{}", printable(&joined), printable(&signed_in))
    })
}
