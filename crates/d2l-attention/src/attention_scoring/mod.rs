//! Attention scoring functions (d2l zh §10.3, en §11.3): masked softmax,
//! additive, dot-product and bilinear scores, and self-attention written
//! as a double loop and vectorised (the notebook 注意力机制).
//!
//! Misuse panics, as in burn's own layers: a tensor of the wrong shape, or
//! a valid length past the number of keys, stops the call with a message
//! that names the argument (see the crate's error policy).

mod additive;
mod dot_product;
mod masking;

pub use crate::masks::{MASK_VALUE, ValidLens, mask_value};
pub use additive::{AdditiveAttention, AdditiveAttentionConfig, ProjectedKeys};
pub use dot_product::{
    DotProductAttention, DotProductAttentionConfig, bilinear_scores,
    self_attention, self_attention_loop,
};
pub use masking::{masked_softmax, masked_softmax_by};

use burn::nn::{Dropout, Initializer, Linear};
use burn::tensor::Tensor;

use crate::kernels::dropout;

/// burn's default `Linear` initialisation (PyTorch's): Kaiming-uniform
/// with gain 1/√3, which draws weights and biases from U(±1/√fan_in).
///
/// # Examples
/// ```
/// use burn::nn::{Initializer, LinearConfig};
/// use d2l_attention::attention_scoring::TORCH_LINEAR;
///
/// let Initializer::KaimingUniform { gain, .. } = LinearConfig::new(1, 1).initializer else { panic!() };
/// assert!(matches!(TORCH_LINEAR, Initializer::KaimingUniform { gain: g, fan_out_only: false } if g == gain));
/// ```
pub const TORCH_LINEAR: Initializer = Initializer::KaimingUniform {
    gain: 0.577_350_269_189_625_8,
    fan_out_only: false,
};

/// What an attention layer returns.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::attention_scoring::DotProductAttentionConfig;
///
/// let device = Device::flex();
/// let x = Tensor::<3>::ones([2, 3, 4], &device);
/// let attended = DotProductAttentionConfig::new().init().forward(x.clone(), x.clone(), x, None);
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
/// # Panics
/// Naming the argument that does not fit.
fn check_qkv(queries: &Tensor<3>, keys: &Tensor<3>, values: &Tensor<3>) {
    let (q, k, v) = (queries.dims(), keys.dims(), values.dims());
    for (arg, dims) in [("keys", k), ("values", v)] {
        assert!(
            dims[0] == q[0],
            "`{arg}` has shape {dims:?}, expected batch size {} (of `queries` {q:?})",
            q[0]
        );
    }
    assert!(
        k[1] == v[1],
        "`keys` {k:?} and `values` {v:?} disagree: one value is needed per key (dimension 1)"
    );
}

/// Checks that `x` (…, …, size) fits `layer`'s input size.
///
/// # Panics
/// Naming `arg`, its shape and the size `layer` takes.
pub(crate) fn check_fits(arg: &str, x: &Tensor<3>, layer: &Linear) {
    let (dims, size) = (x.dims(), layer.weight.dims()[0]);
    assert!(
        dims[2] == size,
        "`{arg}` has shape {dims:?}, expected vectors of size {size} (dimension 2)"
    );
}

/// Weights the values: dropout on the weights (active only when training
/// on an autodiff device), then a batched matrix product.
// ANCHOR: pool
pub(crate) fn pool(
    layer: &Dropout,
    weights: Tensor<3>,
    values: Tensor<3>,
) -> Attended {
    let output = dropout(layer, weights.clone()).matmul(values);
    Attended {
        output,
        attention_weights: weights,
    }
}
// ANCHOR_END: pool
