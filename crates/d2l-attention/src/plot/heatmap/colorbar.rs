//! The colour bar beside a heatmap grid: its colours, ticks at round values
//! and their labels.

use std::fmt::Write;

use plotters::prelude::*;

use super::Norm;
use super::cell::Areas;
use crate::plot::svg::{escape, scientific};
use crate::plot::{
    Cmap, FONT, PLOTTERS_PT, PlotError, TICK_FONT, draw_err, tick_label,
};

/// A colorbar tick's label: four decimals, or scientific notation where
/// four decimals cannot tell the ticks of a scale narrower than 1e-3 apart.
pub(super) fn colorbar_label(v: f64, (vmin, vmax): (f64, f64)) -> String {
    if vmax - vmin < 1e-3 {
        scientific(v)
    } else {
        tick_label(v)
    }
}

/// Round ticks within `lo..=hi`, or a thousandth of the range beyond an
/// end: the widest step of 1, 2, 2.5 or 5 times a power of ten that still
/// gives at least three ticks.
pub(super) fn value_ticks(lo: f64, hi: f64) -> Vec<f64> {
    // a tick up to a thousandth of the range beyond an end (under half a
    // pixel of any bar) labels that end: -1 for a minimum of -0.99999
    let slack = 1e-3 * (hi - lo);
    let ticks = |step: f64| -> Vec<f64> {
        let first = ((lo - slack) / step - 1e-9).ceil() as i64;
        let last = ((hi + slack) / step + 1e-9).floor() as i64;
        (first..=last).map(|i| i as f64 * step).collect()
    };
    let magnitude = 10f64.powf((hi - lo).log10().floor() + 1.0);
    (0..8)
        .flat_map(|e| {
            [1.0, 0.5, 0.25, 0.2].map(|m| m * magnitude / 10f64.powi(e))
        })
        .map(ticks)
        .find(|t| t.len() >= 3)
        .unwrap_or_else(|| vec![lo, (lo + hi) / 2.0, hi])
}

/// A vertical colorbar `bar_height` px tall, centred on the figure's
/// `height`; returns its outline, ticks and labels as SVG, the labels all
/// starting at one x on the bar's right.
pub(super) fn draw_colorbar<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    height: u32,
    bar_height: u32,
    (vmin, vmax): (f64, f64),
    (cmap, norm): (Cmap, Norm),
    areas: Areas,
) -> Result<String, PlotError> {
    const STEPS: usize = 64;
    let bar = area
        .clone()
        .shrink((0, (height - bar_height) / 2), (areas.colorbar, bar_height));
    let chart = ChartBuilder::on(&bar)
        .margin_left(8)
        .margin_right(4)
        .right_y_label_area_size(areas.colorbar_labels)
        .build_cartesian_2d(0.0..1.0, vmin..vmax)
        .map_err(draw_err)?;
    let (left, top) = chart.backend_coord(&(0.0, vmax));
    let (right, bottom) = chart.backend_coord(&(1.0, vmin));
    // the colours, in crisp steps (no seams where a browser scales them)
    let mut out = String::from("<g shape-rendering=\"crispEdges\">\n");
    let step = (vmax - vmin) / STEPS as f64;
    for s in 0..STEPS {
        let lo = vmin + s as f64 * step;
        let RGBColor(r, g, b) = norm.color(cmap, lo + step / 2.0, (vmin, vmax));
        let y0 = chart.backend_coord(&(0.0, lo)).1;
        let y1 = chart.backend_coord(&(0.0, lo + step)).1;
        let fill = format!("fill=\"#{r:02X}{g:02X}{b:02X}\"");
        rect(&mut out, (left, y1), (right - left, y0 - y1), &fill);
    }
    out.push_str("</g>\n");
    let frame = "fill=\"none\" stroke=\"#000000\"";
    rect(&mut out, (left, top), (right - left, bottom - top), frame);
    let font = TICK_FONT * areas.scale / PLOTTERS_PT;
    for v in value_ticks(vmin, vmax) {
        let y = chart.backend_coord(&(1.0, v)).1;
        let _ = writeln!(
            out,
            "<line x1=\"{right}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" \
             stroke=\"#000000\"/>\n<text x=\"{}\" y=\"{y}\" dy=\"0.5ex\" \
             text-anchor=\"start\" font-family=\"{FONT}\" font-size=\"{font}\" \
             fill=\"#000000\">\n{}\n</text>",
            right + 4,
            right + 7,
            escape(&colorbar_label(v, (vmin, vmax)))
        );
    }
    Ok(out)
}

/// Writes an SVG `<rect>` at `(x, y)` of size `(width, height)`, px, with
/// `paint` (its fill and stroke attributes).
fn rect(out: &mut String, (x, y): (i32, i32), (w, h): (i32, i32), paint: &str) {
    let _ = writeln!(
        out,
        "<rect x=\"{x}\" y=\"{y}\" width=\"{w}\" height=\"{h}\" {paint}/>"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// At least three labelled ticks on every colorbar, at round values.
    #[test]
    fn colorbars_get_three_or_more_round_ticks() {
        assert_eq!(value_ticks(0.0, 0.07), [0.0, 0.025, 0.05]);
        assert_eq!(value_ticks(0.0, 1.0), [0.0, 0.5, 1.0]);
        assert_eq!(value_ticks(-1.0, 1.0), [-1.0, 0.0, 1.0]);
        assert_eq!(value_ticks(0.0123, 0.0571).len(), 4);
        for (lo, hi) in [(0.0, 0.3), (0.2, 0.21), (1e-7, 0.9), (-3.0, 40.0)] {
            let t = value_ticks(lo, hi);
            assert!(t.len() >= 3, "{lo}..{hi}: {t:?}");
            let slack = 1e-3 * (hi - lo) + 1e-9;
            assert!(t.iter().all(|v| (lo - slack..=hi + slack).contains(v)));
        }
        // a sine's ends, short of ±1 by less than the slack, are labelled
        assert_eq!(value_ticks(-0.99999, 0.9999), [-1.0, 0.0, 1.0]);
    }
}
