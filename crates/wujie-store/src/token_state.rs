//! Whether a token is still good, by its id: a browser session remembers the id of the token
//! that logged it in (never the secret), and ends when that token is revoked.

use crate::{Store, StoreError};

impl Store {
    /// True while `token_id` is a user token that has not been revoked and has not expired.
    pub async fn user_token_active(&self, token_id: &str) -> Result<bool, StoreError> {
        let found: Option<(i64,)> = sqlx::query_as(
            "SELECT CAST(1 AS BIGINT) FROM tokens WHERE id = $1 AND kind = 'user' AND revoked = 0 \
             AND (expires_at IS NULL OR expires_at > $2)",
        )
        .bind(token_id)
        .bind(crate::time::now())
        .fetch_optional(self.pool())
        .await?;
        Ok(found.is_some())
    }
}
