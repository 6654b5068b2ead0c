//! The Transformer encoder (d2l en §11.7.4): blocks of multi-head
//! self-attention and a position-wise FFN, each followed by add & norm.

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor};

use super::*;
use crate::attention_scoring::{AttentionWeights, ValidLens};
use crate::multihead_attention::MultiHeadAttended;
use crate::seq2seq::Encoder;

impl TransformerBlockConfig {
    /// An encoder block on `device`.
    ///
    /// # Panics
    /// When `num_heads` does not divide `num_hiddens`.
    ///
    /// # Examples
    /// See [`TransformerBlockConfig`].
    pub fn init_encoder_block(
        &self,
        device: &Device,
    ) -> TransformerEncoderBlock {
        TransformerEncoderBlock {
            attention: self.attention(device),
            addnorm1: self.add_norm(device),
            ffn: self.ffn(device),
            addnorm2: self.add_norm(device),
        }
    }
}

/// One encoder block (d2l's `TransformerEncoderBlock`): self-attention,
/// add & norm, FFN, add & norm. It keeps the shape of its input.
///
/// # Examples
/// See [`TransformerBlockConfig`].
#[derive(Module, Debug)]
pub struct TransformerEncoderBlock {
    /// Multi-head self-attention.
    pub attention: MultiHeadAttention,
    /// Around the attention.
    pub addnorm1: AddNorm,
    /// The position-wise FFN.
    pub ffn: PositionWiseFFN,
    /// Around the FFN.
    pub addnorm2: AddNorm,
}

impl TransformerEncoderBlock {
    /// The block's output for `x` (batch_size, num_steps, num_hiddens),
    /// whose keys past `valid_lens` (batch_size,) are hidden from every
    /// query, and the self-attention's weights (batch_size, num_heads,
    /// num_steps, num_steps).
    ///
    /// # Panics
    /// When `x` is not num_hiddens wide or `valid_lens` does not fit it.
    ///
    /// # Examples
    /// See [`TransformerBlockConfig`].
    // ANCHOR: encoder_block_forward
    pub fn forward(
        &self,
        x: Tensor<3>,
        valid_lens: Option<&ValidLens>,
    ) -> MultiHeadAttended {
        let attended =
            self.attention
                .forward(x.clone(), x.clone(), x.clone(), valid_lens);
        let y = self.addnorm1.forward(x, attended.output);
        MultiHeadAttended {
            output: self.addnorm2.forward(y.clone(), self.ffn.forward(y)),
            attention_weights: attended.attention_weights,
        }
    }
    // ANCHOR_END: encoder_block_forward
}

/// The Transformer encoder (d2l's `TransformerEncoder`): token embeddings
/// scaled by √num_hiddens, the positional encoding, and the blocks.
///
/// # Examples
/// See [`TransformerConfig::init_encoder`].
#[derive(Module, Debug)]
pub struct TransformerEncoder {
    /// Token embedding, (vocab_size → num_hiddens).
    pub embedding: Embedding,
    /// The sinusoidal positional encoding, with its dropout.
    pub pos_encoding: PositionalEncoding,
    /// The blocks, from the input up.
    pub blks: Vec<TransformerEncoderBlock>,
}

/// What the encoder returns: its outputs and every block's self-attention
/// weights.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::seq2seq::{AttentionKind, Encoder};
/// use d2l_attention::transformer::{TransformerConfig, TransformerEncoder};
///
/// let device = Device::flex();
/// let encoder = TransformerConfig::new(10, 10).init_encoder(&device);
/// let encoded = encoder.forward(Tensor::<2, Int>::zeros([3, 5], &device), None);
/// // 2 layers × 4 heads, each (batch_size, num_steps, num_steps).
/// let maps = TransformerEncoder::attention_maps(&encoded);
/// assert_eq!(maps.len(), 8);
/// assert_eq!((maps[5].layer, maps[5].head, maps[5].kind), (1, 1, AttentionKind::EncoderSelfAttention));
/// assert_eq!(maps[5].weights.dims(), [3, 5, 5]);
/// ```
#[derive(Clone, Debug)]
pub struct TransformerEncoded {
    /// The last block's output: (batch_size, num_steps, num_hiddens).
    pub outputs: Tensor<3>,
    /// Each block's self-attention weights, (batch_size, num_heads,
    /// num_steps, num_steps), from the first block up.
    pub attention_weights: Vec<AttentionWeights<4>>,
}

impl Encoder for TransformerEncoder {
    type Output = TransformerEncoded;

    /// Encodes the source token indices `x` (batch_size, num_steps); no
    /// query attends to a key past its sequence's `valid_lens`.
    ///
    /// # Panics
    /// When `x` is longer than the positional encoding, an index is not
    /// below the vocabulary size, or `valid_lens` does not fit `x`.
    // ANCHOR: encoder_forward
    fn forward(
        &self,
        x: Tensor<2, Int>,
        valid_lens: Option<&ValidLens>,
    ) -> TransformerEncoded {
        let mut x = embed(&self.embedding, &self.pos_encoding, x, 0);
        let mut attention_weights = Vec::new();
        for blk in &self.blks {
            let attended = blk.forward(x, valid_lens);
            x = attended.output;
            attention_weights.push(attended.attention_weights);
        }
        TransformerEncoded {
            outputs: x,
            attention_weights,
        }
    }
    // ANCHOR_END: encoder_forward

    fn vocab_size(&self) -> usize {
        self.embedding.weight.dims()[0]
    }

    /// One map per layer and head, [`AttentionKind::EncoderSelfAttention`].
    fn attention_maps(output: &TransformerEncoded) -> Vec<AttentionMap> {
        output
            .attention_weights
            .iter()
            .enumerate()
            .flat_map(|(layer, w)| {
                head_maps(AttentionKind::EncoderSelfAttention, layer, w)
            })
            .collect()
    }
}
