//! Sequential colormaps like matplotlib's "Reds" and "Blues".

use plotters::prelude::{ColorMap, DerivedColorMap, RGBColor};

/// A sequential colormap: low values light, high values dark.
///
/// # Examples
/// ```
/// use d2l_attention::Cmap;
///
/// assert_eq!(Cmap::default(), Cmap::Reds);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cmap {
    /// White to dark red, matplotlib's "Reds" (d2l's default for heatmaps).
    #[default]
    Reds,
    /// White to dark blue, matplotlib's "Blues".
    Blues,
}

/// matplotlib's "tab10" colours, its default colour cycle (`_tab10_data`
/// in matplotlib's `_cm.py`), in order: blue, orange, green, red, purple,
/// brown, pink, grey, olive, cyan.
///
/// # Examples
/// ```
/// use d2l_attention::plot::TAB10;
/// use plotters::prelude::RGBColor;
///
/// assert_eq!(TAB10[1], RGBColor(0xff, 0x7f, 0x0e)); // matplotlib's orange
/// ```
pub const TAB10: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x7f, 0x7f, 0x7f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

// The nine ColorBrewer classes that matplotlib interpolates linearly.
const REDS: [RGBColor; 9] = [
    RGBColor(0xff, 0xf5, 0xf0),
    RGBColor(0xfe, 0xe0, 0xd2),
    RGBColor(0xfc, 0xbb, 0xa1),
    RGBColor(0xfc, 0x92, 0x72),
    RGBColor(0xfb, 0x6a, 0x4a),
    RGBColor(0xef, 0x3b, 0x2c),
    RGBColor(0xcb, 0x18, 0x1d),
    RGBColor(0xa5, 0x0f, 0x15),
    RGBColor(0x67, 0x00, 0x0d),
];
const BLUES: [RGBColor; 9] = [
    RGBColor(0xf7, 0xfb, 0xff),
    RGBColor(0xde, 0xeb, 0xf7),
    RGBColor(0xc6, 0xdb, 0xef),
    RGBColor(0x9e, 0xca, 0xe1),
    RGBColor(0x6b, 0xae, 0xd6),
    RGBColor(0x42, 0x92, 0xc6),
    RGBColor(0x21, 0x71, 0xb5),
    RGBColor(0x08, 0x51, 0x9c),
    RGBColor(0x08, 0x30, 0x6b),
];

impl Cmap {
    /// The colour of `value` on a scale from `vmin` (lightest) to `vmax`
    /// (darkest); values outside are clamped. Needs `vmin < vmax`.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::Cmap;
    /// use plotters::style::RGBColor;
    ///
    /// // matplotlib's Reds runs from #fff5f0 to #67000d.
    /// assert_eq!(Cmap::Reds.color(0.0, 0.0, 1.0), RGBColor(0xff, 0xf5, 0xf0));
    /// assert_eq!(Cmap::Reds.color(2.0, 0.0, 1.0), RGBColor(0x67, 0x00, 0x0d));
    /// ```
    pub fn color(self, value: f64, vmin: f64, vmax: f64) -> RGBColor {
        let colors: &[RGBColor] = match self {
            Cmap::Reds => &REDS,
            Cmap::Blues => &BLUES,
        };
        DerivedColorMap::new(colors).get_color_normalized(value, vmin, vmax)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ends_and_middle_match_matplotlib() {
        assert_eq!(Cmap::Reds.color(0.0, 0.0, 1.0), RGBColor(0xff, 0xf5, 0xf0));
        assert_eq!(Cmap::Reds.color(1.0, 0.0, 1.0), RGBColor(0x67, 0x00, 0x0d));
        // matplotlib: Reds(0.5) = #fb6a4a, the middle class.
        assert_eq!(Cmap::Reds.color(0.5, 0.0, 1.0), RGBColor(0xfb, 0x6a, 0x4a));
        assert_eq!(
            Cmap::Blues.color(5.0, 0.0, 10.0),
            RGBColor(0x6b, 0xae, 0xd6)
        );
        // Clamped outside the range.
        assert_eq!(
            Cmap::Blues.color(-3.0, 0.0, 1.0),
            RGBColor(0xf7, 0xfb, 0xff)
        );
    }

    #[test]
    fn interpolates_between_classes() {
        // Halfway between classes 0 and 1 (1/16 of the range).
        let c = Cmap::Reds.color(1.0 / 16.0, 0.0, 1.0);
        assert_eq!(c, RGBColor(0xff, 0xeb, 0xe1));
    }
}
