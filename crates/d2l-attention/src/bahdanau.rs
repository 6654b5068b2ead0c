//! Bahdanau attention (d2l zh §10.4, en §11.4): an RNN encoder–decoder for
//! English→French whose decoder attends over the encoder's outputs at every
//! step (Bahdanau et al., 2015, "Neural Machine Translation by Jointly
//! Learning to Align and Translate").

use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::prelude::Config;
use burn::tensor::{Device, Int, Tensor};

use crate::attention_scoring::{
    AdditiveAttention, AdditiveAttentionConfig, AttentionError,
};
use crate::rnn::{StackedGru, StackedGruConfig, XAVIER};

/// Configuration shared by [`Seq2SeqEncoder`] and
/// [`Seq2SeqAttentionDecoder`] (d2l's constructor arguments).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
///
/// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
/// let device = Device::flex();
/// let config = Seq2SeqConfig::new(10, 8, 16, 2);
/// let (encoder, decoder) = (config.init_encoder(&device), config.init_decoder(&device));
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// let state = decoder.init_state(encoder.forward(x.clone()), None);
/// assert_eq!(decoder.forward(x, state).unwrap().output.dims(), [4, 7, 10]);
/// ```
#[derive(Config, Debug)]
pub struct Seq2SeqConfig {
    /// Number of tokens in the vocabulary.
    pub vocab_size: usize,
    /// Size of a token embedding.
    pub embed_size: usize,
    /// Size of the GRU's hidden state (and of the attention layer).
    pub num_hiddens: usize,
    /// Number of GRU layers.
    pub num_layers: usize,
    /// Dropout between GRU layers (and on the attention weights).
    #[config(default = 0.0)]
    pub dropout: f64,
}

impl Seq2SeqConfig {
    /// The encoder: Embedding, then a [`StackedGru`] (d2l's `Seq2SeqEncoder`).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Int, Tensor};
    /// use d2l_attention::bahdanau::Seq2SeqConfig;
    ///
    /// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
    /// let device = Device::flex();
    /// let config = Seq2SeqConfig::new(10, 8, 16, 2);
    /// let (encoder, decoder) = (config.init_encoder(&device), config.init_decoder(&device));
    /// let x = Tensor::<2, Int>::zeros([4, 7], &device);
    /// assert_eq!(encoder.forward(x).outputs.dims(), [4, 7, 16]);
    /// ```
    pub fn init_encoder(&self, device: &Device) -> Seq2SeqEncoder {
        Seq2SeqEncoder {
            embedding: EmbeddingConfig::new(self.vocab_size, self.embed_size)
                .init(device),
            rnn: self.gru(self.embed_size, device),
        }
    }

    /// The decoder of d2l zh §10.4.2.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Int, Tensor};
    /// use d2l_attention::bahdanau::Seq2SeqConfig;
    ///
    /// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
    /// let device = Device::flex();
    /// let config = Seq2SeqConfig::new(10, 8, 16, 2);
    /// let (encoder, decoder) = (config.init_encoder(&device), config.init_decoder(&device));
    /// let x = Tensor::<2, Int>::zeros([4, 7], &device);
    /// assert_eq!(decoder.dense.weight.dims(), [16, 10]);
    /// # let _ = (encoder, x);
    /// ```
    pub fn init_decoder(&self, device: &Device) -> Seq2SeqAttentionDecoder {
        let h = self.num_hiddens;
        Seq2SeqAttentionDecoder {
            attention: AdditiveAttentionConfig::new(h, h, h)
                .with_dropout(self.dropout)
                .with_initializer(XAVIER)
                .init(device),
            embedding: EmbeddingConfig::new(self.vocab_size, self.embed_size)
                .init(device),
            rnn: self.gru(self.embed_size + h, device),
            dense: LinearConfig::new(h, self.vocab_size)
                .with_initializer(XAVIER)
                .init(device),
        }
    }

    fn gru(&self, input_size: usize, device: &Device) -> StackedGru {
        StackedGruConfig::new(input_size, self.num_hiddens, self.num_layers)
            .with_dropout(self.dropout)
            .init(device)
    }
}

/// The encoder of d2l zh §9.7 (en §10.7): it embeds the source tokens and
/// runs them through a multi-layer GRU.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
///
/// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
/// let device = Device::flex();
/// let config = Seq2SeqConfig::new(10, 8, 16, 2);
/// let (encoder, decoder) = (config.init_encoder(&device), config.init_decoder(&device));
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// let encoded = encoder.forward(x);
/// assert_eq!((encoded.outputs.dims(), encoded.state.dims()), ([4, 7, 16], [2, 4, 16]));
/// # let _ = decoder;
/// ```
#[derive(Module, Debug)]
pub struct Seq2SeqEncoder {
    /// Token embedding, (vocab_size → embed_size).
    pub embedding: Embedding,
    /// The GRU.
    pub rnn: StackedGru,
}

/// What the encoder returns.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
///
/// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
/// let device = Device::flex();
/// let config = Seq2SeqConfig::new(10, 8, 16, 2);
/// let (encoder, decoder) = (config.init_encoder(&device), config.init_decoder(&device));
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// let encoded = encoder.forward(x);
/// // The last step's output is the top layer's final state.
/// let last = encoded.outputs.clone().narrow(1, 6, 1).reshape([4, 16]);
/// let top = encoded.state.narrow(0, 1, 1).reshape([4, 16]);
/// assert_eq!(last.to_data(), top.to_data());
/// # let _ = decoder;
/// ```
#[derive(Clone, Debug)]
pub struct Encoded {
    /// The last layer's state at every step: (batch_size, num_steps, num_hiddens).
    pub outputs: Tensor<3>,
    /// Every layer's final state: (num_layers, batch_size, num_hiddens).
    pub state: Tensor<3>,
}

impl Seq2SeqEncoder {
    /// Encodes the source token indices `x` (batch_size, num_steps),
    /// embedding one step at a time.
    ///
    /// # Panics
    /// When `x` has no steps, or an index is not below the vocabulary size.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Int, Tensor};
    /// use d2l_attention::bahdanau::Seq2SeqConfig;
    ///
    /// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
    /// let device = Device::flex();
    /// let config = Seq2SeqConfig::new(10, 8, 16, 2);
    /// let (encoder, decoder) = (config.init_encoder(&device), config.init_decoder(&device));
    /// let x = Tensor::<2, Int>::zeros([4, 7], &device);
    /// assert_eq!(encoder.forward(x).state.dims(), [2, 4, 16]);
    /// # let _ = decoder;
    /// ```
    pub fn forward(&self, x: Tensor<2, Int>) -> Encoded {
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
}

/// The decoder's state between calls (d2l's `[enc_outputs, hidden_state,
/// enc_valid_lens]`).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
///
/// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
/// let device = Device::flex();
/// let config = Seq2SeqConfig::new(10, 8, 16, 2);
/// let (encoder, decoder) = (config.init_encoder(&device), config.init_decoder(&device));
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// let lens = Tensor::<1, Int>::from_ints([7, 3, 5, 1], &device);
/// let state = decoder.init_state(encoder.forward(x), Some(lens));
/// assert_eq!(state.hidden_state.dims(), [2, 4, 16]);
/// ```
#[derive(Clone, Debug)]
pub struct DecoderState {
    /// The encoder's outputs, the attention's keys and values:
    /// (batch_size, num_src_steps, num_hiddens).
    pub enc_outputs: Tensor<3>,
    /// The GRU's state: (num_layers, batch_size, num_hiddens).
    pub hidden_state: Tensor<3>,
    /// Valid source lengths, (batch_size,): padding past them is not attended.
    pub enc_valid_lens: Option<Tensor<1, Int>>,
}

/// What the decoder returns.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
///
/// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
/// let device = Device::flex();
/// let config = Seq2SeqConfig::new(10, 8, 16, 2);
/// let (encoder, decoder) = (config.init_encoder(&device), config.init_decoder(&device));
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// let state = decoder.init_state(encoder.forward(x.clone()), None);
/// let decoded = decoder.forward(x, state).unwrap();
/// assert_eq!(decoded.attention_weights.dims(), [4, 7, 7]);
/// ```
#[derive(Clone, Debug)]
pub struct Decoded {
    /// Scores over the target vocabulary: (batch_size, num_steps, vocab_size).
    pub output: Tensor<3>,
    /// The state after the last step.
    pub state: DecoderState,
    /// The attention weights of every step over the source positions:
    /// (batch_size, num_steps, num_src_steps).
    pub attention_weights: Tensor<3>,
}

/// The attention decoder (d2l zh §10.4.2): before each step it attends over
/// the encoder's outputs with the last layer's previous hidden state as
/// query, and feeds the context together with the embedded token to the GRU.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
///
/// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
/// let device = Device::flex();
/// let config = Seq2SeqConfig::new(10, 8, 16, 2);
/// let (encoder, decoder) = (config.init_encoder(&device), config.init_decoder(&device));
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// let state = decoder.init_state(encoder.forward(x.clone()), None);
/// let decoded = decoder.forward(x, state).unwrap();
/// assert_eq!(decoded.state.hidden_state.dims(), [2, 4, 16]);
/// ```
#[derive(Module, Debug)]
pub struct Seq2SeqAttentionDecoder {
    /// Additive attention, (num_hiddens, num_hiddens) → num_hiddens.
    pub attention: AdditiveAttention,
    /// Token embedding, (vocab_size → embed_size).
    pub embedding: Embedding,
    /// The GRU over [context; embedding].
    pub rnn: StackedGru,
    /// Output layer, (num_hiddens → vocab_size).
    pub dense: Linear,
}

impl Seq2SeqAttentionDecoder {
    /// The first state: the encoder's outputs as keys and values, and its
    /// final state of all layers as the decoder's initial state.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Int, Tensor};
    /// use d2l_attention::bahdanau::Seq2SeqConfig;
    ///
    /// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
    /// let device = Device::flex();
    /// let config = Seq2SeqConfig::new(10, 8, 16, 2);
    /// let (encoder, decoder) = (config.init_encoder(&device), config.init_decoder(&device));
    /// let x = Tensor::<2, Int>::zeros([4, 7], &device);
    /// let state = decoder.init_state(encoder.forward(x), None);
    /// assert_eq!(state.enc_outputs.dims(), [4, 7, 16]);
    /// ```
    pub fn init_state(
        &self,
        encoded: Encoded,
        enc_valid_lens: Option<Tensor<1, Int>>,
    ) -> DecoderState {
        DecoderState {
            enc_outputs: encoded.outputs,
            hidden_state: encoded.state,
            enc_valid_lens,
        }
    }

    /// Decodes the target token indices `x` (batch_size, num_steps), one
    /// step after another, from `state`.
    ///
    /// # Errors
    /// [`AttentionError::Shape`] when `x`, the hidden state or the
    /// encoder's outputs do not fit this decoder or each other, or when
    /// `enc_valid_lens` is malformed (see
    /// [`masked_softmax`](crate::attention_scoring::masked_softmax)).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Int, Tensor};
    /// use d2l_attention::bahdanau::Seq2SeqConfig;
    ///
    /// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
    /// let device = Device::flex();
    /// let config = Seq2SeqConfig::new(10, 8, 16, 2);
    /// let (encoder, decoder) = (config.init_encoder(&device), config.init_decoder(&device));
    /// let x = Tensor::<2, Int>::zeros([4, 7], &device);
    /// let lens = Tensor::<1, Int>::from_ints([2, 7, 7, 7], &device);
    /// let state = decoder.init_state(encoder.forward(x.clone()), Some(lens));
    /// let weights = decoder.forward(x, state).unwrap().attention_weights;
    /// // The first sentence has 2 source tokens: no weight past them.
    /// let row = weights.narrow(0, 0, 1).narrow(1, 0, 1).try_into_vec_as::<f32>().unwrap();
    /// assert!(row[2..].iter().all(|&w| w == 0.0));
    /// ```
    // ANCHOR: decoder_forward
    pub fn forward(
        &self,
        x: Tensor<2, Int>,
        state: DecoderState,
    ) -> Result<Decoded, AttentionError> {
        self.check_state(&x, &state)?;
        let DecoderState {
            enc_outputs,
            hidden_state,
            enc_valid_lens,
        } = state;
        let (mut outputs, mut weights) = (Vec::new(), Vec::new());
        // The keys (the encoder's outputs) are the same at every step.
        let keys = self.attention.project_keys(
            enc_outputs.clone(),
            enc_outputs.clone(),
            enc_valid_lens.clone(),
        )?;
        // The first query is the top layer of the encoder's final state.
        let mut states: Vec<Tensor<2>> =
            hidden_state.iter_dim(0).map(|h| h.squeeze_dim(0)).collect();
        let mut query = states
            .last()
            .expect("at least one layer")
            .clone()
            .unsqueeze_dim(1);
        for t in 0..x.dims()[1] {
            // context: (batch_size, 1, num_hiddens)
            let attended = self.attention.attend(query, &keys)?;
            // (batch_size, 1, embed_size)
            let embedded = self.embedding.forward(x.clone().narrow(1, t, 1));
            let input =
                Tensor::cat(vec![attended.output, embedded], 2).squeeze_dim(1);
            // the top layer's new state
            query = self.rnn.step(input, &mut states).unsqueeze_dim(1);
            outputs.push(query.clone());
            weights.push(attended.attention_weights);
        }
        let hidden_state = Tensor::stack(states, 0);
        Ok(Decoded {
            output: self.dense.forward(Tensor::cat(outputs, 1)),
            state: DecoderState {
                enc_outputs,
                hidden_state,
                enc_valid_lens,
            },
            attention_weights: Tensor::cat(weights, 1),
        })
    }
    // ANCHOR_END: decoder_forward

    fn check_state(
        &self,
        x: &Tensor<2, Int>,
        state: &DecoderState,
    ) -> Result<(), AttentionError> {
        let [batch_size, num_steps] = x.dims();
        if num_steps == 0 {
            return Err(AttentionError::Shape {
                arg: "x",
                got: x.dims().to_vec(),
                expected: "(batch_size, num_steps) with at least one step"
                    .into(),
            });
        }
        let num_layers = self.rnn.layers.len();
        let num_hiddens = self.dense.weight.dims()[0];
        let hidden = state.hidden_state.dims();
        if hidden[0] != num_layers || hidden[2] != num_hiddens {
            return Err(AttentionError::Shape {
                arg: "state.hidden_state",
                got: hidden.to_vec(),
                expected: format!(
                    "(num_layers, batch_size, num_hiddens) = ({num_layers}, {batch_size}, {num_hiddens})"
                ),
            });
        }
        if hidden[1] != batch_size {
            return Err(AttentionError::mismatch(
                "x",
                x.dims().to_vec(),
                "state.hidden_state",
                hidden.to_vec(),
                "the batch sizes (dimension 0 of `x`, 1 of the state) differ",
            ));
        }
        let enc = state.enc_outputs.dims();
        if enc[0] != batch_size || enc[2] != num_hiddens {
            return Err(AttentionError::Shape {
                arg: "state.enc_outputs",
                got: enc.to_vec(),
                expected: format!(
                    "({batch_size}, num_src_steps, {num_hiddens})"
                ),
            });
        }
        Ok(())
    }
}

/// An encoder and a decoder trained together (d2l's `EncoderDecoder`).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::bahdanau::Seq2SeqConfig;
///
/// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
/// let device = Device::flex();
/// let config = Seq2SeqConfig::new(10, 8, 16, 2);
/// let (encoder, decoder) = (config.init_encoder(&device), config.init_decoder(&device));
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// use d2l_attention::bahdanau::EncoderDecoder;
///
/// let model = EncoderDecoder { encoder, decoder };
/// assert_eq!(model.forward(x.clone(), x, None).unwrap().output.dims(), [4, 7, 10]);
/// ```
#[derive(Module, Debug)]
pub struct EncoderDecoder {
    /// Reads the source sentence.
    pub encoder: Seq2SeqEncoder,
    /// Writes the target sentence.
    pub decoder: Seq2SeqAttentionDecoder,
}

impl EncoderDecoder {
    /// Encodes `enc_x` (batch_size, num_src_steps) and decodes `dec_x`
    /// (batch_size, num_steps) from there; `enc_valid_lens` (batch_size,)
    /// hides the source padding from the attention.
    ///
    /// # Errors
    /// As [`Seq2SeqAttentionDecoder::forward`].
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Int, Tensor};
    /// use d2l_attention::bahdanau::Seq2SeqConfig;
    ///
    /// // d2l's shape check: vocabulary 10, embeddings 8, 16 hidden, 2 layers.
    /// let device = Device::flex();
    /// let config = Seq2SeqConfig::new(10, 8, 16, 2);
    /// let (encoder, decoder) = (config.init_encoder(&device), config.init_decoder(&device));
    /// let x = Tensor::<2, Int>::zeros([4, 7], &device);
    /// use d2l_attention::bahdanau::EncoderDecoder;
    ///
    /// let model = EncoderDecoder { encoder, decoder };
    /// let decoded = model.forward(x.clone(), x, None).unwrap();
    /// assert_eq!(decoded.attention_weights.dims(), [4, 7, 7]);
    /// ```
    pub fn forward(
        &self,
        enc_x: Tensor<2, Int>,
        dec_x: Tensor<2, Int>,
        enc_valid_lens: Option<Tensor<1, Int>>,
    ) -> Result<Decoded, AttentionError> {
        let state = self
            .decoder
            .init_state(self.encoder.forward(enc_x), enc_valid_lens);
        self.decoder.forward(dec_x, state)
    }
}
