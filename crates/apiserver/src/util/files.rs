//! Files the server owns: private directories and atomically replaced files, so that secrets
//! are never readable by others and a reader (another process, or this one after a crash)
//! never sees a half-written file.

use std::io::Write;
use std::path::{Path, PathBuf};

/// Creates `dir` and its missing parents with mode 0700 (on Unix); an existing directory is
/// left as it is.
pub fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(dir)
}

/// Replaces `path` with `data` atomically: the bytes go to a temporary file in the same
/// directory with `mode` (on Unix), which is synced and renamed over `path`; then the
/// directory is synced so the rename survives a crash.
pub fn write_atomically(path: &Path, data: &[u8], mode: u32) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(mode);
        }
        let mut file = options.open(&tmp)?;
        #[cfg(unix)]
        {
            // `mode` only applies to a new file, and the umask narrows it.
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        #[cfg(not(unix))]
        let _ = mode;
        file.write_all(data)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        // Make the rename durable; not every platform can open a directory.
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn private_dirs_are_0700_and_existing_ones_are_kept() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        create_private_dir(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&root.path().join("a")), 0o700);
        create_private_dir(&dir).unwrap();
    }

    #[test]
    fn atomic_writes_replace_the_whole_file_with_the_mode_and_leave_no_temporary() {
        let root = tempfile::tempdir().unwrap();
        let path = root.path().join("admin.kubeconfig");
        std::fs::write(&path, "old content that is longer").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        write_atomically(&path, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(mode(&path), 0o600);
        let names: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("admin.kubeconfig")]);
        write_atomically(&root.path().join("ca.crt"), b"pem", 0o644).unwrap();
        assert_eq!(mode(&root.path().join("ca.crt")), 0o644);
    }
}
