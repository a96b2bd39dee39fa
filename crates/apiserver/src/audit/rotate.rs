//! A size-rotated log file with lumberjack's semantics (the writer upstream uses for
//! `--audit-log-path`): when a write would grow the file past the maximum size the file is
//! renamed to `<name>-<UTC time>.<ext>` and a new one is started; after each rotation, backups
//! beyond the maximum count or older than the maximum age are deleted, and with `compress`
//! (`--audit-log-compress`) the remaining ones are gzipped to `<backup>.gz` (same mode, the
//! original removed) on a background thread, as lumberjack's mill goroutine does.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::time::{Duration, SystemTime};

/// lumberjack's default maximum size (100 MB) when none is configured.
pub const DEFAULT_MAX_SIZE_MB: u64 = 100;

/// The time layout lumberjack puts in backup names (`2006-01-02T15-04-05.000`).
const BACKUP_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S%.3f";

/// The suffix of compressed backups.
const COMPRESS_SUFFIX: &str = ".gz";

/// Rotation limits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RotationConfig {
    /// Maximum file size in bytes; 0 means [`DEFAULT_MAX_SIZE_MB`] megabytes.
    pub max_size_bytes: u64,
    /// Backups kept; 0 keeps all (subject to `max_age_days`).
    pub max_backups: usize,
    /// Backups older than this many days are deleted; 0 keeps them regardless of age.
    pub max_age_days: u64,
    /// Gzip backups.
    pub compress: bool,
}

impl RotationConfig {
    /// Limits from the `--audit-log-maxsize` (MB), `--audit-log-maxbackup`,
    /// `--audit-log-maxage` (days) and `--audit-log-compress` flags.
    pub fn from_flags(
        max_size_mb: u64,
        max_backups: usize,
        max_age_days: u64,
        compress: bool,
    ) -> Self {
        RotationConfig {
            max_size_bytes: max_size_mb * 1024 * 1024,
            max_backups,
            max_age_days,
            compress,
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
    /// Wakes the compressing thread (started on first need).
    compressor: Option<SyncSender<()>>,
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
            compressor: None,
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
        self.mill();
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
        self.mill();
        Ok(())
    }

    /// Prunes backups now and, with compression on, has the compressing thread gzip the
    /// remaining plain ones (lumberjack's `mill`).
    fn mill(&mut self) {
        self.prune_backups();
        if !self.config.compress {
            return;
        }
        if self.compressor.is_none() {
            let (tx, rx) = std::sync::mpsc::sync_channel::<()>(1);
            let file = RotatingFile::new(self.path.clone(), self.config);
            let spawned = std::thread::Builder::new()
                .name("audit-log-compress".into())
                .spawn(move || {
                    while rx.recv().is_ok() {
                        file.compress_backups();
                    }
                });
            match spawned {
                Ok(_) => self.compressor = Some(tx),
                Err(e) => {
                    tracing::error!("failed to start compressing audit log backups: {e}");
                    return;
                }
            }
        }
        if let Some(tx) = &self.compressor
            && let Err(TrySendError::Disconnected(_)) = tx.try_send(())
        {
            self.compressor = None;
        }
    }

    /// Gzips every plain backup to `<backup>.gz` with the backup's mode, then removes it.
    fn compress_backups(&self) {
        for backup in self.backups() {
            for path in backup.paths {
                if path.extension().is_some_and(|e| e == "gz") {
                    continue;
                }
                if let Err(e) = compress_file(&path) {
                    tracing::error!("failed to compress audit log {}: {e}", path.display());
                }
            }
        }
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

    /// The backups in the directory, newest first; a backup being compressed has both its
    /// plain and its `.gz` file.
    pub fn backups(&self) -> Vec<Backup> {
        let (prefix, ext) = self.prefix_and_ext();
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Vec::new();
        };
        let mut backups: Vec<Backup> = Vec::new();
        for entry in entries.filter_map(Result::ok) {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(rest) = name.strip_prefix(&prefix) else {
                continue;
            };
            let rest = rest.strip_suffix(COMPRESS_SUFFIX).unwrap_or(rest);
            let Some(time) = rest.strip_suffix(&ext).and_then(parse_backup_time) else {
                continue;
            };
            match backups.iter_mut().find(|b| b.time == time) {
                Some(backup) => backup.paths.push(entry.path()),
                None => backups.push(Backup {
                    paths: vec![entry.path()],
                    time,
                }),
            }
        }
        backups.sort_by_key(|b| std::cmp::Reverse(b.time));
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
                remove.extend(backups.into_iter().filter(|b| b.time < cutoff));
            }
        }
        for path in remove.into_iter().flat_map(|b| b.paths) {
            if let Err(e) = std::fs::remove_file(&path)
                && e.kind() != io::ErrorKind::NotFound
            {
                tracing::warn!("failed to remove old audit log {}: {e}", path.display());
            }
        }
    }
}

/// One rotated-away log file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Backup {
    /// Its file, or its plain and `.gz` files while it is being compressed.
    pub paths: Vec<PathBuf>,
    /// The time in its name.
    pub time: SystemTime,
}

/// Gzips `path` to `path.gz` with the same mode and removes `path`; a half-written `.gz` is
/// removed on failure.
fn compress_file(path: &Path) -> io::Result<()> {
    let mut gz_name = path.as_os_str().to_os_string();
    gz_name.push(COMPRESS_SUFFIX);
    let gz_path = PathBuf::from(gz_name);
    let result = (|| {
        let mut source = File::open(path)?;
        let mut options = OpenOptions::new();
        options.create(true).write(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
            options.mode(source.metadata()?.permissions().mode() & 0o7777);
        }
        let target = options.open(&gz_path)?;
        let mut encoder = flate2::write::GzEncoder::new(target, flate2::Compression::default());
        io::copy(&mut source, &mut encoder)?;
        encoder.finish()?.sync_all()
    })();
    match result {
        Ok(()) => std::fs::remove_file(path),
        Err(e) => {
            let _ = std::fs::remove_file(&gz_path);
            Err(e)
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
            ..Default::default()
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
        for backup in &backups {
            assert_eq!(
                std::fs::read_to_string(&backup.paths[0]).unwrap(),
                line.repeat(2)
            );
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
                max_age_days: 1,
                ..Default::default()
            },
        );
        f.write_all(b"new\n").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "old\nnew\n");
        assert!(!stale.exists());
        assert!(unrelated.exists());
    }

    #[test]
    fn compressed_backups_are_gzipped_pruned_and_keep_their_mode() {
        use std::io::Read;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let config = RotationConfig {
            max_size_bytes: 100,
            max_backups: 2,
            compress: true,
            ..Default::default()
        };
        let mut f = RotatingFile::new(&path, config);
        f.open().unwrap();
        let line = format!("{}\n", "z".repeat(39));
        for _ in 0..8 {
            f.write_all(line.as_bytes()).unwrap();
        }
        f.flush().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let names = loop {
            let mut names: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            let gz = names.iter().filter(|n| n.ends_with(".log.gz")).count();
            if gz == 2 && names.len() == 3 {
                break names;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "not compressed: {names:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(names[2], "audit.log");
        for name in &names[..2] {
            let file = dir.path().join(name);
            let mut text = String::new();
            flate2::read::GzDecoder::new(File::open(&file).unwrap())
                .read_to_string(&mut text)
                .unwrap();
            assert_eq!(text, line.repeat(2));
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&file).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o600, "{name}");
            }
        }
        assert_eq!(f.backups().len(), 2);
    }
}
