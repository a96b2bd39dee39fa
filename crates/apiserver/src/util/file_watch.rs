//! Notices when a configuration file changes: the file's directory is watched with inotify
//! (so editors' rename-into-place and Kubernetes' `..data` symlink swaps are seen), and the
//! file is re-read every `interval` in any case. Each time its content differs from what
//! was last reported, the new content is sent.

use std::path::{Path, PathBuf};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Sends the content of `path` on the returned channel whenever it changes (not the
/// content it has now, `initial`), until `stop`.
pub fn watch_file_content(
    path: &Path,
    initial: Vec<u8>,
    interval: Duration,
    stop: CancellationToken,
) -> mpsc::Receiver<Vec<u8>> {
    let (out, rx) = mpsc::channel(1);
    let path = path.to_path_buf();
    tokio::spawn(async move { watch(path, initial, interval, stop, out).await });
    rx
}

async fn watch(
    path: PathBuf,
    mut last: Vec<u8>,
    interval: Duration,
    stop: CancellationToken,
    out: mpsc::Sender<Vec<u8>>,
) {
    let (tx, mut events) = mpsc::unbounded_channel::<()>();
    let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if event.is_ok_and(|e| !matches!(e.kind, notify::EventKind::Access(_))) {
            let _ = tx.send(());
        }
    });
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let _watcher = match watcher {
        Ok(mut w) => match w.watch(&dir, RecursiveMode::NonRecursive) {
            Ok(()) => Some(w),
            Err(e) => {
                tracing::warn!(
                    "cannot watch {}: {e}; re-reading periodically",
                    dir.display()
                );
                None
            }
        },
        Err(e) => {
            tracing::warn!("cannot watch files: {e}; re-reading periodically");
            None
        }
    };
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = events.recv() => {
                while events.try_recv().is_ok() {}
            }
            _ = tick.tick() => {}
        }
        let Ok(content) = tokio::fs::read(&path).await else {
            continue;
        };
        if content != last {
            last = content.clone();
            if out.send(content).await.is_err() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn changes_are_reported_once_each() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.yaml");
        std::fs::write(&path, "a").unwrap();
        let stop = CancellationToken::new();
        let mut rx = watch_file_content(
            &path,
            b"a".to_vec(),
            Duration::from_millis(50),
            stop.clone(),
        );
        std::fs::write(&path, "b").unwrap();
        let got = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, b"b");
        let tmp = dir.path().join("tmp");
        std::fs::write(&tmp, "c").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        let got = tokio::time::timeout(Duration::from_secs(30), rx.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(got, b"c");
        stop.cancel();
    }
}
