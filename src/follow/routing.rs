//! The routing index `follow` keeps beside the projects' files: every
//! verified custom domain (`dns_status` true) of the projects it follows,
//! to its project, so that one edge serves them all by the request's host
//! (`docs/edge.md`). Two files HAProxy loads as maps as they are, one
//! `KEY PROJECT` a line, sorted by key:
//!
//! - `routing.map`: the exact names, `shop.example.com p1`, looked up with
//!   the host (`map`, an exact match);
//! - `routing-wildcards.map`: each wildcard by its base, `*.example.com`
//!   as `example.com p2`, looked up with the host's first label removed,
//!   only once the exact map has no answer: an exact name wins over a
//!   wildcard, and a wildcard matches exactly one label
//!   (`a.example.com`, neither `example.com` nor `a.b.example.com`), as
//!   `domain::host_name` says.
//!
//! What the service sends is not trusted with these files either: a name
//! is written only in its one form (`HostName::parse` gives it back
//! unchanged), so that no name adds a line or a key of its own.

use std::collections::{BTreeMap, BTreeSet};

use crate::domain::host_name::HostName;
use crate::domain::ids;

/// The exact names' map.
pub const EXACT_MAP: &str = "routing.map";
/// The wildcards' map, by base.
pub const WILDCARD_MAP: &str = "routing-wildcards.map";

const EXACT_HEADER: &str = "# Written by proxydeck follow: HOST PROJECT, for each verified name \
    (docs/edge.md). Do not edit.\n";
const WILDCARD_HEADER: &str = "# Written by proxydeck follow: BASE PROJECT, for each verified \
    wildcard *.BASE, looked up with the host's first label removed (docs/edge.md). Do not edit.\n";

/// The verified names of each project followed.
#[derive(Default, Debug, PartialEq, Eq)]
pub struct RoutingIndex {
    by_project: BTreeMap<String, BTreeSet<HostName>>,
}

/// The two maps' text.
pub struct RenderedMaps {
    pub exact: String,
    pub wildcards: String,
}

impl RoutingIndex {
    /// The index the two maps hold (as [`Self::render`] writes them); a line
    /// that is not one (edited by hand) is left out and said on stderr.
    pub fn parse(exact: &str, wildcards: &str) -> Self {
        let mut index = Self::default();
        let lines = |map: &str| -> Vec<(String, String)> {
            map.lines()
                .map(str::trim)
                .filter(|line| !line.is_empty() && !line.starts_with('#'))
                .filter_map(|line| {
                    let (key, project) = line.split_once(' ')?;
                    Some((key.to_owned(), project.trim().to_owned()))
                })
                .collect()
        };
        let exact_lines = lines(exact).into_iter();
        let wildcard_lines = lines(wildcards)
            .into_iter()
            .map(|(base, project)| (format!("*.{base}"), project));
        for (name, project) in exact_lines.chain(wildcard_lines) {
            match (one_form(&name), ids::is_valid_id(&project)) {
                (Some(name), true) => {
                    index.by_project.entry(project).or_default().insert(name);
                }
                _ => eprintln!("follow: the routing index's line {name:?} {project:?} is left out"),
            }
        }
        index
    }

    /// `project`'s verified names are `names` (as the service listed them;
    /// one not in its one form is said on stderr and left out).
    pub fn set<'a>(&mut self, project: &str, names: impl IntoIterator<Item = &'a str>) {
        let mut kept = BTreeSet::new();
        for name in names {
            match one_form(name) {
                Some(name) => {
                    kept.insert(name);
                }
                None => eprintln!(
                    "follow: {project}: the service named a domain {name:?}, which is no host name in its one form: not routed"
                ),
            }
        }
        match kept.is_empty() {
            true => self.by_project.remove(project),
            false => self.by_project.insert(project.to_owned(), kept),
        };
    }

    /// `project` no longer followed, or gone: its names go.
    pub fn remove(&mut self, project: &str) {
        self.by_project.remove(project);
    }

    /// Keeps the names of the projects `keep` holds (a full sync: the
    /// others are no longer followed).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.by_project.retain(|project, _| keep(project));
    }

    /// Every name of the index with its project, by project.
    pub fn names(&self) -> impl Iterator<Item = (&str, &HostName)> {
        self.by_project
            .iter()
            .flat_map(|(project, names)| names.iter().map(move |name| (project.as_str(), name)))
    }

    /// The names `project` routes, in their one form.
    #[cfg(test)]
    fn names_of(&self, project: &str) -> Vec<&str> {
        self.by_project
            .get(project)
            .map(|names| names.iter().map(HostName::as_str).collect())
            .unwrap_or_default()
    }

    /// The two maps' text, sorted by key. A name held by two projects (the
    /// service verifies a name in one project at most: this index was read
    /// while it moved) routes to neither's until the next change of one
    /// of them settles it; said on stderr.
    pub fn render(&self) -> RenderedMaps {
        let mut exact: BTreeMap<&str, Option<&str>> = BTreeMap::new();
        let mut wildcards: BTreeMap<&str, Option<&str>> = BTreeMap::new();
        for (project, names) in &self.by_project {
            for name in names {
                let (map, key) = match name.is_wildcard() {
                    true => (&mut wildcards, name.base()),
                    false => (&mut exact, name.as_str()),
                };
                map.entry(key)
                    .and_modify(|held| {
                        eprintln!("follow: {name} is verified in two projects' listings: routed to neither for now");
                        *held = None;
                    })
                    .or_insert(Some(project));
            }
        }
        let write = |header: &str, map: BTreeMap<&str, Option<&str>>| {
            let mut text = String::with_capacity(header.len() + map.len() * 48);
            text.push_str(header);
            for (key, project) in map {
                if let Some(project) = project {
                    text.push_str(key);
                    text.push(' ');
                    text.push_str(project);
                    text.push('\n');
                }
            }
            text
        };
        RenderedMaps {
            exact: write(EXACT_HEADER, exact),
            wildcards: write(WILDCARD_HEADER, wildcards),
        }
    }
}

/// `name` as a host name, when it is already in its one form (what the
/// service stores): anything else could write a line or a key of its own.
fn one_form(name: &str) -> Option<HostName> {
    HostName::parse(name)
        .ok()
        .filter(|parsed| parsed.as_str() == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(entries: &[(&str, &[&str])]) -> RoutingIndex {
        let mut index = RoutingIndex::default();
        for (project, names) in entries {
            index.set(project, names.iter().copied());
        }
        index
    }

    #[test]
    fn exact_names_and_wildcards_go_to_their_own_map_by_key() {
        let index = index(&[
            ("p2", &["*.example.com", "www.example.org"]),
            ("p1", &["shop.example.com", "a.shop.example.com"]),
        ]);
        let maps = index.render();
        let lines = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|l| !l.starts_with('#'))
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(
            lines(&maps.exact),
            [
                "a.shop.example.com p1",
                "shop.example.com p1",
                "www.example.org p2"
            ]
        );
        assert_eq!(lines(&maps.wildcards), ["example.com p2"]);
        // What it writes, it reads back.
        assert_eq!(RoutingIndex::parse(&maps.exact, &maps.wildcards), index);
    }

    #[test]
    fn a_name_not_in_its_one_form_is_not_routed() {
        let index = index(&[(
            "p1",
            &[
                "Shop.Example.com",
                "shop.example.com extra",
                "evil.example.com p9\nx.example.com",
                "shop.example.com.",
                "*.*.example.com",
                "",
                "ok.example.com",
            ],
        )]);
        assert_eq!(index.names_of("p1"), ["ok.example.com"]);
        // A hand-edited line naming a path, or a bad name, is left out.
        let parsed = RoutingIndex::parse(
            "ok.example.com p1\nbad_name p1\nx.example.com ../p2\n",
            "example.com p3\n*.example.org p4\n",
        );
        assert_eq!(parsed.names_of("p1"), ["ok.example.com"]);
        assert_eq!(parsed.names_of("p2"), Vec::<&str>::new());
        assert_eq!(parsed.names_of("p3"), ["*.example.com"]);
        assert_eq!(parsed.names_of("p4"), Vec::<&str>::new());
    }

    #[test]
    fn a_name_in_two_projects_routes_to_neither() {
        let maps = index(&[("p1", &["shop.example.com"]), ("p2", &["shop.example.com"])]).render();
        assert!(!maps.exact.contains("shop.example.com "), "{}", maps.exact);
    }

    #[test]
    fn a_project_without_names_and_one_removed_have_no_lines() {
        let mut index = index(&[("p1", &["a.example.com"]), ("p2", &["b.example.com"])]);
        index.set("p1", []);
        index.remove("p2");
        assert_eq!(index, RoutingIndex::default());
    }
}
