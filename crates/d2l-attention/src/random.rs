//! Seeded random tensors that are the same on every backend.
//!
//! burn seeds one generator per backend, and libtorch draws other numbers
//! than flex for the same seed. The book's listings therefore draw their
//! random inputs here, on the host, from a generator of their own, and then
//! move them to the device: every backend sees the same numbers, and tests
//! that draw data need no global lock. The generator is ChaCha12, named
//! rather than taken as rand's `StdRng`, whose algorithm rand may change
//! between versions: the committed figures depend on these streams.

use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::{Device, Shape, Tensor, TensorData};

use crate::attention_scoring::DotProductAttentionConfig;
use crate::multihead_attention::MultiHeadAttention;
use chacha20::ChaCha12Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::StandardNormal;

/// A tensor of the given `shape` with entries drawn from N(0, 1), from a
/// generator seeded with `seed` (like `torch.manual_seed(seed);
/// torch.randn(shape)`, though with other numbers than torch's).
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::random::randn;
///
/// let x = randn([2, 3], 0, &Device::flex());
/// assert_eq!(x.dims(), [2, 3]);
/// // The same seed draws the same numbers.
/// let again = randn([2, 3], 0, &Device::flex());
/// assert_eq!(x.to_data(), again.to_data());
/// ```
pub fn randn<const D: usize>(
    shape: [usize; D],
    seed: u64,
    device: &Device,
) -> Tensor<D> {
    draw(shape, seed, device, |rng| rng.sample(StandardNormal))
}

/// A tensor of the given `shape` with entries drawn uniformly from [0, 1),
/// from a generator seeded with `seed` (like `torch.rand`).
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::random::rand;
///
/// let x = rand([4, 5], 1, &Device::flex());
/// assert_eq!(x.dims(), [4, 5]);
/// let values = x.try_into_vec_as::<f32>().unwrap();
/// assert!(values.iter().all(|v| (0.0..1.0).contains(v)));
/// ```
pub fn rand<const D: usize>(
    shape: [usize; D],
    seed: u64,
    device: &Device,
) -> Tensor<D> {
    draw(shape, seed, device, |rng| rng.random::<f32>())
}

/// A tensor of `shape` filled, row-major, by `sample` from ChaCha12 seeded
/// with `seed`.
fn draw<const D: usize>(
    shape: [usize; D],
    seed: u64,
    device: &Device,
    mut sample: impl FnMut(&mut ChaCha12Rng) -> f32,
) -> Tensor<D> {
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    let n = shape.iter().product();
    let values: Vec<f32> = (0..n).map(|_| sample(&mut rng)).collect();
    Tensor::from_data(TensorData::new(values, Shape::new(shape)), device)
}

/// A bias-free linear layer (`d_input` → `d_output`) with weights drawn
/// from N(0, 1/d_input) by [`randn`] with `seed`, the same on every backend
/// (burn's own initialisers draw from its global generator).
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::random::seeded_linear;
///
/// let layer = seeded_linear(3, 8, 0, &Device::flex());
/// assert_eq!(layer.weight.dims(), [3, 8]);
/// assert!(layer.bias.is_none());
/// ```
pub fn seeded_linear(
    d_input: usize,
    d_output: usize,
    seed: u64,
    device: &Device,
) -> Linear {
    let weight =
        randn([d_input, d_output], seed, device) / (d_input as f64).sqrt();
    Linear {
        weight: Param::from_tensor(weight),
        bias: None,
    }
}

/// A bias-free multi-head attention layer like d2l's (`size` → `size`
/// for queries, keys, values and output, `num_heads` heads), its four
/// projections drawn by [`seeded_linear`] with seeds `seed` … `seed + 3`:
/// the same layer on every backend, for figures and tests.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::random::seeded_multihead;
///
/// let attention = seeded_multihead(16, 4, 0, &Device::flex());
/// assert_eq!((attention.w_o.weight.dims(), attention.num_heads), ([16, 16], 4));
/// ```
pub fn seeded_multihead(
    size: usize,
    num_heads: usize,
    seed: u64,
    device: &Device,
) -> MultiHeadAttention {
    let linear = |i| seeded_linear(size, size, seed + i, device);
    MultiHeadAttention {
        attention: DotProductAttentionConfig::new().init().into(),
        w_q: linear(0),
        w_k: linear(1),
        w_v: linear(2),
        w_o: linear(3),
        num_heads,
    }
}
