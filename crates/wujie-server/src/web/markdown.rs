//! Markdown of comments, descriptions and agent text as HTML that cannot run anything: raw
//! HTML in the source is shown as text, links keep only allow-listed schemes (others become
//! plain text), and images become links (a page never loads what an agent pointed it at).

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd, html};

/// Schemes a link may use; a link without a scheme (relative, `#anchor`) is allowed too.
const ALLOWED_SCHEMES: [&str; 3] = ["http", "https", "mailto"];

/// Whether a browser following `url` stays on an allow-listed scheme. Browsers ignore ASCII
/// tabs and newlines inside a URL and strip leading spaces and control characters, so
/// `java\tscript:` is `javascript:`; they are dropped before the scheme is read.
fn allowed_link(url: &str) -> bool {
    let cleaned: String = url
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    let cleaned = cleaned.trim_start_matches(|c: char| c <= ' ');
    // A scheme ends at the first ':' before any '/', '?' or '#'.
    match cleaned.find([':', '/', '?', '#']) {
        Some(i) if cleaned[i..].starts_with(':') => {
            let scheme = cleaned[..i].to_ascii_lowercase();
            ALLOWED_SCHEMES.contains(&scheme.as_str())
        }
        _ => true,
    }
}

/// Renders `source` as safe HTML.
pub(crate) fn to_html(source: &str) -> String {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    // For each open link or image: whether it is kept (its end tag must match).
    let mut open_links: Vec<bool> = Vec::new();
    let events = Parser::new_ext(source, options).filter_map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        // An image becomes a link to it: nothing is fetched by rendering a transcript.
        Event::Start(
            Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }
            | Tag::Image {
                link_type,
                dest_url,
                title,
                id,
            },
        ) => {
            let keep = allowed_link(&dest_url);
            open_links.push(keep);
            keep.then_some(Event::Start(Tag::Link {
                link_type,
                dest_url,
                title,
                id,
            }))
        }
        Event::End(TagEnd::Link | TagEnd::Image) => open_links
            .pop()
            .unwrap_or(false)
            .then_some(Event::End(TagEnd::Link)),
        Event::Start(Tag::HtmlBlock) | Event::End(TagEnd::HtmlBlock) => None,
        other => Some(other),
    });
    let mut out = String::with_capacity(source.len() + source.len() / 4);
    html::push_html(&mut out, events);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_is_shown_as_text() {
        let html = to_html("hi <script>alert(1)</script>\n\n<div onclick=x>block</div>");
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<div"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
    }

    #[test]
    fn only_allow_listed_link_schemes_stay_links() {
        let html = to_html(
            "[a](javascript:alert(1)) [b](JaVa\tScRiPt:alert(1)) [c](https://x.test/) [d](/issues/WUJ-1) [e](data:text/html,hi)",
        );
        assert!(!html.to_ascii_lowercase().contains("javascript"), "{html}");
        assert!(!html.contains("data:"), "{html}");
        assert!(
            html.contains(r#"<a href="https://x.test/">c</a>"#),
            "{html}"
        );
        assert!(html.contains(r#"<a href="/issues/WUJ-1">d</a>"#), "{html}");
        for text in ["a", "b", "e"] {
            assert!(html.contains(text), "the link text {text} stays: {html}");
        }
    }

    #[test]
    fn images_become_links_and_autolinks_are_checked() {
        let html = to_html("![pic](https://x.test/p.png) <javascript:alert(1)>");
        assert!(!html.contains("<img"), "{html}");
        assert!(
            html.contains(r#"<a href="https://x.test/p.png">pic</a>"#),
            "{html}"
        );
        assert!(!html.contains("href=\"javascript"), "{html}");
    }

    #[test]
    fn markdown_still_renders() {
        let html = to_html("**bold** and `code`\n\n- item");
        assert!(html.contains("<strong>bold</strong>"));
        assert!(html.contains("<code>code</code>"));
        assert!(html.contains("<li>item</li>"));
    }

    #[test]
    fn unbalanced_or_nested_links_do_not_panic() {
        for source in [
            "[",
            "[a](",
            "[[a](b)](javascript:x)",
            "![[a](javascript:x)](y)",
            "](",
        ] {
            let _ = to_html(source);
        }
    }
}
