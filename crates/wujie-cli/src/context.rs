//! What every command needs: the profile, the output format, and a way to reach a server.

use anyhow::{Context as _, Result};
use wujie_builtins::BUILTINS;
use wujie_localrun::connection::{Connection, LOCAL_SERVER};
use wujie_localrun::profile::{Profile, Roots};
use wujie_localrun::registry::ProviderRegistry;
use wujie_protocol::pricing::PriceTable;
use wujie_store::outbox::Outbox;

use crate::cli::{Global, Output};

pub struct Context {
    pub profile: Profile,
    pub output: Output,
    pub server_flag: Option<String>,
}

pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Context {
    pub fn new(global: &Global) -> Result<Context> {
        let roots = Roots::from_env()?;
        let profile = roots.profile(&global.profile)?;
        Ok(Context {
            profile,
            output: global.output,
            server_flag: global.server.clone(),
        })
    }

    pub fn json(&self) -> bool {
        self.output == Output::Json
    }

    pub async fn connect(&self) -> Result<Connection> {
        let conn = Connection::open(&self.profile, self.server_flag.as_deref(), &env_var).await?;
        if conn.server_label != LOCAL_SERVER {
            crate::user_error::talking_to(&conn.server_label);
        }
        Ok(conn)
    }

    pub async fn outbox(&self) -> Result<Outbox> {
        let path = self.profile.outbox_path();
        Outbox::open(&path)
            .await
            .with_context(|| format!("opening the outbox {}", path.display()))
    }

    pub fn registry(&self) -> Result<ProviderRegistry<'_>> {
        let config = self.profile.load_config()?;
        Ok(ProviderRegistry::new(
            &self.profile,
            config,
            BUILTINS,
            &env_var,
        ))
    }

    /// The price table: the documented defaults with the profile config's `prices` over them.
    pub fn prices(&self) -> Result<PriceTable> {
        let config = self.profile.load_config()?;
        let Some(prices) = config.other.get("prices") else {
            return Ok(PriceTable::defaults());
        };
        let overrides: PriceTable = serde_json::from_value(prices.clone()).with_context(|| {
            format!(
                "the `prices` in {} are not a price table; write each as \"provider/model\" \
                 (or \"model\"): {{\"input\": N, \"output\": N, \"cache_read\": N, \
                 \"cache_write\": N}} in US dollars per million tokens",
                self.profile.config_path().display()
            )
        })?;
        Ok(PriceTable::with_overrides(overrides))
    }
}
