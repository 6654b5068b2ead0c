//! The listing runner: runs the book's listings (the library's
//! `listings::all()`, on a burn backend) and writes their figures and
//! captured outputs into `figures/` ([`render`]), or checks them against
//! the committed files ([`check`], [`compare_folders`]). The
//! `mdbook-listings` preprocessor (crate `attention-book`, which links no
//! tensor code) decides what is stale and starts this crate's binary when
//! something is.
//!
//! Every file of the book it reads or writes (sources, figures, models,
//! the BERT that fine-tuning starts from) lies under the book's root that
//! it is given ([`check_root`]), never under the path it was compiled in;
//! only the downloaded data sets come from the user's cache, shared.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use attention_book::table::Registered;
use attention_book::{
    Entry, FAILED, Failure, MANIFEST, Report, compare, content_hash, fix_hint,
    plan, read_manifest, shown,
};
use burn::tensor::Device;
use d2l_attention::BackendChoice;
use d2l_attention::files::write_atomic;
use d2l_attention::listings::{Check, Listing, Output, models_dir};

/// Checks that this runner and the library it links (their workspace
/// folders at compile time: `built_from`) were compiled from the book at
/// `root`. Two checkouts that share a build folder (`CARGO_TARGET_DIR`)
/// can leave cargo running one checkout's build for the other, which would
/// run that checkout's code for this one's listings.
///
/// # Errors
/// When `root` cannot be read, or a build comes from elsewhere (naming
/// both folders and what to do).
pub fn check_root(root: &Path, built_from: &[&str]) -> anyhow::Result<()> {
    let root = root.canonicalize().with_context(|| {
        format!("cannot read the book's root `{}`", root.display())
    })?;
    for from in built_from {
        let from = Path::new(from);
        let from = from.canonicalize().unwrap_or_else(|_| from.to_owned());
        if from != root {
            bail!(
                "the listing runner was compiled from `{}`, not from the \
                 book at `{}` (cargo reused another checkout's build, as it \
                 may when two checkouts share CARGO_TARGET_DIR): run `cargo \
                 clean --release -p listing-runner -p d2l-attention` in `{}` \
                 and try again, or give each checkout its own build folder",
                from.display(),
                root.display(),
                root.display()
            );
        }
    }
    Ok(())
}

/// `listing` as the preprocessor's table has it: name and file.
pub fn registered(listing: &Listing) -> Registered {
    Registered {
        name: listing.name.to_owned(),
        file: listing.file.to_owned(),
    }
}

/// Brings `figures` up to date: runs each listing whose fingerprint (of
/// the sources under `root`, the book's root) changed (or every listing,
/// with `force`) on `backend`, for the book at `root`, and writes its
/// files atomically; reports progress on stderr.
///
/// A listing that fails (returns an error or panics) writes nothing: it is
/// listed in [`Report::failed`] with its message and the committed files it
/// leaves in place, its entry gets the fingerprint [`FAILED`] (so that it
/// runs again next time, and a second failure still names its files), and
/// the other listings still run.
///
/// # Errors
/// When the backend is not compiled in (before anything is written), or
/// when `figures` cannot be created or written (naming the path).
pub fn render(
    root: &Path,
    listings: &[Listing],
    figures: &Path,
    backend: BackendChoice,
    force: bool,
) -> anyhow::Result<Report> {
    let device = backend.device()?;
    fs::create_dir_all(figures).with_context(|| {
        format!("cannot create the figures folder `{}`", figures.display())
    })?;
    let mut manifest = read_manifest(figures);
    let table: Vec<Registered> = listings.iter().map(registered).collect();
    let plan = plan(root, &table, figures, &backend.to_string(), force)?;
    let mut report = Report {
        skipped: plan.fresh,
        ..Report::default()
    };
    let stale: Vec<&Listing> = listings
        .iter()
        .filter(|l| plan.stale.iter().any(|s| s == l.name))
        .collect();
    for (i, listing) in stale.iter().enumerate() {
        eprintln!(
            "[listings {}/{}] running `{}` on {backend}",
            i + 1,
            stale.len(),
            listing.name
        );
        let start = Instant::now();
        let old = manifest.remove(listing.name);
        let entry = match run_one(listing, root, figures, &device, force) {
            Ok(entry) => entry,
            Err(e) => {
                let kept = old.map(|e| e.files).unwrap_or_default();
                let failure = Failure {
                    listing: listing.name.to_owned(),
                    message: format!("{e:#}"),
                    kept: kept.iter().map(|(name, _)| name.clone()).collect(),
                };
                eprintln!("[listings {}/{}] {failure}", i + 1, stale.len());
                report.failed.push(failure);
                // Stale (it runs again next time), but still knowing its
                // files, so that a second failure can name them too.
                if !kept.is_empty() {
                    let entry = Entry {
                        fingerprint: FAILED.to_owned(),
                        files: kept,
                    };
                    manifest.insert(listing.name.to_owned(), entry);
                }
                write_manifest(figures, &manifest)?;
                continue;
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
                fingerprint: plan.fingerprints[listing.name].clone(),
                files: entry,
            },
        );
        write_manifest(figures, &manifest)?;
        report.ran.push(listing.name.to_owned());
    }
    Ok(report)
}

/// Runs `listing` and writes its files. A rerun of a stale listing whose
/// result agrees within tolerance keeps the committed bytes, so that
/// another machine's last digits do not churn figures/; `force` writes what
/// this machine makes.
fn run_one(
    listing: &Listing,
    root: &Path,
    figures: &Path,
    device: &Device,
    force: bool,
) -> anyhow::Result<Vec<(String, String)>> {
    let run = std::panic::AssertUnwindSafe(|| listing.execute(device, root));
    let output = std::panic::catch_unwind(run).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        bail!("listing `{}` panicked: {message}", listing.name)
    })?;
    let outputs = output.files(listing.name);
    for (i, (name, _)) in outputs.iter().enumerate() {
        if outputs[..i].iter().any(|(f, _)| f == name) {
            bail!("listing `{}` writes `{name}` twice", listing.name);
        }
    }
    let mut files: Vec<(String, String)> = Vec::new();
    for (name, contents) in outputs {
        let path = figures.join(&name);
        let kept = fs::read_to_string(&path).ok().filter(|old| {
            !force && compare::compare_file(&name, old, contents).is_none()
        });
        let written = match kept {
            Some(old) => old,
            None => {
                write_if_changed(&path, contents)?;
                contents.to_owned()
            }
        };
        files.push((name, content_hash(written.as_bytes())));
    }
    if files.is_empty() {
        bail!("listing `{}` printed and drew nothing", listing.name);
    }
    Ok(files)
}

/// Checks what `listing` printed and drew (`output`) against its committed
/// files in `figures`: the same files as the manifest lists; then, for
/// [`Check::Compare`], each equal within [`compare::tolerance`], and for
/// [`Check::Facts`], its facts about the printed text. Returns one readable
/// report per problem (file, line, committed and new value, tolerance),
/// the last one ending with how to fix it; empty when all is well.
pub fn check_output(
    listing: &Listing,
    output: &Output,
    figures: &Path,
) -> Vec<String> {
    let name = listing.name;
    let files = output.files(name);
    let mut problems = Vec::new();
    let made: Vec<&str> = files.iter().map(|(f, _)| f.as_str()).collect();
    let listed: Vec<String> = read_manifest(figures)
        .get(name)
        .map(|e| e.files.iter().map(|(f, _)| f.clone()).collect())
        .unwrap_or_default();
    if made != listed {
        problems.push(format!(
            "listing `{name}` now makes {made:?}; the manifest lists {listed:?}"
        ));
    }
    match listing.check {
        Check::Facts(facts) => {
            if let Err(e) = facts(output.text()) {
                problems.push(format!("listing `{name}`: {e:#}"));
            }
        }
        Check::Compare => {
            for (file, contents) in &files {
                let path = figures.join(file);
                let shown = shown(&path);
                let Ok(committed) = fs::read_to_string(&path) else {
                    problems.push(format!("{shown} is missing or unreadable"));
                    continue;
                };
                if let Some(report) =
                    compare::compare_file(&shown, &committed, contents)
                {
                    problems.push(format!(
                        "{report}(committed file vs what listing `{name}` \
                         makes now)"
                    ));
                }
            }
        }
    }
    if let Some(last) = problems.last_mut() {
        last.push_str(&format!("\n{}", fix_hint(name, figures)));
    }
    problems
}

/// Runs each of `listings` on `backend`, for the book at `root`, and
/// checks its outputs against `figures` ([`check_output`]); reports
/// progress on stderr. The trainings save their models in `root`'s
/// `models/` as they run (the listings after them
/// load those); the committed models are put back afterwards, so that a
/// check changes no committed file.
///
/// # Errors
/// When the backend is not compiled in, a listing fails to run, or a
/// committed model cannot be read or put back.
pub fn check(
    root: &Path,
    listings: &[Listing],
    figures: &Path,
    backend: BackendChoice,
) -> anyhow::Result<Vec<String>> {
    let _models = CommittedModels::read(root)?;
    check_all(root, listings, figures, backend)
}

/// The committed model files (`models/*.bpk`) with their bytes, written
/// back when dropped: after a check, also one that failed or panicked.
struct CommittedModels(Vec<(PathBuf, Vec<u8>)>);

impl Drop for CommittedModels {
    fn drop(&mut self) {
        for (path, bytes) in &self.0 {
            if let Err(e) = write_atomic(path, bytes) {
                eprintln!("listing-runner: cannot put back a model: {e}");
            }
        }
    }
}

impl CommittedModels {
    fn read(root: &Path) -> anyhow::Result<Self> {
        committed_models(root).map(Self)
    }
}

/// Each committed model file (`models/*.bpk` under `root`) with its bytes.
fn committed_models(root: &Path) -> anyhow::Result<Vec<(PathBuf, Vec<u8>)>> {
    let dir = models_dir(root);
    let mut models = Vec::new();
    for entry in fs::read_dir(&dir)
        .with_context(|| format!("cannot read `{}`", dir.display()))?
    {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "bpk") {
            let bytes = fs::read(&path)
                .with_context(|| format!("cannot read `{}`", path.display()))?;
            models.push((path, bytes));
        }
    }
    Ok(models)
}

fn check_all(
    root: &Path,
    listings: &[Listing],
    figures: &Path,
    backend: BackendChoice,
) -> anyhow::Result<Vec<String>> {
    let device = backend.device()?;
    let mut problems = Vec::new();
    for (i, listing) in listings.iter().enumerate() {
        eprintln!(
            "[check {}/{}] running `{}` on {backend}",
            i + 1,
            listings.len(),
            listing.name
        );
        let output = listing.execute(&device, root)?;
        problems.extend(check_output(listing, &output, figures));
    }
    Ok(problems)
}

/// Compares two figures folders (a snapshot of the committed one and the
/// one a build left): the same file names; the manifest's listings,
/// fingerprints and file names equal (its content hashes may differ with
/// the bytes) and no malformed line; every other file equal within
/// [`compare::tolerance`], except the files of a [`Check::Facts`] listing,
/// whose text must state its facts. Returns one report per difference.
///
/// # Errors
/// When a folder cannot be read.
pub fn compare_folders(
    committed: &Path,
    new: &Path,
) -> anyhow::Result<Vec<String>> {
    let names = |dir: &Path| -> anyhow::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in fs::read_dir(dir)
            .with_context(|| format!("cannot read `{}`", dir.display()))?
        {
            names.push(entry?.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    };
    let (old, now) = (names(committed)?, names(new)?);
    let mut problems = Vec::new();
    for name in old.iter().filter(|n| !now.contains(n)) {
        problems.push(format!("{name}: removed"));
    }
    for name in now.iter().filter(|n| !old.contains(n)) {
        problems.push(format!("{name}: added"));
    }
    problems.extend(compare_manifests(committed, new));
    let manifest = read_manifest(committed);
    let facts_of = |file: &str| {
        let (listing, _) = manifest
            .iter()
            .find(|(_, e)| e.files.iter().any(|(f, _)| f == file))?;
        let listing = d2l_attention::listings::all()
            .into_iter()
            .find(|l| l.name == *listing)?;
        match listing.check {
            Check::Facts(facts) => Some(facts),
            Check::Compare => None,
        }
    };
    for name in old
        .iter()
        .filter(|n| now.contains(n) && n.as_str() != MANIFEST)
    {
        let read =
            |dir: &Path| fs::read_to_string(dir.join(name)).unwrap_or_default();
        match facts_of(name) {
            // A training's figures vary by machine; its text states facts.
            Some(facts) if name.ends_with(".txt") => {
                if let Err(e) = facts(&read(new)) {
                    problems.push(format!("{name}: {e:#}"));
                }
            }
            Some(_) => {}
            None => {
                problems.extend(compare::compare_file(
                    name,
                    &read(committed),
                    &read(new),
                ));
            }
        }
    }
    Ok(problems)
}

/// The differences between two manifests that matter: listings,
/// fingerprints, file names, and malformed lines (which [`read_manifest`]
/// drops).
fn compare_manifests(committed: &Path, new: &Path) -> Vec<String> {
    let entries = |dir: &Path| -> Vec<(String, String, Vec<String>)> {
        read_manifest(dir)
            .into_iter()
            .map(|(k, e)| {
                (
                    k,
                    e.fingerprint,
                    e.files.into_iter().map(|(f, _)| f).collect(),
                )
            })
            .collect()
    };
    let lines = |dir: &Path| {
        let text = fs::read_to_string(dir.join(MANIFEST)).unwrap_or_default();
        text.lines().filter(|l| !l.trim().is_empty()).count()
    };
    let mut problems = Vec::new();
    if entries(committed) != entries(new) {
        problems.push(format!(
            "{MANIFEST}: listings, fingerprints or file lists differ"
        ));
    }
    for dir in [committed, new] {
        if lines(dir) != read_manifest(dir).len() {
            problems.push(format!(
                "{}: a malformed or repeated line",
                dir.join(MANIFEST).display()
            ));
        }
    }
    problems
}

fn write_manifest(
    figures: &Path,
    manifest: &std::collections::BTreeMap<String, Entry>,
) -> anyhow::Result<()> {
    let text: String = manifest
        .iter()
        .map(|(name, e)| {
            let files: Vec<String> =
                e.files.iter().map(|(f, h)| format!("{f}@{h}")).collect();
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
