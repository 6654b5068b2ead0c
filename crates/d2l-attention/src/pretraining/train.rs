//! Pretraining a language model: the loop over epochs, and the loss on
//! held-out sentences.

use std::time::{Duration, Instant};

use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor};

use super::batch::LmBatch;
use super::batch::lm_loss;
use super::data::LmData;
use super::models::{LanguageModel, Scores};
use crate::seq2seq::predict::check_device;
use crate::seq2seq::{Seq2SeqError, TrainConfig, grad_clipping};

/// What one epoch of [`pretrain`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LmEpoch {
    /// The epoch (1-based).
    pub epoch: usize,
    /// The mean cross-entropy per predicted token over the epoch's batches
    /// (as the model was when it met each batch), in nats.
    pub loss: f64,
    /// The same on the validation sentences after the epoch, without
    /// dropout ([`lm_valid_loss`]).
    pub valid_loss: f64,
    /// Tokens predicted so far (labels that count).
    pub tokens: usize,
    /// Seconds of training so far (validation excluded).
    pub seconds: f64,
}

impl LmEpoch {
    /// Predicted tokens per second of training.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::pretraining::LmEpoch;
    ///
    /// let e = LmEpoch { epoch: 1, loss: 2.0, valid_loss: 2.5, tokens: 900, seconds: 3.0 };
    /// assert_eq!(e.tokens_per_sec(), 300.0);
    /// ```
    pub fn tokens_per_sec(&self) -> f64 {
        self.tokens as f64 / self.seconds
    }
}

/// Trains `model` (on `device`, an autodiff device) on `data.train` with
/// its objective ([`LanguageModel::batches`], new batches in every epoch
/// from `config.seed` + epoch): the summed cross-entropy of the labels
/// ([`lm_loss`]), Adam (`config.optimizer`, `config.lr`), gradients
/// clipped to a global norm of `config.clip_norm`, as
/// [`train_seq2seq`](crate::seq2seq::train_seq2seq) trains. After each
/// epoch `on_epoch` sees an [`LmEpoch`] with the loss on `data.valid`.
///
/// # Errors
/// [`Seq2SeqError::Invalid`] for settings that cannot train (see
/// [`TrainConfig::check`]) or no training or validation sentences;
/// [`Seq2SeqError::NotAutodiff`]; [`Seq2SeqError::Diverged`].
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::pretraining::*;
/// use d2l_attention::seq2seq::TrainConfig;
/// use d2l_attention::transformer::TransformerConfig;
///
/// let text: Vec<Vec<String>> = (0..40)
///     .map(|i| format!("i see {} cats .", i % 4).split(' ').map(String::from).collect())
///     .collect();
/// let data = LmData::from_sentences(text, 0.1, 1, 0);
/// let v = data.vocab.len();
/// let device = Device::flex().autodiff();
/// let model = CausalLm::new(&TransformerConfig::new(v, v).with_dropout(0.0), &device);
/// let config = TrainConfig::new().with_num_epochs(8).with_batch_size(8).with_lr(0.01);
/// let mut epochs = Vec::new();
/// pretrain(model, &data, &config, &device, |e| epochs.push(e)).unwrap();
/// // Only the number is hard to guess: the loss falls well below ln(v).
/// assert!(epochs[7].valid_loss < 0.6 * (v as f64).ln(), "{epochs:?}");
/// ```
pub fn pretrain<M: LanguageModel>(
    model: M,
    data: &LmData,
    config: &TrainConfig,
    device: &Device,
    on_epoch: impl FnMut(LmEpoch),
) -> Result<M, Seq2SeqError> {
    check(config, data, device)?;
    let (vocab_len, batch_size) = (data.vocab.len(), config.batch_size);
    let train = |seed, device: &Device| {
        M::batches(&data.train, vocab_len, batch_size, seed, device)
    };
    let valid = |device: &Device| {
        M::batches(&data.valid, vocab_len, batch_size, 0, device)
    };
    train_loop(model, train, valid, config, device, on_epoch)
}

/// The loop of [`pretrain`] and [`fine_tune`](super::fine_tune): each
/// epoch trains on `train(config.seed + epoch, device)`, then measures the
/// mean loss of the inference copy on `valid(device.inner())`.
pub(super) fn train_loop<M: Scores>(
    mut model: M,
    train: impl Fn(u64, &Device) -> Vec<LmBatch>,
    valid: impl Fn(&Device) -> Vec<LmBatch>,
    config: &TrainConfig,
    device: &Device,
    mut on_epoch: impl FnMut(LmEpoch),
) -> Result<M, Seq2SeqError> {
    config.check()?;
    if !device.is_autodiff() {
        return Err(Seq2SeqError::NotAutodiff(device.clone()));
    }
    let mut optimizer = config.optimizer.init();
    let (mut start, mut tokens) = (Instant::now(), 0);
    for epoch in 1..=config.num_epochs {
        let seed = config.seed.wrapping_add(epoch as u64);
        let (mut sums, mut epoch_tokens) = (Vec::new(), 0);
        for batch in train(seed, device) {
            let loss = lm_loss(model.logits(&batch), &batch);
            let mut grads =
                GradientsParams::from_grads(loss.backward(), &model);
            grad_clipping(&model, &mut grads, config.clip_norm);
            model = optimizer.step(config.lr, model, grads);
            sums.push(loss.detach());
            epoch_tokens += batch.num_preds;
        }
        tokens += epoch_tokens;
        let sum = Tensor::cat(sums, 0).sum().into_scalar::<f64>();
        let loss = sum / epoch_tokens as f64;
        if !loss.is_finite() {
            return Err(Seq2SeqError::Diverged { epoch, loss });
        }
        let seconds = start.elapsed().as_secs_f64();
        let inner = device.clone().inner();
        let valid_loss = mean_loss(&model.valid(), valid(&inner));
        on_epoch(LmEpoch {
            epoch,
            loss,
            valid_loss,
            tokens,
            seconds,
        });
        // Validation time is not training time.
        start += start.elapsed() - Duration::from_secs_f64(seconds);
    }
    Ok(model)
}

/// The mean loss per counted label of `model` over `batches`; one read.
fn mean_loss<M: Scores>(model: &M, batches: Vec<LmBatch>) -> f64 {
    let (mut sums, mut count) = (Vec::new(), 0);
    for batch in batches {
        count += batch.num_preds;
        sums.push(lm_loss(model.logits(&batch), &batch));
    }
    Tensor::cat(sums, 0).sum().into_scalar::<f64>() / count as f64
}

fn check(
    config: &TrainConfig,
    data: &LmData,
    device: &Device,
) -> Result<(), Seq2SeqError> {
    config.check()?;
    if !device.is_autodiff() {
        return Err(Seq2SeqError::NotAutodiff(device.clone()));
    }
    if data.train.is_empty() || data.valid.is_empty() {
        return Err(Seq2SeqError::Invalid {
            arg: "data",
            reason: "it holds no training or no validation sentence".into(),
        });
    }
    Ok(())
}

/// The mean cross-entropy per predicted token of `model` on
/// `data.valid`, in batches of `batch_size` (a masked model's masks drawn
/// from seed 0, the same in every call). Runs the inference copy
/// `model.valid()` (no dropout) on `device.inner()`, whatever mode `model`
/// is in; `device` is where `model` lives. One read from the device.
///
/// # Panics
/// When `model` does not live on `device`, `batch_size` is 0 or there are
/// no validation sentences.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::pretraining::*;
/// use d2l_attention::transformer::TransformerConfig;
///
/// let text: Vec<Vec<String>> = (0..20)
///     .map(|i| format!("w{} w{} .", i % 5, i % 3).split(' ').map(String::from).collect())
///     .collect();
/// let data = LmData::from_sentences(text, 0.25, 1, 0);
/// let v = data.vocab.len();
/// let device = Device::flex();
/// let model = MaskedLm::new(&TransformerConfig::new(v, v).with_dropout(0.5), &device);
/// // Dropout off and fixed masks: the same loss every time.
/// let loss = lm_valid_loss(&model, &data, 4, &device);
/// assert_eq!(lm_valid_loss(&model, &data, 4, &device), loss);
/// ```
pub fn lm_valid_loss<M: LanguageModel>(
    model: &M,
    data: &LmData,
    batch_size: usize,
    device: &Device,
) -> f64 {
    if let Err(err) = check_device(model, device) {
        panic!("{err}");
    }
    assert!(batch_size > 0, "`batch_size` must be at least 1");
    assert!(!data.valid.is_empty(), "`data.valid` holds no sentence");
    let (model, device) = (model.valid(), &device.clone().inner());
    let batches =
        M::batches(&data.valid, data.vocab.len(), batch_size, 0, device);
    mean_loss(&model, batches)
}
