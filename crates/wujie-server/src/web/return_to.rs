//! Where the login page sends a browser on to: back to the page it was going to, and only ever
//! to a path of this server. A `next` that could lead elsewhere (`//host`, a scheme, a
//! backslash, which browsers read as a slash, spaces or control characters) is not taken, and
//! the browser lands on the issue list instead.

/// Longest `next` kept; a longer one is not a page of ours.
const MAX_LEN: usize = 2048;

/// A path (and query) on this server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReturnTo(String);

impl ReturnTo {
    /// `next` when it is a path of this server, else `None`.
    pub(crate) fn parse(next: &str) -> Option<ReturnTo> {
        let rest = next.strip_prefix('/')?;
        let same_site = next.len() <= MAX_LEN
            && !rest.starts_with('/')
            && next.bytes().all(|b| b.is_ascii_graphic() && b != b'\\');
        same_site.then(|| ReturnTo(next.to_owned()))
    }

    pub(crate) fn path(&self) -> &str {
        &self.0
    }

    /// The login page that comes back here.
    pub(crate) fn login_href(&self) -> String {
        format!("/login?next={}", encode(&self.0))
    }
}

/// Percent-encodes all but the unreserved characters, so the path is one query value.
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 3);
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::ReturnTo;

    #[test]
    fn only_paths_of_this_server_are_taken() {
        for ok in [
            "/",
            "/issues/WUJ-1",
            "/issues/WUJ-1?tab=runs",
            "/discussions/a%2Fb",
        ] {
            assert_eq!(
                ReturnTo::parse(ok).map(|r| r.path().to_owned()),
                Some(ok.to_owned())
            );
        }
        for elsewhere in [
            "",
            "//evil.example",
            "///evil.example",
            "https://evil.example/",
            "http:/evil.example",
            "javascript:alert(1)",
            "evil.example",
            "/\\evil.example",
            "\\\\evil.example",
            "/issues\\..\\x",
            "/\tevil",
            "/ evil",
            "/issues/WUJ-1\r\nSet-Cookie: x=1",
            "/é",
        ] {
            assert_eq!(ReturnTo::parse(elsewhere), None, "{elsewhere:?}");
        }
        assert_eq!(ReturnTo::parse(&format!("/{}", "a".repeat(2048))), None);
    }

    #[test]
    fn the_login_link_carries_the_path_as_one_value() {
        let back = ReturnTo::parse("/issues/WUJ-1?tab=runs&x=1").expect("a path");
        assert_eq!(
            back.login_href(),
            "/login?next=%2Fissues%2FWUJ-1%3Ftab%3Druns%26x%3D1"
        );
    }
}
