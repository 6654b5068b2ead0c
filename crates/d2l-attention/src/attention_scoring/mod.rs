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
    pub attention_weights: AttentionWeights<3>,
}

/// Attention weights (before dropout), made when asked: a layer that
/// pooled through the fused operation ([`crate::kernels::attention`])
/// never built its weights, and [`AttentionWeights::tensor`] builds them
/// from its queries and keys in d2l's form (the masked softmax of the
/// scores); a layer that built them holds them. Shapes change with
/// [`AttentionWeights::reshape`], without building anything.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::attention_scoring::{DotProductAttentionConfig, ValidLens};
///
/// let device = Device::flex();
/// let x = Tensor::<3>::ones([2, 3, 4], &device);
/// let valid_lens = ValidLens::new(&[2, 3], &device);
/// let layer = DotProductAttentionConfig::new().init();
/// let weights = layer.forward(x.clone(), x.clone(), x, Some(&valid_lens)).attention_weights;
/// let weights = weights.reshape([2, 1, 3, 3]).tensor();
/// // Equal scores: uniform over each sequence's valid keys.
/// let row = weights.narrow(0, 0, 1).try_into_vec_as::<f32>().unwrap();
/// assert_eq!(row[..3], [0.5, 0.5, 0.0]);
/// ```
#[derive(Clone, Debug)]
pub struct AttentionWeights<const D: usize> {
    source: WeightsSource,
    dims: [usize; D],
}

/// Where [`AttentionWeights`] come from.
#[derive(Clone, Debug)]
enum WeightsSource {
    /// Built: (batch_size, num_queries, num_keys).
    Built(Box<Tensor<3>>),
    /// To build.
    Scores(Box<Deferred>),
}

/// What a layer needs to build its weights: `layer`'s masked softmax of
/// its scores of `queries` over `keys`.
#[derive(Clone, Debug)]
struct Deferred {
    layer: DotProductAttention,
    queries: Tensor<3>,
    keys: Tensor<3>,
    valid_lens: Option<ValidLens>,
}

impl AttentionWeights<3> {
    /// Weights already built, (batch_size, num_queries, num_keys).
    pub(crate) fn built(weights: Tensor<3>) -> Self {
        let dims = weights.dims();
        Self {
            source: WeightsSource::Built(Box::new(weights)),
            dims,
        }
    }

    /// `layer`'s weights for `queries` over `keys`, to build when asked.
    pub(crate) fn of_scores(
        layer: &DotProductAttention,
        queries: Tensor<3>,
        keys: Tensor<3>,
        valid_lens: Option<&ValidLens>,
    ) -> Self {
        let ([b, n_q, _], n_k) = (queries.dims(), keys.dims()[1]);
        let source = WeightsSource::Scores(Box::new(Deferred {
            layer: layer.clone(),
            queries,
            keys,
            valid_lens: valid_lens.cloned(),
        }));
        Self {
            source,
            dims: [b, n_q, n_k],
        }
    }
}

impl<const D: usize> AttentionWeights<D> {
    /// The weights' shape.
    pub fn dims(&self) -> [usize; D] {
        self.dims
    }

    /// The same weights in another shape of as many elements, as
    /// [`Tensor::reshape`] (nothing is built).
    ///
    /// # Panics
    /// When the number of elements differs.
    pub fn reshape<const D2: usize>(
        self,
        dims: [usize; D2],
    ) -> AttentionWeights<D2> {
        let count = |d: &[usize]| d.iter().product::<usize>();
        assert!(
            count(&dims) == count(&self.dims),
            "cannot reshape attention weights {:?} to {dims:?}",
            self.dims
        );
        AttentionWeights {
            source: self.source,
            dims,
        }
    }

    /// The weights as a tensor of shape [`AttentionWeights::dims`], built
    /// now if the layer did not build them.
    pub fn tensor(&self) -> Tensor<D> {
        let weights = match &self.source {
            WeightsSource::Built(weights) => weights.as_ref().clone(),
            WeightsSource::Scores(of) => of.layer.weights(
                of.queries.clone(),
                of.keys.clone(),
                of.valid_lens.as_ref(),
            ),
        };
        weights.reshape(self.dims)
    }
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
        attention_weights: AttentionWeights::built(weights),
    }
}
// ANCHOR_END: pool
