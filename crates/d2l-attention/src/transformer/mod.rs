//! The Transformer (d2l en §11.7, zh §10.7; Vaswani et al., 2017,
//! "Attention Is All You Need"): an encoder and a decoder built only from
//! multi-head attention, position-wise feed-forward networks, residual
//! connections and layer normalisation, trained and used through the same
//! [`Encoder`](crate::seq2seq::Encoder) and
//! [`Decoder`](crate::seq2seq::Decoder) traits as Bahdanau's RNN.
//!
//! Modes, as everywhere in burn: on an autodiff device (training) dropout
//! is active; the inference copy of a model (`model.valid()`) has none.
//! The decoder's causal mask applies in both (see [`TransformerDecoder`]).

mod decoder;
mod encoder;

pub use decoder::{
    CrossAttention, DecoderBlockOutput, TransformerDecoder,
    TransformerDecoderBlock, TransformerDecoderState,
};
pub use encoder::{
    TransformerEncoded, TransformerEncoder, TransformerEncoderBlock,
};

use burn::module::Module;
use burn::nn::{
    Dropout, DropoutConfig, Embedding, EmbeddingConfig, Initializer,
    LayerNormConfig, Linear, LinearConfig,
};
use burn::prelude::Config;
use burn::tensor::{Device, Int, Tensor, activation::relu};

use crate::kernels::{LayerNorm, dropout};

use crate::attention_scoring::{AttentionWeights, TORCH_LINEAR};
use crate::multihead_attention::{
    MultiHeadAttention, MultiHeadAttentionConfig,
};
use crate::positional_encoding::{
    PositionalEncoding, PositionalEncodingConfig,
};
use crate::rnn::XAVIER;
use crate::seq2seq::{AttentionKind, AttentionMap, EncoderDecoder};

/// The Transformer translator: [`TransformerEncoder`] and
/// [`TransformerDecoder`], trained by
/// [`train_seq2seq`](crate::seq2seq::train_seq2seq) and used by
/// [`predict_seq2seq`](crate::seq2seq::predict_seq2seq) as Bahdanau's is.
///
/// # Examples
/// See [`TransformerConfig`].
pub type TransformerModel =
    EncoderDecoder<TransformerEncoder, TransformerDecoder>;

/// Configuration of the Transformer translator, with d2l zh §10.7's
/// settings as defaults: 32 hidden units, an FFN of 64, 4 heads, 2 layers,
/// dropout 0.1.
///
/// Every linear layer (attention projections, FFN, output layer) starts
/// from [`XAVIER`](crate::rnn::XAVIER), as after d2l's `train_seq2seq` initialisation; the
/// embeddings from N(0, 1) and the layer norms from γ = 1, β = 0, as in
/// PyTorch. Attention projections have no biases (d2l's `use_bias=False`).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::transformer::TransformerConfig;
///
/// let config = TransformerConfig::new(10, 12);
/// assert_eq!((config.num_hiddens, config.ffn_num_hiddens, config.num_heads), (32, 64, 4));
/// assert_eq!((config.num_layers, config.dropout), (2, 0.1));
/// let device = Device::flex();
/// let model = config.init(&device);
/// let x = Tensor::<2, Int>::zeros([4, 7], &device);
/// assert_eq!(model.forward(x.clone(), x, None).output.dims(), [4, 7, 12]);
/// ```
#[derive(Config, Debug)]
pub struct TransformerConfig {
    /// Number of tokens in the source vocabulary.
    pub src_vocab_size: usize,
    /// Number of tokens in the target vocabulary.
    pub tgt_vocab_size: usize,
    /// Size of every token's vector (d2l's `num_hiddens`).
    #[config(default = 32)]
    pub num_hiddens: usize,
    /// Hidden size of the position-wise FFN.
    #[config(default = 64)]
    pub ffn_num_hiddens: usize,
    /// Heads of every multi-head attention.
    #[config(default = 4)]
    pub num_heads: usize,
    /// Blocks in the encoder, and in the decoder (d2l's `num_blks`).
    #[config(default = 2)]
    pub num_layers: usize,
    /// Dropout on the positional encoding's sum, the attention weights and
    /// every sub-layer's output.
    #[config(default = 0.1)]
    pub dropout: f64,
    /// The longest sequence the positional encoding covers.
    #[config(default = 1000)]
    pub max_len: usize,
    /// Whether decoder blocks attend to the encoder's outputs; without it
    /// the decoder ignores the encoder, as a decoder-only language model
    /// does (d2l en §11.7, exercise 3).
    #[config(default = true)]
    pub cross_attention: bool,
    /// How every linear layer starts.
    #[config(default = "XAVIER")]
    pub initializer: Initializer,
    /// Additive scoring with this many hidden units in every attention, in
    /// place of scaled dot products (d2l en §11.7, exercise 2).
    #[config(default = "None")]
    pub additive_hiddens: Option<usize>,
}

impl TransformerConfig {
    /// The model on `device`.
    ///
    /// # Panics
    /// When `num_heads` does not divide `num_hiddens`.
    ///
    /// # Examples
    /// See [`TransformerConfig`].
    pub fn init(&self, device: &Device) -> TransformerModel {
        EncoderDecoder {
            encoder: self.init_encoder(device),
            decoder: self.init_decoder(device),
        }
    }

    /// The encoder: embedding, positional encoding and `num_layers`
    /// [`TransformerEncoderBlock`]s.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Int, Tensor};
    /// use d2l_attention::attention_scoring::ValidLens;
    /// use d2l_attention::seq2seq::Encoder;
    /// use d2l_attention::transformer::TransformerConfig;
    ///
    /// // d2l en's check: vocabulary 200, 24 hidden, FFN 48, 8 heads, 2 blocks.
    /// let device = Device::flex();
    /// let encoder = TransformerConfig::new(200, 200)
    ///     .with_num_hiddens(24).with_ffn_num_hiddens(48).with_num_heads(8)
    ///     .with_dropout(0.5)
    ///     .init_encoder(&device);
    /// let x = Tensor::<2, Int>::ones([2, 100], &device);
    /// let valid_lens = ValidLens::new(&[3, 2], &device);
    /// assert_eq!(encoder.forward(x, Some(&valid_lens)).outputs.dims(), [2, 100, 24]);
    /// ```
    pub fn init_encoder(&self, device: &Device) -> TransformerEncoder {
        TransformerEncoder {
            embedding: self.embedding(self.src_vocab_size, device),
            pos_encoding: self.pos_encoding(device),
            blks: (0..self.num_layers)
                .map(|_| self.block().init_encoder_block(device))
                .collect(),
        }
    }

    /// The decoder: embedding, positional encoding, `num_layers`
    /// [`TransformerDecoderBlock`]s and a dense layer to the vocabulary.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::transformer::TransformerConfig;
    ///
    /// let decoder = TransformerConfig::new(10, 12).init_decoder(&Device::flex());
    /// assert_eq!((decoder.blks.len(), decoder.dense.weight.dims()), (2, [32, 12]));
    /// ```
    pub fn init_decoder(&self, device: &Device) -> TransformerDecoder {
        TransformerDecoder {
            embedding: self.embedding(self.tgt_vocab_size, device),
            pos_encoding: self.pos_encoding(device),
            blks: (0..self.num_layers)
                .map(|_| self.block().init_decoder_block(device))
                .collect(),
            dense: LinearConfig::new(self.num_hiddens, self.tgt_vocab_size)
                .with_initializer(self.initializer.clone())
                .init(device),
        }
    }

    /// The configuration every block is built from.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::transformer::TransformerConfig;
    ///
    /// let block = TransformerConfig::new(10, 12).with_cross_attention(false).block();
    /// assert_eq!((block.num_hiddens, block.ffn_num_hiddens, block.num_heads), (32, 64, 4));
    /// assert!(!block.cross_attention && !block.bias);
    /// ```
    pub fn block(&self) -> TransformerBlockConfig {
        TransformerBlockConfig::new(
            self.num_hiddens,
            self.ffn_num_hiddens,
            self.num_heads,
        )
        .with_dropout(self.dropout)
        .with_cross_attention(self.cross_attention)
        .with_initializer(self.initializer.clone())
        .with_additive_hiddens(self.additive_hiddens)
    }

    fn embedding(&self, vocab_size: usize, device: &Device) -> Embedding {
        EmbeddingConfig::new(vocab_size, self.num_hiddens).init(device)
    }

    fn pos_encoding(&self, device: &Device) -> PositionalEncoding {
        PositionalEncodingConfig::new(self.num_hiddens)
            .with_dropout(self.dropout)
            .with_max_len(self.max_len)
            .init(device)
    }
}

/// Configuration of one encoder or decoder block (d2l's
/// `TransformerEncoderBlock(num_hiddens, ffn_num_hiddens, num_heads,
/// dropout, use_bias=False)` and `TransformerDecoderBlock`).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::attention_scoring::ValidLens;
/// use d2l_attention::transformer::TransformerBlockConfig;
///
/// // d2l en's check: a block keeps the shape of its input.
/// let device = Device::flex();
/// let block = TransformerBlockConfig::new(24, 48, 8).with_dropout(0.5).init_encoder_block(&device);
/// let x = Tensor::<3>::ones([2, 100, 24], &device);
/// let valid_lens = ValidLens::new(&[3, 2], &device);
/// assert_eq!(block.forward(x, Some(&valid_lens)).output.dims(), [2, 100, 24]);
/// ```
#[derive(Config, Debug)]
pub struct TransformerBlockConfig {
    /// Size of every token's vector.
    pub num_hiddens: usize,
    /// Hidden size of the position-wise FFN.
    pub ffn_num_hiddens: usize,
    /// Heads of the multi-head attentions.
    pub num_heads: usize,
    /// Dropout on the attention weights and on every sub-layer's output.
    #[config(default = 0.0)]
    pub dropout: f64,
    /// Whether the attention projections have biases (d2l: no).
    #[config(default = false)]
    pub bias: bool,
    /// Whether a decoder block attends to the encoder's outputs.
    #[config(default = true)]
    pub cross_attention: bool,
    /// How every linear layer starts.
    #[config(default = "TORCH_LINEAR")]
    pub initializer: Initializer,
    /// Additive scoring in place of scaled dot products, with this many
    /// hidden units.
    #[config(default = "None")]
    pub additive_hiddens: Option<usize>,
}

impl TransformerBlockConfig {
    /// A multi-head attention of this block's sizes.
    fn attention(&self, device: &Device) -> MultiHeadAttention {
        let n = self.num_hiddens;
        MultiHeadAttentionConfig::new(n, n, n, n, self.num_heads)
            .with_dropout(self.dropout)
            .with_bias(self.bias)
            .with_initializer(self.initializer.clone())
            .with_additive_hiddens(self.additive_hiddens)
            .init(device)
    }

    fn add_norm(&self, device: &Device) -> AddNorm {
        AddNormConfig::new(self.num_hiddens)
            .with_dropout(self.dropout)
            .init(device)
    }

    fn ffn(&self, device: &Device) -> PositionWiseFFN {
        let n = self.num_hiddens;
        PositionWiseFFNConfig::new(n, self.ffn_num_hiddens, n)
            .with_initializer(self.initializer.clone())
            .init(device)
    }
}

/// Configuration of [`PositionWiseFFN`] (d2l's `PositionWiseFFN(
/// ffn_num_hiddens, ffn_num_outputs)`, whose lazy layers take the input
/// size from the first call; here it is given).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::transformer::PositionWiseFFNConfig;
///
/// // d2l's check: 4 inputs, 4 hidden, 8 outputs, on a (2, 3, 4) batch.
/// let device = Device::flex();
/// let ffn = PositionWiseFFNConfig::new(4, 4, 8).init(&device);
/// assert_eq!(ffn.forward(Tensor::<3>::ones([2, 3, 4], &device)).dims(), [2, 3, 8]);
/// ```
#[derive(Config, Debug)]
pub struct PositionWiseFFNConfig {
    /// Size of each input vector.
    pub num_inputs: usize,
    /// Size of the hidden layer.
    pub ffn_num_hiddens: usize,
    /// Size of each output vector.
    pub ffn_num_outputs: usize,
    /// How both layers start.
    #[config(default = "TORCH_LINEAR")]
    pub initializer: Initializer,
}

impl PositionWiseFFNConfig {
    /// The network on `device`.
    ///
    /// # Examples
    /// See [`PositionWiseFFNConfig`].
    pub fn init(&self, device: &Device) -> PositionWiseFFN {
        let linear = |i, o| {
            LinearConfig::new(i, o)
                .with_initializer(self.initializer.clone())
                .init(device)
        };
        PositionWiseFFN {
            dense1: linear(self.num_inputs, self.ffn_num_hiddens),
            dense2: linear(self.ffn_num_hiddens, self.ffn_num_outputs),
        }
    }
}

/// The position-wise feed-forward network (d2l en §11.7.2): the same two
/// dense layers with a ReLU between them, applied to every position alone.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::transformer::PositionWiseFFNConfig;
///
/// let device = Device::flex();
/// let ffn = PositionWiseFFNConfig::new(4, 4, 8).init(&device);
/// let x = d2l_attention::random::randn([1, 3, 4], 0, &device);
/// // Position 1 alone gives what it gives among the others.
/// let alone = ffn.forward(x.clone().narrow(1, 1, 1));
/// let among = ffn.forward(x).narrow(1, 1, 1);
/// assert_eq!(alone.to_data(), among.to_data());
/// ```
#[derive(Module, Debug)]
pub struct PositionWiseFFN {
    /// num_inputs → ffn_num_hiddens.
    pub dense1: Linear,
    /// ffn_num_hiddens → ffn_num_outputs.
    pub dense2: Linear,
}

impl PositionWiseFFN {
    /// `x` (batch_size, num_steps, num_inputs) → (batch_size, num_steps,
    /// ffn_num_outputs).
    ///
    /// # Panics
    /// When the vectors of `x` are not num_inputs long.
    ///
    /// # Examples
    /// See [`PositionWiseFFN`].
    // ANCHOR: ffn_forward
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        self.dense2.forward(relu(self.dense1.forward(x)))
    }
    // ANCHOR_END: ffn_forward
}

/// Configuration of [`AddNorm`] (d2l's `AddNorm(norm_shape, dropout)`).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::transformer::AddNormConfig;
///
/// // d2l's check: the sum keeps the shape, (2, 3, 4).
/// let device = Device::flex();
/// let add_norm = AddNormConfig::new(4).with_dropout(0.5).init(&device);
/// let x = Tensor::<3>::ones([2, 3, 4], &device);
/// assert_eq!(add_norm.forward(x.clone(), x).dims(), [2, 3, 4]);
/// ```
#[derive(Config, Debug)]
pub struct AddNormConfig {
    /// Size of the last axis, which the layer norm normalises.
    pub num_hiddens: usize,
    /// Dropout on the sub-layer's output.
    #[config(default = 0.0)]
    pub dropout: f64,
}

impl AddNormConfig {
    /// The layer on `device`: PyTorch's `LayerNorm` defaults (ε = 10⁻⁵,
    /// γ = 1, β = 0).
    ///
    /// # Examples
    /// See [`AddNormConfig`].
    pub fn init(&self, device: &Device) -> AddNorm {
        AddNorm {
            dropout: DropoutConfig::new(self.dropout).init(),
            ln: LayerNorm::new(&LayerNormConfig::new(self.num_hiddens), device),
        }
    }
}

/// A residual connection followed by layer normalisation (d2l en §11.7.3,
/// `AddNorm`): LN(x + dropout(y)), the layer norm over the last axis only,
/// so that no step's normalisation depends on any other step. (d2l zh's
/// shape checks normalise over the last two axes, which in a decoder would
/// let the future leak into earlier steps.) ε = 10⁻⁵ sits inside the square
/// root: (x − mean) / √(var + ε).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::transformer::AddNormConfig;
///
/// // Each row comes out with mean 0 and variance 1 (up to ε).
/// let device = Device::flex();
/// let add_norm = AddNormConfig::new(2).init(&device);
/// let x = Tensor::<3>::from_floats([[[1.0, 2.0], [2.0, 3.0]]], &device);
/// let out = add_norm.forward(x, Tensor::zeros([1, 2, 2], &device));
/// let out = out.try_into_vec_as::<f32>().unwrap();
/// for (got, want) in out.iter().zip([-1.0, 1.0, -1.0, 1.0]) {
///     assert!((got - want).abs() < 1e-4, "{out:?}");
/// }
/// ```
#[derive(Module, Debug)]
pub struct AddNorm {
    /// Dropout on the sub-layer's output.
    pub dropout: Dropout,
    /// Layer normalisation over the last axis.
    pub ln: LayerNorm,
}

impl AddNorm {
    /// LN(`x` + dropout(`y`)), both (batch_size, num_steps, num_hiddens).
    ///
    /// # Panics
    /// When `x` and `y` differ in shape or are not num_hiddens wide.
    ///
    /// # Examples
    /// See [`AddNorm`].
    // ANCHOR: add_norm_forward
    pub fn forward(&self, x: Tensor<3>, y: Tensor<3>) -> Tensor<3> {
        self.ln.forward_sum(x, dropout(&self.dropout, y))
    }
    // ANCHOR_END: add_norm_forward
}

/// Token indices `x` (batch_size, num_steps) as the blocks' input: their
/// embeddings scaled by √num_hiddens (d2l's reason: the positional
/// encoding's entries lie in [−1, 1], and the scaled embeddings are to
/// weigh more than it) plus the encoding of positions `start`, `start` + 1,
/// …, then its dropout.
fn embed(
    embedding: &Embedding,
    pos_encoding: &PositionalEncoding,
    x: Tensor<2, Int>,
    start: usize,
) -> Tensor<3> {
    let num_hiddens = embedding.weight.dims()[1];
    let embedded = embedding.forward(x) * (num_hiddens as f64).sqrt();
    pos_encoding.forward_at(embedded, start)
}

/// One map per head of a multi-head attention's weights (batch_size,
/// num_heads, num_queries, num_keys).
fn head_maps(
    kind: AttentionKind,
    layer: usize,
    weights: &AttentionWeights<4>,
) -> Vec<AttentionMap> {
    let weights = weights.tensor();
    let [batch_size, num_heads, num_queries, num_keys] = weights.dims();
    (0..num_heads)
        .map(|head| AttentionMap {
            kind,
            layer,
            head,
            weights: weights.clone().narrow(1, head, 1).reshape([
                batch_size,
                num_queries,
                num_keys,
            ]),
        })
        .collect()
}
