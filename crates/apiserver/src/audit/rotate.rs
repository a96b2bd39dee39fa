//! A size-rotated log file with lumberjack's semantics (the writer upstream uses for
//! `--audit-log-path`): when a write would grow the file past the maximum size the file is
//! renamed to `<name>-<UTC time>.<ext>` and a new one is started; after each rotation, backups
//! beyond the maximum count or older than the maximum age are deleted.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// lumberjack's default maximum size (100 MB) when none is configured.
pub const DEFAULT_MAX_SIZE_MB: u64 = 100;

/// The time layout lumberjack puts in backup names (`2006-01-02T15-04-05.000`).
const BACKUP_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S%.3f";

/// Rotation limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RotationConfig {
    /// Maximum file size in bytes; 0 means [`DEFAULT_MAX_SIZE_MB`] megabytes.
    pub max_size_bytes: u64,
    /// Backups kept; 0 keeps all (subject to `max_age_days`).
    pub max_backups: usize,
    /// Backups older than this many days are deleted; 0 keeps them regardless of age.
    pub max_age_days: u64,
}

impl RotationConfig {
    /// Limits from the `--audit-log-maxsize` (MB), `--audit-log-maxbackup` and
    /// `--audit-log-maxage` (days) flags.
    pub fn from_flags(max_size_mb: u64, max_backups: usize, max_age_days: u64) -> Self {
        RotationConfig {
            max_size_bytes: max_size_mb * 1024 * 1024,
            max_backups,
            max_age_days,
        }
    }

    fn max_size(&self) -> u64 {
        if self.max_size_bytes == 0 {
            DEFAULT_MAX_SIZE_MB * 1024 * 1024
        } else {
            self.max_size_bytes
        }
    }
}

/// A file that rotates itself by size. Not synchronized: wrap it in a mutex or give it to a
/// single writer.
#[derive(Debug)]
pub struct RotatingFile {
    path: PathBuf,
    config: RotationConfig,
    file: Option<File>,
    size: u64,
}

impl RotatingFile {
    /// A rotating file at `path`; nothing is opened until [`RotatingFile::open`] or the first
    /// write.
    pub fn new(path: impl Into<PathBuf>, config: RotationConfig) -> Self {
        RotatingFile {
            path: path.into(),
            config,
            file: None,
            size: 0,
        }
    }

    /// Opens (creating directories and the file as needed) so problems surface at startup.
    pub fn open(&mut self) -> io::Result<()> {
        self.open_existing_or_new(0)
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn open_existing_or_new(&mut self, write_len: u64) -> io::Result<()> {
        self.prune_backups();
        match std::fs::metadata(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return self.open_new(),
            Err(e) => return Err(e),
            Ok(meta) => {
                if meta.len() + write_len >= self.config.max_size() {
                    return self.rotate();
                }
                match OpenOptions::new().append(true).open(&self.path) {
                    Ok(file) => {
                        self.file = Some(file);
                        self.size = meta.len();
                    }
                    // Like lumberjack: if the existing file can't be appended to, start anew.
                    Err(_) => return self.open_new(),
                }
            }
        }
        Ok(())
    }

    fn open_new(&mut self) -> io::Result<()> {
        if let Some(dir) = self.path.parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir)?;
        }
        if self.path.exists() {
            let backup = self.unused_backup_name(SystemTime::now());
            std::fs::rename(&self.path, &backup)?;
        }
        let mut options = OpenOptions::new();
        options.create(true).write(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        self.file = Some(options.open(&self.path)?);
        self.size = 0;
        Ok(())
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.file = None;
        self.open_new()?;
        self.prune_backups();
        Ok(())
    }

    /// The file name split into the prefix before the timestamp and the extension.
    fn prefix_and_ext(&self) -> (String, String) {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let ext = Path::new(&name)
            .extension()
            .map(|e| format!(".{}", e.to_string_lossy()))
            .unwrap_or_default();
        let prefix = format!("{}-", &name[..name.len() - ext.len()]);
        (prefix, ext)
    }

    fn backup_name(&self, t: SystemTime) -> PathBuf {
        let (prefix, ext) = self.prefix_and_ext();
        let stamp = jiff::Timestamp::try_from(t)
            .map(|ts| ts.strftime(BACKUP_TIME_FORMAT).to_string())
            .unwrap_or_default();
        self.path.with_file_name(format!("{prefix}{stamp}{ext}"))
    }

    /// lumberjack would overwrite a backup made in the same millisecond; we step the time on
    /// instead, so no logged event is lost when rotations come fast.
    fn unused_backup_name(&self, mut t: SystemTime) -> PathBuf {
        loop {
            let candidate = self.backup_name(t);
            if !candidate.exists() {
                return candidate;
            }
            t += Duration::from_millis(1);
        }
    }

    /// The backups in the directory, newest first, with their timestamps.
    pub fn backups(&self) -> Vec<(PathBuf, SystemTime)> {
        let (prefix, ext) = self.prefix_and_ext();
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut backups: Vec<(PathBuf, SystemTime)> = entries
            .filter_map(Result::ok)
            .filter_map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                let stamp = name.strip_prefix(&prefix)?.strip_suffix(&ext)?;
                let time = parse_backup_time(stamp)?;
                Some((entry.path(), time))
            })
            .collect();
        backups.sort_by_key(|b| std::cmp::Reverse(b.1));
        backups
    }

    fn prune_backups(&self) {
        if self.config.max_backups == 0 && self.config.max_age_days == 0 {
            return;
        }
        let mut backups = self.backups();
        let mut remove = Vec::new();
        if self.config.max_backups > 0 && backups.len() > self.config.max_backups {
            remove.extend(backups.split_off(self.config.max_backups));
        }
        if self.config.max_age_days > 0 {
            let max_age = Duration::from_secs(self.config.max_age_days * 24 * 60 * 60);
            if let Some(cutoff) = SystemTime::now().checked_sub(max_age) {
                remove.extend(backups.into_iter().filter(|(_, t)| *t < cutoff));
            }
        }
        for (path, _) in remove {
            if let Err(e) = std::fs::remove_file(&path) {
                tracing::warn!("failed to remove old audit log {}: {e}", path.display());
            }
        }
    }
}

fn parse_backup_time(stamp: &str) -> Option<SystemTime> {
    let dt = jiff::civil::DateTime::strptime(BACKUP_TIME_FORMAT, stamp).ok()?;
    let ts = dt.to_zoned(jiff::tz::TimeZone::UTC).ok()?.timestamp();
    Some(SystemTime::from(ts))
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let len = buf.len() as u64;
        let max = self.config.max_size();
        if len > max {
            return Err(io::Error::other(format!(
                "write length {len} exceeds maximum file size {max}"
            )));
        }
        if self.file.is_none() {
            self.open_existing_or_new(len)?;
        }
        if self.size + len > max {
            self.rotate()?;
        }
        let file = match self.file.as_mut() {
            Some(f) => f,
            None => return Err(io::Error::other("audit log file is not open")),
        };
        let n = file.write(buf)?;
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.file.as_mut() {
            Some(f) => f.flush(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backup_names_round_trip() {
        let f = RotatingFile::new("/var/log/audit.log", RotationConfig::default());
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
        let name = f.backup_name(t);
        assert_eq!(
            name,
            PathBuf::from("/var/log/audit-2023-11-14T22-13-20.123.log")
        );
        assert_eq!(parse_backup_time("2023-11-14T22-13-20.123"), Some(t));
        let f = RotatingFile::new("/var/log/audit", RotationConfig::default());
        assert_eq!(
            f.backup_name(t),
            PathBuf::from("/var/log/audit-2023-11-14T22-13-20.123")
        );
    }

    #[test]
    fn rotates_by_size_and_prunes_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("logs").join("audit.log");
        let config = RotationConfig {
            max_size_bytes: 100,
            max_backups: 2,
            max_age_days: 0,
        };
        let mut f = RotatingFile::new(&path, config);
        f.open().unwrap();
        let line = format!("{}\n", "x".repeat(39)); // 40 bytes: two lines per file
        for _ in 0..10 {
            f.write_all(line.as_bytes()).unwrap();
        }
        f.flush().unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), line.repeat(2));
        let backups = f.backups();
        assert_eq!(backups.len(), 2, "{backups:?}");
        for (backup, _) in &backups {
            assert_eq!(std::fs::read_to_string(backup).unwrap(), line.repeat(2));
        }
        assert!(f.write(&[b'y'; 101]).is_err());
    }

    #[test]
    fn appends_to_existing_and_prunes_by_age() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        std::fs::write(&path, "old\n").unwrap();
        let stale = dir.path().join("audit-2001-01-01T00-00-00.000.log");
        std::fs::write(&stale, "ancient\n").unwrap();
        let unrelated = dir.path().join("other.log");
        std::fs::write(&unrelated, "keep\n").unwrap();
        let mut f = RotatingFile::new(
            &path,
            RotationConfig {
                max_size_bytes: 1024,
                max_backups: 0,
                max_age_days: 1,
            },
        );
        f.write_all(b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\nnew\n");
        assert!(!stale.exists());
        assert!(unrelated.exists());
    }
}
