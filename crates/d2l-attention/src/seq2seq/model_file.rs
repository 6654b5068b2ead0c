//! Saving and loading a trained model, with what it was made for: its
//! configuration and the vocabularies of its training data.
//!
//! A model file is one line naming the format, one line of JSON (the
//! [`ModelInfo`]), then the parameters as burn's burnpack bytes; it is
//! written atomically, so the two parts never come from different models.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use burn::config::Config;
use burn::module::Module;
use burn::store::{ModuleRecord, RecordError};
use burn::tensor::Bytes;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::files::WriteError;
#[cfg(feature = "native")]
use crate::files::write_atomic;
use crate::machine_translation::Vocab;

/// The first line of every model file.
const MAGIC: &[u8] = b"d2l-attention model 2\n";

/// A vocabulary as a model file records it: its size, the SHA-256 of its
/// tokens in index order (joined by `\n`), so that another corpus's
/// vocabulary of the same size does not pass for it, and the tokens
/// themselves, so that the file alone can translate (the book's widgets
/// load nothing else).
///
/// # Examples
/// ```
/// use d2l_attention::machine_translation::{Vocab, tokenize_nmt};
/// use d2l_attention::seq2seq::VocabId;
///
/// let lines = tokenize_nmt("go .\tva !\n", None).source;
/// let id = VocabId::new(&Vocab::new(&lines, 0, &["<pad>", "<bos>", "<eos>"]));
/// assert_eq!((id.len, id.sha256.len()), (6, 64));
/// assert_eq!(id.vocab().unwrap().token(3), "<eos>");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VocabId {
    /// The number of tokens.
    pub len: usize,
    /// The SHA-256 of the tokens, in hexadecimal.
    pub sha256: String,
    /// The tokens, in index order.
    pub tokens: Vec<String>,
}

impl VocabId {
    /// The record of `vocab`.
    ///
    /// # Examples
    /// See [`VocabId`].
    pub fn new(vocab: &Vocab) -> Self {
        let tokens = vocab.tokens().to_vec();
        Self {
            len: vocab.len(),
            sha256: sha256(&tokens),
            tokens,
        }
    }

    /// The vocabulary, or `None` when the tokens do not agree with the
    /// size and the SHA-256 (or do not make a [`Vocab`]).
    ///
    /// # Examples
    /// See [`VocabId`].
    pub fn vocab(&self) -> Option<Vocab> {
        let agree = self.tokens.len() == self.len
            && sha256(&self.tokens) == self.sha256;
        agree.then(|| Vocab::from_tokens(&self.tokens)).flatten()
    }

    fn describe(&self) -> String {
        format!("{} tokens (SHA-256 {})", self.len, &self.sha256[..12])
    }
}

/// The SHA-256 of `tokens` joined by `\n`, in hexadecimal.
fn sha256(tokens: &[String]) -> String {
    let digest = Sha256::digest(tokens.join("\n"));
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a saved model was made for: the configuration it was built from
/// and the vocabularies of the data it was trained on. [`save_model`]
/// stores it in the file; [`load_model`] refuses a file made for anything
/// else and says what differs.
///
/// # Examples
/// ```
/// use d2l_attention::bahdanau::Seq2SeqConfig;
/// use d2l_attention::machine_translation::NmtData;
/// use d2l_attention::seq2seq::ModelInfo;
///
/// let data = NmtData::new("go .\tva !\nhi .\tsalut !\n", 5, 2).unwrap();
/// let config = Seq2SeqConfig::new(data.src_vocab.len(), data.tgt_vocab.len(), 4, 8, 1);
/// let info = ModelInfo::new(&config, &data.src_vocab, &data.tgt_vocab);
/// assert_eq!(info.config["num_hiddens"], 8);
/// assert_eq!(info.tgt_vocab.len, data.tgt_vocab.len());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo {
    /// The model's configuration, as its [`Config`] serialises it.
    pub config: serde_json::Value,
    /// The source vocabulary of the training data.
    pub src_vocab: VocabId,
    /// The target vocabulary of the training data.
    pub tgt_vocab: VocabId,
}

impl ModelInfo {
    /// The record of a model built from `config` and trained with
    /// `src_vocab` and `tgt_vocab`.
    ///
    /// # Examples
    /// See [`ModelInfo`].
    pub fn new(
        config: &impl Config,
        src_vocab: &Vocab,
        tgt_vocab: &Vocab,
    ) -> Self {
        Self {
            config: serde_json::to_value(config).expect("a Config serialises"),
            src_vocab: VocabId::new(src_vocab),
            tgt_vocab: VocabId::new(tgt_vocab),
        }
    }

    /// What differs between `saved` (a file's) and `self` (the caller's),
    /// one phrase each, in the order of the fields.
    fn differences(&self, saved: &ModelInfo) -> Vec<String> {
        let mut found = Vec::new();
        let empty = serde_json::Map::new();
        let fields =
            |v: &serde_json::Value| v.as_object().unwrap_or(&empty).clone();
        let (here, there) = (fields(&self.config), fields(&saved.config));
        let keys: BTreeSet<&String> = here.keys().chain(there.keys()).collect();
        let none = serde_json::Value::Null;
        for key in keys {
            let (a, b) = (
                there.get(key).unwrap_or(&none),
                here.get(key).unwrap_or(&none),
            );
            if a != b {
                found.push(format!("`{key}` is {a} in the file, {b} here"));
            }
        }
        for (name, a, b) in [
            ("source vocabulary", &saved.src_vocab, &self.src_vocab),
            ("target vocabulary", &saved.tgt_vocab, &self.tgt_vocab),
        ] {
            if a != b {
                found.push(format!(
                    "the {name} has {} in the file, {} here",
                    a.describe(),
                    b.describe()
                ));
            }
        }
        found
    }
}

/// Why a model could not be saved or loaded.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::bahdanau::Seq2SeqConfig;
/// use d2l_attention::machine_translation::NmtData;
/// use d2l_attention::seq2seq::{ModelFileError, ModelInfo, load_model};
///
/// let data = NmtData::new("go .\tva !\n", 5, 1).unwrap();
/// let config = Seq2SeqConfig::new(data.src_vocab.len(), data.tgt_vocab.len(), 4, 8, 1);
/// let info = ModelInfo::new(&config, &data.src_vocab, &data.tgt_vocab);
/// let err = load_model(config.init(&Device::flex()), &info, "no/such/model.bpk".as_ref());
/// let err = err.unwrap_err();
/// assert!(matches!(err, ModelFileError::Read { .. }));
/// assert_eq!(err.to_string(), "cannot read a model from `no/such/model.bpk`");
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
    /// The file could not be read.
    #[error("cannot read a model from `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The file was not written by [`save_model`] (or by an older version
    /// that stored no [`ModelInfo`]).
    #[error(
        "`{}` is not a model file of this book (it does not start with its model information); delete it and train again",
        path.display()
    )]
    NotAModelFile {
        /// The file.
        path: PathBuf,
    },
    /// The file holds a model made for another configuration or other
    /// data.
    #[error(
        "`{}` holds a model made for something else: {}",
        path.display(),
        differences.join("; ")
    )]
    Mismatch {
        /// The file.
        path: PathBuf,
        /// What differs, one phrase each.
        differences: Vec<String>,
    },
    /// The parameters could not be decoded, or do not fit the model.
    #[error("cannot load the parameters in `{}`", path.display())]
    Load {
        /// The file.
        path: PathBuf,
        /// What burn said.
        #[source]
        source: RecordError,
    },
}

/// Saves `model`'s parameters and `info` (what it was made for) at `path`,
/// atomically (the folder is created if needed).
///
/// # Errors
/// [`ModelFileError`] naming the folder or file that could not be made.
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::Seq2SeqConfig;
/// # use d2l_attention::machine_translation::NmtData;
/// use d2l_attention::seq2seq::{ModelFileError, ModelInfo, load_model, save_model};
///
/// let data = NmtData::new("go .\tva !\nhi .\tsalut !\n", 5, 2).unwrap();
/// let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
/// let config = Seq2SeqConfig::new(src, tgt, 4, 8, 1);
/// let info = ModelInfo::new(&config, &data.src_vocab, &data.tgt_vocab);
/// let device = Device::flex();
/// let model = config.init(&device);
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("models").join("tiny.bpk");
/// save_model(&model, &info, &path).unwrap();
/// // It loads back into a model of the same configuration.
/// let loaded = load_model(config.init(&device), &info, &path).unwrap();
/// let weight = |m: &d2l_attention::bahdanau::BahdanauModel| m.decoder.dense.weight.val().into_data();
/// assert_eq!(weight(&loaded), weight(&model));
/// // Another width: refused, saying what differs.
/// let wider = Seq2SeqConfig::new(src, tgt, 4, 16, 1);
/// let info = ModelInfo::new(&wider, &data.src_vocab, &data.tgt_vocab);
/// let err = load_model(wider.init(&device), &info, &path).unwrap_err();
/// assert!(matches!(err, ModelFileError::Mismatch { .. }));
/// assert!(err.to_string().ends_with("`num_hiddens` is 8 in the file, 16 here"), "{err}");
/// ```
#[cfg(feature = "native")]
pub fn save_model<M: Module>(
    model: &M,
    info: &ModelInfo,
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
    let params = model
        .clone()
        .into_record()
        .into_bytes()
        .map_err(ModelFileError::Encode)?;
    let mut bytes = MAGIC.to_vec();
    bytes.extend(serde_json::to_vec(info).expect("ModelInfo serialises"));
    bytes.push(b'\n');
    bytes.extend_from_slice(&params);
    write_atomic(path, &bytes)?;
    Ok(())
}

/// Loads the parameters saved by [`save_model`] at `path` into `model`,
/// after checking that the file was made for `info`: the same
/// configuration and the same vocabularies.
///
/// # Errors
/// [`ModelFileError::Read`] when the file cannot be read,
/// [`ModelFileError::NotAModelFile`] when it does not start with a model
/// file's header, [`ModelFileError::Mismatch`] listing what differs from
/// `info`, and [`ModelFileError::Load`] when its parameters do not fit
/// `model`.
///
/// # Examples
/// See [`save_model`].
pub fn load_model<M: Module>(
    model: M,
    info: &ModelInfo,
    path: &Path,
) -> Result<M, ModelFileError> {
    let bytes = std::fs::read(path).map_err(|source| ModelFileError::Read {
        path: path.to_owned(),
        source,
    })?;
    model_from_bytes(model, info, &bytes, path)
}

/// [`load_model`] on the bytes of a model file already read (in a browser,
/// fetched or compiled in), where `path` is only the name the errors give
/// it.
///
/// # Errors
/// As [`load_model`], without [`ModelFileError::Read`].
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::Seq2SeqConfig;
/// # use d2l_attention::machine_translation::NmtData;
/// use d2l_attention::seq2seq::{ModelInfo, model_from_bytes};
///
/// let data = NmtData::new("go .\tva !\n", 5, 1).unwrap();
/// let config = Seq2SeqConfig::new(data.src_vocab.len(), data.tgt_vocab.len(), 4, 8, 1);
/// let info = ModelInfo::new(&config, &data.src_vocab, &data.tgt_vocab);
/// let model = config.init(&Device::flex());
/// let err = model_from_bytes(model, &info, b"not a model", "x.bpk".as_ref()).unwrap_err();
/// assert!(err.to_string().starts_with("`x.bpk` is not a model file of this book"));
/// ```
pub fn model_from_bytes<M: Module>(
    model: M,
    info: &ModelInfo,
    bytes: &[u8],
    path: &Path,
) -> Result<M, ModelFileError> {
    let (saved, params) = split(bytes, path)?;
    let differences = info.differences(&saved);
    if !differences.is_empty() {
        return Err(ModelFileError::Mismatch {
            path: path.to_owned(),
            differences,
        });
    }
    let params = Bytes::from_bytes_vec(params.to_vec());
    ModuleRecord::from_bytes(params)
        .and_then(|record| model.try_load_record(record))
        .map_err(|source| ModelFileError::Load {
            path: path.to_owned(),
            source,
        })
}

/// What the model file `bytes` was made for (its configuration and
/// vocabularies), read without loading its parameters; `path` is only the
/// name the errors give it.
///
/// # Errors
/// [`ModelFileError::NotAModelFile`] when the bytes do not start with a
/// model file's header or its vocabularies do not agree with their
/// digests.
///
/// # Examples
/// ```
/// # use burn::tensor::Device;
/// # use d2l_attention::bahdanau::Seq2SeqConfig;
/// # use d2l_attention::machine_translation::NmtData;
/// use d2l_attention::seq2seq::{ModelInfo, read_model_info, save_model};
///
/// let data = NmtData::new("go .\tva !\n", 5, 1).unwrap();
/// let config = Seq2SeqConfig::new(data.src_vocab.len(), data.tgt_vocab.len(), 4, 8, 1);
/// let info = ModelInfo::new(&config, &data.src_vocab, &data.tgt_vocab);
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("tiny.bpk");
/// save_model(&config.init(&Device::flex()), &info, &path).unwrap();
/// let bytes = std::fs::read(&path).unwrap();
/// let read = read_model_info(&bytes, &path).unwrap();
/// assert_eq!(read, info);
/// assert_eq!(read.tgt_vocab.vocab(), Some(data.tgt_vocab));
/// ```
pub fn read_model_info(
    bytes: &[u8],
    path: &Path,
) -> Result<ModelInfo, ModelFileError> {
    split(bytes, path).map(|(info, _)| info)
}

/// A model file's information and its parameters' bytes.
fn split<'a>(
    bytes: &'a [u8],
    path: &Path,
) -> Result<(ModelInfo, &'a [u8]), ModelFileError> {
    let not_a_model = || ModelFileError::NotAModelFile {
        path: path.to_owned(),
    };
    let rest = bytes.strip_prefix(MAGIC).ok_or_else(not_a_model)?;
    let end = rest
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(not_a_model)?;
    let info: ModelInfo =
        serde_json::from_slice(&rest[..end]).map_err(|_| not_a_model())?;
    let agree = |id: &VocabId| id.vocab().is_some();
    if !agree(&info.src_vocab) || !agree(&info.tgt_vocab) {
        return Err(not_a_model());
    }
    Ok((info, &rest[end + 1..]))
}
