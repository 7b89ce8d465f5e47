//! The project resource: every field of `docs/interface.md`, in its order, with
//! the defaults and value rules of `docs/decisions.md` section 1.
//!
//! Deserialising is lenient about absent fields (they take their defaults)
//! and strict about everything else: unknown fields, `null`, wrong types
//! and broken value rules are refused, so an import never loses data
//! silently. Serialising always writes every field.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::regexes::{RegexChecks, Stopped};
use super::time::Timestamp;
use super::validate::{self, FieldError, each};
use super::{geo, ids, object_tag};

object_tag!(ProjectTag, "project");

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Project {
    #[serde(default)]
    pub object: ProjectTag,
    pub id: String,
    pub organization_id: String,
    #[serde(default)]
    pub slug: String,
    #[serde(default)]
    pub description: String,
    #[serde(default, rename = "type")]
    pub project_type: ProjectType,
    #[serde(default)]
    pub avatar_url: String,
    /// Absent only on import input; the store fills it before writing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<Timestamp>,
    /// Absent only on import input; the store fills it before writing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
    #[serde(default)]
    pub external_project_url: String,
    #[serde(default)]
    pub log_severity: LogSeverity,
    #[serde(default)]
    pub edgee_behind_proxy_cache: bool,
    #[serde(default = "default_true")]
    pub force_https: bool,
    #[serde(default)]
    pub cache: bool,
    #[serde(default)]
    pub override_cache: Vec<CacheRule>,
    #[serde(default)]
    pub override_cache_enabled: bool,
    #[serde(default)]
    pub cookie_name: String,
    #[serde(default)]
    pub cookie_domain: String,
    #[serde(default)]
    pub proxy_only: bool,
    #[serde(default)]
    pub proxy_only_path_regex: String,
    #[serde(default)]
    pub inject_sdk: bool,
    #[serde(default)]
    pub inject_sdk_position: SdkPosition,
    #[serde(default)]
    pub cookieless: bool,
    #[serde(default)]
    pub autocapture: Autocapture,
    #[serde(default)]
    pub enforce_no_store_policy: bool,
    #[serde(default)]
    pub trusted_ips: Vec<String>,
    #[serde(default)]
    pub password_protection: bool,
    #[serde(default)]
    pub blocked_ips: Vec<String>,
    #[serde(default)]
    pub cookie_whitelist: Vec<String>,
    #[serde(default)]
    pub forwarded_headers: Vec<ForwardedHeader>,
    #[serde(default)]
    pub rate_limiting: Vec<RateLimitRule>,
    #[serde(default)]
    pub rate_limiting_enabled: bool,
}

fn default_true() -> bool {
    true
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProjectType {
    #[default]
    Proxy,
    AiAnalytics,
    Mcp,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum LogSeverity {
    Debug,
    #[default]
    Info,
    Warning,
    Error,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SdkPosition {
    Prepend,
    #[default]
    Append,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Autocapture {
    pub pageview: bool,
    pub spa_pageview: bool,
    pub engagement: bool,
    pub click: bool,
    pub form: bool,
    pub scroll: bool,
}

/// An element of `override_cache`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheRule {
    pub path: String,
    #[serde(default)]
    pub regex: bool,
    #[serde(default)]
    pub ttl: u32,
    #[serde(default)]
    pub swr: u32,
    #[serde(default)]
    pub pass: bool,
    #[serde(default)]
    pub rank: u32,
    #[serde(default)]
    pub conditions: CacheConditions,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheConditions {
    pub request_cookies: NameConditions,
    pub request_headers: NameConditions,
    pub request_query_params: NameConditions,
    pub response_headers: NameConditions,
    pub request_methods: Vec<String>,
    pub response_status: Vec<u16>,
}

/// `present` and `absent` list names; `values` maps a name to any JSON value.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NameConditions {
    pub present: Vec<String>,
    pub absent: Vec<String>,
    pub values: Map<String, Value>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardedHeader {
    pub name: String,
    pub value: String,
}

/// An element of `rate_limiting`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitRule {
    pub rank: u32,
    pub limit: u32,
    #[serde(default)]
    pub window: RateWindow,
    #[serde(default = "default_block_duration")]
    pub block_duration: u32,
    #[serde(default = "default_rate_key")]
    pub key: Vec<RateKey>,
    #[serde(default)]
    pub conditions: RateConditions,
}

fn default_block_duration() -> u32 {
    60
}

fn default_rate_key() -> Vec<RateKey> {
    vec![RateKey::Ip]
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RateWindow {
    #[serde(rename = "1s")]
    OneSecond,
    #[default]
    #[serde(rename = "10s")]
    TenSeconds,
    #[serde(rename = "60s")]
    SixtySeconds,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RateKey {
    Ip,
    Ua,
}

/// Every member is optional and omitted when unset.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RateConditions {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub regex: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<Vec<HttpMethod>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub continent: Option<Vec<Continent>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country: Option<Vec<String>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum HttpMethod {
    Get,
    Post,
    Put,
    Delete,
    Patch,
    Head,
    Options,
    Trace,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Continent {
    AF,
    AN,
    AS,
    EU,
    NA,
    OC,
    SA,
}

impl Project {
    /// A project with every field at its default.
    pub fn new(id: String, organization_id: String) -> Self {
        serde_json::from_value(serde_json::json!({
            "id": id,
            "organization_id": organization_id,
        }))
        .expect("a project with only its ids is valid")
    }

    /// Checks every value rule and normalises `organization_id` to lower case.
    pub fn normalize_and_validate(&mut self) -> Result<(), FieldError> {
        match self.problems().into_iter().next() {
            Some(first) => Err(first),
            None => Ok(()),
        }
    }

    /// Every broken value rule, one per member at fault (the first within
    /// each list element), and `organization_id` normalised to lower case.
    pub fn problems(&mut self) -> Vec<FieldError> {
        let mut problems = Vec::new();
        if !ids::is_valid_id(&self.id) {
            problems.push(FieldError::new("id", ids::ID_RULE));
        }
        match ids::parse_organization_id(&self.organization_id) {
            Some(id) => self.organization_id = id,
            None => problems.push(FieldError::new(
                "organization_id",
                ids::ORGANIZATION_ID_RULE,
            )),
        }
        problems.extend(self.url_problems());
        problems.extend(every(
            &self.override_cache,
            "override_cache",
            CacheRule::validate,
        ));
        problems.extend(every(&self.trusted_ips, "trusted_ips", |ip| ip_rule(ip)));
        problems.extend(every(&self.blocked_ips, "blocked_ips", |ip| ip_rule(ip)));
        problems.extend(every(&self.cookie_whitelist, "cookie_whitelist", |name| {
            validate::text("", name, 256)
                .map_err(|e| FieldError::value(e.message))
                .and_then(|()| header_token(name))
        }));
        problems.extend(every(
            &self.forwarded_headers,
            "forwarded_headers",
            ForwardedHeader::validate,
        ));
        problems.extend(every(
            &self.rate_limiting,
            "rate_limiting",
            RateLimitRule::validate,
        ));
        problems
    }

    /// The URL members' rule (`http` or `https` only), one problem per
    /// member at fault.
    fn url_problems(&self) -> Vec<FieldError> {
        [
            validate::optional_web_url("avatar_url", &self.avatar_url),
            validate::optional_web_url("external_project_url", &self.external_project_url),
        ]
        .into_iter()
        .filter_map(Result::err)
        .collect()
    }

    /// The management API's rule for `slug` (imports keep the slugs they
    /// bring): 1 to 63 characters of `a-z`, `0-9` and `-`, neither first
    /// nor last a `-`.
    pub fn check_slug(&self) -> Result<(), FieldError> {
        check_slug(&self.slug)
    }

    /// Sets the members an update names: a value replaces the member's,
    /// `null` puts the member back to its default. The members are those
    /// of an update's body, already checked against its schema.
    pub fn apply(&mut self, members: &Map<String, Value>) -> Result<(), FieldError> {
        let Value::Object(mut current) =
            serde_json::to_value(&*self).map_err(|e| FieldError::value(e.to_string()))?
        else {
            return Err(FieldError::value("a project is an object"));
        };
        let defaults =
            serde_json::to_value(Project::new(self.id.clone(), self.organization_id.clone()))
                .map_err(|e| FieldError::value(e.to_string()))?;
        for (name, value) in members {
            let value = match value {
                Value::Null => defaults.get(name).cloned().unwrap_or(Value::Null),
                other => other.clone(),
            };
            current.insert(name.clone(), value);
        }
        *self = serde_json::from_value(Value::Object(current))
            .map_err(|e| FieldError::value(e.to_string()))?;
        Ok(())
    }
}

/// A project body as createProject or updateProject sends it, checked by
/// the domain's rules: the one check of a project body, shared by create
/// and update (the operation's OpenAPI schema is checked before, at the
/// HTTP edge). The rules are each member's own, so the members are
/// checked on their own, before the stored project they go onto is read:
/// a bad body is a 400 whatever the project (and the store never checks
/// them again), and a member the body does not set is never judged (a row
/// stored before a rule keeps its value until a write sets it).
#[derive(Clone, Debug, PartialEq)]
pub struct ProjectChange {
    members: Map<String, Value>,
}

/// What stands in for the id and organization a body does not bring while
/// its members are checked on their own.
const PROBE_ID: &str = "probe";
const PROBE_ORGANIZATION: &str = "00000000-0000-7000-8000-000000000000";

impl ProjectChange {
    /// `members` (a body that passed its operation's schema, without the
    /// project's `id`), or every member at fault.
    /// `checks` compiles the regex members ([`regex_problems`]); `Err(None)`
    /// when they were stopped (nobody waits for the answer).
    pub fn check(
        members: Map<String, Value>,
        checks: &mut RegexChecks,
    ) -> Result<Self, Option<Vec<FieldError>>> {
        let mut probe = Project::new(PROBE_ID.into(), PROBE_ORGANIZATION.into());
        // A body the schema let through that still does not make a
        // project: a fault of the schema, told as the body's.
        probe
            .apply(&members)
            .map_err(|problem| Some(vec![problem.within("body")]))?;
        let mut problems: Vec<FieldError> = probe
            .problems()
            .into_iter()
            .filter(|problem| members.contains_key(top_member(&problem.field)))
            .collect();
        if members.contains_key("slug") {
            problems.extend(probe.check_slug().err());
        }
        problems.extend(regex_problems(&members, checks).map_err(|Stopped| None)?);
        if problems.is_empty() {
            Ok(Self { members })
        } else {
            Err(Some(problems))
        }
    }

    pub fn members(&self) -> &Map<String, Value> {
        &self.members
    }

    /// The new project a create makes of the change, with id `id` (its
    /// organization the body's, normalised).
    pub fn new_project(&self, id: String) -> Project {
        let organization_id = self
            .members
            .get("organization_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut project = Project::new(id, organization_id.to_owned());
        self.apply_to(&mut project);
        // Normalises the organization's id; its rules were checked.
        let _ = project.problems();
        project
    }

    /// Sets the change's members on `project` (a value replaces the
    /// member's, `null` puts it back to its default).
    pub fn apply_to(&self, project: &mut Project) {
        project
            .apply(&self.members)
            .expect("a checked change applies to any project");
    }
}

/// The API's rule for the project's regex members, on the members a body
/// sets (a project stored before it keeps its regexes until a write sets
/// the member): `proxy_only_path_regex`, and the `path` of a cache rule
/// or of a rate-limiting rule's conditions whose `regex` is true, compile
/// within the request's budget ([`RegexChecks`]). Every member at fault is
/// named. It reads the body as JSON, so that it also runs beside the
/// schema's check (members of another shape are the schema's to report).
/// Imports do not apply it.
pub fn regex_problems(
    members: &Map<String, Value>,
    checks: &mut RegexChecks,
) -> Result<Vec<FieldError>, Stopped> {
    let mut problems = Vec::new();
    let mut check = |path: Option<&Value>, field: String| -> Result<(), Stopped> {
        if let Some(path) = path.and_then(Value::as_str)
            && let Err(problem) = checks.check(path)?
        {
            problems.push(problem.within(&field));
        }
        Ok(())
    };
    check(
        members.get("proxy_only_path_regex"),
        "proxy_only_path_regex".into(),
    )?;
    let rules = |name: &str| {
        members
            .get(name)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
    };
    let is_regex =
        |rule: Option<&Value>| rule.and_then(|r| r.get("regex")) == Some(&Value::Bool(true));
    for (i, rule) in rules("override_cache") {
        if is_regex(Some(rule)) {
            check(rule.get("path"), format!("override_cache[{i}].path"))?;
        }
    }
    for (i, rule) in rules("rate_limiting") {
        let conditions = rule.get("conditions");
        if is_regex(conditions) {
            check(
                conditions.and_then(|c| c.get("path")),
                format!("rate_limiting[{i}].conditions.path"),
            )?;
        }
    }
    Ok(problems)
}

/// The member a problem's field is in (`override_cache[0].ttl` is in
/// `override_cache`).
fn top_member(path: &str) -> &str {
    path.split(['.', '[']).next().unwrap_or(path)
}

/// The management API's rule for a slug (see [`Project::check_slug`]).
pub fn check_slug(slug: &str) -> Result<(), FieldError> {
    let slug = slug.as_bytes();
    let good = (1..=63).contains(&slug.len())
        && slug
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && slug.first() != Some(&b'-')
        && slug.last() != Some(&b'-');
    if good {
        Ok(())
    } else {
        Err(FieldError::new(
            "slug",
            "must be 1 to 63 characters of a-z, 0-9 and -, not starting or ending with -",
        ))
    }
}

/// Every element's first broken rule, named `list[i]...`.
fn every<'a, T>(
    list: &'a [T],
    name: &str,
    mut check: impl FnMut(&'a T) -> Result<(), FieldError>,
) -> Vec<FieldError> {
    list.iter()
        .enumerate()
        .filter_map(|(i, item)| check(item).err().map(|e| e.within(&format!("{name}[{i}]"))))
        .collect()
}

fn ip_rule(value: &str) -> Result<(), FieldError> {
    if validate::ip_or_cidr(value) {
        Ok(())
    } else {
        Err(FieldError::value(
            "must be an IP address or a CIDR block, such as 203.0.113.7 or 10.0.0.0/8",
        ))
    }
}

/// Cookie and header names are HTTP tokens (RFC 9110 section 5.6.2).
fn header_token(name: &str) -> Result<(), FieldError> {
    if axum::http::HeaderName::from_bytes(name.as_bytes()).is_ok() {
        Ok(())
    } else {
        Err(FieldError::value(
            "must be a name made of letters, digits and !#$%&'*+-.^_`|~",
        ))
    }
}

impl CacheRule {
    fn validate(&self) -> Result<(), FieldError> {
        each(
            &self.conditions.response_status,
            "response_status",
            |status| {
                if (100..=599).contains(status) {
                    Ok(())
                } else {
                    Err(FieldError::value("must be an HTTP status from 100 to 599"))
                }
            },
        )
        .map_err(|e| e.within("conditions"))
    }
}

impl ForwardedHeader {
    fn validate(&self) -> Result<(), FieldError> {
        header_token(&self.name).map_err(|e| e.within("name"))?;
        if axum::http::HeaderValue::from_str(&self.value).is_err() {
            return Err(FieldError::new(
                "value",
                "must be a header value without control characters",
            ));
        }
        Ok(())
    }
}

impl RateLimitRule {
    fn validate(&self) -> Result<(), FieldError> {
        for (field, value) in [
            ("rank", self.rank),
            ("limit", self.limit),
            ("block_duration", self.block_duration),
        ] {
            if value < 1 {
                return Err(FieldError::new(field, "must be an integer >= 1"));
            }
        }
        if self.key.is_empty() {
            return Err(FieldError::new("key", "must hold at least one of ip, ua"));
        }
        if let Some(countries) = &self.conditions.country {
            each(countries, "country", |code| {
                if geo::is_country(code) {
                    Ok(())
                } else {
                    Err(FieldError::value(geo::COUNTRY_RULE))
                }
            })
            .map_err(|e| e.within("conditions"))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORG: &str = "0190b7a4-9a6e-7c3e-8f00-1a2b3c4d5e6f";

    fn parse(json: Value) -> Result<Project, String> {
        let mut project: Project = serde_json::from_value(json).map_err(|e| e.to_string())?;
        project
            .normalize_and_validate()
            .map_err(|e| e.to_string())?;
        Ok(project)
    }

    #[test]
    fn defaults_fill_every_field() {
        let mut project = Project::new("p1".into(), ORG.into());
        project.created_at = Timestamp::from_millis(0);
        project.updated_at = Timestamp::from_millis(0);
        let json = serde_json::to_value(&project).unwrap();
        let object = json.as_object().unwrap();
        assert_eq!(object.len(), 32, "every interface field is present");
        assert_eq!(json["object"], "project");
        assert_eq!(json["type"], "proxy");
        assert_eq!(json["log_severity"], "INFO");
        assert_eq!(json["inject_sdk_position"], "append");
        assert_eq!(json["force_https"], true);
        assert_eq!(json["cache"], false);
        assert_eq!(json["slug"], "");
        assert_eq!(json["trusted_ips"], serde_json::json!([]));
        assert_eq!(json["autocapture"]["spa_pageview"], false);
        assert!(object.values().all(|v| !v.is_null()));
    }

    #[test]
    fn field_order_is_the_interface_order() {
        let mut project = Project::new("p1".into(), ORG.into());
        project.created_at = Timestamp::from_millis(0);
        project.updated_at = Timestamp::from_millis(0);
        let text = serde_json::to_string(&project).unwrap();
        let order = [
            "object",
            "id",
            "organization_id",
            "slug",
            "description",
            "type",
            "avatar_url",
            "created_at",
            "updated_at",
            "external_project_url",
            "log_severity",
            "edgee_behind_proxy_cache",
            "force_https",
            "cache",
            "override_cache",
            "override_cache_enabled",
            "cookie_name",
            "cookie_domain",
            "proxy_only",
            "proxy_only_path_regex",
            "inject_sdk",
            "inject_sdk_position",
            "cookieless",
            "autocapture",
            "enforce_no_store_policy",
            "trusted_ips",
            "password_protection",
            "blocked_ips",
            "cookie_whitelist",
            "forwarded_headers",
            "rate_limiting",
            "rate_limiting_enabled",
        ];
        let positions: Vec<usize> = order
            .iter()
            .map(|f| text.find(&format!("\"{f}\":")).unwrap())
            .collect();
        assert!(positions.windows(2).all(|w| w[0] < w[1]), "{text}");
    }

    #[test]
    fn full_project_round_trips() {
        let json = serde_json::json!({
            "object": "project", "id": "p1", "organization_id": ORG.to_uppercase(),
            "type": "mcp", "log_severity": "DEBUG", "inject_sdk_position": "prepend",
            "override_cache": [{"path": "/static", "regex": false, "ttl": 60, "swr": 5,
                "pass": false, "rank": 1, "conditions": {
                    "request_cookies": {"present": ["a"], "absent": [], "values": {"k": [1, {"x": null}]}},
                    "request_methods": ["GET"], "response_status": [200]}}],
            "trusted_ips": ["10.0.0.0/8"], "blocked_ips": ["2001:db8::1"],
            "cookie_whitelist": ["session"],
            "forwarded_headers": [{"name": "X-Env", "value": "prod"}],
            "rate_limiting": [{"rank": 1, "limit": 10, "window": "1s",
                "conditions": {"country": ["FR"], "continent": ["EU"], "method": ["POST"]}}]
        });
        let project = parse(json).unwrap();
        assert_eq!(project.organization_id, ORG);
        let rule = &project.rate_limiting[0];
        assert_eq!(rule.block_duration, 60);
        assert_eq!(rule.key, vec![RateKey::Ip]);
        let written = serde_json::to_value(&project).unwrap();
        assert_eq!(written["rate_limiting"][0]["window"], "1s");
        assert!(
            written["rate_limiting"][0]["conditions"]
                .get("path")
                .is_none()
        );
        let again: Project = serde_json::from_value(written).unwrap();
        assert_eq!(again, project);
    }

    #[test]
    fn broken_rules_name_their_field() {
        let cases = [
            (
                serde_json::json!({"id": "bad id", "organization_id": ORG}),
                "id",
            ),
            (
                serde_json::json!({"id": "p", "organization_id": "nope"}),
                "organization_id",
            ),
            (
                serde_json::json!({"id": "p", "organization_id": ORG, "trusted_ips": ["1.2.3.4", "x"]}),
                "trusted_ips[1]",
            ),
            (
                serde_json::json!({"id": "p", "organization_id": ORG, "external_project_url": "not a url"}),
                "external_project_url",
            ),
            (
                serde_json::json!({"id": "p", "organization_id": ORG,
                "rate_limiting": [{"rank": 0, "limit": 1}]}),
                "rate_limiting[0].rank",
            ),
            (
                serde_json::json!({"id": "p", "organization_id": ORG,
                "rate_limiting": [{"rank": 1, "limit": 1, "conditions": {"country": ["ZZ"]}}]}),
                "rate_limiting[0].conditions.country[0]",
            ),
            (
                serde_json::json!({"id": "p", "organization_id": ORG,
                "override_cache": [{"path": "/", "conditions": {"response_status": [99]}}]}),
                "override_cache[0].conditions.response_status[0]",
            ),
            (
                serde_json::json!({"id": "p", "organization_id": ORG,
                "forwarded_headers": [{"name": "bad name", "value": "v"}]}),
                "forwarded_headers[0].name",
            ),
        ];
        for (json, field) in cases {
            let err = parse(json).unwrap_err();
            assert!(err.starts_with(&format!("{field}: ")), "{field}: got {err}");
        }
    }

    #[test]
    fn values_off_the_lists_and_nulls_are_refused() {
        for json in [
            serde_json::json!({"id": "p", "organization_id": ORG, "type": "other"}),
            serde_json::json!({"id": "p", "organization_id": ORG, "log_severity": "info"}),
            serde_json::json!({"id": "p", "organization_id": ORG, "slug": null}),
            serde_json::json!({"id": "p", "organization_id": ORG, "unknown": 1}),
            serde_json::json!({"id": "p", "organization_id": ORG, "override_cache": [{"path": "/", "ttl": -1}]}),
            serde_json::json!({"id": "p", "organization_id": ORG,
                "rate_limiting": [{"rank": 1, "limit": 1, "window": "5s"}]}),
        ] {
            assert!(parse(json.clone()).is_err(), "{json}");
        }
    }
}
