//! A buffering wrapper around a backend (upstream's `buffered` plugin, the `batch` mode of
//! `--audit-log-mode` and `--audit-webhook-mode`): events go into a bounded queue and a
//! dedicated thread hands them to the inner backend in batches of at most `max_batch_size`,
//! sending a smaller batch when `max_batch_wait` has passed since it started collecting, at
//! most `throttle_qps` batches a second (bursts of `throttle_burst`) when throttled. The
//! request path never waits: a full queue drops events (counted in
//! `apiserver_audit_error_total{plugin="buffered"}` and logged), as upstream does. With an
//! asynchronous delegate (the webhook) each batch is sent as its own task, so a slow webhook
//! does not hold up the queue; shutdown waits for all of them.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::AuditError;
use super::backend::{Backend, ShutdownFuture};
use super::event::Event;
use super::metrics::handle_plugin_error;

/// The plugin name in error metrics and logs.
pub const PLUGIN_NAME: &str = "buffered";

/// Upstream's default queue size (both backends).
pub const DEFAULT_BUFFER_SIZE: usize = 10_000;
/// Upstream's default maximum batch size of the webhook backend.
pub const DEFAULT_WEBHOOK_MAX_BATCH_SIZE: usize = 400;
/// Upstream's default maximum batch wait of the webhook backend.
pub const DEFAULT_WEBHOOK_MAX_BATCH_WAIT: Duration = Duration::from_secs(30);
/// Upstream's default batch rate of the webhook backend.
pub const DEFAULT_WEBHOOK_THROTTLE_QPS: f32 = 10.0;
/// Upstream's default batch burst of the webhook backend.
pub const DEFAULT_WEBHOOK_THROTTLE_BURST: usize = 15;

/// A batch rate limit (client-go's token bucket: starts full, `qps` tokens a second, at
/// most `burst` saved).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Throttle {
    /// Batches per second.
    pub qps: f32,
    /// Batches sent at once after a quiet period.
    pub burst: usize,
}

/// How events are batched (upstream `BatchConfig`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BatchConfig {
    /// The queue size; events beyond it are dropped.
    pub buffer_size: usize,
    /// The largest batch handed to the delegate.
    pub max_batch_size: usize,
    /// How long a batch collects before it is sent anyway (only when `max_batch_size > 1`).
    pub max_batch_wait: Duration,
    /// The batch rate limit, if any.
    pub throttle: Option<Throttle>,
    /// Whether each batch is sent as its own task (the webhook) rather than in turn.
    pub async_delegate: bool,
}

impl BatchConfig {
    /// Upstream's defaults for `--audit-log-batch-*`: one event per batch, no throttle,
    /// written in turn.
    pub fn log_defaults() -> Self {
        BatchConfig {
            buffer_size: DEFAULT_BUFFER_SIZE,
            max_batch_size: 1,
            max_batch_wait: Duration::ZERO,
            throttle: None,
            async_delegate: false,
        }
    }

    /// Upstream's defaults for `--audit-webhook-batch-*`.
    pub fn webhook_defaults() -> Self {
        BatchConfig {
            buffer_size: DEFAULT_BUFFER_SIZE,
            max_batch_size: DEFAULT_WEBHOOK_MAX_BATCH_SIZE,
            max_batch_wait: DEFAULT_WEBHOOK_MAX_BATCH_WAIT,
            throttle: Some(Throttle {
                qps: DEFAULT_WEBHOOK_THROTTLE_QPS,
                burst: DEFAULT_WEBHOOK_THROTTLE_BURST,
            }),
            async_delegate: true,
        }
    }
}

/// The writer thread's state, moved into it when it starts.
struct Writer {
    receiver: Receiver<Box<Event>>,
    done: watch::Sender<bool>,
}

/// Buffers events for an inner backend.
#[derive(Debug)]
pub struct BufferedBackend {
    inner: Arc<dyn Backend>,
    config: BatchConfig,
    sender: RwLock<Option<SyncSender<Box<Event>>>>,
    writer: Mutex<Option<Writer>>,
    done: watch::Receiver<bool>,
    in_flight: Arc<Mutex<Vec<JoinHandle<bool>>>>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Writer")
    }
}

impl BufferedBackend {
    /// Wraps `inner` with a queue batched as `config` says.
    pub fn new(inner: Arc<dyn Backend>, config: BatchConfig) -> Self {
        // Boxed events keep the preallocated queue small (upstream queues pointers too).
        let (tx, rx) = std::sync::mpsc::sync_channel(config.buffer_size.max(1));
        let (done_tx, done) = watch::channel(false);
        BufferedBackend {
            inner,
            config: BatchConfig {
                max_batch_size: config.max_batch_size.max(1),
                ..config
            },
            sender: RwLock::new(Some(tx)),
            writer: Mutex::new(Some(Writer {
                receiver: rx,
                done: done_tx,
            })),
            done,
            in_flight: Arc::default(),
        }
    }

    /// Starts the writer thread unless it already runs.
    fn start_writer(&self) -> Result<(), AuditError> {
        let Some(writer) = self.writer.lock().ok().and_then(|mut w| w.take()) else {
            return Ok(());
        };
        let inner = self.inner.clone();
        let config = self.config;
        let in_flight = self.in_flight.clone();
        std::thread::Builder::new()
            .name("audit-batcher".into())
            .spawn(move || {
                let mut throttle = config.throttle.map(TokenBucket::new);
                loop {
                    let (batch, closed) = collect(&writer.receiver, &config);
                    if !batch.is_empty() {
                        if let Some(bucket) = &mut throttle {
                            bucket.accept();
                        }
                        send(&inner, batch, config.async_delegate, &in_flight);
                    }
                    if closed {
                        break;
                    }
                }
                let _ = writer.done.send(true);
            })
            .map(|_| ())
            .map_err(|e| AuditError::Run {
                backend: self.name(),
                message: e.to_string(),
            })
    }
}

/// Collects one batch: up to `max_batch_size` events, ending early when `max_batch_wait`
/// has passed since collecting started (batches of more than one event only; a zero wait
/// takes what is queued once the first event came). Returns whether the queue is closed and
/// empty.
fn collect(rx: &Receiver<Box<Event>>, config: &BatchConfig) -> (Vec<Event>, bool) {
    let mut batch = Vec::new();
    let deadline = (config.max_batch_size > 1 && !config.max_batch_wait.is_zero())
        .then(|| Instant::now() + config.max_batch_wait);
    while batch.len() < config.max_batch_size {
        let received = match deadline {
            Some(deadline) => rx.recv_timeout(deadline.saturating_duration_since(Instant::now())),
            None if batch.is_empty() => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            None => rx.try_recv().map_err(|e| match e {
                TryRecvError::Empty => RecvTimeoutError::Timeout,
                TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
            }),
        };
        match received {
            Ok(ev) => batch.push(*ev),
            Err(RecvTimeoutError::Timeout) => break,
            Err(RecvTimeoutError::Disconnected) => return (batch, true),
        }
    }
    (batch, false)
}

/// Hands a batch to the delegate: as its own task when asynchronous (and the delegate can),
/// otherwise in turn.
fn send(
    inner: &Arc<dyn Backend>,
    batch: Vec<Event>,
    async_delegate: bool,
    in_flight: &Mutex<Vec<JoinHandle<bool>>>,
) {
    let batch = if async_delegate {
        match inner.spawn_events(batch) {
            Ok(task) => {
                if let Ok(mut tasks) = in_flight.lock() {
                    tasks.retain(|t| !t.is_finished());
                    tasks.push(task);
                }
                return;
            }
            Err(batch) => batch,
        }
    } else {
        batch
    };
    inner.process_events(&batch);
}

/// client-go's token bucket rate limiter, blocking the batching thread.
struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    fn new(throttle: Throttle) -> Self {
        let burst = throttle.burst.max(1) as f64;
        TokenBucket {
            qps: f64::from(throttle.qps),
            burst,
            tokens: burst,
            last: Instant::now(),
        }
    }

    /// Takes a token, waiting for one when none is left.
    fn accept(&mut self) {
        let now = Instant::now();
        self.tokens =
            (self.tokens + now.duration_since(self.last).as_secs_f64() * self.qps).min(self.burst);
        self.last = now;
        if self.tokens < 1.0 && self.qps > 0.0 {
            let wait = Duration::from_secs_f64((1.0 - self.tokens) / self.qps);
            std::thread::sleep(wait);
            let now = Instant::now();
            self.tokens += now.duration_since(self.last).as_secs_f64() * self.qps;
            self.last = now;
        }
        self.tokens -= 1.0;
    }
}

impl Backend for BufferedBackend {
    fn process_events(&self, events: &[Event]) -> bool {
        let Ok(guard) = self.sender.read() else {
            return false;
        };
        let Some(tx) = guard.as_ref() else {
            handle_plugin_error(PLUGIN_NAME, &"audit backend shut down", events);
            return false;
        };
        for (i, event) in events.iter().enumerate() {
            match tx.try_send(Box::new(event.clone())) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    // Upstream reports success: the events are dropped, the request goes on.
                    handle_plugin_error(PLUGIN_NAME, &"audit buffer queue blocked", &events[i..]);
                    return true;
                }
                Err(TrySendError::Disconnected(_)) => {
                    handle_plugin_error(PLUGIN_NAME, &"audit backend shut down", &events[i..]);
                    return false;
                }
            }
        }
        true
    }

    fn run(&self) -> Result<(), AuditError> {
        self.start_writer()?;
        self.inner.run()
    }

    fn shutdown(&self) -> ShutdownFuture<'_> {
        Box::pin(async move {
            // Dropping the only sender lets the writer drain the queue and stop.
            if let Ok(mut sender) = self.sender.write() {
                sender.take();
            }
            // A backend that never ran still writes what it accepted.
            if let Err(e) = self.start_writer() {
                tracing::error!("{e}");
                return;
            }
            let mut done = self.done.clone();
            let _ = done.wait_for(|d| *d).await;
            let tasks = self
                .in_flight
                .lock()
                .map(|mut t| std::mem::take(&mut *t))
                .unwrap_or_default();
            for task in tasks {
                let _ = task.await;
            }
            self.inner.shutdown().await;
        })
    }

    fn name(&self) -> String {
        format!("{PLUGIN_NAME}<{}>", self.inner.name())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::audit::level::{Level, Stage};
    use crate::audit::log::LogBackend;
    use crate::audit::rotate::RotationConfig;

    /// A backend that records events in memory.
    #[derive(Debug, Default)]
    pub(crate) struct MemoryBackend {
        pub(crate) events: Mutex<Vec<Event>>,
        pub(crate) batches: Mutex<Vec<usize>>,
    }

    impl MemoryBackend {
        pub(crate) fn events(&self) -> Vec<Event> {
            self.events.lock().unwrap().clone()
        }
    }

    impl Backend for MemoryBackend {
        fn process_events(&self, events: &[Event]) -> bool {
            self.events.lock().unwrap().extend_from_slice(events);
            self.batches.lock().unwrap().push(events.len());
            true
        }
        fn run(&self) -> Result<(), AuditError> {
            Ok(())
        }
        fn shutdown(&self) -> ShutdownFuture<'_> {
            Box::pin(async {})
        }
        fn name(&self) -> String {
            "memory".into()
        }
    }

    fn config(buffer_size: usize, max_batch_size: usize, max_batch_wait: Duration) -> BatchConfig {
        BatchConfig {
            buffer_size,
            max_batch_size,
            max_batch_wait,
            ..BatchConfig::log_defaults()
        }
    }

    pub(crate) fn event(id: usize) -> Event {
        let parts = http::Request::builder()
            .uri("/healthz")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        let attrs = crate::audit::policy::AuditAttributes::from_parts(&parts);
        let mut ev = Event::from_request(
            &parts,
            &attrs,
            Level::Metadata,
            &format!("id-{id}"),
            std::time::SystemTime::now(),
        );
        ev.stage = Stage::ResponseComplete;
        ev
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutdown_flushes_everything_to_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let log = LogBackend::new(
            path.to_str().unwrap(),
            crate::audit::log::LogFormat::Json,
            RotationConfig::default(),
        )
        .unwrap();
        let buffered = BufferedBackend::new(Arc::new(log), config(1000, 7, Duration::ZERO));
        buffered.run().unwrap();
        for i in 0..500 {
            assert!(buffered.process_events(&[event(i)]));
        }
        buffered.shutdown().await;
        let text = std::fs::read_to_string(&path).unwrap();
        let ids: Vec<String> = text
            .lines()
            .map(|l| serde_json::from_str::<Event>(l).unwrap().audit_id)
            .collect();
        assert_eq!(ids, (0..500).map(|i| format!("id-{i}")).collect::<Vec<_>>());
        // After shutdown nothing is accepted any more.
        assert!(!buffered.process_events(&[event(0)]));
    }

    #[tokio::test]
    async fn shutdown_without_run_still_writes() {
        let memory = Arc::new(MemoryBackend::default());
        let buffered = BufferedBackend::new(memory.clone(), config(10, 3, Duration::ZERO));
        for i in 0..5 {
            buffered.process_events(&[event(i)]);
        }
        buffered.shutdown().await;
        assert_eq!(memory.events().len(), 5);
    }

    #[tokio::test]
    async fn full_queue_drops_without_blocking() {
        let memory = Arc::new(MemoryBackend::default());
        let buffered = BufferedBackend::new(memory.clone(), config(2, 3, Duration::ZERO));
        let before = crate::audit::metrics::errors(PLUGIN_NAME);
        for i in 0..5 {
            assert!(buffered.process_events(&[event(i)]));
        }
        assert!(crate::audit::metrics::errors(PLUGIN_NAME) >= before + 3.0);
        buffered.shutdown().await;
        assert_eq!(memory.events().len(), 2);
    }

    /// Polls `check` every 10 ms until it holds or 10 s pass.
    async fn wait_until(what: &str, check: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !check() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_full_batch_is_sent_at_once_and_a_partial_one_after_the_max_wait() {
        let memory = Arc::new(MemoryBackend::default());
        let buffered =
            BufferedBackend::new(memory.clone(), config(100, 3, Duration::from_millis(300)));
        buffered.run().unwrap();
        let started = Instant::now();
        for i in 0..3 {
            buffered.process_events(&[event(i)]);
        }
        wait_until("the full batch", || memory.events().len() == 3).await;
        assert!(
            started.elapsed() < Duration::from_millis(300),
            "sent without waiting"
        );
        assert_eq!(*memory.batches.lock().unwrap(), [3]);

        let started = Instant::now();
        buffered.process_events(&[event(3)]);
        wait_until("the partial batch", || memory.events().len() == 4).await;
        assert!(
            started.elapsed() >= Duration::from_millis(100),
            "held for the max wait"
        );
        assert_eq!(*memory.batches.lock().unwrap(), [3, 1]);
        buffered.shutdown().await;
    }

    #[test]
    fn the_throttle_spaces_batches_after_the_burst() {
        let mut bucket = TokenBucket::new(Throttle {
            qps: 20.0,
            burst: 2,
        });
        let started = Instant::now();
        bucket.accept();
        bucket.accept();
        assert!(
            started.elapsed() < Duration::from_millis(40),
            "the burst is free"
        );
        bucket.accept();
        bucket.accept();
        assert!(
            started.elapsed() >= Duration::from_millis(90),
            "two more tokens take 2 × 50 ms: {:?}",
            started.elapsed()
        );
    }

    /// A backend that sends in tasks, each taking a while.
    #[derive(Debug)]
    struct SlowAsync {
        memory: Arc<MemoryBackend>,
        runtime: tokio::runtime::Handle,
    }

    impl Backend for SlowAsync {
        fn process_events(&self, _: &[Event]) -> bool {
            panic!("an asynchronous delegate is not called in turn")
        }
        fn spawn_events(&self, events: Vec<Event>) -> Result<JoinHandle<bool>, Vec<Event>> {
            let memory = self.memory.clone();
            Ok(self.runtime.spawn(async move {
                tokio::time::sleep(Duration::from_millis(200)).await;
                memory.process_events(&events)
            }))
        }
        fn run(&self) -> Result<(), AuditError> {
            Ok(())
        }
        fn shutdown(&self) -> ShutdownFuture<'_> {
            Box::pin(async {})
        }
        fn name(&self) -> String {
            "slow".into()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn asynchronous_batches_overlap_and_shutdown_waits_for_them() {
        let memory = Arc::new(MemoryBackend::default());
        let slow = SlowAsync {
            memory: memory.clone(),
            runtime: tokio::runtime::Handle::current(),
        };
        let buffered = BufferedBackend::new(
            Arc::new(slow),
            BatchConfig {
                async_delegate: true,
                ..config(100, 2, Duration::from_millis(20))
            },
        );
        buffered.run().unwrap();
        let started = Instant::now();
        for i in 0..10 {
            buffered.process_events(&[event(i)]);
        }
        buffered.shutdown().await;
        assert_eq!(memory.events().len(), 10, "shutdown waited for every batch");
        assert!(
            started.elapsed() < Duration::from_millis(900),
            "five 200 ms batches ran concurrently: {:?}",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn events_after_shutdown_are_refused_and_counted() {
        let memory = Arc::new(MemoryBackend::default());
        let buffered = BufferedBackend::new(memory.clone(), config(10, 1, Duration::ZERO));
        buffered.shutdown().await;
        let before = crate::audit::metrics::errors(PLUGIN_NAME);
        assert!(!buffered.process_events(&[event(0), event(1)]));
        assert!(crate::audit::metrics::errors(PLUGIN_NAME) >= before + 2.0);
    }
}
