//! Statements built at run time. Placeholders are numbered (`$1`, `$2`, …), which SQLite and
//! PostgreSQL both read; sqlx's QueryBuilder writes `?` for the Any driver, which PostgreSQL
//! does not.

use std::fmt::Write as _;

/// Appends `count` placeholders `$first, $first+1, …` separated by commas.
pub(crate) fn push_placeholders(sql: &mut String, first: usize, count: usize) {
    for n in first..first + count {
        if n > first {
            sql.push_str(", ");
        }
        // Writing to a String cannot fail.
        let _ = write!(sql, "${n}");
    }
}

/// Appends `rows` parenthesised groups of `columns` placeholders, numbered from 1, as the
/// VALUES list of a multi-row insert.
pub(crate) fn push_value_rows(sql: &mut String, rows: usize, columns: usize) {
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        push_placeholders(sql, row * columns + 1, columns);
        sql.push(')');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_across_rows() {
        let mut sql = String::from("VALUES ");
        push_value_rows(&mut sql, 2, 3);
        assert_eq!(sql, "VALUES ($1, $2, $3), ($4, $5, $6)");
        let mut list = String::new();
        push_placeholders(&mut list, 3, 2);
        assert_eq!(list, "$3, $4");
    }
}
