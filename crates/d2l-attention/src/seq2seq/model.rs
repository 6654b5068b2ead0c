//! The encoder–decoder interface (d2l zh §9.6, en §10.6): what
//! [`train_seq2seq`](super::train_seq2seq) and
//! [`predict_seq2seq`](super::predict_seq2seq) need from a model, so that
//! the RNN of the Bahdanau chapter and a Transformer train alike.

use burn::module::{Module, ModuleDisplay};
use burn::tensor::{Int, Tensor};

use crate::attention_scoring::ValidLens;

/// Reads a source sentence (d2l's `Encoder`).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
/// use d2l_attention::seq2seq::Encoder;
///
/// let encoder = Seq2SeqConfig::new(10, 10, 8, 16, 2).init_encoder(&Device::flex());
/// let x = Tensor::<2, Int>::zeros([4, 7], &Device::flex());
/// assert_eq!(encoder.forward(x, None).outputs.dims(), [4, 7, 16]);
/// assert_eq!(encoder.vocab_size(), 10);
/// ```
pub trait Encoder: Module + ModuleDisplay {
    /// What the decoder starts from.
    type Output;

    /// Encodes the source token indices `x` (batch_size, num_steps);
    /// `valid_lens` (batch_size,) tells where each sentence's padding
    /// starts.
    fn forward(
        &self,
        x: Tensor<2, Int>,
        valid_lens: Option<&ValidLens>,
    ) -> Self::Output;

    /// The number of source tokens it embeds.
    fn vocab_size(&self) -> usize;

    /// The attention maps an output of [`Encoder::forward`] carries (the
    /// Transformer's self-attention, layer by layer and head by head); none
    /// for an encoder without attention, such as Bahdanau's GRU.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Int, Tensor};
    /// use d2l_attention::bahdanau::{Seq2SeqConfig, Seq2SeqEncoder};
    /// use d2l_attention::seq2seq::Encoder;
    ///
    /// let encoder = Seq2SeqConfig::new(10, 10, 8, 16, 2).init_encoder(&Device::flex());
    /// let encoded = encoder.forward(Tensor::<2, Int>::zeros([4, 7], &Device::flex()), None);
    /// assert!(<Seq2SeqEncoder as Encoder>::attention_maps(&encoded).is_empty());
    /// ```
    fn attention_maps(_output: &Self::Output) -> Vec<AttentionMap> {
        Vec::new()
    }
}

/// Writes a target sentence from an encoder's output (d2l's `Decoder` and
/// `AttentionDecoder`: every call returns its attention weights).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
/// use d2l_attention::seq2seq::{Decoder, Encoder};
///
/// let device = Device::flex();
/// let model = Seq2SeqConfig::new(10, 12, 8, 16, 2).init(&device);
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// let encoded = model.encoder.forward(x.clone(), None);
/// let state = model.decoder.init_state(encoded, None);
/// assert_eq!(model.decoder.forward(x, state).output.dims(), [4, 7, 12]);
/// ```
pub trait Decoder<EncOutput>: Module + ModuleDisplay {
    /// What the decoder carries from one call to the next.
    type State: Clone;

    /// The state before the first target token, from the encoder's output
    /// and the source's valid lengths (batch_size,).
    fn init_state(
        &self,
        enc_outputs: EncOutput,
        enc_valid_lens: Option<ValidLens>,
    ) -> Self::State;

    /// Decodes the target token indices `x` (batch_size, num_steps) from
    /// `state`: scores over the target vocabulary for every step, the state
    /// after the last one, and the attention weights.
    fn forward(
        &self,
        x: Tensor<2, Int>,
        state: Self::State,
    ) -> Decoded<Self::State>;

    /// The number of target tokens it scores.
    fn vocab_size(&self) -> usize;
}

/// Which attention of a model a map shows.
///
/// # Examples
/// ```
/// use d2l_attention::seq2seq::AttentionKind;
///
/// assert_ne!(AttentionKind::EncoderSelfAttention, AttentionKind::DecoderSelfAttention);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttentionKind {
    /// The encoder's source tokens attending to each other.
    EncoderSelfAttention,
    /// The decoder's target tokens attending to those before them (and
    /// themselves).
    DecoderSelfAttention,
    /// Decoder queries over the encoder's outputs.
    EncoderDecoder,
}

/// One attention map: the weights of one head of one layer.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::seq2seq::{AttentionKind, AttentionMap};
///
/// let weights = Tensor::<3>::ones([1, 2, 3], &Device::flex()) / 3.0;
/// let map = AttentionMap { kind: AttentionKind::EncoderDecoder, layer: 0, head: 0, weights };
/// assert_eq!(map.weights.dims(), [1, 2, 3]);
/// ```
#[derive(Clone, Debug)]
pub struct AttentionMap {
    /// Which of the model's attentions.
    pub kind: AttentionKind,
    /// The layer, from 0 (the one nearest the input).
    pub layer: usize,
    /// The head, from 0.
    pub head: usize,
    /// (batch_size, num_queries, num_keys).
    pub weights: Tensor<3>,
}

/// What a decoder returns.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
///
/// let device = Device::flex();
/// let model = Seq2SeqConfig::new(10, 10, 8, 16, 2).init(&device);
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// let decoded = model.forward(x.clone(), x, None);
/// // Bahdanau's decoder has one attention: one map.
/// assert_eq!(decoded.attention.len(), 1);
/// assert_eq!(decoded.attention[0].weights.dims(), [4, 7, 7]);
/// ```
#[derive(Clone, Debug)]
pub struct Decoded<S> {
    /// Scores over the target vocabulary: (batch_size, num_steps, vocab_size).
    pub output: Tensor<3>,
    /// The state after the last step.
    pub state: S,
    /// Every attention map of the call, each (batch_size, num_queries,
    /// num_keys): num_steps queries for the decoder's maps.
    pub attention: Vec<AttentionMap>,
}

/// An encoder and a decoder trained together (d2l's `EncoderDecoder`).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
///
/// let device = Device::flex();
/// // d2l's shape check: vocabularies of 10, embeddings 8, 16 hidden, 2 layers.
/// let model = Seq2SeqConfig::new(10, 10, 8, 16, 2).init(&device);
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// assert_eq!(model.forward(x.clone(), x, None).output.dims(), [4, 7, 10]);
/// ```
#[derive(Module, Debug)]
pub struct EncoderDecoder<E, D> {
    /// Reads the source sentence.
    pub encoder: E,
    /// Writes the target sentence.
    pub decoder: D,
}

impl<E: Encoder, D: Decoder<E::Output>> EncoderDecoder<E, D> {
    /// Encodes `enc_x` (batch_size, num_src_steps) and decodes `dec_x`
    /// (batch_size, num_steps) from there; `enc_valid_lens` (batch_size,)
    /// hides the source padding from the attention. The attention maps are
    /// the encoder's ([`Encoder::attention_maps`]), then the decoder's.
    ///
    /// # Panics
    /// When the inputs do not fit the model (the message names the
    /// argument).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Int, Tensor};
    /// use d2l_attention::attention_scoring::ValidLens;
    /// use d2l_attention::bahdanau::Seq2SeqConfig;
    ///
    /// let device = Device::flex();
    /// let model = Seq2SeqConfig::new(10, 10, 8, 16, 2).init(&device);
    /// let x = Tensor::<2, Int>::zeros([4, 7], &device);
    /// let lens = ValidLens::new(&[7, 7, 7, 2], &device);
    /// let decoded = model.forward(x.clone(), x, Some(lens));
    /// let weights = decoded.attention[0].weights.clone();
    /// // The last sentence has 2 source tokens: no weight past them.
    /// let row = weights.narrow(0, 3, 1).narrow(1, 0, 1).try_into_vec_as::<f32>().unwrap();
    /// assert!(row[2..].iter().all(|&w| w == 0.0));
    /// ```
    pub fn forward(
        &self,
        enc_x: Tensor<2, Int>,
        dec_x: Tensor<2, Int>,
        enc_valid_lens: Option<ValidLens>,
    ) -> Decoded<D::State> {
        let enc_outputs = self.encoder.forward(enc_x, enc_valid_lens.as_ref());
        let mut attention = E::attention_maps(&enc_outputs);
        let state = self.decoder.init_state(enc_outputs, enc_valid_lens);
        let mut decoded = self.decoder.forward(dec_x, state);
        attention.append(&mut decoded.attention);
        Decoded {
            attention,
            ..decoded
        }
    }
}
