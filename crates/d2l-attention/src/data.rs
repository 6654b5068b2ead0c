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

/// Formats a slice of numbers like a printed tensor row: `[0.1000, 0.2000]`,
/// with `decimals` digits after the point.
pub fn format_row(values: &[f32], decimals: usize) -> String {
    let items: Vec<String> = values.iter().map(|v| format!("{v:.decimals$}")).collect();
    format!("[{}]", items.join(", "))
}
