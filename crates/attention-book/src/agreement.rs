//! Whether the numbers a page quotes agree with what the book's code
//! prints or states: the page's included outputs and listing files, the
//! committed benchmark reports it names by path (every report, whole, for
//! the Performance page), or a line of `quoted-numbers.txt` that gives the
//! number's source elsewhere. `cargo test` checks every page
//! (`tests/prose_numbers.rs`) and fails on a number that agrees with none;
//! the preprocessor checks every page at every build, and marks such a
//! number on the page and in the terminal.

use std::fs;
use std::path::Path;

use anyhow::Context;

use crate::compare::numbers;
use crate::prose::{Quoted, quoted_numbers};

/// The numbers quoted from elsewhere, relative to the book's root.
pub const MARKS: &str = "crates/attention-book/quoted-numbers.txt";
/// The committed benchmark reports, relative to the book's root.
pub const REPORTS: &str = "crates/d2l-attention/benches/reports";

/// One line of `quoted-numbers.txt`: a page, a number as written there,
/// and where it comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    /// The page's file name (`pretraining.md`).
    pub page: String,
    /// The number as the page writes it.
    pub number: String,
    /// Where it comes from.
    pub source: String,
}

/// The marks of `quoted-numbers.txt` under `root` (`PAGE NUMBER SOURCE`
/// a line; blank lines and `#` comments skipped); none in a book without
/// the file.
///
/// # Errors
/// When the file cannot be read, or naming a line of another form.
pub fn marks(root: &Path) -> anyhow::Result<Vec<Mark>> {
    let path = root.join(MARKS);
    let text = match fs::read_to_string(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        read => {
            read.with_context(|| format!("cannot read `{}`", path.display()))?
        }
    };
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let mut words = l.splitn(3, ' ');
            match (words.next(), words.next(), words.next()) {
                (Some(p), Some(n), Some(s)) => Ok(Mark {
                    page: p.to_owned(),
                    number: n.to_owned(),
                    source: s.trim().to_owned(),
                }),
                _ => {
                    anyhow::bail!("{MARKS}: `{l}` is not `PAGE NUMBER SOURCE`")
                }
            }
        })
        .collect()
}

/// Every `{{#include …}}` in `text`: the path and the anchor, if any (a
/// line range such as `:2:` or `:1` is not an anchor).
///
/// # Examples
/// ```
/// use attention_book::agreement::includes;
///
/// let page = "{{#include figures/a.txt:2:5}} {{#include ../x.rs:train}}";
/// assert_eq!(
///     includes(page),
///     [("figures/a.txt".into(), None), ("../x.rs".into(), Some("train".into()))]
/// );
/// ```
pub fn includes(text: &str) -> Vec<(String, Option<String>)> {
    text.split("{{#include ")
        .skip(1)
        .map(|rest| {
            let target = rest.split("}}").next().unwrap_or_default().trim();
            match target.split_once(':') {
                Some((path, lines))
                    if lines
                        .chars()
                        .all(|c| c.is_ascii_digit() || c == ':') =>
                {
                    (path.to_owned(), None)
                }
                Some((path, anchor)) => {
                    (path.to_owned(), Some(anchor.to_owned()))
                }
                None => (target.to_owned(), None),
            }
        })
        .collect()
}

/// What the numbers of `page` (its file name; `text` its Markdown, its
/// includes relative to `src`) may come from: (name, text) of each file it
/// includes from, whole, and the fenced output of the reports under
/// `root` it names by path (every report, whole, for `performance.md`;
/// none in a book without reports).
///
/// # Errors
/// Naming the file when an included file or a report cannot be read.
pub fn sources(
    root: &Path,
    src: &Path,
    page: &str,
    text: &str,
) -> anyhow::Result<Vec<(String, String)>> {
    let mut found: Vec<(String, String)> = Vec::new();
    for (path, _) in includes(text) {
        if found.iter().any(|(p, _)| *p == path) {
            continue;
        }
        let file = fs::read_to_string(src.join(&path))
            .with_context(|| format!("{page}: cannot read `{path}`"))?;
        found.push((path, file));
    }
    let reports = root.join(REPORTS);
    let mut names: Vec<_> = match reports.is_dir() {
        false => Vec::new(), // a book without benchmark reports
        true => fs::read_dir(&reports)
            .with_context(|| format!("cannot read `{}`", reports.display()))?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()?,
    };
    names.sort();
    for path in names {
        let name = format!(
            "{REPORTS}/{}",
            path.file_name().unwrap_or_default().to_string_lossy()
        );
        if page != "performance.md" && !text.contains(&name) {
            continue;
        }
        let report = fs::read_to_string(&path)
            .with_context(|| format!("cannot read `{name}`"))?;
        let kept = match page {
            "performance.md" => report,
            _ => fenced(&report),
        };
        found.push((name, kept));
    }
    Ok(found)
}

/// The lines of `report`'s fenced blocks: what a run printed, not what
/// the report's prose says of it.
fn fenced(report: &str) -> String {
    let mut inside = false;
    let mut kept = String::new();
    for line in report.lines() {
        if line.starts_with("```") {
            inside = !inside;
        } else if inside {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// What the check of one page found.
#[derive(Debug, Default)]
pub struct PageCheck {
    /// The numbers that agree with none of the sources and no mark.
    pub unsupported: Vec<Quoted>,
    /// The indices of the marks the page needed.
    pub used: Vec<usize>,
}

/// The numbers quoted in `text`, the Markdown of `page` (its file name),
/// checked against `sources` (see [`sources`]) and then `marks`.
///
/// # Examples
/// ```
/// use attention_book::agreement::{Mark, check_page};
///
/// let sources = [("figures/a.txt".to_owned(), "loss 0.5806\n".to_owned())];
/// let marks = [Mark { page: "p.md".into(), number: "340".into(), source: "a paper".into() }];
/// let found = check_page("p.md", "A loss of 0.58 beside 340 and 0.61.", &sources, &marks);
/// assert_eq!(found.used, [0]);
/// assert_eq!(found.unsupported.len(), 1);
/// assert_eq!(found.unsupported[0].text, "0.61");
/// ```
pub fn check_page(
    page: &str,
    text: &str,
    sources: &[(String, String)],
    marks: &[Mark],
) -> PageCheck {
    let printed: Vec<f64> =
        sources.iter().flat_map(|(_, text)| numbers(text)).collect();
    let mut found = PageCheck::default();
    for q in quoted_numbers(text) {
        if printed.iter().any(|&v| q.agrees_with(v)) {
            continue;
        }
        match marks
            .iter()
            .position(|m| m.page == page && m.number == q.text)
        {
            Some(i) => found.used.push(i),
            None => found.unsupported.push(q),
        }
    }
    found
}
