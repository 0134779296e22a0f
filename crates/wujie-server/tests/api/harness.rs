use std::path::PathBuf;
use std::time::Duration;

use sqlx::SqlitePool;
use sqlx::sqlite::SqliteConnectOptions;
use tempfile::TempDir;
use wujie_client::{Client, ClientError, Token};
use wujie_protocol::api::{CreateIssue, CreateRun, CreatedRun, IngestItem, IssueDetail};
use wujie_protocol::event::{Event, Message, MessageKind, Usage};
use wujie_server::{EmbeddedServer, ServerConfig};
use wujie_store::Store;

pub struct Harness {
    /// Keeps the temp dir (and the database in it) alive for the test.
    _dir: TempDir,
    pub db_path: PathBuf,
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
        let dir = tempfile::tempdir().expect("temp dir");
        let db_path = dir.path().join("data").join("wujie.db");
        let store = Store::open(&db_path).await.expect("open store");
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
            db_path,
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

    pub async fn run_on(&self, key: &str) -> CreatedRun {
        self.admin
            .create_run(
                key,
                &CreateRun {
                    provider: "fake-provider".into(),
                    cwd: "/tmp/project".into(),
                },
            )
            .await
            .expect("create run")
    }

    /// A second, independent connection to the database file, for checking rows directly.
    pub async fn db(&self) -> SqlitePool {
        SqlitePool::connect_with(SqliteConnectOptions::new().filename(&self.db_path))
            .await
            .expect("open db")
    }

    pub async fn count(&self, sql: &str) -> i64 {
        let pool = self.db().await;
        let (n,): (i64,) = sqlx::query_as(sql).fetch_one(&pool).await.expect("count");
        pool.close().await;
        n
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
