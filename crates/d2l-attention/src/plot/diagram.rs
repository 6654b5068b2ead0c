//! Box-and-arrow diagrams (the book's model figures), drawn with plotters
//! like every other figure, so that they live in code and are checked.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::svg::subscripts;
use super::{FONT, PlotError, Svg, draw_err};

/// The text size of diagrams, in plotters' units (16 px written, the
/// book's body text).
const DIAGRAM_FONT: f64 = 16.0 * super::PLOTTERS_PT;

/// A box of a [`Diagram`]: its top-left corner and size in px, its text
/// (one or more lines) and its fill.
#[derive(Clone, Debug)]
pub struct Node {
    /// (x, y) of the top-left corner, px.
    pub at: (i32, i32),
    /// (width, height), px.
    pub size: (i32, i32),
    /// The lines of text, centred.
    pub text: Vec<String>,
    /// The fill colour.
    pub fill: RGBColor,
}

impl Node {
    /// A box at `at` of `size` with `text` (lines separated by `\n`).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::plot::Node;
    ///
    /// let node = Node::new((10, 10), (80, 40), "Query\nq");
    /// assert_eq!(node.text, ["Query", "q"]);
    /// ```
    pub fn new(at: (i32, i32), size: (i32, i32), text: &str) -> Self {
        Node {
            at,
            size,
            text: text.lines().map(str::to_owned).collect(),
            fill: RGBColor(0xf2, 0xf2, 0xf2),
        }
    }

    /// The same box with another fill.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::plot::Node;
    /// use plotters::style::RGBColor;
    ///
    /// let node = Node::new((0, 0), (10, 10), "k").fill(RGBColor(255, 0, 0));
    /// assert_eq!(node.fill, RGBColor(255, 0, 0));
    /// ```
    pub fn fill(mut self, fill: RGBColor) -> Self {
        self.fill = fill;
        self
    }

    /// The middle of the box's `side`: 't'op, 'b'ottom, 'l'eft, 'r'ight.
    ///
    /// # Panics
    /// For another side.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::plot::Node;
    ///
    /// let node = Node::new((10, 10), (80, 40), "q");
    /// assert_eq!((node.side('t'), node.side('r')), ((50, 10), (90, 30)));
    /// ```
    pub fn side(&self, side: char) -> (i32, i32) {
        let ((x, y), (w, h)) = (self.at, self.size);
        match side {
            't' => (x + w / 2, y),
            'b' => (x + w / 2, y + h),
            'l' => (x, y + h / 2),
            'r' => (x + w, y + h / 2),
            _ => panic!("`side` must be one of t, b, l, r; got {side:?}"),
        }
    }
}

/// A diagram: boxes, arrows along straight segments, frames around the
/// boxes of a repeated part, and free text, on a white canvas of `size` px.
///
/// # Examples
/// ```
/// use d2l_attention::plot::{Diagram, Node};
///
/// let (q, k) = (Node::new((10, 10), (60, 30), "q"), Node::new((110, 10), (60, 30), "k"));
/// let svg = Diagram::new((180, 50))
///     .arrow(q.side('r'), k.side('l'))
///     .node(q)
///     .node(k)
///     .draw()
///     .unwrap();
/// assert!(svg.as_str().contains(">\nk\n<"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct Diagram {
    size: (u32, u32),
    nodes: Vec<Node>,
    arrows: Vec<Vec<(i32, i32)>>,
    frames: Vec<((i32, i32), (i32, i32))>,
    labels: Vec<((i32, i32), String)>,
}

impl Diagram {
    /// An empty diagram of `size` (width, height) px.
    ///
    /// # Examples
    /// See [`Diagram`].
    pub fn new(size: (u32, u32)) -> Self {
        Diagram {
            size,
            ..Diagram::default()
        }
    }

    /// Adds a box.
    ///
    /// # Examples
    /// See [`Diagram`].
    pub fn node(mut self, node: Node) -> Self {
        self.nodes.push(node);
        self
    }

    /// Adds an arrow from `from` to `to` (px), its head at `to`.
    ///
    /// # Examples
    /// See [`Diagram`].
    pub fn arrow(self, from: (i32, i32), to: (i32, i32)) -> Self {
        self.path(&[from, to])
    }

    /// Adds an arrow along `points` (px), its head at the last one: a
    /// path that turns corners, such as a residual connection around a box.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::plot::Diagram;
    ///
    /// let svg = Diagram::new((100, 100)).path(&[(50, 90), (10, 90), (10, 10), (40, 10)]);
    /// assert!(svg.draw().unwrap().as_str().contains("50,90 10,90 10,10"));
    /// ```
    pub fn path(mut self, points: &[(i32, i32)]) -> Self {
        self.arrows.push(points.to_vec());
        self
    }

    /// Adds a frame (an unfilled grey rectangle) at `at` of `size` px,
    /// drawn under everything else: the part of a model that repeats.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::plot::Diagram;
    ///
    /// let svg = Diagram::new((100, 100)).frame((10, 10), (80, 60)).draw().unwrap();
    /// assert!(svg.as_str().contains("<rect x=\"10\" y=\"10\" width=\"80\" height=\"60\""));
    /// ```
    pub fn frame(mut self, at: (i32, i32), size: (i32, i32)) -> Self {
        self.frames.push((at, size));
        self
    }

    /// Adds a line of text centred at `at` (px).
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::plot::Diagram;
    ///
    /// let svg = Diagram::new((100, 40)).label((50, 20), "softmax").draw().unwrap();
    /// assert!(svg.as_str().contains("softmax"));
    /// ```
    pub fn label(mut self, at: (i32, i32), text: &str) -> Self {
        self.labels.push((at, text.to_owned()));
        self
    }

    /// The SVG: frames, then arrows, so that boxes cover their ends.
    ///
    /// # Errors
    /// [`PlotError`] when plotters fails to draw.
    ///
    /// # Examples
    /// See [`Diagram`].
    pub fn draw(&self) -> Result<Svg, PlotError> {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, self.size)
                .into_drawing_area();
            root.fill(&WHITE).map_err(draw_err)?;
            let ink = RGBColor(0x33, 0x33, 0x33);
            let centred = TextStyle::from((FONT, DIAGRAM_FONT).into_font())
                .color(&ink)
                .pos(Pos::new(HPos::Center, VPos::Center));
            for &((x, y), (w, h)) in &self.frames {
                let grey = RGBColor(0x88, 0x88, 0x88).stroke_width(2);
                root.draw(&Rectangle::new([(x, y), (x + w, y + h)], grey))
                    .map_err(draw_err)?;
            }
            for points in &self.arrows {
                root.draw(&PathElement::new(
                    points.clone(),
                    ink.stroke_width(1),
                ))
                .map_err(draw_err)?;
                if let [.., from, to] = points[..] {
                    root.draw(&arrow_head(from, to, ink)).map_err(draw_err)?;
                }
            }
            for node in &self.nodes {
                let ((x, y), (w, h)) = (node.at, node.size);
                root.draw(&Rectangle::new(
                    [(x, y), (x + w, y + h)],
                    node.fill.filled(),
                ))
                .map_err(draw_err)?;
                root.draw(&Rectangle::new(
                    [(x, y), (x + w, y + h)],
                    ink.stroke_width(1),
                ))
                .map_err(draw_err)?;
                let n = node.text.len() as i32;
                for (i, line) in node.text.iter().enumerate() {
                    let dy = (2 * i as i32 - (n - 1)) * 10;
                    let at = (x + w / 2, y + h / 2 + dy);
                    root.draw_text(line, &centred, at).map_err(draw_err)?;
                }
            }
            for (at, text) in &self.labels {
                root.draw_text(text, &centred, *at).map_err(draw_err)?;
            }
            root.present().map_err(draw_err)?;
        }
        Ok(Svg(subscripts(&svg)))
    }
}

/// A filled triangle at `to`, pointing along `from` → `to`.
fn arrow_head(
    from: (i32, i32),
    to: (i32, i32),
    color: RGBColor,
) -> Polygon<(i32, i32)> {
    let (dx, dy) = ((to.0 - from.0) as f64, (to.1 - from.1) as f64);
    let len = dx.hypot(dy).max(1.0);
    let (ux, uy) = (dx / len, dy / len);
    let (length, half) = (8.0, 4.0);
    let base = (to.0 as f64 - ux * length, to.1 as f64 - uy * length);
    let corner = |s: f64| {
        (
            (base.0 - uy * half * s).round() as i32,
            (base.1 + ux * half * s).round() as i32,
        )
    };
    Polygon::new(vec![to, corner(1.0), corner(-1.0)], color.filled())
}
