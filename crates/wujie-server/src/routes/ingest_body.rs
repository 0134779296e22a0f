//! The body of an ingest request, read so that each event's size is known from the request
//! (`ReceivedBatch`) instead of by encoding the event again.

use axum::body::{Body as RequestBody, Bytes};
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use serde::de::IgnoredAny;
use wujie_protocol::api::{IngestBatch, ReceivedBatch, ReceivedItem};
use wujie_protocol::limits::encoded_len;

use super::within_body_timeout;
use crate::AppState;
use crate::error::Failure;

/// An ingest body as a `ReceivedBatch`, refused exactly as the same body read as an
/// `IngestBatch` is: same status, same message.
pub(crate) struct IngestBody(pub(crate) ReceivedBatch);

impl FromRequest<AppState> for IngestBody {
    type Rejection = Failure;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Failure> {
        let (parts, body) = req.into_parts();
        // The content type is checked before the body is read, as `Json` does.
        let headers_only = Request::from_parts(parts.clone(), RequestBody::empty());
        if let Err(JsonRejection::MissingJsonContentType(r)) =
            axum::Json::<IgnoredAny>::from_request(headers_only, state).await
        {
            return Err(JsonRejection::from(r).into());
        }
        let read = Bytes::from_request(Request::from_parts(parts.clone(), body), state);
        let bytes = within_body_timeout(state, read)
            .await?
            .map_err(JsonRejection::from)?;
        if let Ok(axum::Json(batch)) = axum::Json::<ReceivedBatch>::from_bytes(&bytes) {
            return Ok(IngestBody(batch));
        }
        // An event that does not decode fails inside the text taken whole, which words (and
        // classifies) the failure otherwise: the plain reading says what it always said.
        let axum::Json(plain) = axum::Json::<IngestBatch>::from_bytes(&bytes)?;
        // Not expected (both readings take the same bodies), but should it happen, the events'
        // encodings are texts they decode from.
        let items = plain
            .items
            .into_iter()
            .map(|item| ReceivedItem {
                event_text_len: encoded_len(&item.event),
                item,
            })
            .collect();
        Ok(IngestBody(ReceivedBatch { items }))
    }
}
