//! Every store operation's name (the `operation` label of
//! `proxydeck_store_query_duration_seconds`, docs/operations.md) says what
//! it serves: an operation of the API is named for its `operationId` in the
//! served document, an operator's for its command, so that two operations
//! cannot swap names again (the API's `DeleteProject` was once counted as
//! `remove_project`, and the operator's `RemoveProject` as
//! `delete_project`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use proxydeck::domain::organization_set::OrganizationSet;
use proxydeck::domain::pagination::PageRequest;
use proxydeck::http::openapi::DOCUMENT;
use proxydeck::store::operations::api_tokens::{CreateApiToken, DeleteApiToken, GetApiToken};
use proxydeck::store::operations::auth::{FindToken, RecordTokenUses};
use proxydeck::store::operations::changes::{PruneChanges, ReadChanges};
use proxydeck::store::operations::domains::{
    CreateDomain, DeleteDomain, GetDomain, ListDomains, RecordCheck, TakeDueChecks, UpdateDomain,
};
use proxydeck::store::operations::edges::{DeleteEdge, ListEdges, ReportEdge};
use proxydeck::store::operations::invitations::{
    AcceptInvitation, CreateInvitation, DeleteInvitation, GetInvitation, ListInvitations,
};
use proxydeck::store::operations::members::{RemoveMember, UpdateMember};
use proxydeck::store::operations::memberships::{Me, MemberOrganization};
use proxydeck::store::operations::organizations::{
    DeleteOrganization, StartOrganization, UpdateOrganization,
};
use proxydeck::store::operations::projects::{
    CreateProject, DeleteProject, GetProject, UpdateProject,
};
use proxydeck::store::operations::proxy_settings::{
    CreateProxySettings, RevisionToActivate, TryCreateProxySettings, TryUpdateProxySettings,
    UpdateProxySettings,
};
use proxydeck::store::operations::rollouts::{
    ControlRollout, GetEdgeTarget, GetRollout, ListRollouts, LiveRollouts, StartRollout,
    StepRollout,
};
use proxydeck::store::operations::users::{GetUser, UpdateUser};
use proxydeck::store::operations::write_steps::MayWrite;
use proxydeck::store::operator::admin::{
    CreateOrganization, CreateToken, CreateUser, RemoveProject, RevokeToken,
};
use proxydeck::store::operator::audit::AuditQuery;
use proxydeck::store::operator::export::{
    AllOrganizations, AllUsers, CountObjects, Export, UserTokens,
};
use proxydeck::store::operator::health::Ping;
use proxydeck::store::operator::import::Import;
use proxydeck::store::operator::shapes::UpgradeStoredBodies;
use proxydeck::store::{
    ApiTokensQuery, Listing, MembersQuery, Operation, OrganizationsQuery, ProjectsQuery,
    ProxySettingsQuery,
};

/// What a store operation serves, which its name must say.
#[derive(Clone, Copy, Debug)]
enum Serves {
    /// The operation of the document with this `operationId`: named by it,
    /// in snake case (`deleteProject`: `delete_project`).
    Api(&'static str),
    /// The dry run (`dry_run=true`) of that operation: `try_` before its
    /// name.
    DryRun(&'static str),
    /// The operator's command with these words after `proxydeck`: named by
    /// them, joined by `_` (`admin project delete`: `admin_project_delete`).
    Command(&'static str),
    /// A step of one, for the command's name followed by `_` and the step.
    CommandStep(&'static str, &'static str),
    /// The service's own work, or a step every write takes (authentication,
    /// readiness, the feed's pruning, the store's opening): a name of its
    /// own, which must be no operation's and no command's.
    Own,
}

/// Each operation: its type, the name the metrics know it by, what it
/// serves.
macro_rules! served {
    ($($op:ident => $serves:expr),* $(,)?) => {
        vec![$((stringify!($op), <$op as Operation>::NAME, $serves)),*]
    };
}

fn every_operation() -> Vec<(&'static str, &'static str, Serves)> {
    use Serves::*;
    served![
        GetProject => Api("getProject"),
        CreateProject => Api("createProject"),
        UpdateProject => Api("updateProject"),
        DeleteProject => Api("deleteProject"),
        GetApiToken => Api("getApiToken"),
        CreateApiToken => Api("createApiToken"),
        DeleteApiToken => Api("deleteApiToken"),
        CreateProxySettings => Api("createProjectProxySettings"),
        TryCreateProxySettings => DryRun("createProjectProxySettings"),
        UpdateProxySettings => Api("updateProjectProxySettings"),
        TryUpdateProxySettings => DryRun("updateProjectProxySettings"),
        Me => Api("getMe"),
        // getMyOrganization runs it too, for the caller's own.
        MemberOrganization => Api("getOrganization"),
        StartOrganization => Api("createOrganization"),
        UpdateOrganization => Api("updateOrganization"),
        DeleteOrganization => Api("deleteOrganization"),
        UpdateMember => Api("updateOrganizationUser"),
        RemoveMember => Api("deleteOrganizationUser"),
        GetUser => Api("getUser"),
        UpdateUser => Api("updateUser"),
        ReadChanges => Api("listChanges"),
        ReportEdge => Api("reportEdge"),
        DeleteEdge => Api("deleteEdge"),
        ListEdges => Api("listEdges"),
        ListDomains => Api("listProjectDomains"),
        GetDomain => Api("getProjectDomain"),
        CreateDomain => Api("createProjectDomain"),
        UpdateDomain => Api("updateProjectDomain"),
        DeleteDomain => Api("deleteProjectDomain"),
        ListInvitations => Api("listInvitations"),
        GetInvitation => Api("getInvitation"),
        CreateInvitation => Api("createInvitation"),
        DeleteInvitation => Api("deleteInvitation"),
        AcceptInvitation => Api("acceptInvitation"),
        TakeDueChecks => Own,
        RecordCheck => Own,
        StartRollout => Api("createRollout"),
        ListRollouts => Api("listRollouts"),
        GetRollout => Api("getRollout"),
        GetEdgeTarget => Api("getEdgeTarget"),
        // pauseRollout, resumeRollout, promoteRollout, abortRollout.
        ControlRollout => Own,
        LiveRollouts => Own,
        StepRollout => Own,
        CreateOrganization => Command("admin org create"),
        CreateUser => Command("admin user create"),
        CreateToken => Command("admin token create"),
        RevokeToken => Command("admin token revoke"),
        RemoveProject => Command("admin project delete"),
        AllOrganizations => Command("admin org list"),
        AllUsers => Command("admin user list"),
        UserTokens => Command("admin token list"),
        AuditQuery => Command("admin audit"),
        Import => Command("admin import"),
        Export => Command("admin export"),
        CountObjects => CommandStep("admin export", "count"),
        FindToken => Own,
        RecordTokenUses => Own,
        MayWrite => Own,
        RevisionToActivate => Own,
        Ping => Own,
        PruneChanges => Own,
        UpgradeStoredBodies => Own,
    ]
}

/// The listings' reads, which go through the read path rather than
/// `Store::run`: each named for its `operationId`.
fn listings() -> Vec<(&'static str, &'static str)> {
    let page = PageRequest {
        start_key: None,
        direction: Default::default(),
        limit: 1,
    };
    let organizations = OrganizationSet::new(Vec::new());
    [
        (
            Listing::Projects(ProjectsQuery {
                organizations: organizations.clone(),
                page: page.clone(),
            }),
            "listProjects",
        ),
        (
            Listing::ApiTokens(ApiTokensQuery {
                user_id: "u".into(),
                name: None,
                page: page.clone(),
            }),
            "listApiTokens",
        ),
        (
            Listing::ProxySettings(ProxySettingsQuery {
                project_id: "p".into(),
                visible_to: organizations,
                page: page.clone(),
            }),
            "listProxySettings",
        ),
        (
            Listing::Organizations(OrganizationsQuery {
                user_id: "u".into(),
                kind: None,
                page: page.clone(),
            }),
            "listOrganizations",
        ),
        (
            Listing::Members(MembersQuery {
                user_id: "u".into(),
                organization_id: "o".into(),
                role: None,
                page,
            }),
            "listOrganizationsUsers",
        ),
    ]
    .into_iter()
    .map(|(listing, id)| (listing.operation(), id))
    .collect()
}

/// `deleteProject` -> `delete_project`.
fn snake_case(operation_id: &str) -> String {
    let mut name = String::new();
    for c in operation_id.chars() {
        if c.is_ascii_uppercase() {
            name.push('_');
        }
        name.push(c.to_ascii_lowercase());
    }
    name
}

/// The `operationId`s of the document the service serves.
fn operation_ids() -> BTreeSet<String> {
    let document: serde_json::Value = serde_json::from_str(DOCUMENT).unwrap();
    let mut ids = BTreeSet::new();
    for path in document["paths"].as_object().unwrap().values() {
        for operation in path.as_object().unwrap().values() {
            if let Some(id) = operation.get("operationId").and_then(|id| id.as_str()) {
                ids.insert(id.to_owned());
            }
        }
    }
    ids
}

/// The types declared with `operation!(Type => ...)` in the store's
/// source: the table above must name every one.
fn declared_operations() -> BTreeSet<String> {
    fn walk(dir: &Path, found: &mut BTreeSet<String>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, found);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for line in text.lines() {
                    let Some(rest) = line.trim_start().strip_prefix("operation!(") else {
                        continue;
                    };
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !name.is_empty() {
                        found.insert(name);
                    }
                }
            }
        }
    }
    let mut found = BTreeSet::new();
    walk(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store"),
        &mut found,
    );
    found
}

#[test]
fn every_store_operation_is_named_for_its_operation_id_or_its_command() {
    let ids = operation_ids();
    let operations = every_operation();
    let listed: BTreeSet<String> = operations.iter().map(|(op, ..)| op.to_string()).collect();
    assert_eq!(
        listed,
        declared_operations(),
        "every operation!(..) of src/store is in this test's table, and only those"
    );

    let mut names = BTreeMap::new();
    let mut expected = Vec::new();
    for (op, name, serves) in operations {
        let should_be = match serves {
            Serves::Api(id) | Serves::DryRun(id) => {
                assert!(
                    ids.contains(id),
                    "{op} serves {id}, which the document lacks"
                );
                let base = snake_case(id);
                match serves {
                    Serves::DryRun(_) => Some(format!("try_{base}")),
                    _ => Some(base),
                }
            }
            Serves::Command(words) => Some(words.replace(' ', "_")),
            Serves::CommandStep(words, step) => Some(format!("{}_{step}", words.replace(' ', "_"))),
            Serves::Own => {
                let taken = ids.iter().any(|id| snake_case(id) == name)
                    || name.starts_with("admin_")
                    || name.starts_with("try_");
                assert!(
                    !taken,
                    "{op}'s name {name} is an operation's or a command's"
                );
                None
            }
        };
        if let Some(should_be) = should_be {
            expected.push((op, name, should_be));
        }
        if let Some(other) = names.insert(name, op) {
            panic!("{op} and {other} are both named {name}");
        }
    }
    for (name, id) in listings() {
        assert!(ids.contains(id), "the document lacks {id}");
        expected.push(("a listing", name, snake_case(id)));
        assert!(names.insert(name, "a listing").is_none(), "{name} twice");
    }
    let wrong: Vec<String> = expected
        .iter()
        .filter(|(_, name, should_be)| name != should_be)
        .map(|(op, name, should_be)| format!("{op} is named {name}, not {should_be}"))
        .collect();
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// The commands the table names are the command line's.
#[test]
fn the_commands_operations_are_named_for_exist() {
    for (op, _, serves) in every_operation() {
        let words = match serves {
            Serves::Command(words) | Serves::CommandStep(words, _) => words,
            _ => continue,
        };
        let status = Command::new(env!("CARGO_BIN_EXE_proxydeck"))
            .args(words.split(' '))
            .arg("--help")
            .output()
            .unwrap();
        assert!(
            status.status.success(),
            "{op}: `proxydeck {words} --help` fails: {}",
            String::from_utf8_lossy(&status.stderr)
        );
    }
}
