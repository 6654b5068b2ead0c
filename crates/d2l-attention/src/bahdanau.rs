//! Bahdanau attention (d2l zh §10.4, en §11.4): an RNN encoder–decoder for
//! English→French whose decoder attends over the encoder's outputs at every
//! step (Bahdanau et al., 2015, "Neural Machine Translation by Jointly
//! Learning to Align and Translate").

use burn::module::{Module, ModuleDisplay};
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::prelude::Config;
use burn::tensor::{Device, Int, Tensor};

use crate::attention_scoring::{
    AdditiveAttention, AdditiveAttentionConfig, Attended, DotProductAttention,
    DotProductAttentionConfig, ProjectedKeys, ValidLens,
};
use crate::rnn::{GruLayer, RnnLayer, StackedRnn, StackedRnnConfig, XAVIER};
use crate::seq2seq::{
    AttentionKind, AttentionMap, Decoded, Decoder, Encoder, EncoderDecoder,
};

/// The Bahdanau model: a recurrent encoder and an attention decoder; by
/// default d2l's, with GRU layers and additive attention (the chapter's
/// exercises 1 and 2 swap in [`LstmLayer`](crate::rnn::LstmLayer) and
/// [`DotProductAttention`]).
pub type BahdanauModel<L = GruLayer, A = AdditiveAttention> =
    EncoderDecoder<Seq2SeqEncoder<L>, Seq2SeqAttentionDecoder<L, A>>;

/// Configuration of the Bahdanau model (d2l's constructor arguments).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
///
/// // Source vocabulary 10, target 12, embeddings 8, 16 hidden, 2 layers.
/// let device = Device::flex();
/// let model = Seq2SeqConfig::new(10, 12, 8, 16, 2).init(&device);
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// assert_eq!(model.forward(x.clone(), x, None).output.dims(), [4, 7, 12]);
/// ```
#[derive(Config, Debug)]
pub struct Seq2SeqConfig {
    /// Number of tokens in the source vocabulary.
    pub src_vocab_size: usize,
    /// Number of tokens in the target vocabulary.
    pub tgt_vocab_size: usize,
    /// Size of a token embedding.
    pub embed_size: usize,
    /// Size of the recurrent layers' hidden state h (and of the attention
    /// layer).
    pub num_hiddens: usize,
    /// Number of recurrent layers.
    pub num_layers: usize,
    /// Dropout between recurrent layers (and on the attention weights).
    #[config(default = 0.0)]
    pub dropout: f64,
}

impl Seq2SeqConfig {
    /// The model, freshly initialised on `device`.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::bahdanau::Seq2SeqConfig;
    ///
    /// let model = Seq2SeqConfig::new(10, 12, 8, 16, 2).init(&Device::flex());
    /// assert_eq!(model.decoder.dense.weight.dims(), [16, 12]);
    /// ```
    pub fn init(&self, device: &Device) -> BahdanauModel {
        self.init_variant(device)
    }

    /// The model with other recurrent layers `L` or another attention `A`
    /// (the chapter's exercises 1 and 2), freshly initialised on `device`.
    ///
    /// # Examples
    /// ```
    /// use burn::module::Module;
    /// use burn::tensor::Device;
    /// use d2l_attention::attention_scoring::DotProductAttention;
    /// use d2l_attention::bahdanau::{BahdanauModel, Seq2SeqConfig};
    /// use d2l_attention::rnn::{GruLayer, LstmLayer};
    ///
    /// let config = Seq2SeqConfig::new(10, 12, 8, 16, 2);
    /// let device = Device::flex();
    /// let gru = config.init(&device).num_params();
    /// let lstm: BahdanauModel<LstmLayer> = config.init_variant(&device);
    /// // Four gates per layer where the GRU has three; one gate's weights
    /// // and biases for an input of `n`:
    /// let gate = |n: usize| 16 * (n + 16 + 2);
    /// // encoder layers: input 8, then 16; decoder: 8 + 16 (with the context), then 16
    /// assert_eq!(lstm.num_params() - gru, gate(8) + gate(16) + gate(8 + 16) + gate(16));
    /// // The dot product has no weights: W_q, W_k (16 × 16) and w_v (16) go.
    /// let dot: BahdanauModel<GruLayer, DotProductAttention> = config.init_variant(&device);
    /// assert_eq!(gru - dot.num_params(), 2 * 16 * 16 + 16);
    /// ```
    pub fn init_variant<L: RnnLayer, A: DecoderAttention>(
        &self,
        device: &Device,
    ) -> BahdanauModel<L, A> {
        EncoderDecoder {
            encoder: self.encoder(device),
            decoder: self.decoder(device),
        }
    }

    /// The encoder: Embedding, then a [`StackedGru`] (d2l's `Seq2SeqEncoder`).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Int, Tensor};
    /// use d2l_attention::bahdanau::Seq2SeqConfig;
    /// use d2l_attention::seq2seq::Encoder;
    ///
    /// let device = Device::flex();
    /// let encoder = Seq2SeqConfig::new(10, 12, 8, 16, 2).init_encoder(&device);
    /// let x = Tensor::<2, Int>::zeros([4, 7], &device);
    /// assert_eq!(encoder.forward(x, None).outputs.dims(), [4, 7, 16]);
    /// ```
    pub fn init_encoder(&self, device: &Device) -> Seq2SeqEncoder {
        self.encoder(device)
    }

    fn encoder<L: RnnLayer>(&self, device: &Device) -> Seq2SeqEncoder<L> {
        Seq2SeqEncoder {
            embedding: EmbeddingConfig::new(
                self.src_vocab_size,
                self.embed_size,
            )
            .init(device),
            rnn: self.rnn(self.embed_size, device),
        }
    }

    /// The decoder of d2l zh §10.4.2.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::bahdanau::Seq2SeqConfig;
    ///
    /// let decoder = Seq2SeqConfig::new(10, 12, 8, 16, 2).init_decoder(&Device::flex());
    /// assert_eq!(decoder.embedding.weight.dims(), [12, 8]);
    /// ```
    pub fn init_decoder(&self, device: &Device) -> Seq2SeqAttentionDecoder {
        self.decoder(device)
    }

    fn decoder<L: RnnLayer, A: DecoderAttention>(
        &self,
        device: &Device,
    ) -> Seq2SeqAttentionDecoder<L, A> {
        let h = self.num_hiddens;
        Seq2SeqAttentionDecoder {
            attention: A::init(h, self.dropout, device),
            embedding: EmbeddingConfig::new(
                self.tgt_vocab_size,
                self.embed_size,
            )
            .init(device),
            rnn: self.rnn(self.embed_size + h, device),
            dense: LinearConfig::new(h, self.tgt_vocab_size)
                .with_initializer(XAVIER)
                .init(device),
        }
    }

    fn rnn<L: RnnLayer>(
        &self,
        input_size: usize,
        device: &Device,
    ) -> StackedRnn<L> {
        StackedRnnConfig::new(input_size, self.num_hiddens, self.num_layers)
            .with_dropout(self.dropout)
            .init(device)
    }
}

/// The encoder of d2l zh §9.7 (en §10.7): it embeds the source tokens and
/// runs them through a multi-layer GRU (or other recurrent layers `L`).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
/// use d2l_attention::seq2seq::Encoder;
///
/// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
/// let device = Device::flex();
/// let encoder = Seq2SeqConfig::new(10, 10, 8, 16, 2).init_encoder(&device);
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// let encoded = encoder.forward(x, None);
/// assert_eq!((encoded.outputs.dims(), encoded.state.dims()), ([4, 7, 16], [2, 4, 16]));
/// ```
#[derive(Module, Debug)]
pub struct Seq2SeqEncoder<L = GruLayer> {
    /// Token embedding, (vocab_size → embed_size).
    pub embedding: Embedding,
    /// The recurrent layers.
    pub rnn: StackedRnn<L>,
}

/// What the encoder returns.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
/// use d2l_attention::seq2seq::Encoder;
///
/// let device = Device::flex();
/// let encoder = Seq2SeqConfig::new(10, 10, 8, 16, 2).init_encoder(&device);
/// let encoded = encoder.forward(Tensor::<2, Int>::zeros([4, 7], &device), None);
/// // The last step's output is the top layer's final state.
/// let last = encoded.outputs.clone().narrow(1, 6, 1).reshape([4, 16]);
/// let top = encoded.state.narrow(0, 1, 1).reshape([4, 16]);
/// assert_eq!(last.to_data(), top.to_data());
/// ```
#[derive(Clone, Debug)]
pub struct Encoded {
    /// The top layer's output h at every step: (batch_size, num_steps,
    /// num_hiddens).
    pub outputs: Tensor<3>,
    /// Every layer's final state: (num_layers, batch_size, state_size),
    /// where state_size is num_hiddens for a GRU and 2 · num_hiddens for an
    /// LSTM (its h, then its memory cell c).
    pub state: Tensor<3>,
}

impl<L: RnnLayer> Encoder for Seq2SeqEncoder<L> {
    type Output = Encoded;

    /// Encodes the source token indices `x` (batch_size, num_steps),
    /// embedding one step at a time. Every step is read, padding included
    /// (the final state passes through it, as in d2l), so `valid_lens` is
    /// not needed.
    ///
    /// # Panics
    /// When `x` has no steps, or an index is not below the vocabulary size.
    fn forward(
        &self,
        x: Tensor<2, Int>,
        _valid_lens: Option<&ValidLens>,
    ) -> Encoded {
        let [batch_size, num_steps] = x.dims();
        assert!(num_steps > 0, "`x` has no steps: {:?}", x.dims());
        let mut states = self.rnn.zero_states(batch_size, &x.device());
        let outputs: Vec<Tensor<2>> = (0..num_steps)
            .map(|t| {
                let embedded =
                    self.embedding.forward(x.clone().narrow(1, t, 1));
                self.rnn.step(embedded.squeeze_dim(1), &mut states)
            })
            .collect();
        Encoded {
            outputs: Tensor::stack(outputs, 1),
            state: Tensor::stack(states, 0),
        }
    }

    fn vocab_size(&self) -> usize {
        self.embedding.weight.dims()[0]
    }
}

/// The decoder's state between calls (d2l's `[enc_outputs, hidden_state,
/// enc_valid_lens]`).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::attention_scoring::ValidLens;
/// use d2l_attention::bahdanau::Seq2SeqConfig;
/// use d2l_attention::seq2seq::{Decoder, Encoder};
///
/// let device = Device::flex();
/// let model = Seq2SeqConfig::new(10, 10, 8, 16, 2).init(&device);
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// let lens = ValidLens::new(&[7, 3, 5, 1], &device);
/// let state = model.decoder.init_state(model.encoder.forward(x, None), Some(lens));
/// assert_eq!(state.hidden_state.dims(), [2, 4, 16]);
/// ```
#[derive(Clone, Debug)]
pub struct DecoderState {
    /// The encoder's outputs, the attention's keys and values:
    /// (batch_size, num_src_steps, num_hiddens).
    pub enc_outputs: Tensor<3>,
    /// The recurrent layers' state: (num_layers, batch_size, state_size),
    /// as [`Encoded::state`].
    pub hidden_state: Tensor<3>,
    /// Valid source lengths, (batch_size,): padding past them is not attended.
    pub enc_valid_lens: Option<ValidLens>,
}

/// The attention decoder (d2l zh §10.4.2): before each step it attends over
/// the encoder's outputs with the last layer's previous hidden state as
/// query, and feeds the context together with the embedded token to the
/// recurrent layers (d2l's GRU, or `L`).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
/// use d2l_attention::seq2seq::{Decoder, Encoder};
///
/// let device = Device::flex();
/// let model = Seq2SeqConfig::new(10, 10, 8, 16, 2).init(&device);
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// let state = model.decoder.init_state(model.encoder.forward(x.clone(), None), None);
/// let decoded = model.decoder.forward(x, state);
/// assert_eq!(decoded.state.hidden_state.dims(), [2, 4, 16]);
/// ```
#[derive(Module, Debug)]
pub struct Seq2SeqAttentionDecoder<L = GruLayer, A = AdditiveAttention> {
    /// The attention (d2l's: additive, (num_hiddens, num_hiddens) →
    /// num_hiddens).
    pub attention: A,
    /// Token embedding, (vocab_size → embed_size).
    pub embedding: Embedding,
    /// The recurrent layers over [context; embedding].
    pub rnn: StackedRnn<L>,
    /// Output layer, (num_hiddens → vocab_size).
    pub dense: Linear,
}

impl<L: RnnLayer, A: DecoderAttention> Decoder<Encoded>
    for Seq2SeqAttentionDecoder<L, A>
{
    type State = DecoderState;

    /// The first state: the encoder's outputs as keys and values, and its
    /// final state of all layers as the decoder's initial state.
    ///
    /// Keys past the longest source get weight 0, so they are cut here and
    /// never scored (unless a source is empty: its row is uniform over all
    /// keys, as in d2l).
    fn init_state(
        &self,
        encoded: Encoded,
        enc_valid_lens: Option<ValidLens>,
    ) -> DecoderState {
        let num_src_steps = encoded.outputs.dims()[1];
        let num_keys = match &enc_valid_lens {
            Some(lens) if lens.min() > 0 => lens.max().min(num_src_steps),
            _ => num_src_steps,
        };
        DecoderState {
            enc_outputs: encoded.outputs.narrow(1, 0, num_keys),
            hidden_state: encoded.state,
            enc_valid_lens,
        }
    }

    /// Decodes the target token indices `x` (batch_size, num_steps), one
    /// step after another, from `state`; one attention map,
    /// [`AttentionKind::EncoderDecoder`], layer 0, head 0.
    ///
    /// # Panics
    /// When `x`, the hidden state or the encoder's outputs do not fit this
    /// decoder or each other, or `enc_valid_lens` does not fit the encoder's
    /// outputs (the message names the argument).
    // ANCHOR: decoder_forward
    fn forward(
        &self,
        x: Tensor<2, Int>,
        state: DecoderState,
    ) -> Decoded<DecoderState> {
        self.check_state(&x, &state);
        let DecoderState {
            enc_outputs,
            hidden_state,
            enc_valid_lens,
        } = state;
        let (mut outputs, mut weights) = (Vec::new(), Vec::new());
        // The keys (the encoder's outputs) are the same at every step.
        let keys = self
            .attention
            .prepare(enc_outputs.clone(), enc_valid_lens.clone());
        // The first query is the top layer of the encoder's final state.
        let mut states: Vec<Tensor<2>> =
            hidden_state.iter_dim(0).map(|h| h.squeeze_dim(0)).collect();
        let top = states.last().expect("at least one layer").clone();
        let mut query = self.rnn.output(top).unsqueeze_dim(1);
        for t in 0..x.dims()[1] {
            // context: (batch_size, 1, num_hiddens)
            let attended = self.attention.attend_step(query, &keys);
            // (batch_size, 1, embed_size)
            let embedded = self.embedding.forward(x.clone().narrow(1, t, 1));
            let input =
                Tensor::cat(vec![attended.output, embedded], 2).squeeze_dim(1);
            // the top layer's new state
            query = self.rnn.step(input, &mut states).unsqueeze_dim(1);
            outputs.push(query.clone());
            weights.push(attended.attention_weights.tensor());
        }
        let hidden_state = Tensor::stack(states, 0);
        Decoded {
            output: self.dense.forward(Tensor::cat(outputs, 1)),
            state: DecoderState {
                enc_outputs,
                hidden_state,
                enc_valid_lens,
            },
            attention: vec![AttentionMap {
                kind: AttentionKind::EncoderDecoder,
                layer: 0,
                head: 0,
                weights: Tensor::cat(weights, 1),
            }],
        }
    }
    // ANCHOR_END: decoder_forward

    fn vocab_size(&self) -> usize {
        self.dense.weight.dims()[1]
    }
}

impl<L: RnnLayer, A> Seq2SeqAttentionDecoder<L, A> {
    /// The shape checks of [`Decoder::forward`], all on the host.
    fn check_state(&self, x: &Tensor<2, Int>, state: &DecoderState) {
        let [batch_size, num_steps] = x.dims();
        assert!(
            num_steps > 0,
            "`x` has shape {:?}, expected (batch_size, num_steps) with at least one step",
            x.dims()
        );
        let num_layers = self.rnn.layers.len();
        let num_hiddens = self.dense.weight.dims()[0];
        // Not `self.rnn.state_size()`: reading a parameter initialises it
        // (burn's parameters are lazy), and seeded runs depend on the order.
        let size = L::STATE_PARTS * num_hiddens;
        let hidden = state.hidden_state.dims();
        assert!(
            hidden == [num_layers, batch_size, size],
            "`state.hidden_state` has shape {hidden:?}, expected (num_layers, batch_size, state_size) = ({num_layers}, {batch_size}, {size}) for `x` {:?}",
            x.dims()
        );
        let enc = state.enc_outputs.dims();
        assert!(
            enc[0] == batch_size && enc[2] == num_hiddens,
            "`state.enc_outputs` has shape {enc:?}, expected ({batch_size}, num_src_steps, {num_hiddens})"
        );
    }
}

/// The attention of [`Seq2SeqAttentionDecoder`]: set up once per batch
/// from the encoder's outputs (keys and values at once), then asked once
/// per decoding step. d2l uses [`AdditiveAttention`]; exercise 2 of the
/// chapter swaps in [`DotProductAttention`].
pub trait DecoderAttention: Module + ModuleDisplay {
    /// The keys, values and valid lengths of a batch, ready for every step.
    type Keys;

    /// A layer for queries and keys of `num_hiddens` entries, with
    /// `dropout` on its attention weights, on `device`.
    fn init(num_hiddens: usize, dropout: f64, device: &Device) -> Self;

    /// The encoder's outputs (batch_size, num_keys, num_hiddens) as keys
    /// and values, with their `valid_lens`.
    fn prepare(
        &self,
        enc_outputs: Tensor<3>,
        valid_lens: Option<ValidLens>,
    ) -> Self::Keys;

    /// Pools the values for `query` (batch_size, 1, num_hiddens): the
    /// context (batch_size, 1, num_hiddens) and the weights (batch_size, 1,
    /// num_keys).
    ///
    /// # Panics
    /// When `query` does not fit the keys (naming the argument).
    fn attend_step(&self, query: Tensor<3>, keys: &Self::Keys) -> Attended;
}

/// d2l's choice: the keys are projected once per batch
/// ([`AdditiveAttention::project_keys`]).
impl DecoderAttention for AdditiveAttention {
    type Keys = ProjectedKeys;

    fn init(num_hiddens: usize, dropout: f64, device: &Device) -> Self {
        let h = num_hiddens;
        AdditiveAttentionConfig::new(h, h, h)
            .with_dropout(dropout)
            .with_initializer(XAVIER)
            .init(device)
    }

    fn prepare(
        &self,
        enc_outputs: Tensor<3>,
        valid_lens: Option<ValidLens>,
    ) -> ProjectedKeys {
        self.project_keys(enc_outputs.clone(), enc_outputs, valid_lens)
    }

    fn attend_step(&self, query: Tensor<3>, keys: &ProjectedKeys) -> Attended {
        self.attend(query, keys)
    }
}

/// Scaled dot products: nothing to prepare and no weights.
impl DecoderAttention for DotProductAttention {
    type Keys = (Tensor<3>, Option<ValidLens>);

    fn init(_num_hiddens: usize, dropout: f64, _device: &Device) -> Self {
        DotProductAttentionConfig::new()
            .with_dropout(dropout)
            .init()
    }

    fn prepare(
        &self,
        enc_outputs: Tensor<3>,
        valid_lens: Option<ValidLens>,
    ) -> Self::Keys {
        (enc_outputs, valid_lens)
    }

    fn attend_step(&self, query: Tensor<3>, keys: &Self::Keys) -> Attended {
        let (keys, valid_lens) = keys;
        self.forward(query, keys.clone(), keys.clone(), valid_lens.as_ref())
    }
}
