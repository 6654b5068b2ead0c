//! Training an encoder–decoder (d2l zh §9.7.4): settings, one step, and
//! the loop over epochs.

use std::time::{Duration, Instant};

use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::prelude::Config;
use burn::tensor::{Device, Int, Tensor};

use super::*;
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
/// // Adam with torch's ε (burn's default is 1e-5).
/// assert!(format!("{:?}", config.optimizer).contains("epsilon: 1e-8"));
/// ```
#[derive(Config, Debug)]
pub struct TrainConfig {
    /// The optimiser: Adam with torch's defaults (burn's ε is 1e-5,
    /// torch's 1e-8).
    #[config(default = "AdamConfig::new().with_epsilon(1e-8)")]
    pub optimizer: AdamConfig,
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
/// # use d2l_attention::bahdanau::Seq2SeqConfig;
/// # use d2l_attention::machine_translation::NmtData;
/// // Four sentence pairs, sentences of at most 5 tokens, a small model.
/// let data = NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
/// let device = Device::flex().autodiff();
/// let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
/// let model = Seq2SeqConfig::new(src, tgt, 4, 8, 1).init(&device);
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
    /// Seconds of training so far (validation excluded).
    pub seconds: f64,
    /// The loss on the validation data, with no dropout (see
    /// [`evaluate_loss`]), when training was given some
    /// ([`train_seq2seq_with_validation`]).
    pub valid_loss: Option<f64>,
}

impl Epoch {
    /// Target tokens trained on per second.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::seq2seq::Epoch;
    ///
    /// let epoch = Epoch { epoch: 1, loss: 0.5, tokens: 1000, seconds: 2.0, valid_loss: None };
    /// assert_eq!(epoch.tokens_per_sec(), 500.0);
    /// ```
    pub fn tokens_per_sec(&self) -> f64 {
        self.tokens as f64 / self.seconds
    }
}

/// What one training step returns.
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::Seq2SeqConfig;
/// # use d2l_attention::machine_translation::NmtData;
/// // Four sentence pairs, sentences of at most 5 tokens, a small model.
/// let data = NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
/// let device = Device::flex().autodiff();
/// let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
/// let model = Seq2SeqConfig::new(src, tgt, 4, 8, 1).init(&device);
/// use d2l_attention::seq2seq::{TrainConfig, train_batch};
///
/// let batch = data.batches(4, 0, &device).remove(0);
/// let bos = data.tgt_vocab.index("<bos>") as i64;
/// let mut optimizer = TrainConfig::new().optimizer.init();
/// let step = train_batch(model, &mut optimizer, batch, bos, &TrainConfig::new()).unwrap();
/// // Four targets of 2 tokens plus <eos>.
/// assert_eq!(step.num_tokens, 12);
/// assert!(step.grad_norm.unwrap().into_scalar::<f32>() > 0.0);
/// ```
pub struct Step<M> {
    /// The model after the update.
    pub model: M,
    /// The batch's summed sequence losses (see [`masked_softmax_ce_loss`]),
    /// before the update, (1,), detached, still on the device.
    pub loss_sum: Tensor<1>,
    /// The batch's valid target tokens.
    pub num_tokens: usize,
    /// The gradients' global norm before clipping, (1,), on the device.
    pub grad_norm: Option<Tensor<1>>,
}

/// One step of [`train_seq2seq`] on `batch`: teacher forcing from `bos`
/// (the index of `<bos>`), the summed masked loss, backward, clipping to a
/// global norm of `config.clip_norm`, and an `optimizer` update with
/// learning rate `config.lr`.
///
/// Nothing is read back from the device: the loss and the norm stay
/// there, and the lengths come from the batch's host copy.
///
/// # Errors
/// [`Seq2SeqError::NotAutodiff`] when the batch is not on an autodiff
/// device; [`Seq2SeqError::Invalid`] for bad settings (see
/// [`TrainConfig::check`]) or targets without steps.
///
/// # Panics
/// When the batch does not fit the model (see [`EncoderDecoder::forward`]).
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::Seq2SeqConfig;
/// # use d2l_attention::machine_translation::NmtData;
/// // Four sentence pairs, sentences of at most 5 tokens, a small model.
/// let data = NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
/// let device = Device::flex().autodiff();
/// let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
/// let model = Seq2SeqConfig::new(src, tgt, 4, 8, 1).init(&device);
/// use d2l_attention::seq2seq::{TrainConfig, train_batch};
///
/// let mut optimizer = TrainConfig::new().optimizer.init();
/// let bos = data.tgt_vocab.index("<bos>") as i64;
/// let batch = data.batches(4, 0, &device).remove(0);
/// let first = train_batch(model, &mut optimizer, batch.clone(), bos, &TrainConfig::new()).unwrap();
/// let first_loss = first.loss_sum.into_scalar::<f32>();
/// let second = train_batch(first.model, &mut optimizer, batch, bos, &TrainConfig::new()).unwrap();
/// // One Adam step on the same batch lowers its loss.
/// assert!(second.loss_sum.into_scalar::<f32>() < first_loss);
/// ```
// ANCHOR: train_batch
pub fn train_batch<E: Encoder, D: Decoder<E::Output>>(
    model: EncoderDecoder<E, D>,
    optimizer: &mut ModuleOptimizer,
    batch: Batch,
    bos: i64,
    config: &TrainConfig,
) -> Result<Step<EncoderDecoder<E, D>>, Seq2SeqError> {
    check_training(config, &batch.y.device(), batch.y.dims()[1])?;
    let num_tokens = batch.y_valid_len.lens().iter().sum();
    let loss = batch_loss(&model, batch, bos);
    let mut grads = GradientsParams::from_grads(loss.backward(), &model);
    let grad_norm = grad_clipping(&model, &mut grads, config.clip_norm);
    Ok(Step {
        model: optimizer.step(config.lr, model, grads),
        loss_sum: loss.detach(),
        num_tokens,
        grad_norm,
    })
}
// ANCHOR_END: train_batch

/// The summed sequence losses of `batch` under teacher forcing from `bos`,
/// (1,), on the device.
fn batch_loss<E: Encoder, D: Decoder<E::Output>>(
    model: &EncoderDecoder<E, D>,
    batch: Batch,
    bos: i64,
) -> Tensor<1> {
    let [batch_size, num_steps] = batch.y.dims();
    let device = batch.y.device();
    // Target steps past the longest target add only masked losses. A decoder
    // whose step t reads steps up to t only (d2l's RNNs, and the
    // Transformer's masked self-attention) gives the kept steps unchanged.
    let tgt_len = batch.y_valid_len.max().clamp(1, num_steps);
    // Teacher forcing: the decoder reads <bos> and the target without its last
    // token.
    let bos = Tensor::<2, Int>::full([batch_size, 1], bos, &device);
    let dec_input =
        Tensor::cat(vec![bos, batch.y.clone().narrow(1, 0, tgt_len - 1)], 1);
    let decoded = model.forward(batch.x, dec_input, Some(batch.x_valid_len));
    let label = batch.y.narrow(1, 0, tgt_len);
    // Rescaled so that each sequence's loss is still averaged over num_steps.
    masked_softmax_ce_loss(decoded.output, label, &batch.y_valid_len).sum()
        * (tgt_len as f64 / num_steps as f64)
}

/// d2l's loss metric (summed sequence losses over valid target tokens) of
/// `model` on `data` under teacher forcing, in batches of `batch_size`.
/// The decoder's causal mask applies as in training. One read from the
/// device.
///
/// Like [`predict_seq2seq`], it always runs the inference copy
/// `model.valid()` (no dropout) on the plain form of `device`, whatever mode
/// `model` was left in; `device` is where `model` lives, plain or autodiff.
///
/// # Panics
/// When `batch_size` is 0, `model` does not live on `device`, or the data
/// does not fit the model.
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::Seq2SeqConfig;
/// # use d2l_attention::machine_translation::NmtData;
/// use d2l_attention::seq2seq::evaluate_loss;
///
/// let data = NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
/// let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
/// let device = Device::flex().autodiff();
/// let model = Seq2SeqConfig::new(src, tgt, 4, 8, 1).with_dropout(0.5).init(&device);
/// // Untrained: about ln(7), the cross-entropy of uniform scores over 7
/// // tokens, divided by num_steps = 5 as d2l's metric divides it. The
/// // initial weights are random (merged doc-tests share the generator);
/// // over 300 seeded initialisations the gap stayed below 0.14.
/// let loss = evaluate_loss(&model, &data, 2, &device);
/// assert!((loss - 7f64.ln() / 5.0).abs() < 0.2, "{loss}");
/// // No dropout: the same loss every time, though the model is in training mode.
/// assert_eq!(evaluate_loss(&model, &data, 2, &device), loss);
/// ```
pub fn evaluate_loss<E: Encoder, D: Decoder<E::Output>>(
    model: &EncoderDecoder<E, D>,
    data: &NmtData,
    batch_size: usize,
    device: &Device,
) -> f64 {
    if let Err(err) = super::predict::check_device(model, device) {
        panic!("{err}");
    }
    let (model, device) = (model.valid(), &device.clone().inner());
    let bos = data.tgt_vocab.index("<bos>") as i64;
    let (mut sums, mut tokens) = (Vec::new(), 0);
    for batch in data.batches(batch_size, 0, device) {
        tokens += batch.y_valid_len.lens().iter().sum::<usize>();
        sums.push(batch_loss(&model, batch, bos));
    }
    Tensor::cat(sums, 0).sum().into_scalar::<f64>() / tokens as f64
}

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
/// [`masked_softmax_ce_loss`] summed over the batch, `config.optimizer`
/// (Adam with ε = 1e-8, as torch), gradients clipped to a global norm of
/// `clip_norm`. `on_epoch` sees every epoch's [`Epoch`] as it ends; the
/// loss is read back from the device once per epoch, for it.
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
/// # use d2l_attention::bahdanau::Seq2SeqConfig;
/// # use d2l_attention::machine_translation::NmtData;
/// // Four sentence pairs, sentences of at most 5 tokens, a small model.
/// let data = NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
/// let device = Device::flex().autodiff();
/// let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
/// let model = Seq2SeqConfig::new(src, tgt, 4, 8, 1).init(&device);
/// use d2l_attention::seq2seq::{TrainConfig, train_seq2seq};
///
/// let mut losses = Vec::new();
/// let config = TrainConfig::new().with_num_epochs(20).with_batch_size(4).with_lr(0.05);
/// train_seq2seq(model, &data, &config, &device, |e| losses.push(e.loss)).unwrap();
/// assert!(losses[19] < losses[0] / 2.0, "{losses:?}");
/// ```
pub fn train_seq2seq<E: Encoder, D: Decoder<E::Output>>(
    model: EncoderDecoder<E, D>,
    data: &NmtData,
    config: &TrainConfig,
    device: &Device,
    on_epoch: impl FnMut(Epoch),
) -> Result<EncoderDecoder<E, D>, Seq2SeqError> {
    train(model, data, None, config, device, on_epoch)
}

/// [`train_seq2seq`], and after each epoch the loss on `valid` (see
/// [`evaluate_loss`]: no dropout, the causal mask as in training) in
/// [`Epoch::valid_loss`]. Validation time is not counted in
/// [`Epoch::seconds`].
///
/// # Errors
/// As [`train_seq2seq`].
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::Seq2SeqConfig;
/// # use d2l_attention::machine_translation::NmtData;
/// use d2l_attention::seq2seq::{TrainConfig, train_seq2seq_with_validation};
///
/// let data = NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
/// let device = Device::flex().autodiff();
/// let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
/// let model = Seq2SeqConfig::new(src, tgt, 4, 8, 1).init(&device);
/// let config = TrainConfig::new().with_num_epochs(20).with_batch_size(4).with_lr(0.05);
/// let mut valid = Vec::new();
/// train_seq2seq_with_validation(model, &data, &data, &config, &device, |e| {
///     valid.push(e.valid_loss.unwrap())
/// })
/// .unwrap();
/// assert!(valid[19] < valid[0] / 2.0, "{valid:?}");
/// ```
pub fn train_seq2seq_with_validation<E: Encoder, D: Decoder<E::Output>>(
    model: EncoderDecoder<E, D>,
    data: &NmtData,
    valid: &NmtData,
    config: &TrainConfig,
    device: &Device,
    on_epoch: impl FnMut(Epoch),
) -> Result<EncoderDecoder<E, D>, Seq2SeqError> {
    train(model, data, Some(valid), config, device, on_epoch)
}

// ANCHOR: train_seq2seq
fn train<E: Encoder, D: Decoder<E::Output>>(
    mut model: EncoderDecoder<E, D>,
    data: &NmtData,
    valid: Option<&NmtData>,
    config: &TrainConfig,
    device: &Device,
    mut on_epoch: impl FnMut(Epoch),
) -> Result<EncoderDecoder<E, D>, Seq2SeqError> {
    check_training(config, device, 1)?;
    let mut optimizer = config.optimizer.init();
    let bos = data.tgt_vocab.index("<bos>") as i64;
    let (mut start, mut tokens) = (Instant::now(), 0);
    for epoch in 1..=config.num_epochs {
        let (mut loss_sum, mut epoch_tokens) = (Vec::new(), 0);
        let seed = config.seed.wrapping_add(epoch as u64);
        for batch in data.batches(config.batch_size, seed, device) {
            let step = train_batch(model, &mut optimizer, batch, bos, config)?;
            model = step.model;
            loss_sum.push(step.loss_sum);
            epoch_tokens += step.num_tokens;
        }
        tokens += epoch_tokens;
        let loss_sum = Tensor::cat(loss_sum, 0).sum().into_scalar::<f64>();
        let loss = loss_sum / epoch_tokens as f64;
        if !loss.is_finite() {
            return Err(Seq2SeqError::Diverged { epoch, loss });
        }
        let seconds = start.elapsed().as_secs_f64();
        let valid_loss = valid.map(|valid| {
            evaluate_loss(&model, valid, config.batch_size, device)
        });
        on_epoch(Epoch {
            epoch,
            loss,
            tokens,
            seconds,
            valid_loss,
        });
        // Validation time is not training time.
        start += start.elapsed() - Duration::from_secs_f64(seconds);
    }
    Ok(model)
}
// ANCHOR_END: train_seq2seq
