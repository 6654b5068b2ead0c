//! `show_images`: a grid of small grey images with titles (d2l en §4.2's
//! `show_images`), optionally cut into patches or covered by a heat map
//! of one value per patch (a ViT's attention over an image), with hover
//! values as in every heatmap of the book.

use std::fmt::Write;

use super::svg::{escape, text_scale, value};
use super::{Cmap, FONT as FAMILY, PlotError, Svg, invalid};

/// One image of [`show_images`].
#[derive(Clone, Debug, Default)]
pub struct ImagePanel<'a> {
    /// A square image's pixels, row by row, 0 (white) to 255 (black), as
    /// matplotlib's "Greys" draws them.
    pub pixels: &'a [u8],
    /// Written above the image, one line per `\n`-separated part.
    pub title: String,
    /// One value per patch, row by row (a square number of them), drawn
    /// over the image in Reds on a scale shared by the grid; hovering over
    /// a patch shows its value.
    pub heat: Option<Vec<f64>>,
}

/// How [`show_images`] lays out its grid.
#[derive(Clone, Copy, Debug)]
pub struct ImageGrid {
    /// Panels per row.
    pub num_cols: usize,
    /// Screen pixels per image pixel.
    pub scale: f64,
    /// Pixels left between patches of this side, when cutting each image
    /// into its patches (0: uncut).
    pub patch: usize,
    /// A title for the heat's scale, written under the grid.
    pub heat_label: &'static str,
}

impl Default for ImageGrid {
    fn default() -> Self {
        ImageGrid {
            num_cols: 8,
            scale: 3.0,
            patch: 0,
            heat_label: "attention weight",
        }
    }
}

const GAP: f64 = 6.0;
/// Screen pixels between the patches of a cut image.
const CUT: f64 = 4.0;
const FONT: f64 = 11.0;

/// Draws `panels` in rows of `grid.num_cols`.
///
/// # Errors
/// [`PlotError::InvalidArgument`] naming `panels` when there are none, an
/// image is not square or differs in size from the first, or a heat map is
/// not square, does not divide the image, or holds a NaN or infinity;
/// naming `grid` when `num_cols` is 0 or `patch` does not divide the side.
///
/// # Examples
/// ```
/// use d2l_attention::plot::{ImageGrid, ImagePanel, show_images};
///
/// let pixels = [0u8, 255, 255, 0];
/// let heat = Some(vec![0.1, 0.2, 0.3, 0.4]);
/// let panel = ImagePanel { pixels: &pixels, title: "a".into(), heat };
/// let svg = show_images(&[panel], ImageGrid { num_cols: 1, ..Default::default() }).unwrap();
/// // Four pixels, four patches with their values on hover.
/// assert_eq!(svg.as_str().matches("<title>").count(), 4);
/// assert!(svg.as_str().contains("<title>a: patch (2, 2): 0.4</title>"));
/// ```
pub fn show_images(
    panels: &[ImagePanel],
    grid: ImageGrid,
) -> Result<Svg, PlotError> {
    let side = check(panels, grid)?;
    let heat: Vec<f64> = panels
        .iter()
        .flat_map(|p| p.heat.iter().flatten().copied())
        .collect();
    let range = heat
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
            (lo.min(v), hi.max(v))
        });
    let cuts = if grid.patch > 0 {
        (side / grid.patch - 1) as f64 * CUT
    } else {
        0.0
    };
    let image_px = side as f64 * grid.scale + cuts;
    let rows = panels.len().div_ceil(grid.num_cols);
    let cols = grid.num_cols.min(panels.len());
    let width = (cols as f64 * (image_px + GAP) + GAP).ceil();
    let font = FONT * text_scale(width as u32);
    let lines = panels
        .iter()
        .map(|p| p.title.lines().count())
        .max()
        .unwrap_or(1)
        .max(1);
    let header = font * (1.2 * lines as f64 + 0.3);
    let cell_h = image_px + header + GAP;
    let legend = if heat.is_empty() { 0.0 } else { font * 2.0 };
    let height = (rows as f64 * cell_h + GAP + legend).ceil();
    let mut svg = format!(
        "<svg width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" xmlns=\"http://www.w3.org/2000/svg\">\n<rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height}\" fill=\"#FFFFFF\"/>\n"
    );
    for (i, panel) in panels.iter().enumerate() {
        let x0 = GAP + (i % grid.num_cols) as f64 * (image_px + GAP);
        let y0 = GAP + (i / grid.num_cols) as f64 * cell_h;
        for (k, line) in panel.title.lines().enumerate() {
            let _ = writeln!(
                svg,
                "<text x=\"{}\" y=\"{:.1}\" font-size=\"{font:.1}\" font-family=\"{FAMILY}\" text-anchor=\"middle\">{}</text>",
                x0 + image_px / 2.0,
                y0 + font * (1.0 + 1.2 * k as f64),
                escape(line)
            );
        }
        let top = y0 + header;
        draw_pixels(&mut svg, panel.pixels, side, (x0, top), grid);
        if let Some(values) = &panel.heat {
            draw_heat(
                &mut svg,
                values,
                side,
                (x0, top),
                grid,
                (&panel.title, range),
            );
        }
    }
    if !heat.is_empty() {
        let (lo, hi) = range;
        let _ = writeln!(
            svg,
            "<text x=\"{GAP}\" y=\"{}\" font-size=\"{font:.1}\" font-family=\"{FAMILY}\">Red: {}, from {} (clear) to {} (darkest); hover for values</text>",
            height - font * 0.6,
            grid.heat_label,
            value(lo),
            value(hi)
        );
    }
    svg.push_str("</svg>\n");
    Ok(Svg(svg))
}

fn check(panels: &[ImagePanel], grid: ImageGrid) -> Result<usize, PlotError> {
    let Some(first) = panels.first() else {
        return Err(invalid("panels", "no images".to_owned()));
    };
    let side = (first.pixels.len() as f64).sqrt() as usize;
    if grid.num_cols == 0 || (grid.patch > 0 && side % grid.patch != 0) {
        return Err(invalid(
            "grid",
            format!(
                "num_cols {} and patch {} for images of side {side}",
                grid.num_cols, grid.patch
            ),
        ));
    }
    for (i, panel) in panels.iter().enumerate() {
        if panel.pixels.len() != side * side || side == 0 {
            return Err(invalid(
                "panels",
                format!(
                    "image {i} has {} pixels, expected {side} × {side}",
                    panel.pixels.len()
                ),
            ));
        }
        if let Some(heat) = &panel.heat {
            let g = (heat.len() as f64).sqrt() as usize;
            if g == 0
                || g * g != heat.len()
                || side % g != 0
                || heat.iter().any(|v| !v.is_finite())
            {
                return Err(invalid(
                    "panels",
                    format!(
                        "heat of image {i}: {} values, expected a finite square grid dividing {side}",
                        heat.len()
                    ),
                ));
            }
        }
    }
    Ok(side)
}

/// The screen position of image pixel `i`, with the gaps between patches.
fn at(i: usize, grid: ImageGrid) -> f64 {
    let cuts = if grid.patch > 0 {
        (i / grid.patch) as f64 * CUT
    } else {
        0.0
    };
    i as f64 * grid.scale + cuts
}

fn draw_pixels(
    svg: &mut String,
    pixels: &[u8],
    side: usize,
    (x0, y0): (f64, f64),
    grid: ImageGrid,
) {
    let s = grid.scale;
    // crisp edges: no hairlines between neighbouring pixels
    svg.push_str("<g shape-rendering=\"crispEdges\">\n");
    // a cut image's patches, each on a light tile so that its edges show
    if grid.patch > 0 {
        let tile = grid.patch as f64 * s;
        for r in (0..side).step_by(grid.patch) {
            for c in (0..side).step_by(grid.patch) {
                let _ = writeln!(
                    svg,
                    "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{tile}\" height=\"{tile}\" fill=\"#EEEEEE\"/>",
                    x0 + at(c, grid),
                    y0 + at(r, grid)
                );
            }
        }
    }
    for r in 0..side {
        for c in 0..side {
            let v = 255 - pixels[r * side + c];
            // the background shows through (white, or a cut image's tile)
            if v >= if grid.patch > 0 { 0xEE } else { 0xFF } {
                continue;
            }
            let _ = writeln!(
                svg,
                "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{s}\" height=\"{s}\" fill=\"#{v:02X}{v:02X}{v:02X}\"/>",
                x0 + at(c, grid),
                y0 + at(r, grid)
            );
        }
    }
    svg.push_str("</g>\n");
    if grid.patch == 0 {
        let px = at(side, grid);
        let _ = writeln!(
            svg,
            "<rect x=\"{x0:.2}\" y=\"{y0:.2}\" width=\"{px}\" height=\"{px}\" fill=\"none\" stroke=\"#BBBBBB\"/>"
        );
    }
}

fn draw_heat(
    svg: &mut String,
    values: &[f64],
    side: usize,
    (x0, y0): (f64, f64),
    grid: ImageGrid,
    (title, (lo, hi)): (&str, (f64, f64)),
) {
    let g = (values.len() as f64).sqrt() as usize;
    let n = side / g; // image pixels per cell side
    // a cell's first pixel on screen, and its size (gaps of a cut image inside)
    let start = |i: usize| at(i * n, grid);
    let cell = at(n - 1, grid) + grid.scale - at(0, grid);
    for (k, &v) in values.iter().enumerate() {
        let (r, c) = (k / g, k % g);
        let t = if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
        let color = Cmap::Reds.color(t, 0.0, 1.0);
        let _ = writeln!(
            svg,
            "<rect x=\"{:.2}\" y=\"{:.2}\" width=\"{cell}\" height=\"{cell}\" fill=\"#{:02X}{:02X}{:02X}\" fill-opacity=\"{:.2}\"><title>{}: patch ({}, {}): {}</title></rect>",
            x0 + start(c),
            y0 + start(r),
            color.0,
            color.1,
            color.2,
            0.15 + 0.6 * t,
            escape(&title.replace('\n', " ")),
            r + 1,
            c + 1,
            value(v)
        );
    }
}
