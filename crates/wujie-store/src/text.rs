//! Text as the store keeps it: PostgreSQL's `text` holds every character but NUL, SQLite's
//! holds NUL too. So that both backends store and return the same strings (an event with a NUL
//! in it must not be stored by one and refused for ever by the other), text that people and
//! agents write goes in escaped and comes out unescaped, on both backends alike:
//! NUL is written as [`ESCAPE`] `0`, and [`ESCAPE`] itself as [`ESCAPE`] `1`.
//!
//! [`ESCAPE`] is U+10FFFF, a noncharacter (Unicode reserves it for a program's internal use),
//! so a text without NUL or U+10FFFF, which is nearly every text, is stored as it is, and SQL
//! that compares or searches text works on the escaped form when the needle is escaped too.
//!
//! Only wujie-store sees the escaped form: rows are read through [`Text`], values are bound
//! through [`stored`].

use std::borrow::Cow;

use sqlx::any::AnyTypeInfo;
use sqlx::encode::IsNull;
use sqlx::error::BoxDynError;
use sqlx::{Any, Database, Decode, Encode, Type};

/// The character escapes start with.
pub(crate) const ESCAPE: char = '\u{10FFFF}';

/// `text` as it is written into the database.
pub(crate) fn stored(text: &str) -> Stored<'_> {
    if !text.contains(['\0', ESCAPE]) {
        return Stored(Cow::Borrowed(text));
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\0' => out.extend([ESCAPE, '0']),
            ESCAPE => out.extend([ESCAPE, '1']),
            c => out.push(c),
        }
    }
    Stored(Cow::Owned(out))
}

/// An optional text as it is written into the database.
pub(crate) fn stored_opt(text: Option<&str>) -> Option<Stored<'_>> {
    text.map(stored)
}

/// What [`stored`] wrote, read back. An escape character followed by anything other than
/// `0` or `1` (which only a row written before escaping could hold) is kept as it is.
fn unescaped(text: String) -> String {
    if !text.contains(ESCAPE) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != ESCAPE {
            out.push(c);
            continue;
        }
        match chars.peek() {
            Some('0') => {
                chars.next();
                out.push('\0');
            }
            Some('1') => {
                chars.next();
                out.push(ESCAPE);
            }
            _ => out.push(ESCAPE),
        }
    }
    out
}

/// A text bound into a statement, escaped.
#[derive(Debug)]
pub(crate) struct Stored<'a>(Cow<'a, str>);

impl Stored<'_> {
    /// The escaped text, for statements that build their binds first.
    pub(crate) fn into_owned(self) -> String {
        self.0.into_owned()
    }
}

impl Type<Any> for Stored<'_> {
    fn type_info() -> AnyTypeInfo {
        <str as Type<Any>>::type_info()
    }
}

impl<'q> Encode<'q, Any> for Stored<'q> {
    fn encode_by_ref(
        &self,
        buf: &mut <Any as Database>::ArgumentBuffer<'q>,
    ) -> Result<IsNull, BoxDynError> {
        match &self.0 {
            Cow::Borrowed(text) => <&str as Encode<'q, Any>>::encode(text, buf),
            Cow::Owned(text) => <String as Encode<'q, Any>>::encode_by_ref(text, buf),
        }
    }
}

/// A text column read from a row, unescaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Text(pub(crate) String);

impl From<Text> for String {
    fn from(text: Text) -> String {
        text.0
    }
}

impl Type<Any> for Text {
    fn type_info() -> AnyTypeInfo {
        <String as Type<Any>>::type_info()
    }

    fn compatible(ty: &AnyTypeInfo) -> bool {
        <String as Type<Any>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Any> for Text {
    fn decode(value: <Any as Database>::ValueRef<'r>) -> Result<Self, BoxDynError> {
        <String as Decode<'r, Any>>::decode(value).map(|s| Text(unescaped(s)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_is_undone_exactly() {
        for text in [
            "",
            "plain",
            "\0",
            "a\0b",
            "\u{10FFFF}",
            "\u{10FFFF}0",
            "\u{10FFFF}1\0\u{10FFFF}",
            "\0\0\u{10FFFF}\u{10FFFF}",
            "中文\0",
        ] {
            let escaped = stored(text).0.into_owned();
            assert!(!escaped.contains('\0'), "{escaped:?}");
            assert_eq!(unescaped(escaped), text);
        }
    }

    #[test]
    fn text_without_nul_or_the_escape_character_is_stored_as_it_is() {
        assert!(matches!(stored("plain text 中文").0, Cow::Borrowed(_)));
    }

    #[test]
    fn an_escape_character_of_an_older_row_is_kept() {
        assert_eq!(unescaped("a\u{10FFFF}x".into()), "a\u{10FFFF}x");
        assert_eq!(unescaped("a\u{10FFFF}".into()), "a\u{10FFFF}");
    }
}
