//! One matrix of a heatmap grid: the room its labels take, its axes and
//! tick labels (rotated when they do not fit side by side), its cells.

use std::fmt::Write;
use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;

use super::{Aspect, CellLabels, Norm};
use crate::plot::svg::{escape, labels_width, text_scale};
use crate::plot::{
    Cmap, FONT, LABEL_FONT, PLOTTERS_PT, PlotError, TICK_FONT, draw_err,
    integer_ticks,
};

pub(super) const MARGIN: u32 = 6;

/// The room for each part of a heatmap, px, grown with its text.
#[derive(Clone, Copy)]
pub(super) struct Areas {
    /// Text scale ([`text_scale`]).
    pub(super) scale: f64,
    /// Below the bottom row's matrices and left of the first column's:
    /// tick labels and the axis label.
    x: u32,
    y: u32,
    /// Below and left of the others, which share those labels (as d2l's
    /// `sharex=True, sharey=True`): tick marks only.
    x_bare: u32,
    y_bare: u32,
    /// Above a matrix with a title.
    title: u32,
    /// Left of a grid row's first matrix, for the row's title.
    row_title: u32,
    pub(super) colorbar: u32,
    pub(super) colorbar_labels: u32,
    /// Whether the x tick labels stand upright (too wide side by side).
    rotated: bool,
}

impl Areas {
    pub(super) fn new(width: u32) -> Self {
        let scale = text_scale(width);
        let px = |v: f64| (v * scale).round() as u32;
        Areas {
            scale,
            x: px(44.0),
            y: px(48.0),
            x_bare: px(8.0),
            y_bare: px(8.0),
            title: px(LABEL_FONT + 8.0),
            row_title: px(LABEL_FONT + 8.0),
            colorbar: px(78.0),
            colorbar_labels: px(44.0),
            rotated: false,
        }
    }

    /// The areas with the colorbar's label area wide enough for `labels`
    /// (long only for extreme scales: `1.025e17`), the bar kept as wide.
    pub(super) fn fitting(mut self, labels: &[String]) -> Self {
        let needed = (labels_width(labels, TICK_FONT * self.scale)
            + 8.0 * self.scale)
            .ceil() as u32;
        let extra = needed.saturating_sub(self.colorbar_labels);
        self.colorbar_labels += extra;
        self.colorbar += extra;
        self
    }

    /// The areas with the room left of each matrix grown for the widest
    /// of `yticks`, so that no label reaches the axis description.
    pub(super) fn fitting_yticks(mut self, yticks: Option<&[&str]>) -> Self {
        if let Some(ticks) = yticks {
            let ticks: Vec<String> =
                ticks.iter().map(|t| t.to_string()).collect();
            let widest = labels_width(&ticks, TICK_FONT * self.scale);
            self.y = self.y.max((widest + 26.0 * self.scale).ceil() as u32);
        }
        self
    }

    /// The areas with room below each matrix for upright x tick labels
    /// when the widest of `xticks` does not fit a cell `side` px wide
    /// with 2 px to spare: side by side, the labels would collide.
    pub(super) fn rotating(
        mut self,
        xticks: Option<&[&str]>,
        side: f64,
    ) -> Self {
        let Some(ticks) = xticks else {
            return self;
        };
        let ticks: Vec<String> = ticks.iter().map(|t| t.to_string()).collect();
        let widest = labels_width(&ticks, TICK_FONT * self.scale);
        if widest + 2.0 > side {
            // what upright labels take beyond a line of text
            let extra = (widest - 12.0 * self.scale).max(0.0).ceil() as u32;
            self.x += extra;
            self.rotated = true;
        }
        self
    }

    /// Where a grid of `(rows, cols)` matrices of `(num_queries,
    /// num_keys)` cells splits an area `(width, height)` px, and the cells'
    /// (width, height), px, square unless `aspect` is [`Aspect::Auto`]: the first column and the bottom row are
    /// wider and taller by the labels they carry, and every matrix gets the
    /// same room. `titled`: (a title above each matrix, a title left of
    /// each row).
    pub(super) fn grid(
        &self,
        (width, height): (u32, u32),
        (rows, cols): (usize, usize),
        (nq, nk): (usize, usize),
        (title, row_title): (bool, bool),
        aspect: Aspect,
    ) -> (Vec<i32>, Vec<i32>, (f64, f64)) {
        let lead_w = self.y + if row_title { self.row_title } else { 0 };
        let each_w = 2 * MARGIN;
        let each_h = 2 * MARGIN + if title { self.title } else { 0 };
        let room = |total: u32, lead: u32, bare: u32, n: usize, each: u32| {
            let fixed = lead + (n as u32 - 1) * bare + n as u32 * each;
            total.saturating_sub(fixed) as f64 / n as f64
        };
        let w = room(width, lead_w, self.y_bare, cols, each_w);
        let h = room(height, self.x, self.x_bare, rows, each_h);
        let xs = (1..cols)
            .map(|j| {
                (lead_w + each_w) as i32
                    + ((j - 1) as u32 * (self.y_bare + each_w)) as i32
                    + (j as f64 * w) as i32
            })
            .collect();
        let ys = (1..rows)
            .map(|i| {
                (i as u32 * (self.x_bare + each_h)) as i32
                    + (i as f64 * h) as i32
            })
            .collect();
        let (cw, ch) = (w / nk as f64, h / nq as f64);
        let cell = match aspect {
            Aspect::Equal => (cw.min(ch), cw.min(ch)),
            Aspect::Auto => (cw, ch),
        };
        (xs, ys, cell)
    }

    /// The room, px, left for the cells of a grid cell `(width, height)`
    /// px with (x label, y label) and (title, row title) or not.
    fn free(
        &self,
        (width, height): (u32, u32),
        (xlabel, ylabel): (bool, bool),
        (title, row_title): (bool, bool),
    ) -> (f64, f64) {
        let x = if xlabel { self.x } else { self.x_bare };
        let y = if ylabel { self.y } else { self.y_bare };
        let title = if title { self.title } else { 0 };
        let row_title = if row_title { self.row_title } else { 0 };
        (
            width.saturating_sub(y + row_title + 2 * MARGIN) as f64,
            height.saturating_sub(x + title + 2 * MARGIN) as f64,
        )
    }
}

/// Draws one matrix into `area` with its axes, labels and titles; returns
/// its cells (to go under the axes, so that they do not cover them) and
/// the labels drawn apart from plotters (upright ticks, the row title).
pub(super) fn draw_cell<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    (nq, nk): (usize, usize),
    (cell_w, cell_h): (f64, f64),
    matrix: &[f64],
    labels: &CellLabels,
    (vmin, vmax): (f64, f64),
    (cmap, norm): (Cmap, Norm),
    areas: Areas,
) -> Result<String, PlotError> {
    let has = (labels.xlabel.is_some(), labels.ylabel.is_some());
    let titled = (labels.title.is_some(), labels.row_title.is_some());
    let x_area = if has.0 { areas.x } else { areas.x_bare };
    let y_area = if has.1 { areas.y } else { areas.y_bare };
    let row_area = if titled.1 { areas.row_title } else { 0 };
    let title_area = if titled.0 { areas.title } else { 0 };
    // Shrink the plotting area to num_keys × num_queries cells.
    let (free_w, free_h) = areas.free(area.dim_in_pixel(), has, titled);
    let pad_x = ((free_w - cell_w * nk as f64) / 2.0).max(0.0) as u32;
    let pad_y = ((free_h - cell_h * nq as f64) / 2.0).max(0.0) as u32;

    let mut builder = ChartBuilder::on(area);
    builder
        .margin_left(MARGIN + pad_x + row_area)
        .margin_right(MARGIN + pad_x)
        .margin_top(MARGIN + pad_y + title_area)
        .margin_bottom(MARGIN + pad_y)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area);
    // index labels as wide (x) or as tall (y) as they are, 2 px apart
    let font = TICK_FONT * areas.scale;
    let cells_for = |px: f64, side: f64| ((px + 2.0) / side).ceil() as usize;
    let widest = labels_width(&[(nk - 1).to_string()], font);
    let x_range = IndexAxis::new(nk, false, labels.xticks.is_some())
        .spaced(cells_for(widest, cell_w));
    // Query 0 at the top, as in an image.
    let y_range = IndexAxis::new(nq, true, labels.yticks.is_some())
        .spaced(cells_for(font / PLOTTERS_PT, cell_h));
    let mut chart = builder
        .build_cartesian_2d(x_range, y_range)
        .map_err(draw_err)?;
    let mut out = cells_svg(&chart, (nq, nk), matrix, labels, |v| {
        norm.color(cmap, v, (vmin, vmax))
    });
    let (left, top) = chart.backend_coord(&(-0.5, -0.5));
    let (right, bottom) =
        chart.backend_coord(&(nk as f64 - 0.5, nq as f64 - 0.5));
    if let Some(title) = labels.title {
        // centred over the matrix (plotters' caption centres over the
        // labels too, which pushes the first column's titles left)
        let at = ((left + right) / 2, top - (6.0 * areas.scale) as i32);
        out.push_str(&text(title, at, LABEL_FONT * areas.scale, ""));
    }
    if let Some(title) = labels.row_title {
        let x = left - y_area as i32 - (row_area / 2) as i32;
        let at = (x, (top + bottom) / 2);
        let text = upright(title, at, "middle", LABEL_FONT * areas.scale);
        // bold, to tell it from the axis description beside it
        out.push_str(&text.replacen(
            "<text ",
            "<text font-weight=\"bold\" ",
            1,
        ));
    }
    let upright_ticks = labels.xticks.filter(|_| areas.rotated && has.0);
    if let Some(ticks) = upright_ticks {
        for (k, tick) in ticks.iter().enumerate() {
            let x = chart.backend_coord(&(k as f64, 0.0)).0;
            let at = (x, bottom + (8.0 * areas.scale) as i32);
            out.push_str(&upright(tick, at, "end", TICK_FONT * areas.scale));
        }
    }
    // an index, or its label when the caller gave labels; only on the
    // outer matrices, and for x not when they stand upright (drawn above)
    let label = |ticks: Option<&[&str]>, v: f64, shown: bool| match ticks {
        _ if !shown => String::new(),
        Some(t) => t.get(v.round() as usize).copied().unwrap_or("").to_owned(),
        None => format!("{v:.0}"),
    };
    let x_fmt =
        |v: &f64| label(labels.xticks, *v, has.0 && upright_ticks.is_none());
    let y_fmt = |v: &f64| label(labels.yticks, *v, has.1);
    let mut mesh = chart.configure_mesh();
    mesh.disable_mesh()
        .x_label_formatter(&x_fmt)
        .y_label_formatter(&y_fmt)
        .label_style((FONT, TICK_FONT * areas.scale))
        .axis_desc_style((FONT, LABEL_FONT * areas.scale));
    if let Some(x) = labels.xlabel {
        mesh.x_desc(x);
    }
    if let Some(y) = labels.ylabel {
        mesh.y_desc(y);
    }
    mesh.draw().map_err(draw_err)?;
    Ok(out)
}

/// `text` turned to read upwards, anchored (`start`, `middle` or `end`)
/// at `at` and centred on its x, at plotters' font size `font`.
fn upright(text: &str, (x, y): (i32, i32), anchor: &str, font: f64) -> String {
    let attributes = format!(
        "dy=\"0.35em\" text-anchor=\"{anchor}\" \
         transform=\"rotate(-90, {x}, {y})\""
    );
    self::text(text, (x, y), font, &attributes)
}

/// `text` with its baseline's middle at `at` (unless `attributes` say
/// otherwise), at plotters' font size `font`.
fn text(text: &str, (x, y): (i32, i32), font: f64, attributes: &str) -> String {
    let attributes = match attributes {
        "" => "text-anchor=\"middle\"",
        other => other,
    };
    format!(
        "<text x=\"{x}\" y=\"{y}\" {attributes} font-family=\"{FONT}\" \
         font-size=\"{}\" fill=\"#000000\">\n{}\n</text>\n",
        font / PLOTTERS_PT,
        escape(text)
    )
}

/// A matrix's cells as SVG rectangles, each with its hover title (or one
/// transparent rectangle per row carrying the row's title).
fn cells_svg<DB: DrawingBackend>(
    chart: &ChartContext<DB, Cartesian2d<IndexAxis, IndexAxis>>,
    (nq, nk): (usize, usize),
    matrix: &[f64],
    labels: &CellLabels,
    color: impl Fn(f64) -> RGBColor,
) -> String {
    let corner = |q: usize, k: usize| {
        chart.backend_coord(&(k as f64 - 0.5, q as f64 - 0.5))
    };
    // the opening of a rectangle between two corners
    let rect = |(x0, y0): (i32, i32), (x1, y1): (i32, i32)| {
        format!(
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"",
            x0.min(x1),
            y0.min(y1),
            (x1 - x0).abs(),
            (y1 - y0).abs()
        )
    };
    // crisp edges: no hairline seams between cells where a browser scales
    // the figure
    let mut out = String::from("<g shape-rendering=\"crispEdges\">\n");
    for q in 0..nq {
        let row = &matrix[q * nk..(q + 1) * nk];
        for (k, &v) in row.iter().enumerate() {
            let RGBColor(r, g, b) = color(v);
            let _ = write!(
                out,
                "{} fill=\"#{r:02X}{g:02X}{b:02X}\"",
                rect(corner(q, k), corner(q + 1, k + 1))
            );
            if labels.hover_per_row {
                out.push_str("/>\n");
            } else {
                let _ =
                    writeln!(out, ">{}</rect>", labels.hover(q, k, v, false));
            }
        }
        if labels.hover_per_row {
            let (k, v) = row.iter().copied().enumerate().fold(
                (0, f64::NEG_INFINITY),
                |a, b| {
                    if b.1 > a.1 { b } else { a }
                },
            );
            let _ = writeln!(
                out,
                "{} opacity=\"0\">{}</rect>",
                rect(corner(q, 0), corner(q + 1, nk)),
                labels.hover(q, k, v, true)
            );
        }
    }
    out.push_str("</g>\n");
    out
}

/// An axis over the indices 0..n of a matrix: each index owns the unit
/// interval around it, ticks sit on whole indices ([`integer_ticks`], at
/// least `min_step` apart, or
/// every index when `every` is set, for labels), and `reversed` puts index
/// 0 at the far end (the top, for rows).
pub(super) struct IndexAxis {
    n: usize,
    reversed: bool,
    every: bool,
    /// The fewest indices between two integer ticks.
    min_step: usize,
}

impl IndexAxis {
    fn new(n: usize, reversed: bool, every: bool) -> Self {
        IndexAxis { n, reversed, every, min_step: 1 }
    }

    /// Integer ticks at least `min_step` indices apart.
    fn spaced(self, min_step: usize) -> Self {
        IndexAxis { min_step, ..self }
    }
}

impl Ranged for IndexAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let mut t = (value + 0.5) / self.n as f64;
        if self.reversed {
            t = 1.0 - t;
        }
        limit.0 + (t * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _: Hint) -> Vec<f64> {
        if self.every {
            (0..self.n).map(|i| i as f64).collect()
        } else {
            integer_ticks(self.n, self.min_step)
        }
    }

    fn range(&self) -> Range<f64> {
        -0.5..self.n as f64 - 0.5
    }
}
