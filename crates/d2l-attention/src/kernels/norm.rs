//! Layer normalisation's backward pass: in burn's operations for every
//! backend, and on flex one pass per row while it stays in cache.
//!
//! For y = x̂ · γ + β with x̂ = (x − μ) · r, r = 1/√(var + ε), along the last
//! axis of width d and upstream gradient g (Ba, Kiros and Hinton 2016):
//! ∂L/∂β = Σ_rows g, ∂L/∂γ = Σ_rows g ⊙ x̂, and with h = g ⊙ γ,
//! ∂L/∂x = r · (h − mean(h) − x̂ · mean(h ⊙ x̂)).

use burn::backend::tensor::FloatTensor;
use burn::backend::{Backend, TensorMetadata};
use burn::module::{Module, Param};
use burn::nn::{Initializer, LayerNormConfig};
use burn::tensor::{DType, Device, Tensor};
use rayon::prelude::*;

/// Layer normalisation over the last axis (Ba, Kiros and Hinton, 2016), as
/// burn's [`burn::nn::LayerNorm`] and PyTorch's `nn.LayerNorm`, computed by
/// [`layer_norm`](super::layer_norm): one operation under autodiff, its
/// backward pass another, where burn's layer splits into nine. Its
/// parameters are burn's layer's (`gamma`, `beta`), so model files load
/// into either.
///
/// # Examples
/// ```
/// use burn::nn::LayerNormConfig;
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::kernels::LayerNorm;
///
/// let device = Device::flex();
/// let ln = LayerNorm::new(&LayerNormConfig::new(3), &device);
/// let x = Tensor::<2>::from_floats([[1.0, 2.0, 3.0]], &device);
/// let y = ln.forward(x).try_into_vec_as::<f32>().unwrap();
/// let want = [-1.224_74, 0.0, 1.224_74]; // (x − 2) / √(2/3 + 10⁻⁵)
/// assert!(y.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-4), "{y:?}");
/// ```
#[derive(Module, Debug)]
pub struct LayerNorm {
    /// The scale γ (d_model), initially 1.
    pub gamma: Param<Tensor<1>>,
    /// The shift β (d_model), initially 0; `None` is a layer without it.
    pub beta: Option<Param<Tensor<1>>>,
    /// Added to the variance under the square root.
    pub epsilon: f64,
}

impl LayerNorm {
    /// The layer burn's `config` describes, on `device`.
    ///
    /// # Examples
    /// See [`LayerNorm`].
    pub fn new(config: &LayerNormConfig, device: &Device) -> Self {
        let d = [config.d_model];
        Self {
            gamma: Initializer::Ones.init(d, device),
            beta: config.bias.then(|| Initializer::Zeros.init(d, device)),
            epsilon: config.epsilon,
        }
    }

    /// `x` (…, d_model) normalised along its last axis, scaled and shifted;
    /// f16 and bf16 computed in f32, as burn's layer does.
    ///
    /// # Panics
    /// When the last axis of `x` is not d_model long.
    ///
    /// # Examples
    /// See [`LayerNorm`].
    pub fn forward<const D: usize>(&self, x: Tensor<D>) -> Tensor<D> {
        self.normalise(x, None)
    }

    /// The layer on the residual sum `x` + `y` (d2l's add & norm), as one
    /// operation under autodiff ([`add_layer_norm`](super::add_layer_norm)).
    ///
    /// # Panics
    /// When `x` and `y` differ in shape, or as [`LayerNorm::forward`].
    ///
    /// # Examples
    /// ```
    /// use burn::nn::LayerNormConfig;
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::kernels::LayerNorm;
    ///
    /// let device = Device::flex();
    /// let ln = LayerNorm::new(&LayerNormConfig::new(2), &device);
    /// let x = Tensor::<2>::from_floats([[1.0, 2.0]], &device);
    /// let y = Tensor::<2>::from_floats([[4.0, 1.0]], &device);
    /// let sum = ln.forward_sum(x.clone(), y.clone());
    /// assert_eq!(sum.into_data(), ln.forward(x + y).into_data());
    /// ```
    pub fn forward_sum<const D: usize>(
        &self,
        x: Tensor<D>,
        y: Tensor<D>,
    ) -> Tensor<D> {
        self.normalise(x, Some(y))
    }

    fn normalise<const D: usize>(
        &self,
        x: Tensor<D>,
        y: Option<Tensor<D>>,
    ) -> Tensor<D> {
        let gamma = self.gamma.val();
        let beta = match &self.beta {
            Some(beta) => beta.val(),
            None => gamma.zeros_like(),
        };
        let dtype = x.dtype();
        let half = matches!(dtype, DType::F16 | DType::BF16);
        let cast = |t: Tensor<D>| if half { t.cast(DType::F32) } else { t };
        let wide = |t: Tensor<1>| if half { t.cast(DType::F32) } else { t };
        let (x, gamma, beta) = (cast(x), wide(gamma), wide(beta));
        let out = match y {
            None => super::layer_norm(x, gamma, beta, self.epsilon),
            Some(y) => {
                super::add_layer_norm(x, cast(y), gamma, beta, self.epsilon)
            }
        };
        if half { out.cast(dtype) } else { out }
    }
}

/// (∂L/∂x, ∂L/∂γ, ∂L/∂β) in burn's operations.
pub(super) fn backward_ops<B: Backend>(
    x: FloatTensor<B>,
    gamma: FloatTensor<B>,
    grad: FloatTensor<B>,
    epsilon: f64,
) -> (FloatTensor<B>, FloatTensor<B>, FloatTensor<B>) {
    let shape = x.shape();
    let last = shape.num_dims() - 1;
    let d = shape[last];
    let rows = shape.num_elements() / d.max(1);
    let mean = B::float_mean_dim(x.clone(), last);
    let centered = B::float_sub(x, mean);
    let squares = B::float_mul(centered.clone(), centered.clone());
    let var = B::float_mean_dim(squares, last);
    let r =
        B::float_recip(B::float_sqrt(B::float_add_scalar(var, epsilon.into())));
    let x_hat = B::float_mul(centered, r.clone());
    let mut wide = vec![1; last + 1];
    wide[last] = d;
    let h = B::float_mul(grad.clone(), B::float_reshape(gamma, wide.into()));
    let mean_h = B::float_mean_dim(h.clone(), last);
    let mean_hx =
        B::float_mean_dim(B::float_mul(h.clone(), x_hat.clone()), last);
    let dx = B::float_sub(
        B::float_sub(h, mean_h),
        B::float_mul(x_hat.clone(), mean_hx),
    );
    let column_sum = |t: FloatTensor<B>| {
        let t = B::float_sum_dim(B::float_reshape(t, [rows, d].into()), 0);
        B::float_reshape(t, [d].into())
    };
    let d_gamma = column_sum(B::float_mul(grad.clone(), x_hat));
    (B::float_mul(dx, r), d_gamma, column_sum(grad))
}

/// Rows per parallel task: a fixed count (not the thread count), so the
/// column sums of ∂L/∂γ and ∂L/∂β add in the same order on any machine.
fn rows_per_task(d: usize) -> usize {
    ((1 << 14) / d.max(1)).max(1)
}

/// Σ of f(0) … f(n − 1) in eight lanes (which the compiler keeps in one
/// SIMD register), then across them.
fn lanes(n: usize, f: impl Fn(usize) -> f32) -> f32 {
    let mut acc = [0.0f32; 8];
    let full = n / 8 * 8;
    for base in (0..full).step_by(8) {
        for (i, a) in acc.iter_mut().enumerate() {
            *a += f(base + i);
        }
    }
    (full..n).map(f).sum::<f32>() + acc.iter().sum::<f32>()
}

/// μ and r = 1/√(var + ε) of one row, two passes (no cancellation).
fn moments(x: &[f32], epsilon: f32) -> (f32, f32) {
    let n = x.len() as f32;
    let mean = lanes(x.len(), |i| x[i]) / n;
    let var = lanes(x.len(), |i| (x[i] - mean) * (x[i] - mean)) / n;
    (mean, 1.0 / (var + epsilon).sqrt())
}

/// The f32 backward pass on contiguous slices: `x` and `grad` of rows of
/// width `gamma.len()`; returns (∂L/∂x, ∂L/∂γ, ∂L/∂β).
pub(super) fn backward_f32(
    x: &[f32],
    gamma: &[f32],
    grad: &[f32],
    epsilon: f32,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let d = gamma.len();
    let mut dx = vec![0.0f32; x.len()];
    if d == 0 || x.is_empty() {
        return (dx, vec![0.0; d], vec![0.0; d]);
    }
    let task = rows_per_task(d) * d;
    let partial: Vec<(Vec<f32>, Vec<f32>)> = dx
        .par_chunks_mut(task)
        .zip(x.par_chunks(task).zip(grad.par_chunks(task)))
        .map(|(dx, (x, g))| rows_backward(x, g, gamma, epsilon, dx))
        .collect();
    let (mut d_gamma, mut d_beta) = (vec![0.0f32; d], vec![0.0f32; d]);
    for (dg, db) in partial {
        d_gamma.iter_mut().zip(dg).for_each(|(a, b)| *a += b);
        d_beta.iter_mut().zip(db).for_each(|(a, b)| *a += b);
    }
    (dx, d_gamma, d_beta)
}

/// One task's rows: writes ∂L/∂x into `dx`, returns its rows' sums for
/// ∂L/∂γ and ∂L/∂β.
fn rows_backward(
    x: &[f32],
    grad: &[f32],
    gamma: &[f32],
    epsilon: f32,
    dx: &mut [f32],
) -> (Vec<f32>, Vec<f32>) {
    let d = gamma.len();
    let (mut d_gamma, mut d_beta) = (vec![0.0f32; d], vec![0.0f32; d]);
    let (mut x_hat, mut h) = (vec![0.0f32; d], vec![0.0f32; d]);
    let rows = x.chunks_exact(d).zip(grad.chunks_exact(d));
    for ((x, g), dx) in rows.zip(dx.chunks_exact_mut(d)) {
        let (mean, r) = moments(x, epsilon);
        for j in 0..d {
            x_hat[j] = (x[j] - mean) * r;
            h[j] = g[j] * gamma[j];
            d_gamma[j] += g[j] * x_hat[j];
            d_beta[j] += g[j];
        }
        let mean_h = lanes(d, |j| h[j]) / d as f32;
        let mean_hx = lanes(d, |j| h[j] * x_hat[j]) / d as f32;
        for j in 0..d {
            dx[j] = r * (h[j] - mean_h - x_hat[j] * mean_hx);
        }
    }
    (d_gamma, d_beta)
}
