//! Organizations and users: who exists and who belongs where. A user sees
//! the projects of every organization it belongs to.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::time::Timestamp;
use super::validate::{self, FieldError, each};
use super::{ids, object_tag};

object_tag!(OrganizationTag, "organization");
object_tag!(UserTag, "user");

pub const MAX_NAME_CHARS: usize = 200;

/// A user's role in one organization (docs/management.md, "Roles"):
/// admins and editors change the organization's projects and proxy
/// settings; members only read them. Everyone manages its own tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    Admin,
    Editor,
    Member,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Admin, Role::Editor, Role::Member];

    /// The name the API, the store and the command line use.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Editor => "editor",
            Role::Member => "member",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|role| role.as_str() == name)
    }

    /// Whether the role may create, change and delete the organization's
    /// projects and proxy settings.
    pub fn may_write_projects(self) -> bool {
        matches!(self, Role::Admin | Role::Editor)
    }
}
const MAX_EMAIL_LEN: usize = 254;
/// Longest slug: a DNS label's length.
pub const MAX_SLUG_CHARS: usize = 63;
pub const SLUG_RULE: &str =
    "must be 1 to 63 characters of a-z, 0-9 and -, not starting or ending with -";

/// What an organization is for (the API's `type`): a company's (`pro`) or
/// one person's own (`perso`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OrganizationType {
    #[default]
    Pro,
    Perso,
}

impl OrganizationType {
    pub const ALL: [OrganizationType; 2] = [OrganizationType::Pro, OrganizationType::Perso];

    pub fn as_str(self) -> &'static str {
        match self {
            OrganizationType::Pro => "pro",
            OrganizationType::Perso => "perso",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }
}

/// An organization as the import format and the operator's commands write
/// it. Absent members of an import line: see `normalize_and_validate` and
/// docs/management.md, "Roles and organizations".
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Organization {
    #[serde(default)]
    pub object: OrganizationTag,
    pub id: String,
    pub name: String,
    /// Absent: made from the name when the organization is created,
    /// unchanged otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slug: Option<String>,
    /// Absent means `pro`.
    #[serde(default, rename = "type")]
    pub kind: OrganizationType,
    /// Absent on import input means "now" for a new organization and
    /// "unchanged" for an existing one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
}

/// An organization as the API answers it (getOrganization and the
/// organization listing).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrganizationObject {
    pub object: OrganizationTag,
    pub id: String,
    pub name: String,
    pub slug: String,
    #[serde(rename = "type")]
    pub kind: OrganizationType,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A user as the import format and the operator's commands write it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    #[serde(default)]
    pub object: UserTag,
    pub id: String,
    pub email: String,
    /// Absent: the part of the email before `@`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The user's role in each organization it belongs to: one or more.
    #[serde(default)]
    pub roles: BTreeMap<String, Role>,
    /// The import format's older way to name the organizations: `admin`
    /// in each. Read, never written (`roles` says it all); kept after
    /// validation only so that errors name the member the line used.
    #[serde(default, skip_serializing)]
    pub organizations: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
}

/// A user as getMe and getUser answer it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserWithRoles {
    pub object: UserTag,
    pub id: String,
    pub email: String,
    pub name: String,
    /// Set by updateUser; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avatar_url: Option<String>,
    /// The role in the user's oldest membership (of those shown), or
    /// `member` for a user in no organization.
    pub role: Role,
    /// By organization id: every one of the user's for itself, the ones
    /// shared with the caller for another user.
    pub roles: BTreeMap<String, Role>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// A member of an organization as listOrganizationsUsers and
/// updateOrganizationUser answer it: the user (its `created_at` and
/// `updated_at` are the user's) with its role there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrganizationUser {
    pub object: UserTag,
    pub id: String,
    pub email: String,
    pub name: String,
    /// The public document's `User` requires it: made from the name
    /// ([`slug_of`]).
    pub slug: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub avatar_url: Option<String>,
    pub role: Role,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Organization {
    pub fn normalize_and_validate(&mut self) -> Result<(), FieldError> {
        self.id = ids::parse_organization_id(&self.id)
            .ok_or_else(|| FieldError::new("id", ids::ORGANIZATION_ID_RULE))?;
        validate::text("name", &self.name, MAX_NAME_CHARS)?;
        match &self.slug {
            Some(slug) if !is_slug(slug) => Err(FieldError::new("slug", SLUG_RULE)),
            _ => Ok(()),
        }
    }
}

/// Whether `text` is a slug ([`SLUG_RULE`]).
pub fn is_slug(text: &str) -> bool {
    (1..=MAX_SLUG_CHARS).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// The slug an organization named `name` starts from: its ASCII letters
/// and digits, lowercased, every other run of characters one `-`; `org`
/// when nothing is left. Stores make it unique (`store/operator/admin.rs`).
pub fn slug_of(name: &str) -> String {
    let mut slug = String::with_capacity(name.len().min(MAX_SLUG_CHARS));
    for c in name.chars() {
        if slug.len() == MAX_SLUG_CHARS {
            break;
        }
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    while slug.ends_with('-') {
        slug.pop();
    }
    if slug.is_empty() { "org".into() } else { slug }
}

/// `ORG_ID[:ROLE]`, as `admin user create --org` takes it (role `admin`
/// when absent): the normalised id and the role.
pub fn parse_membership(text: &str) -> Result<(String, Role), String> {
    let (id, role) = match text.split_once(':') {
        None => (text, Role::Admin),
        Some((id, role)) => (
            id,
            Role::parse(role).ok_or_else(|| {
                format!("--org {text}: the role must be admin, editor or member, not {role:?}")
            })?,
        ),
    };
    let id = ids::parse_organization_id(id).ok_or_else(|| {
        format!(
            "--org {text}: the organization id {}",
            ids::ORGANIZATION_ID_RULE
        )
    })?;
    Ok((id, role))
}

impl User {
    pub fn normalize_and_validate(&mut self) -> Result<(), FieldError> {
        if !ids::is_valid_id(&self.id) {
            return Err(FieldError::new("id", ids::ID_RULE));
        }
        validate_email(&self.email)?;
        match &self.name {
            Some(name) => validate::text("name", name, MAX_NAME_CHARS)?,
            None => {
                let local = self.email.split('@').next().unwrap_or_default();
                self.name = Some(local.chars().take(MAX_NAME_CHARS).collect());
            }
        }
        let mut roles = BTreeMap::new();
        match self.organizations.take() {
            Some(_) if !self.roles.is_empty() => {
                return Err(FieldError::new(
                    "organizations",
                    "give roles or organizations, not both",
                ));
            }
            Some(organizations) => {
                each(&organizations, "organizations", |org| {
                    add_membership(&mut roles, org, Role::Admin)
                })?;
                // Kept, normalised, so that later errors name the member
                // the line used.
                self.organizations = Some(
                    organizations
                        .iter()
                        .map(|org| ids::parse_organization_id(org).unwrap_or_default())
                        .collect(),
                );
            }
            None => {
                for (org, role) in &self.roles {
                    add_membership(&mut roles, org, *role)
                        .map_err(|e| FieldError::new(format!("roles.{org}"), e.message))?;
                }
            }
        }
        if roles.is_empty() {
            return Err(FieldError::new(
                "roles",
                "must name at least one organization",
            ));
        }
        self.roles = roles;
        Ok(())
    }
}

fn add_membership(
    roles: &mut BTreeMap<String, Role>,
    org: &str,
    role: Role,
) -> Result<(), FieldError> {
    let org = ids::parse_organization_id(org)
        .ok_or_else(|| FieldError::value(ids::ORGANIZATION_ID_RULE))?;
    if roles.insert(org, role).is_some() {
        return Err(FieldError::value("is listed twice"));
    }
    Ok(())
}

fn validate_email(email: &str) -> Result<(), FieldError> {
    let well_formed = email.len() <= MAX_EMAIL_LEN
        && !email.chars().any(|c| c.is_whitespace() || c.is_control())
        && email.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty() && !domain.is_empty() && !domain.contains('@')
        });
    if well_formed {
        Ok(())
    } else {
        Err(FieldError::new(
            "email",
            "must be an e-mail address such as ops@example.com",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORG: &str = "0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6f";

    fn user(email: &str, organizations: Vec<&str>) -> User {
        User {
            object: UserTag::Tag,
            id: "u1".into(),
            email: email.into(),
            name: None,
            roles: BTreeMap::new(),
            organizations: Some(organizations.into_iter().map(String::from).collect()),
            created_at: None,
        }
    }

    #[test]
    fn users_need_an_email_and_organizations() {
        assert!(
            user("a@b.example", vec![ORG])
                .normalize_and_validate()
                .is_ok()
        );
        let field = |u: &mut User| u.normalize_and_validate().unwrap_err().field;
        assert_eq!(field(&mut user("nope", vec![ORG])), "email");
        assert_eq!(field(&mut user("a b@c", vec![ORG])), "email");
        assert_eq!(field(&mut user("a@b", vec![])), "roles");
        assert_eq!(field(&mut user("a@b", vec![ORG, "x"])), "organizations[1]");
        assert_eq!(
            field(&mut user("a@b", vec![ORG, &ORG.to_uppercase()])),
            "organizations[1]"
        );
    }

    #[test]
    fn users_get_roles_and_a_name() {
        let mut u = user("ops.team@b.example", vec![ORG]);
        u.normalize_and_validate().unwrap();
        assert_eq!(u.name.as_deref(), Some("ops.team"));
        assert_eq!(u.roles, BTreeMap::from([(ORG.to_owned(), Role::Admin)]));
        assert_eq!(u.organizations, Some(vec![ORG.to_owned()]));
        let mut both = user("a@b", vec![ORG]);
        both.roles.insert(ORG.into(), Role::Member);
        assert_eq!(
            both.normalize_and_validate().unwrap_err().field,
            "organizations"
        );
        let mut upper = user("a@b", vec![]);
        upper.organizations = None;
        upper.roles.insert(ORG.to_uppercase(), Role::Editor);
        upper.roles.insert(ORG.into(), Role::Member);
        assert_eq!(
            upper.normalize_and_validate().unwrap_err().field,
            format!("roles.{ORG}")
        );
        assert_eq!(
            parse_membership(ORG).unwrap(),
            (ORG.to_owned(), Role::Admin)
        );
        assert_eq!(
            parse_membership(&format!("{ORG}:member")).unwrap(),
            (ORG.to_owned(), Role::Member)
        );
        assert!(
            parse_membership(&format!("{ORG}:owner"))
                .unwrap_err()
                .contains("admin, editor or member")
        );
        assert!(
            parse_membership("nope:admin")
                .unwrap_err()
                .starts_with("--org nope:admin: the organization id must be")
        );
    }

    #[test]
    fn slugs_are_made_from_names() {
        assert_eq!(slug_of("Acme Corp"), "acme-corp");
        assert_eq!(slug_of("  Zoë & Co. "), "zo-co");
        assert_eq!(slug_of("!!!"), "org");
        assert_eq!(slug_of(&"x".repeat(100)).len(), MAX_SLUG_CHARS);
        for name in ["Acme Corp", "--a--", "Été", &"ab-".repeat(40)] {
            assert!(is_slug(&slug_of(name)), "{name}");
        }
        for bad in ["", "-a", "a-", "A", "a_b", &"a".repeat(64)] {
            assert!(!is_slug(bad), "{bad}");
        }
    }

    #[test]
    fn roles_are_named_as_the_api_names_them() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
            assert_eq!(
                serde_json::to_string(&role).unwrap(),
                format!("\"{}\"", role.as_str())
            );
        }
        assert_eq!(Role::parse("Admin"), None);
        assert!(Role::Editor.may_write_projects());
        assert!(!Role::Member.may_write_projects());
    }

    #[test]
    fn organization_ids_are_normalised() {
        let mut org = Organization {
            object: OrganizationTag::Tag,
            id: ORG.to_uppercase(),
            name: "Acme".into(),
            slug: None,
            kind: OrganizationType::Pro,
            created_at: None,
        };
        org.normalize_and_validate().unwrap();
        assert_eq!(org.id, ORG);
        org.name = String::new();
        assert_eq!(org.normalize_and_validate().unwrap_err().field, "name");
    }
}
