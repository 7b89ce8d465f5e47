//! The document's objects and enums against the Rust types that write
//! them.

use proxydeck::domain::api_token::{ApiToken, ApiTokenTag};
use proxydeck::domain::directory::{
    OrganizationObject, OrganizationTag, OrganizationType, Role, UserTag, UserWithRoles,
};
use proxydeck::domain::project::{
    Continent, HttpMethod, LogSeverity, Project, ProjectType, RateKey, RateWindow, SdkPosition,
};
use proxydeck::domain::proxy_settings::{DryRun, ProxySettings};
use proxydeck::domain::time::Timestamp;

use crate::openapi_contract::variants_of;

use super::*;

/// Each documented object has exactly the members the Rust type writes,
/// required exactly when always written, and each documented enum has
/// exactly the values the Rust enum reads and writes. A field added to a
/// type and not to the document fails here.
#[test]
fn documented_members_are_the_ones_the_types_write() {
    let contract = contract();
    let mut shapes = Shapes::default();
    let mut check = |schema: &str, written: Value| {
        let pointer = format!("/components/schemas/{schema}");
        contract.assert_valid(&pointer, &written, schema);
        shapes.record(&contract, &pointer, &written);
    };
    for project in rich_projects() {
        let mut project: Project = serde_json::from_value(project).unwrap();
        project.normalize_and_validate().unwrap();
        check("Project", serde_json::to_value(&project).unwrap());
    }
    let at = Timestamp::parse("2026-03-01T00:00:00Z").unwrap();
    for (last_used_at, expires_at) in [(None, None), (Some(at), Some(at))] {
        let token = ApiToken {
            object: ApiTokenTag::Tag,
            id: "t1".into(),
            user_id: "u1".into(),
            name: "ci".into(),
            from_browser: false,
            last_used_at,
            expires_at,
            created_at: at,
            updated_at: at,
            token: "pxd_****abcd".into(),
        };
        check("ApiToken", serde_json::to_value(&token).unwrap());
    }
    let revisions: Vec<ProxySettings> = rich_settings("p-full")
        .into_iter()
        .map(|settings| serde_json::from_value(settings).unwrap())
        .collect();
    for settings in &revisions {
        settings.validate().unwrap();
        let mut written = serde_json::to_value(settings).unwrap();
        // Only the import format carries it; listings never do.
        written.as_object_mut().unwrap().remove("project_id");
        check("ProxySettings", written);
    }
    // Dry runs from no active revision, and from each revision to the
    // other (every kind of patch operation).
    for (revision, active) in [
        (&revisions[0], None),
        (&revisions[0], Some(&revisions[1])),
        (&revisions[1], Some(&revisions[0])),
    ] {
        let dry_run = DryRun::new(revision.clone(), active);
        check(
            "ProxySettingsDryRun",
            serde_json::to_value(&dry_run).unwrap(),
        );
    }
    for kind in OrganizationType::ALL {
        let organization = OrganizationObject {
            object: OrganizationTag::Tag,
            id: org_id(1),
            name: "Acme".into(),
            slug: "acme".into(),
            kind,
            created_at: at,
            updated_at: at,
        };
        check("Organization", serde_json::to_value(&organization).unwrap());
    }
    for role in Role::ALL {
        let user = UserWithRoles {
            object: UserTag::Tag,
            id: "u1".into(),
            email: "u1@example.com".into(),
            name: "u1".into(),
            avatar_url: None,
            role,
            roles: Role::ALL
                .into_iter()
                .enumerate()
                .map(|(n, role)| (org_id(n as u32), role))
                .collect(),
            created_at: at,
            updated_at: at,
        };
        check("UserWithRoles", serde_json::to_value(&user).unwrap());
    }
    let differences = shapes.differences(&contract, &[]);
    assert!(differences.is_empty(), "{}", differences.join("\n"));

    let enum_is = |pointer: &str, variants: BTreeSet<String>| {
        let pointer = format!("/components/schemas/{pointer}");
        assert_eq!(contract.enum_at(&pointer), variants, "{pointer}");
    };
    enum_is("Project/properties/type", variants_of::<ProjectType>());
    enum_is("OrganizationType", variants_of::<OrganizationType>());
    enum_is("UserWithRoles/properties/role", variants_of::<Role>());
    enum_is(
        "UserWithRoles/properties/roles/additionalProperties",
        variants_of::<Role>(),
    );
    enum_is(
        "Project/properties/log_severity",
        variants_of::<LogSeverity>(),
    );
    enum_is(
        "Project/properties/inject_sdk_position",
        variants_of::<SdkPosition>(),
    );
    enum_is(
        "RateLimitRule/properties/window",
        variants_of::<RateWindow>(),
    );
    enum_is(
        "RateLimitRule/properties/key/items",
        variants_of::<RateKey>(),
    );
    enum_is(
        "RateConditions/properties/method/items",
        variants_of::<HttpMethod>(),
    );
    enum_is(
        "RateConditions/properties/continent/items",
        variants_of::<Continent>(),
    );
}
