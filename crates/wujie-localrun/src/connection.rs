//! Which server a command talks to, and with which token.
//!
//! In order: `--server URL` (token from `WUJIE_TOKEN` or the profile's login), the run context
//! (`WUJIE_SERVER_URLS`, else `WUJIE_SERVER_URL`, + `WUJIE_TOKEN`, so an agent can call
//! `wujie issue show $WUJIE_ISSUE_ID`),
//! the profile's configured server, and otherwise the embedded default: an in-process server on
//! 127.0.0.1 over the profile's own SQLite database, with the profile's local token (minted on
//! first use, shared with `wujie server` on the same profile).

use wujie_client::{Client, Token};
use wujie_server::{EmbeddedServer, ServerConfig};
use wujie_store::{Database, Store, StoreError, StoreOptions};

use crate::error::LocalRunError;
use crate::own_server::is_own_server;
use crate::profile::{DatabasePlace, Profile};

/// The outbox names the embedded server this way, since its port changes on every start.
pub const LOCAL_SERVER: &str = "local";

pub struct Connection {
    pub client: Client,
    /// The server's URL (the first replica's, for a list), for links and messages. Adapters
    /// are given the replica in use and the list, from `client` (`session::adapter_env`).
    pub url: String,
    /// `local` for the profile's own database, else the remote URL.
    pub server_label: String,
    embedded: Option<EmbeddedServer>,
}

impl Connection {
    pub async fn open(
        profile: &Profile,
        server_flag: Option<&str>,
        env: &(dyn Fn(&str) -> Option<String> + Sync),
    ) -> Result<Connection, LocalRunError> {
        let creds = profile.load_credentials()?;
        if let Some(url) = server_flag {
            // The profile's own `wujie server` serves the profile's database: its local token
            // works there, with no login.
            let own = is_own_server(profile, url).then(|| creds.local_token.clone());
            let token = env("WUJIE_TOKEN").or(own.flatten()).or(creds.remote_token);
            let Some(token) = token else {
                return Err(no_token(url, true).await);
            };
            return Connection::remote(url, token);
        }
        // Inside an adapter: every replica, the one its run started on first.
        let context = env("WUJIE_SERVER_URLS").or_else(|| env("WUJIE_SERVER_URL"));
        if let (Some(url), Some(token)) = (context, env("WUJIE_TOKEN")) {
            return Connection::remote(&url, token);
        }
        if let Some(server) = profile.load_config()?.server {
            let token = creds
                .remote_token
                .ok_or_else(|| LocalRunError::NoProfileToken {
                    profile: profile.name.clone(),
                    url: server.url.clone(),
                })?;
            return Connection::remote(&server.url, token);
        }
        Connection::embedded(profile).await
    }

    fn remote(url: &str, token: String) -> Result<Connection, LocalRunError> {
        let url = url.trim_end_matches('/').to_owned();
        let client = Client::new(&url, Token::new(token))
            .map_err(LocalRunError::server(format!("cannot use server {url}")))?;
        Ok(Connection {
            url: client.base_url().to_owned(),
            client,
            server_label: url,
            embedded: None,
        })
    }

    /// Start the in-process server over the profile's database.
    pub async fn embedded(profile: &Profile) -> Result<Connection, LocalRunError> {
        let store = open_store(profile, StoreOptions::EMBEDDED).await?;
        let token = local_token(profile, &store).await?;
        let server = EmbeddedServer::start(store, ServerConfig::default())
            .await
            .map_err(LocalRunError::EmbeddedServer)?;
        let url = server.url();
        let client = Client::new(&url, Token::new(token)).map_err(LocalRunError::server(
            "cannot connect to the embedded server",
        ))?;
        Ok(Connection {
            client,
            url,
            server_label: LOCAL_SERVER.to_owned(),
            embedded: Some(server),
        })
    }

    /// A connection for delivering to a server recorded in the outbox.
    pub async fn for_label(profile: &Profile, label: &str) -> Result<Connection, LocalRunError> {
        if label == LOCAL_SERVER {
            return Connection::embedded(profile).await;
        }
        let creds = profile.load_credentials()?;
        let own = is_own_server(profile, label).then(|| creds.local_token.clone());
        let token = std::env::var("WUJIE_TOKEN")
            .ok()
            .or(own.flatten())
            .or(creds.remote_token);
        let Some(token) = token else {
            return Err(no_token(label, false).await);
        };
        Connection::remote(label, token)
    }

    pub async fn close(self) {
        if let Some(server) = self.embedded {
            server.shutdown().await;
        }
    }
}

/// How long [`no_token`] waits for a server's answer to a health check.
const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Why there is no connection to `url` when no token for it is known: nothing listens there (a
/// server that is down, which a login would not fix), or else the missing token. The probe is
/// the server's health, which needs no token, and none is sent: only an empty one.
async fn no_token(url: &str, env_hint: bool) -> LocalRunError {
    let missing = LocalRunError::NoToken {
        server: url.to_owned(),
        env_hint,
    };
    let Ok(probe) = Client::new(url, Token::new(String::new())) else {
        return missing;
    };
    match tokio::time::timeout(PROBE_TIMEOUT, probe.health()).await {
        Ok(Err(e @ wujie_client::ClientError::Network { timeout: false, .. })) => {
            LocalRunError::Server {
                doing: format!("no server answers at {url}"),
                source: e,
            }
        }
        // Something answers (or takes its time): the token is what is missing.
        _ => missing,
    }
}

/// The database of `profile`: `WUJIE_DATABASE_URL` when set, else the `database` of the
/// profile's config, else the profile's SQLite file.
pub fn profile_database(profile: &Profile) -> Result<Database, LocalRunError> {
    let named = match std::env::var("WUJIE_DATABASE_URL") {
        Ok(url) if !url.trim().is_empty() => Some((url, "WUJIE_DATABASE_URL".to_owned())),
        _ => profile
            .load_config()?
            .database
            .map(|url| (url, profile.config_path().display().to_string())),
    };
    match named {
        Some((text, from)) => {
            Database::parse(&text).map_err(|source| LocalRunError::BadDatabaseUrl { from, source })
        }
        None => Ok(Database::Sqlite(embedded_database(profile)?)),
    }
}

/// The profile's SQLite file, moved out of the state directory on the first start that can
/// (said once, on stderr).
fn embedded_database(profile: &Profile) -> Result<std::path::PathBuf, LocalRunError> {
    let place = profile.database_to_open()?;
    if let DatabasePlace::Moved { from, to } = &place {
        wujie_process::stderr_line!(
            "wujie: moved the database from {} to {}: it is data, kept with the rest of {}",
            from.display(),
            to.display(),
            profile.data_dir.display()
        );
    }
    Ok(place.path().to_path_buf())
}

pub async fn open_store(profile: &Profile, options: StoreOptions) -> Result<Store, LocalRunError> {
    open_database(&profile_database(profile)?, options).await
}

pub async fn open_database(
    database: &Database,
    options: StoreOptions,
) -> Result<Store, LocalRunError> {
    Store::open_database(database, options)
        .await
        .map_err(|source| match source {
            // Names the database (without its password) itself.
            StoreError::Connect { .. } => LocalRunError::DatabaseUnreachable(source),
            source => LocalRunError::Database {
                doing: "cannot open the database",
                database: database.describe(),
                source,
            },
        })
}

/// The profile's own user token: reused while the database still knows it, minted otherwise.
pub async fn local_token(profile: &Profile, store: &Store) -> Result<String, LocalRunError> {
    let mut creds = profile.load_credentials()?;
    if let Some(token) = &creds.local_token
        && store.verify_token(token).await.ok().flatten().is_some()
    {
        return Ok(token.clone());
    }
    let minted = store
        .create_user_token(&format!("profile {}", profile.name))
        .await
        .map_err(|source| LocalRunError::Database {
            doing: "cannot mint the profile's local token",
            database: profile_database(profile)
                .map(|d| d.describe())
                .unwrap_or_else(|_| profile.database_path().display().to_string()),
            source,
        })?
        .token;
    creds.local_token = Some(minted.clone());
    profile.save_credentials(&creds)?;
    Ok(minted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::Credentials;

    /// A record naming a process that is alive proves nothing about the port: the pid may have
    /// been reused, or the server may be a zombie whose port another program took. (The record
    /// an earlier version wrote, which named a pid.)
    /// A server that is down is not a missing login: the user is told nothing answers.
    #[tokio::test]
    async fn a_server_that_is_down_is_unreachable_not_a_missing_token() {
        let home = tempfile::tempdir().unwrap();
        let profile = Profile::under_home(home.path());
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);

        let opened = Connection::open(&profile, Some(&url), &|_| None).await;
        match opened {
            Err(LocalRunError::Server { doing, source }) => {
                assert_eq!(doing, format!("no server answers at {url}"));
                assert!(source.is_retryable(), "{source:?}");
            }
            Err(other) => panic!("{other}"),
            Ok(_) => panic!("connected to {url}"),
        }
    }

    #[tokio::test]
    async fn a_live_pid_in_a_record_does_not_make_a_port_the_profiles_own_server() {
        let home = tempfile::tempdir().unwrap();
        let profile = Profile::under_home(home.path());
        let credentials = Credentials {
            local_token: Some("wjt_profiles_own_token".to_owned()),
            remote_token: None,
        };
        profile.save_credentials(&credentials).unwrap();
        let stranger = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", stranger.local_addr().unwrap());
        let record = serde_json::json!({"url": url, "pid": std::process::id()});
        std::fs::create_dir_all(&profile.state_dir).unwrap();
        std::fs::write(profile.state_dir.join("server.json"), record.to_string()).unwrap();

        let opened = Connection::open(&profile, Some(&url), &|_| None).await;
        assert!(
            matches!(opened, Err(LocalRunError::NoToken { .. })),
            "the profile's token would go to whoever listens on {url}"
        );
    }
}
