//! `wujie token create` and `wujie login`.

use anyhow::{Context as _, Result, bail};
use wujie_client::{Client, Token};
use wujie_localrun::profile::ServerSetting;
use wujie_protocol::api::CreateToken;

use crate::cli::{LoginArgs, TokenCommand};
use crate::context::Context;
use crate::output::{inline, outln, print_json};

pub async fn token(ctx: &Context, cmd: TokenCommand) -> Result<()> {
    let TokenCommand::Create { name } = cmd;
    let conn = ctx.connect().await?;
    let created = conn.client.create_token(&CreateToken { name }).await;
    conn.close().await;
    let created = created?;
    if ctx.json() {
        print_json(&created)?;
    } else {
        outln!("{}", created.token);
        eprintln!(
            "This token is shown once. On the other machine: wujie login --server URL --token TOKEN"
        );
    }
    Ok(())
}

pub async fn login(ctx: &Context, args: LoginArgs) -> Result<()> {
    let Some(url) = ctx.server_flag.as_deref() else {
        bail!("name the server: wujie login --server URL --token TOKEN");
    };
    let url = url.trim_end_matches('/').to_owned();
    let client = Client::new(&url, Token::new(args.token.clone()))?;
    let workspace = client
        .workspace()
        .await
        .with_context(|| format!("checking the token against {url}"))?;
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
