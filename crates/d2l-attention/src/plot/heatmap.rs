//! `show_heatmaps`: a grid of attention-weight matrices.

use burn::tensor::Tensor;
use std::fmt::Write;
use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;

use super::svg::{
    escape, labels_width, prepend, scientific, text_scale, value,
};
use super::{
    Cmap, FONT, LABEL_FONT, PlotError, Svg, TICK_FONT, draw_err, integer_ticks,
    invalid, pixels, tick_label,
};

const MARGIN: u32 = 6;
/// Figures with more cells than this carry one hover title per row instead
/// of one per cell, to stay light.
pub const CELL_TITLES_MAX: usize = 1_000;

/// The room for each part of a heatmap, px, grown with its text.
#[derive(Clone, Copy)]
struct Areas {
    /// Text scale ([`text_scale`]).
    scale: f64,
    /// Below and left of a matrix with an axis label.
    x: u32,
    y: u32,
    /// Below and left of a matrix without one.
    x_bare: u32,
    y_bare: u32,
    /// Above a matrix with a title.
    title: u32,
    colorbar: u32,
    colorbar_labels: u32,
}

impl Areas {
    fn new(width: u32) -> Self {
        let scale = text_scale(width);
        let px = |v: f64| (v * scale).round() as u32;
        Areas {
            scale,
            x: px(44.0),
            y: px(48.0),
            x_bare: px(23.0),
            y_bare: px(30.0),
            title: px(LABEL_FONT + 8.0),
            colorbar: px(78.0),
            colorbar_labels: px(44.0),
        }
    }

    /// The areas with the colorbar's label area wide enough for `labels`
    /// (long only for extreme scales: `1.025e17`), the bar kept as wide.
    fn fitting(mut self, labels: &[String]) -> Self {
        let needed = (labels_width(labels, TICK_FONT * self.scale)
            + 8.0 * self.scale)
            .ceil() as u32;
        let extra = needed.saturating_sub(self.colorbar_labels);
        self.colorbar_labels += extra;
        self.colorbar += extra;
        self
    }
}

/// The optional arguments of [`show_heatmaps`], with d2l's defaults: no
/// titles, `figsize` (2.5, 2.5) and `cmap` Reds. Set some and keep the rest:
/// `HeatmapOptions { cmap: Cmap::Blues, ..Default::default() }`.
///
/// # Examples
/// ```
/// use d2l_attention::{Cmap, HeatmapOptions};
///
/// let options = HeatmapOptions::default();
/// assert_eq!((options.titles, options.figsize, options.cmap), (None, (2.5, 2.5), Cmap::Reds));
/// ```
// ANCHOR: options
#[derive(Clone, Copy, Debug)]
pub struct HeatmapOptions<'a> {
    /// One title per grid column, or none.
    pub titles: Option<&'a [&'a str]>,
    /// (width, height) in inches (100 px each), as in matplotlib.
    pub figsize: (f64, f64),
    /// The colormap.
    pub cmap: Cmap,
    /// How values map to colours: linearly, or by square root.
    pub norm: Norm,
    /// Labels of the keys (columns) instead of their indices.
    pub xticks: Option<&'a [&'a str]>,
    /// Labels of the queries (rows) instead of their indices.
    pub yticks: Option<&'a [&'a str]>,
}

impl Default for HeatmapOptions<'_> {
    fn default() -> Self {
        HeatmapOptions {
            titles: None,
            figsize: (2.5, 2.5),
            cmap: Cmap::Reds,
            norm: Norm::Linear,
            xticks: None,
            yticks: None,
        }
    }
}
// ANCHOR_END: options

/// How [`show_heatmaps`] maps values to colours between the smallest
/// value `lo` and the largest `hi`.
///
/// # Examples
/// ```
/// use d2l_attention::plot::Norm;
///
/// assert_eq!(Norm::Linear.position(0.25, 0.0, 1.0), 0.25);
/// // The square root spreads small values: a quarter of the range is
/// // half-way along the colormap.
/// assert_eq!(Norm::Sqrt.position(0.25, 0.0, 1.0), 0.5);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Norm {
    /// Colour in proportion to the value (matplotlib's default).
    #[default]
    Linear,
    /// Colour in proportion to the square root of the value's distance from
    /// `lo`: small weights stay visible next to large ones, which lets
    /// panels of very different ranges share one colorbar.
    Sqrt,
}

impl Norm {
    /// Where `value` falls on the colormap, 0 at `lo` and 1 at `hi`.
    ///
    /// # Examples
    /// See [`Norm`].
    pub fn position(self, value: f64, lo: f64, hi: f64) -> f64 {
        let t = ((value - lo) / (hi - lo)).clamp(0.0, 1.0);
        match self {
            Norm::Linear => t,
            Norm::Sqrt => t.sqrt(),
        }
    }

    fn color(self, cmap: Cmap, value: f64, (lo, hi): (f64, f64)) -> RGBColor {
        cmap.color(self.position(value, lo, hi), 0.0, 1.0)
    }
}

/// Draws a grid of heatmaps, one per matrix, with one shared colorbar; the
/// Rust counterpart of d2l's `show_heatmaps` (zh §10.1 / en §11.1).
///
/// - `matrices`: (num_rows, num_cols, num_queries, num_keys); matrix
///   `(i, j)` goes in row `i`, column `j` of the grid, its query `q` is row
///   `q` of the image (top to bottom) and key `k` column `k`.
/// - `xlabel` is written under the bottom row, `ylabel` beside the left
///   column.
/// - `options`: titles, figure size and colormap, d2l's defaults unless set
///   ([`HeatmapOptions`]). All matrices share one colour scale, from their
///   smallest to their largest entry, which the colorbar shows (d2l's
///   colorbar shows only the last matrix's scale). A constant input is drawn
///   in the scale's middle colour.
///
/// Each cell is square, as with matplotlib's `imshow`. Hovering over a
/// cell shows its panel title, query and key (their tokens when `yticks`
/// and `xticks` are given) and value, as an SVG `<title>`; a figure of more
/// than [`CELL_TITLES_MAX`] cells carries one title per row instead, naming
/// the row's largest value and its key. Text grows with figures wider than
/// the printed page ([`display_width`](super::display_width)).
///
/// # Errors
/// [`PlotError::InvalidArgument`] naming `matrices` when it has no entries
/// or holds a NaN or infinity, naming `titles` when their count differs from
/// num_cols, and naming `figsize` when a side is outside 0.5..=40 inches.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::{HeatmapOptions, show_heatmaps};
///
/// // One 3 × 3 matrix: the identity, each query attending to its own key.
/// let eye = Tensor::<2>::eye(3, &Device::flex()).reshape([1, 1, 3, 3]);
/// let svg = show_heatmaps(&eye, "Keys", "Queries", HeatmapOptions::default()).unwrap();
/// // Three dark cells (Reds at 1) and six light ones (Reds at 0).
/// assert_eq!(svg.as_str().matches("fill=\"#67000D\"").count(), 3);
/// assert_eq!(svg.as_str().matches("fill=\"#FFF5F0\"").count(), 6);
/// ```
// ANCHOR: signature
pub fn show_heatmaps(
    matrices: &Tensor<4>,
    xlabel: &str,
    ylabel: &str,
    options: HeatmapOptions,
) -> Result<Svg, PlotError> {
    // ANCHOR_END: signature
    let HeatmapOptions {
        titles,
        figsize,
        cmap,
        norm,
        xticks,
        yticks,
    } = options;
    let [num_rows, num_cols, num_queries, num_keys] = matrices.dims();
    if num_rows * num_cols * num_queries * num_keys == 0 {
        return Err(invalid(
            "matrices",
            format!("shape {:?} has no entries", matrices.dims()),
        ));
    }
    if let Some(t) = titles
        && t.len() != num_cols
    {
        return Err(invalid(
            "titles",
            format!("{} titles for {num_cols} grid columns", t.len()),
        ));
    }
    for (arg, ticks, n) in [
        ("xticks", xticks, num_keys),
        ("yticks", yticks, num_queries),
    ] {
        if let Some(t) = ticks
            && t.len() != n
        {
            return Err(invalid(arg, format!("{} labels for {n}", t.len())));
        }
    }
    let (width, height) = pixels(figsize)?;
    let values = matrices.clone().try_into_vec_as::<f64>().map_err(|e| {
        PlotError::Read {
            arg: "matrices",
            reason: e.to_string(),
        }
    })?;
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        let idx = unravel(i, [num_rows, num_cols, num_queries, num_keys]);
        return Err(invalid(
            "matrices",
            format!("entry {idx:?} is {}", values[i]),
        ));
    }
    let (vmin, vmax) = color_range(&values);

    let ticks: Vec<String> = value_ticks(vmin, vmax)
        .into_iter()
        .map(|v| colorbar_label(v, (vmin, vmax)))
        .collect();
    let areas = Areas::new(width).fitting(&ticks);
    let row_titles = values.len() > CELL_TITLES_MAX;

    let mut svg = String::new();
    let mut cells_svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height))
            .into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (cells, bar) =
            root.split_horizontally(width.saturating_sub(areas.colorbar));
        let (cells_w, cells_h) = cells.dim_in_pixel();
        let (cell_w, cell_h) =
            (cells_w / num_cols as u32, cells_h / num_rows as u32);
        // One square size for every matrix, fitting the most crowded cell.
        let title_area = if titles.is_some() { areas.title } else { 0 };
        let free_w = cell_w.saturating_sub(areas.y + 2 * MARGIN) as f64;
        let free_h =
            cell_h.saturating_sub(areas.x + title_area + 2 * MARGIN) as f64;
        let side = (free_w / num_keys as f64).min(free_h / num_queries as f64);
        for (index, cell) in
            cells.split_evenly((num_rows, num_cols)).iter().enumerate()
        {
            let (i, j) = (index / num_cols, index % num_cols);
            let start = index * num_queries * num_keys;
            let matrix = &values[start..start + num_queries * num_keys];
            let labels = CellLabels {
                xlabel: (i + 1 == num_rows).then_some(xlabel),
                ylabel: (j == 0).then_some(ylabel),
                names: (xlabel, ylabel),
                title: titles.map(|t| t[j]),
                xticks,
                yticks,
                row_titles,
            };
            cells_svg.push_str(&draw_cell(
                cell,
                (num_queries, num_keys),
                side,
                matrix,
                &labels,
                (vmin, vmax),
                (cmap, norm),
                areas,
            )?);
        }
        // matplotlib's `shrink=0.6`: 60 % of the height the matrices take.
        let bar_height = (0.6 * side * (num_rows * num_queries) as f64)
            .clamp(40.0, 0.9 * height as f64) as u32;
        draw_colorbar(
            &bar,
            height,
            bar_height,
            (vmin, vmax),
            (cmap, norm),
            areas,
        )?;
        root.present().map_err(draw_err)?;
    }
    prepend(&mut svg, &cells_svg);
    Ok(Svg(svg))
}

struct CellLabels<'a> {
    /// The axis labels drawn beside this matrix, if any.
    xlabel: Option<&'a str>,
    ylabel: Option<&'a str>,
    /// The axis labels, for hover titles.
    names: (&'a str, &'a str),
    title: Option<&'a str>,
    xticks: Option<&'a [&'a str]>,
    yticks: Option<&'a [&'a str]>,
    /// One hover title per row instead of per cell.
    row_titles: bool,
}

impl CellLabels<'_> {
    /// The `i`-th key's or query's name: its token in quotes, or its index.
    fn tick(ticks: Option<&[&str]>, i: usize) -> String {
        match ticks {
            Some(t) => format!("“{}”", t[i]),
            None => i.to_string(),
        }
    }

    /// The hover title of cell (q, k), or of row q when `k` is None (then
    /// naming the row's largest weight).
    fn hover(&self, q: usize, k: usize, v: f64, whole_row: bool) -> String {
        let (x, y) = self.names;
        let panel = self.title.map(|t| format!("{t}: ")).unwrap_or_default();
        let row = format!("{y} {}", Self::tick(self.yticks, q));
        let col = format!("{x} {}", Self::tick(self.xticks, k));
        let text = if whole_row {
            format!("{panel}{row}: largest {} at {col}", value(v))
        } else {
            format!("{panel}{row}, {col}: {}", value(v))
        };
        format!("<title>{}</title>", escape(&text))
    }
}

fn unravel(mut i: usize, dims: [usize; 4]) -> [usize; 4] {
    let mut idx = [0; 4];
    for d in (0..4).rev() {
        idx[d] = i % dims[d];
        i /= dims[d];
    }
    idx
}

/// The shared colour scale; a constant input gets a scale of ±0.5 around
/// its value when it is at most 10 in size, else of ±5 % of it (±0.5 is
/// lost to rounding from 2⁵³ up).
fn color_range(values: &[f64]) -> (f64, f64) {
    let vmin = values.iter().copied().fold(f64::INFINITY, f64::min);
    let vmax = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if vmax > vmin {
        (vmin, vmax)
    } else {
        let half = (vmin.abs() * 0.05).max(0.5);
        (vmin - half, vmax + half)
    }
}

fn draw_cell<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    (nq, nk): (usize, usize),
    side: f64,
    matrix: &[f64],
    labels: &CellLabels,
    (vmin, vmax): (f64, f64),
    (cmap, norm): (Cmap, Norm),
    areas: Areas,
) -> Result<String, PlotError> {
    let x_area = if labels.xlabel.is_some() {
        areas.x
    } else {
        areas.x_bare
    };
    let y_area = if labels.ylabel.is_some() {
        areas.y
    } else {
        areas.y_bare
    };
    let title_area = if labels.title.is_some() {
        areas.title
    } else {
        0
    };
    // Square cells: shrink the plotting area to num_keys × num_queries squares.
    let (w, h) = area.dim_in_pixel();
    let free_w = w.saturating_sub(y_area + 2 * MARGIN) as f64;
    let free_h = h.saturating_sub(x_area + title_area + 2 * MARGIN) as f64;
    let pad_x = ((free_w - side * nk as f64) / 2.0).max(0.0) as u32;
    let pad_y = ((free_h - side * nq as f64) / 2.0).max(0.0) as u32;

    let mut builder = ChartBuilder::on(area);
    builder
        .margin_left(MARGIN + pad_x)
        .margin_right(MARGIN + pad_x)
        .margin_top(MARGIN + pad_y)
        .margin_bottom(MARGIN + pad_y)
        .x_label_area_size(x_area)
        .y_label_area_size(y_area);
    if let Some(title) = labels.title {
        builder.caption(title, (FONT, LABEL_FONT * areas.scale));
    }
    let x_range = IndexAxis::new(nk, false, labels.xticks.is_some());
    // Query 0 at the top, as in an image.
    let y_range = IndexAxis::new(nq, true, labels.yticks.is_some());
    let mut chart = builder
        .build_cartesian_2d(x_range, y_range)
        .map_err(draw_err)?;
    // The cells, returned to go under the axes, so that they do not cover
    // them.
    let cells = cells_svg(&chart, (nq, nk), matrix, labels, |v| {
        norm.color(cmap, v, (vmin, vmax))
    });
    // an index, or its label when the caller gave labels
    let label = |ticks: Option<&[&str]>, v: f64| match ticks {
        Some(t) => t.get(v.round() as usize).copied().unwrap_or("").to_owned(),
        None => format!("{v:.0}"),
    };
    let x_fmt = |v: &f64| label(labels.xticks, *v);
    let y_fmt = |v: &f64| label(labels.yticks, *v);
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
    Ok(cells)
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
    let mut out = String::from("<g>\n");
    for q in 0..nq {
        let row = &matrix[q * nk..(q + 1) * nk];
        for (k, &v) in row.iter().enumerate() {
            let RGBColor(r, g, b) = color(v);
            let _ = write!(
                out,
                "{} fill=\"#{r:02X}{g:02X}{b:02X}\"",
                rect(corner(q, k), corner(q + 1, k + 1))
            );
            if labels.row_titles {
                out.push_str("/>\n");
            } else {
                let _ =
                    writeln!(out, ">{}</rect>", labels.hover(q, k, v, false));
            }
        }
        if labels.row_titles {
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
/// interval around it, ticks sit on whole indices ([`integer_ticks`], or
/// every index when `every` is set, for labels), and `reversed` puts index
/// 0 at the far end (the top, for rows).
struct IndexAxis {
    n: usize,
    reversed: bool,
    every: bool,
}

impl IndexAxis {
    fn new(n: usize, reversed: bool, every: bool) -> Self {
        IndexAxis { n, reversed, every }
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
            integer_ticks(self.n)
        }
    }

    fn range(&self) -> Range<f64> {
        -0.5..self.n as f64 - 0.5
    }
}

/// The colorbar's value axis, with ticks at round values, at least three
/// of them ([`value_ticks`]).
struct ValueAxis {
    lo: f64,
    hi: f64,
}

impl Ranged for ValueAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let t = (value - self.lo) / (self.hi - self.lo);
        limit.0 + (t * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _: Hint) -> Vec<f64> {
        value_ticks(self.lo, self.hi)
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// A colorbar tick's label: four decimals, or scientific notation where
/// four decimals cannot tell the ticks of a scale narrower than 1e-3 apart.
fn colorbar_label(v: f64, (vmin, vmax): (f64, f64)) -> String {
    if vmax - vmin < 1e-3 {
        scientific(v)
    } else {
        tick_label(v)
    }
}

/// Round ticks within `lo..=hi`: the widest step of 1, 2, 2.5 or 5 times a
/// power of ten that still gives at least three ticks.
fn value_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let ticks = |step: f64| -> Vec<f64> {
        let first = (lo / step - 1e-9).ceil() as i64;
        let last = (hi / step + 1e-9).floor() as i64;
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
/// `height`, ticks on its right.
fn draw_colorbar<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    height: u32,
    bar_height: u32,
    (vmin, vmax): (f64, f64),
    (cmap, norm): (Cmap, Norm),
    areas: Areas,
) -> Result<(), PlotError> {
    const STEPS: usize = 64;
    let bar = area
        .clone()
        .shrink((0, (height - bar_height) / 2), (areas.colorbar, bar_height));
    let mut chart = ChartBuilder::on(&bar)
        .margin_left(8)
        .margin_right(4)
        .right_y_label_area_size(areas.colorbar_labels)
        .build_cartesian_2d(0.0..1.0, vmin..vmax)
        .map_err(draw_err)?
        .set_secondary_coord(0.0..1.0, ValueAxis { lo: vmin, hi: vmax });
    let step = (vmax - vmin) / STEPS as f64;
    chart
        .draw_series((0..STEPS).map(|s| {
            let lo = vmin + s as f64 * step;
            let color = norm.color(cmap, lo + step / 2.0, (vmin, vmax));
            Rectangle::new([(0.0, lo), (1.0, lo + step)], color.filled())
        }))
        .map_err(draw_err)?;
    let fmt = |v: &f64| colorbar_label(*v, (vmin, vmax));
    chart
        .configure_secondary_axes()
        .x_labels(0)
        .y_label_formatter(&fmt)
        .label_style((FONT, TICK_FONT * areas.scale))
        .draw()
        .map_err(draw_err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    fn matrices(values: Vec<f32>, shape: [usize; 4]) -> Tensor<4> {
        Tensor::from_data(TensorData::new(values, shape), &Device::flex())
    }

    fn err(m: &Tensor<4>, titles: Option<&[&str]>) -> String {
        show_heatmaps(
            m,
            "Keys",
            "Queries",
            HeatmapOptions {
                titles,
                ..Default::default()
            },
        )
        .unwrap_err()
        .to_string()
    }

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
            assert!(t.iter().all(|v| (lo - 1e-9..=hi + 1e-9).contains(v)));
        }
    }

    #[test]
    fn tick_labels_must_match_the_matrix() {
        let m = matrices(vec![0.5; 6], [1, 1, 2, 3]);
        let options = HeatmapOptions {
            xticks: Some(&["a", "b"]),
            ..Default::default()
        };
        let err = show_heatmaps(&m, "k", "q", options).unwrap_err();
        assert_eq!(err.to_string(), "invalid `xticks`: 2 labels for 3");
        let options = HeatmapOptions {
            xticks: Some(&["a", "b", "c"]),
            yticks: Some(&["first", "second"]),
            ..Default::default()
        };
        let svg = show_heatmaps(&m, "k", "q", options).unwrap();
        for label in ["a", "b", "c", "first", "second"] {
            assert!(
                svg.as_str().contains(&format!(">\n{label}\n<")),
                "{label}"
            );
        }
    }

    #[test]
    fn empty_matrices_are_refused_by_name() {
        assert_eq!(
            err(&matrices(vec![], [1, 1, 0, 3]), None),
            "invalid `matrices`: shape [1, 1, 0, 3] has no entries"
        );
    }

    #[test]
    fn a_nan_is_refused_with_its_position() {
        let mut v = vec![0.5; 2 * 2 * 3];
        v[7] = f32::NAN;
        assert_eq!(
            err(&matrices(v, [1, 2, 2, 3]), None),
            "invalid `matrices`: entry [0, 1, 0, 1] is NaN"
        );
    }

    #[test]
    fn titles_must_match_the_columns() {
        let m = matrices(vec![0.5; 2 * 4], [1, 2, 2, 2]);
        assert_eq!(
            err(&m, Some(&["only one"])),
            "invalid `titles`: 1 titles for 2 grid columns"
        );
        assert!(
            show_heatmaps(
                &m,
                "k",
                "q",
                HeatmapOptions {
                    titles: Some(&["a", "b"]),
                    figsize: (5.0, 2.5),
                    cmap: Cmap::Blues,
                    ..Default::default()
                }
            )
            .is_ok()
        );
    }

    #[test]
    fn same_input_same_bytes_and_a_constant_matrix_is_drawn() {
        let m = matrices((0..12).map(|i| i as f32).collect(), [1, 2, 2, 3]);
        let a = show_heatmaps(
            &m,
            "Keys",
            "Queries",
            HeatmapOptions {
                titles: Some(&["x", "y"]),
                figsize: (5.0, 2.5),
                cmap: Cmap::Blues,
                ..Default::default()
            },
        )
        .unwrap();
        let b = show_heatmaps(
            &m,
            "Keys",
            "Queries",
            HeatmapOptions {
                titles: Some(&["x", "y"]),
                figsize: (5.0, 2.5),
                cmap: Cmap::Blues,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(a, b);
        // Blues at the smallest and largest entry.
        assert_eq!(a.as_str().matches("fill=\"#F7FBFF\"").count(), 1);
        assert_eq!(a.as_str().matches("fill=\"#08306B\"").count(), 1);
        let constant = show_heatmaps(
            &matrices(vec![2.0; 4], [1, 1, 2, 2]),
            "k",
            "q",
            HeatmapOptions::default(),
        )
        .unwrap();
        // The middle of Reds (#fb6a4a) for all four cells.
        assert_eq!(constant.as_str().matches("fill=\"#FB6A4A\"").count(), 4);
    }

    #[test]
    fn every_cell_names_its_row_column_and_value_on_hover() {
        let m = matrices(vec![0.25, 0.75, 1.0, 0.0], [1, 1, 2, 2]);
        let options = HeatmapOptions {
            xticks: Some(&["go", "."]),
            yticks: Some(&["va", "!"]),
            titles: Some(&["Head 1"]),
            ..Default::default()
        };
        let svg = show_heatmaps(&m, "Keys", "Queries", options).unwrap();
        assert_eq!(svg.as_str().matches("<title>").count(), 4);
        assert!(
            svg.as_str()
                .contains("<title>Head 1: Queries “!”, Keys “go”: 1</title>")
        );
        let plain =
            show_heatmaps(&m, "Keys", "Queries", Default::default()).unwrap();
        assert!(
            plain
                .as_str()
                .contains("<title>Queries 0, Keys 1: 0.75</title>")
        );
    }

    #[test]
    fn very_large_figures_carry_a_title_per_row() {
        let n = 32; // 1,024 cells, over CELL_TITLES_MAX
        let values = (0..n * n).map(|i| if i % n == 7 { 1.0 } else { 0.0 });
        let m = matrices(values.collect(), [1, 1, n, n]);
        let svg =
            show_heatmaps(&m, "Keys", "Queries", Default::default()).unwrap();
        assert_eq!(svg.as_str().matches("<title>").count(), n);
        assert!(
            svg.as_str()
                .contains("<title>Queries 31: largest 1 at Keys 7</title>")
        );
    }

    #[test]
    fn text_stays_readable_at_every_width_the_book_shows() {
        let m = matrices(vec![0.5; 2 * 4 * 9], [2, 4, 3, 3]);
        for width in [2.5, 5.0, 7.0, 10.0, 14.0] {
            let options = HeatmapOptions {
                figsize: (width, 3.0),
                titles: Some(&["a", "b", "c", "d"]),
                ..Default::default()
            };
            let svg = show_heatmaps(&m, "k", "q", options).unwrap();
            let shown = crate::plot::display_width(width * 100.0);
            let px = crate::plot::min_text_px(svg.as_str(), shown).unwrap();
            assert!(px >= 9.0, "{width} in: {px} px");
        }
    }
}
