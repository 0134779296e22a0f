//! Whether a token is still good, by its id: an open live feed remembers the id of the token
//! that opened it (never the secret), and ends when that token is revoked or expires.

use crate::{Store, StoreError};

impl Store {
    /// True while `token_id` has not been revoked and has not expired.
    pub async fn token_active(&self, token_id: &str) -> Result<bool, StoreError> {
        let found: Option<(i64,)> = sqlx::query_as(
            "SELECT CAST(1 AS BIGINT) FROM tokens WHERE id = $1 AND revoked = 0 \
             AND (expires_at IS NULL OR expires_at > $2)",
        )
        .bind(token_id)
        .bind(crate::time::now())
        .fetch_optional(self.pool())
        .await?;
        Ok(found.is_some())
    }
}
