//! Token usage added up across the workspace, per provider and model, for its cost.

use wujie_protocol::event::Usage;

use crate::rows::{UsageRow, usage_from_row};
use crate::{Store, StoreError};

impl Store {
    /// Every run's and discussion's usage, summed per (provider, model). (PostgreSQL sums
    /// BIGINT columns as NUMERIC: the casts keep both backends' results 64-bit integers.)
    pub async fn workspace_usage(&self) -> Result<Vec<Usage>, StoreError> {
        let rows: Vec<UsageRow> = sqlx::query_as(
            "SELECT provider, model, CAST(SUM(input_tokens) AS BIGINT) AS input_tokens, \
                    CAST(SUM(output_tokens) AS BIGINT) AS output_tokens, \
                    CAST(SUM(cache_read_tokens) AS BIGINT) AS cache_read_tokens, \
                    CAST(SUM(cache_write_tokens) AS BIGINT) AS cache_write_tokens \
             FROM (SELECT provider, model, input_tokens, output_tokens, cache_read_tokens, \
                          cache_write_tokens FROM run_usage \
                   UNION ALL \
                   SELECT provider, model, input_tokens, output_tokens, cache_read_tokens, \
                          cache_write_tokens FROM discussion_usage) AS u \
             GROUP BY provider, model ORDER BY provider, model",
        )
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(usage_from_row).collect())
    }

    /// The usage of every run of an issue, summed per (provider, model).
    pub async fn issue_usage(&self, issue_id: &str) -> Result<Vec<Usage>, StoreError> {
        let rows: Vec<UsageRow> = sqlx::query_as(
            "SELECT provider, model, CAST(SUM(input_tokens) AS BIGINT) AS input_tokens, \
                    CAST(SUM(output_tokens) AS BIGINT) AS output_tokens, \
                    CAST(SUM(cache_read_tokens) AS BIGINT) AS cache_read_tokens, \
                    CAST(SUM(cache_write_tokens) AS BIGINT) AS cache_write_tokens \
             FROM run_usage WHERE run_id IN (SELECT id FROM runs WHERE issue_id = $1) \
             GROUP BY provider, model ORDER BY provider, model",
        )
        .bind(issue_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows.into_iter().map(usage_from_row).collect())
    }
}
