//! Seeded random tensors that are the same on every backend.
//!
//! burn seeds one generator per backend, and libtorch draws other numbers
//! than flex for the same seed. The book's listings therefore draw their
//! random inputs here, on the host, from a generator of their own, and then
//! move them to the device: every backend sees the same numbers, and tests
//! that draw data need no global lock.

use burn::tensor::{Device, Shape, Tensor, TensorData};
use rand::{RngExt, SeedableRng, rngs::StdRng};
use rand_distr::StandardNormal;

/// A tensor of the given `shape` with entries drawn from N(0, 1), from a
/// generator seeded with `seed` (like `torch.manual_seed(seed);
/// torch.randn(shape)`, though with other numbers than torch's).
pub fn randn<const D: usize>(shape: [usize; D], seed: u64, device: &Device) -> Tensor<D> {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = shape.iter().product();
    let values: Vec<f32> = (0..n).map(|_| rng.sample(StandardNormal)).collect();
    Tensor::from_data(TensorData::new(values, Shape::new(shape)), device)
}

/// A tensor of the given `shape` with entries drawn uniformly from [0, 1),
/// from a generator seeded with `seed` (like `torch.rand`).
pub fn rand<const D: usize>(shape: [usize; D], seed: u64, device: &Device) -> Tensor<D> {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = shape.iter().product();
    let values: Vec<f32> = (0..n).map(|_| rng.random::<f32>()).collect();
    Tensor::from_data(TensorData::new(values, Shape::new(shape)), device)
}

/// Formats a tensor as nested rows, like a printed PyTorch tensor:
/// `[[0.1000, 0.2000], [0.3000, 0.4000]]` (inner rows on lines of their
/// own), with `decimals` digits after the point.
///
/// # Panics
/// When the tensor cannot be read back from its device.
pub fn format_tensor<const D: usize>(tensor: Tensor<D>, decimals: usize) -> String {
    let dims = tensor.dims();
    let values = tensor
        .try_into_vec_as::<f32>()
        .expect("tensor readable on the host");
    nest(&values, &dims, decimals, 0)
}

fn nest(values: &[f32], dims: &[usize], decimals: usize, depth: usize) -> String {
    if dims.len() <= 1 {
        return format_row(values, decimals);
    }
    let chunk = values.len() / dims[0].max(1);
    let rows: Vec<String> = values
        .chunks(chunk.max(1))
        .map(|c| nest(c, &dims[1..], decimals, depth + 1))
        .collect();
    let sep = format!(",\n{}", " ".repeat(depth + 1));
    format!("[{}]", rows.join(&sep))
}

/// Formats a slice of numbers like a printed tensor row: `[0.1000, 0.2000]`,
/// with `decimals` digits after the point.
pub fn format_row(values: &[f32], decimals: usize) -> String {
    let items: Vec<String> = values.iter().map(|v| format!("{v:.decimals$}")).collect();
    format!("[{}]", items.join(", "))
}
