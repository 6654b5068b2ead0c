//! Writing files so that a reader never sees half of one.

use std::io::Write;
use std::path::{Path, PathBuf};

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
/// the temporary file is removed.
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
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    let err = |error| WriteError {
        path: path.to_owned(),
        error,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(err)?;
    tmp.write_all(bytes).map_err(err)?;
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(path).map_err(|e| err(e.error))?;
    Ok(())
}
