//! What the book's widgets compute from a reader's input: the input is
//! checked first, with a message naming what is wrong, then handed to the
//! chapters' own functions. The WebAssembly bindings
//! (`crates/attention-widgets`) call these (and the models' `init`), in
//! the reader's browser; the test `widgets` runs them natively on the same
//! inputs and committed models (README, "The widgets").

use burn::config::Config;
use burn::tensor::{Device, Tensor};

use crate::Svg;
use crate::machine_translation::{
    RESERVED, Vocab, normalize_spaces, preprocess_nmt,
};
use crate::nadaraya_watson::{
    Dataset, Kernel, RegressionError, SEED, nadaraya_watson,
    plot_attention_weights, plot_kernel_reg,
};
use crate::plot::PlotError;
use crate::positional_encoding::{encoding_columns, encoding_heatmap};
use crate::seq2seq::{
    AttentionFigure, AttentionKind, Decoder, Encoder, EncoderDecoder,
    ModelFileError, Seq2SeqError, attention_figures, model_from_bytes,
    predict_seq2seq, read_model_info,
};

/// The translation chapters' `num_steps`: a source of at most
/// `NUM_STEPS - 1` tokens, then `<eos>`; at most `NUM_STEPS` tokens
/// written.
pub const NUM_STEPS: usize = 10;

/// Why a widget could not answer; its message is what the reader sees.
#[derive(Debug, thiserror::Error)]
pub enum WidgetError {
    /// The reader's input cannot be used.
    #[error("`{arg}` {reason}")]
    Input {
        /// The input's name.
        arg: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A committed model could not be loaded.
    #[error(transparent)]
    ModelFile(#[from] ModelFileError),
    /// The translation failed.
    #[error(transparent)]
    Seq2Seq(#[from] Seq2SeqError),
    /// The regression failed (e.g. no training input within reach).
    #[error(transparent)]
    Regression(#[from] RegressionError),
    /// A figure could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
}

fn input(arg: &'static str, reason: impl Into<String>) -> WidgetError {
    WidgetError::Input {
        arg,
        reason: reason.into(),
    }
}

/// A trained translation model with the vocabularies it was trained on,
/// loaded from the bytes of a model file (`models/*.bpk`), which hold both.
#[derive(Debug)]
pub struct Translator<M> {
    /// The model, on flex.
    pub model: M,
    /// The source (English) vocabulary.
    pub src_vocab: Vocab,
    /// The target (French) vocabulary.
    pub tgt_vocab: Vocab,
}

/// A reader's sentence translated, with its attention figures.
#[derive(Clone, Debug)]
pub struct ReaderTranslation {
    /// The sentence as the model reads it: preprocessed as the corpus is
    /// (lower case, a space before punctuation), unknown words as `<unk>`.
    pub source: String,
    /// Its tokens that the training data never had, and the reserved
    /// tokens typed (`<eos>`, …), read as `<unk>`.
    pub unknown: Vec<String>,
    /// The translation, tokens separated by spaces.
    pub text: String,
    /// The attention figures ([`attention_figures`]).
    pub figures: Vec<AttentionFigure>,
}

impl ReaderTranslation {
    /// What the widget's page receives: `source`, `unknown`, `text` and
    /// `figures`, each with its `kind` ([`kind_name`]), `grid` (layers,
    /// heads), `queries`, `keys`, `weights` (row-major, as drawn) and
    /// `svg`.
    ///
    /// # Examples
    /// See the test `widgets`.
    pub fn to_json(&self) -> serde_json::Value {
        let figures: Vec<serde_json::Value> = self
            .figures
            .iter()
            .map(|f| {
                serde_json::json!({
                    "kind": kind_name(f.kind),
                    "grid": [f.grid.0, f.grid.1],
                    "queries": f.queries,
                    "keys": f.keys,
                    "weights": weights_of(f.weights.clone()),
                    "svg": f.svg.as_str(),
                })
            })
            .collect();
        serde_json::json!({
            "source": self.source,
            "unknown": self.unknown,
            "text": self.text,
            "figures": figures,
        })
    }
}

impl<E: Encoder, D: Decoder<E::Output>> Translator<EncoderDecoder<E, D>> {
    /// The model in the model file `bytes` (written by
    /// [`crate::seq2seq::save_model`]), built by `init` from the
    /// configuration the file records; `name` is what errors call it.
    ///
    /// # Errors
    /// [`WidgetError::ModelFile`] when the bytes are not a model file or
    /// do not fit the model `init` builds.
    ///
    /// # Examples
    /// See [`Translator::translate`].
    pub fn from_bytes<C: Config>(
        bytes: &[u8],
        name: &str,
        init: impl Fn(&C, &Device) -> EncoderDecoder<E, D>,
    ) -> Result<Self, WidgetError> {
        let path = std::path::Path::new(name);
        let info = read_model_info(bytes, path)?;
        let not_model = || ModelFileError::NotAModelFile {
            path: path.to_owned(),
        };
        let config: C = serde_json::from_value(info.config.clone())
            .map_err(|_| not_model())?;
        let vocab =
            |id: &crate::seq2seq::VocabId| id.vocab().ok_or_else(not_model);
        let (src_vocab, tgt_vocab) =
            (vocab(&info.src_vocab)?, vocab(&info.tgt_vocab)?);
        let model = init(&config, &Device::flex());
        let model = model_from_bytes(model, &info, bytes, path)?;
        Ok(Self {
            model,
            src_vocab,
            tgt_vocab,
        })
    }

    /// Translates the reader's `sentence` greedily
    /// ([`predict_seq2seq`] with [`NUM_STEPS`]) after preprocessing it as
    /// the corpus was (with ’ and ‘ typed as '), and draws its attention.
    /// A word the training data never had is read, and shown, as `<unk>`,
    /// and so is a reserved token the reader types (`<pad>`, `<bos>`,
    /// `<eos>`): both are listed in [`ReaderTranslation::unknown`], and the
    /// model never reads a control token from the reader's text.
    ///
    /// # Errors
    /// [`WidgetError::Input`] naming `sentence` when it has no token or
    /// more than `NUM_STEPS - 1`.
    ///
    /// # Examples
    /// ```
    /// # use burn::tensor::Device;
    /// # use d2l_attention::bahdanau::Seq2SeqConfig;
    /// # use d2l_attention::machine_translation::NmtData;
    /// use d2l_attention::seq2seq::{ModelInfo, save_model};
    /// use d2l_attention::widgets::Translator;
    ///
    /// // Words seen twice are in the vocabularies.
    /// let data = NmtData::new(&"go .\tva !\n".repeat(2), 5, 2).unwrap();
    /// let config = Seq2SeqConfig::new(data.src_vocab.len(), data.tgt_vocab.len(), 4, 8, 1);
    /// let dir = tempfile::tempdir().unwrap();
    /// let path = dir.path().join("tiny.bpk");
    /// let info = ModelInfo::new(&config, &data.src_vocab, &data.tgt_vocab);
    /// save_model(&config.init(&Device::flex()), &info, &path).unwrap();
    /// let bytes = std::fs::read(&path).unwrap();
    /// let t = Translator::from_bytes(&bytes, "tiny.bpk", Seq2SeqConfig::init).unwrap();
    /// let out = t.translate("Go, Zorro!").unwrap();
    /// assert_eq!(out.source, "go <unk> <unk> <unk>");
    /// assert_eq!(out.unknown, [",", "zorro", "!"]);
    /// assert_eq!(out.figures.len(), 1);
    /// assert_eq!(out.figures[0].keys, ["go", "<unk>", "<unk>", "<unk>", "<eos>"]);
    /// // ’ is read as the corpus's '
    /// assert_eq!(t.translate("Go’").unwrap().unknown, ["go'"]);
    /// // a typed control token is a word the model does not know
    /// assert_eq!(t.translate("go <eos>").unwrap().unknown, ["<eos>"]);
    /// let err = t.translate("  ").unwrap_err();
    /// assert_eq!(err.to_string(), "`sentence` is empty: type an English sentence");
    /// ```
    pub fn translate(
        &self,
        sentence: &str,
    ) -> Result<ReaderTranslation, WidgetError> {
        // phones and word processors type ’ for the corpus's '
        let typed = sentence.replace(['\u{2018}', '\u{2019}'], "'");
        let preprocessed = preprocess_nmt(&normalize_spaces(&typed));
        let tokens: Vec<&str> = preprocessed.split_whitespace().collect();
        if tokens.is_empty() {
            return Err(input(
                "sentence",
                "is empty: type an English sentence",
            ));
        }
        let most = NUM_STEPS - 1;
        if tokens.len() > most {
            return Err(input(
                "sentence",
                format!(
                    "has {} tokens (words and punctuation marks); the model reads at most {most}",
                    tokens.len()
                ),
            ));
        }
        // what the model reads: an unknown word is <unk>, whatever it is,
        // and so is a reserved token typed by the reader (`<eos>`, …)
        let known =
            |t: &&str| self.src_vocab.index(t) != 0 && !RESERVED.contains(t);
        let unknown = tokens.iter().filter(|t| !known(t));
        let read: Vec<&str> = tokens
            .iter()
            .map(|t| if known(t) { t } else { "<unk>" })
            .collect();
        let source = read.join(" ");
        let t = predict_seq2seq(
            &self.model,
            &source,
            &self.src_vocab,
            &self.tgt_vocab,
            NUM_STEPS,
            &Device::flex(),
        )?;
        let figures = attention_figures(&t, &source)?;
        Ok(ReaderTranslation {
            source,
            unknown: unknown.map(|t| t.to_string()).collect(),
            text: t.text,
            figures,
        })
    }
}

/// The Nadaraya–Watson chapter's kernels by the names the widget offers:
/// `gaussian`, `boxcar`, `constant`, `epanechikov` (the Gaussian's σ is
/// set by the bandwidth).
///
/// # Errors
/// [`WidgetError::Input`] naming `kernel` for any other name.
///
/// # Examples
/// ```
/// use d2l_attention::nadaraya_watson::Kernel;
/// use d2l_attention::widgets::kernel_named;
///
/// assert_eq!(kernel_named("boxcar").unwrap(), Kernel::Boxcar);
/// assert!(kernel_named("cosine").unwrap_err().to_string().starts_with("`kernel`"));
/// ```
pub fn kernel_named(name: &str) -> Result<Kernel, WidgetError> {
    match name {
        "gaussian" => Ok(Kernel::Gaussian { sigma: 1.0 }),
        "boxcar" => Ok(Kernel::Boxcar),
        "constant" => Ok(Kernel::Constant),
        "epanechikov" => Ok(Kernel::Epanechikov),
        _ => Err(input(
            "kernel",
            format!(
                "is `{name}`; choose gaussian, boxcar, constant or epanechikov"
            ),
        )),
    }
}

/// A Nadaraya–Watson estimate on the chapter's data, drawn.
#[derive(Clone, Debug)]
pub struct Estimate {
    /// The test MSE against the true function.
    pub test_mse: f32,
    /// The estimate, the truth and the training points (as
    /// [`plot_kernel_reg`] draws them).
    pub estimate: Svg,
    /// The attention weights, test inputs down, training inputs across.
    pub heatmap: Svg,
}

impl Estimate {
    /// What the widget's page receives: `test_mse` and the `estimate` and
    /// `heatmap` figures' SVG.
    ///
    /// # Examples
    /// See the test `widgets`.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "test_mse": self.test_mse,
            "estimate": self.estimate.as_str(),
            "heatmap": self.heatmap.as_str(),
        })
    }
}

/// Nadaraya–Watson regression on the chapter's data (50 training points
/// drawn with [`SEED`], 50 test inputs) with `kernel` at `bandwidth` h:
/// weights K((x − xᵢ)/h), normalised. For the Gaussian, h is σ, so h = 0.1,
/// 0.2, 0.5 and 1 are the chapter's bandwidth figure; the others are
/// scaled to reach h on either side.
///
/// # Errors
/// [`WidgetError::Input`] naming `bandwidth` unless it is in 0.01..=10, or
/// when a test input has no training input within reach of a boxcar or
/// Epanechikov kernel that narrow.
///
/// # Examples
/// ```
/// use d2l_attention::nadaraya_watson::Kernel;
/// use d2l_attention::widgets::nadaraya_watson_at;
///
/// let e = nadaraya_watson_at(Kernel::Gaussian { sigma: 1.0 }, 0.5).unwrap();
/// assert!(e.test_mse > 0.0 && e.test_mse < 1.0);
/// assert!(nadaraya_watson_at(Kernel::Boxcar, 0.01).is_err());
/// ```
pub fn nadaraya_watson_at(
    kernel: Kernel,
    bandwidth: f32,
) -> Result<Estimate, WidgetError> {
    if !(0.01..=10.0).contains(&bandwidth) {
        return Err(input(
            "bandwidth",
            format!("is {bandwidth}; it must be in 0.01..=10"),
        ));
    }
    let data = Dataset::generate(50, SEED, &Device::flex());
    let (x_train, x_test, kernel) = match kernel {
        Kernel::Gaussian { .. } => (
            data.x_train.clone(),
            data.x_test.clone(),
            Kernel::Gaussian { sigma: bandwidth },
        ),
        other => (
            data.x_train.clone() / bandwidth,
            data.x_test.clone() / bandwidth,
            other,
        ),
    };
    let (y_hat, weights) =
        nadaraya_watson(x_train, data.y_train.clone(), x_test, kernel)
            .map_err(|err| match err {
                RegressionError::EmptySupport { query, .. } => input(
                    "bandwidth",
                    format!(
                        "is {bandwidth}: the test input x = {:.1} has no training input within reach; widen the kernel",
                        data.x_test.clone().narrow(0, query, 1).into_scalar::<f32>()
                    ),
                ),
                other => other.into(),
            })?;
    Ok(Estimate {
        test_mse: data.test_mse(y_hat.clone()),
        estimate: plot_kernel_reg(&data, y_hat)?,
        heatmap: plot_attention_weights(weights)?,
    })
}

/// The positional encoding's figures for `encoding_dim` columns and
/// `num_steps` positions: the heatmap ([`encoding_heatmap`]) and four
/// columns as curves ([`encoding_columns`]): columns 6 to 9 as in the
/// chapter, or the last four of a narrower encoding.
///
/// # Errors
/// [`WidgetError::Input`] naming `encoding_dim` unless it is in 1..=128,
/// or `num_steps` unless it is in 1..=200.
///
/// # Examples
/// ```
/// use d2l_attention::widgets::positional_encoding_figures;
///
/// let (heatmap, columns) = positional_encoding_figures(8, 20).unwrap();
/// assert!(columns.as_str().contains("Col 7") && !columns.as_str().contains("Col 8"));
/// assert!(heatmap.as_str().starts_with("<svg"));
/// assert!(positional_encoding_figures(8, 0).is_err());
/// ```
pub fn positional_encoding_figures(
    encoding_dim: usize,
    num_steps: usize,
) -> Result<(Svg, Svg), WidgetError> {
    if !(1..=128).contains(&encoding_dim) {
        return Err(input(
            "encoding_dim",
            format!("is {encoding_dim}; it must be in 1..=128"),
        ));
    }
    if !(1..=200).contains(&num_steps) {
        return Err(input(
            "num_steps",
            format!("is {num_steps}; it must be in 1..=200"),
        ));
    }
    let device = Device::flex();
    let start = 6.min(encoding_dim.saturating_sub(4));
    let columns = start..(start + 4).min(encoding_dim);
    Ok((
        encoding_heatmap(encoding_dim, num_steps, &device)?,
        encoding_columns(encoding_dim, num_steps, columns, &device)?,
    ))
}

/// What the widgets and their tests call each kind of attention:
/// `encoder`, `decoder` (self-attention) and `cross`.
///
/// # Examples
/// ```
/// use d2l_attention::seq2seq::AttentionKind;
/// use d2l_attention::widgets::kind_name;
///
/// assert_eq!(kind_name(AttentionKind::EncoderDecoder), "cross");
/// ```
pub fn kind_name(kind: AttentionKind) -> &'static str {
    match kind {
        AttentionKind::EncoderSelfAttention => "encoder",
        AttentionKind::DecoderSelfAttention => "decoder",
        AttentionKind::EncoderDecoder => "cross",
    }
}

/// The weights of an attention figure, row-major (layers, heads, queries,
/// keys), for the widgets to hand to the page and the tests to compare.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::widgets::weights_of;
///
/// let w = Tensor::<4>::ones([1, 1, 2, 2], &Device::flex()) / 2.0;
/// assert_eq!(weights_of(w), [0.5; 4]);
/// ```
pub fn weights_of(weights: Tensor<4>) -> Vec<f32> {
    weights
        .try_into_vec_as::<f32>()
        .expect("weights computed on flex read back")
}
