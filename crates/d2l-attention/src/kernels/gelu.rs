//! GELU, x · Φ(x) (Hendrycks and Gimpel, 2016), in SIMD lanes: burn-flex
//! computes erf one value at a time through libm, 9 % of the ViT
//! training's time in its profile (`benches/reports/2026-12-05-fused-attention.md`).
//!
//! Φ(x) = erfc(−x/√2) / 2, with erfc(z) for z ≥ 0 as Numerical Recipes'
//! `erfcc` computes it (Press et al., *Numerical Recipes in C*, 2nd ed.,
//! §6.2: a Chebyshev fit with fractional error below 1.2e-7 everywhere):
//! t = 1/(1 + z/2), erfc(z) = t · exp(−z² + P(t)), P of degree 9; and
//! erfc(−z) = 2 − erfc(z). The backward pass is Φ(x) + x · φ(x), φ the
//! standard normal density.

use pulp::{Arch, Simd, WithSimd};

use super::exp::exp;

/// P's coefficients, highest degree first (Horner), as Numerical Recipes
/// prints them.
#[allow(clippy::excessive_precision)]
const ERFC: [f32; 10] = [
    0.170_872_77,
    -0.822_152_23,
    1.488_515_87,
    -1.135_203_98,
    0.278_868_07,
    -0.186_288_06,
    0.096_784_18,
    0.374_091_96,
    1.000_023_68,
    -1.265_512_23,
];
/// 1/√(2π), φ(0).
const FRAC_1_SQRT_2PI: f32 = 0.398_942_3;

/// (Φ(x), x²/2) lane by lane.
#[inline(always)]
fn cdf<S: Simd>(simd: S, x: S::f32s) -> (S::f32s, S::f32s) {
    let splat = |v: f32| simd.splat_f32s(v);
    // z = |x|/√2, z² = x²/2
    let z =
        simd.mul_f32s(simd.abs_f32s(x), splat(std::f32::consts::FRAC_1_SQRT_2));
    let half_square = simd.mul_f32s(simd.mul_f32s(x, x), splat(0.5));
    let t =
        simd.div_f32s(splat(1.0), simd.mul_add_f32s(z, splat(0.5), splat(1.0)));
    let mut p = splat(ERFC[0]);
    for c in &ERFC[1..] {
        p = simd.mul_add_f32s(p, t, splat(*c));
    }
    // erfc(z) / 2: Φ below 0, 1 − Φ above.
    let half_erfc = simd.mul_f32s(
        simd.mul_f32s(t, splat(0.5)),
        exp(simd, simd.sub_f32s(p, half_square)),
    );
    let nonnegative = simd.greater_than_or_equal_f32s(x, splat(0.0));
    let phi = simd.select_f32s(
        nonnegative,
        simd.sub_f32s(splat(1.0), half_erfc),
        half_erfc,
    );
    (phi, half_square)
}

/// x · Φ(x) lane by lane (NaN for NaN and for −∞, as burn's).
#[inline(always)]
fn gelu<S: Simd>(simd: S, x: S::f32s) -> S::f32s {
    simd.mul_f32s(x, cdf(simd, x).0)
}

/// g · (Φ(x) + x · φ(x)) lane by lane.
#[inline(always)]
fn gelu_backward<S: Simd>(simd: S, x: S::f32s, g: S::f32s) -> S::f32s {
    let (phi, half_square) = cdf(simd, x);
    let density = simd.mul_f32s(
        simd.splat_f32s(FRAC_1_SQRT_2PI),
        exp(simd, simd.neg_f32s(half_square)),
    );
    simd.mul_f32s(g, simd.mul_add_f32s(x, density, phi))
}

/// `f` over a slice: the full vectors, then the tail as one partial
/// vector.
struct Map<'a, F> {
    x: &'a [f32],
    g: Option<&'a [f32]>,
    out: &'a mut [f32],
    f: F,
}

/// What [`Map`] computes: GELU, or its gradient given g.
#[derive(Clone, Copy)]
enum Pass {
    Forward,
    Backward,
}

impl WithSimd for Map<'_, Pass> {
    type Output = ();

    // Plain loops, no closure: a closure would not inherit the target
    // features pulp enables here, and its lanes would not be inlined.
    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let g = self.g.unwrap_or(self.x);
        let (x_head, x_tail) = S::as_simd_f32s(self.x);
        let (g_head, g_tail) = S::as_simd_f32s(g);
        let (out_head, out_tail) = S::as_mut_simd_f32s(self.out);
        let (x_tail, g_tail) = (
            simd.partial_load_f32s(x_tail),
            simd.partial_load_f32s(g_tail),
        );
        let pairs = out_head.iter_mut().zip(x_head).zip(g_head);
        match self.f {
            Pass::Forward => {
                for ((y, &x), _) in pairs {
                    *y = gelu(simd, x);
                }
                simd.partial_store_f32s(out_tail, gelu(simd, x_tail));
            }
            Pass::Backward => {
                for ((y, &x), &g) in pairs {
                    *y = gelu_backward(simd, x, g);
                }
                let tail = gelu_backward(simd, x_tail, g_tail);
                simd.partial_store_f32s(out_tail, tail);
            }
        }
    }
}

/// GELU of `x` into `out` (same length), on the calling thread.
pub(crate) fn forward_slice(x: &[f32], out: &mut [f32]) {
    assert_eq!(
        x.len(),
        out.len(),
        "gelu: input and output differ in length"
    );
    Arch::new().dispatch(Map {
        x,
        g: None,
        out,
        f: Pass::Forward,
    });
}

/// The gradient g · GELU′(x) into `out`, on the calling thread.
pub(crate) fn backward_slice(x: &[f32], g: &[f32], out: &mut [f32]) {
    assert!(
        x.len() == g.len() && g.len() == out.len(),
        "gelu backward: x, g and out differ in length"
    );
    Arch::new().dispatch(Map {
        x,
        g: Some(g),
        out,
        f: Pass::Backward,
    });
}
