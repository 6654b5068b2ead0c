//! The book's tooling: rendering every listing's figures and captured output
//! into `figures/`, skipping listings whose sources have not changed.
//!
//! `figures/fingerprints.txt` records, for each listing, the fingerprint
//! ([`Listing::fingerprint`]) of the code that made its files, and each
//! file's name and content hash; a listing is run again when its
//! fingerprint changes or one of its files is missing or altered.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};
use burn::tensor::Device;
use d2l_attention::Backend;
use d2l_attention::files::write_atomic;
use d2l_attention::listing::Listing;
use sha2::{Digest, Sha256};

/// The manifest's file name inside the figures folder.
pub const MANIFEST: &str = "fingerprints.txt";

/// One manifest entry: the fingerprint a listing's files were made under,
/// and each file's name and content hash.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub fingerprint: String,
    pub files: Vec<(String, String)>,
}

impl Entry {
    /// Whether the entry was made under `fingerprint` and every file it
    /// lists is still in `figures` as written.
    fn is_fresh(&self, fingerprint: &str, figures: &Path) -> bool {
        self.fingerprint == fingerprint
            && !self.files.is_empty()
            && self.files.iter().all(|(name, hash)| {
                fs::read(figures.join(name)).is_ok_and(|bytes| content_hash(&bytes) == *hash)
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
                .map(|w| w.split_once('@').map(|(f, h)| (f.to_owned(), h.to_owned())))
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

fn write_manifest(figures: &Path, manifest: &BTreeMap<String, Entry>) -> anyhow::Result<()> {
    let text: String = manifest
        .iter()
        .map(|(name, e)| {
            let files: Vec<String> = e.files.iter().map(|(f, h)| format!("{f}@{h}")).collect();
            format!("{name} {} {}\n", e.fingerprint, files.join(" "))
        })
        .collect();
    write_if_changed(&figures.join(MANIFEST), &text)
}

/// Writes atomically, and only when the contents differ, so that `mdbook
/// serve` (which watches these files) is not woken for nothing.
fn write_if_changed(path: &Path, contents: &str) -> anyhow::Result<()> {
    if fs::read(path).is_ok_and(|old| old == contents.as_bytes()) {
        return Ok(());
    }
    Ok(write_atomic(path, contents.as_bytes())?)
}

/// What [`render`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// Listings that were run.
    pub ran: Vec<String>,
    /// Listings that were up to date.
    pub skipped: Vec<String>,
}

/// Brings `figures` up to date: runs each listing whose fingerprint changed
/// (or every listing, with `force`) on `backend` and writes its files
/// atomically; reports progress on stderr.
///
/// # Errors
/// When the backend is not compiled in (before anything is written), when
/// `figures` cannot be created or written (naming the path), or when a listing fails (naming it). A
/// failed listing's entry is removed from the manifest, so it runs again
/// next time; files already written by other listings stay valid.
pub fn render(
    listings: &[Listing],
    figures: &Path,
    backend: Backend,
    force: bool,
) -> anyhow::Result<Report> {
    let device = backend.device()?;
    fs::create_dir_all(figures)
        .with_context(|| format!("cannot create the figures folder `{}`", figures.display()))?;
    let mut manifest = read_manifest(figures);
    let mut report = Report::default();
    let stale: Vec<&Listing> = listings
        .iter()
        .filter(|l| {
            let fresh = manifest
                .get(l.name)
                .is_some_and(|e| e.is_fresh(&l.fingerprint(backend), figures));
            if fresh && !force {
                report.skipped.push(l.name.to_owned());
            }
            force || !fresh
        })
        .collect();
    if stale.is_empty() {
        return Ok(report);
    }
    for (i, listing) in stale.iter().enumerate() {
        eprintln!(
            "[listings {}/{}] running `{}` on {backend}",
            i + 1,
            stale.len(),
            listing.name
        );
        let start = Instant::now();
        manifest.remove(listing.name);
        let result = run_one(listing, figures, &device);
        let entry = match result {
            Ok(entry) => entry,
            Err(e) => {
                write_manifest(figures, &manifest)?;
                return Err(e);
            }
        };
        eprintln!(
            "[listings {}/{}] `{}` done in {:.1} s",
            i + 1,
            stale.len(),
            listing.name,
            start.elapsed().as_secs_f64()
        );
        manifest.insert(
            listing.name.to_owned(),
            Entry {
                fingerprint: listing.fingerprint(backend),
                files: entry,
            },
        );
        write_manifest(figures, &manifest)?;
        report.ran.push(listing.name.to_owned());
    }
    Ok(report)
}

fn run_one(
    listing: &Listing,
    figures: &Path,
    device: &Device,
) -> anyhow::Result<Vec<(String, String)>> {
    let output = listing.execute(device)?;
    let mut files: Vec<(String, String)> = Vec::new();
    for (name, contents) in output.files(listing.name) {
        if files.iter().any(|(f, _)| *f == name) {
            bail!("listing `{}` writes `{name}` twice", listing.name);
        }
        write_if_changed(&figures.join(&name), contents)?;
        files.push((name, content_hash(contents.as_bytes())));
    }
    if files.is_empty() {
        bail!("listing `{}` printed and drew nothing", listing.name);
    }
    Ok(files)
}
