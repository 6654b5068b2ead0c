//! `show_heatmaps`: a grid of attention-weight matrices; each matrix's
//! layout and cells in [`cell`], the colour bar in [`colorbar`].

mod cell;
mod colorbar;

use burn::tensor::Tensor;

use plotters::prelude::*;

use super::svg::{append, escape, prepend, value};
use super::{Cmap, PlotError, Svg, draw_err, invalid, pixels};
use cell::{Areas, draw_cell};
use colorbar::{colorbar_label, draw_colorbar, value_ticks};

/// Figures with more cells than this carry one hover title per row instead
/// of one per cell, to stay light.
pub const CELL_TITLES_MAX: usize = 1_000;

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
    /// One title per grid row, drawn left of the row, or none.
    pub row_titles: Option<&'a [&'a str]>,
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
    /// Square cells, or cells that fill the figure.
    pub aspect: Aspect,
}

impl Default for HeatmapOptions<'_> {
    fn default() -> Self {
        HeatmapOptions {
            titles: None,
            row_titles: None,
            figsize: (2.5, 2.5),
            cmap: Cmap::Reds,
            norm: Norm::Linear,
            xticks: None,
            yticks: None,
            aspect: Aspect::Equal,
        }
    }
}
// ANCHOR_END: options

/// The shape of [`show_heatmaps`]' cells, as matplotlib's `imshow(aspect=…)`.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::plot::Aspect;
/// use d2l_attention::{HeatmapOptions, show_heatmaps};
///
/// // Two columns of 40 rows: a sliver with square cells, the figure's
/// // height and half its width with `Auto`.
/// let tall = Tensor::<4>::ones([1, 1, 40, 2], &Device::flex());
/// let cell_width = |aspect| {
///     let options = HeatmapOptions { aspect, ..Default::default() };
///     let svg = show_heatmaps(&tall, "x", "y", options).unwrap();
///     let tag = svg.as_str().split("<rect").nth(2).unwrap().to_owned();
///     let width = tag.split("width=\"").nth(1).unwrap().split('"').next().unwrap();
///     width.parse::<f64>().unwrap()
/// };
/// assert!(cell_width(Aspect::Auto) > 5.0 * cell_width(Aspect::Equal));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Aspect {
    /// Square cells (matplotlib's default): the matrix keeps its shape.
    #[default]
    Equal,
    /// Cells as wide and as tall as the figure allows: a matrix of a few
    /// columns and many rows fills the figure instead of a sliver of it.
    Auto,
}

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
/// Each cell is square, as with matplotlib's `imshow`, unless
/// [`Aspect::Auto`] is asked for. Hovering over a
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
        row_titles,
        figsize,
        cmap,
        norm,
        xticks,
        yticks,
        aspect,
    } = options;
    let [num_rows, num_cols, num_queries, num_keys] = matrices.dims();
    if num_rows * num_cols * num_queries * num_keys == 0 {
        return Err(invalid(
            "matrices",
            format!("shape {:?} has no entries", matrices.dims()),
        ));
    }
    for (arg, given, n, of) in [
        ("titles", titles, num_cols, "columns"),
        ("row_titles", row_titles, num_rows, "rows"),
    ] {
        if let Some(t) = given
            && t.len() != n
        {
            return Err(invalid(
                arg,
                format!("{} titles for {n} grid {of}", t.len()),
            ));
        }
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
    // One cell size for every matrix, fitting the most crowded cell,
    // with room for upright x tick labels when they need it.
    let areas = Areas::new(width).fitting(&ticks).fitting_yticks(yticks);
    let cells_px = (width.saturating_sub(areas.colorbar), height);
    let shape = (num_queries, num_keys);
    let titled = (titles.is_some(), row_titles.is_some());
    let grid = (num_rows, num_cols);
    let (.., cell_px) = areas.grid(cells_px, grid, shape, titled, aspect);
    let areas = areas.rotating(xticks, cell_px.0);
    let (xs, ys, cell_px) =
        areas.grid(cells_px, grid, shape, titled, aspect);
    let hover_per_row = values.len() > CELL_TITLES_MAX;

    let mut svg = String::new();
    let mut cells_svg = String::new();
    let bar_svg;
    {
        let root = SVGBackend::with_string(&mut svg, (width, height))
            .into_drawing_area();
        root.fill(&WHITE).map_err(draw_err)?;
        let (cells, bar) =
            root.split_horizontally(width.saturating_sub(areas.colorbar));
        for (index, cell) in
            cells.split_by_breakpoints(&xs, &ys).iter().enumerate()
        {
            let (i, j) = (index / num_cols, index % num_cols);
            let start = index * num_queries * num_keys;
            let matrix = &values[start..start + num_queries * num_keys];
            let labels = CellLabels {
                xlabel: (i + 1 == num_rows).then_some(xlabel),
                ylabel: (j == 0).then_some(ylabel),
                names: (xlabel, ylabel),
                title: titles.map(|t| t[j]),
                row_title: row_titles.filter(|_| j == 0).map(|t| t[i]),
                xticks,
                yticks,
                hover_per_row,
            };
            cells_svg.push_str(&draw_cell(
                cell,
                shape,
                cell_px,
                matrix,
                &labels,
                (vmin, vmax),
                (cmap, norm),
                areas,
            )?);
        }
        // matplotlib's `shrink=0.6`: 60 % of the height the matrices take,
        // but tall enough for its labels to stand apart.
        let bar_height = (0.6 * cell_px.1 * (num_rows * num_queries) as f64)
            .max(80.0 * areas.scale)
            .min(0.9 * height as f64) as u32;
        bar_svg = draw_colorbar(
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
    append(&mut svg, &bar_svg);
    Ok(Svg(svg))
}

struct CellLabels<'a> {
    /// The axis labels drawn beside this matrix, if any.
    xlabel: Option<&'a str>,
    ylabel: Option<&'a str>,
    /// The axis labels, for hover titles.
    names: (&'a str, &'a str),
    title: Option<&'a str>,
    /// The title of this matrix's grid row, when it is the row's first.
    row_title: Option<&'a str>,
    xticks: Option<&'a [&'a str]>,
    yticks: Option<&'a [&'a str]>,
    /// One hover title per row instead of per cell.
    hover_per_row: bool,
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

    /// The colour bar's labels all start at one x (no label sits apart).
    #[test]
    fn colorbar_labels_share_one_anchor() {
        let m = matrices(vec![0.0, 0.03, 0.05, 0.09], [1, 1, 2, 2]);
        let svg = show_heatmaps(&m, "k", "q", Default::default()).unwrap();
        let bar = &svg.as_str()[svg.as_str().rfind("fill=\"none\"").unwrap()..];
        let starts: Vec<&str> = bar
            .split("<text x=\"")
            .skip(1)
            .map(|t| t.split('"').next().unwrap())
            .collect();
        assert_eq!(starts.len(), 4, "{bar}");
        assert!(starts.iter().all(|x| *x == starts[0]), "{starts:?}");
        assert_eq!(bar.matches("text-anchor=\"start\"").count(), 4);
    }

    /// Token labels wider than a cell stand upright; short ones do not.
    #[test]
    fn tick_labels_too_wide_for_a_cell_stand_upright() {
        let m = matrices(vec![0.5; 2 * 6], [1, 2, 1, 6]);
        let tokens = ["<bos>", "je", "suis", "chez", "moi", "."];
        let options = HeatmapOptions {
            figsize: (3.0, 2.0),
            xticks: Some(&tokens),
            ..Default::default()
        };
        let svg = show_heatmaps(&m, "k", "q", options).unwrap();
        let upright = svg.as_str().matches("transform=\"rotate(-90,").count();
        assert_eq!(upright, 12, "{}", svg.as_str());
        assert!(svg.as_str().contains(">\n&lt;bos&gt;\n</text>"));
        let options = HeatmapOptions {
            figsize: (14.0, 6.0),
            ..options
        };
        let wide = show_heatmaps(&m, "k", "q", options).unwrap();
        assert!(!wide.as_str().contains("rotate(-90,"));
    }

    /// Row titles name each grid row once, left of its first matrix, and
    /// must match the rows.
    #[test]
    fn row_titles_label_the_grid_rows() {
        let m = matrices(vec![0.5; 2 * 3 * 4], [2, 3, 2, 2]);
        let options = HeatmapOptions {
            figsize: (6.0, 4.0),
            row_titles: Some(&["layer 1", "layer 2"]),
            ..Default::default()
        };
        let svg = show_heatmaps(&m, "k", "q", options).unwrap();
        for title in ["layer 1", "layer 2"] {
            assert_eq!(
                svg.as_str().matches(&format!(">\n{title}\n<")).count(),
                1
            );
        }
        let options = HeatmapOptions {
            row_titles: Some(&["layer 1"]),
            ..options
        };
        let err = show_heatmaps(&m, "k", "q", options).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `row_titles`: 1 titles for 2 grid rows"
        );
    }

    /// Each title sits over the middle of its matrix, the first column's
    /// too (whose labels widen it), and cells and colour steps are drawn
    /// with crisp edges (no seams where the browser scales the figure).
    #[test]
    fn titles_centre_on_their_matrix_and_edges_are_crisp() {
        let m = matrices(vec![0.5; 2 * 9], [1, 2, 3, 3]);
        let options = HeatmapOptions {
            titles: Some(&["left", "right"]),
            figsize: (5.0, 2.5),
            yticks: Some(&["a long label", "b", "c"]),
            ..Default::default()
        };
        let svg = show_heatmaps(&m, "k", "q", options).unwrap();
        let svg = svg.as_str();
        let x_of = |text: &str| -> i32 {
            let rest = &text[text.find("x=\"").unwrap() + 3..];
            rest.split('"').next().unwrap().parse().unwrap()
        };
        // the matrices' cells, a group each, before the colour bar's
        let groups: Vec<&str> =
            svg.split("<g shape-rendering").skip(1).collect();
        for (j, title) in ["left", "right"].iter().enumerate() {
            let cells = &groups[j][..groups[j].find("</g>").unwrap()];
            let xs: Vec<i32> =
                cells.split("<rect ").skip(1).map(x_of).collect();
            let width = cells.split("width=\"").nth(1).unwrap();
            let width: i32 = width.split('"').next().unwrap().parse().unwrap();
            let (lo, hi) =
                (*xs.iter().min().unwrap(), *xs.iter().max().unwrap());
            let middle = (lo + hi + width) / 2;
            let at = svg.find(&format!(">\n{title}\n</text>")).unwrap();
            let x = x_of(&svg[svg[..at].rfind("<text").unwrap()..]);
            assert!(
                (x - middle).abs() <= 1,
                "{title} at {x}, matrix middle {middle}"
            );
        }
        assert_eq!(
            svg.matches("<g shape-rendering=\"crispEdges\">").count(),
            3
        );
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
        let draw = || {
            let options = HeatmapOptions {
                titles: Some(&["x", "y"]),
                figsize: (5.0, 2.5),
                cmap: Cmap::Blues,
                ..Default::default()
            };
            show_heatmaps(&m, "Keys", "Queries", options).unwrap()
        };
        let (a, b) = (draw(), draw());
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
