//! The book's figure helpers, named as in d2l: [`show_heatmaps`] (d2l zh
//! §10.1 / en §11.1) and [`plot`] (d2l §2.4 `d2l.plot`), and [`Diagram`]
//! for its box-and-arrow model figures. All return an [`Svg`]; the same
//! input always gives a byte-identical SVG.
//!
//! They draw with plotters' SVG backend without its `ttf` feature: text is
//! written as SVG `<text>` in [`FONT`] and rendered by the browser, so no
//! font is needed to draw a figure.

mod colormap;
mod diagram;
mod heatmap;
mod images;
mod legend;
mod lines;
mod scale;
mod svg;

#[cfg(feature = "native")]
use std::path::Path;

use crate::files::WriteError;
#[cfg(feature = "native")]
use crate::files::write_atomic;

pub use colormap::{Cmap, TAB10};
pub use diagram::{Diagram, Node};
pub use heatmap::{Aspect, CELL_TITLES_MAX, HeatmapOptions, Norm, show_heatmaps};
pub use images::{ImageGrid, ImagePanel, show_images};
pub use lines::{Axes, LINE_TITLES_MAX, LineStyle, POINTS_COLOR, Series, plot};
pub use scale::Scale;
pub use svg::{PRINT_WIDTH, display_width, escape, min_text_px, svg_size};

/// Pixels per inch: `figsize` is given in inches, as in matplotlib.
///
/// # Examples
/// ```
/// use d2l_attention::plot::PX_PER_INCH;
/// use d2l_attention::{Axes, Series, plot};
///
/// // d2l's default 3.5 × 2.5 inches.
/// let svg = plot(&[Series::line(&[0.0, 1.0], &[0.0, 1.0])], &Axes::new("x", "y")).unwrap();
/// let width = 3.5 * PX_PER_INCH;
/// assert!(svg.as_str().starts_with(&format!("<svg width=\"{width}\"")));
/// ```
pub const PX_PER_INCH: f64 = 100.0;
/// Font size of axis labels and titles, in plotters' units ([`PLOTTERS_PT`]),
/// for a figure no wider than the printed page.
const LABEL_FONT: f64 = 15.0;
/// Font size of tick labels, likewise.
const TICK_FONT: f64 = 13.0;
/// plotters writes a font of size s as `font-size` s / 1.24 px.
const PLOTTERS_PT: f64 = 1.24;
/// The figures' font: DejaVu Sans, a wide sans-serif face (its digits take
/// 0.636 em and its lower-case letters 0.563 on average, against 0.556 and
/// 0.490 in Liberation Sans, which has Arial's metrics), so that a layout
/// checked in it holds in the narrower faces `sans-serif` gives where it is
/// missing. Figures are `<object>`s and do not see the page's fonts.
///
/// # Examples
/// ```
/// use d2l_attention::plot::FONT;
/// use d2l_attention::{Axes, Series, plot};
///
/// let svg = plot(&[Series::line(&[0.0, 1.0], &[0.0, 1.0])], &Axes::new("x", "y")).unwrap();
/// assert!(svg.as_str().contains(&format!("font-family=\"{FONT}\"")));
/// assert!(!svg.as_str().contains("font-family=\"sans-serif\""));
/// ```
pub const FONT: &str = "DejaVu Sans, sans-serif";

/// Why a figure could not be drawn or saved.
///
/// # Examples
/// ```
/// use d2l_attention::plot::PlotError;
/// use d2l_attention::{Axes, plot};
///
/// let err = plot(&[], &Axes::new("x", "y")).unwrap_err();
/// assert!(matches!(err, PlotError::InvalidArgument { arg: "series", .. }));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// An argument was unusable; the message names it.
    #[error("invalid `{arg}`: {reason}")]
    InvalidArgument {
        /// The argument's name, as in the function's signature.
        arg: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The tensor could not be read back from its device.
    #[error("cannot read `{arg}` from its device: {reason}")]
    Read {
        /// The argument's name.
        arg: &'static str,
        /// What burn said.
        reason: String,
    },
    /// plotters failed while drawing.
    #[error("drawing failed: {0}")]
    Draw(String),
    /// The SVG could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
}

fn invalid(arg: &'static str, reason: impl Into<String>) -> PlotError {
    PlotError::InvalidArgument {
        arg,
        reason: reason.into(),
    }
}

fn draw_err<E: std::fmt::Debug>(e: E) -> PlotError {
    PlotError::Draw(format!("{e:?}"))
}

/// A finished figure: an SVG document.
///
/// # Examples
/// ```
/// use d2l_attention::{Axes, Series, plot};
///
/// let svg = plot(&[Series::points(&[1.0], &[2.0])], &Axes::new("x", "y")).unwrap();
/// assert!(svg.as_str().contains("<circle"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Svg(String);

impl Svg {
    /// The SVG text.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::{Axes, Series, plot};
    ///
    /// let svg = plot(&[Series::line(&[0.0, 1.0], &[1.0, 0.0])], &Axes::new("t", "y")).unwrap();
    /// assert!(svg.as_str().starts_with("<svg") && svg.as_str().contains("<polyline"));
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Writes the figure to `path` atomically (temp file + rename): on error
    /// nothing at `path` changes.
    ///
    /// # Errors
    /// [`PlotError::Write`] naming `path` when its folder is missing or not
    /// writable.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::{Axes, Series, plot};
    ///
    /// let svg = plot(&[Series::line(&[0.0, 1.0], &[1.0, 0.0])], &Axes::new("t", "y")).unwrap();
    /// let dir = tempfile::tempdir().unwrap();
    /// svg.save(dir.path().join("line.svg")).unwrap();
    /// assert_eq!(std::fs::read_to_string(dir.path().join("line.svg")).unwrap(), svg.as_str());
    /// ```
    #[cfg(feature = "native")]
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), PlotError> {
        Ok(write_atomic(path.as_ref(), self.0.as_bytes())?)
    }
}

/// Checks a `figsize` in inches and returns it in whole pixels.
fn pixels(figsize: (f64, f64)) -> Result<(u32, u32), PlotError> {
    let ok = |v: f64| v.is_finite() && (0.5..=40.0).contains(&v);
    if !ok(figsize.0) || !ok(figsize.1) {
        return Err(invalid(
            "figsize",
            format!("{figsize:?} inches; each side must be in 0.5..=40"),
        ));
    }
    Ok((
        (figsize.0 * PX_PER_INCH).round() as u32,
        (figsize.1 * PX_PER_INCH).round() as u32,
    ))
}

/// Tick positions 0, step, 2·step, … below `n`, with a step of 1, 2 or 5 ×
/// 10^k chosen so that there are at most six ticks (as matplotlib shows a
/// heatmap's rows and columns) and at least `min_step` apart (so that
/// their labels stand apart).
fn integer_ticks(n: usize, min_step: usize) -> Vec<f64> {
    let step = [1, 2, 5]
        .iter()
        .flat_map(|m| (0..10).map(move |e| m * 10usize.pow(e)))
        .filter(|s| n.div_ceil(*s) <= 6 && *s >= min_step)
        .min()
        .unwrap_or(1);
    (0..n).step_by(step).map(|i| i as f64).collect()
}

/// Formats a tick value with at most four decimals and no trailing zeros:
/// `1`, `2.5`, `0.05`; from 1e15 up, in scientific notation (`1e17`).
fn tick_label(v: f64) -> String {
    if v.abs() >= 1e15 {
        return svg::scientific(v);
    }
    let s = format!("{v:.4}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_like_matplotlib() {
        assert_eq!(integer_ticks(1, 1), vec![0.0]);
        assert_eq!(integer_ticks(4, 1), vec![0.0, 1.0, 2.0, 3.0]);
        assert_eq!(integer_ticks(10, 1), vec![0.0, 2.0, 4.0, 6.0, 8.0]);
        assert_eq!(integer_ticks(50, 1), vec![0.0, 10.0, 20.0, 30.0, 40.0]);
        assert_eq!(
            integer_ticks(101, 1),
            vec![0.0, 20.0, 40.0, 60.0, 80.0, 100.0]
        );
        // labels that need two cells' room
        assert_eq!(integer_ticks(2, 2), vec![0.0]);
        assert_eq!(integer_ticks(4, 3), vec![0.0]);
        assert_eq!(integer_ticks(10, 3), vec![0.0, 5.0]);
    }

    #[test]
    fn tick_labels_are_short() {
        assert_eq!(tick_label(-0.00001), "0");
        assert_eq!(tick_label(0.25), "0.25");
        assert_eq!(tick_label(20.0), "20");
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(tick_label(-1.0), "-1");
        assert_eq!(tick_label(1e17), "1e17");
    }

    #[test]
    fn figsize_is_checked() {
        assert_eq!(pixels((2.5, 3.5)).unwrap(), (250, 350));
        for bad in [(0.0, 1.0), (1.0, f64::NAN), (100.0, 1.0)] {
            assert!(pixels(bad).unwrap_err().to_string().contains("`figsize`"));
        }
    }

    #[test]
    fn save_into_a_missing_folder_fails_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("figures");
        std::fs::write(&blocker, "a file where a folder should be").unwrap();
        let err = Svg("<svg/>".into())
            .save(blocker.join("x.svg"))
            .unwrap_err();
        assert!(err.to_string().contains("figures/x.svg"), "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }
}
