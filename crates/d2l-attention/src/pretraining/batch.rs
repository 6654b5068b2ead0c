//! Mini-batches of the two language-modelling objectives, and their loss.

use burn::tensor::{Device, Int, Tensor, TensorData};

use super::data::{BOS, EOS, PAD};
use super::masking::MlmExample;
use crate::attention_scoring::ValidLens;
use crate::kernels::log_softmax;

/// A mini-batch of sentences and the tokens a language model must predict
/// in them.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::pretraining::*;
///
/// // A causal batch: <bos> 7 8 → 7 8 <eos>, and <bos> 9 → 9 <eos>.
/// let batch = causal_batch(&[&vec![7, 8], &vec![9]], &Device::flex());
/// assert_eq!((batch.tokens.dims(), batch.num_preds), ([2, 3], 5));
/// assert_eq!(batch.valid_lens.lens(), [3, 2]);
/// ```
#[derive(Clone, Debug)]
pub struct LmBatch {
    /// The model's input, padded with `<pad>`: (batch_size, num_steps).
    pub tokens: Tensor<2, Int>,
    /// The tokens of each sentence, padding excluded: (batch_size,).
    pub valid_lens: ValidLens,
    /// Where the labels are, (batch_size, num_preds_max), for a masked
    /// language model; `None` when every step predicts (a causal one).
    pub positions: Option<Tensor<2, Int>>,
    /// The tokens to predict: (batch_size, num_preds_max) at `positions`,
    /// or (batch_size, num_steps), the next token of every step.
    pub labels: Tensor<2, Int>,
    /// 1 where a label counts, 0 where it pads: the shape of `labels`.
    pub weights: Tensor<2>,
    /// The labels that count.
    pub num_preds: usize,
}

/// Masked sentences (see [`mask_tokens`](super::mask_tokens)) as one
/// batch: tokens padded to the longest, positions and labels padded to the
/// most predictions (with weight 0).
///
/// # Panics
/// When `examples` is empty.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::pretraining::*;
///
/// let a = MlmExample { tokens: vec![CLS, MASK, 8, EOS], positions: vec![1], labels: vec![7] };
/// let b = MlmExample { tokens: vec![CLS, 9, EOS], positions: vec![1], labels: vec![9] };
/// let batch = mlm_batch(&[a, b], &Device::flex());
/// assert_eq!((batch.tokens.dims(), batch.labels.dims(), batch.num_preds), ([2, 4], [2, 1], 2));
/// ```
pub fn mlm_batch(examples: &[MlmExample], device: &Device) -> LmBatch {
    assert!(!examples.is_empty(), "`examples` is empty");
    let tokens: Vec<&[usize]> =
        examples.iter().map(|e| e.tokens.as_slice()).collect();
    let positions: Vec<&[usize]> =
        examples.iter().map(|e| e.positions.as_slice()).collect();
    let labels: Vec<&[usize]> =
        examples.iter().map(|e| e.labels.as_slice()).collect();
    let (labels, weights, num_preds) = padded(&labels, 0, device);
    LmBatch {
        tokens: padded(&tokens, PAD, device).0,
        valid_lens: lens(&tokens, device),
        positions: Some(padded(&positions, 0, device).0),
        labels,
        weights,
        num_preds,
    }
}

/// Sentences (word indices, without reserved tokens) as one batch for a
/// causal language model: the input is `<bos>` and the sentence, the labels
/// the sentence and `<eos>`, both padded to the longest.
///
/// # Panics
/// When `sentences` is empty.
///
/// # Examples
/// See [`LmBatch`].
pub fn causal_batch(sentences: &[&Vec<usize>], device: &Device) -> LmBatch {
    assert!(!sentences.is_empty(), "`sentences` is empty");
    let inputs: Vec<Vec<usize>> = sentences
        .iter()
        .map(|s| std::iter::once(BOS).chain(s.iter().copied()).collect())
        .collect();
    let labels: Vec<Vec<usize>> = sentences
        .iter()
        .map(|s| s.iter().copied().chain(std::iter::once(EOS)).collect())
        .collect();
    let inputs: Vec<&[usize]> = inputs.iter().map(Vec::as_slice).collect();
    let labels: Vec<&[usize]> = labels.iter().map(Vec::as_slice).collect();
    let (labels, weights, num_preds) = padded(&labels, PAD, device);
    LmBatch {
        tokens: padded(&inputs, PAD, device).0,
        valid_lens: lens(&inputs, device),
        positions: None,
        labels,
        weights,
        num_preds,
    }
}

/// The rows padded with `pad` to the longest, (rows, longest); weights
/// that are 1 inside each row and 0 in its padding; and their sum.
pub(super) fn padded(
    rows: &[&[usize]],
    pad: usize,
    device: &Device,
) -> (Tensor<2, Int>, Tensor<2>, usize) {
    let width = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let (mut values, mut weights) = (Vec::new(), Vec::new());
    for row in rows {
        for i in 0..width {
            values.push(row.get(i).map_or(pad, |&v| v) as i64);
            weights.push(if i < row.len() { 1f32 } else { 0.0 });
        }
    }
    let shape = [rows.len(), width];
    let count = rows.iter().map(|r| r.len()).sum();
    (
        Tensor::from_data(TensorData::new(values, shape), device),
        Tensor::from_data(TensorData::new(weights, shape), device),
        count,
    )
}

/// The rows' lengths as valid lengths.
pub(super) fn lens(rows: &[&[usize]], device: &Device) -> ValidLens {
    let lens: Vec<usize> = rows.iter().map(|r| r.len()).collect();
    ValidLens::new(&lens, device)
}

/// The cross-entropy of `logits` (batch_size, n, vocab_size) against the
/// batch's labels (batch_size, n), summed over the labels that count,
/// (1,): divide by [`LmBatch::num_preds`] for the mean per token, in nats.
///
/// # Panics
/// When `logits` does not have the shape of the labels.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::pretraining::*;
///
/// let device = Device::flex();
/// let batch = causal_batch(&[&vec![7, 8], &vec![9]], &device);
/// // Equal scores over 10 tokens: ln 10 for each of the 5 labels.
/// let loss = lm_loss(Tensor::zeros([2, 3, 10], &device), &batch);
/// assert!((loss.into_scalar::<f64>() - 5.0 * 10f64.ln()).abs() < 1e-5);
/// ```
pub fn lm_loss(logits: Tensor<3>, batch: &LmBatch) -> Tensor<1> {
    let [batch_size, n, _] = logits.dims();
    let dims = batch.labels.dims();
    assert!(
        dims == [batch_size, n],
        "`logits` has shape {:?}, expected the labels' {dims:?} and the vocabulary",
        logits.dims()
    );
    let picked = log_softmax(logits)
        .gather(2, batch.labels.clone().unsqueeze_dim(2))
        .reshape([batch_size, n]);
    -(picked * batch.weights.clone()).sum()
}
