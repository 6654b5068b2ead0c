//! Fine-tuning: a sentence classifier on an encoder's `<cls>` output,
//! started from a pretrained [`MaskedLm`] or from random weights.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Int, Tensor};

use super::batch::{LmBatch, lens, padded};
use super::data::{CLS, EOS, PAD};
use super::models::{MaskedLm, Scores};
use super::train::{LmEpoch, train_loop};
use crate::attention_scoring::ValidLens;
use crate::seq2seq::predict::check_device;
use crate::seq2seq::{Encoder, Seq2SeqError, TrainConfig};
use crate::transformer::{TransformerConfig, TransformerEncoder};

/// A sentence (word indices, no reserved tokens) and its class.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Labelled {
    /// The words.
    pub sentence: Vec<usize>,
    /// The class, below the classifier's number of classes.
    pub label: usize,
}

/// BERT's set-up for classifying a sentence (d2l en §11.9, fine-tuning
/// BERT): the encoder reads `<cls>` sentence `<eos>`, and a dense layer
/// turns `<cls>`'s output into class scores.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::pretraining::*;
/// use d2l_attention::transformer::TransformerConfig;
///
/// let device = Device::flex();
/// let config = TransformerConfig::new(20, 20);
/// let pretrained = MaskedLm::new(&config, &device);
/// let model = SentenceClassifier::from_pretrained(pretrained, 2, &device);
/// let examples = [Labelled { sentence: vec![7, 8], label: 1 }];
/// let batch = classify_batch(&examples.iter().collect::<Vec<_>>(), &device);
/// assert_eq!(model.forward(batch.tokens, &batch.valid_lens).dims(), [1, 2]);
/// ```
#[derive(Module, Debug)]
pub struct SentenceClassifier {
    /// The encoder.
    pub encoder: TransformerEncoder,
    /// (num_hiddens → num_classes), on `<cls>`'s output.
    pub head: Linear,
}

impl SentenceClassifier {
    /// A classifier whose encoder starts from random weights (`config`'s
    /// initialisation) and whose head scores `num_classes` classes.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::pretraining::SentenceClassifier;
    /// use d2l_attention::transformer::TransformerConfig;
    ///
    /// let model = SentenceClassifier::new(&TransformerConfig::new(20, 20), 3, &Device::flex());
    /// assert_eq!(model.head.weight.dims(), [32, 3]);
    /// assert_eq!(model.num_classes(), 3);
    /// ```
    pub fn new(
        config: &TransformerConfig,
        num_classes: usize,
        device: &Device,
    ) -> Self {
        Self::with_encoder(config.init_encoder(device), num_classes, device)
    }

    /// A classifier that keeps `pretrained`'s encoder (its masked-word head
    /// is dropped) and adds a new head for `num_classes` classes.
    ///
    /// # Examples
    /// See [`SentenceClassifier`].
    pub fn from_pretrained(
        pretrained: MaskedLm,
        num_classes: usize,
        device: &Device,
    ) -> Self {
        Self::with_encoder(pretrained.encoder, num_classes, device)
    }

    fn with_encoder(
        encoder: TransformerEncoder,
        num_classes: usize,
        device: &Device,
    ) -> Self {
        let num_hiddens = encoder.embedding.weight.dims()[1];
        SentenceClassifier {
            encoder,
            head: LinearConfig::new(num_hiddens, num_classes).init(device),
        }
    }

    /// The number of classes its head scores: labels run from 0 to this
    /// − 1.
    ///
    /// # Examples
    /// See [`SentenceClassifier::new`].
    pub fn num_classes(&self) -> usize {
        self.head.weight.dims()[1]
    }

    /// Class scores (batch_size, num_classes) for `tokens` (batch_size,
    /// num_steps), `<cls>` first, keys past `valid_lens` hidden.
    ///
    /// # Panics
    /// When the shapes do not fit each other or a token is out of range.
    ///
    /// # Examples
    /// See [`SentenceClassifier`].
    pub fn forward(
        &self,
        tokens: Tensor<2, Int>,
        valid_lens: &ValidLens,
    ) -> Tensor<2> {
        let outputs = self.encoder.forward(tokens, Some(valid_lens)).outputs;
        let [batch_size, _, num_hiddens] = outputs.dims();
        let cls = outputs.narrow(1, 0, 1).reshape([batch_size, num_hiddens]);
        self.head.forward(cls)
    }
}

impl Scores for SentenceClassifier {
    fn logits(&self, batch: &LmBatch) -> Tensor<3> {
        self.forward(batch.tokens.clone(), &batch.valid_lens)
            .unsqueeze_dim(1)
    }
}

/// Labelled sentences as one batch: `<cls>` sentence `<eos>`, padded, and
/// one label per sentence, (batch_size, 1).
///
/// # Panics
/// When `examples` is empty.
///
/// # Examples
/// See [`SentenceClassifier`].
pub fn classify_batch(examples: &[&Labelled], device: &Device) -> LmBatch {
    assert!(!examples.is_empty(), "`examples` is empty");
    let framed: Vec<Vec<usize>> = examples
        .iter()
        .map(|e| {
            [CLS]
                .into_iter()
                .chain(e.sentence.iter().copied())
                .chain([EOS])
                .collect()
        })
        .collect();
    let rows: Vec<&[usize]> = framed.iter().map(Vec::as_slice).collect();
    let labels: Vec<[usize; 1]> = examples.iter().map(|e| [e.label]).collect();
    let label_rows: Vec<&[usize]> =
        labels.iter().map(|l| l.as_slice()).collect();
    let (labels, weights, num_preds) = padded(&label_rows, 0, device);
    LmBatch {
        tokens: padded(&rows, PAD, device).0,
        valid_lens: lens(&rows, device),
        positions: None,
        labels,
        weights,
        num_preds,
    }
}

/// Fine-tunes every weight of `model` (on `device`, an autodiff device) on
/// `train` as [`pretrain`](super::pretrain) trains (Adam, clipping,
/// `config`'s settings, batches shuffled by `config.seed` + epoch); after
/// each epoch `on_epoch` sees the cross-entropy on `valid`, without
/// dropout, as [`LmEpoch::valid_loss`].
///
/// # Errors
/// As [`pretrain`](super::pretrain); [`Seq2SeqError::Invalid`] naming
/// `train` or `valid` when one is empty or holds a label that is not below
/// the model's [`SentenceClassifier::num_classes`] (with the example, the
/// label and the number of classes), before training.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::pretraining::*;
/// use d2l_attention::seq2seq::TrainConfig;
/// use d2l_attention::transformer::TransformerConfig;
///
/// // The class is whether the sentence holds word 7.
/// let examples: Vec<Labelled> = (0..64)
///     .map(|i| Labelled { sentence: vec![8 + i % 5, if i % 2 == 0 { 7 } else { 9 }], label: (i % 2 == 0) as usize })
///     .collect();
/// let device = Device::flex().autodiff();
/// let model = SentenceClassifier::new(&TransformerConfig::new(20, 20).with_dropout(0.0), 2, &device);
/// let config = TrainConfig::new().with_num_epochs(10).with_batch_size(16).with_lr(0.01);
/// let model = fine_tune(model, &examples, &examples, &config, &device, |_| {}).unwrap();
/// assert_eq!(accuracy(&model, &examples, &device), 1.0);
/// ```
pub fn fine_tune(
    model: SentenceClassifier,
    train: &[Labelled],
    valid: &[Labelled],
    config: &TrainConfig,
    device: &Device,
    on_epoch: impl FnMut(LmEpoch),
) -> Result<SentenceClassifier, Seq2SeqError> {
    for (arg, set) in [("train", train), ("valid", valid)] {
        if set.is_empty() {
            return Err(Seq2SeqError::Invalid {
                arg,
                reason: "holds no example".into(),
            });
        }
        if let Err(reason) = check_labels(set, model.num_classes()) {
            return Err(Seq2SeqError::Invalid { arg, reason });
        }
    }
    let batches = |seed, device: &Device| {
        use rand::SeedableRng;
        use rand::seq::SliceRandom;
        let mut order: Vec<&Labelled> = train.iter().collect();
        order.shuffle(&mut chacha20::ChaCha12Rng::seed_from_u64(seed));
        order
            .chunks(config.batch_size.max(1))
            .map(|c| classify_batch(c, device))
            .collect()
    };
    let valid_batches = |device: &Device| {
        let all: Vec<&Labelled> = valid.iter().collect();
        all.chunks(256).map(|c| classify_batch(c, device)).collect()
    };
    train_loop(model, batches, valid_batches, config, device, on_epoch)
}

/// The share of `examples` whose likeliest class is their label, by the
/// inference copy of `model` (no dropout) on `device.inner()`; `device` is
/// where `model` lives.
///
/// # Panics
/// When `model` lives elsewhere, `examples` is empty, or a label is not
/// below the model's number of classes (which would count as wrong
/// whatever the model says); the message names `examples`.
///
/// # Examples
/// See [`fine_tune`].
pub fn accuracy(
    model: &SentenceClassifier,
    examples: &[Labelled],
    device: &Device,
) -> f64 {
    if let Err(err) = check_device(model, device) {
        panic!("{err}");
    }
    assert!(!examples.is_empty(), "`examples` is empty");
    if let Err(reason) = check_labels(examples, model.num_classes()) {
        panic!("`examples`: {reason}");
    }
    let (model, device) = (model.valid(), &device.clone().inner());
    let all: Vec<&Labelled> = examples.iter().collect();
    let mut right = 0;
    for chunk in all.chunks(256) {
        let batch = classify_batch(chunk, device);
        let predicted = model
            .forward(batch.tokens, &batch.valid_lens)
            .argmax(1)
            .try_into_vec_as::<i64>()
            .expect("the predictions");
        right += chunk
            .iter()
            .zip(predicted)
            .filter(|(e, p)| e.label as i64 == *p)
            .count();
    }
    right as f64 / examples.len() as f64
}

/// What is wrong with the first label of `examples` that is not below
/// `num_classes`.
fn check_labels(
    examples: &[Labelled],
    num_classes: usize,
) -> Result<(), String> {
    match examples.iter().position(|e| e.label >= num_classes) {
        Some(i) => Err(format!(
            "example {i} has label {}, but the model scores {num_classes} \
             classes (labels below {num_classes})",
            examples[i].label
        )),
        None => Ok(()),
    }
}
