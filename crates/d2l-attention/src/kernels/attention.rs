//! Scaled dot-product attention as one operation: the masks it takes, the
//! public function, and its forward and backward passes in burn's own
//! operations (the body every backend but flex uses; flex runs
//! FlashAttention-2, `flash.rs`).

use burn::backend::tensor::{BoolTensor, FloatTensor, IntTensor};
use burn::backend::{
    Backend, Dispatch, ExtensionType, TensorMetadata, get_device_settings,
};
use burn::nn::Dropout;
use burn::tensor::{DType, Device, Int, Tensor, TensorData};

use super::AttentionOps;
use super::mask::dropout_mask;
use crate::masks::{ValidLens, mask_value};

/// Which keys each query sees in [`attention`]. Query i of n_q against n_k
/// keys sits at position n_k − n_q + i (aligned bottom-right, as a decoder
/// reading a cache of earlier keys is); a masked key's score counts as
/// d2l's [`MASK_VALUE`](crate::masks::MASK_VALUE), so a query
/// that sees no key gets d2l's uniform row (1/n_k each).
#[derive(Clone, Copy, Debug)]
pub enum AttentionMask<'a> {
    /// Every key.
    None,
    /// d2l's valid lengths, one per sequence or per query: keys 0 … len − 1.
    ValidLens(&'a ValidLens),
    /// Keys up to the query's own position (0 … n_k − n_q + i).
    Causal,
    /// Keys from `left` before the query's position to `right` after it.
    Window {
        /// Keys seen before the query's position.
        left: usize,
        /// Keys seen after it (0 for a causal window).
        right: usize,
    },
}

/// [`AttentionMask`] as the backend operations take it: valid lengths as a
/// tensor, (batch_size, 1) or (batch_size, num_queries).
#[derive(ExtensionType, Clone, Debug)]
pub enum KeyMask<B: Backend> {
    /// Every key.
    All,
    /// Valid lengths.
    ValidLens(IntTensor<B>),
    /// Causal, aligned bottom-right.
    Causal,
    /// A window around the query's position, aligned bottom-right.
    Window {
        /// Keys seen before the query's position.
        left: usize,
        /// Keys seen after it.
        right: usize,
    },
}

impl<B: Backend> KeyMask<B> {
    /// The same mask on another backend whose integer tensors are `B`'s
    /// (autodiff and its inner backend).
    pub(super) fn map<C: Backend>(
        self,
        f: impl FnOnce(IntTensor<B>) -> IntTensor<C>,
    ) -> KeyMask<C> {
        match self {
            Self::All => KeyMask::All,
            Self::ValidLens(lens) => KeyMask::ValidLens(f(lens)),
            Self::Causal => KeyMask::Causal,
            Self::Window { left, right } => KeyMask::Window { left, right },
        }
    }
}

/// Dropout on the attention weights inside the operation: weight (row,
/// key) of the (batch, heads, n_q, n_k) weights is kept by word
/// row · n_k + key of the ChaCha8 stream of `seed`, as `kernels::dropout`
/// keeps the unfused weights (on every backend).
#[derive(Clone, Copy, Debug)]
pub struct WeightDropout {
    /// The probability of dropping a weight, in [0, 1).
    pub prob: f64,
    /// The stream's seed.
    pub seed: u64,
}

/// The keys [lo, hi) query i of sequence b sees, at b · n_q + i; `lens`
/// are the valid lengths as given ((batch, 1) or (batch, n_q), row-major).
pub(super) fn key_ranges(
    mask: &KeyMask<impl Backend>,
    lens: Option<&[i64]>,
    batch: usize,
    n_q: usize,
    n_k: usize,
) -> Vec<(usize, usize)> {
    let clamp = |x: i64| x.clamp(0, n_k as i64) as usize;
    let far = |x: usize| x.min(n_k + n_q) as i64;
    (0..batch * n_q)
        .map(|row| {
            let pos = (n_k as i64) - (n_q as i64) + (row % n_q) as i64;
            match mask {
                KeyMask::All => (0, n_k),
                KeyMask::ValidLens(_) => {
                    let lens = lens.expect("valid lengths read");
                    let per_query = lens.len() != batch;
                    let i = if per_query { row } else { row / n_q };
                    (0, clamp(lens[i]))
                }
                KeyMask::Causal => (0, clamp(pos + 1)),
                KeyMask::Window { left, right } => {
                    (clamp(pos - far(*left)), clamp(pos + far(*right) + 1))
                }
            }
        })
        .collect()
}

/// True at the keys a query does not see, (batch or 1, 1, n_q, n_k), in
/// `B`'s operations; `None` for [`KeyMask::All`].
fn hidden<B: Backend>(
    mask: KeyMask<B>,
    n_q: usize,
    n_k: usize,
    device: &B::Device,
) -> Option<BoolTensor<B>> {
    let dtype = burn::tensor::IntDType::I64;
    let bool_dtype = get_device_settings::<B>(device).bool_dtype;
    let keys = B::int_reshape(
        B::int_arange(0..n_k as i64, device, dtype),
        [1, 1, 1, n_k].into(),
    );
    let positions = |shift: i64| {
        let at = B::int_arange(0..n_q as i64, device, dtype);
        let at =
            B::int_add_scalar(at, (n_k as i64 - n_q as i64 + shift).into());
        B::int_expand(
            B::int_reshape(at, [1, 1, n_q, 1].into()),
            [1, 1, n_q, n_k].into(),
        )
    };
    let keys_q = B::int_expand(keys, [1, 1, n_q, n_k].into());
    let far = |x: usize| x.min(n_k + n_q) as i64;
    match mask {
        KeyMask::All => None,
        KeyMask::ValidLens(lens) => {
            let b = lens.shape()[0];
            let hidden = super::hidden::<B>(lens, &[b, n_q, n_k].into());
            Some(B::bool_reshape(hidden, [b, 1, n_q, n_k].into()))
        }
        KeyMask::Causal => {
            Some(B::int_greater(keys_q, positions(0), bool_dtype))
        }
        KeyMask::Window { left, right } => {
            let before =
                B::int_lower(keys_q.clone(), positions(-far(left)), bool_dtype);
            let after =
                B::int_greater(keys_q, positions(far(right)), bool_dtype);
            Some(B::bool_or(before, after))
        }
    }
}

/// `x` (batch, kv_heads, n, e) repeated to (batch, heads, n, e): query
/// head h reads key/value head h / (heads / kv_heads).
fn repeat_heads<B: Backend>(x: FloatTensor<B>, heads: usize) -> FloatTensor<B> {
    let s = x.shape();
    let group = heads / s[1];
    let x = B::float_reshape(x, [s[0], s[1], 1, s[2], s[3]].into());
    let x = B::float_expand(x, [s[0], s[1], group, s[2], s[3]].into());
    B::float_reshape(x, [s[0], heads, s[2], s[3]].into())
}

/// The sum over each group of query heads: (batch, heads, n, e) to
/// (batch, kv_heads, n, e).
fn sum_groups<B: Backend>(
    x: FloatTensor<B>,
    kv_heads: usize,
) -> FloatTensor<B> {
    let s = x.shape();
    let group = s[1] / kv_heads;
    let x = B::float_reshape(x, [s[0], kv_heads, group, s[2], s[3]].into());
    B::float_reshape(
        B::float_sum_dim(x, 2),
        [s[0], kv_heads, s[2], s[3]].into(),
    )
}

/// The recomputed weights P (batch, heads, n_q, n_k) from the scores and
/// the hidden keys' mask.
fn scores<B: Backend>(
    q: FloatTensor<B>,
    k: FloatTensor<B>,
    mask: Option<BoolTensor<B>>,
) -> FloatTensor<B> {
    let d = q.shape()[3];
    let fill = mask_value(q.dtype());
    let k = repeat_heads::<B>(k, q.shape()[1]);
    let s = B::float_matmul(q, B::float_swap_dims(k, 2, 3));
    let s = B::float_mul_scalar(s, (1.0 / (d as f64).sqrt()).into());
    match mask {
        Some(m) => {
            let m = B::bool_expand(m, s.shape());
            B::float_mask_fill(s, m, fill.into())
        }
        None => s,
    }
}

/// The factors dropout multiplies the weights by, shaped like `like`.
fn keep_tensor<B: Backend>(
    like: &FloatTensor<B>,
    dropout: WeightDropout,
) -> FloatTensor<B> {
    let shape = like.shape();
    let keep = dropout_mask(dropout.seed, shape.num_elements(), dropout.prob);
    let keep = B::float_from_data(TensorData::new(keep, shape), &like.device());
    B::float_cast(keep, like.dtype().into())
}

/// The forward pass in burn's operations: the output (batch, heads, n_q,
/// d_v) and each row's log-sum-exp (batch, heads, n_q).
pub(super) fn forward_ops<B: Backend>(
    q: FloatTensor<B>,
    k: FloatTensor<B>,
    v: FloatTensor<B>,
    mask: KeyMask<B>,
    dropout: Option<WeightDropout>,
) -> (FloatTensor<B>, FloatTensor<B>) {
    let [batch, heads, n_q, _] = q.shape().dims();
    let (n_k, device) = (k.shape()[2], q.device());
    let s = scores::<B>(q, k, hidden::<B>(mask, n_q, n_k, &device));
    let (p, lse) = softmax_lse::<B>(s);
    let z = match dropout {
        Some(dropout) => B::float_mul(p.clone(), keep_tensor::<B>(&p, dropout)),
        None => p,
    };
    let out = B::float_matmul(z, repeat_heads::<B>(v, heads));
    (out, B::float_reshape(lse, [batch, heads, n_q].into()))
}

/// Softmax along the last axis of `s` (batch, heads, n_q, n_k), and each
/// row's log-sum-exp (batch, heads, n_q, 1).
fn softmax_lse<B: Backend>(
    s: FloatTensor<B>,
) -> (FloatTensor<B>, FloatTensor<B>) {
    let max = B::float_max_dim(s.clone(), 3);
    let shifted =
        B::float_sub(s.clone(), B::float_expand(max.clone(), s.shape()));
    let e = B::float_exp(shifted);
    let sum = B::float_sum_dim(e.clone(), 3);
    let p = B::float_div(e, B::float_expand(sum.clone(), s.shape()));
    (p, B::float_add(max, B::float_log(sum)))
}

/// The backward pass in burn's operations: dQ, dK and dV, with no
/// gradient to the scores of hidden keys (d2l's constant fill). The
/// weights are recomputed by a softmax, not from the saved log-sum-exp,
/// of which f32 keeps too few digits at −10⁶ (a row that sees no key).
#[allow(clippy::too_many_arguments)]
pub(super) fn backward_ops<B: Backend>(
    q: FloatTensor<B>,
    k: FloatTensor<B>,
    v: FloatTensor<B>,
    out: FloatTensor<B>,
    _lse: FloatTensor<B>,
    grad: FloatTensor<B>,
    mask: KeyMask<B>,
    dropout: Option<WeightDropout>,
) -> (FloatTensor<B>, FloatTensor<B>, FloatTensor<B>) {
    let [_, heads, n_q, d] = q.shape().dims();
    let (kv_heads, n_k, device) = (k.shape()[1], k.shape()[2], q.device());
    let scale = 1.0 / (d as f64).sqrt();
    let hidden = hidden::<B>(mask, n_q, n_k, &device);
    let s = scores::<B>(q.clone(), k.clone(), hidden.clone());
    let (p, _) = softmax_lse::<B>(s.clone());
    let v = repeat_heads::<B>(v, heads);
    let dz = B::float_matmul(grad.clone(), B::float_swap_dims(v, 2, 3));
    let (z, dp) = match dropout {
        Some(dropout) => {
            let keep = keep_tensor::<B>(&p, dropout);
            (
                B::float_mul(p.clone(), keep.clone()),
                B::float_mul(dz, keep),
            )
        }
        None => (p.clone(), dz),
    };
    let delta = B::float_sum_dim(B::float_mul(grad.clone(), out), 3);
    let ds =
        B::float_mul(p, B::float_sub(dp, B::float_expand(delta, s.shape())));
    let ds = match hidden {
        Some(m) => {
            B::float_mask_fill(ds, B::bool_expand(m, s.shape()), 0.0.into())
        }
        None => ds,
    };
    let ds = B::float_mul_scalar(ds, scale.into());
    let dq = B::float_matmul(ds.clone(), repeat_heads::<B>(k, heads));
    let dk = B::float_matmul(B::float_swap_dims(ds, 2, 3), q);
    let dv = B::float_matmul(B::float_swap_dims(z, 2, 3), grad);
    (
        dq,
        sum_groups::<B>(dk, kv_heads),
        sum_groups::<B>(dv, kv_heads),
    )
}

/// The fewest keys for which a layer on a plain device takes
/// [`attention`]: its forward pass beat d2l's form on flex from 16 keys at
/// d = 8 and from 48 at d = 64 (`cargo bench --bench crossover`, 2-core
/// AMD EPYC, `benches/reports/2026-12-05-fused-attention.md`).
pub const FUSED_MIN_KEYS: usize = 64;

/// The fewest keys for which a layer on an autodiff device takes
/// [`attention`]: forward and backward beat d2l's form from 16 keys at
/// d = 8 but only from 128 at d = 64 (96 keys: 1.3× slower; same bench).
pub const FUSED_MIN_TRAINING_KEYS: usize = 128;

/// Whether a layer takes [`attention`] for `queries` against `num_keys`
/// keys: f32 on flex (where it runs FlashAttention-2; elsewhere it runs
/// the same burn operations as d2l's form) and at least
/// [`FUSED_MIN_KEYS`] keys, [`FUSED_MIN_TRAINING_KEYS`] on an autodiff
/// device.
///
/// # Examples
/// ```
/// use burn::tensor::{DType, Device, Tensor};
/// use d2l_attention::kernels::fused_attention_pays;
///
/// let x = Tensor::<3>::zeros([8, 100, 16], &Device::flex());
/// assert!(fused_attention_pays(&x, 100));
/// assert!(!fused_attention_pays(&x, 10));
/// assert!(!fused_attention_pays(&x.clone().cast(DType::F64), 100));
/// let training = Tensor::<3>::zeros([8, 100, 16], &Device::flex().autodiff());
/// assert!(!fused_attention_pays(&training, 100));
/// assert!(fused_attention_pays(&training, 128));
/// ```
pub fn fused_attention_pays<const D: usize>(
    queries: &Tensor<D>,
    num_keys: usize,
) -> bool {
    let device = queries.device();
    let (inner, min_keys) = match device.is_autodiff() {
        true => (device.inner(), FUSED_MIN_TRAINING_KEYS),
        false => (device, FUSED_MIN_KEYS),
    };
    inner == Device::flex()
        && queries.dtype() == DType::F32
        && num_keys >= min_keys
}

/// Scaled dot-product attention as one operation: softmax(Q Kᵀ / √d) V
/// with masked keys and dropout on the weights, without the
/// (batch, heads, n_q, n_k) weights in memory on flex (FlashAttention-2,
/// Dao, ICLR 2024) and with its own backward pass under autodiff.
///
/// - `queries`: (batch_size, num_heads, num_queries, d);
/// - `keys`: (batch_size, kv_heads, num_keys, d), `kv_heads` dividing
///   num_heads: query head h reads key/value head h / (num_heads /
///   kv_heads) (grouped-query attention; equal counts are d2l's
///   multi-head attention, 1 is multi-query attention);
/// - `values`: (batch_size, kv_heads, num_keys, value_size);
/// - `mask`: which keys each query sees ([`AttentionMask`]);
/// - `dropout`: as [`crate::kernels::dropout`] on the weights (only in
///   training, on an autodiff device), the same weights dropped.
///
/// Returns (batch_size, num_heads, num_queries, value_size): what d2l's
/// `masked_softmax`, dropout and `bmm` compute, head by head, within
/// 1e-5 + 1e-5·|value| in f32 for scores of ordinary size
/// (`tests/kernels/fused_attention.rs`), gradients included. Where they
/// differ:
/// - masked keys get weight 0 here; d2l's form gives them weight where
///   the scores a row sees are not well above its fill (−10⁶): within
///   about 100 of it, below it, or −∞ (NaN here);
/// - on flex the backward pass recomputes the weights from each row's
///   log-sum-exp in f32, so the gradients' relative error grows with the
///   scores' size, about 2e-5 at scores near 2·10³ and 4e-2 near 2·10⁶
///   (FlashAttention's own limit; the forward pass is not affected);
/// - a NaN or ∞ among masked values stays out of the output here, unless
///   another query of the same block of 64 sees that key.
///
/// With dropout, the seed is read back from the device, and off flex the
/// mask is made on the host: one integer, and one f32 per weight, cross to
/// the device per call.
///
/// # Panics
/// When the shapes or dtypes disagree, a size the products need is 0
/// (num_keys, d) (naming the argument), or the valid lengths do not fit
/// (as [`ValidLens::mask`]).
///
/// # Examples
/// ```
/// use burn::nn::DropoutConfig;
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::kernels::{AttentionMask, attention};
///
/// let device = Device::flex();
/// let queries = Tensor::<4>::zeros([1, 2, 3, 4], &device);
/// let keys = Tensor::<4>::zeros([1, 1, 5, 4], &device);
/// let values = Tensor::<1, burn::tensor::Int>::arange(0..5, &device)
///     .float()
///     .reshape([1, 1, 5, 1]);
/// let dropout = DropoutConfig::new(0.0).init();
/// // Equal scores: each query averages the keys it sees; query i of 3
/// // against 5 keys sits at position 2 + i.
/// let out = attention(queries, keys, values, AttentionMask::Causal, &dropout);
/// assert_eq!(out.dims(), [1, 2, 3, 1]);
/// assert_eq!(out.try_into_vec_as::<f32>().unwrap(), [1.0, 1.5, 2.0, 1.0, 1.5, 2.0]);
/// ```
pub fn attention(
    queries: Tensor<4>,
    keys: Tensor<4>,
    values: Tensor<4>,
    mask: AttentionMask<'_>,
    dropout: &Dropout,
) -> Tensor<4> {
    let (q, k, v) = (queries.dims(), keys.dims(), values.dims());
    assert!(
        k[0] == q[0] && k[3] == q[3] && k[1] > 0 && q[1] % k[1] == 0,
        "`keys` {k:?} do not fit `queries` {q:?}: expected (batch_size, \
         kv_heads, num_keys, d) with the queries' batch size and d, and \
         kv_heads dividing their {} heads",
        q[1]
    );
    assert!(
        v[..3] == k[..3],
        "`values` {v:?} do not fit `keys` {k:?}: expected (batch_size, \
         kv_heads, num_keys, value_size)"
    );
    assert!(
        k[2] > 0 && q[3] > 0,
        "`keys` {k:?} hold no key or no feature: attention needs num_keys \
         (dimension 2) and d (dimension 3) above 0"
    );
    let dtype = queries.dtype();
    for (name, x) in [("keys", &keys), ("values", &values)] {
        assert!(
            x.dtype() == dtype,
            "`{name}` is {:?}, `queries` {dtype:?}: expected one dtype",
            x.dtype()
        );
    }
    let mask = match mask {
        AttentionMask::None => KeyMask::All,
        AttentionMask::ValidLens(lens) => {
            lens.check(q[0], q[2], k[2]);
            KeyMask::ValidLens(lens.tensor().into_dispatch())
        }
        AttentionMask::Causal => KeyMask::Causal,
        AttentionMask::Window { left, right } => {
            KeyMask::Window { left, right }
        }
    };
    let dropout = weight_dropout(dropout, &queries);
    let (out, _) = <Dispatch as AttentionOps>::attention_forward(
        queries.into_dispatch(),
        keys.into_dispatch(),
        values.into_dispatch(),
        mask,
        dropout,
    );
    Tensor::from_dispatch(out)
}

/// The dropout [`attention`] applies: none unless `layer` is in training,
/// `x` on an autodiff device and the probability above 0 (as
/// [`crate::kernels::dropout`]); then a seed drawn where that function
/// draws its own (on flex, from flex's seeded generator).
fn weight_dropout(layer: &Dropout, x: &Tensor<4>) -> Option<WeightDropout> {
    if !layer.training.is_enabled()
        || !x.device().is_autodiff()
        || layer.prob == 0.0
    {
        return None;
    }
    let seed =
        <Dispatch as AttentionOps>::dropout_seed(x.clone().into_dispatch());
    let seed = Tensor::<1, Int>::from_dispatch(seed).into_data();
    let seed = match seed.dtype() {
        DType::U64 => seed.as_slice::<u64>().expect("one u64")[0],
        _ => seed.iter::<i64>().next().expect("one seed") as u64,
    };
    Some(WeightDropout {
        prob: layer.prob,
        seed,
    })
}
