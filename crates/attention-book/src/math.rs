//! Math through the translation. mdbook-gettext writes every page back from
//! its parsed Markdown, escaping what Markdown would read as markup (`_`,
//! `[`, `<`, `\` …), and that changes TeX: KaTeX then reads `\_` or `\[`.
//! Before the translation (and before mdbook-xgettext extracts the text),
//! [`protect`] puts each formula where that round trip keeps text as it is:
//! inline math `$…$` in a code span, display math `$$…$$` in an HTML
//! block. After it, [`restore`] takes them out again, before KaTeX runs.

/// The line that opens the HTML block holding a display formula.
const DISPLAY_OPEN: &str = "<div class=\"math-protected\">";

/// `markdown` with each inline formula in a code span (`$x_i$` →
/// `` `$x_i$` ``) and each display formula standing as a paragraph of its
/// own in an HTML block; fenced code and code spans are left alone.
///
/// # Examples
/// ```
/// use attention_book::math::{protect, restore};
///
/// let page = "Weights $\\alpha_i$ sum to 1:\n\n$$\n\\sum_i \\alpha_i = 1\n$$\n\n\
///             Code `a$b` stays.\n";
/// let protected = protect(page);
/// assert!(protected.starts_with("Weights `$\\alpha_i$` sum to 1:\n\n\
///                                <div class=\"math-protected\">\n$$\n"));
/// assert!(protected.contains("Code `a$b` stays."));
/// assert_eq!(restore(&protected), page);
/// ```
pub fn protect(markdown: &str) -> String {
    let lines: Vec<&str> = markdown.split_inclusive('\n').collect();
    let mut out = String::with_capacity(markdown.len() + 256);
    let mut prose = String::new();
    let mut in_code = false;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            out.push_str(&protect_inline(&std::mem::take(&mut prose)));
            in_code = !in_code;
        }
        if in_code || trimmed.starts_with("```") {
            out.push_str(line);
            i += 1;
            continue;
        }
        let blank_before = i == 0 || lines[i - 1].trim().is_empty();
        if let (true, Some(end)) = (blank_before, display_end(&lines, i)) {
            out.push_str(&protect_inline(&std::mem::take(&mut prose)));
            let indent = &line[..line.len() - line.trim_start().len()];
            out.push_str(&format!("{indent}{DISPLAY_OPEN}\n"));
            lines[i..=end].iter().for_each(|l| out.push_str(l));
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&format!("{indent}</div>\n"));
            if !lines[end].ends_with('\n') {
                out.pop();
            }
            i = end + 1;
            continue;
        }
        prose.push_str(line);
        i += 1;
    }
    out.push_str(&protect_inline(&prose));
    out
}

/// Where the display formula opening at line `start` (`$$` first on the
/// line) closes, when it stands as a paragraph of its own: followed by a
/// blank line or the end.
fn display_end(lines: &[&str], start: usize) -> Option<usize> {
    let first = lines[start].trim();
    if !first.starts_with("$$") {
        return None;
    }
    let end = if first.len() > 4 && first.ends_with("$$") {
        start
    } else {
        (start + 1..lines.len()).find(|&j| lines[j].trim().ends_with("$$"))?
    };
    let blank_after =
        end + 1 == lines.len() || lines[end + 1].trim().is_empty();
    blank_after.then_some(end)
}

/// `prose` (no fenced code) with each `$…$` outside code spans in one.
fn protect_inline(prose: &str) -> String {
    let mut out = String::with_capacity(prose.len() + 64);
    let mut rest = prose;
    while let Some(at) = rest.find(['`', '$']) {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        if rest.starts_with('`') {
            // a code span: up to the closing run of as many backticks
            let ticks = rest.len() - rest.trim_start_matches('`').len();
            let fence = &rest[..ticks];
            let end = rest[ticks..]
                .find(fence)
                .map_or(ticks, |e| ticks + e + ticks);
            out.push_str(&rest[..end]);
            rest = &rest[end..];
        } else {
            let delimiter = if rest.starts_with("$$") { "$$" } else { "$" };
            let n = delimiter.len();
            // a formula next to a code span is left as it is: a span
            // around it would merge with that one (the page checks find
            // it)
            let end = rest[n..].find(delimiter).map_or(n, |e| n + e + n);
            let formula = &rest[..end];
            if end > n && !out.ends_with('`') && !rest[end..].starts_with('`') {
                out.push('`');
                out.push_str(formula);
                out.push('`');
            } else {
                out.push_str(formula);
            }
            rest = &rest[end..];
        }
    }
    out.push_str(rest);
    out
}

/// `markdown` with the formulas [`protect`] hid taken out again: code spans
/// that hold only a formula, and the HTML blocks around display math.
pub fn restore(markdown: &str) -> String {
    let mut unwrapped = String::with_capacity(markdown.len());
    let mut lines = markdown.split_inclusive('\n');
    while let Some(line) = lines.next() {
        if line.trim() != DISPLAY_OPEN {
            unwrapped.push_str(line);
            continue;
        }
        // the formula's lines, then the closing tag, which is dropped
        for inner in lines.by_ref() {
            if inner.trim() == "</div>" {
                break;
            }
            unwrapped.push_str(inner);
        }
    }
    restore_inline(&unwrapped)
}

/// `text` with each `` `$…$` `` (a code span holding only a formula, which
/// may run over lines) as `$…$`.
fn restore_inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("`$") {
        out.push_str(&rest[..at]);
        let span = &rest[at + 1..];
        match span.find('`') {
            Some(end) if end >= 2 && span[..end].ends_with('$') => {
                out.push_str(&span[..end]);
                rest = &span[end + 1..];
            }
            _ => {
                out.push('`');
                rest = span;
            }
        }
    }
    out.push_str(rest);
    out
}
