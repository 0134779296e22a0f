//! `wujie token create|list|revoke` and `wujie login`.

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use wujie_client::{Client, Token};
use wujie_localrun::profile::ServerSetting;
use wujie_protocol::api::{CreateToken, TokenInfo, TokenStatus};

use crate::cli::{LoginArgs, TokenCommand};
use crate::context::Context;
use crate::output::{inline, outln, print_json};

pub async fn token(ctx: &Context, cmd: TokenCommand) -> Result<()> {
    let conn = ctx.connect().await?;
    let done = match cmd {
        TokenCommand::Create { name, expires } => create(ctx, &conn.client, name, expires).await,
        TokenCommand::List => list(ctx, &conn.client).await,
        TokenCommand::Revoke { token } => revoke(ctx, &conn.client, &token).await,
    };
    conn.close().await;
    done
}

async fn create(
    ctx: &Context,
    client: &Client,
    name: String,
    expires: Option<Duration>,
) -> Result<()> {
    let created = client
        .create_token(&CreateToken {
            name,
            expires_in_secs: expires.map(|d| d.as_secs()),
        })
        .await?;
    if ctx.json() {
        print_json(&created)?;
    } else {
        outln!("{}", created.token);
        if let Some(at) = &created.expires_at {
            wujie_process::stderr_line!("It expires at {at}.");
        }
        wujie_process::stderr_line!(
            "This token is shown once. On the other machine: wujie login --server URL --token TOKEN"
        );
    }
    Ok(())
}

async fn list(ctx: &Context, client: &Client) -> Result<()> {
    let tokens = client.list_tokens().await?;
    if ctx.json() {
        return print_json(&tokens);
    }
    outln!(
        "{:<36}  {:<8}  {:<20}  {:<20}  {:<20}  NAME",
        "ID",
        "STATUS",
        "CREATED",
        "LAST USED",
        "EXPIRES"
    );
    for t in &tokens {
        let status = match t.status {
            TokenStatus::Active => "active",
            TokenStatus::Expired => "expired",
            TokenStatus::Revoked => "revoked",
        };
        outln!(
            "{:<36}  {:<8}  {:<20}  {:<20}  {:<20}  {}",
            t.id,
            status,
            minute(&t.created_at),
            t.last_used_at.as_deref().map_or("never".into(), minute),
            t.expires_at.as_deref().map_or("never".into(), minute),
            inline(&t.name)
        );
    }
    Ok(())
}

/// `2026-12-01T13:45:12.123456Z` as `2026-12-01 13:45 UTC`.
fn minute(at: &str) -> String {
    match (at.get(..10), at.get(11..16)) {
        (Some(day), Some(time)) => format!("{day} {time} UTC"),
        _ => at.to_owned(),
    }
}

async fn revoke(ctx: &Context, client: &Client, which: &str) -> Result<()> {
    let tokens = client.list_tokens().await?;
    let target = pick(&tokens, which)?;
    client.revoke_token(&target.id).await?;
    if ctx.json() {
        print_json(&serde_json::json!({"revoked": target.id, "name": target.name}))?;
    } else {
        outln!("Revoked token {} ({}).", target.id, inline(&target.name));
    }
    Ok(())
}

/// The token `which` names: its id, or a name no other token has.
fn pick<'a>(tokens: &'a [TokenInfo], which: &str) -> Result<&'a TokenInfo> {
    if let Some(t) = tokens.iter().find(|t| t.id == which) {
        return Ok(t);
    }
    let named: Vec<&TokenInfo> = tokens.iter().filter(|t| t.name == which).collect();
    match named.as_slice() {
        [one] => Ok(one),
        [] => bail!("no token has the id or name {which:?}; `wujie token list` shows them"),
        several => bail!(
            "{} tokens are named {which:?}; revoke one by its id ({})",
            several.len(),
            several
                .iter()
                .map(|t| t.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// `--expires`: a positive number and a unit, s, m, h, d or w.
pub fn parse_expiry(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let unit_secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 60 * 60,
        "d" => 24 * 60 * 60,
        "w" => 7 * 24 * 60 * 60,
        _ => {
            return Err(format!(
                "{text:?} is not a duration; write e.g. 30d, 12h, 90m or 2w"
            ));
        }
    };
    let secs = number
        .parse::<u64>()
        .ok()
        .filter(|n| *n > 0)
        .and_then(|n| n.checked_mul(unit_secs))
        .ok_or_else(|| {
            format!("{text:?}: give a positive whole number before the unit, e.g. 30d")
        })?;
    Ok(Duration::from_secs(secs))
}

pub async fn login(ctx: &Context, args: LoginArgs) -> Result<()> {
    let Some(url) = ctx.server_flag.as_deref() else {
        bail!("name the server: wujie login --server URL --token TOKEN");
    };
    let url = url.trim_end_matches('/').to_owned();
    let client = Client::new(&url, Token::new(args.token.clone()))?;
    crate::user_error::talking_to(&url);
    let workspace = match client.workspace().await {
        Err(e) if e.status() == Some(wujie_client::StatusCode::UNAUTHORIZED) => bail!(
            "the server at {url} did not accept this token; check it, or mint a new one with \
             `wujie token create` where you are signed in to that server"
        ),
        answer => answer.with_context(|| format!("checking the token against {url}"))?,
    };
    let mut config = ctx.profile.load_config()?;
    config.server = Some(ServerSetting { url: url.clone() });
    let mut creds = ctx.profile.load_credentials()?;
    creds.remote_token = Some(args.token);
    ctx.profile.save_credentials(&creds)?;
    ctx.profile.save_config(&config)?;
    if ctx.json() {
        print_json(&serde_json::json!({"server": url, "workspace": workspace}))?;
    } else {
        outln!(
            "Logged in to {} (workspace {}); profile {:?} now uses it.",
            inline(&url),
            inline(&workspace.name),
            ctx.profile.name
        );
    }
    Ok(())
}
