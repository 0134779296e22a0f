//! `wujie server`: serve the profile's database standalone.

use std::io::Write;
use std::time::Duration;

use anyhow::{Context as _, Result};
use wujie_localrun::connection::{local_token, open_database, profile_database};
use wujie_localrun::own_server::OwnServerRecord;
use wujie_server::ServerConfig;
use wujie_store::{Database, StoreOptions};

use crate::cli::ServerArgs;
use crate::context::Context;

pub async fn run(ctx: &Context, args: ServerArgs) -> Result<()> {
    let database = match &args.database {
        Some(text) => Database::parse(text).context("--database")?,
        None => profile_database(&ctx.profile)?,
    };
    // A file named on the command line goes where it was asked for or nowhere: a typo in its
    // directory must not start an empty database in a new directory.
    if let (Some(_), Database::Sqlite(path)) = (&args.database, &database) {
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => std::path::Path::new("."),
        };
        anyhow::ensure!(
            dir.is_dir(),
            "--database: the directory {} does not exist; create it first (mkdir -p {}) or \
             name a file in an existing directory",
            dir.display(),
            dir.display()
        );
    }
    let mut options = StoreOptions::SERVER;
    if let Some(n) = args.database_max_connections {
        anyhow::ensure!(
            matches!(database, Database::Postgres(_)),
            "--database-max-connections applies to a PostgreSQL database; {} is a SQLite file",
            database.describe()
        );
        options.pg_connections = n;
    }
    let max_connections = args.max_connections as usize;
    let max_connections_per_peer = match args.max_connections_per_address {
        Some(n) => {
            let n = n as usize;
            anyhow::ensure!(
                n <= max_connections,
                "--max-connections-per-address {n} is more than --max-connections \
                 {max_connections}; one address can never hold more connections than the server \
                 serves"
            );
            n
        }
        None => (max_connections / 4).max(1),
    };
    let store = open_database(&database, options).await?;
    // Mint the profile's token if needed, so the CLI on this profile can talk to this server
    // without any step.
    local_token(&ctx.profile, &store).await?;
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    // `wujie --server URL` on this profile, naming this server, needs no login while it runs.
    let _own = OwnServerRecord::write(&ctx.profile, &format!("http://{addr}"))?;
    if !addr.ip().is_loopback() {
        wujie_process::stderr_line!(
            "wujie: warning: listening on {addr}, reachable from other machines; every request still needs a token"
        );
    }
    // Whoever started us may stop reading stdout after the address line (scripts, tests): a
    // closed stdout must not stop the server.
    let url = format!("http://{addr}");
    let database = database.describe();
    let mut out = std::io::stdout();
    let _ = if ctx.json() {
        // One line, so a script can read the document as soon as it is printed.
        writeln!(
            out,
            "{}",
            serde_json::json!({"url": url, "database": database})
        )
    } else {
        writeln!(out, "Wujie server listening on {url}")
            .and_then(|()| writeln!(out, "Database: {database}"))
    };
    let _ = out.flush();
    let config = ServerConfig {
        stale_after: Duration::from_secs(args.stale_after),
        max_event_bytes: args.max_event_bytes,
        max_connections,
        max_connections_per_peer,
        max_feeds_per_token: args.max_feeds_per_token as usize,
        prices: ctx.prices()?,
        ..ServerConfig::default()
    };
    let shutdown = async {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {},
            _ = term.recv() => {},
        }
    };
    wujie_server::serve(listener, store, config, shutdown)
        .await
        .context("serving")?;
    Ok(())
}
