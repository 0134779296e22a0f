use std::path::PathBuf;
use std::time::Duration;

use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{Row, SqlitePool};
use tempfile::TempDir;
use wujie_client::{Client, ClientError, Token};
use wujie_pgtest::Cluster;
use wujie_protocol::api::{
    CreateDiscussion, CreateIssue, CreateRun, CreatedDiscussion, CreatedRun, IngestItem,
    IssueDetail,
};
use wujie_protocol::event::{Event, Message, MessageKind, Usage};
use wujie_server::{EmbeddedServer, ServerConfig};
use wujie_store::{Database, Store, StoreOptions};

/// The database a harness's server runs on: the backend the suite runs on (see
/// `wujie_pgtest::postgres_requested`).
pub enum Backing {
    Sqlite(PathBuf),
    Postgres {
        cluster: &'static Cluster,
        name: String,
    },
}

pub struct Harness {
    /// Keeps the temp dir (and the database in it) alive for the test.
    _dir: TempDir,
    pub backing: Backing,
    pub store: Store,
    pub server: Option<EmbeddedServer>,
    pub admin_token: String,
    pub admin: Client,
}

impl Harness {
    pub async fn start() -> Harness {
        Harness::with_config(ServerConfig::default()).await
    }

    pub async fn with_config(config: ServerConfig) -> Harness {
        Harness::with_options(config, StoreOptions::SERVER).await
    }

    pub async fn with_options(config: ServerConfig, options: StoreOptions) -> Harness {
        let dir = tempfile::tempdir().expect("temp dir");
        let (backing, database) = if wujie_pgtest::postgres_requested() {
            let cluster = wujie_pgtest::require_cluster()
                .expect("WUJIE_TEST_DATABASE=postgres asks for PostgreSQL, which is not installed");
            let url = cluster.create_database();
            let name = wujie_pgtest::database_name(&url).to_owned();
            (Backing::Postgres { cluster, name }, Database::Postgres(url))
        } else {
            let path = dir.path().join("data").join("wujie.db");
            (Backing::Sqlite(path.clone()), Database::Sqlite(path))
        };
        let store = Store::open_database(&database, options)
            .await
            .expect("open store");
        let admin_token = store
            .create_user_token("test admin")
            .await
            .expect("token")
            .token;
        let server = EmbeddedServer::start(store.clone(), config)
            .await
            .expect("start server");
        let admin = Client::new(&server.url(), Token::new(admin_token.clone())).expect("client");
        Harness {
            _dir: dir,
            backing,
            store,
            server: Some(server),
            admin_token,
            admin,
        }
    }

    pub fn url(&self) -> String {
        self.server.as_ref().expect("server running").url()
    }

    pub fn client(&self, token: &str) -> Client {
        Client::new(&self.url(), Token::new(token)).expect("client")
    }

    pub async fn issue(&self, title: &str) -> IssueDetail {
        self.admin
            .create_issue(&CreateIssue {
                title: title.into(),
                description: format!("{title} description"),
                discussion_id: None,
            })
            .await
            .expect("create issue")
    }

    /// An open discussion of `provider` in `/tmp/p`, with its token.
    pub async fn discussion(&self, provider: &str) -> CreatedDiscussion {
        self.admin
            .create_discussion(&CreateDiscussion {
                provider: provider.into(),
                cwd: "/tmp/p".into(),
            })
            .await
            .expect("create discussion")
    }

    pub async fn run_on(&self, key: &str) -> CreatedRun {
        self.admin
            .create_run(
                key,
                &CreateRun {
                    provider: "fake-provider".into(),
                    cwd: "/tmp/project".into(),
                    job: None,
                },
            )
            .await
            .expect("create run")
    }

    /// The first column of every row `sql` selects, as text, read over a second, independent
    /// connection to the database.
    pub async fn strings(&self, sql: &str) -> Vec<String> {
        match &self.backing {
            Backing::Sqlite(path) => {
                let pool = SqlitePool::connect_with(SqliteConnectOptions::new().filename(path))
                    .await
                    .expect("open db");
                let rows = sqlx::query(sql).fetch_all(&pool).await.expect("query");
                pool.close().await;
                rows.iter()
                    .map(|row| {
                        row.try_get::<String, _>(0)
                            .or_else(|_| row.try_get::<i64, _>(0).map(|n| n.to_string()))
                            .expect("a text or integer column")
                    })
                    .collect()
            }
            Backing::Postgres { cluster, name } => {
                cluster.psql(name, sql).lines().map(str::to_owned).collect()
            }
        }
    }

    pub async fn count(&self, sql: &str) -> i64 {
        let rows = self.strings(sql).await;
        assert_eq!(rows.len(), 1, "{sql} returns one row");
        rows[0].parse().expect("a count")
    }

    /// Every byte the database keeps on disk (after the store is closed, or on PostgreSQL a
    /// checkpoint), for checks that something is never stored in plain text.
    pub async fn database_bytes(&self) -> Vec<u8> {
        let dir = match &self.backing {
            Backing::Sqlite(path) => path.parent().expect("dir").to_path_buf(),
            Backing::Postgres { cluster, name } => {
                cluster.psql(name, "CHECKPOINT");
                cluster.data_dir()
            }
        };
        let mut bytes = Vec::new();
        let mut pending = vec![dir];
        while let Some(dir) = pending.pop() {
            for entry in std::fs::read_dir(&dir).expect("read dir") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    pending.push(path);
                } else if let Ok(content) = std::fs::read(&path) {
                    bytes.extend(content);
                }
            }
        }
        bytes
    }

    pub async fn stop(mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
    }
}

pub fn message(kind: MessageKind, key: &str, content: &str) -> IngestItem {
    IngestItem {
        source: "fake".into(),
        source_key: key.into(),
        event: Event::Message(Message {
            kind,
            content: Some(content.into()),
            tool: None,
            input: None,
            output: None,
            source: "fake".into(),
            source_key: key.into(),
        }),
    }
}

pub fn usage(key: &str, input_tokens: u64) -> IngestItem {
    IngestItem {
        source: "fake".into(),
        source_key: key.into(),
        event: Event::Usage(Usage {
            provider: "fake".into(),
            model: "demo".into(),
            input_tokens,
            output_tokens: 7,
            cache_read_tokens: 1,
            cache_write_tokens: 0,
        }),
    }
}

pub fn status_of(e: &ClientError) -> u16 {
    e.status().map(|s| s.as_u16()).unwrap_or(0)
}

/// Polls `check` until it returns Some, failing after a generous deadline.
pub async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
