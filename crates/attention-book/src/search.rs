//! The book's own search index, for a search that finds Chinese words.
//!
//! mdBook 0.5.4's search splits text on whitespace and hyphens only, so a
//! Chinese word inside a sentence is never a token of its own (and runs
//! longer than 80 bytes are not indexed at all). This index keeps each
//! section's plain text instead, and `theme/search.js` matches the query as
//! a substring: 机制 is found inside 注意力机制, in either edition. The
//! preprocessor writes it, after the translation, as `src/search/LANG.js`;
//! mdBook copies it into the built book like any file of `src/`.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::LazyLock;

use anyhow::Context;
use regex::Regex;
use serde::Serialize;

/// One section of a page: the text from a heading to the next.
#[derive(Debug, PartialEq, Serialize)]
pub struct Section {
    /// The page, relative to the book's root (`nadaraya-watson.html`).
    pub page: String,
    /// The chapter's title.
    pub chapter: String,
    /// The heading that opens the section, as plain text.
    pub heading: String,
    /// Which heading of the page opens it, counted from 0 in the order of
    /// the page (the search scrolls to the first match after it).
    pub ordinal: usize,
    /// The section's prose as plain text: no code, HTML, math or link
    /// targets.
    pub text: String,
}

/// Inline Markdown reduced to its text: images and links to their text,
/// HTML tags (not `<unk>`, which the pages show), math, and emphasis and
/// code marks dropped; `_` stays only inside a name (`valid_lens`).
static INLINE: LazyLock<[(Regex, &str); 6]> = LazyLock::new(|| {
    let re = |p: &str| Regex::new(p).expect("a valid pattern");
    [
        (re(r"!?\[([^\]]*)\]\([^)]*\)"), "$1"),
        (
            re(
                r"</?(?:a|b|br|code|details|div|em|i|kbd|p|script|span|strong|sub|summary|sup)\b[^>]*>",
            ),
            "",
        ),
        (re(r"\$\$?[^$]*\$\$?"), ""),
        (re(r"\*+|`+"), ""),
        (re(r"(^|[^A-Za-z0-9])_+|_+($|[^A-Za-z0-9])"), "$1$2"),
        (re(r"\s+"), " "),
    ]
});

/// The sections of one page whose Markdown (as the pages are written,
/// includes unexpanded) is `markdown`; `page` is its source path
/// (`nadaraya-watson.md`). Fenced code, `{{#include}}` lines and display
/// math are skipped; the text before the first heading is a section whose
/// heading is the chapter's title.
///
/// # Examples
/// ```
/// use attention_book::search::sections;
///
/// let page = "# 注意力\n\n注意力机制的**查询**。\n\n```rust\nlet x = 1;\n```\n\n\
///             ## 键和值 {#keys}\n\n见 [上一章](qkv.md) 与 $\\mathbf{k}\n_i$。\n";
/// let found = sections("注意力", "attention.md", page);
/// assert_eq!(found.len(), 2);
/// assert_eq!(found[0].page, "attention.html");
/// assert_eq!(found[0].text, "注意力机制的查询。");
/// assert_eq!((found[1].ordinal, found[1].heading.as_str()), (1, "键和值"));
/// assert_eq!(found[1].text, "见 上一章 与 。");
/// let list = sections("x", "x.md", "1. 读作 `<unk>` 的 _词_，`valid_lens`\n");
/// assert_eq!(list[0].text, "读作 <unk> 的 词，valid_lens");
/// ```
pub fn sections(chapter: &str, page: &str, markdown: &str) -> Vec<Section> {
    let page = Path::new(page).with_extension("html");
    let mut out = vec![Section {
        page: page.to_string_lossy().replace('\\', "/"),
        chapter: chapter.to_owned(),
        heading: chapter.to_owned(),
        ordinal: 0,
        text: String::new(),
    }];
    let mut headings = 0;
    let (mut in_code, mut in_math) = (false, false);
    for line in markdown.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if trimmed == "$$" {
            in_math = !in_math;
            continue;
        }
        if in_code || in_math || trimmed.starts_with("{{#") {
            continue;
        }
        if let Some(heading) = heading_of(trimmed) {
            let heading = plain(heading);
            if headings == 0 && out[0].text.is_empty() {
                out[0].heading = heading;
            } else {
                out.push(Section {
                    page: out[0].page.clone(),
                    chapter: chapter.to_owned(),
                    heading,
                    ordinal: headings,
                    text: String::new(),
                });
            }
            headings += 1;
            continue;
        }
        // the raw lines first: inline math may run over lines
        let section = out.last_mut().expect("one section at least");
        section.text.push_str(&table_row_text(trimmed));
        section.text.push('\n');
    }
    for section in &mut out {
        section.text = plain(&section.text);
    }
    out.retain(|s| !s.text.is_empty() || s.ordinal == 0);
    out
}

/// A Markdown heading's text (`## Title {#id}` → `Title`).
fn heading_of(line: &str) -> Option<&str> {
    let text = line.trim_start_matches('#');
    let level = line.len() - text.len();
    let text = match text.rfind(" {") {
        Some(at) if text.ends_with('}') => &text[..at],
        _ => text,
    };
    ((1..=6).contains(&level) && text.starts_with(' ')).then(|| text.trim())
}

/// A table row's cells joined by spaces, a separator row as nothing, and
/// list and quote marks dropped; other lines as they are.
fn table_row_text(line: &str) -> String {
    if line.starts_with('|') {
        if line.chars().all(|c| matches!(c, '|' | '-' | ':' | ' ')) {
            return String::new();
        }
        return line.split('|').map(str::trim).collect::<Vec<_>>().join(" ");
    }
    let line = line.trim_start_matches('>').trim_start();
    let line = line
        .strip_prefix("- ")
        .or_else(|| line.strip_prefix("* "))
        .unwrap_or(line);
    // an ordered list's number
    let digits = line.len()
        - line.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    match line[digits..].strip_prefix(". ") {
        Some(rest) if digits > 0 => rest.to_owned(),
        _ => line.to_owned(),
    }
}

/// Inline Markdown as plain text.
fn plain(markdown: &str) -> String {
    INLINE
        .iter()
        .fold(markdown.to_owned(), |text, (pattern, with)| {
            pattern.replace_all(&text, *with).into_owned()
        })
        .trim()
        .to_owned()
}

/// Writes the index of `sections` as `src/search/LANGUAGE.js` (a script
/// that sets `window.bookSearchIndex`), atomically, and only when it
/// changed, so that `mdbook serve`, which watches `src/`, is not woken.
///
/// # Errors
/// Naming the file when it cannot be written.
pub fn write_index(
    src: &Path,
    language: &str,
    sections: &[Section],
) -> anyhow::Result<()> {
    let dir = src.join("search");
    let path = dir.join(format!("{language}.js"));
    let script = format!(
        "// Written by mdbook-listings (crates/attention-book/src/search.rs); \
         not committed.\nwindow.bookSearchIndex = {};\n",
        serde_json::to_string(sections)?
    );
    if fs::read_to_string(&path).is_ok_and(|old| old == script) {
        return Ok(());
    }
    let write = || -> std::io::Result<()> {
        fs::create_dir_all(&dir)?;
        let mut builder = tempfile::Builder::new();
        // Readable by a static server running as another user.
        #[cfg(unix)]
        builder
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
        let mut tmp = builder.tempfile_in(&dir)?;
        tmp.write_all(script.as_bytes())?;
        tmp.persist(&path)?;
        Ok(())
    };
    write().with_context(|| format!("writing {}", path.display()))
}
