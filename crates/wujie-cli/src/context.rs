//! What every command needs: the profile, the output format, and a way to reach a server.

use anyhow::{Context as _, Result};
use wujie_builtins::BUILTINS;
use wujie_localrun::connection::{Connection, LOCAL_SERVER};
use wujie_localrun::profile::{Profile, Roots};
use wujie_localrun::registry::ProviderRegistry;
use wujie_protocol::pricing::PriceTable;
use wujie_store::outbox::Outbox;

use crate::cli::{Global, Output};

/// What one `prices` entry looks like, for the error about one that does not.
const PRICE_SHAPE: &str = "{\"input\": N, \"output\": N, \"cache_read\": N, \"cache_write\": N} \
     (US dollars per million tokens; the cache prices may be left out)";

/// Says once per command which keys of the profile's config nothing reads. A config that
/// cannot be read is left to the command that needs it, which says why.
fn warn_unknown_config_keys(profile: &Profile) {
    let Ok(config) = profile.load_config() else {
        return;
    };
    let unknown = config.unknown_keys();
    if unknown.is_empty() {
        return;
    }
    let names: Vec<String> = unknown.iter().map(|key| format!("{key:?}")).collect();
    wujie_process::stderr_line!(
        "wujie: warning: {} has settings wujie does not know, which do nothing: {} (the known ones are server, database, localrun_providers, prices, worktrees_dir and notify_command)",
        profile.config_path().display(),
        crate::output::inline(&names.join(", "))
    );
}

pub struct Context {
    pub profile: Profile,
    pub output: Output,
    pub server_flag: Option<String>,
}

pub fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Context {
    /// With `must_exist`, a profile that was never created is refused (see
    /// `Roots::existing_profile`).
    pub fn new(global: &Global, must_exist: bool) -> Result<Context> {
        let roots = Roots::from_env()?;
        let profile = if must_exist {
            roots.existing_profile(&global.profile)?
        } else {
            roots.profile(&global.profile)?
        };
        warn_unknown_config_keys(&profile);
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
    /// A bad entry is named by its key, with the shape it should have.
    pub fn prices(&self) -> Result<PriceTable> {
        let config = self.profile.load_config()?;
        let Some(prices) = config.other.get("prices") else {
            return Ok(PriceTable::defaults());
        };
        let path = self.profile.config_path();
        let Some(entries) = prices.as_object() else {
            anyhow::bail!(
                "`prices` in {} is not an object; write it as {{\"provider/model\": {PRICE_SHAPE}, …}}",
                path.display()
            );
        };
        let mut overrides = PriceTable::default();
        for (key, entry) in entries {
            let price = serde_json::from_value(entry.clone()).with_context(|| {
                format!(
                    "the `prices` entry {key:?} in {} is not a price; write it as {key:?}: \
                     {PRICE_SHAPE}",
                    path.display()
                )
            })?;
            overrides.0.insert(key.clone(), price);
        }
        Ok(PriceTable::with_overrides(overrides))
    }
}
