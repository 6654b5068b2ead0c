//! A vectorised `exp` for f32 and the softmax rows built on it, in safe
//! SIMD through pulp (the widest instruction set the CPU has, chosen at run
//! time).
//!
//! The method is Cody and Waite's: e^x = 2^n · e^f with n = round(x / ln 2)
//! and |f| ≤ ln 2 / 2, f computed with ln 2 split in two (Cephes' `expf`
//! constants, S. Moshier), e^f by its Taylor series to degree 7 (truncation
//! below 0.1 ulp), 2^n written into the exponent bits.

use pulp::{Arch, Simd, WithSimd};

const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// ln 2 = LN2_HI + LN2_LO; LN2_HI has 9 significant bits, so n · LN2_HI is
/// exact for every |n| ≤ 2¹⁵ (Cephes' `expf`, C1 and C2).
const LN2_HI: f32 = 0.693_359_4;
const LN2_LO: f32 = -2.121_944_4e-4;
/// 1.5 · 2²³: adding it rounds to an integer, which lands in the low bits.
const ROUND: f32 = 12_582_912.0;
/// Below ln(f32::MIN_POSITIVE) the result would be subnormal: 0 is returned.
pub const UNDERFLOW: f32 = -87.336_55;
/// Above ln(f32::MAX) the result is +∞.
pub const OVERFLOW: f32 = 88.722_84;
/// 1/k! for k = 7 down to 2: the Horner coefficients of e^f.
const TAYLOR: [f32; 6] = [
    1.0 / 5040.0,
    1.0 / 720.0,
    1.0 / 120.0,
    1.0 / 24.0,
    1.0 / 6.0,
    0.5,
];

/// e^x lane by lane. Exact 0 below [`UNDERFLOW`] (and for −∞), +∞ above
/// [`OVERFLOW`], NaN for NaN.
#[inline(always)]
pub(super) fn exp<S: Simd>(simd: S, x: S::f32s) -> S::f32s {
    let splat = |v: f32| simd.splat_f32s(v);
    let clamped =
        simd.min_f32s(simd.max_f32s(x, splat(UNDERFLOW)), splat(OVERFLOW));
    let rounded = simd.mul_add_f32s(clamped, splat(LOG2_E), splat(ROUND));
    let n = simd.sub_f32s(rounded, splat(ROUND));
    let f = simd.mul_add_f32s(n, splat(-LN2_HI), clamped);
    let f = simd.mul_add_f32s(n, splat(-LN2_LO), f);
    let mut p = splat(TAYLOR[0]);
    for c in &TAYLOR[1..] {
        p = simd.mul_add_f32s(p, f, splat(*c));
    }
    p = simd.mul_add_f32s(p, f, splat(1.0));
    p = simd.mul_add_f32s(p, f, splat(1.0));
    // The biased exponent n + 127 in 1..=255; n = 128 (x above 127.5 ln 2)
    // is written as 2 · 2¹²⁷.
    let bits = simd.transmute_u32s_f32s(rounded);
    let biased = simd
        .add_u32s(bits, simd.splat_u32s(127u32.wrapping_sub(ROUND.to_bits())));
    let top = simd.greater_than_u32s(biased, simd.splat_u32s(254));
    let biased = simd.min_u32s(biased, simd.splat_u32s(254));
    let scale = simd
        .transmute_f32s_u32s(simd.mul_u32s(biased, simd.splat_u32s(1 << 23)));
    let p = simd.select_f32s(top, simd.add_f32s(p, p), p);
    let y = simd.mul_f32s(p, scale);
    let y = simd.select_f32s(
        simd.less_than_f32s(x, splat(UNDERFLOW)),
        splat(0.0),
        y,
    );
    let y = simd.select_f32s(
        simd.greater_than_f32s(x, splat(OVERFLOW)),
        splat(f32::INFINITY),
        y,
    );
    // NaN is the one value not equal to itself.
    simd.select_f32s(simd.equal_f32s(x, x), y, x)
}

/// e^x of one value, through the same lanes (for row tails).
#[inline(always)]
pub(super) fn exp_one<S: Simd>(simd: S, x: f32) -> f32 {
    simd.reduce_max_f32s(exp(simd, simd.splat_f32s(x)))
}

/// 1 / (1 + e^−x) lane by lane, from e = e^−|x| so that nothing overflows:
/// 1/(1 + e) for x ≥ 0, e/(1 + e) below (burn-flex's two branches).
#[inline(always)]
fn sigmoid<S: Simd>(simd: S, x: S::f32s) -> S::f32s {
    let e = exp(simd, simd.neg_f32s(simd.abs_f32s(x)));
    let r = simd
        .div_f32s(simd.splat_f32s(1.0), simd.add_f32s(simd.splat_f32s(1.0), e));
    let nonnegative = simd.greater_than_or_equal_f32s(x, simd.splat_f32s(0.0));
    simd.select_f32s(nonnegative, r, simd.mul_f32s(e, r))
}

/// The largest value of a row.
#[inline(always)]
pub(super) fn row_max<S: Simd>(simd: S, row: &[f32]) -> f32 {
    let (head, tail) = S::as_simd_f32s(row);
    let mut max = simd.splat_f32s(f32::NEG_INFINITY);
    for &x in head {
        max = simd.max_f32s(max, x);
    }
    tail.iter()
        .fold(simd.reduce_max_f32s(max), |m, &x| m.max(x))
}

/// Writes e^(x − shift) into `out` and returns its sum.
#[inline(always)]
fn exp_shifted<S: Simd>(
    simd: S,
    row: &[f32],
    shift: f32,
    out: &mut [f32],
) -> f32 {
    let (head, tail) = S::as_simd_f32s(row);
    let (out_head, out_tail) = S::as_mut_simd_f32s(out);
    let shift_s = simd.splat_f32s(shift);
    let mut sum = simd.splat_f32s(0.0);
    for (y, &x) in out_head.iter_mut().zip(head) {
        *y = exp(simd, simd.sub_f32s(x, shift_s));
        sum = simd.add_f32s(sum, *y);
    }
    let mut total = simd.reduce_sum_f32s(sum);
    for (y, &x) in out_tail.iter_mut().zip(tail) {
        *y = exp_one(simd, x - shift);
        total += *y;
    }
    total
}

/// What a row becomes.
#[derive(Clone, Copy)]
pub(crate) enum Row {
    /// e^x, element by element (rows play no part).
    Exp,
    /// 1 / (1 + e^−x), element by element.
    Sigmoid,
    /// e^(x − max) / Σ e^(x − max).
    Softmax,
    /// x − max − ln Σ e^(x − max).
    LogSoftmax,
}

struct Rows<'a> {
    input: &'a [f32],
    output: &'a mut [f32],
    len: usize,
    kind: Row,
}

/// Softmax of a row whose entries at or past `valid` count as `fill`
/// (d2l's `masked_softmax`: the filled entries share one exponential).
#[inline(always)]
fn masked_softmax_row<S: Simd>(
    simd: S,
    x: &[f32],
    y: &mut [f32],
    valid: usize,
    fill: f32,
) {
    let k = x.len();
    let mut max = if valid > 0 {
        row_max(simd, &x[..valid])
    } else {
        fill
    };
    if valid < k {
        max = max.max(fill);
    }
    let sum = exp_shifted(simd, &x[..valid], max, &mut y[..valid]);
    // (With every key valid, max may lie far above the fill: no term.)
    let masked = if valid < k {
        exp_one(simd, fill - max)
    } else {
        0.0
    };
    let sum = sum + (k - valid) as f32 * masked;
    let (head, tail) = S::as_mut_simd_f32s(&mut y[..valid]);
    let sum_s = simd.splat_f32s(sum);
    head.iter_mut().for_each(|v| *v = simd.div_f32s(*v, sum_s));
    tail.iter_mut().for_each(|v| *v /= sum);
    y[valid..].fill(masked / sum);
}

struct MaskedRows<'a> {
    input: &'a [f32],
    output: &'a mut [f32],
    valid: &'a [usize],
    fill: f32,
}

impl WithSimd for MaskedRows<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let len = self.input.len() / self.valid.len();
        let rows = self
            .input
            .chunks_exact(len)
            .zip(self.output.chunks_exact_mut(len));
        for ((x, y), &valid) in rows.zip(self.valid) {
            masked_softmax_row(simd, x, y, valid, self.fill);
        }
    }
}

/// Masked softmax of each row of `input` (one entry of `valid` per row,
/// each at most the row length), entries past the valid length counting
/// as `fill`, on the calling thread.
pub(crate) fn masked_rows(
    input: &[f32],
    output: &mut [f32],
    valid: &[usize],
    fill: f32,
) {
    assert_eq!(
        input.len(),
        output.len(),
        "masked_rows: input and output differ in length"
    );
    assert!(
        !valid.is_empty() && input.len().is_multiple_of(valid.len()),
        "masked_rows: one valid length per row"
    );
    Arch::new().dispatch(MaskedRows {
        input,
        output,
        valid,
        fill,
    });
}

impl WithSimd for Rows<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let rows = self.input.chunks_exact(self.len);
        for (x, y) in rows.zip(self.output.chunks_exact_mut(self.len)) {
            match self.kind {
                Row::Exp => {
                    exp_shifted(simd, x, 0.0, y);
                }
                Row::Sigmoid => {
                    let (head, tail) = S::as_simd_f32s(x);
                    let (out_head, out_tail) = S::as_mut_simd_f32s(y);
                    for (y, &x) in out_head.iter_mut().zip(head) {
                        *y = sigmoid(simd, x);
                    }
                    for (y, &x) in out_tail.iter_mut().zip(tail) {
                        *y = simd
                            .reduce_max_f32s(sigmoid(simd, simd.splat_f32s(x)));
                    }
                }
                Row::Softmax => {
                    let max = row_max(simd, x);
                    let sum = exp_shifted(simd, x, max, y);
                    let (head, tail) = S::as_mut_simd_f32s(y);
                    let sum_s = simd.splat_f32s(sum);
                    head.iter_mut().for_each(|v| *v = simd.div_f32s(*v, sum_s));
                    tail.iter_mut().for_each(|v| *v /= sum);
                }
                Row::LogSoftmax => {
                    let max = row_max(simd, x);
                    let log_sum = exp_shifted(simd, x, max, y).ln();
                    for (v, &x) in y.iter_mut().zip(x) {
                        *v = (x - max) - log_sum;
                    }
                }
            }
        }
    }
}

/// Applies `kind` to every row of length `len` of `input`, writing `output`
/// (same length, a multiple of `len`), on the calling thread.
pub(crate) fn rows(kind: Row, input: &[f32], output: &mut [f32], len: usize) {
    assert_eq!(
        input.len(),
        output.len(),
        "rows: input and output differ in length"
    );
    assert!(
        len > 0 && input.len().is_multiple_of(len),
        "rows: length {} is not a multiple of {len}",
        input.len()
    );
    Arch::new().dispatch(Rows {
        input,
        output,
        len,
        kind,
    });
}
