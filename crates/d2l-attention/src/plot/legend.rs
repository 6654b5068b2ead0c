//! A plot's legend: each label beside a swatch drawn as its series is (line
//! colour, dash pattern and opacity, or the marker), placed where it covers
//! no data, outside the axes if every corner holds some.

use std::fmt::Write;

use super::FONT;
use super::svg::escape;

/// How a series looks, for its swatch.
#[derive(Clone, Debug, PartialEq)]
pub(super) enum Swatch {
    /// A line: colour (`#RRGGBB`), opacity, `stroke-dasharray` if dashed.
    Line(String, f64, Option<&'static str>),
    /// A filled circle: colour and opacity.
    Point(String, f64),
}

/// Where the legend goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// Inside the axes, in the corner (left?, upper?).
    Inside(bool, bool),
    /// Right of the axes, at the top.
    Outside,
}

pub(super) struct Legend {
    entries: Vec<(String, Swatch)>,
    /// Font size in px.
    font: f64,
}

const SWATCH: f64 = 24.0;
const PAD: f64 = 6.0;
/// The corner's gap to the axes, px.
pub(super) const GAP: i32 = 8;
/// The largest marker's radius plus half a line's width, px.
const MARKER: i32 = 4;

/// The stroke attributes of a line: colour, opacity, width 2 px and its
/// dashes if any.
pub(super) fn stroke(color: &str, alpha: f64, dash: Option<&str>) -> String {
    let dash = dash
        .map(|d| format!(" stroke-dasharray=\"{d}\""))
        .unwrap_or_default();
    format!(
        "stroke=\"{color}\" stroke-opacity=\"{alpha}\" stroke-width=\"2\"{dash}"
    )
}

impl Legend {
    pub(super) fn new(entries: Vec<(String, Swatch)>, font: f64) -> Self {
        Legend { entries, font }
    }

    /// (width, height) in px, the width estimated from the longest label
    /// (0.6 em per character: [`FONT`]'s lower-case letters take 0.56 em on
    /// average, its digits 0.64).
    pub(super) fn size(&self) -> (i32, i32) {
        let chars = self
            .entries
            .iter()
            .map(|(l, _)| l.chars().count())
            .max()
            .unwrap_or(0);
        let width = 3.0 * PAD + SWATCH + 0.6 * self.font * chars as f64;
        let height = 2.0 * PAD + self.row() * self.entries.len() as f64;
        (width.ceil() as i32, height.ceil() as i32)
    }

    fn row(&self) -> f64 {
        1.5 * self.font
    }

    /// The first corner (upper right, upper left, lower right, lower left)
    /// where the legend covers none of `points` (fractions of the axes, 0
    /// to 1, y up), else outside if it is at most `room` px wide, else the
    /// corner where it covers the fewest. `area` is the axes' size in px.
    pub(super) fn place(
        &self,
        points: &[(f64, f64)],
        area: (f64, f64),
        room: f64,
    ) -> Place {
        let (w, h) = self.size();
        // its extent, with room for a marker's radius beyond its edge
        let fw = (w + GAP + MARKER) as f64 / area.0;
        let fh = (h + GAP + MARKER) as f64 / area.1;
        let covered = |(left, upper): (bool, bool)| {
            let (ax, bx) = if left { (0.0, fw) } else { (1.0 - fw, 1.0) };
            let (ay, by) = if upper { (1.0 - fh, 1.0) } else { (0.0, fh) };
            points
                .iter()
                .filter(|&&(u, v)| {
                    (ax..=bx).contains(&u) && (ay..=by).contains(&v)
                })
                .count()
        };
        let corners =
            [(false, true), (true, true), (false, false), (true, false)];
        if let Some(&(left, upper)) = corners.iter().find(|&&c| covered(c) == 0)
        {
            return Place::Inside(left, upper);
        }
        if w as f64 <= room {
            return Place::Outside;
        }
        let (left, upper) = corners
            .into_iter()
            .min_by_key(|&c| covered(c))
            .expect("four corners");
        Place::Inside(left, upper)
    }

    /// The legend as SVG with its top-left corner at `at` px.
    pub(super) fn svg(&self, at: (i32, i32)) -> String {
        let (w, h) = self.size();
        let mut out = format!(
            "<g class=\"legend\">\n<rect x=\"{}\" y=\"{}\" width=\"{w}\" \
             height=\"{h}\" fill=\"#FFFFFF\" fill-opacity=\"0.8\" \
             stroke=\"#CCCCCC\"/>\n",
            at.0, at.1
        );
        for (i, (label, swatch)) in self.entries.iter().enumerate() {
            let y = at.1 as f64 + PAD + self.row() * (i as f64 + 0.5);
            let x = at.0 as f64 + PAD;
            match swatch {
                Swatch::Line(color, alpha, dash) => {
                    let _ = writeln!(
                        out,
                        "<line x1=\"{x}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\" {}/>",
                        x + SWATCH,
                        stroke(color, *alpha, *dash)
                    );
                }
                Swatch::Point(color, alpha) => {
                    let _ = writeln!(
                        out,
                        "<circle cx=\"{}\" cy=\"{y}\" r=\"3\" fill=\"{color}\" \
                         fill-opacity=\"{alpha}\"/>",
                        x + SWATCH / 2.0
                    );
                }
            }
            let _ = writeln!(
                out,
                "<text x=\"{}\" y=\"{y}\" dominant-baseline=\"central\" \
                 font-family=\"{FONT}\" font-size=\"{}\">{}</text>",
                x + SWATCH + PAD,
                self.font,
                escape(label)
            );
        }
        out.push_str("</g>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn legend() -> Legend {
        Legend::new(
            vec![
                ("Truth".into(), Swatch::Line("#1F77B4".into(), 1.0, None)),
                (
                    "Pred".into(),
                    Swatch::Line("#BF00BF".into(), 1.0, Some("7 4")),
                ),
            ],
            10.0,
        )
    }

    #[test]
    fn the_legend_takes_the_first_free_corner_or_goes_outside() {
        let (area, room) = ((300.0, 200.0), 100.0);
        assert_eq!(legend().place(&[], area, room), Place::Inside(false, true));
        // Data in the upper right: upper left.
        assert_eq!(
            legend().place(&[(0.95, 0.95)], area, room),
            Place::Inside(true, true)
        );
        let mut corners =
            vec![(0.02, 0.02), (0.98, 0.02), (0.02, 0.98), (0.98, 0.98)];
        assert_eq!(legend().place(&corners, area, room), Place::Outside);
        // No room outside: the corner covering the fewest points.
        corners.extend([(0.97, 0.97), (0.03, 0.97), (0.97, 0.03)]);
        assert_eq!(
            legend().place(&corners, area, 10.0),
            Place::Inside(true, false)
        );
    }

    #[test]
    fn swatches_are_drawn_as_their_series() {
        let svg = legend().svg((10, 10));
        assert!(svg.contains("stroke=\"#BF00BF\" stroke-opacity=\"1\" stroke-width=\"2\" stroke-dasharray=\"7 4\""));
        assert_eq!(svg.matches("stroke-dasharray").count(), 1);
        assert!(svg.contains(">Truth</text>"));
    }
}
