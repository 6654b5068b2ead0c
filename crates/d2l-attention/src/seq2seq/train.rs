//! Training an encoder–decoder (d2l zh §9.7.4): settings, one step, and
//! the loop over epochs.

use std::time::Instant;

use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::prelude::Config;
use burn::tensor::{Device, Int, Tensor};

use super::*;
use crate::bahdanau::{Encoded, EncoderDecoder};
use crate::machine_translation::{Batch, NmtData};

/// The training settings of d2l zh §10.4.3.
///
/// # Examples
/// ```
/// use d2l_attention::seq2seq::TrainConfig;
///
/// // d2l's settings: lr 0.005, 250 epochs, batches of 64, clipping at 1.
/// let config = TrainConfig::new();
/// assert_eq!((config.lr, config.num_epochs, config.batch_size, config.clip_norm), (0.005, 250, 64, 1.0));
/// ```
#[derive(Config, Debug)]
pub struct TrainConfig {
    /// Adam's learning rate.
    #[config(default = 0.005)]
    pub lr: f64,
    /// Passes over the data.
    #[config(default = 250)]
    pub num_epochs: usize,
    /// Sentence pairs per mini-batch.
    #[config(default = 64)]
    pub batch_size: usize,
    /// The largest gradient norm (over all parameters) a step may take.
    #[config(default = 1.0)]
    pub clip_norm: f64,
    /// Seeds the order of the mini-batches.
    #[config(default = 0)]
    pub seed: u64,
}

impl TrainConfig {
    /// Checks that the settings can train.
    ///
    /// # Errors
    /// [`Seq2SeqError::Invalid`] naming a learning rate or clipping norm
    /// that is not a positive number, or a batch size or epoch count of 0.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::seq2seq::TrainConfig;
    ///
    /// assert!(TrainConfig::new().check().is_ok());
    /// let err = TrainConfig::new().with_batch_size(0).check().unwrap_err();
    /// assert!(err.to_string().contains("`batch_size`"));
    /// ```
    pub fn check(&self) -> Result<(), Seq2SeqError> {
        let invalid = |arg, reason: &str| {
            Err(Seq2SeqError::Invalid {
                arg,
                reason: reason.into(),
            })
        };
        if !(self.lr > 0.0 && self.lr.is_finite()) {
            return invalid(
                "lr",
                &format!("{} is not a positive number", self.lr),
            );
        }
        if self.clip_norm.is_nan() || self.clip_norm <= 0.0 {
            return invalid(
                "clip_norm",
                &format!("{} is not positive", self.clip_norm),
            );
        }
        if self.batch_size == 0 {
            return invalid("batch_size", "must be at least 1");
        }
        if self.num_epochs == 0 {
            return invalid("num_epochs", "must be at least 1");
        }
        Ok(())
    }
}

/// What one epoch of training did.
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::{EncoderDecoder, Seq2SeqConfig};
/// # use d2l_attention::machine_translation::NmtData;
/// // Four sentence pairs, sentences of at most 5 tokens, a small model.
/// let data = NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
/// let device = Device::flex().autodiff();
/// # let config = |v| Seq2SeqConfig::new(v, 4, 8, 1);
/// let model = EncoderDecoder {
///     encoder: config(data.src_vocab.len()).init_encoder(&device),
///     decoder: config(data.tgt_vocab.len()).init_decoder(&device),
/// };
/// use d2l_attention::seq2seq::{TrainConfig, train_seq2seq};
///
/// let mut epochs = Vec::new();
/// let config = TrainConfig::new().with_num_epochs(2).with_batch_size(2);
/// train_seq2seq(model, &data, &config, &device, |e| epochs.push(e)).unwrap();
/// assert_eq!(epochs.iter().map(|e| e.epoch).collect::<Vec<_>>(), [1, 2]);
/// assert!(epochs[1].tokens > epochs[0].tokens);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Epoch {
    /// The epoch (1-based).
    pub epoch: usize,
    /// d2l's loss metric: the summed sequence losses (see
    /// [`masked_softmax_ce_loss`]) divided by the number of valid target tokens.
    pub loss: f64,
    /// Valid target tokens seen so far.
    pub tokens: usize,
    /// Seconds of training so far.
    pub seconds: f64,
}

impl Epoch {
    /// Target tokens trained on per second.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::seq2seq::Epoch;
    ///
    /// let epoch = Epoch { epoch: 1, loss: 0.5, tokens: 1000, seconds: 2.0 };
    /// assert_eq!(epoch.tokens_per_sec(), 500.0);
    /// ```
    pub fn tokens_per_sec(&self) -> f64 {
        self.tokens as f64 / self.seconds
    }
}

/// Adam with torch's defaults (burn's ε is 1e-5, torch's 1e-8).
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::{EncoderDecoder, Seq2SeqConfig};
/// # use d2l_attention::machine_translation::NmtData;
/// // Four sentence pairs, sentences of at most 5 tokens, a small model.
/// let data = NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
/// let device = Device::flex().autodiff();
/// # let config = |v| Seq2SeqConfig::new(v, 4, 8, 1);
/// let model = EncoderDecoder {
///     encoder: config(data.src_vocab.len()).init_encoder(&device),
///     decoder: config(data.tgt_vocab.len()).init_decoder(&device),
/// };
/// use d2l_attention::seq2seq::{TrainConfig, adam, train_batch};
///
/// let mut optimizer = adam();
/// let batch = data.batches(4, 0, &device).remove(0);
/// let bos = data.tgt_vocab.index("<bos>") as i64;
/// let step = train_batch(model, &mut optimizer, batch, bos, &TrainConfig::new()).unwrap();
/// assert!(step.loss_sum > 0.0);
/// ```
pub fn adam() -> ModuleOptimizer {
    AdamConfig::new().with_epsilon(1e-8).init()
}

/// What one training step returns.
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::{EncoderDecoder, Seq2SeqConfig};
/// # use d2l_attention::machine_translation::NmtData;
/// // Four sentence pairs, sentences of at most 5 tokens, a small model.
/// let data = NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
/// let device = Device::flex().autodiff();
/// # let config = |v| Seq2SeqConfig::new(v, 4, 8, 1);
/// let model = EncoderDecoder {
///     encoder: config(data.src_vocab.len()).init_encoder(&device),
///     decoder: config(data.tgt_vocab.len()).init_decoder(&device),
/// };
/// use d2l_attention::seq2seq::{TrainConfig, adam, train_batch};
///
/// let batch = data.batches(4, 0, &device).remove(0);
/// let bos = data.tgt_vocab.index("<bos>") as i64;
/// let step = train_batch(model, &mut adam(), batch, bos, &TrainConfig::new()).unwrap();
/// // Four targets of 2 tokens plus <eos>.
/// assert_eq!(step.num_tokens, 12);
/// assert!(step.grad_norm > 0.0);
/// ```
pub struct Step {
    /// The model after the update.
    pub model: EncoderDecoder,
    /// The batch's summed sequence losses (see [`masked_softmax_ce_loss`]),
    /// before the update.
    pub loss_sum: f64,
    /// The batch's valid target tokens.
    pub num_tokens: usize,
    /// The gradients' global norm before clipping.
    pub grad_norm: f64,
}

/// One step of [`train_seq2seq`] on `batch`: teacher forcing from `bos`
/// (the index of `<bos>`), the summed masked loss, backward, clipping to a
/// global norm of `config.clip_norm`, and an `optimizer` update with
/// learning rate `config.lr`.
///
/// # Errors
/// [`Seq2SeqError::NotAutodiff`] when the batch is not on an autodiff
/// device; [`Seq2SeqError::Invalid`] for bad settings (see
/// [`TrainConfig::check`]) or targets without steps;
/// [`Seq2SeqError::Attention`] when the batch does not fit the model.
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::{EncoderDecoder, Seq2SeqConfig};
/// # use d2l_attention::machine_translation::NmtData;
/// // Four sentence pairs, sentences of at most 5 tokens, a small model.
/// let data = NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
/// let device = Device::flex().autodiff();
/// # let config = |v| Seq2SeqConfig::new(v, 4, 8, 1);
/// let model = EncoderDecoder {
///     encoder: config(data.src_vocab.len()).init_encoder(&device),
///     decoder: config(data.tgt_vocab.len()).init_decoder(&device),
/// };
/// use d2l_attention::seq2seq::{TrainConfig, adam, train_batch};
///
/// let mut optimizer = adam();
/// let bos = data.tgt_vocab.index("<bos>") as i64;
/// let batch = data.batches(4, 0, &device).remove(0);
/// let first = train_batch(model, &mut optimizer, batch.clone(), bos, &TrainConfig::new()).unwrap();
/// let second = train_batch(first.model, &mut optimizer, batch, bos, &TrainConfig::new()).unwrap();
/// // One Adam step on the same batch lowers its loss.
/// assert!(second.loss_sum < first.loss_sum);
/// ```
// ANCHOR: train_batch
pub fn train_batch(
    model: EncoderDecoder,
    optimizer: &mut ModuleOptimizer,
    batch: Batch,
    bos: i64,
    config: &TrainConfig,
) -> Result<Step, Seq2SeqError> {
    let [batch_size, num_steps] = batch.y.dims();
    let device = batch.y.device();
    check_training(config, &device, num_steps)?;
    // Skip padding where that changes nothing: target steps past the longest
    // target only add masked losses, and keys past the longest source get
    // weight 0 (unless a source is empty: its row is uniform over all keys).
    // The encoder still reads every step: its final state passes through the
    // padding, as in d2l.
    let longest = |lens: &Tensor<1, Int>| {
        lens.clone().max().into_scalar::<i64>() as usize
    };
    let tgt_len = longest(&batch.y_valid_len).clamp(1, num_steps);
    let src_len = match batch.x_valid_len.clone().min().into_scalar::<i64>() {
        0 => batch.x.dims()[1],
        _ => longest(&batch.x_valid_len),
    };
    // Teacher forcing: the decoder reads <bos> and the target without its last
    // token.
    let bos = Tensor::<2, Int>::full([batch_size, 1], bos, &device);
    let dec_input =
        Tensor::cat(vec![bos, batch.y.clone().narrow(1, 0, tgt_len - 1)], 1);
    let encoded = model.encoder.forward(batch.x);
    let keys = Encoded {
        outputs: encoded.outputs.narrow(1, 0, src_len),
        state: encoded.state,
    };
    let state = model.decoder.init_state(keys, Some(batch.x_valid_len));
    let decoded = model.decoder.forward(dec_input, state)?;
    let num_tokens =
        batch.y_valid_len.clone().sum().into_scalar::<i64>() as usize;
    let label = batch.y.narrow(1, 0, tgt_len);
    // Rescaled so that each sequence's loss is still averaged over num_steps.
    let loss =
        masked_softmax_ce_loss(decoded.output, label, batch.y_valid_len)?.sum()
            * (tgt_len as f64 / num_steps as f64);
    let loss_sum = loss.clone().into_scalar::<f64>();
    let mut grads = GradientsParams::from_grads(loss.backward(), &model);
    let grad_norm = grad_clipping(&model, &mut grads, config.clip_norm);
    let model = optimizer.step(config.lr, model, grads);
    Ok(Step {
        model,
        loss_sum,
        num_tokens,
        grad_norm,
    })
}
// ANCHOR_END: train_batch

/// The checks of [`train_batch`], before anything is computed.
fn check_training(
    config: &TrainConfig,
    device: &Device,
    num_steps: usize,
) -> Result<(), Seq2SeqError> {
    config.check()?;
    if !device.is_autodiff() {
        return Err(Seq2SeqError::NotAutodiff(device.clone()));
    }
    if num_steps == 0 {
        return Err(Seq2SeqError::Invalid {
            arg: "batch.y",
            reason: "the targets have no steps".into(),
        });
    }
    Ok(())
}

/// Trains `model` on `data` as d2l's `train_seq2seq` (zh §9.7.4): teacher
/// forcing (the decoder reads `<bos>` and the target shifted right),
/// [`masked_softmax_ce_loss`] summed over the batch, Adam (ε = 1e-8, as
/// torch), gradients clipped to a global norm of `clip_norm`.
/// `on_epoch` sees every epoch's [`Epoch`] as it ends.
///
/// `model` must live on `device`, an autodiff device.
///
/// # Errors
/// As [`train_batch`], and [`Seq2SeqError::Diverged`] when the loss is no
/// longer finite.
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::{EncoderDecoder, Seq2SeqConfig};
/// # use d2l_attention::machine_translation::NmtData;
/// // Four sentence pairs, sentences of at most 5 tokens, a small model.
/// let data = NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
/// let device = Device::flex().autodiff();
/// # let config = |v| Seq2SeqConfig::new(v, 4, 8, 1);
/// let model = EncoderDecoder {
///     encoder: config(data.src_vocab.len()).init_encoder(&device),
///     decoder: config(data.tgt_vocab.len()).init_decoder(&device),
/// };
/// use d2l_attention::seq2seq::{TrainConfig, train_seq2seq};
///
/// let mut losses = Vec::new();
/// let config = TrainConfig::new().with_num_epochs(20).with_batch_size(4).with_lr(0.05);
/// train_seq2seq(model, &data, &config, &device, |e| losses.push(e.loss)).unwrap();
/// assert!(losses[19] < losses[0] / 2.0, "{losses:?}");
/// ```
// ANCHOR: train_seq2seq
pub fn train_seq2seq(
    mut model: EncoderDecoder,
    data: &NmtData,
    config: &TrainConfig,
    device: &Device,
    mut on_epoch: impl FnMut(Epoch),
) -> Result<EncoderDecoder, Seq2SeqError> {
    check_training(config, device, 1)?;
    let mut optimizer = adam();
    let bos = data.tgt_vocab.index("<bos>") as i64;
    let (start, mut tokens) = (Instant::now(), 0);
    for epoch in 1..=config.num_epochs {
        let (mut loss_sum, mut epoch_tokens) = (0.0, 0);
        let seed = config.seed.wrapping_add(epoch as u64);
        for batch in data.batches(config.batch_size, seed, device) {
            let step = train_batch(model, &mut optimizer, batch, bos, config)?;
            model = step.model;
            loss_sum += step.loss_sum;
            epoch_tokens += step.num_tokens;
        }
        tokens += epoch_tokens;
        let loss = loss_sum / epoch_tokens as f64;
        if !loss.is_finite() {
            return Err(Seq2SeqError::Diverged { epoch, loss });
        }
        let seconds = start.elapsed().as_secs_f64();
        on_epoch(Epoch {
            epoch,
            loss,
            tokens,
            seconds,
        });
    }
    Ok(model)
}
// ANCHOR_END: train_seq2seq
