//! Organizations and users: who exists and who belongs where. A user sees
//! the projects of every organization it belongs to.

use serde::{Deserialize, Serialize};

use super::time::Timestamp;
use super::validate::{self, FieldError, each};
use super::{ids, object_tag};

object_tag!(OrganizationTag, "organization");
object_tag!(UserTag, "user");

pub const MAX_NAME_CHARS: usize = 200;
const MAX_EMAIL_LEN: usize = 254;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Organization {
    #[serde(default)]
    pub object: OrganizationTag,
    pub id: String,
    pub name: String,
    /// Absent on import input means "now" for a new organization and
    /// "unchanged" for an existing one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct User {
    #[serde(default)]
    pub object: UserTag,
    pub id: String,
    pub email: String,
    /// Ids of the organizations the user belongs to: one or more.
    pub organizations: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
}

impl Organization {
    pub fn normalize_and_validate(&mut self) -> Result<(), FieldError> {
        self.id = ids::parse_organization_id(&self.id)
            .ok_or_else(|| FieldError::new("id", ids::ORGANIZATION_ID_RULE))?;
        validate::text("name", &self.name, MAX_NAME_CHARS)
    }
}

impl User {
    pub fn normalize_and_validate(&mut self) -> Result<(), FieldError> {
        if !ids::is_valid_id(&self.id) {
            return Err(FieldError::new("id", ids::ID_RULE));
        }
        validate_email(&self.email)?;
        if self.organizations.is_empty() {
            return Err(FieldError::new(
                "organizations",
                "must name at least one organization",
            ));
        }
        let mut normalized = Vec::with_capacity(self.organizations.len());
        each(&self.organizations, "organizations", |org| {
            let org = ids::parse_organization_id(org)
                .ok_or_else(|| FieldError::value(ids::ORGANIZATION_ID_RULE))?;
            if normalized.contains(&org) {
                return Err(FieldError::value("is listed twice"));
            }
            normalized.push(org);
            Ok(())
        })?;
        self.organizations = normalized;
        Ok(())
    }
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
            organizations: organizations.into_iter().map(String::from).collect(),
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
        assert_eq!(field(&mut user("a@b", vec![])), "organizations");
        assert_eq!(field(&mut user("a@b", vec![ORG, "x"])), "organizations[1]");
        assert_eq!(
            field(&mut user("a@b", vec![ORG, &ORG.to_uppercase()])),
            "organizations[1]"
        );
    }

    #[test]
    fn organization_ids_are_normalised() {
        let mut org = Organization {
            object: OrganizationTag::Tag,
            id: ORG.to_uppercase(),
            name: "Acme".into(),
            created_at: None,
        };
        org.normalize_and_validate().unwrap();
        assert_eq!(org.id, ORG);
        org.name = String::new();
        assert_eq!(org.normalize_and_validate().unwrap_err().field, "name");
    }
}
