//! Training and prediction for encoder–decoder models (d2l zh §9.7, en
//! §10.7): the masked cross-entropy loss, gradient clipping by the global
//! norm, the training loop and greedy prediction, and saving a model.

mod predict;
mod train;

pub use predict::{Translation, predict_seq2seq, save_model};
pub use train::{Epoch, Step, TrainConfig, adam, train_batch, train_seq2seq};

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor, activation::log_softmax};

use crate::attention_scoring::{AttentionError, ValidLens};

/// Softmax cross-entropy that ignores padding (d2l zh §9.7.3,
/// `MaskedSoftmaxCELoss`): `pred` (batch_size, num_steps, vocab_size)
/// holds scores, `label` (batch_size, num_steps) the target indices, and
/// steps at or past `valid_len` (batch_size,) count 0.
///
/// Returns each sequence's loss (batch_size,): its summed token losses
/// divided by num_steps, as d2l does (not by the valid length).
///
/// # Errors
/// [`AttentionError`] when `valid_len` is not (batch_size,) or holds a
/// length outside 0..=num_steps.
///
/// # Panics
/// When `label` is not (batch_size, num_steps).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::seq2seq::masked_softmax_ce_loss;
///
/// let device = Device::flex();
/// // Uniform scores over 4 tokens: each valid step costs ln 4.
/// let pred = Tensor::<3>::zeros([2, 3, 4], &device);
/// let label = Tensor::<2, Int>::zeros([2, 3], &device);
/// let valid_len = Tensor::<1, Int>::from_ints([3, 1], &device);
/// let loss = masked_softmax_ce_loss(pred, label, valid_len).unwrap();
/// let loss = loss.try_into_vec_as::<f32>().unwrap();
/// let ln4 = 4f32.ln();
/// // Averaged over all 3 steps, padding included (d2l's rule).
/// assert!((loss[0] - ln4).abs() < 1e-6 && (loss[1] - ln4 / 3.0).abs() < 1e-6);
/// ```
// ANCHOR: masked_ce
pub fn masked_softmax_ce_loss(
    pred: Tensor<3>,
    label: Tensor<2, Int>,
    valid_len: Tensor<1, Int>,
) -> Result<Tensor<1>, AttentionError> {
    let [batch_size, num_steps, _] = pred.dims();
    let device = pred.device();
    let token_loss = log_softmax(pred, 2)
        .gather(2, label.unsqueeze_dim(2))
        .reshape([batch_size, num_steps])
        .neg();
    // The padding mask of masked_softmax, one row per sequence.
    let padding = ValidLens::from(valid_len)
        .mask(batch_size, 1, num_steps, &device)?
        .reshape([batch_size, num_steps]);
    Ok(token_loss
        .mask_fill(padding, 0.0)
        .mean_dim(1)
        .reshape([batch_size]))
}
// ANCHOR_END: masked_ce

// ANCHOR: grad_clipping_visitors
/// Adds up the squared entries of every parameter's gradient.
struct SquaredNorm<'a> {
    grads: &'a GradientsParams,
    total: Option<Tensor<1>>,
}

impl ModuleVisitor for SquaredNorm<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.get::<D>(param.id) {
            let squares = grad.square().sum();
            self.total = Some(match self.total.take() {
                Some(total) => total + squares,
                None => squares,
            });
        }
    }
}

/// Multiplies every parameter's gradient by `factor`.
struct Scale<'a> {
    grads: &'a mut GradientsParams,
    factor: f64,
}

impl ModuleVisitor for Scale<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.remove::<D>(param.id) {
            self.grads.register(param.id, grad * self.factor);
        }
    }
}

// ANCHOR_END: grad_clipping_visitors

/// Rescales `grads` so that their norm over **all** parameters of `model`
/// together is at most `theta` (d2l zh §8.5.5, `grad_clipping`; burn's
/// own clipping works per parameter). Returns the norm before clipping.
///
/// # Panics
/// When `theta` is not a positive number.
///
/// # Examples
/// ```
/// use burn::module::Module;
/// use burn::nn::LinearConfig;
/// use burn::optim::GradientsParams;
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::seq2seq::grad_clipping;
///
/// let device = Device::flex().autodiff();
/// let layer = LinearConfig::new(3, 2).init(&device);
/// let loss = layer.forward(Tensor::<2>::ones([4, 3], &device) * 100.0).sum();
/// let mut grads = GradientsParams::from_grads(loss.backward(), &layer);
/// let norm = grad_clipping(&layer, &mut grads, 1.0);
/// assert!(norm > 1.0);
/// // Clipped: the norm is now 1.
/// assert!((grad_clipping(&layer, &mut grads, 1.0) - 1.0).abs() < 1e-4);
/// ```
// ANCHOR: grad_clipping
pub fn grad_clipping<M: Module>(
    model: &M,
    grads: &mut GradientsParams,
    theta: f64,
) -> f64 {
    assert!(theta > 0.0, "`theta` must be positive, got {theta}");
    let mut squares = SquaredNorm { grads, total: None };
    model.visit(&mut squares);
    let norm = squares.total.map_or(0.0, |t| t.into_scalar::<f64>().sqrt());
    if norm > theta {
        model.visit(&mut Scale {
            grads,
            factor: theta / norm,
        });
    }
    norm
}
// ANCHOR_END: grad_clipping

/// Why training or translating could not go on.
///
/// # Examples
/// ```
/// use d2l_attention::seq2seq::{Seq2SeqError, TrainConfig};
///
/// let err = TrainConfig::new().with_lr(-1.0).check().unwrap_err();
/// assert!(matches!(err, Seq2SeqError::Invalid { arg: "lr", .. }));
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Seq2SeqError {
    /// An argument or setting is out of range.
    #[error("invalid `{arg}`: {reason}")]
    Invalid {
        /// The argument or setting.
        arg: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Training needs gradients.
    #[error(
        "`device` is {0:?}, not an autodiff device: pass `device.autodiff()` and a model made on it"
    )]
    NotAutodiff(Device),
    /// A batch did not fit the model.
    #[error(transparent)]
    Attention(#[from] AttentionError),
    /// The loss stopped being a number.
    #[error("the loss became {loss} in epoch {epoch}; lower the learning rate")]
    Diverged {
        /// The epoch (1-based).
        epoch: usize,
        /// The loss.
        loss: f64,
    },
}
