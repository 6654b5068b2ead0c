//! Training and prediction for any encoder–decoder model (d2l zh §9.6–9.7,
//! en §10.6–10.7): the [`Encoder`] and [`Decoder`] interface, the masked
//! cross-entropy loss, gradient clipping by the global norm, the training
//! loop, greedy prediction, and saving and loading a model.

mod figures;
mod model;
mod model_file;
pub(crate) mod predict;
mod train;

pub use figures::{AttentionFigure, attention_figures};
pub use model::{
    AttentionKind, AttentionMap, Decoded, Decoder, Encoder, EncoderDecoder,
};
#[cfg(feature = "native")]
pub use model_file::save_model;
pub use model_file::{
    ModelFileError, ModelInfo, VocabId, load_model, model_from_bytes,
    read_model_info,
};
pub use predict::{Translation, predict_seq2seq};
pub use train::{
    Epoch, Step, TrainConfig, evaluate_loss, train_batch, train_seq2seq,
    train_seq2seq_with_validation,
};

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor};

use crate::kernels::log_softmax;

use crate::attention_scoring::ValidLens;

/// Softmax cross-entropy that ignores padding (d2l zh §9.7.3,
/// `MaskedSoftmaxCELoss`): `pred` (batch_size, num_steps, vocab_size)
/// holds scores, `label` (batch_size, num_steps) the target indices, and
/// steps at or past `valid_len` (batch_size,) count 0.
///
/// Returns each sequence's loss (batch_size,): its summed token losses
/// divided by num_steps, as d2l does (not by the valid length).
///
/// # Panics
/// When `label` is not (batch_size, num_steps), or `valid_len` is not
/// (batch_size,) or holds a length past num_steps.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::attention_scoring::ValidLens;
/// use d2l_attention::seq2seq::masked_softmax_ce_loss;
///
/// let device = Device::flex();
/// // Uniform scores over 4 tokens: each valid step costs ln 4.
/// let pred = Tensor::<3>::zeros([2, 3, 4], &device);
/// let label = Tensor::<2, Int>::zeros([2, 3], &device);
/// let valid_len = ValidLens::new(&[3, 1], &device);
/// let loss = masked_softmax_ce_loss(pred, label, &valid_len);
/// let loss = loss.try_into_vec_as::<f32>().unwrap();
/// let ln4 = 4f32.ln();
/// // Averaged over all 3 steps, padding included (d2l's rule).
/// assert!((loss[0] - ln4).abs() < 1e-6 && (loss[1] - ln4 / 3.0).abs() < 1e-6);
/// ```
// ANCHOR: masked_ce
pub fn masked_softmax_ce_loss(
    pred: Tensor<3>,
    label: Tensor<2, Int>,
    valid_len: &ValidLens,
) -> Tensor<1> {
    let [batch_size, num_steps, _] = pred.dims();
    let dims = label.dims();
    assert!(
        dims == [batch_size, num_steps],
        "`label` has shape {dims:?}, expected (batch_size, num_steps) of `pred`"
    );
    let token_loss = log_softmax(pred)
        .gather(2, label.unsqueeze_dim(2))
        .reshape([batch_size, num_steps])
        .neg();
    // The padding mask of masked_softmax, one row per sequence.
    let padding = valid_len
        .mask(batch_size, 1, num_steps)
        .reshape([batch_size, num_steps]);
    token_loss
        .mask_fill(padding, 0.0)
        .mean_dim(1)
        .reshape([batch_size])
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

/// Multiplies every parameter's gradient by `factor`, a tensor of one
/// element.
struct Scale<'a> {
    grads: &'a mut GradientsParams,
    factor: Tensor<1>,
}

impl ModuleVisitor for Scale<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        if let Some(grad) = self.grads.remove::<D>(param.id) {
            let factor = self.factor.clone().reshape([1; D]);
            self.grads.register(param.id, grad * factor);
        }
    }
}

// ANCHOR_END: grad_clipping_visitors

/// Rescales `grads` so that their norm over **all** parameters of `model`
/// together is at most `theta` (d2l zh §8.5.5, `grad_clipping`; burn's
/// own clipping works per parameter). Returns the norm before clipping,
/// (1,), or `None` when no parameter has a gradient.
///
/// Everything stays on the device: the factor min(1, θ / norm) is a
/// tensor, so clipping never waits for a value to come back to the host.
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
/// let norm = grad_clipping(&layer, &mut grads, 1.0).unwrap();
/// assert!(norm.into_scalar::<f32>() > 1.0);
/// // Clipped: the norm is now 1.
/// let norm = grad_clipping(&layer, &mut grads, 1.0).unwrap();
/// assert!((norm.into_scalar::<f32>() - 1.0).abs() < 1e-4);
/// ```
// ANCHOR: grad_clipping
pub fn grad_clipping<M: Module>(
    model: &M,
    grads: &mut GradientsParams,
    theta: f64,
) -> Option<Tensor<1>> {
    assert!(theta > 0.0, "`theta` must be positive, got {theta}");
    let mut squares = SquaredNorm { grads, total: None };
    model.visit(&mut squares);
    let norm = squares.total?.sqrt();
    // θ / norm where that is below 1, else 1 (also when the norm is 0)
    let factor = (norm.clone().recip() * theta).clamp_max(1.0);
    model.visit(&mut Scale { grads, factor });
    Some(norm)
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
    /// The loss stopped being a number.
    #[error("the loss became {loss} in epoch {epoch}; lower the learning rate")]
    Diverged {
        /// The epoch (1-based).
        epoch: usize,
        /// The loss.
        loss: f64,
    },
}
