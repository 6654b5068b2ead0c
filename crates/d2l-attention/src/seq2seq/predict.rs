//! Greedy translation (d2l zh §9.7.5).

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::*;
use crate::machine_translation::{Vocab, truncate_pad};

/// A translation and where the decoder looked while writing it.
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
/// use d2l_attention::seq2seq::predict_seq2seq;
///
/// let t = predict_seq2seq(&model, "go .", &data.src_vocab, &data.tgt_vocab, 5, &device).unwrap();
/// // One map: Bahdanau's encoder–decoder attention.
/// assert_eq!(t.attention.len(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct Translation {
    /// The predicted target tokens, space-separated, without `<eos>`.
    pub text: String,
    /// The model's attention maps over the whole translation: the
    /// encoder's, (1, num_steps, num_steps) over the padded source, then the
    /// decoder's, each (1, num_predicted + 1, num_keys): one row per
    /// decoding step, the one that wrote `<eos>` included. A map whose keys
    /// grew from step to step (self-attention over the tokens written so
    /// far) is padded with 0.
    pub attention: Vec<AttentionMap>,
}

impl Translation {
    /// The weights of one attention map, (num_queries, num_keys), or
    /// `None` when the model has no such map.
    ///
    /// # Examples
    /// ```
    /// # use burn::tensor::Device;
    /// # use d2l_attention::bahdanau::Seq2SeqConfig;
    /// # use d2l_attention::machine_translation::NmtData;
    /// let data = NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
    /// let device = Device::flex();
    /// let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
    /// let model = Seq2SeqConfig::new(src, tgt, 4, 8, 1).init(&device);
    /// use d2l_attention::seq2seq::{AttentionKind, predict_seq2seq};
    ///
    /// let t = predict_seq2seq(&model, "go .", &data.src_vocab, &data.tgt_vocab, 5, &device).unwrap();
    /// // "go . <eos>": three source positions with a weight.
    /// let weights = t.weights(AttentionKind::EncoderDecoder, 0, 0).unwrap();
    /// assert_eq!(weights.dims()[1], 3);
    /// assert!(t.weights(AttentionKind::DecoderSelfAttention, 0, 0).is_none());
    /// ```
    pub fn weights(
        &self,
        kind: AttentionKind,
        layer: usize,
        head: usize,
    ) -> Option<Tensor<2>> {
        let map = self
            .attention
            .iter()
            .find(|m| m.kind == kind && m.layer == layer && m.head == head)?;
        let [_, num_queries, num_keys] = map.weights.dims();
        Some(map.weights.clone().reshape([num_queries, num_keys]))
    }
}

/// Joins the maps of every decoding step along the queries, map by map,
/// padding keys with 0 up to the widest step.
fn join_steps(steps: Vec<Vec<AttentionMap>>) -> Vec<AttentionMap> {
    let Some(first) = steps.first() else {
        return Vec::new();
    };
    (0..first.len())
        .map(|i| {
            let parts: Vec<Tensor<3>> =
                steps.iter().map(|s| s[i].weights.clone()).collect();
            let width = parts.iter().map(|p| p.dims()[2]).max().unwrap_or(0);
            let parts = parts
                .into_iter()
                .map(|p| {
                    let [b, q, k] = p.dims();
                    let zeros = Tensor::zeros([b, q, width - k], &p.device());
                    Tensor::cat(vec![p, zeros], 2)
                })
                .collect();
            AttentionMap {
                weights: Tensor::cat(parts, 1),
                ..first[i].clone()
            }
        })
        .collect()
}

/// Translates `src_sentence` greedily (d2l zh §9.7.5, `predict_seq2seq`):
/// the source is lowercased, split on spaces, ended with `<eos>` and
/// padded to `num_steps`; the decoder starts from `<bos>` and feeds each
/// most likely token back in until it writes `<eos>` or `num_steps` tokens.
///
/// Prediction always runs in inference mode, whatever mode `model` was left
/// in: it uses `model.valid()` (no dropout, no gradients) on the plain form
/// of `device` (`device.inner()`), so a model fresh from
/// [`train_seq2seq`], or one after `.valid().train()`, translates exactly as
/// its inference copy does. `device` is where `model` lives, plain or
/// autodiff (burn's device equality ignores autodiff); the source is built
/// there. Taking the inference copy here, rather than accepting only a model
/// the caller made with `valid()`, leaves nothing for the caller to
/// remember. Forgetting it gave d2l's Transformer dropout in prediction
/// (d2l-en issue #1484); d2l-en pull request #1528 (A. Dagar) fixed it the
/// same way, with `net.eval()` inside d2l's `predict_seq2seq`.
///
/// A source longer than `num_steps - 1` tokens is cut to `num_steps` with
/// no `<eos>`. Tokens are looked up as d2l's `src_vocab[...]` looks them
/// up: a reserved token written in the sentence (`<eos>`, `<pad>`) reads
/// as its index, the control token itself. Text typed by a reader goes
/// through the widgets' `Translator::translate`, which reads such
/// spellings as `<unk>`. Each step reads the chosen token back from the device:
/// greedy decoding cannot go on without it.
///
/// # Errors
/// [`Seq2SeqError::Invalid`] when `num_steps` is 0, a vocabulary is larger
/// than the model's (`src_vocab` than the encoder's embedding, `tgt_vocab`
/// than the decoder's output layer), or `model` does not live on `device`.
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
/// let model = Seq2SeqConfig::new(src, tgt, 4, 8, 1).with_dropout(0.2).init(&device);
/// use d2l_attention::seq2seq::{TrainConfig, predict_seq2seq, train_seq2seq};
///
/// let config = TrainConfig::new().with_num_epochs(60).with_batch_size(4).with_lr(0.05);
/// let model = train_seq2seq(model, &data, &config, &device, |_| {}).unwrap();
/// // Straight from training, dropout on: prediction switches it off itself,
/// // and translates as the inference copy does on the plain device.
/// let (src, tgt) = (&data.src_vocab, &data.tgt_vocab);
/// let t = predict_seq2seq(&model, "hi .", src, tgt, 5, &device).unwrap();
/// use burn::module::Module;
/// let copy = predict_seq2seq(&model.valid(), "hi .", src, tgt, 5, &Device::flex()).unwrap();
/// assert_eq!(t.text, copy.text);
/// let weights = |t: &d2l_attention::seq2seq::Translation| t.attention[0].weights.clone().into_data();
/// assert_eq!(weights(&t), weights(&copy));
/// ```
// ANCHOR: predict
pub fn predict_seq2seq<E: Encoder, D: Decoder<E::Output>>(
    model: &EncoderDecoder<E, D>,
    src_sentence: &str,
    src_vocab: &Vocab,
    tgt_vocab: &Vocab,
    num_steps: usize,
    device: &Device,
) -> Result<Translation, Seq2SeqError> {
    check_vocabs(model, src_vocab, tgt_vocab, num_steps)?;
    check_device(model, device)?;
    let (model, device) = (model.valid(), &device.clone().inner());
    let lowercase = src_sentence.to_lowercase();
    let mut src_tokens: Vec<usize> =
        lowercase.split(' ').map(|t| src_vocab.index(t)).collect();
    src_tokens.push(src_vocab.index("<eos>"));
    let enc_valid_lens =
        ValidLens::new(&[src_tokens.len().min(num_steps)], device);
    let src_tokens =
        truncate_pad(&src_tokens, num_steps, src_vocab.index("<pad>"));
    let src_tokens = src_tokens.iter().map(|&i| i as i64).collect();
    let enc_x = Tensor::<2, Int>::from_data(
        TensorData::new(src_tokens, [1, num_steps]),
        device,
    );
    let enc_outputs = model.encoder.forward(enc_x, Some(&enc_valid_lens));
    let enc_maps = E::attention_maps(&enc_outputs);
    let mut state = model.decoder.init_state(enc_outputs, Some(enc_valid_lens));
    let bos = tgt_vocab.index("<bos>") as i64;
    let mut dec_x = Tensor::<2, Int>::from_ints([[bos]], device);
    let (mut output, mut maps) = (Vec::new(), Vec::new());
    for _ in 0..num_steps {
        let decoded = model.decoder.forward(dec_x, state);
        state = decoded.state;
        maps.push(decoded.attention);
        dec_x = decoded.output.argmax(2).reshape([1, 1]);
        let pred = dec_x.clone().into_scalar::<i64>() as usize;
        if pred == tgt_vocab.index("<eos>") {
            break;
        }
        output.push(tgt_vocab.token(pred));
    }
    Ok(Translation {
        text: output.join(" "),
        attention: enc_maps.into_iter().chain(join_steps(maps)).collect(),
    })
}
// ANCHOR_END: predict

fn check_vocabs<E: Encoder, D: Decoder<E::Output>>(
    model: &EncoderDecoder<E, D>,
    src_vocab: &Vocab,
    tgt_vocab: &Vocab,
    num_steps: usize,
) -> Result<(), Seq2SeqError> {
    let src_size = model.encoder.vocab_size();
    let tgt_size = model.decoder.vocab_size();
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

/// An error unless `model` lives on `device` (autodiff or not).
pub(crate) fn check_device<M: Module>(
    model: &M,
    device: &Device,
) -> Result<(), Seq2SeqError> {
    match model.devices().as_slice() {
        [only] if only == device => Ok(()),
        devices => Err(Seq2SeqError::Invalid {
            arg: "device",
            reason: format!(
                "{device:?}, but the model lives on {devices:?}: pass the device the model was made or loaded on"
            ),
        }),
    }
}
