//! A page of one project's objects kept by name (its edges' reports, its
//! domains): the rows after a start key, at most a limit, and whether
//! more follow (told by reading one row more than the page).

use crate::store::sql::db::Param;

/// Which page of a project's objects by name.
pub(crate) struct NamePage<'a> {
    pub project_id: &'a str,
    /// The last name of the page before.
    pub start_key: Option<&'a str>,
    pub limit: u32,
}

/// A page's statement parts: `WHERE project_id = ?1` and `after`, its
/// parameters so far (a statement may add its own after them), and the
/// number of the placeholder that holds the `LIMIT`.
pub(crate) struct NamePageSql<'a> {
    pub after: &'static str,
    pub params: Vec<Param<'a>>,
    pub limit_at: usize,
}

impl<'a> NamePage<'a> {
    pub fn sql(&self) -> NamePageSql<'a> {
        let mut params = vec![Param::Text(self.project_id)];
        let after = match self.start_key {
            Some(name) => {
                params.push(Param::Text(name));
                " AND name > ?2"
            }
            None => "",
        };
        params.push(Param::Int(self.fetch()));
        NamePageSql {
            after,
            limit_at: params.len(),
            params,
        }
    }

    fn fetch(&self) -> i64 {
        i64::from(self.limit) + 1
    }

    /// The page of the rows read, and whether more follow.
    pub fn finish<T>(&self, mut rows: Vec<T>) -> (Vec<T>, bool) {
        let more = rows.len() as i64 == self.fetch();
        rows.truncate(self.limit as usize);
        (rows, more)
    }
}
