//! Who may read a project, as the operations that take a project's id
//! without a write's `authorize` decide it (the change feed narrowed to a
//! project, the edges' reports): one look-up, the access rule, and the
//! same answer for a project that does not exist and one the caller may
//! not see.

use crate::domain::access::{self, Action, Facts};
use crate::domain::organization_set::OrganizationSet;
use crate::store::error::StoreError;
use crate::store::sql::db::{Db, Param, query_opt};

/// The organization number of a project the caller may read
/// (`visible_to`; `None`: anyone), deleted or not as `deleted` says. The
/// same answer for a project that does not exist and one the caller may
/// not see.
pub(crate) async fn readable_project(
    db: &mut dyn Db,
    visible_to: Option<&OrganizationSet>,
    project_id: &str,
    deleted: Deleted,
) -> Result<i64, StoreError> {
    let sql = match deleted {
        Deleted::Included => "SELECT organization_number FROM projects WHERE id = ?1",
        Deleted::Excluded => {
            "SELECT organization_number FROM projects WHERE id = ?1 AND deleted_at IS NULL"
        }
    };
    let number = query_opt(db, sql, &[Param::Text(project_id)], |row| row.int(0)).await?;
    let visible = number.filter(|number| {
        visible_to.is_none_or(|set| {
            let standing = set.standing_toward_number(*number);
            access::decide(Action::ReadProjects, Facts::live(standing)).is_ok()
        })
    });
    visible.ok_or_else(|| StoreError::NotFound {
        kind: "project",
        id: project_id.to_owned(),
    })
}

/// Whether [`readable_project`] finds deleted projects.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Deleted {
    Included,
    Excluded,
}
