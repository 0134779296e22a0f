//! What the deliverer asks of the server: two requests, behind a trait so that the delivery
//! decisions can be tested against a server that answers as a test says.

use std::future::Future;

use wujie_client::{Client, ClientError, EncodedBatch};
use wujie_protocol::api::{FinishRun, IngestResult};
use wujie_store::outbox::TargetKind;

use crate::reporter::TargetRef;

pub trait DeliveryServer: Send + Sync + 'static {
    /// Sends a batch to a run or a discussion; `items` are `IngestItem`s as the outbox holds
    /// them (encoded once, when they were recorded).
    fn ingest(
        &self,
        target: &TargetRef,
        items: &[&str],
    ) -> impl Future<Output = Result<IngestResult, ClientError>> + Send;

    /// Records how a run ended.
    fn finish_run(
        &self,
        run_id: &str,
        finish: &FinishRun,
    ) -> impl Future<Output = Result<(), ClientError>> + Send;
}

impl DeliveryServer for Client {
    async fn ingest(
        &self,
        target: &TargetRef,
        items: &[&str],
    ) -> Result<IngestResult, ClientError> {
        let batch = EncodedBatch::from_items(items.iter().copied());
        match target.kind {
            TargetKind::Run => self.ingest_run_events_encoded(&target.id, batch).await,
            TargetKind::Discussion => {
                self.ingest_discussion_events_encoded(&target.id, batch)
                    .await
            }
        }
    }

    async fn finish_run(&self, run_id: &str, finish: &FinishRun) -> Result<(), ClientError> {
        Client::finish_run(self, run_id, finish).await.map(drop)
    }
}
