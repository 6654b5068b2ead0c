//! Nadaraya–Watson regression with one learnable parameter, and its
//! training on leave-one-out keys and values (d2l zh §10.2.4).

use burn::module::{Module, Param};
use burn::tensor::{Device, Int, Tensor, TensorData};

use crate::kernels::softmax;

use super::*;

/// Nadaraya–Watson regression with one learnable parameter `w` (d2l zh
/// §10.2.4, eq. 10.2.7): score −((q − k)·w)²/2, so `w` acts as an inverse
/// bandwidth. w = 0 makes every weight equal (average pooling); a larger
/// |w| makes the weights more local.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::nadaraya_watson::*;
///
/// let device = Device::flex();
/// // w = 0 is average pooling.
/// let model = NWKernelRegression::new(0.0, &device);
/// let keys = Tensor::<2>::from_floats([[0.0, 4.0]], &device);
/// let values = Tensor::<2>::from_floats([[1.0, 3.0]], &device);
/// let (y_hat, _) = model.forward(Tensor::from_floats([1.0], &device), keys, values);
/// assert_eq!(y_hat.into_scalar::<f32>(), 2.0);
/// ```
#[derive(Module, Debug)]
pub struct NWKernelRegression {
    /// The learnable scale, shape (1,).
    pub w: Param<Tensor<1>>,
}

impl NWKernelRegression {
    /// A model whose `w` starts at `w` (`chapter10.ipynb` draws it from
    /// N(0, 1), d2l zh and the blog post from U(0, 1)).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::nadaraya_watson::*;
    ///
    /// let device = Device::flex();
    /// assert_eq!(NWKernelRegression::new(1.5, &device).w(), 1.5);
    /// ```
    pub fn new(w: f32, device: &Device) -> Self {
        NWKernelRegression {
            w: Param::from_tensor(Tensor::from_floats([w], device)),
        }
    }

    /// The current value of `w`.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::nadaraya_watson::*;
    ///
    /// let device = Device::flex();
    /// let model = NWKernelRegression::new(-0.25, &device);
    /// assert_eq!(model.w(), -0.25);
    /// ```
    pub fn w(&self) -> f32 {
        self.w.val().into_scalar::<f32>()
    }

    /// Predictions for `queries` (n,) from `keys` and `values` (n, m), each
    /// query with its own row of keys and values; returns (predictions (n,),
    /// attention weights (n, m)).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::nadaraya_watson::*;
    ///
    /// let device = Device::flex();
    /// let model = NWKernelRegression::new(1.0, &device);
    /// let keys = Tensor::<2>::from_floats([[0.0, 1.0], [0.0, 1.0]], &device);
    /// let values = Tensor::<2>::from_floats([[5.0, 7.0], [5.0, 7.0]], &device);
    /// let (y_hat, weights) = model.forward(Tensor::from_floats([0.5, 0.5], &device), keys, values);
    /// assert_eq!(weights.dims(), [2, 2]);
    /// assert_eq!(y_hat.try_into_vec_as::<f32>().unwrap(), [6.0, 6.0]);
    /// ```
    // ANCHOR: parametric_forward
    pub fn forward(
        &self,
        queries: Tensor<1>,
        keys: Tensor<2>,
        values: Tensor<2>,
    ) -> (Tensor<1>, Tensor<2>) {
        let w = self.w.val().unsqueeze::<2>(); // (1, 1)
        let scores =
            -((queries.unsqueeze_dim::<2>(1) - keys) * w).powi_scalar(2) / 2.0;
        let attention_weights = softmax(scores);
        // One weighted average per query, as a batched product:
        // (n, 1, m) × (n, m, 1) → (n, 1, 1)
        let [n, _] = attention_weights.dims();
        let y_hat = attention_weights
            .clone()
            .unsqueeze_dim::<3>(1)
            .matmul(values.unsqueeze_dim::<3>(2))
            .reshape([n]);
        (y_hat, attention_weights)
    }
    // ANCHOR_END: parametric_forward
}

/// Leave-one-out keys and values for training (the `1 − eye` mask of d2l
/// and `chapter10.ipynb`): row i holds every training input (and target)
/// except the i-th.
/// Returns (keys, values), each (n_train, n_train − 1).
///
/// # Errors
/// [`RegressionError`] when fewer than two points are given or the lengths
/// differ.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::nadaraya_watson::*;
///
/// let device = Device::flex();
/// let x = Tensor::<1>::from_floats([1.0, 2.0, 3.0], &device);
/// let (keys, values) = leave_one_out(x.clone(), x).unwrap();
/// assert_eq!(keys.dims(), [3, 2]);
/// assert_eq!(values.try_into_vec_as::<f32>().unwrap(), [2.0, 3.0, 1.0, 3.0, 1.0, 2.0]);
/// ```
// ANCHOR: leave_one_out
pub fn leave_one_out(
    x_train: Tensor<1>,
    y_train: Tensor<1>,
) -> Result<(Tensor<2>, Tensor<2>), RegressionError> {
    check_training_set(&x_train, &y_train)?;
    let n = x_train.dims()[0];
    if n < 2 {
        return Err(RegressionError::TooFewForLeaveOneOut);
    }
    // Row i lists every column but i: d2l's mask 1 − eye(n), as indices.
    let others: Vec<i64> = (0..n as i64)
        .flat_map(|i| (0..n as i64).filter(move |&j| j != i))
        .collect();
    let others = Tensor::<2, Int>::from_data(
        TensorData::new(others, [n, n - 1]),
        &x_train.device(),
    );
    // (n,) → n copies as rows (n, n) → without the diagonal (n, n − 1)
    let drop_diagonal = |t: Tensor<1>| -> Tensor<2> {
        t.unsqueeze::<2>().expand([n, n]).gather(1, others.clone())
    };
    Ok((drop_diagonal(x_train), drop_diagonal(y_train)))
}
// ANCHOR_END: leave_one_out

/// One epoch of [`train`] or [`train_on`]: the loss and gradient at the start of the
/// epoch, and `w` after its SGD step.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::nadaraya_watson::*;
///
/// let device = Device::flex();
/// let device = device.autodiff();
/// let data = Dataset::generate(20, 0, &device);
/// let mut logs = Vec::new();
/// train(NWKernelRegression::new(1.0, &device), data.x_train, data.y_train, 0.1, 2, |l| logs.push(*l))
///     .unwrap();
/// assert_eq!(logs.iter().map(|l| l.epoch).collect::<Vec<_>>(), [1, 2]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpochLog {
    /// 1-based epoch number.
    pub epoch: usize,
    /// Σ (ŷ − y)² over the training points (d2l zh's `l.sum()`, not halved).
    pub loss: f32,
    /// ∂loss/∂w.
    pub grad: f32,
    /// `w` after the step.
    pub w: f32,
}

/// Trains `model` on leave-one-out keys and values (d2l zh §10.2.4.3):
/// full-batch SGD with learning rate `lr` for `epochs` epochs on the
/// squared-error sum; calls `on_epoch` after each step. `model` and the
/// data must live on an autodiff device.
///
/// # Errors
/// [`RegressionError::Diverged`] when `w` stops being finite (too large a
/// learning rate); the errors of [`leave_one_out`] for a bad training set.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::nadaraya_watson::*;
///
/// let device = Device::flex();
/// let device = device.autodiff();
/// let data = Dataset::generate(50, 0, &device);
/// let mut losses = Vec::new();
/// let model = NWKernelRegression::new(1.0, &device);
/// let model = train(model, data.x_train, data.y_train, 0.5, 3, |log| losses.push(log.loss)).unwrap();
/// // d2l's first steps lower the leave-one-out loss.
/// assert!(losses[2] < losses[0], "{losses:?}");
/// assert!(model.w().is_finite());
/// ```
pub fn train(
    model: NWKernelRegression,
    x_train: Tensor<1>,
    y_train: Tensor<1>,
    lr: f64,
    epochs: usize,
    on_epoch: impl FnMut(&EpochLog),
) -> Result<NWKernelRegression, RegressionError> {
    let (keys, values) = leave_one_out(x_train.clone(), y_train.clone())?;
    train_on(
        model,
        (x_train, keys, values),
        y_train,
        lr,
        epochs,
        on_epoch,
    )
}

/// Trains `model` as [`train`] does, on given `queries` (n,), each with
/// its own row of `keys` and `values` (n, m), against `targets` (n,): with
/// every training point among its own keys, say, which [`train`] leaves
/// out (d2l en §11.2, exercise 2). `model` and the tensors must live on an
/// autodiff device.
///
/// # Errors
/// [`RegressionError::Shape`] naming the argument whose shape does not
/// fit; [`RegressionError::Diverged`] when `w` stops being finite.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::nadaraya_watson::*;
///
/// let device = Device::flex().autodiff();
/// let data = Dataset::generate(20, 0, &device);
/// // Each point among its own keys: all 20 for every query.
/// let all = |t: &Tensor<1>| t.clone().unsqueeze::<2>().expand([20, 20]);
/// let (x, y) = (data.x_train, data.y_train);
/// let mut ws = Vec::new();
/// let model = NWKernelRegression::new(1.0, &device);
/// let data = (x.clone(), all(&x), all(&y));
/// train_on(model, data, y.clone(), 0.5, 3, |l| ws.push(l.w)).unwrap();
/// // A narrower window brings each point's own target closer: w grows.
/// assert!(ws[0] > 1.0 && ws[1] > ws[0] && ws[2] > ws[1], "{ws:?}");
/// // Keys for another number of queries are refused, by name.
/// let model = NWKernelRegression::new(1.0, &device);
/// let err = train_on(model, (x.clone(), all(&x).narrow(0, 0, 5), all(&y)), y, 0.5, 1, |_| ())
///     .unwrap_err();
/// assert_eq!(err.to_string(), "`keys` has shape [5, 20], expected (20, m)");
/// ```
pub fn train_on(
    mut model: NWKernelRegression,
    (queries, keys, values): (Tensor<1>, Tensor<2>, Tensor<2>),
    targets: Tensor<1>,
    lr: f64,
    epochs: usize,
    mut on_epoch: impl FnMut(&EpochLog),
) -> Result<NWKernelRegression, RegressionError> {
    use burn::optim::{GradientsParams, SgdConfig};
    check_rows(&queries, &keys, &values, &targets)?;
    let mut optimizer = SgdConfig::new().init();
    for epoch in 1..=epochs {
        // ANCHOR: train_step
        let (y_hat, _) =
            model.forward(queries.clone(), keys.clone(), values.clone());
        let loss = (y_hat - targets.clone()).powi_scalar(2).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        let grad = grads
            .get::<1>(model.w.id)
            .map_or(0.0, |g| g.into_scalar::<f32>());
        model = optimizer.step(lr, model, grads);
        // ANCHOR_END: train_step
        let log = EpochLog {
            epoch,
            loss: loss.into_scalar::<f32>(),
            grad,
            w: model.w(),
        };
        if !log.w.is_finite() {
            return Err(RegressionError::Diverged { epoch, w: log.w });
        }
        on_epoch(&log);
    }
    Ok(model)
}

/// Checks [`train_on`]'s shapes: queries (n,), keys and values (n, m),
/// targets (n,).
fn check_rows(
    queries: &Tensor<1>,
    keys: &Tensor<2>,
    values: &Tensor<2>,
    targets: &Tensor<1>,
) -> Result<(), RegressionError> {
    let [n] = queries.dims();
    let [_, m] = keys.dims();
    let fits = |arg, shape: Vec<usize>, expected: Vec<usize>, words: String| {
        if shape == expected {
            Ok(())
        } else {
            Err(RegressionError::Shape {
                arg,
                shape,
                expected: words,
            })
        }
    };
    fits(
        "keys",
        keys.dims().to_vec(),
        vec![n, m],
        format!("({n}, m)"),
    )?;
    fits(
        "values",
        values.dims().to_vec(),
        vec![n, m],
        format!("({n}, {m})"),
    )?;
    fits(
        "targets",
        targets.dims().to_vec(),
        vec![n],
        format!("({n},)"),
    )
}

/// The leave-one-out training loss Σ (ŷ − y)² of [`train`] at a given `w`,
/// without training: what the training minimises, as a function of `w`.
///
/// # Errors
/// As [`leave_one_out`].
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::nadaraya_watson::*;
///
/// let data = Dataset::generate(50, 0, &Device::flex());
/// let loss = |w| leave_one_out_loss(w, data.x_train.clone(), data.y_train.clone()).unwrap();
/// // w = 0 predicts each point by the mean of the other 49.
/// assert!(loss(0.0) > loss(3.0));
/// ```
pub fn leave_one_out_loss(
    w: f32,
    x_train: Tensor<1>,
    y_train: Tensor<1>,
) -> Result<f32, RegressionError> {
    let (keys, values) = leave_one_out(x_train.clone(), y_train.clone())?;
    let model = NWKernelRegression::new(w, &x_train.device());
    let (y_hat, _) = model.forward(x_train, keys, values);
    Ok((y_hat - y_train).powi_scalar(2).sum().into_scalar::<f32>())
}
