//! When a listing must run again: a fingerprint of the files on disk that
//! its outputs depend on.
//!
//! A listing depends on its own file, on [`COMMON`], and on every library
//! module it names as `crate::module` (in `use` lines or paths), followed
//! through the modules those name in turn, and on every sibling file it
//! names as `super::module` (a listing file that reuses another's code).
//! Editing the Nadaraya–Watson module therefore re-runs the Nadaraya–Watson
//! listings and not the Bahdanau training, which never names it. A file
//! read in with `include_str!` counts as well.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Context;
use sha2::{Digest, Sha256};

use crate::table::Registered;

/// The library's source folder, relative to the workspace root.
pub const LIBRARY: &str = "crates/d2l-attention/src";

/// Files and folders every listing depends on, relative to the workspace
/// root: the lock file and the library's manifest (a dependency upgrade
/// re-runs everything), the crate root with its re-exports, the listing
/// machinery, and the plotting and device code every figure goes through.
pub const COMMON: &[&str] = &[
    "Cargo.lock",
    "crates/d2l-attention/Cargo.toml",
    "crates/d2l-attention/src/lib.rs",
    "crates/d2l-attention/src/listings/mod.rs",
    "crates/d2l-attention/src/plot",
    "crates/d2l-attention/src/device.rs",
];

/// The workspace this crate was compiled in: for its tests and examples.
/// The preprocessor and the listing runner never find files through it;
/// they take the book's root from mdBook ([`PreprocessorContext::root`])
/// or from their arguments, so that a build shared by two checkouts reads
/// the right one.
///
/// [`PreprocessorContext::root`]: mdbook_preprocessor::PreprocessorContext
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The files `file` depends on (itself included), relative to `root` when
/// they lie under it: `file`, then every library module it names as
/// `crate::module` or, outside a `mod.rs`, names as the sibling
/// `super::module`, transitively. A module is `<dir>/<module>.rs`, or every
/// `.rs` file under `<dir>/<module>/` (`<dir>` being `src/` or the file's
/// own folder).
///
/// # Errors
/// When a file cannot be read (naming it).
pub fn dependencies(
    root: &Path,
    file: &Path,
) -> anyhow::Result<BTreeSet<PathBuf>> {
    let mut seen = BTreeSet::from([file.to_owned()]);
    let mut todo = vec![file.to_owned()];
    while let Some(next) = todo.pop() {
        let text = fs::read_to_string(root.join(&next)).with_context(|| {
            format!("cannot read `{}`", root.join(&next).display())
        })?;
        let dir = next.parent().unwrap_or(Path::new(""));
        let crate_paths = named_modules(&text)
            .into_iter()
            .map(|module| Path::new(LIBRARY).join(module));
        let siblings = (!next.ends_with("mod.rs"))
            .then(|| modules_after(&text, "super::"))
            .unwrap_or_default()
            .into_iter()
            .map(|module| dir.join(module));
        for module in crate_paths.chain(siblings) {
            for path in module_files(root, &module)? {
                if seen.insert(path.clone()) {
                    todo.push(path);
                }
            }
        }
        for included in included_files(&text) {
            seen.insert(normalize(&dir.join(included)));
        }
    }
    Ok(seen)
}

/// The fingerprint of `listing` on `backend` (its name: `flex`,
/// `libtorch`, …) in the book at `root`: a SHA-256 over the listing's
/// name, the backend, and the path (relative to `root`) and contents of
/// [`COMMON`] and of its [`dependencies`]. Outputs made under the same
/// fingerprint are up to date.
///
/// # Errors
/// When a file cannot be read (naming it).
pub fn fingerprint(
    root: &Path,
    listing: &Registered,
    backend: &str,
) -> anyhow::Result<String> {
    let mut files =
        dependencies(root, Path::new(&listing.file)).with_context(|| {
            format!("fingerprinting listing `{}`", listing.name)
        })?;
    for common in COMMON {
        files.extend(module_files(root, Path::new(common))?);
    }
    digest(root, &[listing.name.as_bytes(), backend.as_bytes()], &files)
}

/// A SHA-256 over `parts`, then the path and contents of each of `files`
/// (relative to `root`), each prefixed by its length.
///
/// # Errors
/// When a file cannot be read (naming it).
pub fn digest(
    root: &Path,
    parts: &[&[u8]],
    files: &BTreeSet<PathBuf>,
) -> anyhow::Result<String> {
    let mut hash = Sha256::new();
    let mut part = |bytes: &[u8]| {
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(bytes);
    };
    for p in parts {
        part(p);
    }
    for file in files {
        let bytes = fs::read(root.join(file)).with_context(|| {
            format!("cannot read `{}`", root.join(file).display())
        })?;
        part(file.to_string_lossy().as_bytes());
        part(&bytes);
    }
    Ok(format!("{:x}", hash.finalize()))
}

/// The first path segment after each `crate::`, including each item of a
/// `crate::{a::B, c}` group.
fn named_modules(text: &str) -> BTreeSet<String> {
    modules_after(text, "crate::")
}

/// The first path segment after each `prefix` (such as `crate::` or
/// `d2l_attention::`), including each item of a `prefix{a::B, c}` group.
pub fn modules_after(text: &str, prefix: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for (i, _) in text.match_indices(prefix) {
        let rest = &text[i + prefix.len()..];
        let segments = match rest.strip_prefix('{') {
            Some(group) => top_level_items(group),
            None => vec![rest],
        };
        for segment in segments {
            let name: String = segment
                .trim_start()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                names.insert(name);
            }
        }
    }
    names
}

/// The paths given to `include_str!("…")`, as written.
fn included_files(text: &str) -> Vec<&str> {
    text.split("include_str!(\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect()
}

/// `path` with its `..` and `.` segments resolved, without touching the
/// file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The comma-separated items of a `{…}` group whose opening brace has been
/// read, up to its closing brace; nested groups stay inside their item.
fn top_level_items(group: &str) -> Vec<&str> {
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

/// `path` itself when it is a file, `path.rs` when that is one, every `.rs`
/// file under `path` when it is a folder; nothing when none exists (a name
/// re-exported by the crate root, such as `crate::plot`'s functions, is no
/// module of its own). Paths are relative to `root`.
pub fn module_files(root: &Path, path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let full = root.join(path);
    if full.is_file() {
        return Ok(vec![path.to_owned()]);
    }
    let with_rs = path.with_extension("rs");
    if root.join(&with_rs).is_file() {
        return Ok(vec![with_rs]);
    }
    if !full.is_dir() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for entry in fs::read_dir(&full)
        .with_context(|| format!("cannot read `{}`", full.display()))?
    {
        let name = entry?.file_name();
        files.extend(module_files(root, &path.join(name))?);
    }
    Ok(files
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "rs"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deps(listing_file: &str) -> Vec<String> {
        dependencies(&workspace_root(), Path::new(listing_file))
            .unwrap()
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn a_listing_depends_on_the_modules_it_uses_and_no_others() {
        let nw = deps("crates/d2l-attention/src/listings/nw.rs");
        assert!(
            nw.contains(&format!("{LIBRARY}/nadaraya_watson/parametric.rs")),
            "{nw:?}"
        );
        assert!(nw.contains(&format!("{LIBRARY}/random.rs")), "{nw:?}");
        assert!(!nw.iter().any(|f| f.contains("bahdanau")), "{nw:?}");
        let bahdanau = deps("crates/d2l-attention/src/listings/bahdanau.rs");
        for module in ["bahdanau", "attention_scoring", "machine_translation"] {
            assert!(
                bahdanau
                    .iter()
                    .any(|f| f.starts_with(&format!("{LIBRARY}/{module}"))),
                "{module}: {bahdanau:?}"
            );
        }
        assert!(
            !bahdanau
                .iter()
                .any(|f| f.contains("nadaraya_watson")
                    || f.contains("listings/nw")),
            "{bahdanau:?}"
        );
    }

    #[test]
    fn a_listing_depends_on_the_listing_files_it_reuses() {
        let exercises =
            deps("crates/d2l-attention/src/listings/transformer_exercises.rs");
        for sibling in ["transformer_training", "bahdanau"] {
            let file = format!("{LIBRARY}/listings/{sibling}.rs");
            assert!(exercises.contains(&file), "{sibling}: {exercises:?}");
        }
        let nw = deps("crates/d2l-attention/src/listings/nw.rs");
        assert!(!nw.iter().any(|f| f.contains("listings/bahdanau")), "{nw:?}");
    }

    #[test]
    fn a_listing_depends_on_the_files_it_includes() {
        let performance =
            deps("crates/d2l-attention/src/listings/performance.rs");
        let run = "crates/d2l-attention/benches/reports/2026-12-06-suite.json";
        assert!(performance.iter().any(|f| f == run), "{performance:?}");
        assert!(
            performance.contains(&format!("{LIBRARY}/performance.rs")),
            "{performance:?}"
        );
    }

    #[test]
    fn grouped_and_nested_paths_name_their_first_segment() {
        let text = "use crate::{Axes, data::{rand, randn}, plot};\nlet x = crate::device::name(d);";
        let names: Vec<String> = named_modules(text).into_iter().collect();
        assert_eq!(names, ["Axes", "data", "device", "plot"]);
    }
}
