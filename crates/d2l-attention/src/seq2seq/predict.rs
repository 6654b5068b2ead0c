//! Greedy translation (d2l zh §9.7.5) and saving a trained model.

use std::path::Path;

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::*;
use crate::bahdanau::EncoderDecoder;
use crate::machine_translation::{Vocab, truncate_pad};

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
    let mut src_tokens: Vec<usize> =
        lowercase.split(' ').map(|t| src_vocab.index(t)).collect();
    src_tokens.push(src_vocab.index("<eos>"));
    let enc_valid_len = src_tokens.len().min(num_steps) as i64;
    let src_tokens =
        truncate_pad(&src_tokens, num_steps, src_vocab.index("<pad>"));
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
    let mut dec_x = Tensor::<2, Int>::from_ints(
        [[tgt_vocab.index("<bos>") as i64]],
        device,
    );
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
        std::fs::create_dir_all(dir).map_err(|e| {
            anyhow::anyhow!("cannot create `{}`: {e}", dir.display())
        })?;
    }
    let bytes = model.clone().into_record().into_bytes()?;
    crate::files::write_atomic(path, &bytes)?;
    Ok(())
}
