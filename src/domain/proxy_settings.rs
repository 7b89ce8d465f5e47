//! A proxy settings revision: the backends and routes of a project, one
//! version of them. Revisions are numbered per project from 1 upwards; at
//! most one per project is active.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::json_patch::{self, Operation};
use super::regexes::{RegexChecks, Stopped};
use super::validate::{self, FieldError, each};
use super::{geo, ids, object_tag};

object_tag!(ProxySettingsTag, "proxy_settings");
object_tag!(DryRunTag, "proxy_settings_dry_run");

/// Most backends of a revision.
pub const MAX_BACKENDS: usize = 100;
/// Most routes of a revision.
pub const MAX_ROUTES: usize = 1_000;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxySettings {
    #[serde(default)]
    pub object: ProxySettingsTag,
    /// Only in the import/export format; listings never carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_id: Option<String>,
    pub revision: u32,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub is_active: bool,
    #[serde(default)]
    pub backends: Vec<Backend>,
    #[serde(default)]
    pub routes: Vec<Route>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Backend {
    pub name: String,
    pub address: String,
    #[serde(default)]
    pub enable_ssl: bool,
    /// The host name the backend's certificate must declare.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_certificate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_certificate: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sni_hostname: Option<String>,
    #[serde(default)]
    pub default: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_host: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Route {
    pub path: String,
    #[serde(default)]
    pub regex: bool,
    /// The `name` of a backend of the same revision.
    pub backend_name: String,
    #[serde(default)]
    pub rank: RouteRank,
    #[serde(default)]
    pub continent: Vec<String>,
    #[serde(default)]
    pub region: Vec<String>,
    #[serde(default)]
    pub country: Vec<String>,
}

/// A route's rank: an integer that the interface writes as a string. Input
/// may give it as a string or a number; it is always written as a string.
/// At most [`MAX_RANK_DIGITS`] digits (leading zeros aside), either way:
/// the bound the served document states (a pattern for the string, a
/// minimum and maximum for the number), well inside an i64.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RouteRank(pub i64);

/// The most significant digits of a route's rank.
pub const MAX_RANK_DIGITS: usize = 18;
/// The largest rank, and minus the smallest: 18 nines.
pub const MAX_RANK: i64 = 999_999_999_999_999_999;

fn bounded_rank<E: de::Error>(rank: i64) -> Result<RouteRank, E> {
    if rank.unsigned_abs() > MAX_RANK as u64 {
        return Err(E::custom("rank has more than 18 digits"));
    }
    Ok(RouteRank(rank))
}

impl Serialize for RouteRank {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for RouteRank {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RankVisitor;
        impl Visitor<'_> for RankVisitor {
            type Value = RouteRank;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer, or a string holding an integer")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RouteRank, E> {
                bounded_rank(v)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RouteRank, E> {
                i64::try_from(v)
                    .map_err(|_| E::custom("rank has more than 18 digits"))
                    .and_then(bounded_rank)
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RouteRank, E> {
                let digits = v.strip_prefix('-').unwrap_or(v);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(E::invalid_value(de::Unexpected::Str(v), &self));
                }
                if digits.trim_start_matches('0').len() > MAX_RANK_DIGITS {
                    return Err(E::custom("rank has more than 18 digits"));
                }
                v.parse()
                    .map(RouteRank)
                    .map_err(|_| E::custom("rank has more than 18 digits"))
            }
        }
        deserializer.deserialize_any(RankVisitor)
    }
}

impl ProxySettings {
    /// Checks the value rules: `revision` >= 1, at most [`MAX_BACKENDS`]
    /// backends and [`MAX_ROUTES`] routes, backend names present and
    /// unique, at most one default backend, every route naming a backend.
    pub fn validate(&self) -> Result<(), FieldError> {
        if let Some(project_id) = &self.project_id
            && !ids::is_valid_id(project_id)
        {
            return Err(FieldError::new("project_id", ids::ID_RULE));
        }
        if self.revision < 1 {
            return Err(FieldError::new("revision", "must be an integer >= 1"));
        }
        for (member, count, max) in [
            ("backends", self.backends.len(), MAX_BACKENDS),
            ("routes", self.routes.len(), MAX_ROUTES),
        ] {
            if count > max {
                return Err(FieldError::new(
                    member,
                    format!("must hold at most {max} items"),
                ));
            }
        }
        let mut names = HashSet::new();
        each(&self.backends, "backends", |backend| {
            validate::text("name", &backend.name, 256)?;
            validate::text("address", &backend.address, 2048)?;
            if !names.insert(backend.name.as_str()) {
                return Err(FieldError::new(
                    "name",
                    "must be unique among the backends of a revision",
                ));
            }
            Ok(())
        })?;
        if self.backends.iter().filter(|b| b.default).count() > 1 {
            let second = self
                .backends
                .iter()
                .enumerate()
                .filter(|(_, b)| b.default)
                .nth(1)
                .map_or(0, |(i, _)| i);
            return Err(FieldError::new(
                format!("backends[{second}].default"),
                "at most one backend of a revision may be the default",
            ));
        }
        each(&self.routes, "routes", |route| {
            if names.contains(route.backend_name.as_str()) {
                Ok(())
            } else {
                Err(FieldError::new(
                    "backend_name",
                    "must be the name of a backend of this revision",
                ))
            }
        })
    }
}

/// The checks a revision must pass to be created or activated through
/// the API, beyond [`ProxySettings::validate`] (the rules imports apply
/// too: these do not, so that an export holding revisions stored before
/// them imports again). Each member at fault is named:
///
/// - a route's `path` compiles as a regex when its `regex` is true, within
///   the request's budget ([`RegexChecks`]);
/// - a backend's `address` is a host with an optional port
///   ([`validate::backend_address`]);
/// - a backend's `ca_certificate`, when given and not empty, is PEM
///   holding certificates ([`validate::pem_certificates`]);
/// - a route's `continent` and `country` hold codes of [`geo`], its
///   `region` region names: `routes[2].country[0]`.
///
/// Each rule takes every value the public document and the platform's own
/// proxy configuration take: routes may share a rank (ties keep the
/// order of the list), an address may leave its port to TLS, a region is
/// any name (docs/management.md, "Checks before activation").
///
/// It reads the revision as JSON (a request body, or a stored revision
/// written out), so that it also runs beside the schema's check of a body:
/// members of another shape are the schema's to report and are passed
/// over here. `Err` when the checks were stopped (nobody waits for them).
pub fn activation_problems(
    revision: &Value,
    checks: &mut RegexChecks,
) -> Result<Vec<FieldError>, Stopped> {
    let mut problems = Vec::new();
    for (i, backend) in items(revision.get("backends")) {
        let member = |name: &str| backend.get(name).and_then(Value::as_str);
        if let Some(address) = member("address")
            && !validate::backend_address(address)
        {
            problems.push(FieldError::new(
                format!("backends[{i}].address"),
                validate::ADDRESS_RULE,
            ));
        }
        // An empty certificate is none, as an empty `sni_hostname` or
        // `check_certificate` is: forms and generated clients send "".
        if let Some(pem) = member("ca_certificate").filter(|pem| !pem.is_empty())
            && let Err(problem) = validate::pem_certificates(pem)
        {
            problems.push(problem.within(&format!("backends[{i}].ca_certificate")));
        }
    }
    for (i, route) in items(revision.get("routes")) {
        if route.get("regex") == Some(&Value::Bool(true))
            && let Some(path) = route.get("path").and_then(Value::as_str)
            && let Err(problem) = checks.check(path)?
        {
            problems.push(problem.within(&format!("routes[{i}].path")));
        }
        for (member, valid, rule) in [
            (
                "continent",
                geo::is_continent as fn(&str) -> bool,
                geo::CONTINENT_RULE,
            ),
            ("region", geo::is_region, geo::REGION_RULE),
            ("country", geo::is_country, geo::COUNTRY_RULE),
        ] {
            for (j, code) in items(route.get(member)) {
                if code.as_str().is_some_and(|code| !valid(code)) {
                    problems.push(FieldError::new(format!("routes[{i}].{member}[{j}]"), rule));
                }
            }
        }
    }
    Ok(problems)
}

/// The elements of an array member, with their index; none when it is
/// absent or no array.
fn items(list: Option<&Value>) -> impl Iterator<Item = (usize, &Value)> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// What createProjectProxySettings and updateProjectProxySettings answer
/// with `dry_run=true`: the revision as the write would store and answer
/// it, the project's active revision now (none: `null`), and the change
/// from that one to this one. Nothing of it is stored.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DryRun {
    pub object: DryRunTag,
    pub revision: ProxySettings,
    pub active_revision: Option<u32>,
    /// An RFC 6902 JSON Patch from the active revision's `description`,
    /// `backends` and `routes` to this one's (from an empty revision,
    /// `{"description": "", "backends": [], "routes": []}`, when none is
    /// active).
    pub diff: Vec<Operation>,
}

impl DryRun {
    /// `revision` as the write would leave it; `active`, the project's
    /// active revision now.
    pub fn new(mut revision: ProxySettings, active: Option<&ProxySettings>) -> Self {
        revision.project_id = None;
        let empty = ProxySettings {
            object: ProxySettingsTag::Tag,
            project_id: None,
            revision: 0,
            description: String::new(),
            is_active: false,
            backends: Vec::new(),
            routes: Vec::new(),
        };
        let diff = json_patch::diff(&compared(active.unwrap_or(&empty)), &compared(&revision));
        Self {
            object: DryRunTag::Tag,
            active_revision: active.map(|active| active.revision),
            revision,
            diff,
        }
    }
}

/// What a dry run's diff compares of a revision: what it holds, not which
/// one it is or whether it is active.
fn compared(settings: &ProxySettings) -> Value {
    serde_json::json!({
        "description": settings.description,
        "backends": settings.backends,
        "routes": settings.routes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::regexes::Stop;
    use serde_json::json;

    fn parse(value: serde_json::Value) -> Result<ProxySettings, String> {
        let settings: ProxySettings = serde_json::from_value(value).map_err(|e| e.to_string())?;
        settings.validate().map_err(|e| e.to_string())?;
        Ok(settings)
    }

    fn backend(name: &str) -> serde_json::Value {
        json!({"name": name, "address": "origin.example.com:443"})
    }

    #[test]
    fn ranks_hold_at_most_18_digits_as_the_document_says() {
        let rank = |value: serde_json::Value| {
            parse(json!({"revision": 1, "backends": [backend("a")],
                "routes": [{"path": "/", "backend_name": "a", "rank": value}]}))
            .map(|settings| settings.routes[0].rank)
        };
        assert_eq!(rank(json!("-00392587")).unwrap(), RouteRank(-392587));
        assert_eq!(
            rank(json!("0999999999999999999")).unwrap(),
            RouteRank(MAX_RANK)
        );
        assert_eq!(rank(json!(-MAX_RANK)).unwrap(), RouteRank(-MAX_RANK));
        assert!(rank(json!("1000000000000000000")).is_err());
        assert!(rank(json!("061024245829798965319013")).is_err());
        assert!(rank(json!(MAX_RANK + 1)).is_err());
        assert!(rank(json!(u64::MAX)).is_err());
    }

    #[test]
    fn unset_backend_strings_are_omitted_and_rank_is_a_string() {
        let settings = parse(json!({
            "revision": 1, "is_active": true,
            "backends": [backend("origin")],
            "routes": [{"path": "/", "backend_name": "origin", "rank": 3}]
        }))
        .unwrap();
        let written = serde_json::to_value(&settings).unwrap();
        assert_eq!(written["object"], "proxy_settings");
        assert!(written.get("project_id").is_none());
        assert_eq!(
            written["backends"][0],
            json!({"name": "origin", "address": "origin.example.com:443", "enable_ssl": false, "default": false})
        );
        assert_eq!(written["routes"][0]["rank"], "3");
        assert_eq!(
            parse(json!({"revision": 1, "backends": [backend("a")],
                "routes": [{"path": "/", "backend_name": "a", "rank": "-2"}]}))
            .unwrap()
            .routes[0]
                .rank,
            RouteRank(-2)
        );
    }

    #[test]
    fn rules_name_their_field() {
        let cases = [
            (json!({"revision": 0}), "revision"),
            (
                json!({"revision": 1, "backends": [backend("a"), backend("a")]}),
                "backends[1].name",
            ),
            (
                json!({"revision": 1, "backends": [backend("a")],
                "routes": [{"path": "/", "backend_name": "b"}]}),
                "routes[0].backend_name",
            ),
            (
                json!({"revision": 1, "backends": [
                {"name": "a", "address": "x", "default": true},
                {"name": "b", "address": "y", "default": true}]}),
                "backends[1].default",
            ),
            (json!({"revision": 1, "project_id": "bad id"}), "project_id"),
        ];
        for (value, field) in cases {
            let err = parse(value).unwrap_err();
            assert!(err.starts_with(&format!("{field}: ")), "{field}: {err}");
        }
    }

    /// The checks before activation name every member at fault, in the
    /// revision's order; the import's rules let the same revision in.
    #[test]
    fn activation_problems_name_every_member() {
        let revision = json!({"revision": 1,
            "backends": [{"name": "a", "address": "a.example:0", "ca_certificate": "x"},
                         {"name": "b", "address": "[::1]:443", "ca_certificate": ""},
                         {"name": "c", "address": "192.168.0.10"}],
            "routes": [{"path": "(", "regex": true, "backend_name": "a", "rank": "3",
                        "continent": ["EU", "XX"], "region": ["EU-West", ""], "country": ["FR", "fr"]},
                       {"path": "(", "backend_name": "b", "rank": 3},
                       {"path": "/", "backend_name": "b"},
                       {"path": "/x", "backend_name": "b", "rank": "-0"}]});
        assert!(parse(revision.clone()).is_ok(), "the import takes it");
        let checks = || RegexChecks::new(Stop::new());
        let named: Vec<String> = activation_problems(&revision, &mut checks())
            .unwrap()
            .into_iter()
            .map(|problem| problem.field)
            .collect();
        // Ranks may repeat, an address may leave out its port, an empty
        // certificate is none.
        assert_eq!(
            named,
            [
                "backends[0].address",
                "backends[0].ca_certificate",
                "routes[0].path",
                "routes[0].continent[1]",
                "routes[0].region[1]",
                "routes[0].country[1]",
            ]
        );
        // Members of another shape are the schema's to name.
        assert!(
            activation_problems(
                &json!({"backends": [{"address": 3}], "routes": {"x": 1}}),
                &mut checks()
            )
            .unwrap()
            .is_empty()
        );
    }

    #[test]
    fn a_dry_run_diffs_from_the_active_revision_or_from_nothing() {
        let one = parse(
            json!({"revision": 1, "is_active": true, "description": "one",
            "backends": [backend("a")]}),
        )
        .unwrap();
        let mut two = one.clone();
        two.revision = 2;
        two.is_active = false;
        let first = serde_json::to_value(DryRun::new(one.clone(), None)).unwrap();
        assert_eq!(first["object"], "proxy_settings_dry_run");
        assert_eq!(first["active_revision"], serde_json::Value::Null);
        assert_eq!(
            first["diff"],
            json!([
                {"op": "add", "path": "/backends/0", "value": {"name": "a",
                 "address": "origin.example.com:443", "enable_ssl": false, "default": false}},
                {"op": "replace", "path": "/description", "value": "one"},
            ])
        );
        // Which revision it is and whether it is active are not compared.
        let same = serde_json::to_value(DryRun::new(two, Some(&one))).unwrap();
        assert_eq!(
            (&same["active_revision"], &same["diff"]),
            (&json!(1), &json!([]))
        );
        assert_eq!(same["revision"]["revision"], 2);
    }

    #[test]
    fn bad_shapes_are_refused() {
        for value in [
            json!({"revision": -1}),
            json!({"revision": 1, "backends": [{"name": "a"}]}),
            json!({"revision": 1, "backends": [backend("a")],
                "routes": [{"path": "/", "backend_name": "a", "rank": "1.5"}]}),
            json!({"revision": 1, "extra": true}),
            json!({"revision": 1, "backends": [{"name": "a", "address": "x", "sni_hostname": 3}]}),
        ] {
            assert!(parse(value.clone()).is_err(), "{value}");
        }
    }
}
