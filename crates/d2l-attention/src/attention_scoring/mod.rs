//! Attention scoring functions (d2l zh §10.3, en §11.3): masked softmax,
//! additive, dot-product and bilinear scores, and self-attention written
//! as a double loop and vectorised (seed notebook `002`).

mod additive;
mod dot_product;
mod masking;

pub use additive::{AdditiveAttention, AdditiveAttentionConfig, ProjectedKeys};
pub use dot_product::{
    DotProductAttention, DotProductAttentionConfig, bilinear_scores,
    self_attention, self_attention_loop,
};
use masking::check_rank3;
pub use masking::{ValidLens, masked_softmax};

use burn::nn::Dropout;
use burn::tensor::Tensor;

/// The value d2l's `sequence_mask` writes into masked scores before the
/// softmax. Finite on purpose: exp(−10⁶ − max) underflows to exactly 0,
/// while a fully masked row stays finite (uniform), in value and gradient;
/// a −∞ fill would give NaN there (pytorch#41508, burn#4694).
///
/// # Examples
/// ```
/// use d2l_attention::attention_scoring::MASK_VALUE;
///
/// // exp(MASK_VALUE) underflows to exactly 0 in f32.
/// assert_eq!(MASK_VALUE.exp(), 0.0);
/// ```
pub const MASK_VALUE: f32 = -1e6;

/// Why an attention call was refused.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::attention_scoring::{AttentionError, masked_softmax};
///
/// let device = Device::flex();
/// let scores = Tensor::<3>::zeros([2, 2, 4], &device);
/// let too_long = Tensor::<1, Int>::from_ints([2, 5], &device);
/// let err = masked_softmax(scores, Some(too_long.into())).unwrap_err();
/// assert!(matches!(err, AttentionError::ValidLen { .. }));
/// ```
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AttentionError {
    /// One tensor has the wrong shape.
    #[error("`{arg}` has shape {got:?}, expected {expected}")]
    Shape {
        /// The argument.
        arg: &'static str,
        /// Its shape.
        got: Vec<usize>,
        /// What was expected, in words.
        expected: String,
    },
    /// Two tensors disagree.
    #[error("`{a}` {a_shape:?} and `{b}` {b_shape:?} disagree: {why}")]
    Mismatch {
        /// The first argument.
        a: &'static str,
        /// Its shape.
        a_shape: Vec<usize>,
        /// The second argument.
        b: &'static str,
        /// Its shape.
        b_shape: Vec<usize>,
        /// The dimension that differs, in words.
        why: &'static str,
    },
    /// `valid_lens` could not be read from its device.
    #[error("cannot read `valid_lens` from its device: {0}")]
    Unreadable(String),
    /// A valid length outside 0..=num_keys.
    #[error(
        "`valid_lens` holds {value} at {index:?}; each valid length must be in 0..={num_keys}"
    )]
    ValidLen {
        /// The offending length.
        value: i64,
        /// Where it is in `valid_lens`.
        index: Vec<usize>,
        /// The number of keys.
        num_keys: usize,
    },
}

impl AttentionError {
    pub(crate) fn mismatch(
        a: &'static str,
        a_shape: Vec<usize>,
        b: &'static str,
        b_shape: Vec<usize>,
        why: &'static str,
    ) -> Self {
        AttentionError::Mismatch {
            a,
            a_shape,
            b,
            b_shape,
            why,
        }
    }
}

/// What an attention layer returns.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::attention_scoring::DotProductAttentionConfig;
///
/// let device = Device::flex();
/// let x = Tensor::<3>::ones([2, 3, 4], &device);
/// let attended = DotProductAttentionConfig::new().init().forward(x.clone(), x.clone(), x, None).unwrap();
/// assert_eq!(attended.output.dims(), [2, 3, 4]);
/// assert_eq!(attended.attention_weights.dims(), [2, 3, 3]);
/// ```
#[derive(Clone, Debug)]
pub struct Attended {
    /// The pooled values: (batch_size, num_queries, value_size).
    pub output: Tensor<3>,
    /// The attention weights (before dropout): (batch_size, num_queries, num_keys).
    pub attention_weights: Tensor<3>,
}

/// Checks that keys (b, k, dk) and values (b, k, dv) are rank 3 with the
/// batch size b of `queries`, and hold one value per key.
///
/// # Errors
/// [`AttentionError::Shape`] or [`AttentionError::Mismatch`], naming the
/// argument.
fn check_qkv(
    queries: &Tensor<3>,
    keys: &Tensor<3>,
    values: &Tensor<3>,
) -> Result<(), AttentionError> {
    let (q, k, v) = (queries.dims(), keys.dims(), values.dims());
    check_rank3("keys", k, q[0])?;
    check_rank3("values", v, q[0])?;
    if k[1] != v[1] {
        return Err(AttentionError::mismatch(
            "keys",
            k.to_vec(),
            "values",
            v.to_vec(),
            "one value is needed per key (dimension 1)",
        ));
    }
    Ok(())
}

/// Weights the values: dropout on the weights (active only when training
/// on an autodiff device), then a batched matrix product.
fn pool(dropout: &Dropout, weights: Tensor<3>, values: Tensor<3>) -> Attended {
    let output = dropout.forward(weights.clone()).matmul(values);
    Attended {
        output,
        attention_weights: weights,
    }
}
