//! FlashAttention-2 on f32 buffers, for flex (Dao, "FlashAttention-2",
//! ICLR 2024, Algorithms 1 and 2): a block of query rows stays in cache
//! while blocks of keys and values stream past; each row keeps a running
//! maximum m and sum l of its exponentials (Milakov and Gimelshein 2018),
//! rescaling its output when m grows, and saves log-sum-exp m + ln l, from
//! which the backward pass recomputes each block's weights.
//!
//! Every row sees one range of keys (valid lengths, causal and window masks
//! all give one); key blocks outside every row's range are never touched.
//! A row that sees no key is d2l's uniform row (its masked scores all equal
//! −10⁶): weights 1/n_k, no gradient to its scores. Dropout multiplies
//! weight (row, key) by [`Keep`]'s factor for word row · n_k + key, as
//! `kernels::dropout` does for the unfused weights.
//!
//! The block products go through [`gemm`]: four rows by two vectors of
//! accumulators held in registers (pulp's SIMD, safe code).

use super::exp::{exp, exp_one, row_max};
use super::mask::Keep;
use crate::masks::MASK_VALUE;
use pulp::{Arch, Simd, WithSimd};
use rayon::prelude::*;

/// Query rows per block.
const BR: usize = 64;
/// Keys per block.
const BC: usize = 64;

/// One attention problem on contiguous row-major buffers: queries
/// (batch, heads, n_q, d), keys (batch, kv_heads, n_k, d), values (batch,
/// kv_heads, n_k, d_v).
pub(super) struct Problem<'a> {
    pub q: &'a [f32],
    pub k: &'a [f32],
    pub v: &'a [f32],
    pub heads: usize,
    pub kv_heads: usize,
    pub n_q: usize,
    pub n_k: usize,
    pub d: usize,
    pub d_v: usize,
    /// The keys [lo, hi) that query i of sequence b sees, at b · n_q + i.
    pub ranges: &'a [(usize, usize)],
    pub scale: f32,
    pub keep: Option<Keep>,
}

impl Problem<'_> {
    /// The key/value head (batch · kv_heads + g) of query head `bh`.
    fn kv_of(&self, bh: usize) -> usize {
        let (b, h) = (bh / self.heads, bh % self.heads);
        b * self.kv_heads + h / (self.heads / self.kv_heads)
    }

    fn q_rows(&self, bh: usize, i0: usize, rows: usize) -> &[f32] {
        &self.q[(bh * self.n_q + i0) * self.d..][..rows * self.d]
    }

    fn keys(&self, bkv: usize) -> &[f32] {
        &self.k[bkv * self.n_k * self.d..][..self.n_k * self.d]
    }

    fn values(&self, bkv: usize) -> &[f32] {
        &self.v[bkv * self.n_k * self.d_v..][..self.n_k * self.d_v]
    }

    fn range(&self, bh: usize, i: usize) -> (usize, usize) {
        self.ranges[(bh / self.heads) * self.n_q + i]
    }

    /// The dropout word of weight (row i of head bh, key 0).
    fn word(&self, bh: usize, i: usize) -> usize {
        (bh * self.n_q + i) * self.n_k
    }

    /// The keys seen by some row of rows i0 … i0 + rows − 1 of head bh
    /// (empty when none sees a key).
    fn union(&self, bh: usize, i0: usize, rows: usize) -> (usize, usize) {
        (i0..i0 + rows)
            .map(|i| self.range(bh, i))
            .filter(|(lo, hi)| lo < hi)
            .fold((usize::MAX, 0), |(lo, hi), (a, z)| (lo.min(a), hi.max(z)))
    }
}

/// C += A · B for A (m × kk, rows `lda` apart), B (kk × n, rows `ldb`
/// apart) and C (m × n, rows `ldc` apart). Every entry is a chain of fused
/// multiply-adds from 0 over t in order, then added to C, whichever tile
/// it falls in: a score recomputed in the backward pass has the bits of
/// the forward pass's.
#[inline(always)]
fn gemm<S: Simd>(
    simd: S,
    (m, n, kk): (usize, usize, usize),
    (a, lda): (&[f32], usize),
    (b, ldb): (&[f32], usize),
    (c, ldc): (&mut [f32], usize),
) {
    let lanes = size_of::<S::f32s>() / size_of::<f32>();
    let mut i = 0;
    while i < m {
        let rows = (m - i).min(4);
        let (a, c) = (&a[i * lda..], &mut c[i * ldc..]);
        let shape = Tile { kk, lda, ldb, ldc };
        let mut j = 0;
        while j + 2 * lanes <= n {
            match rows {
                4 => tile::<S, 4, 2>(simd, shape, a, b, c, j),
                3 => tile::<S, 3, 2>(simd, shape, a, b, c, j),
                2 => tile::<S, 2, 2>(simd, shape, a, b, c, j),
                _ => tile::<S, 1, 2>(simd, shape, a, b, c, j),
            }
            j += 2 * lanes;
        }
        while j + lanes <= n {
            match rows {
                4 => tile::<S, 4, 1>(simd, shape, a, b, c, j),
                3 => tile::<S, 3, 1>(simd, shape, a, b, c, j),
                2 => tile::<S, 2, 1>(simd, shape, a, b, c, j),
                _ => tile::<S, 1, 1>(simd, shape, a, b, c, j),
            }
            j += lanes;
        }
        for r in 0..rows {
            for jj in j..n {
                let dot = (0..kk).fold(0.0f32, |acc, t| {
                    a[r * lda + t].mul_add(b[t * ldb + jj], acc)
                });
                c[r * ldc + jj] += dot;
            }
        }
        i += rows;
    }
}

/// The sizes and row strides of a [`gemm`].
#[derive(Clone, Copy)]
struct Tile {
    kk: usize,
    lda: usize,
    ldb: usize,
    ldc: usize,
}

/// Rows 0 … MR − 1 of C, columns j … j + NV vectors, in registers.
#[inline(always)]
fn tile<S: Simd, const MR: usize, const NV: usize>(
    simd: S,
    Tile { kk, lda, ldb, ldc }: Tile,
    a: &[f32],
    b: &[f32],
    c: &mut [f32],
    j: usize,
) {
    let width = NV * size_of::<S::f32s>() / size_of::<f32>();
    let a: [&[f32]; MR] = std::array::from_fn(|r| &a[r * lda..][..kk]);
    let mut acc = [[simd.splat_f32s(0.0); NV]; MR];
    for t in 0..kk {
        let (bv, _) = S::as_simd_f32s(&b[t * ldb + j..][..width]);
        for (acc, a) in acc.iter_mut().zip(a) {
            let av = simd.splat_f32s(a[t]);
            for (acc, &bv) in acc.iter_mut().zip(bv) {
                *acc = simd.mul_add_f32s(av, bv, *acc);
            }
        }
    }
    for (r, acc) in acc.into_iter().enumerate() {
        let (cv, _) = S::as_mut_simd_f32s(&mut c[r * ldc + j..][..width]);
        for (cv, acc) in cv.iter_mut().zip(acc) {
            *cv = simd.add_f32s(*cv, acc);
        }
    }
}

/// x ← e^(x − shift), returning Σ e^(x − shift).
#[inline(always)]
fn exp_in_place<S: Simd>(simd: S, x: &mut [f32], shift: f32) -> f32 {
    let (head, tail) = S::as_mut_simd_f32s(x);
    let s = simd.splat_f32s(shift);
    let mut sum = simd.splat_f32s(0.0);
    for y in head {
        *y = exp(simd, simd.sub_f32s(*y, s));
        sum = simd.add_f32s(sum, *y);
    }
    let mut total = simd.reduce_sum_f32s(sum);
    for y in tail {
        *y = exp_one(simd, *y - shift);
        total += *y;
    }
    total
}

/// `s` (rows × w) ← scale · Q Kᵀ for query rows `q` (rows × d) and w keys
/// whose transposes are `kt` (d × w, rows `ldk` apart).
#[inline(always)]
fn scores<S: Simd>(
    simd: S,
    p: &Problem,
    s: &mut [f32],
    q: &[f32],
    (kt, ldk): (&[f32], usize),
) {
    let rows = q.len() / p.d;
    let w = s.len() / rows;
    s.fill(0.0);
    gemm(simd, (rows, w, p.d), (q, p.d), (kt, ldk), (s, w));
    s.iter_mut().for_each(|x| *x *= p.scale);
}

/// The keys of key/value head `bkv` in panels of [`BC`]: the panel of keys
/// j0 … j0 + w − 1 (j0 a multiple of BC) is their transpose (d × w) at
/// offset j0 · d, so that each block of queries reads Kᵀ blocks that fit
/// the first-level cache without transposing them again. Only the panels
/// that hold keys in [lo, hi) are filled: the others are never read.
fn key_panels(p: &Problem, bkv: usize, (lo, hi): (usize, usize)) -> Vec<f32> {
    let (keys, d) = (p.keys(bkv), p.d);
    let mut kt = vec![0.0f32; d * p.n_k];
    let panels = (0..p.n_k).step_by(BC).zip(kt.chunks_mut(d * BC));
    for (j0, panel) in panels.filter(|&(j0, _)| j0 + BC > lo && j0 < hi) {
        let w = (p.n_k - j0).min(BC);
        transpose(&keys[j0 * d..(j0 + w) * d], w, d, panel);
    }
    kt
}

/// `dst` (cols × rows) ← the transpose of `src` (rows × cols).
fn transpose(src: &[f32], rows: usize, cols: usize, dst: &mut [f32]) {
    for (r, row) in src.chunks_exact(cols).enumerate().take(rows) {
        for (c, &x) in row.iter().enumerate() {
            dst[c * rows + r] = x;
        }
    }
}

/// The forward pass: the output (batch, heads, n_q, d_v) and each row's
/// log-sum-exp (batch, heads, n_q). Every size must be positive.
pub(super) fn forward(p: &Problem) -> (Vec<f32>, Vec<f32>) {
    let rows = p.q.len() / p.d;
    let (mut out, mut lse) = (vec![0.0f32; rows * p.d_v], vec![0.0f32; rows]);
    // the query heads of key/value head bkv are rows bkv · group … of out
    let group = p.heads / p.kv_heads;
    out.par_chunks_mut(group * p.n_q * p.d_v)
        .zip(lse.par_chunks_mut(group * p.n_q))
        .enumerate()
        .for_each(|(bkv, (out, lse))| {
            let seen = p.union(bkv * group, 0, p.n_q);
            let kt = &key_panels(p, bkv, seen);
            forward_group(p, bkv * group, kt, out, lse);
        });
    (out, lse)
}

/// The query heads first … first + group − 1 of one key/value head, whose
/// keys are the panels `kt`.
fn forward_group(
    p: &Problem,
    first: usize,
    kt: &[f32],
    out: &mut [f32],
    lse: &mut [f32],
) {
    out.par_chunks_mut(p.n_q * p.d_v)
        .zip(lse.par_chunks_mut(p.n_q))
        .enumerate()
        .for_each(|(h, (out, lse))| {
            let bh = first + h;
            out.par_chunks_mut(BR * p.d_v)
                .zip(lse.par_chunks_mut(BR))
                .enumerate()
                .for_each(|(block, (out, lse))| {
                    let i0 = block * BR;
                    Arch::new().dispatch(ForwardBlock {
                        p,
                        bh,
                        i0,
                        kt,
                        out,
                        lse,
                    });
                });
        });
}

/// Rows i0 … of head bh: their output and log-sum-exp.
struct ForwardBlock<'a> {
    p: &'a Problem<'a>,
    bh: usize,
    i0: usize,
    /// Head bh's keys as [`key_panels`].
    kt: &'a [f32],
    out: &'a mut [f32],
    lse: &'a mut [f32],
}

impl WithSimd for ForwardBlock<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Self {
            p,
            bh,
            i0,
            kt,
            out,
            lse,
        } = self;
        let (rows, d_v) = (lse.len(), p.d_v);
        let q = p.q_rows(bh, i0, rows);
        let values = p.values(p.kv_of(bh));
        let mut m = vec![f32::NEG_INFINITY; rows];
        let mut l = vec![0.0f32; rows];
        let mut s = vec![0.0; rows * BC];
        let mut keep = vec![0.0; BC];
        let (lo, hi) = p.union(bh, i0, rows);
        for j0 in (lo / BC * BC..hi).step_by(BC) {
            // the panel of keys j0 … j0 + panel − 1; the rows see keys < hi
            let panel = (p.n_k - j0).min(BC);
            let w = (hi - j0).min(BC);
            let s = &mut s[..rows * w];
            scores(simd, p, s, q, (&kt[j0 * p.d..], panel));
            for (r, s) in s.chunks_exact_mut(w).enumerate() {
                let (lo, hi) = p.range(bh, i0 + r);
                let (a, z) = (lo.clamp(j0, j0 + w), hi.clamp(j0, j0 + w));
                if a >= z {
                    s.fill(0.0);
                    continue;
                }
                let seen = &mut s[a - j0..z - j0];
                let m_new = m[r].max(row_max(simd, seen));
                let alpha = exp_one(simd, m[r] - m_new);
                l[r] = l[r] * alpha + exp_in_place(simd, seen, m_new);
                m[r] = m_new;
                if alpha != 1.0 {
                    out[r * d_v..][..d_v].iter_mut().for_each(|x| *x *= alpha);
                }
                if let Some(k) = p.keep {
                    let keep = &mut keep[..z - a];
                    k.fill(p.word(bh, i0 + r) + a, keep);
                    seen.iter_mut().zip(keep.iter()).for_each(|(x, k)| *x *= k);
                }
                s[..a - j0].fill(0.0);
                s[z - j0..].fill(0.0);
            }
            let v = &values[j0 * d_v..(j0 + w) * d_v];
            gemm(simd, (rows, d_v, w), (s, w), (v, d_v), (out, d_v));
        }
        for r in 0..rows {
            let acc = &mut out[r * d_v..][..d_v];
            let (lo, hi) = p.range(bh, i0 + r);
            if lo < hi {
                acc.iter_mut().for_each(|x| *x /= l[r]);
                lse[r] = m[r] + l[r].ln();
                continue;
            }
            // No key seen: d2l's uniform row over all n_k keys.
            let mut weights = vec![1.0 / p.n_k as f32; p.n_k];
            if let Some(k) = p.keep {
                let mut keep = vec![0.0; p.n_k];
                k.fill(p.word(bh, i0 + r), &mut keep);
                weights.iter_mut().zip(&keep).for_each(|(x, k)| *x *= k);
            }
            let n = p.n_k;
            gemm(simd, (1, d_v, n), (&weights, n), (values, d_v), (acc, d_v));
            lse[r] = MASK_VALUE + (p.n_k as f32).ln();
        }
    }
}

/// What the backward pass reads besides the problem: each row's
/// log-sum-exp, the output's gradient dO (batch, heads, n_q, d_v) and
/// D = rowsum(dO ⊙ O).
pub(super) struct Upstream<'a> {
    pub lse: &'a [f32],
    pub d_o: &'a [f32],
    pub delta: &'a [f32],
}

/// The backward pass: dQ, dK and dV, shaped like Q, K and V, from
/// FlashAttention-2's recomputation: one task per key/value head (with
/// the query heads that share it), key blocks outside, query blocks
/// inside, so that each weight is recomputed once.
pub(super) fn backward(p: &Problem, up: &Upstream) -> [Vec<f32>; 3] {
    let (d, d_v, group) = (p.d, p.d_v, p.heads / p.kv_heads);
    let mut dq = vec![0.0f32; p.q.len()];
    let mut dk = vec![0.0f32; p.k.len()];
    let mut dv = vec![0.0f32; p.v.len()];
    dq.par_chunks_mut(group * p.n_q * d)
        .zip(dk.par_chunks_mut(p.n_k * d))
        .zip(dv.par_chunks_mut(p.n_k * d_v))
        .enumerate()
        .for_each(|(bkv, ((dq, dk), dv))| {
            Arch::new().dispatch(HeadBackward {
                p,
                up,
                bkv,
                dq,
                dk,
                dv,
            });
        });
    [dq, dk, dv]
}

/// The buffers of one (key block, query block) pair.
struct Scratch {
    kt: Vec<f32>,
    vt: Vec<f32>,
    /// The weights, then the dropped weights Z (rows × w).
    z: Vec<f32>,
    /// dZ = dO Vᵀ, then the score gradients dS · scale (rows × w).
    ds: Vec<f32>,
    /// Zᵀ and dSᵀ (w × rows).
    zt: Vec<f32>,
    dst: Vec<f32>,
    keep: Vec<f32>,
}

/// Turns row r's scores and dZ (`z`, `ds`: length w, keys j0 …) into its
/// dropped weights Z and dS · scale, 0 on the keys it does not see; a
/// uniform row gets weights 1/n_k and dS = 0.
#[inline(always)]
fn row_grads<S: Simd>(
    simd: S,
    (p, up): (&Problem, &Upstream),
    (bh, i, j0): (usize, usize, usize),
    z: &mut [f32],
    ds: &mut [f32],
    keep: &mut [f32],
) {
    let (lo, hi) = p.range(bh, i);
    let w = z.len();
    let row = bh * p.n_q + i;
    if lo >= hi {
        z.fill(1.0 / p.n_k as f32);
        ds.fill(0.0);
        if let Some(k) = p.keep {
            k.fill(p.word(bh, i) + j0, &mut keep[..w]);
            z.iter_mut().zip(keep.iter()).for_each(|(x, k)| *x *= k);
        }
        return;
    }
    let (a, e) = (lo.clamp(j0, j0 + w) - j0, hi.clamp(j0, j0 + w) - j0);
    for t in [&mut *z, &mut *ds] {
        t[..a].fill(0.0);
        t[e.max(a)..].fill(0.0);
    }
    if a >= e {
        return;
    }
    let (weights, dp) = (&mut z[a..e], &mut ds[a..e]);
    exp_in_place(simd, weights, up.lse[row]);
    let keep = &mut keep[..e - a];
    match p.keep {
        Some(k) => k.fill(p.word(bh, i) + j0 + a, keep),
        None => keep.fill(1.0),
    }
    let delta = up.delta[row];
    for ((ds, z), k) in dp.iter_mut().zip(weights.iter_mut()).zip(&*keep) {
        // dS = P ⊙ (dP − D) with dP = dZ ⊙ keep; then Z = P ⊙ keep.
        *ds = *z * (*ds * k - delta) * p.scale;
        *z *= k;
    }
}

/// dQ of the query heads sharing key/value head `bkv`, and that head's dK
/// and dV.
struct HeadBackward<'a> {
    p: &'a Problem<'a>,
    up: &'a Upstream<'a>,
    bkv: usize,
    dq: &'a mut [f32],
    dk: &'a mut [f32],
    dv: &'a mut [f32],
}

impl WithSimd for HeadBackward<'_> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: Simd>(self, simd: S) {
        let Self {
            p,
            up,
            bkv,
            dq,
            dk,
            dv,
        } = self;
        let (d, d_v, group) = (p.d, p.d_v, p.heads / p.kv_heads);
        let (keys, values) = (p.keys(bkv), p.values(bkv));
        let first = (bkv / p.kv_heads) * p.heads + (bkv % p.kv_heads) * group;
        let buffer = |n: usize| vec![0.0f32; n];
        let mut t = Scratch {
            kt: buffer(d * BC),
            vt: buffer(d_v * BC),
            z: buffer(BR * BC),
            ds: buffer(BR * BC),
            zt: buffer(BR * BC),
            dst: buffer(BR * BC),
            keep: buffer(BC),
        };
        for j0 in (0..p.n_k).step_by(BC) {
            let w = (p.n_k - j0).min(BC);
            let (kt, vt) = (&mut t.kt[..d * w], &mut t.vt[..d_v * w]);
            let (k, v) = (
                &keys[j0 * d..(j0 + w) * d],
                &values[j0 * d_v..(j0 + w) * d_v],
            );
            transpose(k, w, d, kt);
            transpose(v, w, d_v, vt);
            for (h, bh) in (first..first + group).enumerate() {
                for i0 in (0..p.n_q).step_by(BR) {
                    let rows = (p.n_q - i0).min(BR);
                    let seen = |i: usize| {
                        let (lo, hi) = p.range(bh, i);
                        lo >= hi || (lo < j0 + w && hi > j0)
                    };
                    if !(i0..i0 + rows).any(seen) {
                        continue;
                    }
                    let q = p.q_rows(bh, i0, rows);
                    let d_o = &up.d_o[(bh * p.n_q + i0) * d_v..][..rows * d_v];
                    let (z, ds) = (&mut t.z[..rows * w], &mut t.ds[..rows * w]);
                    scores(simd, p, z, q, (kt, w));
                    ds.fill(0.0);
                    gemm(simd, (rows, w, d_v), (d_o, d_v), (vt, w), (ds, w));
                    let rows_of =
                        z.chunks_exact_mut(w).zip(ds.chunks_exact_mut(w));
                    for (r, (z, ds)) in rows_of.enumerate() {
                        let at = (bh, i0 + r, j0);
                        row_grads(simd, (p, up), at, z, ds, &mut t.keep);
                    }
                    let dq = &mut dq[(h * p.n_q + i0) * d..][..rows * d];
                    gemm(simd, (rows, d, w), (ds, w), (k, d), (dq, d));
                    let (zt, dst) =
                        (&mut t.zt[..w * rows], &mut t.dst[..w * rows]);
                    transpose(z, rows, w, zt);
                    transpose(ds, rows, w, dst);
                    let (dv, dk) = (
                        &mut dv[j0 * d_v..(j0 + w) * d_v],
                        &mut dk[j0 * d..(j0 + w) * d],
                    );
                    gemm(
                        simd,
                        (w, d_v, rows),
                        (zt, rows),
                        (d_o, d_v),
                        (dv, d_v),
                    );
                    gemm(simd, (w, d, rows), (dst, rows), (q, d), (dk, d));
                }
            }
        }
    }
}
