//! Drawing a [`plot`]: the axes' layout, each series, the legend.

use std::fmt::Write;
use std::ops::Range;

use plotters::prelude::*;

use super::{
    Axes, LINE_CYCLE, LINE_TITLES_MAX, LineStyle, Mark, POINTS_COLOR, Series,
    Y_LABELS,
};
use crate::plot::legend::{GAP, Legend, Place, Swatch, stroke};
use crate::plot::scale::{Scale, ScaleAxis};
use crate::plot::svg::{append, escape, labels_width, text_scale, value};
use crate::plot::{
    FONT, LABEL_FONT, PLOTTERS_PT, PlotError, Svg, TICK_FONT, draw_err,
    invalid, pixels,
};

fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
}

/// Draws lines and points on one pair of axes, with a legend for the
/// labelled series; the counterpart of d2l's `plot` (d2l §2.4), plus scatter
/// points (`plt.plot(x, y, 'o', alpha=…)`).
///
/// Hovering over a point or a line's vertex shows its coordinates (an SVG
/// `<title>`, prefixed with the series' label); a line with more than
/// [`LINE_TITLES_MAX`] vertices carries them at that many, evenly spaced
/// from its first to its last. The legend shows each
/// series as drawn (colour, dashes, marker) in the first corner where it
/// covers no data, else to the right of the axes. Text grows with figures
/// wider than the printed page ([`display_width`](super::display_width)).
///
/// # Errors
/// [`PlotError::InvalidArgument`] naming `series` when it is empty, or when a
/// series has no points, x and y of different lengths, a NaN or infinite
/// coordinate, a coordinate not positive on a log axis, or an alpha outside
/// 0..=1; naming `axes` when a limit is empty (lo ≥ hi), not finite or not
/// positive on a log axis, or its figsize is outside 0.5..=40 inches.
///
/// # Examples
/// ```
/// use d2l_attention::{Axes, Series, plot};
///
/// let x = [0.0, 1.0, 2.0, 3.0];
/// let y = x.map(|v: f64| v * v);
/// let svg = plot(&[Series::line(&x, &y).label("x²")], &Axes::new("x", "y")).unwrap();
/// assert!(svg.as_str().contains("x²"));
/// // Each vertex names its coordinates on hover.
/// assert!(svg.as_str().contains("<title>x²: x 2, y 4</title>"));
/// ```
pub fn plot(series: &[Series], axes: &Axes) -> Result<Svg, PlotError> {
    check_series(series, axes)?;
    let (width, height) = pixels(axes.figsize).map_err(|_| {
        invalid(
            "axes",
            format!(
                "figsize {:?} inches; each side must be in 0.5..=40",
                axes.figsize
            ),
        )
    })?;
    let scale = text_scale(width);
    let xs = series.iter().flat_map(|s| s.x.iter().copied());
    let ys = series.iter().flat_map(|s| s.y.iter().copied());
    let x_axis = ScaleAxis::fit(axes.xlim, xs, 0.0, axes.xscale)?
        .with_ticks(axes.xticks.as_deref());
    let y_axis = ScaleAxis::fit(axes.ylim, ys, 0.05, axes.yscale)?;
    let looks = looks(series);
    let legend = legend(series, &looks, scale);
    // The y axis' tick labels and its description: wider for long labels
    // (an extreme scale's `1.04e17`).
    let y_ticks: Vec<String> = y_axis
        .key_points(Y_LABELS)
        .into_iter()
        .map(|v| y_axis.label(v))
        .collect();
    let y_labels_px = labels_width(&y_ticks, TICK_FONT * scale);
    let y_area = (50.0 * scale).max(y_labels_px + 22.0 * scale) as u32;
    let x_area = (40.0 * scale) as u32;
    let axes_px = (
        width.saturating_sub(20 + y_area).max(1) as f64,
        height.saturating_sub(20 + x_area).max(1) as f64,
    );
    // Outside only while the axes keep at least half the figure's width.
    let place = legend.as_ref().map(|l| {
        let room = width as f64 / 2.0 - (y_area + 20 + 2 * GAP as u32) as f64;
        l.place(&covered(series, &x_axis, &y_axis), axes_px, room)
    });
    let right = match (&legend, place) {
        (Some(l), Some(Place::Outside)) => {
            10 + l.size().0 as u32 + 2 * GAP as u32
        }
        _ => 10,
    };

    let mut svg = String::new();
    let mut data = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height))
            .into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(10)
            .margin_right(right)
            .x_label_area_size(x_area)
            .y_label_area_size(y_area)
            .build_cartesian_2d(x_axis.clone(), y_axis.clone())
            .map_err(draw_err)?;
        let x_fmt = |v: &f64| x_axis.label(*v);
        let y_fmt = |v: &f64| y_axis.label(*v);
        chart
            .configure_mesh()
            .x_labels(6)
            .y_labels(Y_LABELS)
            .x_label_formatter(&x_fmt)
            .y_label_formatter(&y_fmt)
            .light_line_style(WHITE)
            .bold_line_style(RGBColor(0xdd, 0xdd, 0xdd))
            .label_style((FONT, TICK_FONT * scale))
            .axis_desc_style((FONT, LABEL_FONT * scale))
            .x_desc(axes.xlabel.as_str())
            .y_desc(axes.ylabel.as_str())
            .draw()
            .map_err(draw_err)?;
        let (xr, yr) = chart.plotting_area().get_pixel_range();
        let px = |x: f64, y: f64| chart.backend_coord(&(x, y));
        data.push_str(&clip_path(&xr, &yr));
        for (s, look) in series.iter().zip(&looks) {
            data.push_str(&series_svg(s, look, axes, &px, (&xr, &yr)));
        }
        if let (Some(legend), Some(place)) = (legend, place) {
            let (w, h) = legend.size();
            let at = match place {
                Place::Outside => (xr.end + 2 * GAP, yr.start),
                Place::Inside(left, upper) => (
                    if left {
                        xr.start + GAP
                    } else {
                        xr.end - GAP - w
                    },
                    if upper {
                        yr.start + GAP
                    } else {
                        yr.end - GAP - h
                    },
                ),
            };
            data.push_str(&legend.svg(at));
        }
        root.present().map_err(draw_err)?;
    }
    append(&mut svg, &data);
    Ok(Svg(svg))
}

/// Each series' colour and swatch: explicit, or the next of d2l's cycle.
fn looks(series: &[Series]) -> Vec<Swatch> {
    let mut lines_seen = 0;
    series
        .iter()
        .map(|s| match s.mark {
            Mark::Points => {
                Swatch::Point(hex(s.color.unwrap_or(POINTS_COLOR)), s.alpha)
            }
            // An explicit colour takes no place in the cycle, so that the
            // other series look the same in figures with and without it.
            Mark::Line(style) => match s.color {
                Some(color) => Swatch::Line(
                    hex(color),
                    s.alpha,
                    style.unwrap_or(LineStyle::Solid).dasharray(),
                ),
                None => {
                    let (color, cycle) =
                        LINE_CYCLE[lines_seen % LINE_CYCLE.len()];
                    lines_seen += 1;
                    let dash = style.unwrap_or(cycle).dasharray();
                    Swatch::Line(hex(color), s.alpha, dash)
                }
            },
        })
        .collect()
}

fn legend(series: &[Series], looks: &[Swatch], scale: f64) -> Option<Legend> {
    let entries: Vec<_> = series
        .iter()
        .zip(looks)
        .filter_map(|(s, look)| Some((s.label.clone()?, look.clone())))
        .collect();
    let font = TICK_FONT * scale / PLOTTERS_PT;
    (!entries.is_empty()).then(|| Legend::new(entries, font))
}

/// Every point and, along lines, 16 points per segment, as fractions of
/// the axes (what a legend must not cover).
fn covered(series: &[Series], x: &ScaleAxis, y: &ScaleAxis) -> Vec<(f64, f64)> {
    let mut out = Vec::new();
    for s in series {
        let f: Vec<(f64, f64)> =
            s.x.iter()
                .zip(&s.y)
                .map(|(&a, &b)| (x.fraction(a), y.fraction(b)))
                .collect();
        out.extend(&f);
        if matches!(s.mark, Mark::Line(_)) {
            for w in f.windows(2) {
                out.extend((1..16).map(|i| {
                    let t = i as f64 / 16.0;
                    (
                        w[0].0 + t * (w[1].0 - w[0].0),
                        w[0].1 + t * (w[1].1 - w[0].1),
                    )
                }));
            }
        }
    }
    out
}

/// Data is clipped to the axes, as matplotlib clips it.
fn clip_path(xr: &Range<i32>, yr: &Range<i32>) -> String {
    format!(
        "<clipPath id=\"axes\"><rect x=\"{}\" y=\"{}\" width=\"{}\" \
         height=\"{}\"/></clipPath>\n",
        xr.start,
        yr.start,
        xr.end - xr.start,
        yr.end - yr.start
    )
}

/// The vertices of an `n`-vertex line that carry hover titles: all of
/// them, or [`LINE_TITLES_MAX`] evenly spaced from the first to the last.
fn title_vertices(n: usize) -> Vec<usize> {
    if n <= LINE_TITLES_MAX {
        return (0..n).collect();
    }
    let last = (LINE_TITLES_MAX - 1) as f64;
    (0..LINE_TITLES_MAX)
        .map(|i| (i as f64 * (n - 1) as f64 / last).round() as usize)
        .collect()
}

/// One series as SVG: its line or points, then a hover title at each
/// point.
fn series_svg(
    s: &Series,
    look: &Swatch,
    axes: &Axes,
    px: &impl Fn(f64, f64) -> (i32, i32),
    (xr, yr): (&Range<i32>, &Range<i32>),
) -> String {
    let points: Vec<(i32, i32)> =
        s.x.iter().zip(&s.y).map(|(&x, &y)| px(x, y)).collect();
    let mut out = String::new();
    let prefix = s.label.as_deref().map(|l| format!("{}: ", escape(l)));
    let title = |i: usize| {
        format!(
            "<title>{}{} {}, {} {}</title>",
            prefix.as_deref().unwrap_or(""),
            escape(&axes.xlabel),
            value(s.x[i]),
            escape(&axes.ylabel),
            value(s.y[i])
        )
    };
    match look {
        Swatch::Line(color, alpha, dash) => {
            let coords: Vec<String> =
                points.iter().map(|(x, y)| format!("{x},{y}")).collect();
            out.push_str("<g clip-path=\"url(#axes)\">\n");
            let _ = writeln!(
                out,
                "<polyline fill=\"none\" {} points=\"{}\"/>",
                stroke(color, *alpha, *dash),
                coords.join(" ")
            );
            // invisible targets, 4 px around each vertex (or around
            // LINE_TITLES_MAX of them, evenly spaced)
            out.push_str("<g opacity=\"0\">\n");
            for (i, (x, y)) in title_vertices(points.len())
                .into_iter()
                .map(|i| (i, points[i]))
            {
                let _ = writeln!(
                    out,
                    "<circle cx=\"{x}\" cy=\"{y}\" r=\"4\">{}</circle>",
                    title(i)
                );
            }
            out.push_str("</g>\n</g>\n");
        }
        // Points are not clipped, so that one on the edge of the axes
        // shows whole; those whose centre lies outside are left out.
        Swatch::Point(color, alpha) => {
            let _ =
                writeln!(out, "<g fill=\"{color}\" fill-opacity=\"{alpha}\">");
            let inside = |(x, y): &&(i32, i32)| {
                (xr.start..=xr.end).contains(x)
                    && (yr.start..=yr.end).contains(y)
            };
            for (i, (x, y)) in
                points.iter().enumerate().filter(|(_, p)| inside(p))
            {
                let _ = writeln!(
                    out,
                    "<circle cx=\"{x}\" cy=\"{y}\" r=\"3\">{}</circle>",
                    title(i)
                );
            }
            out.push_str("</g>\n");
        }
    }
    out
}

fn check_series(series: &[Series], axes: &Axes) -> Result<(), PlotError> {
    if series.is_empty() {
        return Err(invalid("series", "no series to draw"));
    }
    for (i, s) in series.iter().enumerate() {
        let name = match &s.label {
            Some(label) => format!("series[{i}] (\"{label}\")"),
            None => format!("series[{i}]"),
        };
        let bad =
            |reason: String| invalid("series", format!("{name} {reason}"));
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
            return Err(bad(format!(
                "point {j} is ({}, {}), not finite (the first such point: where a loss curve has diverged, say)",
                s.x[j], s.y[j]
            )));
        }
        let log = |scale: Scale, v: f64| scale == Scale::Log && v <= 0.0;
        if let Some(j) = (0..s.x.len())
            .find(|&j| log(axes.xscale, s.x[j]) || log(axes.yscale, s.y[j]))
        {
            return Err(bad(format!(
                "point {j} is ({}, {}), not positive on a log axis",
                s.x[j], s.y[j]
            )));
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
        for label in ["x", "y", "5", "4"] {
            assert!(
                text.contains(&format!(">\n{label}\n</text>")),
                "{label} missing"
            );
        }
        // The legend's text, which we write.
        assert!(
            text.contains(">Truth</text>") && text.contains(">Pred</text>")
        );
        // The first line is matplotlib blue, the second dashed magenta, in
        // the plot and in the legend; the points are translucent orange.
        let dashed = "stroke=\"#BF00BF\" stroke-opacity=\"1\" \
                      stroke-width=\"2\" stroke-dasharray=\"7 4\"";
        assert_eq!(text.matches(dashed).count(), 2);
        assert_eq!(text.matches("stroke=\"#1F77B4\"").count(), 2);
        assert!(text.contains("<g fill=\"#FF7F0E\" fill-opacity=\"0.5\">"));
        // Every point and vertex names its coordinates on hover.
        assert!(text.contains("<title>x 2, y 4.2</title>"));
        assert!(text.contains("<title>Pred: x 1, y 1.5</title>"));
        assert_eq!(text.matches("<title>").count(), 9);
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
                "invalid `series`: series[0] point 1 is (1, NaN), not finite (the first such point: where a loss curve has diverged, say)",
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
        let fit = |given, data: &[f64]| {
            let axis = ScaleAxis::fit(
                given,
                data.iter().copied(),
                0.05,
                Scale::Linear,
            );
            plotters::coord::ranged1d::Ranged::range(&axis.unwrap())
        };
        assert_eq!(fit(None, &[0.0, 10.0]), -0.5..10.5);
        assert_eq!(fit(None, &[3.0]), 2.5..3.5);
        assert_eq!(fit(Some((0.0, 5.0)), &[9.0]), 0.0..5.0);
    }

    #[test]
    fn text_stays_readable_at_every_width_the_book_shows() {
        let s = [Series::line(&[0.0, 1.0], &[0.0, 1.0]).label("a line")];
        for width in [2.5, 3.5, 6.0, 10.0, 14.0] {
            let svg = plot(&s, &axes().figsize(width, 2.5)).unwrap();
            let shown = crate::plot::display_width(width * 100.0);
            let px = crate::plot::min_text_px(svg.as_str(), shown).unwrap();
            assert!(px >= 9.0, "{width} in: {px} px");
        }
    }

    #[test]
    fn a_legend_with_data_in_every_corner_goes_outside_the_axes() {
        let (x, y) = ([0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0]);
        let svg =
            plot(&[Series::points(&x, &y).label("corners")], &axes()).unwrap();
        let text = svg.as_str();
        // The axes end 10 px from the right edge without an outside legend.
        let legend_x: i32 = text
            .split("<g class=\"legend\">\n<rect x=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap()
            .parse()
            .unwrap();
        let clip = text
            .split("<clipPath id=\"axes\"><rect x=\"")
            .nth(1)
            .unwrap();
        let fields: Vec<i32> = clip
            .split('"')
            .step_by(2)
            .take(3)
            .map(|v| v.parse().unwrap())
            .collect();
        assert!(legend_x > fields[0] + fields[2], "{legend_x} vs {fields:?}");
    }

    /// A point on the edge of the axes is drawn whole (no clip path over
    /// it), one outside them not at all.
    #[test]
    fn points_on_the_edge_show_whole_and_points_outside_are_left_out() {
        let axes = axes().xlim(0.0, 5.0).ylim(0.0, 1.0);
        let points = Series::points(&[2.5, 5.0, 6.0], &[0.5, 0.5, 0.5]);
        let svg = plot(&[points], &axes).unwrap().as_str().to_owned();
        let circles: Vec<&str> = svg.split("<circle").skip(1).collect();
        assert_eq!(circles.len(), 2, "{svg}");
        let group = svg.split("<circle").next().unwrap();
        let last_group = group.rsplit("<g").next().unwrap();
        assert!(!last_group.contains("clip-path"), "{last_group}");
        let clip = svg
            .split("<clipPath id=\"axes\"><rect x=\"")
            .nth(1)
            .unwrap();
        let f: Vec<i32> = clip
            .split('"')
            .step_by(2)
            .take(3)
            .map(|v| v.parse().unwrap())
            .collect();
        // the point at x = 5 sits on the axes' right edge, whole
        let cx: i32 = circles[1].split('"').nth(1).unwrap().parse().unwrap();
        assert!((f[0] + f[2] - 1..=f[0] + f[2]).contains(&cx), "{cx} {f:?}");
    }

    #[test]
    fn long_lines_carry_exactly_sixty_titles_from_first_to_last() {
        for n in [1, 60, 61, 120, 250, 601] {
            let v = title_vertices(n);
            assert_eq!(v.len(), n.min(LINE_TITLES_MAX), "{n}");
            assert_eq!((v[0], *v.last().unwrap()), (0, n - 1));
            assert!(v.windows(2).all(|w| w[0] < w[1]), "{n}: {v:?}");
        }
    }

    #[test]
    fn a_legend_too_wide_to_go_outside_takes_the_emptiest_corner() {
        let (x, y) = ([0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 1.0]);
        let label = "a label far too long to leave the axes any room at all";
        let svg =
            plot(&[Series::points(&x, &y).label(label)], &axes()).unwrap();
        let clip = svg
            .as_str()
            .split("<clipPath id=\"axes\"><rect x=\"")
            .nth(1);
        let width: i32 =
            clip.unwrap().split('"').nth(4).unwrap().parse().unwrap();
        assert!(width > 200, "the axes kept {width} px");
    }
}
