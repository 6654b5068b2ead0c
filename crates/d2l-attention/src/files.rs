//! Writing files so that a reader never sees half of one.

#[cfg(feature = "native")]
use std::io::Write;
#[cfg(feature = "native")]
use std::path::Path;
use std::path::PathBuf;

/// Why a file could not be written.
///
/// # Examples
/// ```
/// use d2l_attention::files::write_atomic;
///
/// let err = write_atomic("no/such/folder/x.txt".as_ref(), b"x").unwrap_err();
/// assert_eq!(err.path.to_str(), Some("no/such/folder/x.txt"));
/// assert!(err.to_string().starts_with("cannot write `no/such/folder/x.txt`"));
/// ```
#[derive(Debug, thiserror::Error)]
#[error("cannot write `{}`: {error}", path.display())]
pub struct WriteError {
    /// The file that was to be written.
    pub path: PathBuf,
    /// What the operating system said (in the message, so not repeated as
    /// a separate cause).
    pub error: std::io::Error,
}

/// Writes `bytes` to `path` atomically: into a temporary file in the same
/// folder, then renamed over `path`. On error `path` is left as it was and
/// the temporary file is removed. The file ends with the mode a plain write
/// would leave: an existing file keeps its own, a new one gets 0o666 less
/// the umask (usually 0o644), not the temporary file's private 0o600, so
/// that a web server running as another user can serve a rewritten figure;
/// a symbolic link is followed, as a plain write follows it.
///
/// # Errors
/// [`WriteError`] naming `path` when its folder does not exist, is not a
/// folder, or is not writable.
///
/// # Examples
/// ```
/// use d2l_attention::files::write_atomic;
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("out.txt");
/// write_atomic(&path, b"hello").unwrap();
/// assert_eq!(std::fs::read(&path).unwrap(), b"hello");
/// // Only the file itself is left: no temporary file.
/// assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
/// ```
#[cfg(feature = "native")]
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let err = |error| WriteError {
        path: path.to_owned(),
        error,
    };
    // A symbolic link is followed, as a plain write follows it: its target
    // is replaced, not the link.
    let target = std::fs::canonicalize(path).ok();
    let path = target.as_deref().unwrap_or(path);
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    // open(2) applies the umask to this mode, as it does for a plain write.
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666));
    let mut tmp = builder.tempfile_in(dir).map_err(err)?;
    if let Ok(existing) = std::fs::metadata(path) {
        tmp.as_file()
            .set_permissions(existing.permissions())
            .map_err(err)?;
    }
    tmp.write_all(bytes).map_err(err)?;
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}

#[cfg(all(test, unix, feature = "native"))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_new_file_gets_the_mode_of_a_plain_write() {
        let dir = tempfile::tempdir().unwrap();
        let (plain, atomic) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&plain, b"x").unwrap();
        write_atomic(&atomic, b"x").unwrap();
        // 0o644 with the usual umask 022, where the temporary file is 0o600.
        assert_eq!(mode(&atomic), mode(&plain));
    }

    #[test]
    fn a_rewritten_file_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("figure.svg");
        std::fs::write(&path, b"old").unwrap();
        std::fs::set_permissions(&path, PermissionsExt::from_mode(0o640))
            .unwrap();
        write_atomic(&path, b"new").unwrap();
        assert_eq!(
            (mode(&path), std::fs::read(&path).unwrap()),
            (0o640, b"new".to_vec())
        );
    }

    #[test]
    fn a_symbolic_link_is_followed_as_a_plain_write_follows_it() {
        let dir = tempfile::tempdir().unwrap();
        let (target, link) =
            (dir.path().join("target"), dir.path().join("link"));
        std::fs::write(&target, b"old").unwrap();
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read(&target).unwrap(), b"new");
    }
}
