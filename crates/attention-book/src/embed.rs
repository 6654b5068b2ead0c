//! How pages show figures: each Markdown image of an SVG in `figures/`
//! becomes an `<object>` (so that the SVG's hover `<title>`s show, which
//! they do not inside `<img>`) in a `<figure>` whose caption is the image's
//! description.

use std::fs;
use std::path::Path;

use pulldown_cmark_escape::{escape_html, escape_html_body_text};
use regex::Regex;

/// `markdown` with every line that is only `![description](figures/NAME.svg)`
/// replaced by the figure's HTML; the SVG's natural size is read from
/// `root/figures/NAME.svg` (its `width` and `height`), so that the page
/// keeps the figure's proportions before it loads. Other lines, and lines
/// inside fenced code blocks, are kept.
///
/// # Errors
/// Naming the figure when its SVG is missing or has no size.
///
/// # Examples
/// ```
/// use attention_book::embed::embed_figures;
///
/// let root = tempfile::tempdir().unwrap();
/// std::fs::create_dir(root.path().join("figures")).unwrap();
/// let svg = "<svg width=\"350\" height=\"250\" viewBox=\"0 0 350 250\"></svg>";
/// std::fs::write(root.path().join("figures/loss.svg"), svg).unwrap();
/// let page = "Text.\n\n![Training loss](figures/loss.svg)\n";
/// let html = embed_figures(page, root.path()).unwrap();
/// assert!(html.contains("<object data=\"figures/loss.svg\" type=\"image/svg+xml\""));
/// assert!(html.contains("<figcaption id=\"figure-loss\">Training loss</figcaption>"));
/// assert!(html.starts_with("Text.\n\n<figure"));
/// ```
pub fn embed_figures(markdown: &str, root: &Path) -> anyhow::Result<String> {
    let mut out = String::with_capacity(markdown.len());
    let mut in_code = false;
    for line in markdown.split_inclusive('\n') {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        match figure_of(line.trim_end()).filter(|_| !in_code) {
            Some((alt, file)) => {
                out.push_str(&figure_html(alt, file, root)?);
                out.push('\n');
            }
            None => out.push_str(line),
        }
    }
    Ok(out)
}

/// `markdown` with a warning before the first place that shows one of the
/// failed listing's files (`figures/NAME…`), or before the code block
/// holding it: what failed, and that the output shown is from the last
/// successful run. A page that shows none of its files is returned as it
/// is.
///
/// # Examples
/// ```
/// use attention_book::Failure;
/// use attention_book::embed::with_failure_notice;
///
/// let failure = Failure {
///     listing: "nw-train".into(),
///     message: "invalid `series`: series[0] point 3 is (4, NaN)".into(),
///     kept: vec!["nw-train.txt".into(), "nw-loss.svg".into()],
/// };
/// let page = "Text.\n\n```text\n{{#include figures/nw-train.txt}}\n```\n";
/// let html = with_failure_notice(page, &failure);
/// assert!(html.starts_with("Text.\n\n<div class=\"warning\">"));
/// assert!(html.contains("invalid <code>series</code>: series[0] point 3 is (4, NaN)"));
/// assert!(html.ends_with("</div>\n\n```text\n{{#include figures/nw-train.txt}}\n```\n"));
/// ```
pub fn with_failure_notice(markdown: &str, failure: &crate::Failure) -> String {
    let names: Vec<String> = std::iter::once(format!("{}.", failure.listing))
        .chain(failure.kept.iter().cloned())
        .map(|f| format!("figures/{f}"))
        .collect();
    let lines: Vec<&str> = markdown.split_inclusive('\n').collect();
    let (mut fence, mut at) = (None, None);
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("```") {
            fence = if fence.is_some() { None } else { Some(i) };
        }
        if names.iter().any(|n| line.contains(n.as_str())) {
            at = Some(fence.unwrap_or(i));
            break;
        }
    }
    let Some(at) = at else {
        return markdown.to_owned();
    };
    let notice = format!(
        "<div class=\"warning\"><p><strong>The listing <code>{}</code> \
         failed</strong> when this page was built: {}</p><p>The output and \
         figures below are those of its last successful run.</p></div>\n\n",
        text(&failure.listing),
        code_spans(&text(&failure.message))
    );
    insert_before(&lines, at, &notice)
}

/// `lines` joined, with `notice` before line `at` (0-based).
fn insert_before(lines: &[&str], at: usize, notice: &str) -> String {
    let mut out = lines[..at].concat();
    out.push_str(notice);
    out.push_str(&lines[at..].concat());
    out
}

/// `markdown` with a notice above the paragraph on `quoted`'s line: its
/// number agrees with none of the page's outputs (a listing ran again and
/// printed another), so the sentence has gone stale.
///
/// # Examples
/// ```
/// use attention_book::embed::with_stale_notice;
/// use attention_book::prose::quoted_numbers;
///
/// let page = "# Title\n\nThe weights reach\n0.58 at most.\n";
/// let marked = with_stale_notice(page, &quoted_numbers(page)[0]);
/// let (before, after) = marked.split_once("<div class=\"warning\">").unwrap();
/// assert_eq!(before, "# Title\n\n");
/// assert!(after.contains("<strong>0.58 agrees with none"));
/// assert!(after.ends_with("</div>\n\nThe weights reach\n0.58 at most.\n"));
/// ```
pub fn with_stale_notice(
    markdown: &str,
    quoted: &crate::prose::Quoted,
) -> String {
    let lines: Vec<&str> = markdown.split_inclusive('\n').collect();
    let line = quoted.line.saturating_sub(1).min(lines.len());
    let start = lines[..line]
        .iter()
        .rposition(|l| l.trim().is_empty())
        .map_or(0, |blank| blank + 1);
    let notice = format!(
        "<div class=\"warning\"><p><strong>{} agrees with none of this \
         page's outputs</strong> (a listing ran again and printed another): \
         the sentence “{}” needs correcting, and <code>cargo test</code> \
         fails until it is.</p></div>\n\n",
        text(&quoted.text),
        text(&quoted.sentence)
    );
    insert_before(&lines, start, &notice)
}

/// `text` with each pair of backticks turned into `<code>` tags.
fn code_spans(text: &str) -> String {
    text.split('`')
        .enumerate()
        .map(|(i, part)| match i % 2 {
            1 => format!("<code>{part}</code>"),
            _ => part.to_owned(),
        })
        .collect()
}

/// (description, path) of a line that is only an image of an SVG figure.
fn figure_of(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("![")?;
    let (alt, rest) = rest.split_once("](")?;
    let file = rest.strip_suffix(')')?;
    (file.starts_with("figures/")
        && file.ends_with(".svg")
        && !alt.contains(']'))
    .then_some((alt, file))
}

fn figure_html(alt: &str, file: &str, root: &Path) -> anyhow::Result<String> {
    let svg = fs::read_to_string(root.join(file))
        .map_err(|e| anyhow::anyhow!("figure `{file}`: {e}"))?;
    let Some((width, height)) = natural_size(&svg) else {
        anyhow::bail!("figure `{file}` has no width and height");
    };
    let name = file.trim_start_matches("figures/").trim_end_matches(".svg");
    let (alt, file, name) = (text(alt), attribute(file), attribute(name));
    // the width at which the smallest text is 9 px (print keeps it)
    let legible = smallest_text(&svg)
        .map_or(0.0, |px| f64::from(width) * 9.0 / px)
        .ceil();
    Ok(format!(
        "<figure class=\"figure\">\n<object data=\"{file}\" \
         type=\"image/svg+xml\" role=\"img\" aria-labelledby=\"figure-{name}\" \
         style=\"--width: {width}px; --aspect: {aspect:.4}; \
         --legible: {legible}px; aspect-ratio: {width} / {height}\"></object>\n\
         <figcaption id=\"figure-{name}\">{alt}</figcaption>\n</figure>\n",
        aspect = f64::from(width) / f64::from(height),
    ))
}

/// The smallest `font-size` in `svg`, px, if it has text: the rule of
/// d2l-attention's `plot::min_text_px`, which the preprocessor does not
/// link (it would compile burn); `tests/pages.rs` checks the figures
/// with that one.
fn smallest_text(svg: &str) -> Option<f64> {
    svg.split("font-size=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next()?.parse::<f64>().ok())
        .reduce(f64::min)
}

/// The `width` and `height` of `svg`'s `<svg>` element, px.
fn natural_size(svg: &str) -> Option<(u32, u32)> {
    let attribute = |name: &str| {
        let pattern = format!(r#"<svg\b[^>]*?\s{name}="(\d+)""#);
        Regex::new(&pattern).ok()?.captures(svg)?[1].parse().ok()
    };
    Some((attribute("width")?, attribute("height")?))
}

/// `s` escaped for HTML text (`&`, `<`, `>`; quotes stay, so that math in
/// a caption reaches KaTeX as written).
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_html_body_text(&mut out, s).expect("writing to a String");
    out
}

/// `s` escaped for a quoted HTML attribute value.
fn attribute(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_html(&mut out, s).expect("writing to a String");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_line_svg_figures_are_embedded() {
        assert_eq!(
            figure_of("![a \"b\" c](figures/x.svg)"),
            Some(("a \"b\" c", "figures/x.svg"))
        );
        for line in [
            "see ![a](figures/x.svg)",
            "![a](figures/x.png)",
            "![a](other/x.svg)",
            "`![a](figures/x.svg)`",
        ] {
            assert_eq!(figure_of(line), None, "{line}");
        }
    }

    #[test]
    fn figures_inside_code_blocks_are_left_as_written() {
        let root = tempfile::tempdir().unwrap();
        let page = "```md\n![a](figures/x.svg)\n```\n";
        assert_eq!(embed_figures(page, root.path()).unwrap(), page);
    }

    #[test]
    fn a_missing_figure_is_named() {
        let root = tempfile::tempdir().unwrap();
        let err =
            embed_figures("![a](figures/gone.svg)\n", root.path()).unwrap_err();
        assert!(
            err.to_string().contains("figure `figures/gone.svg`"),
            "{err}"
        );
    }

    /// `markdown` embedded in a book whose only figure, `figures/x.svg`,
    /// is `svg`.
    fn embedded_with(svg: &str, markdown: &str) -> String {
        let root = tempfile::tempdir().unwrap();
        fs::create_dir(root.path().join("figures")).unwrap();
        fs::write(root.path().join("figures/x.svg"), svg).unwrap();
        embed_figures(markdown, root.path()).unwrap()
    }

    #[test]
    fn descriptions_are_escaped() {
        let html = embedded_with(
            "<svg width=\"10\" height=\"20\"></svg>",
            "![\"i'm home\" <b>](figures/x.svg)",
        );
        assert!(html.contains(">\"i'm home\" &lt;b&gt;</figcaption>"));
        assert!(html.contains(
            "--width: 10px; --aspect: 0.5000; --legible: 0px; aspect-ratio: 10 / 20"
        ));
    }

    #[test]
    fn print_keeps_the_width_at_which_the_smallest_text_is_9_px() {
        let html = embedded_with(
            "<svg width=\"400\" height=\"300\"><text font-size=\"18\">a\
             <tspan font-size=\"12\">1</tspan></text></svg>",
            "![x](figures/x.svg)",
        );
        // 12 px at 400 px wide is 9 px at 300
        assert!(html.contains("--legible: 300px;"), "{html}");
    }

    #[test]
    fn the_size_is_the_svg_element_s() {
        let svg = "<?xml version=\"1.0\"?>\n<svg xmlns=\"x\" width=\"350\" \
                   height=\"250\"><rect width=\"9\" height=\"9\"/></svg>";
        assert_eq!(natural_size(svg), Some((350, 250)));
        assert_eq!(
            natural_size("<svg><rect width=\"9\" height=\"9\"/></svg>"),
            None
        );
    }
}
