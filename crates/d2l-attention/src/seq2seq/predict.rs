//! Greedy translation (d2l zh §9.7.5), and saving and loading a trained
//! model.

use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::store::RecordError;
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::*;
use crate::files::{WriteError, write_atomic};
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
/// use burn::module::Module;
/// use d2l_attention::seq2seq::predict_seq2seq;
///
/// let model = model.valid();
/// let device = Device::flex();
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
/// `model` should be an inference copy (`model.valid()`) on `device`, so
/// that no dropout applies. A source longer than `num_steps - 1` tokens is
/// cut to `num_steps` with no `<eos>`. Each step reads the chosen token
/// back from the device: greedy decoding cannot go on without it.
///
/// # Errors
/// [`Seq2SeqError::Invalid`] when `num_steps` is 0 or a vocabulary is
/// larger than the model's (`src_vocab` than the encoder's embedding,
/// `tgt_vocab` than the decoder's output layer).
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
pub fn predict_seq2seq<E: Encoder, D: Decoder<E::Output>>(
    model: &EncoderDecoder<E, D>,
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

/// Why a model could not be saved or loaded.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::bahdanau::Seq2SeqConfig;
/// use d2l_attention::seq2seq::{ModelFileError, load_model};
///
/// let model = Seq2SeqConfig::new(10, 10, 4, 8, 1).init(&Device::flex());
/// let err = load_model(model, "no/such/model.bpk".as_ref()).unwrap_err();
/// assert!(matches!(err, ModelFileError::Load { .. }));
/// assert_eq!(err.to_string(), "cannot load a model from `no/such/model.bpk`");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum ModelFileError {
    /// The folder for the file could not be made.
    #[error("cannot create the folder `{}`", path.display())]
    CreateDir {
        /// The folder.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The parameters could not be encoded.
    #[error("cannot encode the model's parameters")]
    Encode(#[source] RecordError),
    /// The file could not be written.
    #[error(transparent)]
    Write(#[from] WriteError),
    /// The file could not be read, or does not fit the model.
    #[error("cannot load a model from `{}`", path.display())]
    Load {
        /// The file.
        path: PathBuf,
        /// What burn said.
        #[source]
        source: RecordError,
    },
}

/// Saves `model`'s parameters as a burnpack file at `path`, atomically
/// (the folder is created if needed).
///
/// # Errors
/// [`ModelFileError`] naming the folder or file that could not be made.
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::Seq2SeqConfig;
/// use d2l_attention::seq2seq::{load_model, save_model};
///
/// let device = Device::flex();
/// let model = Seq2SeqConfig::new(10, 10, 4, 8, 1).init(&device);
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("models").join("tiny.bpk");
/// save_model(&model, &path).unwrap();
/// // It loads back into a model of the same configuration.
/// let fresh = Seq2SeqConfig::new(10, 10, 4, 8, 1).init(&device);
/// let loaded = load_model(fresh, &path).unwrap();
/// let weight = |m: &d2l_attention::bahdanau::BahdanauModel| m.decoder.dense.weight.val().into_data();
/// assert_eq!(weight(&loaded), weight(&model));
/// ```
pub fn save_model<M: Module>(
    model: &M,
    path: &Path,
) -> Result<(), ModelFileError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|source| {
            ModelFileError::CreateDir {
                path: dir.to_owned(),
                source,
            }
        })?;
    }
    let bytes = model
        .clone()
        .into_record()
        .into_bytes()
        .map_err(ModelFileError::Encode)?;
    write_atomic(path, &bytes)?;
    Ok(())
}

/// Loads the parameters saved by [`save_model`] at `path` into `model`, a
/// model of the same configuration.
///
/// # Errors
/// [`ModelFileError::Load`] when the file cannot be read or does not fit
/// `model`.
///
/// # Examples
/// See [`save_model`].
pub fn load_model<M: Module>(
    model: M,
    path: &Path,
) -> Result<M, ModelFileError> {
    model
        .try_load_file(path)
        .map_err(|source| ModelFileError::Load {
            path: path.to_owned(),
            source,
        })
}
