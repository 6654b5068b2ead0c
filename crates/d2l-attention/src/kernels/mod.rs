//! The softmax family and dropout masks as burn backend extensions: the
//! library's fast path under attention, the losses and the trainings.
//!
//! burn-flex 0.22.1 computes `exp` one element at a time through the C
//! library, and under autodiff burn splits softmax and log-softmax into five
//! operations (max, subtract, exp, sum, divide), each with its own backward
//! step; its random tensors (every dropout mask) draw one element at a time
//! on one thread. [`AttentionOps`] replaces the three with burn's extension
//! mechanism (`#[backend_extension]`, burn's `extension` feature), without
//! forking burn:
//!
//! - on flex, a vectorised exp (pulp's SIMD, safe code), rows in parallel,
//!   three passes per row while it stays in cache (max, exp and sum,
//!   scale), written over the input's rows
//!   when its buffer is not shared; dropout masks from a
//!   counter-based generator (ChaCha8), in parallel and the same whatever
//!   the thread count;
//! - under autodiff, softmax, log-softmax, the masked softmax and the
//!   sigmoid are one operation each, with the backward pass written once
//!   (see `autodiff.rs`);
//! - on libtorch and on the capture backend (`tests/no_host_reads.rs`),
//!   burn's own operations (torch's softmax on libtorch).
//!
//! The functions below are what the library calls: [`softmax`],
//! [`log_softmax`] (the loss), [`masked_softmax`] (the attention layers),
//! [`sigmoid`] (the GRU's gates), [`gelu`] (the ViT's MLP),
//! [`layer_norm`] and [`add_layer_norm`] (through [`LayerNorm`], in every
//! Transformer block) and [`dropout`]. The scoring chapter shows
//! d2l's form of the masked softmax,
//! [`crate::attention_scoring::masked_softmax`] (fill, then [`softmax`]);
//! `tests/kernels.rs` checks that [`masked_softmax`] computes the same.

// burn-tch is deprecated in favour of burn's Cube backends; the code the
// extension macro generates for `LibTorch` names it.
#![allow(deprecated)]

mod attention;
mod autodiff;
mod exp;
mod flash;
mod flex;
mod gelu;
mod mask;
mod norm;

use burn::backend::ops::{ActivationOps, ModuleOps};
use burn::backend::tensor::{BoolTensor, FloatTensor, IntTensor};
use burn::backend::{
    Backend, Dispatch, TensorMetadata, backend_extension, get_device_settings,
};
use burn::nn::Dropout;
use burn::tensor::{Distribution, IntDType, Shape, Tensor};

use crate::masks::{ValidLens, mask_value};

pub use attention::{
    AttentionMask, FUSED_MIN_KEYS, FUSED_MIN_TRAINING_KEYS, KeyMask,
    WeightDropout, attention, fused_attention_pays,
};
pub use exp::{OVERFLOW, UNDERFLOW};
pub use norm::LayerNorm;

/// The operations, one implementation per backend (burn's own operations
/// by default). Call them through [`softmax`], [`log_softmax`],
/// [`masked_softmax`], [`exp`], [`sigmoid`], [`gelu`], [`layer_norm`],
/// [`add_layer_norm`], [`dropout`] and [`attention`].
#[backend_extension(
    Flex,
    LibTorch: cfg(feature = "tch"),
    Capture: cfg(feature = "native"),
    Autodiff
)]
pub trait AttentionOps: Backend {
    /// Softmax along the last axis.
    fn softmax_last(x: FloatTensor<Self>) -> FloatTensor<Self> {
        let dim = x.shape().num_dims() - 1;
        Self::softmax(x, dim)
    }

    /// Log-softmax along the last axis.
    fn log_softmax_last(x: FloatTensor<Self>) -> FloatTensor<Self> {
        let dim = x.shape().num_dims() - 1;
        Self::log_softmax(x, dim)
    }

    /// Softmax along the last axis of `scores` (batch_size, num_queries,
    /// num_keys) with the keys at or past each query's valid length
    /// counting as [`MASK_VALUE`](crate::masks::MASK_VALUE)
    /// (f16: −65504, [`mask_value`](crate::masks::mask_value)):
    /// d2l's `masked_softmax`. `valid_lens` is
    /// (batch_size, 1) or (batch_size, num_queries), each at most num_keys.
    fn masked_softmax_last(
        scores: FloatTensor<Self>,
        valid_lens: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        masked_softmax_ops::<Self>(scores, valid_lens)
    }

    /// The gradient of the scores of [`AttentionOps::masked_softmax_last`]
    /// with weights `y` and upstream gradient `grad`: y ⊙ (g − Σ g ⊙ y) on
    /// the valid keys, 0 on the masked ones (whose scores were replaced).
    fn masked_softmax_backward(
        y: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        valid_lens: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        masked_softmax_backward_ops::<Self>(y, grad, valid_lens)
    }

    /// e^x element by element.
    fn exp(x: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::float_exp(x)
    }

    /// 1 / (1 + e^−x) element by element.
    fn sigmoid(x: FloatTensor<Self>) -> FloatTensor<Self> {
        <Self as ActivationOps<Self>>::sigmoid(x)
    }

    /// GELU, x · Φ(x), element by element (the exact form, burn's `Gelu`).
    fn gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        <Self as ActivationOps<Self>>::gelu(x)
    }

    /// Its backward pass: `grad` · GELU′(x).
    fn gelu_backward(
        x: FloatTensor<Self>,
        grad: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        <Self as ActivationOps<Self>>::gelu_backward(x, grad)
    }

    /// Layer normalisation along the last axis (see [`layer_norm`]):
    /// burn's own (on flex three SIMD passes per row, in cache).
    fn layer_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f64,
    ) -> FloatTensor<Self> {
        <Self as ModuleOps<Self>>::layer_norm(x, gamma, Some(beta), epsilon)
    }

    /// Layer normalisation of the residual sum `x` + `y` (d2l's add &
    /// norm, see [`add_layer_norm`]).
    fn add_layer_norm(
        x: FloatTensor<Self>,
        y: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f64,
    ) -> FloatTensor<Self> {
        let sum = Self::float_add(x, y);
        <Self as AttentionOps>::layer_norm(sum, gamma, beta, epsilon)
    }

    /// The gradients of `x`, `gamma` and `beta` of [`layer_norm`] from
    /// the input `x` and the output's gradient `grad`.
    fn layer_norm_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        epsilon: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        norm::backward_ops::<Self>(x, gamma, grad, epsilon)
    }

    /// Scaled dot-product attention's forward pass (see [`attention`]):
    /// the output (batch, heads, n_q, d_v) and each row's log-sum-exp
    /// (batch, heads, n_q), which the backward pass reads.
    fn attention_forward(
        queries: FloatTensor<Self>,
        keys: FloatTensor<Self>,
        values: FloatTensor<Self>,
        #[extension_type] mask: KeyMask<Self>,
        dropout: Option<WeightDropout>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        attention::forward_ops::<Self>(queries, keys, values, mask, dropout)
    }

    /// Its backward pass: dQ, dK and dV (shaped like the queries, keys
    /// and values) from the forward pass's output and log-sum-exp and the
    /// output's gradient `grad`.
    #[allow(clippy::too_many_arguments)]
    fn attention_backward(
        queries: FloatTensor<Self>,
        keys: FloatTensor<Self>,
        values: FloatTensor<Self>,
        output: FloatTensor<Self>,
        lse: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        #[extension_type] mask: KeyMask<Self>,
        dropout: Option<WeightDropout>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        attention::backward_ops::<Self>(
            queries, keys, values, output, lse, grad, mask, dropout,
        )
    }

    /// A seed for dropout: one integer drawn from the backend's generator
    /// on `x`'s device.
    fn dropout_seed(x: FloatTensor<Self>) -> IntTensor<Self> {
        let device = x.device();
        Self::int_random(
            [1].into(),
            Distribution::Default,
            &device,
            IntDType::I64,
        )
    }

    /// A dropout mask shaped like `x`: 1/(1 − `prob`) with probability
    /// 1 − `prob`, else 0 (a constant under autodiff).
    fn dropout_mask(x: FloatTensor<Self>, prob: f64) -> FloatTensor<Self> {
        let keep = 1.0 - prob;
        let device = x.device();
        let mask = Self::float_random(
            x.shape(),
            Distribution::Bernoulli(keep),
            &device,
            x.dtype().into(),
        );
        Self::float_mul_scalar(mask, (1.0 / keep).into())
    }
}

/// True at the keys at or past each query's valid length: `valid_lens`
/// (batch_size, 1 or num_queries) against positions 0 … num_keys − 1 of
/// `shape` (batch_size, num_queries, num_keys), as [`ValidLens::mask`].
fn hidden<B: Backend>(
    valid_lens: IntTensor<B>,
    shape: &Shape,
) -> BoolTensor<B> {
    let rank = shape.num_dims();
    assert_eq!(rank, 3, "masked softmax: scores of rank {rank}, expected 3");
    let (device, dtype) = (valid_lens.device(), valid_lens.dtype().into());
    let lens = B::int_reshape(
        valid_lens.clone(),
        [shape[0], valid_lens.shape()[1], 1].into(),
    );
    let positions = B::int_arange(0..shape[2] as i64, &device, dtype);
    let positions = B::int_reshape(positions, [1, 1, shape[2]].into());
    let bool_dtype = get_device_settings::<B>(&device).bool_dtype;
    B::int_greater_equal(
        B::int_expand(positions, shape.clone()),
        B::int_expand(lens, shape.clone()),
        bool_dtype,
    )
}

/// [`AttentionOps::masked_softmax_last`] in burn's operations: fill, then
/// softmax.
fn masked_softmax_ops<B: AttentionOps>(
    scores: FloatTensor<B>,
    valid_lens: IntTensor<B>,
) -> FloatTensor<B> {
    let hidden = hidden::<B>(valid_lens, &scores.shape());
    let fill = mask_value(scores.dtype());
    B::softmax_last(B::float_mask_fill(scores, hidden, fill.into()))
}

/// [`AttentionOps::masked_softmax_backward`] in burn's operations.
fn masked_softmax_backward_ops<B: Backend>(
    y: FloatTensor<B>,
    grad: FloatTensor<B>,
    valid_lens: IntTensor<B>,
) -> FloatTensor<B> {
    let hidden = hidden::<B>(valid_lens, &y.shape());
    B::float_mask_fill(softmax_backward::<B>(y, grad), hidden, 0.0.into())
}

/// y ⊙ (g − Σ g ⊙ y) along the last axis: the softmax's backward pass.
fn softmax_backward<B: Backend>(
    y: FloatTensor<B>,
    g: FloatTensor<B>,
) -> FloatTensor<B> {
    let dim = y.shape().num_dims() - 1;
    let gy = B::float_mul(g, y.clone());
    let sum = B::float_sum_dim(gy.clone(), dim);
    B::float_sub(gy, B::float_mul(y, sum))
}

#[cfg(feature = "native")]
impl AttentionOps for burn::backend::Capture {}

#[cfg(feature = "tch")]
impl AttentionOps for burn::backend::LibTorch {}

/// Softmax along the last axis of `x`, any shape: e^(x − max) / Σ e^(x − max)
/// per row, as burn's `activation::softmax(x, D - 1)`, within
/// 1e-6 + 1e-6·|value| of it in value and gradient (`tests/kernels.rs`).
///
/// A row of −∞ only is NaN, as in burn and PyTorch; masked rows filled with
/// d2l's −10⁶ stay finite in f32 (uniform when every key is masked).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::kernels::softmax;
///
/// let x = Tensor::<2>::from_floats([[0.0, 0.0], [0.0, f32::NEG_INFINITY]], &Device::flex());
/// assert_eq!(softmax(x).try_into_vec_as::<f32>().unwrap(), [0.5, 0.5, 1.0, 0.0]);
/// ```
pub fn softmax<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as AttentionOps>::softmax_last(
        x.into_dispatch(),
    ))
}

/// Log-softmax along the last axis of `x`: x − max − ln Σ e^(x − max) per
/// row, as burn's `activation::log_softmax(x, D - 1)`, to the same
/// tolerance as [`softmax`].
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::kernels::log_softmax;
///
/// let x = Tensor::<1>::from_floats([0.0, 0.0], &Device::flex());
/// let y = log_softmax(x).try_into_vec_as::<f32>().unwrap();
/// assert_eq!(y, [-std::f32::consts::LN_2; 2]);
/// ```
pub fn log_softmax<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as AttentionOps>::log_softmax_last(
        x.into_dispatch(),
    ))
}

/// e^x element by element; on flex the vectorised exp: at most 1 ulp from
/// e^x rounded to f32 when that is at least `f32::MIN_POSITIVE`, exactly 0
/// below [`UNDERFLOW`] (≈ −87.34, where the C library still returns
/// subnormals, all below 1.2·10⁻³⁸), +∞ above [`OVERFLOW`] (checked for
/// every f32 by `tests/kernels.rs`, in release).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::kernels::exp;
///
/// let x = Tensor::<1>::from_floats([0.0, 1.0, f32::NEG_INFINITY, -100.0], &Device::flex());
/// let y = exp(x).try_into_vec_as::<f32>().unwrap();
/// assert_eq!(y, [1.0, std::f32::consts::E, 0.0, 0.0]);
/// ```
pub fn exp<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as AttentionOps>::exp(x.into_dispatch()))
}

/// d2l's `masked_softmax` (what [`crate::attention_scoring::masked_softmax`]
/// computes, and the tests compare with it) as one operation: on flex the
/// masked keys are neither filled nor compared, each row is normalised
/// over its valid keys with the masked ones sharing one exponential of
/// [`MASK_VALUE`](crate::masks::MASK_VALUE), and under
/// autodiff the backward pass is one operation
/// too. `scores` is (batch_size, num_queries, num_keys); `valid_lens` as
/// in `masked_softmax`. A row with valid length 0 is uniform in every
/// float dtype (f16 fills with its lowest finite value:
/// [`mask_value`](crate::masks::mask_value)).
///
/// # Panics
/// As [`ValidLens::mask`].
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::attention_scoring::ValidLens;
/// use d2l_attention::kernels::masked_softmax;
///
/// let device = Device::flex();
/// let scores = Tensor::<3>::zeros([2, 1, 4], &device);
/// let weights = masked_softmax(scores, Some(&ValidLens::new(&[2, 0], &device)));
/// let weights = weights.try_into_vec_as::<f32>().unwrap();
/// assert_eq!(weights, [0.5, 0.5, 0.0, 0.0, 0.25, 0.25, 0.25, 0.25]);
/// ```
pub fn masked_softmax(
    scores: Tensor<3>,
    valid_lens: Option<&ValidLens>,
) -> Tensor<3> {
    let Some(lens) = valid_lens else {
        return softmax(scores);
    };
    let [batch_size, num_queries, num_keys] = scores.dims();
    lens.check(batch_size, num_queries, num_keys);
    let lens = lens.tensor().into_dispatch();
    Tensor::from_dispatch(<Dispatch as AttentionOps>::masked_softmax_last(
        scores.into_dispatch(),
        lens,
    ))
}

/// The logistic sigmoid 1 / (1 + e^−x) element by element, as burn's
/// `activation::sigmoid`, to the tolerance of [`softmax`]; on flex through
/// the vectorised exp (the GRU's gates and its tanh, 2σ(2x) − 1, use it).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::kernels::sigmoid;
///
/// let x = Tensor::<1>::from_floats([0.0, 100.0, -100.0], &Device::flex());
/// // σ(−100) ≈ 3.7·10⁻⁴⁴ lies below f32's normal range: 0 here (see `exp`).
/// assert_eq!(sigmoid(x).try_into_vec_as::<f32>().unwrap(), [0.5, 1.0, 0.0]);
/// ```
pub fn sigmoid<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as AttentionOps>::sigmoid(
        x.into_dispatch(),
    ))
}

/// GELU, x · Φ(x) with Φ the standard normal distribution function
/// (Hendrycks and Gimpel, 2016), element by element: burn's [`Gelu`]
/// (the exact form, PyTorch's `nn.GELU()` default) within 2e-7 + 2e-7 ·
/// |value|, gradient too (`tests/kernels.rs`); on flex in SIMD lanes, with erfc
/// from Numerical Recipes' Chebyshev fit (see `kernels/gelu.rs`), and one
/// operation under autodiff. NaN for NaN and −∞, as burn's.
///
/// [`Gelu`]: burn::nn::Gelu
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::kernels::gelu;
///
/// let x = Tensor::<1>::from_floats([0.0, 1.0, -1.0], &Device::flex());
/// let y = gelu(x).try_into_vec_as::<f32>().unwrap();
/// // Φ(1) = 0.841345, Φ(−1) = 0.158655
/// assert!((y[1] - 0.841_345).abs() < 1e-6 && (y[2] + 0.158_655).abs() < 1e-6);
/// assert_eq!(y[0], 0.0);
/// ```
pub fn gelu<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    Tensor::from_dispatch(<Dispatch as AttentionOps>::gelu(x.into_dispatch()))
}

/// Layer normalisation along the last axis (Ba, Kiros and Hinton, 2016,
/// §3): (x − mean) / √(var + `epsilon`) · `gamma` + `beta`, with the mean
/// and the biased variance of each row, as burn's `LayerNorm` and
/// PyTorch's `nn.LayerNorm`. `x` is (…, d), `gamma` and `beta` are (d).
/// burn's own operation computes it (on flex three SIMD passes per row,
/// in cache); under autodiff it is one operation whose backward pass is
/// one more (on flex one pass per row, `kernels/norm.rs`), where burn
/// splits it into nine. Within 1e-5 + 1e-5·|value| of burn's `LayerNorm` in value and every
/// gradient (`tests/kernels.rs`).
///
/// # Panics
/// When `gamma` or `beta` is not as long as the last axis of `x`.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::kernels::layer_norm;
///
/// let device = Device::flex();
/// let x = Tensor::<2>::from_floats([[1.0, 3.0], [5.0, 5.0]], &device);
/// let (gamma, beta) = (Tensor::ones([2], &device), Tensor::zeros([2], &device));
/// let y = layer_norm(x, gamma, beta, 1e-5).try_into_vec_as::<f32>().unwrap();
/// // Row 1: mean 2, variance 1; row 2 has variance 0 and comes out 0.
/// assert!((y[0] + 1.0).abs() < 1e-4 && (y[1] - 1.0).abs() < 1e-4);
/// assert_eq!(&y[2..], [0.0, 0.0]);
/// ```
pub fn layer_norm<const D: usize>(
    x: Tensor<D>,
    gamma: Tensor<1>,
    beta: Tensor<1>,
    epsilon: f64,
) -> Tensor<D> {
    check_affine(x.dims()[D - 1], &gamma, &beta);
    Tensor::from_dispatch(<Dispatch as AttentionOps>::layer_norm(
        x.into_dispatch(),
        gamma.into_dispatch(),
        beta.into_dispatch(),
        epsilon,
    ))
}

/// d2l's add & norm, LN(`x` + `y`), as [`layer_norm`] of the sum, but
/// one operation under autodiff where burn's would be the sum and then the
/// layer norm's: the sum's gradient is the layer norm's, handed to both.
/// `x` and `y` are (…, d), `gamma` and `beta` (d).
///
/// # Panics
/// When `x` and `y` differ in shape, or as [`layer_norm`].
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::kernels::{add_layer_norm, layer_norm};
///
/// let device = Device::flex();
/// let x = Tensor::<2>::from_floats([[1.0, 3.0, 2.0]], &device);
/// let y = Tensor::<2>::from_floats([[0.5, -1.0, 4.0]], &device);
/// let (gamma, beta) = (Tensor::ones([3], &device), Tensor::zeros([3], &device));
/// let fused = add_layer_norm(x.clone(), y.clone(), gamma.clone(), beta.clone(), 1e-5);
/// let apart = layer_norm(x + y, gamma, beta, 1e-5);
/// assert_eq!(fused.into_data(), apart.into_data());
/// ```
pub fn add_layer_norm<const D: usize>(
    x: Tensor<D>,
    y: Tensor<D>,
    gamma: Tensor<1>,
    beta: Tensor<1>,
    epsilon: f64,
) -> Tensor<D> {
    assert!(
        x.dims() == y.dims(),
        "add & norm: `x` has shape {:?} and `y` {:?}: the residual needs one shape",
        x.dims(),
        y.dims()
    );
    check_affine(x.dims()[D - 1], &gamma, &beta);
    Tensor::from_dispatch(<Dispatch as AttentionOps>::add_layer_norm(
        x.into_dispatch(),
        y.into_dispatch(),
        gamma.into_dispatch(),
        beta.into_dispatch(),
        epsilon,
    ))
}

/// Panics unless `gamma` and `beta` have `d` entries.
fn check_affine(d: usize, gamma: &Tensor<1>, beta: &Tensor<1>) {
    for (name, len) in [("gamma", gamma.dims()[0]), ("beta", beta.dims()[0])] {
        assert_eq!(
            len, d,
            "layer norm: `{name}` has {len} entries, `x`'s last axis {d}"
        );
    }
}

/// burn's [`Dropout::forward`] with the mask from [`AttentionOps`]: `x`
/// unchanged unless the layer is in training (its flag on and `x` on an
/// autodiff device) with a probability above 0; then each element is kept
/// and scaled by 1/(1 − p) with probability 1 − p, else set to 0. On flex
/// the mask comes from one seed per call drawn from flex's seeded
/// generator, so `Device::seed` makes it reproducible and the thread count
/// does not change it.
///
/// # Examples
/// ```
/// use burn::nn::DropoutConfig;
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::kernels::dropout;
///
/// let layer = DropoutConfig::new(0.5).init();
/// let x = Tensor::<1>::ones([1000], &Device::flex().autodiff());
/// let y = dropout(&layer, x.clone()).try_into_vec_as::<f32>().unwrap();
/// assert!(y.iter().all(|&v| v == 0.0 || v == 2.0));
/// // Off an autodiff device nothing is dropped.
/// let plain = Tensor::<1>::ones([4], &Device::flex());
/// assert_eq!(dropout(&layer, plain).try_into_vec_as::<f32>().unwrap(), [1.0; 4]);
/// ```
pub fn dropout<const D: usize>(layer: &Dropout, x: Tensor<D>) -> Tensor<D> {
    if !layer.training.is_enabled()
        || !x.device().is_autodiff()
        || layer.prob == 0.0
    {
        return x;
    }
    let mask = <Dispatch as AttentionOps>::dropout_mask(
        x.clone().into_dispatch(),
        layer.prob,
    );
    x * Tensor::from_dispatch(mask)
}

/// The vectorised exp of [`exp`] on a slice, on the calling thread (what
/// `tests/kernels.rs` checks).
///
/// # Panics
/// When `input` and `output` differ in length.
///
/// # Examples
/// ```
/// use d2l_attention::kernels::exp_slice;
///
/// let mut y = [0.0; 3];
/// exp_slice(&[0.0, -1e6, 1e6], &mut y);
/// assert_eq!(y, [1.0, 0.0, f32::INFINITY]);
/// ```
pub fn exp_slice(input: &[f32], output: &mut [f32]) {
    assert_eq!(
        input.len(),
        output.len(),
        "`input` and `output` differ in length"
    );
    if !input.is_empty() {
        exp::rows(exp::Row::Exp, input, output, input.len());
    }
}
