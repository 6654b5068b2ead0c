//! The numbers a page quotes in its prose, and whether each agrees with
//! what the book's code prints: the check that keeps a sentence from going
//! stale when a listing's output changes.
//!
//! In scope are decimals (`0.58`) and integers of three or more digits
//! (`600`, `1,048,576`) in prose: not in code, math, HTML, links or
//! includes, and not section numbers (`§10.7.3`), versions (`0.22.1`),
//! years (1800–2030) or numbers glued to a letter (`2D`, `1e-5`).

/// A number quoted in a page's prose.
#[derive(Clone, Debug, PartialEq)]
pub struct Quoted {
    /// As written, thousands separators included (`1,048,576`).
    pub text: String,
    /// The 1-based line of the page it stands on.
    pub line: usize,
    /// The sentence around it, as the reader sees it (markup removed).
    pub sentence: String,
}

impl Quoted {
    /// Whether `value`, printed with as many decimals as the prose uses,
    /// reads as this number (its sign ignored): the prose's `0.58` agrees
    /// with an output's `0.5806`, its `9,472` with `9472`.
    ///
    /// # Examples
    /// ```
    /// use attention_book::prose::quoted_numbers;
    ///
    /// let q = &quoted_numbers("Weights up to 0.58 and 9,472 tokens.")[..];
    /// assert!(q[0].agrees_with(0.5806) && !q[0].agrees_with(0.5861));
    /// assert!(q[1].agrees_with(9472.0) && !q[1].agrees_with(9473.0));
    /// ```
    pub fn agrees_with(&self, value: f64) -> bool {
        let written = self.text.replace(',', "");
        let decimals = written.split_once('.').map_or(0, |(_, d)| d.len());
        format!("{:.decimals$}", value.abs()) == written
    }
}

/// The numbers in scope in `markdown`'s prose, in page order.
///
/// # Examples
/// ```
/// use attention_book::prose::quoted_numbers;
///
/// let page = "In 2017, §10.7.3 set 512 units (`d = 512`, $h = 8$);\n\
///             burn 0.22.1 (issue 4694, §10.1–10.2) printed 0.58 at [step 1000](x.md#1000).";
/// let found: Vec<String> = quoted_numbers(page).into_iter().map(|q| q.text).collect();
/// assert_eq!(found, ["512", "0.58", "1000"]);
/// ```
pub fn quoted_numbers(markdown: &str) -> Vec<Quoted> {
    let prose = strip_markup(markdown);
    let mut found = Vec::new();
    for (i, line) in prose.lines().enumerate() {
        for (start, text) in numbers_in(line) {
            found.push(Quoted {
                text: text.to_owned(),
                line: i + 1,
                sentence: sentence_around(&prose, i, start),
            });
        }
    }
    found
}

/// Where the number starting at `start` ends: digits, groups of `,ddd` and
/// a decimal part.
fn number_end(bytes: &[u8], start: usize) -> usize {
    let digits = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    let mut end = digits(start);
    // thousands: a comma and exactly three digits
    while end < bytes.len() && bytes[end] == b',' && digits(end + 1) == end + 4
    {
        end += 4;
    }
    if end + 1 < bytes.len()
        && bytes[end] == b'.'
        && bytes[end + 1].is_ascii_digit()
    {
        end = digits(end + 1);
    }
    end
}

/// The in-scope numbers of one line of stripped prose: (byte offset, text).
fn numbers_in(line: &str) -> Vec<(usize, &str)> {
    let bytes = line.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        let end = number_end(bytes, i);
        let before = line[..i].chars().next_back();
        let after = line[end..].chars().next();
        let glued_before = before
            .is_some_and(|c| c.is_alphanumeric() || "._§#/-:".contains(c));
        // 0.22.1, 1e-5, 2D, 10k: a version, an exponent, a unit or a name
        let glued_after = after
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
            || (after == Some('.')
                && line[end + 1..].starts_with(|c: char| c.is_ascii_digit()));
        // a citation: an issue or pull request number, or the end of a
        // section range (§10.1–10.2)
        let cited = ["issue ", "request "]
            .iter()
            .any(|w| line[..i].ends_with(w))
            || (line[..i].ends_with('–') && section_before(&line[..i]));
        let text = &line[i..end];
        let plain = text.replace(',', "");
        let year = plain.len() == 4
            && !text.contains(',')
            && (1800..=2030).contains(&plain.parse::<u32>().unwrap_or(0));
        let in_scope = text.contains('.') || plain.len() >= 3;
        if !glued_before && !glued_after && !cited && in_scope && !year {
            found.push((i, text));
        }
        i = end;
        // skip the rest of a glued token (0.22.1, 1e-5)
        while i < bytes.len()
            && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'.')
        {
            i += 1;
        }
    }
    found
}

/// Whether `text` (up to an en dash) ends with a section number (§10.1).
fn section_before(text: &str) -> bool {
    let head = text.trim_end_matches('–');
    let number =
        head.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
    number.ends_with('§')
}

/// `markdown` with everything that is not prose replaced by spaces (line
/// breaks kept, so that line numbers stay): fenced code, inline code, math,
/// HTML tags and comments, link targets and `{{#include}}`s.
fn strip_markup(markdown: &str) -> String {
    let mut out = String::with_capacity(markdown.len());
    let mut fence = false;
    let mut display_math = false;
    for line in markdown.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            fence = !fence;
            out.push_str(&blank(line));
            continue;
        }
        if fence {
            out.push_str(&blank(line));
            continue;
        }
        let mut kept = String::with_capacity(line.len());
        let mut rest = line;
        while let Some(c) = rest.chars().next() {
            if display_math {
                match rest.find("$$") {
                    Some(end) => {
                        kept.push_str(&blank(&rest[..end + 2]));
                        rest = &rest[end + 2..];
                        display_math = false;
                    }
                    None => {
                        kept.push_str(&blank(rest));
                        rest = "";
                    }
                }
                continue;
            }
            let skip = if rest.starts_with("$$") {
                display_math = true;
                Some(2)
            } else {
                match c {
                    '`' => rest[1..].find('`').map(|e| e + 2),
                    '$' => rest[1..].find('$').map(|e| e + 2),
                    '<' => rest.find('>').map(|e| e + 1),
                    '{' if rest.starts_with("{{#") => {
                        rest.find("}}").map(|e| e + 2)
                    }
                    ']' if rest.starts_with("](") => {
                        rest.find(')').map(|e| e + 1)
                    }
                    _ => None,
                }
            };
            match skip {
                Some(n) => {
                    kept.push_str(&blank(&rest[..n]));
                    rest = &rest[n..];
                }
                None => {
                    kept.push(c);
                    rest = &rest[c.len_utf8()..];
                }
            }
        }
        out.push_str(&kept);
    }
    out
}

/// `text` with every character but line breaks turned into a space.
fn blank(text: &str) -> String {
    text.chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect()
}

/// The sentence of stripped `prose` around byte `start` of line `line`
/// (0-based), whitespace collapsed.
fn sentence_around(prose: &str, line: usize, start: usize) -> String {
    let lines: Vec<&str> = prose.lines().collect();
    let first = (0..line)
        .rev()
        .find(|&i| lines[i].trim().is_empty())
        .map_or(0, |i| i + 1);
    let last = (line..lines.len())
        .find(|&i| lines[i].trim().is_empty())
        .unwrap_or(lines.len());
    let offset: usize = lines[first..line]
        .iter()
        .map(|l| l.len() + 1)
        .sum::<usize>()
        + start;
    let paragraph = lines[first..last].join("\n");
    let is_end = |s: &str| {
        s.ends_with(". ")
            || s.ends_with(".\n")
            || s.ends_with("? ")
            || s.ends_with("! ")
    };
    let from = (0..offset)
        .rev()
        .find(|&i| paragraph.is_char_boundary(i) && is_end(&paragraph[..i]))
        .unwrap_or(0);
    let to = (offset..paragraph.len())
        .find(|&i| {
            paragraph.is_char_boundary(i + 1)
                && paragraph[..=i].ends_with('.')
                && paragraph[i + 1..].starts_with(char::is_whitespace)
        })
        .map_or(paragraph.len(), |i| i + 1);
    paragraph[from..to]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}
