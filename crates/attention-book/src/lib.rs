//! The book's tool, without the tensor library: the `mdbook-listings`
//! preprocessor decides which listings are stale from the sources on disk
//! ([`plan`], with [`fingerprint`] and the listing [`table`]), has the
//! listing runner (the `listing-runner` crate, which links burn, built on
//! demand) run them ([`runner`]), and embeds the figures in the pages
//! ([`embed`], [`marks`]). The runner uses [`compare`] to check outputs.
//!
//! `figures/fingerprints.txt` records, for each listing, the fingerprint
//! ([`fingerprint::fingerprint`]) of the code that made its files, and each
//! file's name and content hash; a listing is run again when its
//! fingerprint changes or one of its files is missing or altered.

pub mod agreement;
pub mod compare;
pub mod embed;
pub mod fingerprint;
pub mod marks;
pub mod math;
pub mod prose;
pub mod runner;
pub mod search;
pub mod table;
pub mod widgets;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use table::Registered;

/// The manifest's file name inside the figures folder.
pub const MANIFEST: &str = "fingerprints.txt";

/// The fingerprint a manifest entry gets when its listing failed: no code
/// has it, so the listing runs again, and the entry keeps its files.
pub const FAILED: &str = "failed";

/// One manifest entry: the fingerprint a listing's files were made under,
/// and each file's name and content hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The fingerprint of the code the files were made from.
    pub fingerprint: String,
    /// Each file's name (in the figures folder) and content hash.
    pub files: Vec<(String, String)>,
}

impl Entry {
    /// Whether the entry lists files and every one is still in `figures` as
    /// written (the caller compares the fingerprint).
    fn is_fresh(&self, figures: &Path) -> bool {
        !self.files.is_empty()
            && self.files.iter().all(|(name, hash)| {
                fs::read(figures.join(name))
                    .is_ok_and(|bytes| content_hash(&bytes) == *hash)
            })
    }
}

/// A short content hash: the first 16 hex digits of SHA-256.
pub fn content_hash(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))[..16].to_owned()
}

/// Reads `<figures>/fingerprints.txt` (missing: empty). Lines are
/// `name fingerprint file@hash…`; a malformed line is dropped, which makes
/// its listing run again.
pub fn read_manifest(figures: &Path) -> BTreeMap<String, Entry> {
    let text = fs::read_to_string(figures.join(MANIFEST)).unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let (name, fingerprint) = (words.next()?, words.next()?);
            let files = words
                .map(|w| {
                    w.split_once('@').map(|(f, h)| (f.to_owned(), h.to_owned()))
                })
                .collect::<Option<_>>()?;
            Some((
                name.to_owned(),
                Entry {
                    fingerprint: fingerprint.to_owned(),
                    files,
                },
            ))
        })
        .collect()
}

/// What a run of the listings did (the runner's `render`).
#[derive(Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// Listings that were run.
    pub ran: Vec<String>,
    /// Listings that were up to date.
    pub skipped: Vec<String>,
    /// Listings that failed (an error or a panic); their committed files
    /// were left as they were.
    pub failed: Vec<Failure>,
}

/// A listing that failed to run.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// The listing.
    pub listing: String,
    /// What went wrong, with its causes.
    pub message: String,
    /// Its files from the last successful run, left in place.
    pub kept: Vec<String>,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; ", self.message)?;
        match self.kept.as_slice() {
            [] => write!(f, "it has no files from an earlier run"),
            kept => write!(
                f,
                "its files from the last successful run are left as they were: {}",
                kept.join(", ")
            ),
        }
    }
}

/// `path` as a reader would type it: relative to the current folder (where
/// the preprocessor and the runner work: the book's root) when it lies
/// inside it (`figures/x.txt`), else as given.
pub fn shown(path: &Path) -> String {
    let canonical =
        |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_owned());
    let full = canonical(path);
    match full.strip_prefix(canonical(Path::new("."))) {
        Ok(relative) => relative.display().to_string(),
        Err(_) => path.display().to_string(),
    }
}

/// The command that remakes `listing`'s files in `figures`, for failure
/// messages.
pub fn fix_hint(listing: &str, figures: &Path) -> String {
    let folder = match shown(figures).as_str() {
        "figures" => String::new(),
        other => format!(" --figures {other}"),
    };
    format!(
        "if the change is intended, run `cargo run --release -p listing-runner \
         -- render --force{folder} {listing}` and commit it"
    )
}

/// Which listings must run, and under which fingerprints.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Each listing's fingerprint now.
    pub fingerprints: BTreeMap<String, String>,
    /// The listings to run, in the table's order.
    pub stale: Vec<String>,
    /// The listings whose files are up to date (none with `force`).
    pub fresh: Vec<String>,
}

/// Which of `listings` (of the book at `root`) must run on `backend` (its
/// name, as in `D2L_DEVICE`) to bring `figures` up to date: those whose
/// fingerprint differs from their manifest entry's, or whose files are
/// missing or altered; every one with `force`.
///
/// # Errors
/// When a listing's source file, or a file it depends on, cannot be read.
///
/// # Examples
/// ```
/// use attention_book::fingerprint::workspace_root;
/// use attention_book::plan;
/// use attention_book::table::registered;
///
/// let root = workspace_root();
/// let table = registered(&root).unwrap();
/// // The committed figures are up to date; an empty folder is not.
/// let committed = plan(&root, &table, &root.join("figures"), "flex", false).unwrap();
/// assert!(committed.stale.is_empty());
/// let empty = tempfile::tempdir().unwrap();
/// let none = plan(&root, &table, empty.path(), "flex", false).unwrap();
/// assert_eq!(none.stale.len(), table.len());
/// ```
pub fn plan(
    root: &Path,
    listings: &[Registered],
    figures: &Path,
    backend: &str,
    force: bool,
) -> anyhow::Result<Plan> {
    let manifest = read_manifest(figures);
    let mut plan = Plan::default();
    for listing in listings {
        let now = fingerprint::fingerprint(root, listing, backend)?;
        let fresh = manifest
            .get(&listing.name)
            .is_some_and(|e| e.fingerprint == now && e.is_fresh(figures));
        if force || !fresh {
            plan.stale.push(listing.name.clone());
        } else {
            plan.fresh.push(listing.name.clone());
        }
        plan.fingerprints.insert(listing.name.clone(), now);
    }
    Ok(plan)
}
