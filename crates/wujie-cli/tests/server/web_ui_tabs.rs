//! Many tabs in one browser: a browser opens at most six HTTP/1.1 connections to a host, so
//! a live feed per tab would leave the seventh tab, and even the issue list, waiting for ever.
//! Twenty issue pages open at once all stay live, and the list still loads.

use wujie_testkit::Env;

use super::web_ui_browser::logged_in;

const TABS: usize = 20;

#[test]
fn twenty_open_issue_pages_all_stay_live_and_the_list_still_loads() {
    let Some(chromium) = wujie_require::require("chromium") else {
        return;
    };
    let env = Env::new();
    let keys: Vec<String> = (1..=TABS)
        .map(|n| env.create_issue(&format!("Tab {n}")))
        .collect();
    let (ui, mut b) = logged_in(&env, &chromium);

    let mut tabs = Vec::new();
    for key in &keys {
        let tab = b.open_tab();
        b.goto(&format!("{}/issues/{key}", ui.url));
        b.wait_for(
            &format!("{key}'s page to be live"),
            "document.getElementById('issue').dataset.live === 'on'",
        );
        tabs.push(tab);
    }

    b.open_tab();
    b.goto(&ui.url);
    b.wait_for(
        "the issue list, with twenty tabs open",
        &format!(
            "document.body.innerText.includes('Tab 1') && document.body.innerText.includes('Tab {TABS}')"
        ),
    );

    for key in &keys {
        env.ok(&["issue", "comment", key, &format!("a comment on {key}")]);
    }
    for (tab, key) in tabs.into_iter().zip(&keys) {
        b.use_tab(tab);
        assert_eq!(b.path(), format!("/issues/{key}"));
        b.wait_for(
            &format!("the comment on {key}, live in its tab"),
            &format!(
                "document.getElementById('timeline').innerText.includes('a comment on {key}')"
            ),
        );
    }
}
