//! The log backend (`--audit-log-path`): one event per line, as JSON or in the legacy text
//! format (`--audit-log-format`), to a rotated file or to stdout (`-`). Writes are
//! synchronous (upstream's default `blocking` mode); `batch` mode wraps it in
//! [`super::buffered::BufferedBackend`].

use std::io::Write;
use std::sync::Mutex;

use super::AuditError;
use super::backend::{Backend, ShutdownFuture};
use super::event::Event;
use super::format::event_string;
use super::metrics::handle_plugin_error;
use super::rotate::{RotatingFile, RotationConfig};

/// The plugin name in flags, error metrics and logs.
pub const PLUGIN_NAME: &str = "log";

/// How events are written (`--audit-log-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// One JSON-encoded event per line.
    #[default]
    Json,
    /// Upstream's one-line text form ([`event_string`]).
    Legacy,
}

/// The formats upstream knows, in its order.
pub const ALLOWED_FORMATS: [&str; 2] = ["legacy", "json"];

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "json" => Ok(LogFormat::Json),
            "legacy" => Ok(LogFormat::Legacy),
            _ => Err(format!(
                "invalid audit log format {s}, allowed formats are {:?}",
                ALLOWED_FORMATS.join(",")
            )),
        }
    }
}

/// Where the log backend writes.
#[derive(Debug)]
enum Sink {
    Stdout,
    File(RotatingFile),
}

/// Writes events as JSON lines.
#[derive(Debug)]
pub struct LogBackend {
    path: String,
    format: LogFormat,
    sink: Mutex<Sink>,
}

impl LogBackend {
    /// A backend writing to `path` (`-` = stdout) in `format` with the given rotation. The
    /// file is opened now, so a bad path fails at startup as upstream's does.
    pub fn new(
        path: &str,
        format: LogFormat,
        rotation: RotationConfig,
    ) -> Result<Self, AuditError> {
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
            path: path.to_string(),
            format,
            sink: Mutex::new(sink),
        })
    }

    fn line(&self, event: &Event) -> Result<String, serde_json::Error> {
        let mut line = match self.format {
            LogFormat::Json => event.to_json()?,
            LogFormat::Legacy => event_string(event),
        };
        line.push('\n');
        Ok(line)
    }

    fn write_events(&self, events: &[Event]) -> std::io::Result<()> {
        let mut text = String::new();
        for event in events {
            text.push_str(&self.line(event).map_err(std::io::Error::other)?);
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

/// A failed write as Go's `*os.PathError` prints it (`write /var/log/audit.log: no space
/// left on device`).
fn go_write_error(path: &str, err: &std::io::Error) -> String {
    let path = if path == "-" { "/dev/stdout" } else { path };
    let text = err.to_string();
    let text = match err.raw_os_error() {
        Some(code) => text
            .strip_suffix(&format!(" (os error {code})"))
            .unwrap_or(&text)
            .to_string(),
        None => return text,
    };
    let mut chars = text.chars();
    let lowered: String = match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text,
    };
    format!("write {path}: {lowered}")
}

impl Backend for LogBackend {
    fn process_events(&self, events: &[Event]) -> bool {
        match self.write_events(events) {
            Ok(()) => true,
            Err(e) => {
                handle_plugin_error(PLUGIN_NAME, &go_write_error(&self.path, &e), events);
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
        PLUGIN_NAME.to_string()
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
            LogFormat::Json,
            RotationConfig {
                max_size_bytes: line_len * 2,
                max_backups: 2,
                ..Default::default()
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
            LogFormat::Json,
            RotationConfig::default(),
        )
        .unwrap_err();
        assert!(matches!(err, AuditError::Log { .. }), "{err}");
    }

    #[test]
    fn legacy_format_writes_one_text_line_per_event() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let backend = LogBackend::new(
            path.to_str().unwrap(),
            LogFormat::Legacy,
            RotationConfig::default(),
        )
        .unwrap();
        let events = [event(1), event(2)];
        assert!(backend.process_events(&events));
        let text = std::fs::read_to_string(&path).unwrap();
        let want: Vec<String> = events.iter().map(event_string).collect();
        assert_eq!(text.lines().collect::<Vec<_>>(), want);
        assert!(
            want[1].contains(" AUDIT: id=\"id-2\" stage=\"ResponseComplete\""),
            "{}",
            want[1]
        );
    }

    #[test]
    fn write_errors_read_like_go() {
        let full = std::io::Error::from_raw_os_error(28);
        assert_eq!(
            go_write_error("/dev/full", &full),
            "write /dev/full: no space left on device"
        );
        assert_eq!(
            go_write_error("-", &std::io::Error::from_raw_os_error(32)),
            "write /dev/stdout: broken pipe"
        );
    }

    #[test]
    fn formats_parse_with_upstream_message() {
        assert_eq!("json".parse::<LogFormat>(), Ok(LogFormat::Json));
        assert_eq!("legacy".parse::<LogFormat>(), Ok(LogFormat::Legacy));
        assert_eq!(
            "yaml".parse::<LogFormat>().unwrap_err(),
            r#"invalid audit log format yaml, allowed formats are "legacy,json""#
        );
    }
}
