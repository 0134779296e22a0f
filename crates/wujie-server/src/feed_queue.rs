//! What one live-feed client holds in the server: its events not yet written to the
//! connection, bounded in bytes, not in events: an entry may be 8 MiB, so a count of entries
//! bounds nothing (256 of them were 2 GiB per client).
//!
//! An event's cost is its entry's JSON (what the relay counts too, `fanout`) and a fixed
//! overhead for the event itself. An event larger than the whole budget waits for an empty
//! queue, so the queue holds at most the budget or one event. A sender that finds no room
//! within its patience gives up: the feed drops that client, who resumes with Last-Event-ID.

use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::Event;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

/// What an event costs besides its entry's JSON: its name, id and framing, and its place in
/// the queue. It also bounds how many payload-less events (`live`) a budget holds.
const EVENT_OVERHEAD: usize = 256;

/// An event in the queue, with the part of the budget it holds until the client's connection
/// takes it.
pub(crate) struct Queued {
    pub(crate) event: Event,
    _room: OwnedSemaphorePermit,
}

/// The sending side of a client's queue; the connection reads the [`Receiver`].
#[derive(Clone)]
pub(crate) struct Sender {
    events: mpsc::UnboundedSender<Queued>,
    room: Arc<Semaphore>,
    budget: u32,
}

pub(crate) type Receiver = mpsc::UnboundedReceiver<Queued>;

/// Why an event was not queued.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum NotQueued {
    /// No room within the patience given: the client stopped reading.
    Full,
    /// The client's connection is gone.
    Closed,
}

/// A queue of at most `budget_bytes` (at least one event's overhead).
pub(crate) fn queue(budget_bytes: usize) -> (Sender, Receiver) {
    let budget = u32::try_from(budget_bytes.max(EVENT_OVERHEAD)).unwrap_or(u32::MAX);
    let (events, receiver) = mpsc::unbounded_channel();
    let sender = Sender {
        events,
        room: Arc::new(Semaphore::new(budget as usize)),
        budget,
    };
    (sender, receiver)
}

impl Sender {
    /// Queues `event`, whose entry's JSON is `entry_bytes` long, once there is room for it,
    /// waiting at most `patience`.
    pub(crate) async fn send(
        &self,
        event: Event,
        entry_bytes: usize,
        patience: Duration,
    ) -> Result<(), NotQueued> {
        let cost = entry_bytes.saturating_add(EVENT_OVERHEAD);
        let permits = u32::try_from(cost).unwrap_or(u32::MAX).min(self.budget);
        let room = tokio::select! {
            room = self.room.clone().acquire_many_owned(permits) => {
                // The semaphore is never closed; were it, the queue would be of no use.
                room.map_err(|_| NotQueued::Closed)?
            }
            () = tokio::time::sleep(patience) => return Err(NotQueued::Full),
            () = self.events.closed() => return Err(NotQueued::Closed),
        };
        self.events
            .send(Queued { event, _room: room })
            .map_err(|_| NotQueued::Closed)
    }

    /// Resolves once the client's connection is gone.
    pub(crate) async fn closed(&self) {
        self.events.closed().await
    }

    /// The bytes the queued events hold now.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.budget as usize - self.room.available_permits()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PATIENCE: Duration = Duration::from_millis(50);

    fn event() -> Event {
        Event::default().data("x")
    }

    #[tokio::test]
    async fn events_are_queued_until_their_bytes_fill_the_budget() {
        let (tx, mut rx) = queue(4 * 1024);
        tx.send(event(), 1000, PATIENCE).await.unwrap();
        tx.send(event(), 1000, PATIENCE).await.unwrap();
        assert_eq!(tx.held(), 2 * (1000 + EVENT_OVERHEAD));
        tx.send(event(), 1000, PATIENCE).await.unwrap();
        // 3 × 1,256 of 4,096: a fourth does not fit while none is taken.
        assert_eq!(tx.send(event(), 1000, PATIENCE).await, Err(NotQueued::Full));
        // Taking one (the connection writing it) makes room.
        drop(rx.recv().await.unwrap());
        tx.send(event(), 1000, PATIENCE).await.unwrap();
    }

    #[tokio::test]
    async fn an_event_larger_than_the_budget_waits_for_an_empty_queue() {
        let (tx, mut rx) = queue(4 * 1024);
        tx.send(event(), 10, PATIENCE).await.unwrap();
        assert_eq!(
            tx.send(event(), 8 << 20, PATIENCE).await,
            Err(NotQueued::Full)
        );
        drop(rx.recv().await.unwrap());
        tx.send(event(), 8 << 20, PATIENCE).await.unwrap();
        assert_eq!(tx.held(), 4 * 1024);
        assert_eq!(tx.send(event(), 0, PATIENCE).await, Err(NotQueued::Full));
    }

    #[tokio::test]
    async fn a_gone_client_is_told_apart_from_a_full_queue() {
        let (tx, rx) = queue(4 * 1024);
        drop(rx);
        assert_eq!(
            tx.send(event(), 10, Duration::from_secs(600)).await,
            Err(NotQueued::Closed)
        );
        tx.closed().await;
    }
}
