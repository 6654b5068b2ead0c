//! Finding, downloading, checking and reading the English–French corpus.

use std::fs;
use std::io::{Read, Seek};
use std::path::{Path, PathBuf};

use sha1::{Digest, Sha1};

use crate::files::write_atomic;

use super::source::*;

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> DataError + '_ {
    move |error| DataError::Io {
        path: path.to_owned(),
        error,
    }
}

/// The per-user cache folder the corpus is kept in after a download.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// assert!(cache_dir().ends_with("d2l-attention/fra-eng"));
/// ```
pub fn cache_dir() -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("d2l-attention")
        .join("fra-eng")
}

/// The corpus text: [`locate_fra_eng`] with `explicit` (or else the path
/// in [`DATA_DIR_ENV`]), the user cache folder and d2l's download, then
/// [`read_corpus`].
///
/// # Errors
/// See [`locate_fra_eng`] and [`read_corpus`].
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// // A folder holding a fra.txt, as D2L_DATA_DIR may name.
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("fra.txt"), "Go.\tVa !\n").unwrap();
/// assert_eq!(load_fra_eng(Some(dir.path())).unwrap(), "Go.\tVa !\n");
/// ```
pub fn load_fra_eng(explicit: Option<&Path>) -> Result<String, DataError> {
    read_corpus(&locate(explicit)?)
}

/// [`locate_fra_eng`] with `explicit` or else [`DATA_DIR_ENV`], the user
/// cache folder and d2l's download.
pub(super) fn locate(explicit: Option<&Path>) -> Result<PathBuf, DataError> {
    let from_env = std::env::var_os(DATA_DIR_ENV).map(PathBuf::from);
    locate_fra_eng(explicit.or(from_env.as_deref()), &cache_dir(), FRA_ENG)
}

/// Finds `fra.txt`, in this order: `explicit`, a folder holding `fra.txt`
/// or `fra-eng.zip`, or one of those files; then
/// the cache folder `cache`; then a download of `source` (normally
/// [`FRA_ENG`]) into `cache`. A zip is checked against `source.sha1` and
/// its `fra.txt` extracted into `cache`. Returns the path of `fra.txt`.
///
/// # Errors
/// [`DataError::NotFound`] telling where to put the file when nothing was
/// found and the download failed (e.g. offline); [`DataError::Checksum`],
/// [`DataError::BadZip`], [`DataError::MissingMember`] or
/// [`DataError::UnsafeMember`] for a damaged zip; [`DataError::MissingPath`]
/// when `explicit` does not exist (a typo is not papered over by the
/// cache). Files are written
/// atomically and a download is kept only once verified, so nothing
/// half-written is ever reused.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// // A folder holding a fra.txt, as D2L_DATA_DIR may name.
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("fra.txt"), "Go.\tVa !\n").unwrap();
/// let cache = tempfile::tempdir().unwrap();
/// let found = locate_fra_eng(Some(dir.path()), cache.path(), FRA_ENG).unwrap();
/// assert_eq!(found, dir.path().join("fra.txt"));
/// ```
pub fn locate_fra_eng(
    explicit: Option<&Path>,
    cache: &Path,
    source: Source,
) -> Result<PathBuf, DataError> {
    if let Some(path) = explicit.filter(|p| !p.exists()) {
        return Err(DataError::MissingPath {
            path: path.to_owned(),
        });
    }
    let mut tried = Vec::new();
    for place in explicit
        .map(Path::to_owned)
        .into_iter()
        .chain([cache.to_owned()])
    {
        let candidates = if place.is_dir() {
            vec![place.join("fra.txt"), place.join("fra-eng.zip")]
        } else {
            vec![place.clone()]
        };
        for candidate in candidates {
            if candidate.is_file() {
                return if candidate.extension().is_some_and(|e| e == "zip") {
                    extract_fra_eng(&candidate, source.sha1, cache)
                } else {
                    Ok(candidate)
                };
            }
            tried.push(candidate);
        }
    }
    let not_found = |reason: String| DataError::NotFound {
        tried: tried.clone(),
        cache: cache.to_owned(),
        url: source.url,
        reason,
    };
    let bytes = download(source.url).map_err(not_found)?;
    let zip = cache.join("fra-eng.zip");
    check_sha1(&bytes, source.sha1, &zip)?;
    fs::create_dir_all(cache).map_err(io_err(cache))?;
    write_atomic(&zip, &bytes).map_err(|e| DataError::Io {
        path: e.path,
        error: e.error,
    })?;
    extract_fra_eng(&zip, source.sha1, cache)
}

/// Downloads `url` into memory, with a progress bar on stderr.
fn download(url: &str) -> Result<Vec<u8>, String> {
    let response = ureq::get(url).call().map_err(|e| e.to_string())?;
    let length = response
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok()?.parse().ok());
    let bar = indicatif::ProgressBar::new(length.unwrap_or(0))
        .with_message(format!("downloading {url}"));
    let mut bytes = Vec::new();
    bar.wrap_read(response.into_body().into_reader())
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    Ok(bytes)
}

fn check_sha1(
    bytes: &[u8],
    expected: &'static str,
    path: &Path,
) -> Result<(), DataError> {
    let got = format!("{:x}", Sha1::digest(bytes));
    if got != expected {
        return Err(DataError::Checksum {
            path: path.to_owned(),
            got,
            expected,
        });
    }
    Ok(())
}

/// Checks `zip` against `sha1` and writes its `fra.txt` to
/// `dest_dir/fra.txt` atomically; returns that path.
///
/// # Errors
/// See [`locate_fra_eng`].
///
/// # Examples
/// ```
/// use std::io::Write;
/// use d2l_attention::machine_translation::*;
/// use sha1::{Digest, Sha1};
///
/// // A zip holding fra-eng/fra.txt, and its SHA-1.
/// let dir = tempfile::tempdir().unwrap();
/// let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
/// let stored = zip::write::SimpleFileOptions::default()
///     .compression_method(zip::CompressionMethod::Stored);
/// zip.start_file(FRA_ENG_MEMBER, stored).unwrap();
/// zip.write_all(b"Go.\tVa !\n").unwrap();
/// let bytes = zip.finish().unwrap().into_inner();
/// std::fs::write(dir.path().join("fra-eng.zip"), &bytes).unwrap();
/// let sha1: &'static str = format!("{:x}", Sha1::digest(&bytes)).leak();
/// let fra = extract_fra_eng(&dir.path().join("fra-eng.zip"), sha1, dir.path()).unwrap();
/// assert_eq!(std::fs::read_to_string(fra).unwrap(), "Go.\tVa !\n");
/// // A wrong checksum is refused.
/// let bad = "0000000000000000000000000000000000000000";
/// assert!(extract_fra_eng(&dir.path().join("fra-eng.zip"), bad, dir.path()).is_err());
/// ```
pub fn extract_fra_eng(
    zip: &Path,
    sha1: &'static str,
    dest_dir: &Path,
) -> Result<PathBuf, DataError> {
    let bytes = fs::read(zip).map_err(io_err(zip))?;
    check_sha1(&bytes, sha1, zip)?;
    let text = read_member(std::io::Cursor::new(bytes), zip)?;
    fs::create_dir_all(dest_dir).map_err(io_err(dest_dir))?;
    let dest = dest_dir.join("fra.txt");
    write_atomic(&dest, &text).map_err(|e| DataError::Io {
        path: e.path,
        error: e.error,
    })?;
    Ok(dest)
}

/// Reads [`FRA_ENG_MEMBER`] from a zip archive, refusing archives with a
/// member that would escape its folder.
fn read_member(
    reader: impl Read + Seek,
    path: &Path,
) -> Result<Vec<u8>, DataError> {
    let bad_zip = |e: zip::result::ZipError| DataError::BadZip {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    let mut archive = zip::ZipArchive::new(reader).map_err(bad_zip)?;
    for i in 0..archive.len() {
        let member = archive.by_index(i).map_err(bad_zip)?;
        if member.enclosed_name().is_none() {
            return Err(DataError::UnsafeMember {
                path: path.to_owned(),
                member: member
                    .name()
                    .map_or_else(|_| "?".into(), |n| n.into_owned()),
            });
        }
    }
    let mut member = archive.by_name(FRA_ENG_MEMBER).map_err(|e| match e {
        zip::result::ZipError::FileNotFound => DataError::MissingMember {
            path: path.to_owned(),
        },
        e => bad_zip(e),
    })?;
    let mut text = Vec::new();
    member
        .read_to_end(&mut text)
        .map_err(|e| DataError::BadZip {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
    Ok(text)
}

/// Reads a corpus file as UTF-8 text, with Windows line endings (`\r\n`)
/// turned into `\n` and a leading byte-order mark dropped, as a copy
/// edited on Windows may have them (a `fra.txt` supplied directly is not
/// checked against the zip's SHA-1).
///
/// # Errors
/// [`DataError::NotUtf8`] with the offset of the first bad byte, or
/// [`DataError::Io`].
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("fra.txt");
/// std::fs::write(&path, "Go.\tVa !\r\n").unwrap();
/// assert_eq!(read_corpus(&path).unwrap(), "Go.\tVa !\n");
/// ```
pub fn read_corpus(path: &Path) -> Result<String, DataError> {
    let bytes = fs::read(path).map_err(io_err(path))?;
    let text = String::from_utf8(bytes).map_err(|e| DataError::NotUtf8 {
        path: path.to_owned(),
        offset: e.utf8_error().valid_up_to(),
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    Ok(text.replace("\r\n", "\n"))
}
