//! Attention pooling: Nadaraya–Watson kernel regression (d2l zh §10.2,
//! en §11.2), non-parametric and with one learnable parameter.

mod parametric;

pub use parametric::{
    EpochLog, NWKernelRegression, leave_one_out, leave_one_out_loss, train,
    train_on,
};

use burn::tensor::{Device, Tensor};

use crate::kernels::softmax;
use chacha20::ChaCha12Rng;
use rand::{RngExt, SeedableRng};
use rand_distr::Normal;

use crate::plot::PlotError;
use crate::{Axes, HeatmapOptions, Series, Svg, plot, show_heatmaps};

/// Why a regression could not be computed.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::nadaraya_watson::*;
///
/// let device = Device::flex();
/// let empty = Tensor::<1>::from_floats([0.0f32; 0], &device);
/// let err = nonparametric_pooling(empty.clone(), empty.clone(), empty).unwrap_err();
/// assert_eq!(err, RegressionError::NoTrainingData);
/// ```
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum RegressionError {
    /// The training set is empty.
    #[error(
        "`x_train` is empty: kernel regression needs at least one training point"
    )]
    NoTrainingData,
    /// Leave-one-out training needs at least two points.
    #[error("`x_train` has 1 point; leave-one-out training needs at least 2")]
    TooFewForLeaveOneOut,
    /// Inputs and targets differ in length.
    #[error("`x_train` has {x} points but `y_train` has {y}")]
    Mismatch {
        /// Number of inputs.
        x: usize,
        /// Number of targets.
        y: usize,
    },
    /// An argument of [`train_on`] has a shape that does not fit the
    /// others.
    #[error("`{arg}` has shape {shape:?}, expected {expected}")]
    Shape {
        /// The argument's name.
        arg: &'static str,
        /// Its shape.
        shape: Vec<usize>,
        /// The shape it needs, in words.
        expected: String,
    },
    /// A query has no training point inside the kernel's support, so its
    /// weights would be 0/0.
    #[error(
        "query {query} (x = {x}) has no training point inside the {kernel} kernel's support; widen the kernel or add data"
    )]
    EmptySupport {
        /// Index of the query.
        query: usize,
        /// Its value.
        x: f32,
        /// The kernel's name.
        kernel: String,
    },
    /// A Gaussian kernel's bandwidth is not a positive number.
    #[error(
        "`sigma` is {0}; a Gaussian kernel's bandwidth must be finite and positive"
    )]
    Bandwidth(f32),
    /// A query's squared distance to its nearest training input is not a
    /// finite f32 (the query is NaN or ±∞, or more than about 1.8·10¹⁹
    /// from every training input), so its Gaussian weights would be NaN.
    #[error(
        "`queries`[{query}] = {x} is out of reach: its squared distance to the nearest training input is not a finite f32"
    )]
    QueryOutOfRange {
        /// Index of the query.
        query: usize,
        /// Its value.
        x: f32,
    },
    /// Training diverged.
    #[error("`w` became {w} at epoch {epoch}; lower the learning rate")]
    Diverged {
        /// The epoch (1-based).
        epoch: usize,
        /// The value it took.
        w: f32,
    },
}

/// The seed the chapter's data is drawn with ([`Dataset::generate`]), by
/// every listing of the chapter and its widget.
///
/// # Examples
/// ```
/// assert_eq!(d2l_attention::nadaraya_watson::SEED, 0);
/// ```
pub const SEED: u64 = 0;

/// The function to learn: f(x) = 2 sin x + x^0.8 (d2l zh §10.2.1).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::nadaraya_watson::*;
///
/// let device = Device::flex();
/// let y = f(Tensor::<1>::from_floats([0.0, 1.0], &device));
/// let y = y.try_into_vec_as::<f32>().unwrap();
/// assert_eq!(y[0], 0.0);
/// assert!((y[1] - (2.0 * 1f32.sin() + 1.0)).abs() < 1e-6);
/// ```
pub fn f(x: Tensor<1>) -> Tensor<1> {
    x.clone().sin() * 2.0 + x.powf_scalar(0.8)
}

/// A regression data set on the device.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::nadaraya_watson::*;
///
/// let device = Device::flex();
/// let data = Dataset::generate(50, 0, &device);
/// assert_eq!((data.x_train.dims(), data.x_test.dims(), data.y_truth.dims()), ([50], [50], [50]));
/// ```
#[derive(Clone, Debug)]
pub struct Dataset {
    /// Sorted training inputs, (n_train,).
    pub x_train: Tensor<1>,
    /// Noisy training targets f(x) + ε, ε ~ N(0, 0.5²), (n_train,).
    pub y_train: Tensor<1>,
    /// Test inputs 0, 0.1, …, 4.9, (50,).
    pub x_test: Tensor<1>,
    /// f at the test inputs, (50,).
    pub y_truth: Tensor<1>,
}

impl Dataset {
    /// The mean squared error of predictions `y_hat` at the test inputs
    /// against the noise-free f there (d2l's curves compare with f too).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::nadaraya_watson::*;
    ///
    /// let data = Dataset::generate(50, 0, &Device::flex());
    /// assert_eq!(data.test_mse(data.y_truth.clone()), 0.0);
    /// ```
    pub fn test_mse(&self, y_hat: Tensor<1>) -> f32 {
        (y_hat - self.y_truth.clone())
            .powi_scalar(2)
            .mean()
            .into_scalar::<f32>()
    }

    /// d2l's data (zh §10.2.1): `n_train` inputs drawn uniformly from [0, 5)
    /// and sorted, targets with Gaussian noise of standard deviation 0.5,
    /// drawn from a generator seeded with `seed` (the same numbers on every
    /// backend).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::nadaraya_watson::*;
    ///
    /// let device = Device::flex();
    /// let data = Dataset::generate(10, 0, &device);
    /// let x = data.x_train.try_into_vec_as::<f32>().unwrap();
    /// assert!(x.windows(2).all(|w| w[0] <= w[1]) && x.iter().all(|v| (0.0..5.0).contains(v)));
    /// ```
    pub fn generate(n_train: usize, seed: u64, device: &Device) -> Self {
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        let mut x: Vec<f32> =
            (0..n_train).map(|_| rng.random::<f32>() * 5.0).collect();
        x.sort_by(f32::total_cmp);
        let noise =
            Normal::new(0.0f32, 0.5).expect("a valid standard deviation");
        let noise: Vec<f32> = (0..n_train).map(|_| rng.sample(noise)).collect();
        let x_train = Tensor::<1>::from_floats(x.as_slice(), device);
        let y_train =
            f(x_train.clone()) + Tensor::from_floats(noise.as_slice(), device);
        Self::from_parts(x_train, y_train, device)
    }

    /// A data set from given training points, with d2l's test inputs.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::nadaraya_watson::*;
    ///
    /// let device = Device::flex();
    /// let x = Tensor::<1>::from_floats([1.0, 2.0], &device);
    /// let data = Dataset::from_parts(x.clone(), x, &device);
    /// assert_eq!(data.x_test.dims(), [50]);
    /// ```
    pub fn from_parts(
        x_train: Tensor<1>,
        y_train: Tensor<1>,
        device: &Device,
    ) -> Self {
        let x_test: Vec<f32> = (0..50).map(|i| i as f32 * 0.1).collect();
        let x_test = Tensor::<1>::from_floats(x_test.as_slice(), device);
        let y_truth = f(x_test.clone());
        Dataset {
            x_train,
            y_train,
            x_test,
            y_truth,
        }
    }
}

/// The baseline: every prediction is the mean of `y_train` (average
/// pooling, d2l zh §10.2.2), for `n_test` queries.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::nadaraya_watson::*;
///
/// let device = Device::flex();
/// let y = Tensor::<1>::from_floats([1.0, 2.0, 6.0], &device);
/// assert_eq!(average_pooling(y, 2).try_into_vec_as::<f32>().unwrap(), [3.0, 3.0]);
/// ```
pub fn average_pooling(y_train: Tensor<1>, n_test: usize) -> Tensor<1> {
    y_train.mean().expand([n_test])
}

fn check_training_set(
    x_train: &Tensor<1>,
    y_train: &Tensor<1>,
) -> Result<(), RegressionError> {
    let (x, y) = (x_train.dims()[0], y_train.dims()[0]);
    if x == 0 {
        return Err(RegressionError::NoTrainingData);
    }
    if x != y {
        return Err(RegressionError::Mismatch { x, y });
    }
    Ok(())
}

/// Non-parametric attention pooling with a Gaussian kernel (d2l zh
/// eq. 10.2.6): weights = softmax over the training inputs of
/// −(x − xᵢ)²/2, prediction = weights · y_train.
///
/// Returns (predictions (n_queries,), weights (n_queries, n_train)).
///
/// # Errors
/// [`RegressionError`] when the training set is empty or `x_train` and
/// `y_train` differ in length.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::nadaraya_watson::*;
///
/// let device = Device::flex();
/// let x = Tensor::<1>::from_floats([0.0, 1.0], &device);
/// let y = Tensor::<1>::from_floats([0.0, 2.0], &device);
/// // Halfway between the two points, both get weight 1/2.
/// let (y_hat, weights) = nonparametric_pooling(x, y, Tensor::from_floats([0.5], &device)).unwrap();
/// assert_eq!(weights.dims(), [1, 2]);
/// assert!((y_hat.into_scalar::<f32>() - 1.0).abs() < 1e-6);
/// ```
pub fn nonparametric_pooling(
    x_train: Tensor<1>,
    y_train: Tensor<1>,
    queries: Tensor<1>,
) -> Result<(Tensor<1>, Tensor<2>), RegressionError> {
    check_training_set(&x_train, &y_train)?;
    // ANCHOR: nonparametric
    // (n_queries, 1) − (1, n_train): every query against every key.
    let differences =
        queries.unsqueeze_dim::<2>(1) - x_train.unsqueeze_dim::<2>(0);
    let attention_weights = softmax(-differences.powi_scalar(2) / 2.0);
    let y_hat = attention_weights
        .clone()
        .matmul(y_train.unsqueeze_dim::<2>(1))
        .squeeze_dim::<1>(1);
    // ANCHOR_END: nonparametric
    Ok((y_hat, attention_weights))
}

/// A kernel K(u) of the distance u between a query and a key (d2l en
/// §11.2.1). The weights are K(x − xᵢ) normalised to sum to one.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::nadaraya_watson::*;
///
/// let device = Device::flex();
/// assert_eq!(Kernel::Gaussian { sigma: 0.5 }.to_string(), "Gaussian (σ = 0.5)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Kernel {
    /// exp(−u² / (2σ²)); σ = 1 gives d2l zh's kernel.
    Gaussian {
        /// The bandwidth σ.
        sigma: f32,
    },
    /// 1 for |u| < 1, else 0.
    Boxcar,
    /// 1 everywhere (average pooling).
    Constant,
    /// max(0, 1 − |u|), the kernel d2l en draws under the name
    /// Epanechikov (the classical Epanechnikov kernel is max(0, 1 − u²)).
    Epanechikov,
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kernel::Gaussian { sigma } => write!(f, "Gaussian (σ = {sigma})"),
            Kernel::Boxcar => write!(f, "Boxcar"),
            Kernel::Constant => write!(f, "Constant"),
            Kernel::Epanechikov => write!(f, "Epanechikov"),
        }
    }
}

impl Kernel {
    /// K(u), elementwise.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::nadaraya_watson::*;
    ///
    /// let device = Device::flex();
    /// let u = Tensor::<1>::from_floats([0.0, 0.5, 2.0], &device);
    /// let k = Kernel::Epanechikov.apply(u.clone()).try_into_vec_as::<f32>().unwrap();
    /// assert_eq!(k, [1.0, 0.5, 0.0]);
    /// assert_eq!(Kernel::Boxcar.apply(u).try_into_vec_as::<f32>().unwrap(), [1.0, 1.0, 0.0]);
    /// ```
    pub fn apply<const D: usize>(self, u: Tensor<D>) -> Tensor<D> {
        // ANCHOR: kernels
        match self {
            Kernel::Gaussian { sigma } => {
                (-u.powi_scalar(2) / (2.0 * sigma * sigma)).exp()
            }
            Kernel::Boxcar => u.abs().lower_elem(1.0).float(),
            Kernel::Constant => u.ones_like(),
            Kernel::Epanechikov => (-u.abs() + 1.0).clamp_min(0.0),
        }
        // ANCHOR_END: kernels
    }
}

/// The Gaussian kernel's weights for `differences` (n_queries, n_train):
/// exp(−u²/2σ²) normalised is a softmax of −u²/2σ², computed as
/// −(u² − u²_min)/2σ² per query, so that the nearest key scores exactly 0
/// for every σ: its exponential never underflows, and no 0/0 can arise
/// while u²_min is finite (checked: otherwise the query named by
/// [`RegressionError::QueryOutOfRange`], read from `queries`). 1/2σ² is
/// taken in f64 and capped at `f32::MAX`, so that a σ whose 2σ²
/// underflows in f32 gives the kernel's limit as σ → 0, the mean of the
/// nearest keys' values, instead of NaN.
fn gaussian_weights(
    differences: Tensor<2>,
    sigma: f32,
    queries: &Tensor<1>,
) -> Result<Tensor<2>, RegressionError> {
    let squared = differences.powi_scalar(2);
    let nearest = squared.clone().min_dim(1); // (n_queries, 1)
    let host = nearest.clone().try_into_vec_as::<f32>().unwrap_or_default();
    if let Some(query) = host.iter().position(|d| !d.is_finite()) {
        let x = queries.clone().narrow(0, query, 1).into_scalar::<f32>();
        return Err(RegressionError::QueryOutOfRange { query, x });
    }
    let scale = (0.5 / (sigma as f64).powi(2)).min(f32::MAX as f64) as f32;
    Ok(softmax((squared - nearest) * -scale))
}

/// Nadaraya–Watson regression with any [`Kernel`] (d2l en §11.2.2):
/// weights K(x − xᵢ) / Σⱼ K(x − xⱼ), prediction = weights · y_train.
///
/// Returns (predictions (n_queries,), weights (n_queries, n_train)).
///
/// # Errors
/// [`RegressionError::EmptySupport`] naming the first query whose kernel
/// weights are all zero (a boxcar or Epanechikov kernel with no training
/// point within distance 1), instead of a NaN prediction;
/// [`RegressionError::Bandwidth`] for a Gaussian σ that is not finite and
/// positive, [`RegressionError::QueryOutOfRange`] for a query whose squared
/// distance to every training input overflows f32 (or is NaN); the errors
/// of [`nonparametric_pooling`] for a bad training set. Otherwise any
/// finite positive σ gives finite weights: one so small that 2σ²
/// underflows in f32 weighs the nearest keys equally (the kernel's limit
/// as σ → 0), one so large that 1/2σ² underflows weighs all keys equally.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::nadaraya_watson::*;
///
/// let device = Device::flex();
/// let x = Tensor::<1>::from_floats([0.0, 1.0, 5.0], &device);
/// let y = Tensor::<1>::from_floats([1.0, 3.0, 9.0], &device);
/// // A boxcar around 0.2 sees the first two points only.
/// let (y_hat, weights) = nadaraya_watson(x, y, Tensor::from_floats([0.2], &device), Kernel::Boxcar)
///     .unwrap();
/// assert_eq!(weights.dims(), [1, 3]);
/// assert_eq!(y_hat.into_scalar::<f32>(), 2.0);
/// ```
pub fn nadaraya_watson(
    x_train: Tensor<1>,
    y_train: Tensor<1>,
    queries: Tensor<1>,
    kernel: Kernel,
) -> Result<(Tensor<1>, Tensor<2>), RegressionError> {
    check_training_set(&x_train, &y_train)?;
    let differences =
        queries.clone().unsqueeze_dim::<2>(1) - x_train.unsqueeze_dim::<2>(0);
    let attention_weights = if let Kernel::Gaussian { sigma } = kernel {
        if !(sigma.is_finite() && sigma > 0.0) {
            return Err(RegressionError::Bandwidth(sigma));
        }
        gaussian_weights(differences, sigma, &queries)?
    } else {
        let k = kernel.apply(differences);
        let totals = k.clone().sum_dim(1); // (n_queries, 1)
        let empty = totals
            .clone()
            .equal_elem(0.0)
            .squeeze_dim::<1>(1)
            .try_into_vec_as::<bool>()
            .unwrap_or_default();
        if let Some(query) = empty.iter().position(|&e| e) {
            let x = queries.narrow(0, query, 1).into_scalar::<f32>();
            return Err(RegressionError::EmptySupport {
                query,
                x,
                kernel: kernel.to_string(),
            });
        }
        k / totals
    };
    let y_hat = attention_weights
        .clone()
        .matmul(y_train.unsqueeze_dim::<2>(1))
        .squeeze_dim::<1>(1);
    Ok((y_hat, attention_weights))
}

/// d2l's `plot_kernel_reg`: truth and prediction on the test inputs, the
/// training points as translucent dots, x in [0, 5], y in [−1, 5].
///
/// # Errors
/// [`PlotError`] when a prediction is NaN or infinite.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::nadaraya_watson::*;
///
/// let data = Dataset::generate(50, 0, &Device::flex());
/// let y_hat = average_pooling(data.y_train.clone(), 50);
/// let svg = plot_kernel_reg(&data, y_hat).unwrap();
/// // 50 training points, drawn as dots of radius 3 (the lines' vertices
/// // carry invisible hover targets of radius 4).
/// assert_eq!(svg.as_str().matches(" r=\"3\">").count(), 50);
/// ```
pub fn plot_kernel_reg(
    data: &Dataset,
    y_hat: Tensor<1>,
) -> Result<Svg, PlotError> {
    let x_test = host(&data.x_test);
    plot(
        &[
            Series::line(&x_test, &host(&data.y_truth)).label("Truth"),
            Series::line(&x_test, &host(&y_hat)).label("Pred"),
            Series::points(&host(&data.x_train), &host(&data.y_train))
                .alpha(0.5),
        ],
        &Axes::new("x", "y").xlim(0.0, 5.0).ylim(-1.0, 5.0),
    )
}

/// The attention weights of a Nadaraya–Watson estimate, (n_test, n_train),
/// as one heatmap with the test inputs down and the training inputs across
/// (both sorted): d2l's `show_heatmaps` call of zh §10.2.
///
/// # Errors
/// [`PlotError`] when the weights cannot be drawn (a NaN, no entries).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::nadaraya_watson::plot_attention_weights;
///
/// let weights = Tensor::<2>::ones([3, 4], &Device::flex()) / 4.0;
/// let svg = plot_attention_weights(weights).unwrap();
/// assert!(svg.as_str().contains("Sorted training inputs"));
/// ```
pub fn plot_attention_weights(weights: Tensor<2>) -> Result<Svg, PlotError> {
    show_heatmaps(
        &weights.unsqueeze::<4>(),
        "Sorted training inputs",
        "Sorted test inputs",
        HeatmapOptions::default(),
    )
}

/// A 1-D tensor's values on the host, as f64 for plotting.
pub(crate) fn host(t: &Tensor<1>) -> Vec<f64> {
    t.clone().try_into_vec_as::<f64>().expect("readable tensor")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floats(t: Tensor<1>) -> Vec<f32> {
        t.try_into_vec_as::<f32>().unwrap()
    }

    /// σ so small that 2σ² underflows (1e-30) or is subnormal (1e-20) in
    /// f32 gives the kernel's limit, the mean of the nearest keys' values
    /// (NaN before), as does 1e-6; σ so large that 1/2σ² underflows weighs
    /// every key alike.
    #[test]
    fn a_vanishing_or_huge_bandwidth_gives_the_kernel_s_limits() {
        let device = Device::flex();
        // every distance exact in binary: ties are exact
        let x = Tensor::<1>::from_floats([0.0, 0.25, 0.75, 1.0], &device);
        let y = Tensor::<1>::from_floats([1.0, 3.0, 5.0, 7.0], &device);
        let queries = Tensor::<1>::from_floats([0.125, 0.5, 0.9375], &device);
        for sigma in [1e-30, 1e-20, 1e-6] {
            let kernel = Kernel::Gaussian { sigma };
            let (y_hat, weights) =
                nadaraya_watson(x.clone(), y.clone(), queries.clone(), kernel)
                    .unwrap();
            // 0.125: keys 0 and 0.25 tie; 0.5: 0.25 and 0.75; 0.9375: 1.0
            assert_eq!(floats(y_hat), [2.0, 4.0, 7.0], "σ = {sigma}");
            let weights = weights.try_into_vec_as::<f32>().unwrap();
            assert_eq!(&weights[..4], [0.5, 0.5, 0.0, 0.0], "σ = {sigma}");
        }
        let huge = Kernel::Gaussian { sigma: 1e30 };
        let (y_hat, _) = nadaraya_watson(x, y, queries, huge).unwrap();
        assert_eq!(floats(y_hat), [4.0; 3]);
    }

    /// The nearest key scoring 0 changes nothing for ordinary σ: the
    /// weights are exp(−u²/2σ²) normalised.
    #[test]
    fn gaussian_weights_are_the_normalised_kernel() {
        let device = Device::flex();
        let u = [[-1.0f32, 0.5, 2.0], [0.0, 3.0, -0.25]];
        let differences = Tensor::<2>::from_floats(u, &device);
        let queries = Tensor::<1>::zeros([2], &device);
        let weights = gaussian_weights(differences, 0.7, &queries).unwrap();
        let weights = weights.try_into_vec_as::<f32>().unwrap();
        for (row, got) in u.iter().zip(weights.chunks(3)) {
            let k: Vec<f64> = row
                .iter()
                .map(|&u| (-(u as f64).powi(2) / (2.0 * 0.49)).exp())
                .collect();
            let total: f64 = k.iter().sum();
            for (k, w) in k.iter().zip(got) {
                assert!((k / total - *w as f64).abs() < 1e-6, "{got:?}");
            }
        }
    }

    /// A query that is NaN, ±∞, or so far from every training input that
    /// u² overflows f32 is refused by name, instead of NaN weights.
    #[test]
    fn a_query_out_of_f32_reach_is_named() {
        let device = Device::flex();
        let x = Tensor::<1>::from_floats([0.0, 1.0], &device);
        let y = Tensor::<1>::from_floats([1.0, 3.0], &device);
        let kernel = Kernel::Gaussian { sigma: 1.0 };
        for far in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 2e19] {
            let queries = Tensor::<1>::from_floats([0.5, far], &device);
            let err =
                nadaraya_watson(x.clone(), y.clone(), queries, kernel).unwrap_err();
            let RegressionError::QueryOutOfRange { query: 1, x } = err else {
                panic!("{far}: {err:?}");
            };
            assert!(x.is_nan() == far.is_nan() && (far.is_nan() || x == far));
            assert!(err.to_string().starts_with("`queries`[1] = "), "{err}");
        }
        // 1e19 from both keys (a tie in f32): u² ≈ 1e38 is still finite,
        // and the weights are ½ each.
        let queries = Tensor::<1>::from_floats([1e19], &device);
        let (y_hat, _) = nadaraya_watson(x, y, queries, kernel).unwrap();
        assert_eq!(floats(y_hat), [2.0]);
    }
}
