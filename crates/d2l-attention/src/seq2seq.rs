//! Training and prediction for encoder–decoder models (d2l zh §9.7, en
//! §10.7): the masked cross-entropy loss, gradient clipping by the global
//! norm, the training loop and greedy prediction, and saving a model.

use std::path::Path;
use std::time::Instant;

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::{AdamConfig, GradientsParams, ModuleOptimizer};
use burn::prelude::Config;
use burn::tensor::{Device, Int, Tensor, TensorData, activation::log_softmax};

use crate::attention_scoring::{AttentionError, ValidLens};
use crate::bahdanau::{Encoded, EncoderDecoder};
use crate::machine_translation::{Batch, NmtData, Vocab, truncate_pad};

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
pub fn grad_clipping<M: Module>(model: &M, grads: &mut GradientsParams, theta: f64) -> f64 {
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
            return invalid("lr", &format!("{} is not a positive number", self.lr));
        }
        if self.clip_norm.is_nan() || self.clip_norm <= 0.0 {
            return invalid("clip_norm", &format!("{} is not positive", self.clip_norm));
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
    let longest = |lens: &Tensor<1, Int>| lens.clone().max().into_scalar::<i64>() as usize;
    let tgt_len = longest(&batch.y_valid_len).clamp(1, num_steps);
    let src_len = match batch.x_valid_len.clone().min().into_scalar::<i64>() {
        0 => batch.x.dims()[1],
        _ => longest(&batch.x_valid_len),
    };
    // Teacher forcing: the decoder reads <bos> and the target without its last token.
    let bos = Tensor::<2, Int>::full([batch_size, 1], bos, &device);
    let dec_input = Tensor::cat(vec![bos, batch.y.clone().narrow(1, 0, tgt_len - 1)], 1);
    let encoded = model.encoder.forward(batch.x);
    let keys = Encoded {
        outputs: encoded.outputs.narrow(1, 0, src_len),
        state: encoded.state,
    };
    let state = model.decoder.init_state(keys, Some(batch.x_valid_len));
    let decoded = model.decoder.forward(dec_input, state)?;
    let num_tokens = batch.y_valid_len.clone().sum().into_scalar::<i64>() as usize;
    let label = batch.y.narrow(1, 0, tgt_len);
    // Rescaled so that each sequence's loss is still averaged over num_steps.
    let loss = masked_softmax_ce_loss(decoded.output, label, batch.y_valid_len)?.sum()
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

/// A translation and where the decoder looked while writing it.
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
/// use burn::module::Module;
/// use d2l_attention::seq2seq::predict_seq2seq;
///
/// let model = model.valid();
/// let device = Device::flex();
/// let t = predict_seq2seq(&model, "go .", &data.src_vocab, &data.tgt_vocab, 5, &device).unwrap();
/// // One row of weights per step written, over the 5 source positions.
/// assert_eq!(t.attention_weights.dims()[1], 5);
/// ```
#[derive(Clone, Debug)]
pub struct Translation {
    /// The predicted target tokens, space-separated, without `<eos>`.
    pub text: String,
    /// The attention weights of every decoding step, the one that wrote
    /// `<eos>` included, over the `num_steps` source positions:
    /// (num_predicted + 1, num_steps) when `<eos>` came in time.
    pub attention_weights: Tensor<2>,
}

/// Translates `src_sentence` greedily (d2l zh §9.7.5, `predict_seq2seq`):
/// the source is lowercased, split on spaces, ended with `<eos>` and
/// padded to `num_steps`; the decoder starts from `<bos>` and feeds each
/// most likely token back in until it writes `<eos>` or `num_steps` tokens.
///
/// `model` should be an inference copy (`model.valid()`) on `device`, so
/// that no dropout applies. A source longer than `num_steps - 1` tokens is
/// cut to `num_steps` with no `<eos>`.
///
/// # Errors
/// [`Seq2SeqError::Invalid`] when `num_steps` is 0 or a vocabulary is
/// larger than the model's (`src_vocab` than the encoder's embedding,
/// `tgt_vocab` than the decoder's output layer).
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
/// use burn::module::Module;
/// use d2l_attention::seq2seq::{TrainConfig, predict_seq2seq, train_seq2seq};
///
/// let config = TrainConfig::new().with_num_epochs(60).with_batch_size(4).with_lr(0.05);
/// let model = train_seq2seq(model, &data, &config, &device, |_| {}).unwrap().valid();
/// let device = Device::flex();
/// let t = predict_seq2seq(&model, "hi .", &data.src_vocab, &data.tgt_vocab, 5, &device).unwrap();
/// assert_eq!(t.text, "salut !");
/// ```
// ANCHOR: predict
pub fn predict_seq2seq(
    model: &EncoderDecoder,
    src_sentence: &str,
    src_vocab: &Vocab,
    tgt_vocab: &Vocab,
    num_steps: usize,
    device: &Device,
) -> Result<Translation, Seq2SeqError> {
    check_vocabs(model, src_vocab, tgt_vocab, num_steps)?;
    let lowercase = src_sentence.to_lowercase();
    let mut src_tokens: Vec<usize> = lowercase.split(' ').map(|t| src_vocab.index(t)).collect();
    src_tokens.push(src_vocab.index("<eos>"));
    let enc_valid_len = src_tokens.len().min(num_steps) as i64;
    let src_tokens = truncate_pad(&src_tokens, num_steps, src_vocab.index("<pad>"));
    let enc_x = Tensor::<2, Int>::from_data(
        TensorData::new(
            src_tokens.iter().map(|&i| i as i64).collect(),
            [1, num_steps],
        ),
        device,
    );
    let enc_valid_lens = Tensor::<1, Int>::from_ints([enc_valid_len], device);
    let encoded = model.encoder.forward(enc_x);
    let mut state = model.decoder.init_state(encoded, Some(enc_valid_lens));
    let mut dec_x = Tensor::<2, Int>::from_ints([[tgt_vocab.index("<bos>") as i64]], device);
    let (mut output, mut weights) = (Vec::new(), Vec::new());
    for _ in 0..num_steps {
        let decoded = model.decoder.forward(dec_x, state)?;
        state = decoded.state;
        weights.push(decoded.attention_weights.reshape([1, num_steps]));
        dec_x = decoded.output.argmax(2).reshape([1, 1]);
        let pred = dec_x.clone().into_scalar::<i64>() as usize;
        if pred == tgt_vocab.index("<eos>") {
            break;
        }
        output.push(tgt_vocab.token(pred));
    }
    Ok(Translation {
        text: output.join(" "),
        attention_weights: Tensor::cat(weights, 0),
    })
}
// ANCHOR_END: predict

fn check_vocabs(
    model: &EncoderDecoder,
    src_vocab: &Vocab,
    tgt_vocab: &Vocab,
    num_steps: usize,
) -> Result<(), Seq2SeqError> {
    let src_size = model.encoder.embedding.weight.dims()[0];
    let tgt_size = model.decoder.dense.weight.dims()[1];
    let invalid = |arg, reason| Err(Seq2SeqError::Invalid { arg, reason });
    if num_steps == 0 {
        return invalid("num_steps", "must be at least 1".into());
    }
    if src_vocab.len() > src_size {
        return invalid(
            "src_vocab",
            format!(
                "{} tokens, but the encoder embeds {src_size}",
                src_vocab.len()
            ),
        );
    }
    if tgt_vocab.len() > tgt_size {
        return invalid(
            "tgt_vocab",
            format!(
                "{} tokens, but the decoder scores {tgt_size}",
                tgt_vocab.len()
            ),
        );
    }
    Ok(())
}

/// Saves `model`'s parameters as a burnpack file at `path`, atomically
/// (the folder is created if needed).
///
/// # Errors
/// When the folder cannot be created or the file written.
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
/// use d2l_attention::seq2seq::save_model;
///
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("models").join("tiny.bpk");
/// save_model(&model, &path).unwrap();
/// assert!(std::fs::metadata(&path).unwrap().len() > 0);
/// // It loads back into a model of the same configuration.
/// use burn::module::Module;
/// assert!(model.try_load_file(&path).is_ok());
/// ```
pub fn save_model(model: &EncoderDecoder, path: &Path) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| anyhow::anyhow!("cannot create `{}`: {e}", dir.display()))?;
    }
    let bytes = model.clone().into_record().into_bytes()?;
    crate::files::write_atomic(path, &bytes)?;
    Ok(())
}
