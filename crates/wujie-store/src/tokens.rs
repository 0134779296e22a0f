//! Bearer tokens: minted as `wjt_` + 64 hex digits, stored only as their SHA-256.

use std::time::Duration;

use rand::RngCore;
use sha2::{Digest, Sha256};
use sqlx::AnyConnection;
use wujie_protocol::api::{CreatedToken, TOKEN_PREFIX, TokenInfo, TokenStatus};

use crate::text::{Text, stored};
use crate::{Store, StoreError, new_id, time};

/// Who a verified token speaks for, and so what it may touch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    /// May do everything; the reporter delivers and finishes with a user token.
    User { token_id: String },
    /// The adapter's token of a running run: may read the run's issue, nothing more.
    Run {
        token_id: String,
        run_id: String,
        issue_id: String,
    },
    /// The adapter's token of an open discussion: may read that discussion, nothing more.
    Discussion {
        token_id: String,
        discussion_id: String,
    },
}

#[derive(Debug, Clone, Copy)]
pub(crate) enum TokenKind {
    User,
    Run,
    Discussion,
}

impl TokenKind {
    fn as_str(self) -> &'static str {
        match self {
            TokenKind::User => "user",
            TokenKind::Run => "run",
            TokenKind::Discussion => "discussion",
        }
    }
}

/// How stale a token's `last_used_at` may get before a request refreshes it: often enough to
/// say when a token was last used, rarely enough that requests do not each write.
const LAST_USED_RESOLUTION: Duration = Duration::from_secs(60);

/// A fresh secret: `wjt_` followed by the hex of 32 random bytes.
pub fn mint_token_secret() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    format!("{TOKEN_PREFIX}{}", hex::encode(bytes))
}

fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Mints a token inside the caller's transaction; returns (token id, secret).
pub(crate) async fn insert_token(
    conn: &mut AnyConnection,
    kind: TokenKind,
    name: &str,
    subject_id: Option<&str>,
) -> Result<(String, String), StoreError> {
    let id = new_id();
    let secret = mint_token_secret();
    sqlx::query(
        "INSERT INTO tokens (id, hash, name, kind, subject_id, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&id)
    .bind(hash(&secret))
    .bind(stored(name))
    .bind(kind.as_str())
    .bind(subject_id)
    .bind(time::now())
    .execute(conn)
    .await?;
    Ok((id, secret))
}

/// A new token for the run or discussion `subject_id` started by an earlier request whose
/// answer was lost: the tokens minted for it before are revoked (nobody saw them), and the
/// secret of the new one returned.
pub(crate) async fn reissue_token(
    conn: &mut AnyConnection,
    kind: TokenKind,
    subject_id: &str,
) -> Result<String, StoreError> {
    sqlx::query("UPDATE tokens SET revoked = 1 WHERE kind = $1 AND subject_id = $2")
        .bind(kind.as_str())
        .bind(subject_id)
        .execute(&mut *conn)
        .await?;
    let name = format!("{} {subject_id}", kind.as_str());
    let (_, secret) = insert_token(conn, kind, &name, Some(subject_id)).await?;
    Ok(secret)
}

impl Store {
    /// Mints a user token (full access). The secret is only in the answer, never stored.
    pub async fn create_user_token(&self, name: &str) -> Result<CreatedToken, StoreError> {
        self.create_team_token(name, None).await
    }

    /// Mints a user token named `name` that stops working `expires_in` from now (never when
    /// `None`).
    pub async fn create_team_token(
        &self,
        name: &str,
        expires_in: Option<Duration>,
    ) -> Result<CreatedToken, StoreError> {
        let name = name.trim();
        if name.is_empty() {
            return Err(StoreError::Invalid(
                "a token needs a name (e.g. the machine or person it is for)".into(),
            ));
        }
        wujie_protocol::limits::check_text_len(
            "token name",
            name,
            wujie_protocol::limits::MAX_TOKEN_NAME_BYTES,
        )
        .map_err(StoreError::Invalid)?;
        if expires_in.is_some_and(|d| d.is_zero()) {
            return Err(StoreError::Invalid(
                "a token that expires at once is no use; give a positive duration".into(),
            ));
        }
        let expires_at = expires_in.map(time::after_now);
        let mut w = self.write().await?;
        let (id, token) = insert_token(&mut w.tx, TokenKind::User, name, None).await?;
        if let Some(at) = &expires_at {
            sqlx::query("UPDATE tokens SET expires_at = $1 WHERE id = $2")
                .bind(at)
                .bind(&id)
                .execute(&mut *w.tx)
                .await?;
        }
        w.commit().await?;
        Ok(CreatedToken {
            id,
            name: name.to_string(),
            token,
            expires_at,
        })
    }

    /// Every user token, oldest first, without secrets (none are stored).
    pub async fn list_user_tokens(&self) -> Result<Vec<TokenInfo>, StoreError> {
        #[derive(sqlx::FromRow)]
        struct Row {
            id: String,
            name: Text,
            created_at: String,
            last_used_at: Option<String>,
            expires_at: Option<String>,
            revoked: i64,
        }
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT id, name, created_at, last_used_at, expires_at, revoked FROM tokens \
                 WHERE kind = 'user' ORDER BY created_at, id",
        )
        .fetch_all(self.pool())
        .await?;
        let now = time::now();
        Ok(rows
            .into_iter()
            .map(|row| {
                let status = if row.revoked != 0 {
                    TokenStatus::Revoked
                } else if row.expires_at.as_ref().is_some_and(|at| *at <= now) {
                    TokenStatus::Expired
                } else {
                    TokenStatus::Active
                };
                TokenInfo {
                    id: row.id,
                    name: row.name.into(),
                    created_at: row.created_at,
                    last_used_at: row.last_used_at,
                    expires_at: row.expires_at,
                    status,
                }
            })
            .collect())
    }

    /// Whom `secret` speaks for; `None` if it is unknown, revoked or expired, or if it is the
    /// adapter's token of a run that is no longer running or of a discussion that was
    /// promoted: a token handed to an adapter dies with what it was handed out for. Every
    /// call reads the database, so a token revoked through one server process is refused by
    /// all at once.
    pub async fn verify_token(&self, secret: &str) -> Result<Option<Principal>, StoreError> {
        /// A live token, with the issue of its run while the run is running.
        #[derive(sqlx::FromRow)]
        struct Row {
            id: String,
            kind: String,
            subject_id: Option<String>,
            issue_id: Option<String>,
            last_used_at: Option<String>,
        }
        let row: Option<Row> = sqlx::query_as(
            "SELECT t.id, t.kind, t.subject_id, r.issue_id, t.last_used_at FROM tokens t \
             LEFT JOIN runs r ON t.kind = 'run' AND r.id = t.subject_id AND r.status = 'running' \
             LEFT JOIN discussions d ON t.kind = 'discussion' AND d.id = t.subject_id \
             WHERE t.hash = $1 AND t.revoked = 0 AND (t.expires_at IS NULL OR t.expires_at > $2) \
               AND (t.kind = 'user' OR r.id IS NOT NULL OR d.status = 'open')",
        )
        .bind(hash(secret))
        .bind(time::now())
        .fetch_optional(self.pool())
        .await?;
        let Some(Row {
            id: token_id,
            kind,
            subject_id: subject,
            issue_id,
            last_used_at: last_used,
        }) = row
        else {
            return Ok(None);
        };
        if kind == "user" {
            self.note_used(&token_id, last_used.as_deref()).await;
        }
        Ok(match (kind.as_str(), subject, issue_id) {
            ("user", _, _) => Some(Principal::User { token_id }),
            ("run", Some(run_id), Some(issue_id)) => Some(Principal::Run {
                token_id,
                run_id,
                issue_id,
            }),
            ("discussion", Some(discussion_id), _) => Some(Principal::Discussion {
                token_id,
                discussion_id,
            }),
            _ => None,
        })
    }

    /// Records that `token_id` was used now, unless that is already known to the minute. Not
    /// part of any write transaction: it must not take the activity lock on every request.
    async fn note_used(&self, token_id: &str, last_used: Option<&str>) {
        let stale = time::before_now(LAST_USED_RESOLUTION);
        if last_used.is_some_and(|at| at > stale.as_str()) {
            return;
        }
        // Ignored when it fails (the database busy past its timeout): the request it would
        // fail matters more than the date.
        let _ = sqlx::query(
            "UPDATE tokens SET last_used_at = $1 WHERE id = $2 \
             AND (last_used_at IS NULL OR last_used_at <= $3)",
        )
        .bind(time::now())
        .bind(token_id)
        .bind(&stale)
        .execute(self.pool())
        .await;
    }

    /// Revokes a token by id; later verifications fail.
    pub async fn revoke_token(&self, token_id: &str) -> Result<(), StoreError> {
        let mut w = self.write().await?;
        let done = sqlx::query("UPDATE tokens SET revoked = 1 WHERE id = $1")
            .bind(token_id)
            .execute(&mut *w.tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound(format!("token {token_id} not found")));
        }
        w.commit().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_have_the_prefix_and_64_hex_digits() {
        let s = mint_token_secret();
        let hex_part = s.strip_prefix(TOKEN_PREFIX).expect("prefix");
        assert_eq!(hex_part.len(), 64);
        assert!(hex_part.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(s, mint_token_secret());
        assert_eq!(hash(&s).len(), 64);
    }
}
