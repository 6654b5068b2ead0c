//! What the figures add to plotters' SVG: elements written directly (data
//! with hover titles, legends, cells), text sizes that stay readable where
//! a figure is shown, and subscripts.

/// The narrowest width at which the book shows a figure `width` px wide:
/// on screen at least 400 px (theme/figures.css) and at most mdBook's
/// 750 px column; in print, the A4 text width ([`PRINT_WIDTH`]).
///
/// # Examples
/// ```
/// use d2l_attention::plot::display_width;
///
/// assert_eq!(display_width(250.0), 400.0); // drawn larger on screen
/// assert_eq!(display_width(500.0), 500.0);
/// assert_eq!(display_width(1000.0), 673.0); // shrunk to the printed page
/// ```
pub fn display_width(width: f64) -> f64 {
    width.clamp(400.0, PRINT_WIDTH)
}

/// The A4 text width of the handouts in CSS px: 210 mm less 2 × 16 mm of
/// margin, at 96 px per inch.
pub const PRINT_WIDTH: f64 = 673.0;

/// The smallest text size, in px, that readers see in `svg` when it is
/// shown `display` px wide; `None` without text. The book's figures keep
/// this at 9 px or more at [`display_width`].
///
/// # Examples
/// ```
/// use d2l_attention::plot::{display_width, min_text_px};
/// use d2l_attention::{Axes, Series, plot};
///
/// let wide = Axes::new("x", "y").figsize(10.0, 3.0);
/// let svg = plot(&[Series::line(&[0.0, 1.0], &[0.0, 1.0])], &wide).unwrap();
/// // 1000 px wide, printed 673 px wide: its text is still 9 px or more.
/// assert!(min_text_px(svg.as_str(), display_width(1000.0)).unwrap() >= 9.0);
/// ```
pub fn min_text_px(svg: &str, display: f64) -> Option<f64> {
    let width = svg_size(svg)?.0 as f64;
    svg.split("font-size=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next()?.parse::<f64>().ok())
        .map(|size| size * display / width)
        .reduce(f64::min)
}

/// The (width, height) of an SVG document, px: its first `width` and
/// `height` attributes (those of the `<svg>` element in the book's
/// figures).
///
/// # Examples
/// ```
/// use d2l_attention::plot::svg_size;
///
/// assert_eq!(svg_size("<svg width=\"350\" height=\"250\">"), Some((350, 250)));
/// assert_eq!(svg_size("<svg>"), None);
/// ```
pub fn svg_size(svg: &str) -> Option<(u32, u32)> {
    let attr = |name: &str| {
        let start = svg.find(&format!(" {name}=\""))? + name.len() + 3;
        svg[start..].split('"').next()?.parse().ok()
    };
    Some((attr("width")?, attr("height")?))
}

/// How much larger than at its natural size text must be drawn in a figure
/// `width` px wide so that it keeps its size at [`display_width`].
pub(super) fn text_scale(width: u32) -> f64 {
    (width as f64 / PRINT_WIDTH).max(1.0)
}

/// About how many pixels the widest of `labels` takes at plotters' font
/// size `font` (a digit of [`FONT`](super::FONT) is 0.636 of its size;
/// the rest is room for a wider letter).
pub(super) fn labels_width(labels: &[String], font: f64) -> f64 {
    let widest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    widest as f64 * 0.65 * font / super::PLOTTERS_PT
}

/// `text` with `&`, `<`, `>` and `"` escaped, for SVG and HTML text and
/// attribute values.
///
/// # Examples
/// ```
/// use d2l_attention::plot::escape;
///
/// assert_eq!(escape("\"i'm\" <b> & c"), "&quot;i'm&quot; &lt;b&gt; &amp; c");
/// ```
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A value for a hover title: four significant digits, no trailing zeros
/// after the decimal point; from 1e15 up, in scientific notation.
pub(crate) fn value(v: f64) -> String {
    if v == 0.0 {
        return "0".to_owned();
    }
    if v.abs() >= 1e15 {
        return scientific(v);
    }
    if v == v.round() && v.abs() < 1e6 {
        return format!("{v:.0}");
    }
    let digits = (3 - v.abs().log10().floor() as i32).clamp(0, 8) as usize;
    let s = format!("{v:.digits$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    if s == "-0" { "0" } else { s }.to_owned()
}

/// `v` in scientific notation with four significant digits and no
/// trailing zeros: `1e308`, `-2.5e-310`.
pub(crate) fn scientific(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{}", if v == 0.0 { 0.0 } else { v });
    }
    let s = format!("{v:.3e}");
    let (mantissa, exponent) = s.split_once('e').expect("`e` format");
    let mantissa = if mantissa.contains('.') {
        mantissa.trim_end_matches('0').trim_end_matches('.')
    } else {
        mantissa
    };
    format!("{mantissa}e{exponent}")
}

/// Puts `fragment` into `svg` just before its closing tag (on top of
/// everything plotters drew).
pub(super) fn append(svg: &mut String, fragment: &str) {
    let end = svg.rfind("</svg>").expect("plotters closes the document");
    svg.insert_str(end, fragment);
}

/// Puts `fragment` into `svg` just after the background (under everything
/// plotters drew).
pub(super) fn prepend(svg: &mut String, fragment: &str) {
    let background = svg.find("<rect").expect("plotters fills the background");
    let end = background + svg[background..].find("/>").expect("a rect") + 2;
    svg.insert_str(end, fragment);
}

/// Turns the book's subscript notation `x_{i}` inside text elements into a
/// real subscript: `x<tspan …>i</tspan>`, 70 % of the text's size (written
/// in px, so that the size checks see it) and shifted below the baseline,
/// as a TeX subscript. A `_{` without its `}` before the end of the line
/// or the next tag is left as it is.
pub(super) fn subscripts(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut rest = svg;
    while let Some(start) = rest.find("_{") {
        let after = &rest[start + 2..];
        let end = after
            .find(['}', '<', '\n'])
            .filter(|&e| after[e..].starts_with('}'));
        out.push_str(&rest[..start]);
        let Some(end) = end else {
            out.push_str("_{");
            rest = after;
            continue;
        };
        // the enclosing text element's size: the last one written
        let size = out
            .rsplit("<text ")
            .next()
            .and_then(|tag| tag.split('>').next()?.split("font-size=\"").nth(1))
            .and_then(|s| s.split('"').next()?.parse::<f64>().ok())
            .unwrap_or(16.0);
        out.push_str(&format!(
            "<tspan font-size=\"{}\" baseline-shift=\"sub\">{}</tspan>",
            (size * 0.7 * 100.0).round() / 100.0,
            &after[..end]
        ));
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_four_significant_digits() {
        assert_eq!(value(3.0), "3");
        assert_eq!(value(-0.0), "0");
        assert_eq!(value(1000.4), "1000");
        assert_eq!(value(10000.3), "10000");
        assert_eq!(value(2.5e6), "2500000");
        assert_eq!(value(0.123456), "0.1235");
        assert_eq!(value(0.000123456), "0.0001235");
        assert_eq!(value(-12.5), "-12.5");
        assert_eq!(value(-0.00001), "-0.00001");
        assert_eq!(value(1234.567), "1235");
        assert_eq!(value(1e17), "1e17");
        assert_eq!(value(-f64::MAX), "-1.798e308");
    }

    #[test]
    fn scientific_keeps_four_significant_digits() {
        assert_eq!(scientific(1e308), "1e308");
        assert_eq!(scientific(-2.5e-310), "-2.5e-310");
        assert_eq!(scientific(123456.0), "1.235e5");
        assert_eq!(scientific(0.0), "0");
        assert_eq!(scientific(f64::INFINITY), "inf");
    }

    #[test]
    fn subscripts_become_tspans() {
        let sub = |t: &str| {
            format!("<tspan font-size=\"7\" baseline-shift=\"sub\">{t}</tspan>")
        };
        assert_eq!(
            subscripts("<text font-size=\"10\">\nh_{1} … h_{T}\n</text>"),
            format!(
                "<text font-size=\"10\">\nh{} … h{}\n</text>",
                sub("1"),
                sub("T")
            )
        );
        // Unclosed or spanning a tag or line: left as written.
        for text in ["a_b {c}", "<text>x_{1</text><text>}</text>", "x_{1\n}"] {
            assert_eq!(subscripts(text), text);
        }
    }

    #[test]
    fn text_size_is_measured_at_the_display_width() {
        let svg = "<svg width=\"200\" height=\"100\"><text font-size=\"10\">\
                   a</text><text font-size=\"8\">b</text></svg>";
        assert_eq!(min_text_px(svg, 400.0), Some(16.0));
        assert_eq!(
            min_text_px("<svg width=\"200\" height=\"1\"></svg>", 400.0),
            None
        );
        assert_eq!(text_scale(350), 1.0);
        assert!((text_scale(1000) - 1000.0 / 673.0).abs() < 1e-12);
    }
}
