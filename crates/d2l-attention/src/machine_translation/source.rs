//! Where the English–French corpus comes from, and why it could not be
//! had: what a build without the `native` feature (which cannot download
//! or read files) still names.

use std::path::PathBuf;

/// A downloadable zip and its SHA-1.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// assert!(FRA_ENG.url.ends_with("fra-eng.zip"));
/// assert_eq!(FRA_ENG.sha1.len(), 40);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Source {
    /// Where to download it.
    pub url: &'static str,
    /// Its SHA-1, in hex.
    pub sha1: &'static str,
}

/// d2l's copy of the corpus.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// assert_eq!(FRA_ENG.sha1, "94646ad1522d915e7b0f9296181140edcf86a4f5");
/// ```
pub const FRA_ENG: Source = Source {
    url: "http://d2l-data.s3-accelerate.amazonaws.com/fra-eng.zip",
    sha1: "94646ad1522d915e7b0f9296181140edcf86a4f5",
};
/// The SHA-256 of d2l's `fra.txt` (the member of [`FRA_ENG`]'s zip) as
/// [`read_corpus`] returns it: 167,130 lines ending in `\n`, no byte-order
/// mark.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// assert!(FRA_TXT_SHA256.starts_with("0bb85dba"));
/// ```
pub const FRA_TXT_SHA256: &str =
    "0bb85dbaa1c896844649094d7eaf2e34bee34e84fe362b26ce7e8f2e12aae104";
/// The zip member holding the sentence pairs.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// assert!(FRA_ENG_MEMBER.ends_with("/fra.txt"));
/// ```
pub const FRA_ENG_MEMBER: &str = "fra-eng/fra.txt";
/// The environment variable naming a folder (holding `fra.txt` or
/// `fra-eng.zip`) or one of those files.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// assert_eq!(DATA_DIR_ENV, "D2L_DATA_DIR");
/// ```
pub const DATA_DIR_ENV: &str = "D2L_DATA_DIR";

/// Why the corpus could not be had.
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::*;
///
/// let cache = tempfile::tempdir().unwrap();
/// let typo = std::path::Path::new("no/such/fra-eng");
/// let err = locate_fra_eng(Some(typo), cache.path(), FRA_ENG).unwrap_err();
/// assert!(matches!(err, DataError::MissingPath { .. }));
/// assert!(err.to_string().contains("no/such/fra-eng"));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// Nothing found and no download possible.
    #[error(
        "the English–French corpus was not found (looked in: {}) and could not be downloaded from {url}: {reason}.\n\
         Download fra-eng.zip from {url} (or copy fra.txt) into {}, or set {DATA_DIR_ENV} to the folder that holds it",
        .tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
        .cache.display()
    )]
    NotFound {
        /// The places searched.
        tried: Vec<PathBuf>,
        /// The cache folder a download would have gone to.
        cache: PathBuf,
        /// Where the zip can be downloaded.
        url: &'static str,
        /// Why the download failed.
        reason: String,
    },
    /// The path given for the corpus does not exist.
    #[error("`{}` (the corpus path given, or {DATA_DIR_ENV}) does not exist", .path.display())]
    MissingPath {
        /// The path.
        path: PathBuf,
    },
    /// The corpus has no usable sentence pair.
    #[error(
        "the corpus has {skipped} lines without exactly one tab and no usable pair; is it d2l's fra.txt (English<TAB>French per line)?"
    )]
    NoPairs {
        /// Lines skipped.
        skipped: usize,
    },
    /// The zip's checksum is wrong (a truncated or altered download).
    #[error("`{}` has SHA-1 {got}, expected {expected}: the file is damaged or not d2l's fra-eng.zip; delete it and download it again", .path.display())]
    Checksum {
        /// The zip.
        path: PathBuf,
        /// Its SHA-1.
        got: String,
        /// The expected one.
        expected: &'static str,
    },
    /// The zip could not be read.
    #[error("`{}` is not a readable zip archive: {reason}", .path.display())]
    BadZip {
        /// The zip.
        path: PathBuf,
        /// What the zip reader said.
        reason: String,
    },
    /// The zip lacks the corpus.
    #[error("`{}` has no member `{FRA_ENG_MEMBER}`", .path.display())]
    MissingMember {
        /// The zip.
        path: PathBuf,
    },
    /// A member would be written outside the target folder (zip slip).
    #[error("`{}` holds the member `{member}`, which would escape its folder; refusing to extract", .path.display())]
    UnsafeMember {
        /// The zip.
        path: PathBuf,
        /// The member's name.
        member: String,
    },
    /// The text is not UTF-8.
    #[error("`{}` is not UTF-8 text (first bad byte at offset {offset})", .path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// Byte offset of the first invalid sequence.
        offset: usize,
    },
    /// The corpus holds fewer sentence pairs than a training asks for.
    #[error(
        "`{}` holds {found} usable sentence pairs, but {needed} are needed; is it the whole of d2l's fra.txt?",
        .path.display()
    )]
    TooFewPairs {
        /// The corpus file.
        path: PathBuf,
        /// Pairs found.
        found: usize,
        /// Pairs needed.
        needed: usize,
    },
    /// Reading or writing a file failed.
    #[error("`{}`: {error}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
}
