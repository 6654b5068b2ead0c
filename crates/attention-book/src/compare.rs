//! "The same result", not "the same bytes": how a committed figure or
//! captured output is compared with what the code makes now.
//!
//! f32 results differ in their last digits between CPUs (with or without
//! FMA and AVX-512, whose kernels order sums differently) and between debug
//! and release builds, so a byte comparison fails on a reader's machine for
//! no reason. Both sides are cut into tokens instead: numbers, `#RRGGBB`
//! colours and words (whitespace only separates tokens, since a number's
//! printed width may change its padding). Words must be equal; numbers and
//! colours may differ within [`tolerance`]. Lines are compared in order,
//! so a line added or lost is a mismatch too.

use std::fmt;

/// Every tolerance of the comparison, in one place.
pub mod tolerance {
    /// Relative tolerance of a printed number with a fraction or exponent:
    /// f32 carries about 7 significant digits; 1e-5 (≈ 80 units in the
    /// last place) leaves room for the rounding of a few hundred sums
    /// ordered differently, as in the golden tests' `1e-5 + 1e-5·|ref|`.
    pub const REL: f64 = 1e-5;
    /// Absolute tolerance of the same numbers: values that measure rounding
    /// error itself (a loop against its vectorised form, ≈ 1e-7) may take
    /// any value below it.
    pub const ABS: f64 = 1e-5;
    /// Pixel tolerance of an integer in an SVG position or size attribute
    /// ([`PIXEL_ATTRIBUTES`]). plotters rounds coordinates to whole pixels,
    /// so a shift of 0.5 px or less in the plotted value may move the
    /// rounded one by 1.
    pub const PX: f64 = 1.0;
    /// The SVG attributes whose integers are pixels.
    pub const PIXEL_ATTRIBUTES: &[&str] = &[
        "x",
        "y",
        "x1",
        "y1",
        "x2",
        "y2",
        "cx",
        "cy",
        "r",
        "width",
        "height",
        "points",
        "transform",
    ];
    /// Tolerance of each channel of an SVG colour: a colour map's value
    /// rounded to 8 bits may move by one step.
    pub const COLOUR: u8 = 1;

    /// Whether printed numbers `a` and `b` are the same result: within
    /// [`ABS`] + [`REL`]·max(|a|, |b|), and always within one unit in the
    /// last printed digit (`unit`: 0.0001 for a value printed to 4
    /// decimals, since rounding may flip that digit; with a slack of 1e-9
    /// units for the binary rounding of the two decimals). Callers pass the
    /// finer of the two numbers' units, so a number printed with fewer
    /// digits (`0.1447` → `0.1`, `1.0000` → `2`) gets no slack of its own.
    pub fn numbers_agree(a: f64, b: f64, unit: f64) -> bool {
        (a - b).abs() <= allowed(a, b, unit)
    }

    /// The largest difference [`numbers_agree`] accepts.
    pub fn allowed(a: f64, b: f64, unit: f64) -> f64 {
        (ABS + REL * a.abs().max(b.abs())).max(unit * (1.0 + 1e-9))
    }
}

/// How a file's tokens are compared: by its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Captured text: integers exactly (counts, shapes, indices), other
    /// numbers within [`tolerance::numbers_agree`].
    Text,
    /// An SVG: integers of position and size attributes within
    /// [`tolerance::PX`], colours within [`tolerance::COLOUR`], everything
    /// else (other attributes, text between tags) as [`Format::Text`].
    Svg,
}

impl Format {
    /// [`Format::Svg`] for a `.svg` name, else [`Format::Text`].
    pub fn of(file_name: &str) -> Self {
        if file_name.ends_with(".svg") {
            Format::Svg
        } else {
            Format::Text
        }
    }
}

/// One place where a new file departs from the committed one.
#[derive(Clone, Debug, PartialEq)]
pub struct Mismatch {
    /// The 1-based line number.
    pub line: usize,
    /// The committed line (empty past the end of the file).
    pub committed: String,
    /// The new line (empty past the end of the file).
    pub new: String,
    /// What differs: the two tokens and the tolerance, or the line counts.
    pub what: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}: {}", self.line, self.what)?;
        writeln!(f, "    committed: {}", shorten(&self.committed))?;
        write!(f, "    new:       {}", shorten(&self.new))
    }
}

fn shorten(line: &str) -> String {
    const MAX: usize = 160;
    if line.chars().count() <= MAX {
        line.to_owned()
    } else {
        line.chars().take(MAX).chain("…".chars()).collect()
    }
}

/// Compares `new` with `committed`, line by line and token by token (see
/// the module docs), and returns every mismatch, in line order.
pub fn compare(committed: &str, new: &str, format: Format) -> Vec<Mismatch> {
    let (old_lines, new_lines): (Vec<&str>, Vec<&str>) =
        (committed.lines().collect(), new.lines().collect());
    let mut mismatches = Vec::new();
    for (i, (a, b)) in old_lines.iter().zip(&new_lines).enumerate() {
        if let Some(what) = compare_line(a, b, format) {
            mismatches.push(Mismatch {
                line: i + 1,
                committed: (*a).to_owned(),
                new: (*b).to_owned(),
                what,
            });
        }
    }
    if old_lines.len() != new_lines.len() {
        // First, since it explains the mismatches after the lost line.
        let at = old_lines.len().min(new_lines.len());
        mismatches.insert(
            0,
            Mismatch {
                line: at + 1,
                committed: old_lines
                    .get(at)
                    .copied()
                    .unwrap_or_default()
                    .to_owned(),
                new: new_lines.get(at).copied().unwrap_or_default().to_owned(),
                what: format!(
                    "{} lines committed, {} now",
                    old_lines.len(),
                    new_lines.len()
                ),
            },
        );
    }
    mismatches
}

/// Compares the committed and the new text of the file `name` (its
/// [`Format`] from its extension): the failure [`report`], or `None` when
/// they agree.
pub fn compare_file(name: &str, committed: &str, new: &str) -> Option<String> {
    let mismatches = compare(committed, new, Format::of(name));
    (!mismatches.is_empty()).then(|| report(name, &mismatches))
}

/// Formats the mismatches of one file for a failure message: at most ten,
/// then how many more.
pub fn report(file: &str, mismatches: &[Mismatch]) -> String {
    const SHOWN: usize = 10;
    let mut text = format!("{file}: {} mismatch(es)\n", mismatches.len());
    for m in mismatches.iter().take(SHOWN) {
        text.push_str(&format!("{file}:{m}\n"));
    }
    if mismatches.len() > SHOWN {
        text.push_str(&format!("… and {} more\n", mismatches.len() - SHOWN));
    }
    text
}

/// The first difference between two lines, described; `None` when they
/// agree.
fn compare_line(a: &str, b: &str, format: Format) -> Option<String> {
    let (ta, tb) = (tokens(a, format), tokens(b, format));
    for (x, y) in ta.iter().zip(&tb) {
        if let Some(what) = compare_tokens(x, y) {
            return Some(what);
        }
    }
    (ta.len() != tb.len()).then(|| {
        format!(
            "{} tokens committed, {} now (text differs)",
            ta.len(),
            tb.len()
        )
    })
}

fn compare_tokens(a: &Token, b: &Token) -> Option<String> {
    use tolerance::{COLOUR, PX, allowed, numbers_agree};
    let agree = match (a, b) {
        (Token::Word(x), Token::Word(y)) => x == y,
        (Token::Colour(x), Token::Colour(y)) => {
            x.iter().zip(y).all(|(p, q)| p.abs_diff(*q) <= COLOUR)
        }
        (Token::Number(x), Token::Number(y))
            if x.integer && y.integer && x.pixel =>
        {
            (x.value - y.value).abs() <= PX
        }
        (Token::Number(x), Token::Number(y)) if x.integer && y.integer => {
            x.value == y.value
        }
        (Token::Number(x), Token::Number(y)) => {
            numbers_agree(x.value, y.value, x.unit.min(y.unit))
        }
        _ => false,
    };
    if agree {
        return None;
    }
    let tolerance = match (a, b) {
        (Token::Colour(_), Token::Colour(_)) => {
            format!("tolerance ±{COLOUR} per channel")
        }
        (Token::Number(x), Token::Number(y))
            if x.integer && y.integer && x.pixel =>
        {
            format!("tolerance ±{PX} px")
        }
        (Token::Number(x), Token::Number(y)) if x.integer && y.integer => {
            "integers must be equal".to_owned()
        }
        (Token::Number(x), Token::Number(y)) => format!(
            "|Δ| = {:.3e} > tolerance {:.3e}",
            (x.value - y.value).abs(),
            allowed(x.value, y.value, x.unit.min(y.unit))
        ),
        _ => "text must be equal".to_owned(),
    };
    Some(format!(
        "committed `{}`, new `{}` ({tolerance})",
        a.text(),
        b.text()
    ))
}

#[derive(Clone, Debug, PartialEq)]
enum Token {
    Word(String),
    Number(Number),
    Colour([u8; 3]),
}

#[derive(Clone, Debug, PartialEq)]
struct Number {
    text: String,
    value: f64,
    /// One unit in the last printed digit: 0.01 for `1.25`, 1e-8 for `7.2e-7`.
    unit: f64,
    /// Printed without a fraction or exponent.
    integer: bool,
    /// In an SVG position or size attribute ([`tolerance::PIXEL_ATTRIBUTES`]).
    pixel: bool,
}

impl Token {
    fn text(&self) -> String {
        match self {
            Token::Word(w) => w.clone(),
            Token::Number(n) => n.text.clone(),
            Token::Colour([r, g, b]) => format!("#{r:02X}{g:02X}{b:02X}"),
        }
    }
}

/// Every number in `text`, read as the comparison reads captured output
/// (`-0.5`, `2.5e-3`; digits inside a word such as `d2l` are not numbers).
///
/// # Examples
/// ```
/// use attention_book::compare::numbers;
///
/// assert_eq!(numbers("loss 0.019 in d2l, lr 5e-3, [-2]"), [0.019, 5e-3, -2.0]);
/// ```
pub fn numbers(text: &str) -> Vec<f64> {
    text.lines()
        .flat_map(|line| tokens(line, Format::Text))
        .filter_map(|token| match token {
            Token::Number(n) => Some(n.value),
            _ => None,
        })
        .collect()
}

/// Cuts a line into tokens; whitespace separates them and is dropped.
fn tokens(line: &str, format: Format) -> Vec<Token> {
    let chars: Vec<char> = line.chars().collect();
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_tag = false;
    // The attribute being read, inside a tag.
    let mut attribute = String::new();
    let mut i = 0;
    let flush = |word: &mut String, out: &mut Vec<Token>| {
        if !word.is_empty() {
            out.push(Token::Word(std::mem::take(word)));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if format == Format::Svg && (c == '<' || c == '>') {
            in_tag = c == '<';
            attribute.clear();
        }
        if in_tag && word.ends_with("=\"") {
            attribute = word.trim_end_matches("=\"").to_owned();
        }
        if let Some((colour, len)) = colour_at(&chars[i..]) {
            flush(&mut word, &mut out);
            out.push(Token::Colour(colour));
            i += len;
        } else if let Some((mut number, len)) = number_at(&chars, i) {
            flush(&mut word, &mut out);
            number.pixel = in_tag
                && tolerance::PIXEL_ATTRIBUTES.contains(&attribute.as_str());
            out.push(Token::Number(number));
            i += len;
        } else {
            if c.is_whitespace() {
                flush(&mut word, &mut out);
            } else {
                word.push(c);
            }
            i += 1;
        }
    }
    flush(&mut word, &mut out);
    out
}

/// `#RRGGBB` at the start of `chars`, not followed by another hex digit.
fn colour_at(chars: &[char]) -> Option<([u8; 3], usize)> {
    let hex: String = chars.get(1..7)?.iter().collect();
    let boundary = chars.get(7).is_none_or(|c| !c.is_ascii_hexdigit());
    if chars[0] != '#'
        || !boundary
        || !hex.chars().all(|c| c.is_ascii_hexdigit())
    {
        return None;
    }
    let channel = |k: usize| u8::from_str_radix(&hex[k..k + 2], 16).ok();
    Some(([channel(0)?, channel(2)?, channel(4)?], 7))
}

/// A number starting at `chars[start]`: an optional `-` (not after a letter
/// or digit, where it is a hyphen), digits, an optional fraction and an
/// optional exponent. Digits after a letter belong to a word (`x1`, `d2l`).
fn number_at(chars: &[char], start: usize) -> Option<(Number, usize)> {
    let at = |k: usize| chars.get(k).copied();
    if start > 0
        && (chars[start - 1].is_alphabetic() || chars[start - 1] == '_')
    {
        return None;
    }
    let mut i = start;
    if at(i) == Some('-') {
        let after_word = start > 0 && chars[start - 1].is_alphanumeric();
        if after_word || !at(i + 1).is_some_and(|c| c.is_ascii_digit()) {
            return None;
        }
        i += 1;
    }
    let digits = |mut k: usize| {
        while at(k).is_some_and(|c| c.is_ascii_digit()) {
            k += 1;
        }
        k
    };
    let int_end = digits(i);
    if int_end == i {
        return None;
    }
    let mut end = int_end;
    let mut decimals = 0i32;
    if at(end) == Some('.') && at(end + 1).is_some_and(|c| c.is_ascii_digit()) {
        let frac_end = digits(end + 1);
        decimals = (frac_end - end - 1) as i32;
        end = frac_end;
    }
    let mut exponent = 0i32;
    let mut has_exponent = false;
    if matches!(at(end), Some('e' | 'E')) {
        let sign = usize::from(matches!(at(end + 1), Some('-' | '+')));
        let exp_end = digits(end + 1 + sign);
        if exp_end > end + 1 + sign {
            let text: String = chars[end + 1..exp_end].iter().collect();
            exponent = text.parse().ok()?;
            has_exponent = true;
            end = exp_end;
        }
    }
    let text: String = chars[start..end].iter().collect();
    let value: f64 = text.parse().ok()?;
    Some((
        Number {
            unit: 10f64.powi(exponent - decimals),
            integer: decimals == 0 && !has_exponent,
            value,
            text,
            pixel: false,
        },
        end - start,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agree(a: &str, b: &str, format: Format) -> bool {
        compare(a, b, format).is_empty()
    }

    #[test]
    fn last_digit_noise_passes_and_real_changes_fail() {
        let committed =
            "epoch 1, loss 34.527077\nw = 11.9600 (started at 0.7128)\n";
        // The reader's machine of the portability issue printed …073.
        assert!(agree(
            committed,
            "epoch 1, loss 34.527073\nw = 11.9601 (started at 0.7128)\n",
            Format::Text
        ));
        let changed = compare(
            committed,
            "epoch 1, loss 34.520000\nw = 11.9600 (started at 0.7128)\n",
            Format::Text,
        );
        assert_eq!(changed.len(), 1);
        assert_eq!(changed[0].line, 1);
        assert!(
            changed[0]
                .what
                .starts_with("committed `34.527077`, new `34.520000` (|Δ| = 7.077e-3 > tolerance"),
            "{}",
            changed[0].what
        );
        // Two units in the last digit of a 4-decimal value is too much.
        assert!(!agree("w = 11.9600", "w = 11.9602", Format::Text));
        // Fewer printed digits bring no slack of their own.
        for (a, b) in [
            ("0.1447", "0.1"),
            ("0.1447", "0"),
            ("1.0000", "2"),
            ("34.527077", "35"),
        ] {
            assert!(!agree(a, b, Format::Text), "{a} vs {b}");
        }
        assert!(!agree("gap 0.0e0", "gap 9.0e-2", Format::Text));
        // Shortest-form printing may add digits for a last-bit change.
        assert!(agree("[[4.5]]", "[[4.5000005]]", Format::Text));
    }

    #[test]
    fn integers_words_and_line_counts_are_exact() {
        assert!(!agree("shape [2, 4, 6]", "shape [2, 4, 7]", Format::Text));
        assert!(!agree("il est bon .", "il est riche .", Format::Text));
        assert!(!agree("a\nb\n", "a\n", Format::Text));
        // Padding that moves with a number's width is not a difference.
        assert!(agree(" -0.0000  1.0", "  0.0000  1.0", Format::Text));
        assert!(agree("gap 7.2e-7", "gap 1.4e-6", Format::Text));
        assert!(!agree("gap 7.2e-3", "gap 1.4e-2", Format::Text));
        assert!(agree("n_train^(-1/5)", "n_train^(-1/5)", Format::Text));
        assert!(!agree("d2l x1", "d3l x2", Format::Text));
    }

    #[test]
    fn svg_coordinates_and_colours_move_a_little_text_does_not() {
        let a =
            r##"<rect x="52" y="45" width="2" fill="#970C13" opacity="0.5"/>"##;
        let b =
            r##"<rect x="53" y="44" width="2" fill="#980B13" opacity="0.4"/>"##;
        assert!(agree(a, b, Format::Svg));
        let far =
            r##"<rect x="55" y="45" width="2" fill="#970C13" opacity="0.5"/>"##;
        assert!(!agree(a, far, Format::Svg));
        let recoloured =
            r##"<rect x="52" y="45" width="2" fill="#970C16" opacity="0.5"/>"##;
        assert!(!agree(a, recoloured, Format::Svg));
        let faded =
            r##"<rect x="52" y="45" width="2" fill="#970C13" opacity="0.2"/>"##;
        assert!(!agree(a, faded, Format::Svg));
        // Only positions and sizes are pixels: an opacity of 1 stays 1.
        let opaque = r#"<line opacity="1"/>"#;
        assert!(!agree(opaque, r#"<line opacity="2"/>"#, Format::Svg));
        assert!(!agree(opaque, r#"<line opacity="0.5"/>"#, Format::Svg));
        let font = r#"<text font-size="11.290322580645162">"#;
        assert!(!agree(font, r#"<text font-size="12">"#, Format::Svg));
        let line =
            r#"<polyline points="6,9 10,12" transform="rotate(270, 6, 104)"/>"#;
        let moved =
            r#"<polyline points="7,8 10,13" transform="rotate(270, 5, 105)"/>"#;
        assert!(agree(line, moved, Format::Svg));
        // A tick label is text: an integer label must not change.
        assert!(!agree(
            r#"<text x="4">10</text>"#,
            r#"<text x="4">11</text>"#,
            Format::Svg
        ));
        assert!(agree(
            r#"<text x="4">0.05</text>"#,
            r#"<text x="5">0.05</text>"#,
            Format::Svg
        ));
        assert!(!agree(
            r#"<rect x="4"/>"#,
            r#"<circle x="4"/>"#,
            Format::Svg
        ));
    }

    #[test]
    fn a_report_shows_file_line_both_values_and_the_tolerance() {
        let m = compare("loss 0.020\n", "loss 0.025\n", Format::Text);
        let text = report("figures/x.txt", &m);
        assert_eq!(
            text,
            "figures/x.txt: 1 mismatch(es)\n\
             figures/x.txt:1: committed `0.020`, new `0.025` (|Δ| = 5.000e-3 > tolerance 1.000e-3)\n    \
             committed: loss 0.020\n    new:       loss 0.025\n"
        );
    }
}
