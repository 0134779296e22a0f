//! A bulkhead between ingest and every other request. Reporters stream into their runs all the
//! time, and an ingest that waits on the database (behind a lock, a slow disk) keeps its
//! connection meanwhile: enough of them would take the whole pool, and a user starting a run
//! or reading an issue would wait out the pool's timeout and be told the database is busy.
//! Ingest takes a slot before it takes a connection, and there are fewer slots than
//! connections, so the rest of the pool is always there for everything else.

use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};

use crate::StoreError;

pub(crate) struct IngestSlots {
    slots: Semaphore,
    /// How long an ingest waits for a slot before it is answered busy (as long as any request
    /// waits for a connection).
    wait: Duration,
}

impl IngestSlots {
    /// The slots for a pool of `connections`.
    pub(crate) fn for_pool(connections: u32, wait: Duration) -> IngestSlots {
        IngestSlots {
            slots: Semaphore::new(ingest_share(connections) as usize),
            wait,
        }
    }

    /// A slot, held for the ingest's whole transaction; [`StoreError::Busy`] when none came
    /// free in time.
    pub(crate) async fn take(&self) -> Result<SemaphorePermit<'_>, StoreError> {
        match tokio::time::timeout(self.wait, self.slots.acquire()).await {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphore is never closed; a closed one would mean no ingest may run.
            Ok(Err(_)) | Err(_) => Err(StoreError::Busy),
        }
    }
}

/// How many of a pool's `connections` ingest may hold at once: all but a quarter of them (at
/// least one kept back), and with a single connection that one.
fn ingest_share(connections: u32) -> u32 {
    match connections {
        0 | 1 => 1,
        n => n - (n / 4).max(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ingest_leaves_a_quarter_of_the_pool_and_at_least_one_connection() {
        let shares: Vec<u32> = [1, 2, 3, 4, 8, 16, 64].map(ingest_share).to_vec();
        assert_eq!(shares, [1, 1, 2, 3, 6, 12, 48]);
    }

    #[tokio::test]
    async fn an_ingest_that_finds_no_slot_in_time_is_told_the_database_is_busy() {
        let slots = IngestSlots::for_pool(2, Duration::from_millis(10));
        let held = slots.take().await.expect("the one slot");
        assert!(matches!(slots.take().await, Err(StoreError::Busy)));
        drop(held);
        assert!(slots.take().await.is_ok());
    }
}
