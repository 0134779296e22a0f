//! Statements built at run time, with placeholders in each backend's style.
//!
//! PostgreSQL takes numbered placeholders (`$1`, `$2`, …); sqlx's QueryBuilder writes `?` for
//! the Any driver, which PostgreSQL does not read. SQLite reads both, but sqlx binds a numbered
//! one by asking SQLite for its name (`sqlite3_bind_parameter_name`, which walks a list of
//! every name), once per parameter: a multi-row insert of 128 events (1,152 parameters) spent
//! half its time there, and new events were stored at a third of the speed of plain `?`, which
//! sqlx binds by position. So SQLite gets `?` throughout a built statement (a statement must
//! not mix the two: sqlx would bind the `?` from the first argument again).

use std::fmt::Write as _;

use crate::dialect::Backend;

/// Writes the placeholders of one statement, in order.
pub(crate) struct Placeholders {
    backend: Backend,
    next: usize,
}

impl Placeholders {
    pub(crate) fn new(backend: Backend) -> Placeholders {
        Placeholders { backend, next: 1 }
    }

    /// Appends the next placeholder.
    pub(crate) fn push(&mut self, sql: &mut String) {
        match self.backend {
            Backend::Sqlite => sql.push('?'),
            // Writing to a String cannot fail.
            Backend::Postgres => {
                let _ = write!(sql, "${}", self.next);
            }
        }
        self.next += 1;
    }

    /// Appends the next `count` placeholders, separated by commas.
    pub(crate) fn push_list(&mut self, sql: &mut String, count: usize) {
        for i in 0..count {
            if i > 0 {
                sql.push_str(", ");
            }
            self.push(sql);
        }
    }

    /// Appends `rows` parenthesised groups of `columns` placeholders, as the VALUES list of a
    /// multi-row insert.
    pub(crate) fn push_value_rows(&mut self, sql: &mut String, rows: usize, columns: usize) {
        for row in 0..rows {
            sql.push_str(if row == 0 { "(" } else { ", (" });
            self.push_list(sql, columns);
            sql.push(')');
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn postgres_placeholders_are_numbered_across_rows() {
        let mut sql = String::from("VALUES ");
        let mut p = Placeholders::new(Backend::Postgres);
        p.push_value_rows(&mut sql, 2, 3);
        sql.push_str(" WHERE x IN (");
        p.push_list(&mut sql, 2);
        sql.push(')');
        assert_eq!(sql, "VALUES ($1, $2, $3), ($4, $5, $6) WHERE x IN ($7, $8)");
    }

    #[test]
    fn sqlite_placeholders_are_positional() {
        let mut sql = String::from("a = ");
        let mut p = Placeholders::new(Backend::Sqlite);
        p.push(&mut sql);
        sql.push_str(" AND b IN (");
        p.push_list(&mut sql, 2);
        sql.push(')');
        assert_eq!(sql, "a = ? AND b IN (?, ?)");
    }
}
