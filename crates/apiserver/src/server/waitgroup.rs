//! Wait groups that refuse new members once draining began (apimachinery
//! `util/waitgroup`): [`SafeWaitGroup`] tracks non-long-running requests, and
//! [`RateLimitedSafeWaitGroup`] tracks watches, releasing them at a bounded rate while the server
//! drains (§1.9).
//!
//! Membership is a guard: dropping it is `Done()`, so a request future that is dropped half way
//! still leaves the group.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// `Add` was called after `Wait` had begun.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("add with positive delta after Wait is forbidden")]
pub struct AddAfterWait;

/// The grace period of [`RateLimitedSafeWaitGroup::wait`] elapsed before the count reached 0.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("context deadline exceeded")]
pub struct WaitDeadlineExceeded;

#[derive(Debug, Default)]
struct Counter {
    state: Mutex<CounterState>,
    zero: Notify,
}

#[derive(Debug, Default)]
struct CounterState {
    count: usize,
    waiting: bool,
    limiter: Option<Arc<Limiter>>,
}

impl Counter {
    fn add(&self) -> Result<(), AddAfterWait> {
        let mut state = self.state.lock().map_err(|_| AddAfterWait)?;
        if state.waiting {
            return Err(AddAfterWait);
        }
        state.count += 1;
        Ok(())
    }

    fn done(&self) {
        let reached_zero = match self.state.lock() {
            Ok(mut state) => {
                state.count = state.count.saturating_sub(1);
                state.count == 0
            }
            Err(_) => false,
        };
        if reached_zero {
            self.zero.notify_waiters();
        }
    }

    fn count(&self) -> usize {
        self.state.lock().map(|s| s.count).unwrap_or(0)
    }

    fn limiter(&self) -> Option<Arc<Limiter>> {
        self.state.lock().ok().and_then(|s| s.limiter.clone())
    }

    /// Marks the group as waiting and returns the count at that moment.
    fn begin_wait(&self, limiter: impl FnOnce(usize) -> Option<Arc<Limiter>>) -> usize {
        match self.state.lock() {
            Ok(mut state) => {
                state.waiting = true;
                let count = state.count;
                state.limiter = limiter(count);
                count
            }
            Err(_) => 0,
        }
    }

    fn is_waiting(&self) -> bool {
        self.state.lock().map(|s| s.waiting).unwrap_or(true)
    }

    async fn wait_zero(&self) {
        loop {
            let notified = self.zero.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.count() == 0 {
                return;
            }
            notified.await;
        }
    }
}

/// A wait group whose `add` fails once [`SafeWaitGroup::wait`] has begun.
#[derive(Debug, Clone, Default)]
pub struct SafeWaitGroup {
    counter: Arc<Counter>,
}

/// Membership in a [`SafeWaitGroup`]; dropping it is `Done()`.
#[derive(Debug)]
pub struct SafeWaitGroupGuard {
    counter: Arc<Counter>,
}

impl Drop for SafeWaitGroupGuard {
    fn drop(&mut self) {
        self.counter.done();
    }
}

impl SafeWaitGroup {
    /// An empty group.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one member, or fails once `wait` has begun.
    pub fn add(&self) -> Result<SafeWaitGroupGuard, AddAfterWait> {
        self.counter.add()?;
        Ok(SafeWaitGroupGuard {
            counter: self.counter.clone(),
        })
    }

    /// The number of current members.
    pub fn count(&self) -> usize {
        self.counter.count()
    }

    /// Whether `wait` has begun.
    pub fn is_waiting(&self) -> bool {
        self.counter.is_waiting()
    }

    /// Refuses further `add`s and waits until every member is done.
    pub async fn wait(&self) {
        self.counter.begin_wait(|_| None);
        self.counter.wait_zero().await;
    }
}

/// A token bucket with burst 1 (`rate.NewLimiter(qps, 1)`), on tokio's clock.
#[derive(Debug)]
struct Limiter {
    interval: Duration,
    next: Mutex<Option<Instant>>,
}

impl Limiter {
    fn new(qps: f64) -> Self {
        Limiter {
            interval: Duration::from_secs_f64(1.0 / qps),
            next: Mutex::new(None),
        }
    }

    /// Reserves the next slot and sleeps until it.
    async fn until_ready(&self) {
        let at = {
            let Ok(mut next) = self.next.lock() else {
                return;
            };
            let now = Instant::now();
            let at = next.map_or(now, |n| n.max(now));
            *next = Some(at + self.interval);
            at
        };
        tokio::time::sleep_until(at).await;
    }
}

/// The watch wait group: like [`SafeWaitGroup`], but once `wait` began, members leave at most
/// `qps` per second, so a drain does not make every watcher reconnect at the same instant.
#[derive(Debug, Clone, Default)]
pub struct RateLimitedSafeWaitGroup {
    counter: Arc<Counter>,
}

/// Membership in a [`RateLimitedSafeWaitGroup`]. Dropping it leaves the group (through the rate
/// limiter, in a background task, when draining); [`RateLimitedGuard::done`] does the same
/// inline.
#[derive(Debug)]
pub struct RateLimitedGuard {
    counter: Option<Arc<Counter>>,
}

impl RateLimitedGuard {
    /// Leaves the group, first waiting for the rate limiter if the group is draining.
    pub async fn done(mut self) {
        if let Some(counter) = self.counter.take() {
            if let Some(limiter) = counter.limiter() {
                limiter.until_ready().await;
            }
            counter.done();
        }
    }
}

impl Drop for RateLimitedGuard {
    fn drop(&mut self) {
        let Some(counter) = self.counter.take() else {
            return;
        };
        match (counter.limiter(), tokio::runtime::Handle::try_current()) {
            (Some(limiter), Ok(handle)) => {
                handle.spawn(async move {
                    limiter.until_ready().await;
                    counter.done();
                });
            }
            _ => counter.done(),
        }
    }
}

impl RateLimitedSafeWaitGroup {
    /// An empty group.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one member, or fails once `wait` has begun.
    pub fn add(&self) -> Result<RateLimitedGuard, AddAfterWait> {
        self.counter.add()?;
        Ok(RateLimitedGuard {
            counter: Some(self.counter.clone()),
        })
    }

    /// The number of current members.
    pub fn count(&self) -> usize {
        self.counter.count()
    }

    /// Whether `wait` has begun.
    pub fn is_waiting(&self) -> bool {
        self.counter.is_waiting()
    }

    /// Refuses further `add`s, then waits until the count reaches zero or `grace` elapses.
    /// Members leave at `max(200, active / grace_seconds)` per second from now on. Returns the
    /// count when waiting began, the count at the end, and whether the grace period ran out.
    pub async fn wait(&self, grace: Duration) -> (usize, usize, Result<(), WaitDeadlineExceeded>) {
        let before = self.counter.begin_wait(|active| {
            let seconds = grace.as_secs_f64();
            let mut qps = 200.0_f64;
            if seconds > 0.0 {
                qps = qps.max(active as f64 / seconds);
            }
            Some(Arc::new(Limiter::new(qps)))
        });
        if before == 0 {
            return (0, 0, Ok(()));
        }
        let result = tokio::time::timeout(grace, self.counter.wait_zero())
            .await
            .map_err(|_| WaitDeadlineExceeded);
        (before, self.counter.count(), result)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn safe_wait_group_refuses_add_after_wait_and_waits_for_zero() {
        let wg = SafeWaitGroup::new();
        let a = wg.add().unwrap();
        let b = wg.add().unwrap();
        assert_eq!(wg.count(), 2);
        let waiter = {
            let wg = wg.clone();
            tokio::spawn(async move { wg.wait().await })
        };
        // Wait until the waiter has begun (polling with a deadline, never a bare sleep).
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !wg.is_waiting() {
            assert!(std::time::Instant::now() < deadline);
            tokio::task::yield_now().await;
        }
        assert_eq!(
            wg.add().unwrap_err().to_string(),
            "add with positive delta after Wait is forbidden"
        );
        drop(a);
        assert!(!waiter.is_finished());
        drop(b);
        waiter.await.unwrap();
        assert_eq!(wg.count(), 0);
    }

    #[tokio::test]
    async fn safe_wait_group_wait_on_empty_returns() {
        let wg = SafeWaitGroup::new();
        wg.wait().await;
        assert!(wg.add().is_err());
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limited_wait_releases_at_bounded_rate() {
        let wg = RateLimitedSafeWaitGroup::new();
        let guards: Vec<_> = (0..10).map(|_| wg.add().unwrap()).collect();
        let start = Instant::now();
        let waiter = {
            let wg = wg.clone();
            tokio::spawn(async move { wg.wait(Duration::from_secs(10)).await })
        };
        while !wg.is_waiting() {
            tokio::task::yield_now().await;
        }
        assert!(wg.add().is_err());
        for guard in guards {
            guard.done().await;
        }
        let (before, after, result) = waiter.await.unwrap();
        assert_eq!((before, after), (10, 0));
        assert!(result.is_ok());
        // 200 qps, burst 1: the 10th release happens 9 intervals of 5ms after the first.
        assert!(start.elapsed() >= Duration::from_millis(45));
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limited_wait_times_out_after_grace() {
        let wg = RateLimitedSafeWaitGroup::new();
        let guard = wg.add().unwrap();
        let (before, after, result) = wg.wait(Duration::from_secs(2)).await;
        assert_eq!((before, after), (1, 1));
        assert_eq!(result, Err(WaitDeadlineExceeded));
        drop(guard);
        // The dropped guard leaves through the limiter in a background task.
        let deadline = Instant::now() + Duration::from_secs(5);
        while wg.count() != 0 {
            assert!(Instant::now() < deadline);
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test]
    async fn rate_limited_wait_on_empty_returns_at_once() {
        let wg = RateLimitedSafeWaitGroup::new();
        assert_eq!(wg.wait(Duration::from_secs(1)).await, (0, 0, Ok(())));
    }
}
