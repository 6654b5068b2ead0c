//! Linear and logarithmic axes for [`plot`](super::plot).

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;

use super::{PlotError, invalid};

/// How an axis maps values to positions, as matplotlib's `xscale` and
/// `yscale` (d2l's `plot` takes both).
///
/// # Examples
/// ```
/// use d2l_attention::plot::Scale;
/// use d2l_attention::{Axes, Series, plot};
///
/// let n = [1.0, 10.0, 100.0, 1000.0];
/// let axes = Axes::new("n", "steps").xscale(Scale::Log).yscale(Scale::Log);
/// let svg = plot(&[Series::line(&n, &n)], &axes).unwrap();
/// // One tick per decade.
/// assert!(svg.as_str().contains(">\n1000\n<") && svg.as_str().contains(">\n10\n<"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scale {
    /// Equal distances for equal differences (the default).
    #[default]
    Linear,
    /// Equal distances for equal ratios (base 10); every value must be
    /// positive.
    Log,
}

/// One axis of a plot: its range and scale, and its ticks when they are
/// given rather than chosen.
#[derive(Clone, Debug)]
pub(super) struct ScaleAxis {
    lo: f64,
    hi: f64,
    scale: Scale,
    ticks: Option<Vec<f64>>,
}

impl ScaleAxis {
    /// The axis for `data` (or the `given` limits), widened by `pad` of its
    /// width on each side, measured in the scale's own terms.
    pub(super) fn fit(
        given: Option<(f64, f64)>,
        data: impl Iterator<Item = f64>,
        pad: f64,
        scale: Scale,
    ) -> Result<Self, PlotError> {
        let (to, from): (fn(f64) -> f64, fn(f64) -> f64) = match scale {
            Scale::Linear => (|v| v, |v| v),
            Scale::Log => (f64::log10, |v| 10f64.powf(v)),
        };
        if let Some((lo, hi)) = given {
            let positive = scale == Scale::Linear || lo > 0.0;
            if !(lo.is_finite() && hi.is_finite() && lo < hi && positive) {
                return Err(invalid(
                    "axes",
                    format!(
                        "limits ({lo}, {hi}) must be finite with lo < hi{}",
                        if positive {
                            ""
                        } else {
                            ", positive on a log axis"
                        }
                    ),
                ));
            }
            return Ok(ScaleAxis {
                lo,
                hi,
                scale,
                ticks: None,
            });
        }
        let (lo, hi) = data
            .map(to)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
                (a.min(v), b.max(v))
            });
        let (lo, hi) = padded(lo, hi, pad);
        // Ends that a figure can use: finite, and positive on a log axis
        // (10^lo underflows to 0 below about 1e-324).
        let smallest = match scale {
            Scale::Linear => -f64::MAX,
            Scale::Log => f64::from_bits(1),
        };
        Ok(ScaleAxis {
            lo: from(lo).max(smallest),
            hi: from(hi).min(f64::MAX),
            scale,
            ticks: None,
        })
    }

    /// The axis with ticks at `ticks` (those inside its range) instead of
    /// the ones its scale would choose.
    pub(super) fn with_ticks(mut self, ticks: Option<&[f64]>) -> Self {
        self.ticks = ticks.map(|t| {
            let (lo, hi) = (self.lo, self.hi);
            t.iter()
                .copied()
                .filter(|v| (lo..=hi).contains(v))
                .collect()
        });
        self
    }

    /// Where `v` falls between the axis' ends: 0 at `lo`, 1 at `hi`. An axis
    /// wider than f64 holds (±1e308) takes halves (exact but for
    /// subnormals); a log axis wider than f64's range of ratios takes the
    /// difference of logarithms.
    pub(super) fn fraction(&self, v: f64) -> f64 {
        let (lo, hi) = (self.lo, self.hi);
        match self.scale {
            Scale::Linear if (hi - lo).is_finite() => (v - lo) / (hi - lo),
            Scale::Linear => (v / 2.0 - lo / 2.0) / (hi / 2.0 - lo / 2.0),
            Scale::Log if (hi / lo).is_finite() => {
                (v / lo).ln() / (hi / lo).ln()
            }
            Scale::Log => (v.ln() - lo.ln()) / (hi.ln() - lo.ln()),
        }
    }

    /// The power of ten that linear ticks are computed in units of: 1,
    /// unless the axis reaches beyond 1e15 or is narrower than 1e-12, where
    /// plotters' tick search, written for ordinary ranges, would overflow,
    /// loop or give one tick. Such axes are labelled in scientific notation
    /// (four significant digits: ticks closer than that read alike).
    fn unit(&self) -> f64 {
        let big = self.lo.abs().max(self.hi.abs());
        let narrow = self.hi / 2.0 - self.lo / 2.0 < 0.5e-12;
        if big > 1e15 || (narrow && big > 0.0) {
            pow10(big.log10().floor() as i32)
        } else {
            1.0
        }
    }
}

/// 10^e as f64 reads it (1e-310 is subnormal, 1e-324 is 0, 1e309 is
/// infinite), which `powi` misses below 1e-308.
fn pow10(e: i32) -> f64 {
    format!("1e{e}").parse().expect("a number")
}

/// `lo..hi` widened by `pad` of its width on each side; a single value by
/// 0.5 when it is at most 10 in size, else by 5 % of it (0.5 is lost to
/// rounding from 2⁵³ up).
fn padded(lo: f64, hi: f64, pad: f64) -> (f64, f64) {
    if hi > lo {
        // the width halved, so that it stays finite for any finite ends
        let p = (hi / 2.0 - lo / 2.0) * (2.0 * pad);
        (lo - p, hi + p)
    } else {
        let p = (lo.abs() * 0.05).max(0.5);
        (lo - p, hi + p)
    }
}

impl Ranged for ScaleAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        let t = self.fraction(*value);
        limit.0 + (t * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if let Some(ticks) = &self.ticks {
            return ticks.clone();
        }
        match self.scale {
            Scale::Linear if self.unit() == 1.0 => {
                RangedCoordf64::from(self.lo..self.hi).key_points(hint)
            }
            Scale::Linear => {
                let unit = self.unit();
                let (lo, hi) = (self.lo / unit, self.hi / unit);
                if !(lo.is_finite() && hi.is_finite() && lo < hi) {
                    return vec![self.lo, self.hi];
                }
                let ticks = RangedCoordf64::from(lo..hi).key_points(hint);
                let inside = |v: &f64| (self.lo..=self.hi).contains(v);
                ticks.into_iter().map(|t| t * unit).filter(inside).collect()
            }
            Scale::Log => log_ticks(self.lo, self.hi),
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// Ticks of a log axis: the powers of ten within `lo..=hi` (every k-th of
/// them when there are more than eight), 2 and 5 times them when fewer than
/// three powers fall inside, and a linear axis' ticks when even those are
/// fewer than three (an axis narrower than a factor of 2.5, where a log
/// scale looks linear).
fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let inside = |v: &f64| {
        v.is_finite() && (lo * (1.0 - 1e-9)..=hi * (1.0 + 1e-9)).contains(v)
    };
    // decades of normal numbers: 1e-323 prints as 9.881e-324
    let decades = (lo.log10().floor() as i32).max(-308)
        ..=(hi.log10().ceil() as i32).min(308);
    let powers: Vec<f64> = decades.clone().map(pow10).filter(inside).collect();
    if powers.len() > 8 {
        let k = powers.len().div_ceil(8);
        return powers.into_iter().step_by(k).collect();
    }
    if powers.len() >= 3 {
        return powers;
    }
    let ticks: Vec<f64> = decades
        .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * pow10(e)))
        .filter(inside)
        .collect();
    if ticks.len() >= 3 {
        return ticks;
    }
    let linear = RangedCoordf64::from(lo..hi).key_points(NARROW_TICKS);
    if linear.len() >= 2 { linear } else { vec![lo, hi] }
}

/// At most this many ticks on a narrow log axis.
const NARROW_TICKS: usize = 8;

impl ScaleAxis {
    /// A tick's label: at most four decimals on a linear axis, four
    /// significant digits on a log axis (whose ticks may be tiny).
    pub(super) fn label(&self, v: f64) -> String {
        match self.scale {
            Scale::Linear if self.unit() != 1.0 => super::svg::scientific(v),
            Scale::Linear => super::tick_label(v),
            Scale::Log if v < 1e-8 => super::svg::scientific(v),
            Scale::Log => super::svg::value(v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_fall_on_decades() {
        assert_eq!(log_ticks(1.0, 1000.0), [1.0, 10.0, 100.0, 1000.0]);
        assert_eq!(log_ticks(0.8, 300.0), [1.0, 10.0, 100.0]);
        assert_eq!(log_ticks(1.5, 30.0), [2.0, 5.0, 10.0, 20.0]);
        let narrow = log_ticks(3.25, 3.85);
        assert_eq!(narrow.len(), 6, "{narrow:?}");
        assert!((narrow[0] - 3.3).abs() < 1e-9 && (narrow[5] - 3.8).abs() < 1e-9);
        assert_eq!(log_ticks(2.0, 4.0), [2.0, 2.5, 3.0, 3.5, 4.0]);
        let wide = log_ticks(1e-12, 1e12);
        assert!(wide.len() <= 8 && wide[0] == 1e-12, "{wide:?}");
    }

    #[test]
    fn a_log_axis_maps_ratios_to_distances() {
        let axis =
            ScaleAxis::fit(None, [1.0, 100.0].into_iter(), 0.0, Scale::Log)
                .unwrap();
        assert_eq!(axis.map(&10.0, (0, 200)), 100);
        assert_eq!(axis.map(&100.0, (0, 200)), 200);
        let err =
            ScaleAxis::fit(Some((0.0, 1.0)), [].into_iter(), 0.0, Scale::Log)
                .unwrap_err();
        assert!(err.to_string().contains("positive on a log axis"), "{err}");
    }
}
