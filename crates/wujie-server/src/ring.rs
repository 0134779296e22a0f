//! A broadcast ring bounded in bytes, for an issue's relay (`fanout`): one sender hands each
//! value, shared, to every follower subscribed at the time. A value is kept until every such
//! follower took it, or until the values kept exceed the ring's budget of bytes: the oldest are
//! then let go, and a follower that had not taken them learns that it fell behind (and reads
//! them from elsewhere). tokio's broadcast channel is bounded by a count of values, which for
//! values of up to megabytes each bounds nothing useful.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

/// The sending side; dropping it closes the ring.
pub(crate) struct Sender<T> {
    shared: Arc<Shared<T>>,
}

/// A follower: takes every value sent after it subscribed, in order.
pub(crate) struct Follower<T> {
    shared: Arc<Shared<T>>,
    /// The position of the next value to take.
    next: u64,
}

/// What [`Follower::recv`] got.
pub(crate) enum Received<T> {
    Value(Arc<T>),
    /// Values this follower had not taken were let go to stay within the budget.
    FellBehind,
    /// The sender is gone.
    Closed,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    sent: Notify,
    budget: usize,
}

struct State<T> {
    kept: VecDeque<Kept<T>>,
    /// The position of `kept[0]`.
    first: u64,
    bytes: usize,
    followers: usize,
    closed: bool,
}

struct Kept<T> {
    value: Arc<T>,
    bytes: usize,
    /// Followers that have not taken it yet.
    untaken: usize,
}

impl<T> State<T> {
    fn end(&self) -> u64 {
        self.first + self.kept.len() as u64
    }

    /// Lets go of the oldest values that every follower took.
    fn drop_taken(&mut self) {
        while self.kept.front().is_some_and(|k| k.untaken == 0) {
            self.pop_front();
        }
    }

    fn pop_front(&mut self) {
        if let Some(k) = self.kept.pop_front() {
            self.bytes -= k.bytes;
            self.first += 1;
        }
    }
}

/// A ring that keeps at most `budget` bytes of values (and always the newest one).
pub(crate) fn ring<T>(budget: usize) -> Sender<T> {
    Sender {
        shared: Arc::new(Shared {
            state: Mutex::new(State {
                kept: VecDeque::new(),
                first: 0,
                bytes: 0,
                followers: 0,
                closed: false,
            }),
            sent: Notify::new(),
            budget,
        }),
    }
}

impl<T> Shared<T> {
    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T> Sender<T> {
    /// Hands `value`, of `bytes`, to every follower; kept only if there is one.
    pub(crate) fn send(&self, value: T, bytes: usize) {
        let mut state = self.shared.state();
        if state.followers == 0 {
            return;
        }
        let untaken = state.followers;
        state.kept.push_back(Kept {
            value: Arc::new(value),
            bytes,
            untaken,
        });
        state.bytes += bytes;
        while state.bytes > self.shared.budget && state.kept.len() > 1 {
            state.pop_front();
        }
        drop(state);
        self.shared.sent.notify_waiters();
    }

    pub(crate) fn subscribe(&self) -> Follower<T> {
        let mut state = self.shared.state();
        state.followers += 1;
        Follower {
            shared: self.shared.clone(),
            next: state.end(),
        }
    }

    pub(crate) fn follower_count(&self) -> usize {
        self.shared.state().followers
    }

    pub(crate) fn same_ring(&self, other: &Sender<T>) -> bool {
        Arc::ptr_eq(&self.shared, &other.shared)
    }

    /// Tells every follower, once it took what is kept, that nothing more comes.
    pub(crate) fn close(&self) {
        self.shared.state().closed = true;
        self.shared.sent.notify_waiters();
    }

    /// The bytes of the values kept now.
    #[cfg(test)]
    pub(crate) fn kept_bytes(&self) -> usize {
        self.shared.state().bytes
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Follower<T> {
    /// The next value sent, waiting for it.
    pub(crate) async fn recv(&mut self) -> Received<T> {
        loop {
            // Registered before the look at the ring, so a value sent after the look wakes it.
            let sent = self.shared.sent.notified();
            tokio::pin!(sent);
            sent.as_mut().enable();
            {
                let mut state = self.shared.state();
                if self.next < state.first {
                    return Received::FellBehind;
                }
                if self.next < state.end() {
                    let at = (self.next - state.first) as usize;
                    let kept = &mut state.kept[at];
                    kept.untaken -= 1;
                    let value = kept.value.clone();
                    self.next += 1;
                    state.drop_taken();
                    return Received::Value(value);
                }
                if state.closed {
                    return Received::Closed;
                }
            }
            sent.await;
        }
    }
}

impl<T> Drop for Follower<T> {
    fn drop(&mut self) {
        let mut state = self.shared.state();
        state.followers -= 1;
        let from = self.next.max(state.first);
        let first = state.first;
        for k in state.kept.iter_mut().skip((from - first) as usize) {
            k.untaken -= 1;
        }
        state.drop_taken();
    }
}

#[cfg(test)]
mod tests {
    use super::{Follower, Received, ring};

    async fn value(follower: &mut Follower<usize>) -> Option<usize> {
        match follower.recv().await {
            Received::Value(v) => Some(*v),
            Received::FellBehind | Received::Closed => None,
        }
    }

    #[tokio::test]
    async fn a_follower_left_behind_by_more_than_the_budget_is_told_and_the_rest_kept_within_it() {
        let sender = ring(100);
        let mut slow = sender.subscribe();
        let mut eager = sender.subscribe();
        for n in 0..10 {
            sender.send(n, 30);
            assert!(
                sender.kept_bytes() <= 100,
                "{} bytes kept",
                sender.kept_bytes()
            );
            assert_eq!(value(&mut eager).await, Some(n));
        }
        assert!(matches!(slow.recv().await, Received::FellBehind));
        // Once the follower left behind is gone, nothing is kept.
        drop(slow);
        assert_eq!(sender.kept_bytes(), 0);
    }

    #[tokio::test]
    async fn values_every_follower_took_or_left_are_let_go_and_closing_ends_after_the_last() {
        let sender = ring(1000);
        let mut first = sender.subscribe();
        let second = sender.subscribe();
        sender.send(1, 10);
        sender.send(2, 10);
        assert_eq!(value(&mut first).await, Some(1));
        assert_eq!(sender.kept_bytes(), 20, "the second has not taken either");
        drop(second);
        assert_eq!(sender.kept_bytes(), 10, "only the first's next is kept");
        sender.close();
        assert_eq!(value(&mut first).await, Some(2));
        assert!(matches!(first.recv().await, Received::Closed));
        assert_eq!(sender.kept_bytes(), 0);
        // Nobody follows: nothing is kept.
        drop(first);
        sender.send(3, 10);
        assert_eq!(sender.kept_bytes(), 0);
    }

    #[tokio::test]
    async fn a_waiting_follower_is_woken_by_the_next_value() {
        let sender = ring(1000);
        let mut follower = sender.subscribe();
        let waiting = tokio::spawn(async move { value(&mut follower).await });
        tokio::task::yield_now().await;
        sender.send(7, 1);
        assert_eq!(waiting.await.expect("follower task"), Some(7));
    }
}
