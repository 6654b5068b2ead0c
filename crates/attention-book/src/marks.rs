//! Which listing each code block of a page shows, marked in the built page
//! as `<div class="listing" data-listing="NAME">` around the block, so that
//! the figure packs print the code of the listing that drew a figure (the
//! manifest maps a figure to a listing's name, and one listing can span
//! several anchors).

use std::collections::BTreeSet;
use std::fs;
use std::ops::Range;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use crate::table::registrations;

/// An include of a Rust file's anchor: `{{#include PATH:ANCHOR}}`.
static INCLUDE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\{\{#include ([^:}]+\.rs):(\w+)\}\}").expect("a valid pattern")
});

/// A top-level function's name, at the start of its line.
static FUNCTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?m)^(?:pub(?:\(crate\))? )?fn (\w+)")
        .expect("a valid pattern")
});

/// `markdown` with every fenced code block that includes anchors of one
/// listing (`{{#include PATH:ANCHOR}}`, PATH relative to `dir`, ANCHOR
/// inside the function registered as that listing in PATH's `LISTINGS`,
/// or in a helper that only that function calls)
/// wrapped in a `<div class="listing">` naming it. Blocks of library code,
/// of helpers outside a listing, or of two listings are kept as they are.
///
/// # Errors
/// Naming the file when an included listing file cannot be read.
///
/// # Examples
/// ```
/// use attention_book::marks::mark_listings;
///
/// let dir = tempfile::tempdir().unwrap();
/// let code = "pub const LISTINGS: &[Listing] = &[\n    \
///     Listing::new(\"demo-plot\", file!(), plot_demo),\n];\n\n\
///     fn plot_demo() {\n    // ANCHOR: plot\n    draw();\n    \
///     // ANCHOR_END: plot\n}\n";
/// std::fs::write(dir.path().join("demo.rs"), code).unwrap();
/// let page = "Text.\n\n```rust\n{{#include demo.rs:plot}}\n```\n";
/// let marked = mark_listings(page, dir.path()).unwrap();
/// assert_eq!(
///     marked,
///     "Text.\n\n<div class=\"listing\" data-listing=\"demo-plot\">\n\n\
///      ```rust\n{{#include demo.rs:plot}}\n```\n\n</div>\n"
/// );
/// ```
pub fn mark_listings(markdown: &str, dir: &Path) -> anyhow::Result<String> {
    let mut out = String::with_capacity(markdown.len());
    let mut block: Option<String> = None;
    for line in markdown.split_inclusive('\n') {
        let fence = line.trim_start().starts_with("```");
        match (&mut block, fence) {
            (None, true) => block = Some(line.to_owned()),
            (None, false) => out.push_str(line),
            (Some(b), false) => b.push_str(line),
            (Some(b), true) => {
                b.push_str(line);
                let mut names = BTreeSet::new();
                for c in INCLUDE.captures_iter(b) {
                    names.insert(listing_of(&dir.join(&c[1]), &c[2])?);
                }
                match names.into_iter().collect::<Vec<_>>().as_slice() {
                    [Some(name)] => {
                        out.push_str(&format!(
                            "<div class=\"listing\" data-listing=\"{name}\">\
                             \n\n{b}\n</div>\n"
                        ));
                    }
                    _ => out.push_str(b),
                }
                block = None;
            }
        }
    }
    out.push_str(block.as_deref().unwrap_or(""));
    Ok(out)
}

/// The listing whose function holds `anchor` in `file`: the function
/// registered as a listing in the file's `LISTINGS`, or a helper that only
/// one listing's function calls (the code that draws its heatmaps, say).
fn listing_of(file: &Path, anchor: &str) -> anyhow::Result<Option<String>> {
    let text = fs::read_to_string(file).map_err(|e| {
        anyhow::anyhow!("listing file `{}`: {e}", file.display())
    })?;
    let Some(at) = text.find(&format!("// ANCHOR: {anchor}\n")) else {
        return Ok(None);
    };
    let listings: Vec<(String, Range<usize>)> = registrations(&text)
        .into_iter()
        .filter_map(|(name, function)| Some((name, span(&text, &function)?)))
        .collect();
    if let Some((name, _)) = listings.iter().find(|(_, b)| b.contains(&at)) {
        return Ok(Some(name.clone()));
    }
    let helper = FUNCTION
        .captures_iter(&text[..at])
        .last()
        .map(|c| c[1].to_owned());
    let Some(helper) = helper else {
        return Ok(None);
    };
    let call = Regex::new(&format!(r"\b{helper}\("))?;
    let callers: Vec<&String> = listings
        .iter()
        .filter(|(_, b)| call.is_match(&text[b.clone()]))
        .map(|(name, _)| name)
        .collect();
    Ok(match callers[..] {
        [name] => Some(name.clone()),
        _ => None,
    })
}

/// Where top-level function `function` lies in `text`: from its `fn` to
/// its closing brace at the start of a line.
fn span(text: &str, function: &str) -> Option<Range<usize>> {
    let begin = text.find(&format!("fn {function}("))?;
    let end = text[begin..]
        .find("\n}\n")
        .map_or(text.len(), |e| begin + e);
    Some(begin..end)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every marked name is a registered listing, every diagram's code is
    /// marked with the listing that drew it, and library code is not.
    #[test]
    fn the_book_s_blocks_name_their_listings() {
        let src = crate::fingerprint::workspace_root().join("src");
        let root = crate::fingerprint::workspace_root();
        let table = crate::table::registered(&root).unwrap();
        let names: BTreeSet<&str> =
            table.iter().map(|l| l.name.as_str()).collect();
        let mark = Regex::new(r#"data-listing="([a-z0-9-]+)""#).unwrap();
        let mut marked = BTreeSet::new();
        for page in fs::read_dir(&src).unwrap() {
            let page = page.unwrap().path();
            if page.extension().is_some_and(|e| e == "md") {
                let text = fs::read_to_string(&page).unwrap();
                let html = mark_listings(&text, &src).unwrap();
                marked
                    .extend(mark.captures_iter(&html).map(|c| c[1].to_owned()));
            }
        }
        for name in &marked {
            assert!(names.contains(name.as_str()), "{name} is no listing");
        }
        for diagram in names.iter().filter(|n| n.ends_with("-diagram")) {
            assert!(marked.contains(*diagram), "{diagram} is not marked");
        }
        assert!(marked.len() > 40, "{marked:?}");
        // helpers only one listing calls are its code too
        let page = fs::read_to_string(src.join("transformer.md")).unwrap();
        let html = mark_listings(&page, &src).unwrap();
        let heatmaps = "\">\n\n```rust,ignore\n{{#include ../crates/d2l-attention/src/\
                        listings/transformer_training.rs:heatmaps}}";
        assert!(
            html.contains(&format!(
                "data-listing=\"transformer-train{heatmaps}"
            ))
        );
        let page = fs::read_to_string(src.join("transformer.md")).unwrap();
        let html = mark_listings(&page, &src).unwrap();
        let ffn = "{{#include ../crates/d2l-attention/src/transformer/mod.rs:\
                   ffn_forward}}";
        let at = html.find(ffn).unwrap();
        assert!(!html[..at].ends_with("\">\n\n```rust,ignore\n"));
    }

    #[test]
    fn a_missing_listing_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let page = "```rust\n{{#include gone.rs:x}}\n```\n";
        let err = mark_listings(page, dir.path()).unwrap_err().to_string();
        assert!(err.contains("gone.rs"), "{err}");
    }
}
