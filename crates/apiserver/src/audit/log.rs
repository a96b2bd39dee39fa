//! The log backend (`--audit-log-path`): one JSON event per line, to a rotated file or to
//! stdout (`-`). Writes are synchronous; wrap it in [`super::buffered::BufferedBackend`] so
//! request paths never wait for the disk.

use std::io::Write;
use std::sync::Mutex;

use super::AuditError;
use super::backend::{Backend, ShutdownFuture};
use super::event::Event;
use super::rotate::{RotatingFile, RotationConfig};

/// Where the log backend writes.
#[derive(Debug)]
enum Sink {
    Stdout,
    File(RotatingFile),
}

/// Writes events as JSON lines.
#[derive(Debug)]
pub struct LogBackend {
    target: String,
    sink: Mutex<Sink>,
}

impl LogBackend {
    /// A backend writing to `path` (`-` = stdout) with the given rotation. The file is opened
    /// now, so a bad path fails at startup as upstream's does.
    pub fn new(path: &str, rotation: RotationConfig) -> Result<Self, AuditError> {
        let sink = if path == "-" {
            Sink::Stdout
        } else {
            let mut file = RotatingFile::new(path, rotation);
            file.open().map_err(|source| AuditError::Log {
                path: path.to_string(),
                source,
            })?;
            Sink::File(file)
        };
        Ok(LogBackend {
            target: path.to_string(),
            sink: Mutex::new(sink),
        })
    }

    fn write_events(&self, events: &[Event]) -> std::io::Result<()> {
        let mut text = String::new();
        for event in events {
            text.push_str(&event.to_json().map_err(std::io::Error::other)?);
            text.push('\n');
        }
        let mut sink = self
            .sink
            .lock()
            .map_err(|_| std::io::Error::other("audit log writer poisoned"))?;
        match &mut *sink {
            Sink::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())?;
                out.flush()
            }
            // One write per event: rotation happens between lines, never inside one.
            Sink::File(file) => {
                for line in text.split_inclusive('\n') {
                    file.write_all(line.as_bytes())?;
                }
                file.flush()
            }
        }
    }
}

impl Backend for LogBackend {
    fn process_events(&self, events: &[Event]) -> bool {
        match self.write_events(events) {
            Ok(()) => true,
            Err(e) => {
                tracing::error!(
                    "Error in audit plugin 'log' affecting {} audit events: {e}",
                    events.len()
                );
                false
            }
        }
    }

    fn run(&self) -> Result<(), AuditError> {
        Ok(())
    }

    fn shutdown(&self) -> ShutdownFuture<'_> {
        Box::pin(async {})
    }

    fn name(&self) -> String {
        format!("log({})", self.target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::audit::buffered::tests::event;

    #[test]
    fn writes_json_lines_and_rotates() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let line_len = event(0).to_json().unwrap().len() as u64 + 1;
        let backend = LogBackend::new(
            path.to_str().unwrap(),
            RotationConfig {
                max_size_bytes: line_len * 2,
                max_backups: 2,
                max_age_days: 0,
            },
        )
        .unwrap();
        for i in 0..10 {
            assert!(backend.process_events(&[event(i)]));
        }
        let current = std::fs::read_to_string(&path).unwrap();
        let ids: Vec<String> = current
            .lines()
            .map(|l| serde_json::from_str::<Event>(l).unwrap().audit_id)
            .collect();
        assert_eq!(ids, ["id-8", "id-9"]);
        let mut files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(files.len(), 3, "{files:?}");
        for name in &files[..2] {
            assert!(
                name.starts_with("audit-") && name.ends_with(".log"),
                "{name}"
            );
            let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
            assert_eq!(text.lines().count(), 2);
        }
    }

    #[test]
    fn bad_path_fails_at_startup() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        let err = LogBackend::new(
            file.join("audit.log").to_str().unwrap(),
            RotationConfig::default(),
        )
        .unwrap_err();
        assert!(matches!(err, AuditError::Log { .. }), "{err}");
    }
}
