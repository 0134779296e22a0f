//! `wujie ui`: the web UI. On the embedded default it serves the profile's database on
//! loopback until stopped; with a remote server it only hands out a login link to that
//! server's UI. Either way it prints a one-time login link (never the token) and opens it in a
//! browser when there is a display.

use std::io::Write;
use std::process::Stdio;

use anyhow::{Context as _, Result};
use wujie_client::{Client, Token};
use wujie_localrun::connection::{local_token, open_store};
use wujie_server::ServerConfig;
use wujie_store::StoreOptions;

use super::stop_signals::StopSignals;
use crate::cli::UiArgs;
use crate::context::{Context, env_var};

pub async fn run(ctx: &Context, args: UiArgs) -> Result<()> {
    let remote = ctx.server_flag.is_some() || ctx.profile.load_config()?.server.is_some();
    if remote {
        let conn = ctx.connect().await?;
        let shown = show_login(ctx, &conn.client, &conn.url, &args).await;
        conn.close().await;
        return shown;
    }
    let config = ServerConfig {
        prices: ctx.prices()?,
        ..ServerConfig::default()
    };
    let store = open_store(&ctx.profile, StoreOptions::EMBEDDED).await?;
    let token = local_token(&ctx.profile, &store).await?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    if !addr.ip().is_loopback() {
        wujie_process::stderr_line!(
            "wujie: warning: the UI listens on {addr}, reachable from other machines; pages still need a login"
        );
    }
    let url = format!("http://{addr}");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(wujie_server::serve(listener, store, config, async move {
        let _ = stopped.await;
    }));
    let client = Client::new(&url, Token::new(token)).context("the UI's own client")?;
    // Listening before the address is printed: whoever read it may stop the UI at once.
    let stop_signals = StopSignals::listen()?;
    let shown = show_login(ctx, &client, &url, &args).await;
    if shown.is_ok() {
        if !ctx.json() {
            wujie_process::stderr_line!("Serving until Ctrl+C.");
        }
        stop_signals.wait().await;
    }
    let _ = stop.send(());
    server
        .await
        .context("the UI server stopped unexpectedly")?
        .context("serving the UI")?;
    shown
}

/// Prints the UI's address and a fresh one-time login link; opens the link in a browser when
/// there is a display.
async fn show_login(ctx: &Context, client: &Client, url: &str, args: &UiArgs) -> Result<()> {
    let login = client
        .create_browser_login()
        .await
        .context("asking the server for a login link")?;
    let login_url = format!("{url}{}", login.path);
    // Whoever started us may stop reading stdout after these lines (scripts, tests): a closed
    // stdout must not stop the UI.
    let mut out = std::io::stdout();
    let _ = if ctx.json() {
        writeln!(
            out,
            "{}",
            serde_json::json!({
                "url": url,
                "login_url": login_url,
                "expires_in_seconds": login.expires_in_seconds,
            })
        )
    } else {
        writeln!(out, "Wujie UI: {url}/").and_then(|()| {
            writeln!(
                out,
                "Log in with this link (it works once, for {} minutes): {login_url}",
                login.expires_in_seconds / 60
            )
        })
    };
    let _ = out.flush();
    if !args.no_browser {
        open_browser(&login_url);
    }
    Ok(())
}

/// Starts `xdg-open` when there is a display to show a browser on; without one, or without
/// `xdg-open`, the printed link is all there is, and that is no error.
fn open_browser(link: &str) {
    if env_var("DISPLAY").is_none() && env_var("WAYLAND_DISPLAY").is_none() {
        return;
    }
    let child = tokio::process::Command::new("xdg-open")
        .arg(link)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    match child {
        // Reaped in the background: xdg-open returns once the browser was handed the link.
        Ok(mut child) => {
            tokio::spawn(async move {
                let _ = child.wait().await;
            });
        }
        Err(e) => wujie_process::stderr_line!(
            "wujie: could not start a browser ({e}); open the link above"
        ),
    }
}
