//! The web UI's browser sessions: a random id in the browser's cookie, of which only the
//! SHA-256 is stored, speaking for the user token that logged the browser in. Kept in the
//! database so that they outlive a restart of the server and hold on every replica.

use std::time::Duration;

use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::{Store, StoreError, time};

/// Most sessions kept at once: whoever holds a token can open sessions, and each is a row.
/// Past this the sessions closest to their end go first.
pub const MAX_BROWSER_SESSIONS: i64 = 4096;

fn hash(session_id: &str) -> String {
    hex::encode(Sha256::digest(session_id.as_bytes()))
}

impl Store {
    /// Opens a session for the user token `token_id`, valid for `ttl` (or until the token is
    /// revoked or expires); returns its id, which only the browser keeps.
    pub async fn open_browser_session(
        &self,
        token_id: &str,
        ttl: Duration,
    ) -> Result<String, StoreError> {
        let mut bytes = [0u8; 32];
        rand::rng().fill_bytes(&mut bytes);
        let session_id = hex::encode(bytes);
        // Single statements, outside the activity lock: sessions are not part of any issue's
        // history, and nothing follows them.
        sqlx::query("DELETE FROM browser_sessions WHERE expires_at <= $1")
            .bind(time::now())
            .execute(self.pool())
            .await?;
        // Room for this one: of the others, those nearest to their end go past the bound.
        sqlx::query(
            "DELETE FROM browser_sessions WHERE expires_at < \
             (SELECT expires_at FROM browser_sessions ORDER BY expires_at DESC LIMIT 1 OFFSET $1)",
        )
        .bind(MAX_BROWSER_SESSIONS - 2)
        .execute(self.pool())
        .await?;
        sqlx::query(
            "INSERT INTO browser_sessions (hash, token_id, created_at, expires_at) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(hash(&session_id))
        .bind(token_id)
        .bind(time::now())
        .bind(time::after_now(ttl))
        .execute(self.pool())
        .await?;
        Ok(session_id)
    }

    /// The user token a session speaks for; `None` once the session has ended: closed,
    /// expired, or its token revoked or expired.
    pub async fn browser_session_token(
        &self,
        session_id: &str,
    ) -> Result<Option<String>, StoreError> {
        let now = time::now();
        let found: Option<(String,)> = sqlx::query_as(
            "SELECT s.token_id FROM browser_sessions s JOIN tokens t ON t.id = s.token_id \
             WHERE s.hash = $1 AND s.expires_at > $2 AND t.kind = 'user' AND t.revoked = 0 \
               AND (t.expires_at IS NULL OR t.expires_at > $2)",
        )
        .bind(hash(session_id))
        .bind(&now)
        .fetch_optional(self.pool())
        .await?;
        Ok(found.map(|(token_id,)| token_id))
    }

    /// Ends a session (logging out); nothing happens for one that already ended.
    pub async fn close_browser_session(&self, session_id: &str) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM browser_sessions WHERE hash = $1")
            .bind(hash(session_id))
            .execute(self.pool())
            .await?;
        Ok(())
    }
}
