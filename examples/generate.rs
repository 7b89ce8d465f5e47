//! Writes a deterministic NDJSON data set in the import format, for
//! benchmarks, in one of two shapes.
//!
//! The focus shape (the default): organizations, one user each plus a
//! benchmark user, projects with every optional field filled, and proxy
//! settings revisions.
//!
//!     cargo run --release --example generate -- --projects 1000000 \
//!         --organizations 1000 --focus-projects 100000 > data.ndjson
//!
//! The first organization ("focus") holds `--focus-projects` projects and
//! the user `bench-user`; the first `--revised-projects` of its projects
//! get `--revisions` proxy settings revisions each (the last one active).
//!
//! The mix shape (`--mix`), the realistic traffic's data: organizations of
//! skewed sizes (`--big-organizations` of about equal size share what the
//! others leave; the others hold 10 to 1,000 projects, spread evenly over
//! the logarithm), their projects interleaved in time; `--users` users in
//! 1 to 3 organizations, 1% of them in 50 to 1,000; `bench-user` in the
//! first (big) organization only and `bench-agency` in every one; each
//! organization's first project and one project in 50 have 1 to 20
//! revisions. `--meta FILE` writes what the load needs to know to ask for
//! pages that exist (JSON: each organization's project numbers, each
//! user's organizations, each revised project's revision count).
//!
//!     cargo run --release --example generate -- --mix --projects 1000000 \
//!         --organizations 1000 --users 10000 --meta meta.json > data.ndjson

mod bench_data;

use std::io::{BufWriter, Write};

use bench_data::{Random, at, org_id, project, project_id, revision_of};
use proxydeck::domain::directory::{Organization, OrganizationTag, Role, User, UserTag};

struct Shape {
    projects: u64,
    organizations: u64,
    focus_projects: u64,
    revised_projects: u64,
    revisions: u32,
    mix: bool,
    big_organizations: u64,
    users: u64,
    meta: Option<String>,
}

fn main() -> anyhow::Result<()> {
    let shape = parse_args()?;
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    if shape.mix {
        mix(&shape, &mut out)?;
    } else {
        focus(&shape, &mut out)?;
    }
    out.flush()?;
    Ok(())
}

fn line(out: &mut impl Write, value: &impl serde::Serialize) -> anyhow::Result<()> {
    serde_json::to_writer(&mut *out, value)?;
    out.write_all(b"\n")?;
    Ok(())
}

fn organization(n: u64) -> Organization {
    Organization {
        object: OrganizationTag::Tag,
        id: org_id(n),
        name: format!("Organization {n}"),
        slug: Some(format!("organization-{n}")),
        kind: Default::default(),
        created_at: Some(at(n)),
    }
}

/// User `id`, created `n` seconds after the last organization.
fn user(id: String, organizations: Vec<String>, shape: &Shape, n: u64) -> User {
    User {
        object: UserTag::Tag,
        email: format!("{id}@bench.example"),
        name: None,
        id,
        roles: organizations
            .into_iter()
            .map(|organization| (organization, Role::Admin))
            .collect(),
        organizations: None,
        created_at: Some(at(shape.organizations + n)),
    }
}

fn focus(shape: &Shape, out: &mut impl Write) -> anyhow::Result<()> {
    for n in 0..shape.organizations {
        line(out, &organization(n))?;
    }
    line(out, &user("bench-user".into(), vec![org_id(0)], shape, 0))?;
    for n in 0..shape.organizations {
        line(
            out,
            &user(format!("user-{n}"), vec![org_id(n)], shape, n + 1),
        )?;
    }
    let others = shape.organizations.saturating_sub(1).max(1);
    for i in 0..shape.projects {
        // The focus organization's projects first, the rest spread round
        // the others.
        let organization = if i < shape.focus_projects || shape.organizations == 1 {
            0
        } else {
            1 + (i - shape.focus_projects) % others
        };
        let description = format!("Benchmark project {i} of organization {organization}");
        line(out, &project(i, organization, description))?;
    }
    for i in 0..shape
        .revised_projects
        .min(shape.focus_projects)
        .min(shape.projects)
    {
        for revision in 1..=shape.revisions {
            line(
                out,
                &revision_of(&project_id(i), revision, revision == shape.revisions),
            )?;
        }
    }
    Ok(())
}

/// What the load generator needs to know of a mix data set.
#[derive(serde::Serialize)]
struct Meta {
    /// Each organization's project numbers, oldest first.
    organizations: Vec<Vec<u64>>,
    /// Each user's id and organization numbers.
    users: Vec<(String, Vec<u64>)>,
    /// Revised projects: number and revision count.
    revised: Vec<(u64, u32)>,
}

fn mix(shape: &Shape, out: &mut impl Write) -> anyhow::Result<()> {
    let mut random = Random::new(0x70726f7879);
    let orgs = shape.organizations;
    let sizes = organization_sizes(shape, &mut random);
    // Every project's organization, in creation order: each organization's
    // projects spread over the whole time line.
    let mut owners: Vec<u32> = sizes
        .iter()
        .enumerate()
        .flat_map(|(n, size)| std::iter::repeat_n(n as u32, *size as usize))
        .collect();
    random.shuffle(&mut owners);

    for n in 0..orgs {
        line(out, &organization(n))?;
    }
    let mut users = vec![
        ("bench-user".to_string(), vec![0]),
        ("bench-agency".to_string(), (0..orgs).collect()),
    ];
    for n in 0..shape.users {
        let count = if random.below(100) == 0 {
            random.log_uniform(50, 1000.min(orgs))
        } else {
            1 + random.below(3)
        };
        users.push((format!("user-{n}"), random.distinct(count, orgs)));
    }
    for (n, (id, organizations)) in users.iter().enumerate() {
        let ids = organizations.iter().map(|o| org_id(*o)).collect();
        line(out, &user(id.clone(), ids, shape, n as u64))?;
    }

    let mut projects_of = vec![Vec::new(); orgs as usize];
    for (i, owner) in owners.iter().enumerate() {
        let (i, owner) = (i as u64, u64::from(*owner));
        projects_of[owner as usize].push(i);
        let description = format!("Benchmark project {i} of organization {owner}");
        line(out, &project(i, owner, description))?;
    }
    let mut revised = Vec::new();
    for (i, owner) in owners.iter().enumerate() {
        let first_of_its_organization = projects_of[*owner as usize].first() == Some(&(i as u64));
        if first_of_its_organization || random.below(50) == 0 {
            let count = 1 + random.below(20) as u32;
            for revision in 1..=count {
                line(
                    out,
                    &revision_of(&project_id(i as u64), revision, revision == count),
                )?;
            }
            revised.push((i as u64, count));
        }
    }
    if let Some(path) = &shape.meta {
        let meta = Meta {
            organizations: projects_of,
            users,
            revised,
        };
        let file = BufWriter::new(std::fs::File::create(path)?);
        serde_json::to_writer(file, &meta)?;
    }
    Ok(())
}

/// How many projects each organization holds: the small ones 10 to 1,000
/// (fewer if they would hold more than half of all), the big ones the rest
/// in equal parts.
fn organization_sizes(shape: &Shape, random: &mut Random) -> Vec<u64> {
    let big = shape.big_organizations.clamp(1, shape.organizations);
    let small: Vec<u64> = (big..shape.organizations)
        .map(|_| random.log_uniform(10, 1000))
        .collect();
    let half = shape.projects / 2;
    let total: u64 = small.iter().sum();
    let small: Vec<u64> = if total > half {
        small
            .iter()
            .map(|size| (size * half / total).max(1))
            .collect()
    } else {
        small
    };
    let rest = shape.projects.saturating_sub(small.iter().sum());
    (0..big)
        .map(|n| rest / big + u64::from(n < rest % big))
        .chain(small)
        .collect()
}

fn parse_args() -> anyhow::Result<Shape> {
    let mut shape = Shape {
        projects: 1_000,
        organizations: 10,
        focus_projects: 100,
        revised_projects: 10,
        revisions: 50,
        mix: false,
        big_organizations: 8,
        users: 10_000,
        meta: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        match flag.as_str() {
            "--mix" => {
                shape.mix = true;
                continue;
            }
            "--meta" => {
                shape.meta = Some(args.next().ok_or_else(|| anyhow::anyhow!("--meta FILE"))?);
                continue;
            }
            _ => {}
        }
        let value: u64 = args
            .next()
            .ok_or_else(|| anyhow::anyhow!("{flag} needs a number"))?
            .parse()?;
        match flag.as_str() {
            "--projects" => shape.projects = value,
            "--organizations" => shape.organizations = value.max(1),
            "--focus-projects" => shape.focus_projects = value,
            "--revised-projects" => shape.revised_projects = value,
            "--revisions" => shape.revisions = u32::try_from(value)?,
            "--big-organizations" => shape.big_organizations = value,
            "--users" => shape.users = value,
            _ => anyhow::bail!(
                "unknown flag {flag}: --projects --organizations --focus-projects --revised-projects --revisions, or --mix --big-organizations --users --meta FILE"
            ),
        }
    }
    Ok(shape)
}
