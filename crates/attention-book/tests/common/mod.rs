//! The book's folder and its pages, for the page checks.

use std::fs;
use std::path::{Path, PathBuf};

/// The workspace's root folder.
pub fn book() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// The book's pages (`src/*.md`), sorted: (path, text).
pub fn pages() -> Vec<(PathBuf, String)> {
    let mut pages: Vec<_> = fs::read_dir(book().join("src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .map(|p| {
            let text = fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    pages.sort();
    assert!(pages.len() >= 3, "the book's pages were not found");
    pages
}

