//! `plot`: lines and scatter points on one pair of axes.

use plotters::prelude::*;

use super::{
    FONT, LABEL_FONT, PlotError, Svg, TICK_FONT, draw_err, invalid, pixels,
    tick_label,
};

/// How a line is stroked.
///
/// # Examples
/// ```
/// use d2l_attention::plot::LineStyle;
/// use d2l_attention::{Axes, Series, plot};
///
/// let dashed = Series::line(&[0.0, 1.0], &[0.0, 1.0]).style(LineStyle::Dashed);
/// let svg = plot(&[dashed], &Axes::new("x", "y")).unwrap();
/// assert!(svg.as_str().contains("<line") || svg.as_str().contains("<polyline"));
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
    /// [`style`](Self::style) take d2l's format cycle in order: solid blue,
    /// dashed magenta, dash-dot green, dotted red.
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
    (RGBColor(0x1f, 0x77, 0xb4), LineStyle::Solid),
    (RGBColor(0xbf, 0x00, 0xbf), LineStyle::Dashed),
    (RGBColor(0x00, 0x80, 0x00), LineStyle::DashDot),
    (RGBColor(0xff, 0x00, 0x00), LineStyle::Dotted),
];
const POINTS_COLOR: RGBColor = RGBColor(0xff, 0x7f, 0x0e);

/// Draws lines and points on one pair of axes, with a legend for the
/// labelled series; the counterpart of d2l's `plot` (d2l §2.4), plus scatter
/// points (`plt.plot(x, y, 'o', alpha=…)`).
///
/// # Errors
/// [`PlotError::InvalidArgument`] naming `series` when it is empty, or when a
/// series has no points, x and y of different lengths, a NaN or infinite
/// coordinate, or an alpha outside 0..=1; naming `axes` when a limit is
/// empty (lo ≥ hi) or not finite, or its figsize is outside 0.5..=40 inches.
///
/// # Examples
/// ```
/// use d2l_attention::{Axes, Series, plot};
///
/// let x = [0.0, 1.0, 2.0, 3.0];
/// let y = x.map(|v: f64| v * v);
/// let svg = plot(&[Series::line(&x, &y).label("x²")], &Axes::new("x", "y")).unwrap();
/// assert!(svg.as_str().contains("x²"));
/// ```
pub fn plot(series: &[Series], axes: &Axes) -> Result<Svg, PlotError> {
    check_series(series)?;
    let (width, height) = pixels(axes.figsize).map_err(|_| {
        invalid(
            "axes",
            format!(
                "figsize {:?} inches; each side must be in 0.5..=40",
                axes.figsize
            ),
        )
    })?;
    let xs = series.iter().flat_map(|s| s.x.iter().copied());
    let ys = series.iter().flat_map(|s| s.y.iter().copied());
    let (x0, x1) = limits(axes.xlim, xs, 0.0)?;
    let (y0, y1) = limits(axes.ylim, ys, 0.05)?;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height))
            .into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(draw_err)?;
        let fmt = |v: &f64| tick_label(*v);
        chart
            .configure_mesh()
            .x_labels(6)
            .y_labels(6)
            .x_label_formatter(&fmt)
            .y_label_formatter(&fmt)
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
            .label_style((FONT, TICK_FONT))
            .axis_desc_style((FONT, LABEL_FONT))
            .x_desc(axes.xlabel.as_str())
            .y_desc(axes.ylabel.as_str())
            .draw()
            .map_err(draw_err)?;
        let mut lines_seen = 0;
        for s in series {
            let points = s.x.iter().copied().zip(s.y.iter().copied());
            let label = s.label.as_deref();
            match &s.mark {
                Mark::Points => {
                    let style =
                        s.color.unwrap_or(POINTS_COLOR).mix(s.alpha).filled();
                    let anno = chart
                        .draw_series(points.map(|p| Circle::new(p, 3, style)))
                        .map_err(draw_err)?;
                    if let Some(label) = label {
                        anno.label(label).legend(move |(x, y)| {
                            Circle::new((x + 10, y), 3, style)
                        });
                    }
                }
                Mark::Line(style) => {
                    let (cycle_color, cycle_style) =
                        LINE_CYCLE[lines_seen % LINE_CYCLE.len()];
                    lines_seen += 1;
                    let stroke = s
                        .color
                        .unwrap_or(cycle_color)
                        .mix(s.alpha)
                        .stroke_width(2);
                    let anno = match style.unwrap_or(cycle_style) {
                        LineStyle::Solid => {
                            chart.draw_series(LineSeries::new(points, stroke))
                        }
                        LineStyle::Dashed => chart.draw_series(
                            DashedLineSeries::new(points, 7, 4, stroke),
                        ),
                        LineStyle::DashDot => chart.draw_series(
                            DashedLineSeries::new(points, 4, 3, stroke),
                        ),
                        LineStyle::Dotted => chart.draw_series(
                            DashedLineSeries::new(points, 2, 3, stroke),
                        ),
                    }
                    .map_err(draw_err)?;
                    if let Some(label) = label {
                        anno.label(label).legend(move |(x, y)| {
                            PathElement::new([(x, y), (x + 20, y)], stroke)
                        });
                    }
                }
            }
        }
        if series.iter().any(|s| s.label.is_some()) {
            let plot_area = chart.plotting_area().dim_in_pixel();
            let corner = legend_corner(series, (x0, x1, y0, y1), plot_area);
            chart
                .configure_series_labels()
                .position(corner)
                .background_style(WHITE.mix(0.8))
                .border_style(RGBColor(0xcc, 0xcc, 0xcc))
                .label_font((FONT, TICK_FONT))
                .draw()
                .map_err(draw_err)?;
        }
        root.present().map_err(draw_err)?;
    }
    Ok(Svg(svg))
}

/// The corner of the plotting area (`size` px) where the legend covers the
/// fewest data points, preferring upper right, upper left, lower right,
/// lower left; the legend's size is estimated from its labels (plotters
/// draws ~7 px per character at the tick font, 18 px per entry).
fn legend_corner(
    series: &[Series],
    (x0, x1, y0, y1): (f64, f64, f64, f64),
    (width, height): (u32, u32),
) -> SeriesLabelPosition {
    let labels: Vec<&str> =
        series.iter().filter_map(|s| s.label.as_deref()).collect();
    let chars = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    // the legend's extent as fractions of the plotting area, with margin
    let fw = ((45 + 7 * chars) as f64 / width.max(1) as f64).min(1.0);
    let fh = ((14 + 18 * labels.len()) as f64 / height.max(1) as f64).min(1.0);
    let covered = |left: bool, upper: bool| -> usize {
        let (ax, bx) = if left { (0.0, fw) } else { (1.0 - fw, 1.0) };
        let (ay, by) = if upper { (1.0 - fh, 1.0) } else { (0.0, fh) };
        series
            .iter()
            .flat_map(|s| s.x.iter().zip(&s.y))
            .filter(|&(&x, &y)| {
                let (u, v) = ((x - x0) / (x1 - x0), (y - y0) / (y1 - y0));
                (ax..=bx).contains(&u) && (ay..=by).contains(&v)
            })
            .count()
    };
    [
        (false, true, SeriesLabelPosition::UpperRight),
        (true, true, SeriesLabelPosition::UpperLeft),
        (false, false, SeriesLabelPosition::LowerRight),
        (true, false, SeriesLabelPosition::LowerLeft),
    ]
    .into_iter()
    .min_by_key(|(left, upper, _)| covered(*left, *upper))
    .map(|(_, _, corner)| corner)
    .expect("four corners")
}

fn check_series(series: &[Series]) -> Result<(), PlotError> {
    if series.is_empty() {
        return Err(invalid("series", "no series to draw"));
    }
    for (i, s) in series.iter().enumerate() {
        let bad =
            |reason: String| invalid("series", format!("series[{i}] {reason}"));
        if s.x.is_empty() || s.x.len() != s.y.len() {
            return Err(bad(format!(
                "has {} x and {} y values",
                s.x.len(),
                s.y.len()
            )));
        }
        if let Some(j) =
            (0..s.x.len()).find(|&j| !s.x[j].is_finite() || !s.y[j].is_finite())
        {
            return Err(bad(format!("point {j} is ({}, {})", s.x[j], s.y[j])));
        }
        if !(0.0..=1.0).contains(&s.alpha) {
            return Err(bad(format!(
                "has alpha {}; it must be in 0..=1",
                s.alpha
            )));
        }
    }
    Ok(())
}

/// The axis range: the given limits, or the data's range widened by
/// `pad` of its width on each side (a unit range around a constant).
fn limits(
    given: Option<(f64, f64)>,
    data: impl Iterator<Item = f64>,
    pad: f64,
) -> Result<(f64, f64), PlotError> {
    if let Some((lo, hi)) = given {
        if !(lo.is_finite() && hi.is_finite() && lo < hi) {
            return Err(invalid(
                "axes",
                format!("limits ({lo}, {hi}) must be finite with lo < hi"),
            ));
        }
        return Ok((lo, hi));
    }
    let (lo, hi) = data
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
    if hi > lo {
        let p = (hi - lo) * pad;
        Ok((lo - p, hi + p))
    } else {
        Ok((lo - 0.5, hi + 0.5))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn axes() -> Axes {
        Axes::new("x", "y")
    }

    #[test]
    fn draws_lines_points_and_legend_deterministically() {
        let x = [0.0, 1.0, 2.0];
        let series = [
            Series::line(&x, &[0.0, 1.0, 4.0]).label("Truth"),
            Series::line(&x, &[0.5, 1.5, 3.0]).label("Pred"),
            Series::points(&x, &[0.2, 0.8, 4.2]).alpha(0.5),
        ];
        let svg =
            plot(&series, &axes().xlim(0.0, 5.0).ylim(-1.0, 5.0)).unwrap();
        assert_eq!(
            svg,
            plot(&series, &axes().xlim(0.0, 5.0).ylim(-1.0, 5.0)).unwrap()
        );
        let text = svg.as_str();
        for label in ["Truth", "Pred", "x", "y", "5", "4"] {
            assert!(
                text.contains(&format!(">\n{label}\n</text>")),
                "{label} missing"
            );
        }
        // The first line is matplotlib blue, the second dashed magenta; the
        // three points (plus the legend's) are translucent orange.
        assert!(text.contains("stroke=\"#1F77B4\""));
        assert!(text.contains("stroke=\"#BF00BF\""));
        assert_eq!(text.matches("<circle").count(), 3);
        assert!(text.contains("opacity=\"0.5\" fill=\"#FF7F0E\""));
    }

    #[test]
    fn bad_series_are_refused_by_name() {
        let cases: [(Vec<Series>, &str); 5] = [
            (vec![], "invalid `series`: no series to draw"),
            (
                vec![Series::line(&[0.0, 1.0], &[1.0])],
                "invalid `series`: series[0] has 2 x and 1 y values",
            ),
            (
                vec![Series::line(&[0.0], &[1.0]), Series::line(&[], &[])],
                "invalid `series`: series[1] has 0 x and 0 y values",
            ),
            (
                vec![Series::points(&[0.0, 1.0], &[1.0, f64::NAN])],
                "invalid `series`: series[0] point 1 is (1, NaN)",
            ),
            (
                vec![Series::points(&[0.0], &[1.0]).alpha(2.0)],
                "invalid `series`: series[0] has alpha 2; it must be in 0..=1",
            ),
        ];
        for (series, message) in cases {
            assert_eq!(
                plot(&series, &axes()).unwrap_err().to_string(),
                message
            );
        }
    }

    #[test]
    fn bad_limits_and_sizes_are_refused() {
        let s = [Series::line(&[0.0, 1.0], &[0.0, 1.0])];
        assert!(
            plot(&s, &axes().xlim(1.0, 1.0))
                .unwrap_err()
                .to_string()
                .starts_with("invalid `axes`: limits (1, 1)")
        );
        assert!(
            plot(&s, &axes().figsize(0.1, 2.0))
                .unwrap_err()
                .to_string()
                .starts_with("invalid `axes`: figsize")
        );
    }

    #[test]
    fn limits_fit_the_data_with_a_margin() {
        assert_eq!(
            limits(None, [0.0, 10.0].into_iter(), 0.05).unwrap(),
            (-0.5, 10.5)
        );
        assert_eq!(limits(None, [3.0].into_iter(), 0.05).unwrap(), (2.5, 3.5));
        assert_eq!(
            limits(Some((0.0, 5.0)), [9.0].into_iter(), 0.05).unwrap(),
            (0.0, 5.0)
        );
    }
}
