//! `plot`: lines and scatter points on one pair of axes; the series and
//! axes it takes here, the drawing in [`draw`].

mod draw;

pub use draw::plot;

use plotters::style::RGBColor;

use super::TAB10;
use super::scale::Scale;

/// How a line is stroked.
///
/// # Examples
/// ```
/// use d2l_attention::plot::LineStyle;
/// use d2l_attention::{Axes, Series, plot};
///
/// let dashed = Series::line(&[0.0, 1.0], &[0.0, 1.0]).style(LineStyle::Dashed);
/// let svg = plot(&[dashed], &Axes::new("x", "y")).unwrap();
/// assert!(svg.as_str().contains("stroke-dasharray=\"7 4\" points="));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineStyle {
    /// A solid line (matplotlib `-`).
    Solid,
    /// Long dashes (matplotlib `--`).
    Dashed,
    /// Short dashes, standing in for matplotlib's `-.`.
    DashDot,
    /// Dots (matplotlib `:`).
    Dotted,
}

#[derive(Clone, Debug, PartialEq)]
enum Mark {
    Line(Option<LineStyle>),
    Points,
}

/// How many ticks the y axis asks for.
const Y_LABELS: usize = 6;

/// One data series of a [`plot`]: a line or a set of scatter points.
///
/// # Examples
/// ```
/// use d2l_attention::Series;
///
/// let a = Series::line(&[0.0, 1.0], &[2.0, 3.0]).label("a");
/// assert_eq!(a, Series::line(&[0.0, 1.0], &[2.0, 3.0]).label("a"));
/// assert_ne!(a, Series::points(&[0.0, 1.0], &[2.0, 3.0]).label("a"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    x: Vec<f64>,
    y: Vec<f64>,
    mark: Mark,
    label: Option<String>,
    color: Option<RGBColor>,
    alpha: f64,
}

impl Series {
    fn new(x: &[f64], y: &[f64], mark: Mark) -> Self {
        Series {
            x: x.to_vec(),
            y: y.to_vec(),
            mark,
            label: None,
            color: None,
            alpha: 1.0,
        }
    }

    /// A line through the points `(x[i], y[i])`. Lines without an explicit
    /// [`color`](Self::color) take d2l's format cycle in order: solid blue,
    /// dashed magenta, dash-dot green, dotted red (an explicit
    /// [`style`](Self::style) replaces the cycle's); a line with its own
    /// colour is solid unless styled, and leaves the cycle where it was.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::{Axes, Series, plot};
    ///
    /// let svg = plot(&[Series::line(&[0.0, 1.0, 2.0], &[0.0, 1.0, 4.0])], &Axes::new("x", "y"));
    /// // The first line takes d2l's first format: solid matplotlib blue.
    /// assert!(svg.unwrap().as_str().contains("stroke=\"#1F77B4\""));
    /// ```
    pub fn line(x: &[f64], y: &[f64]) -> Self {
        Self::new(x, y, Mark::Line(None))
    }

    /// Scatter points `(x[i], y[i])`, drawn as filled circles (matplotlib `o`).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::{Axes, Series, plot};
    ///
    /// let svg = plot(&[Series::points(&[1.0, 2.0, 3.0], &[3.0, 1.0, 2.0])], &Axes::new("x", "y"));
    /// assert_eq!(svg.unwrap().as_str().matches("<circle").count(), 3);
    /// ```
    pub fn points(x: &[f64], y: &[f64]) -> Self {
        Self::new(x, y, Mark::Points)
    }

    /// The series' name in the legend.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::{Axes, Series, plot};
    ///
    /// let truth = Series::line(&[0.0, 1.0], &[0.0, 1.0]).label("Truth");
    /// let svg = plot(&[truth], &Axes::new("x", "y")).unwrap();
    /// assert!(svg.as_str().contains("Truth"));
    /// ```
    pub fn label(mut self, label: &str) -> Self {
        self.label = Some(label.to_owned());
        self
    }

    /// Opacity from 0 (invisible) to 1 (opaque; the default).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::{Axes, Series, plot};
    ///
    /// let faint = Series::points(&[1.0], &[1.0]).alpha(0.5);
    /// assert!(plot(&[faint], &Axes::new("x", "y")).unwrap().as_str().contains("opacity=\"0.5\""));
    /// // Outside 0..=1 is an error naming `series`.
    /// let bad = Series::points(&[1.0], &[1.0]).alpha(2.0);
    /// assert!(plot(&[bad], &Axes::new("x", "y")).unwrap_err().to_string().contains("`series`"));
    /// ```
    pub fn alpha(mut self, alpha: f64) -> Self {
        self.alpha = alpha;
        self
    }

    /// An explicit colour instead of the cycle's.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::{Axes, Series, plot};
    /// use plotters::style::RGBColor;
    ///
    /// let red = Series::line(&[0.0, 1.0], &[0.0, 1.0]).color(RGBColor(0xff, 0, 0));
    /// assert!(plot(&[red], &Axes::new("x", "y")).unwrap().as_str().contains("#FF0000"));
    /// ```
    pub fn color(mut self, color: RGBColor) -> Self {
        self.color = Some(color);
        self
    }

    /// An explicit stroke for a line (ignored for points).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::Series;
    /// use d2l_attention::plot::LineStyle;
    ///
    /// let points = Series::points(&[0.0], &[0.0]);
    /// assert_eq!(points.clone().style(LineStyle::Dotted), points);
    /// ```
    pub fn style(mut self, style: LineStyle) -> Self {
        if let Mark::Line(s) = &mut self.mark {
            *s = Some(style);
        }
        self
    }
}

/// Axis labels, limits and size of a [`plot`]; `Axes::new("x", "y")` gives
/// d2l's defaults (3.5 × 2.5 inches, limits fitted to the data).
///
/// # Examples
/// ```
/// use d2l_attention::Axes;
///
/// let axes = Axes::new("epoch", "loss").xlim(1.0, 5.0);
/// assert_ne!(axes, Axes::new("epoch", "loss"));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Axes {
    xlabel: String,
    ylabel: String,
    xlim: Option<(f64, f64)>,
    ylim: Option<(f64, f64)>,
    xscale: Scale,
    yscale: Scale,
    xticks: Option<Vec<f64>>,
    figsize: (f64, f64),
}

impl Axes {
    /// Axes with these labels.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::{Axes, Series, plot};
    ///
    /// let svg = plot(&[Series::line(&[0.0, 1.0], &[0.0, 1.0])], &Axes::new("epoch", "loss")).unwrap();
    /// assert!(svg.as_str().contains("epoch") && svg.as_str().contains("loss"));
    /// ```
    pub fn new(xlabel: &str, ylabel: &str) -> Self {
        Axes {
            xlabel: xlabel.into(),
            ylabel: ylabel.into(),
            xlim: None,
            ylim: None,
            xscale: Scale::Linear,
            yscale: Scale::Linear,
            xticks: None,
            figsize: (3.5, 2.5),
        }
    }

    /// The x range shown (default: the data's range).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::{Axes, Series, plot};
    ///
    /// let line = [Series::line(&[0.0, 1.0], &[0.0, 1.0])];
    /// assert!(plot(&line, &Axes::new("x", "y").xlim(0.0, 5.0)).is_ok());
    /// // An empty range is an error naming `axes`.
    /// let err = plot(&line, &Axes::new("x", "y").xlim(1.0, 1.0)).unwrap_err();
    /// assert!(err.to_string().contains("`axes`"));
    /// ```
    pub fn xlim(mut self, lo: f64, hi: f64) -> Self {
        self.xlim = Some((lo, hi));
        self
    }

    /// The y range shown (default: the data's range plus 5 % on each side).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::{Axes, Series, plot};
    ///
    /// let line = [Series::line(&[0.0, 1.0], &[0.0, 1.0])];
    /// assert!(plot(&line, &Axes::new("x", "y").ylim(-1.0, 5.0)).is_ok());
    /// ```
    pub fn ylim(mut self, lo: f64, hi: f64) -> Self {
        self.ylim = Some((lo, hi));
        self
    }

    /// The x axis' scale (default linear).
    ///
    /// # Examples
    /// See [`Scale`].
    pub fn xscale(mut self, scale: Scale) -> Self {
        self.xscale = scale;
        self
    }

    /// The y axis' scale (default linear).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::plot::Scale;
    /// use d2l_attention::{Axes, Series, plot};
    ///
    /// let axes = Axes::new("n", "steps").yscale(Scale::Log);
    /// // Zero has no place on a log axis: an error naming `series`.
    /// let err = plot(&[Series::line(&[1.0, 2.0], &[0.0, 1.0])], &axes).unwrap_err();
    /// assert!(err.to_string().contains("not positive on a log axis"));
    /// ```
    pub fn yscale(mut self, scale: Scale) -> Self {
        self.yscale = scale;
        self
    }

    /// Ticks at these x values (those inside the axis) instead of the
    /// ones the scale chooses, as matplotlib's `xticks`: e.g. one per
    /// numbered item.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::{Axes, Series, plot};
    ///
    /// let points = [Series::points(&[1.0, 2.0, 3.0], &[5.0, 7.0, 6.0])];
    /// let axes = Axes::new("item", "y").xlim(0.5, 3.5).xticks(&[1.0, 2.0, 3.0]);
    /// let svg = plot(&points, &axes).unwrap();
    /// assert!(svg.as_str().contains(">\n1\n<") && svg.as_str().contains(">\n3\n<"));
    /// ```
    pub fn xticks(mut self, ticks: &[f64]) -> Self {
        self.xticks = Some(ticks.to_vec());
        self
    }

    /// The figure's size in inches (100 px each).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::{Axes, Series, plot};
    ///
    /// let line = [Series::line(&[0.0, 1.0], &[0.0, 1.0])];
    /// let svg = plot(&line, &Axes::new("x", "y").figsize(4.5, 2.5)).unwrap();
    /// assert!(svg.as_str().starts_with("<svg width=\"450\" height=\"250\""));
    /// ```
    pub fn figsize(mut self, width: f64, height: f64) -> Self {
        self.figsize = (width, height);
        self
    }
}

// d2l's default formats '-', 'm--', 'g-.', 'r:' and matplotlib's first colours.
const LINE_CYCLE: [(RGBColor, LineStyle); 4] = [
    (TAB10[0], LineStyle::Solid),
    (RGBColor(0xbf, 0x00, 0xbf), LineStyle::Dashed),
    (RGBColor(0x00, 0x80, 0x00), LineStyle::DashDot),
    (RGBColor(0xff, 0x00, 0x00), LineStyle::Dotted),
];
/// The colour of a series of points that names none: matplotlib's orange.
///
/// # Examples
/// ```
/// use d2l_attention::plot::{POINTS_COLOR, TAB10};
/// use d2l_attention::{Axes, Series, plot};
///
/// let svg = plot(&[Series::points(&[1.0, 2.0], &[1.0, 2.0])], &Axes::new("x", "y")).unwrap();
/// assert_eq!(POINTS_COLOR, TAB10[1]);
/// assert!(svg.as_str().contains("#FF7F0E"));
/// ```
pub const POINTS_COLOR: RGBColor = TAB10[1];
/// A line with more vertices than this carries hover titles at this many
/// of them, evenly spaced from its first to its last.
pub const LINE_TITLES_MAX: usize = 60;

impl LineStyle {
    /// The SVG `stroke-dasharray` (dash, gap, …) in px, none for solid.
    fn dasharray(self) -> Option<&'static str> {
        match self {
            LineStyle::Solid => None,
            LineStyle::Dashed => Some("7 4"),
            LineStyle::DashDot => Some("7 3 2 3"),
            LineStyle::Dotted => Some("2 3"),
        }
    }
}
