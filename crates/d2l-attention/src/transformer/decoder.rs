//! The Transformer decoder (d2l en §11.7.5): blocks of masked
//! self-attention, encoder–decoder attention and a position-wise FFN, each
//! followed by add & norm, and a dense layer to the vocabulary.

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor};

use super::*;
use crate::attention_scoring::{AttentionWeights, ValidLens};
use crate::seq2seq::{Decoded, Decoder};

impl TransformerBlockConfig {
    /// A decoder block on `device`; without `cross_attention`, it has no
    /// encoder–decoder attention.
    ///
    /// # Panics
    /// When `num_heads` does not divide `num_hiddens`.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::attention_scoring::ValidLens;
    /// use d2l_attention::transformer::TransformerBlockConfig;
    ///
    /// // d2l en's check: a decoder block keeps the shape of its input.
    /// let device = Device::flex();
    /// let config = TransformerBlockConfig::new(24, 48, 8).with_dropout(0.5);
    /// let x = Tensor::<3>::ones([2, 100, 24], &device);
    /// let valid_lens = ValidLens::new(&[3, 2], &device);
    /// let enc_outputs = config.init_encoder_block(&device).forward(x.clone(), Some(&valid_lens)).output;
    /// let block = config.init_decoder_block(&device);
    /// let out = block.forward(x, None, &enc_outputs, Some(&valid_lens));
    /// assert_eq!(out.output.dims(), [2, 100, 24]);
    /// // It keeps its input for the next call: 100 steps so far.
    /// assert_eq!(out.key_values.dims(), [2, 100, 24]);
    /// ```
    pub fn init_decoder_block(
        &self,
        device: &Device,
    ) -> TransformerDecoderBlock {
        TransformerDecoderBlock {
            attention1: self.attention(device),
            addnorm1: self.add_norm(device),
            cross: self.cross_attention.then(|| CrossAttention {
                attention: self.attention(device),
                addnorm: self.add_norm(device),
            }),
            ffn: self.ffn(device),
            addnorm3: self.add_norm(device),
        }
    }
}

/// A decoder block's encoder–decoder attention and the add & norm around
/// it (d2l's `attention2` and `addnorm2`).
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::transformer::TransformerBlockConfig;
///
/// let config = TransformerBlockConfig::new(8, 16, 2);
/// assert!(config.init_decoder_block(&Device::flex()).cross.is_some());
/// let decoder_only = config.with_cross_attention(false).init_decoder_block(&Device::flex());
/// assert!(decoder_only.cross.is_none());
/// ```
#[derive(Module, Debug)]
pub struct CrossAttention {
    /// Queries from the block's self-attention, keys and values from the
    /// encoder's outputs.
    pub attention: MultiHeadAttention,
    /// Around the attention.
    pub addnorm: AddNorm,
}

/// One decoder block (d2l en's `TransformerDecoderBlock`): masked
/// self-attention, add & norm, encoder–decoder attention whose queries are
/// the result, add & norm, FFN, add & norm.
///
/// # Examples
/// See [`TransformerBlockConfig::init_decoder_block`].
#[derive(Module, Debug)]
pub struct TransformerDecoderBlock {
    /// Masked multi-head self-attention.
    pub attention1: MultiHeadAttention,
    /// Around the self-attention.
    pub addnorm1: AddNorm,
    /// The encoder–decoder attention; `None` in a decoder-only model.
    pub cross: Option<CrossAttention>,
    /// The position-wise FFN.
    pub ffn: PositionWiseFFN,
    /// Around the FFN.
    pub addnorm3: AddNorm,
}

/// What a [`TransformerDecoderBlock`] returns.
///
/// # Examples
/// See [`TransformerBlockConfig::init_decoder_block`].
#[derive(Clone, Debug)]
pub struct DecoderBlockOutput {
    /// (batch_size, num_steps, num_hiddens).
    pub output: Tensor<3>,
    /// The block's inputs at every step so far, the cached ones first:
    /// (batch_size, past + num_steps, num_hiddens).
    pub key_values: Tensor<3>,
    /// The self-attention's weights: (batch_size, num_heads, num_steps,
    /// past + num_steps).
    pub self_attention: AttentionWeights<4>,
    /// The encoder–decoder attention's weights, (batch_size, num_heads,
    /// num_steps, num_src_steps), if the block has one.
    pub cross_attention: Option<AttentionWeights<4>>,
}

/// Valid lengths that let query i of `num_steps` new steps, after `past`
/// earlier ones, see steps 0 … past + i (d2l's `dec_valid_lens`): built
/// on the host, (batch_size, num_steps).
fn causal_lens(
    batch_size: usize,
    past: usize,
    num_steps: usize,
    device: &Device,
) -> ValidLens {
    let row: Vec<usize> = (past + 1..=past + num_steps).collect();
    ValidLens::per_query(&vec![row; batch_size], device)
}

impl TransformerDecoderBlock {
    /// Decodes `x` (batch_size, num_steps, num_hiddens), the block's inputs
    /// at the steps after `cached` (batch_size, past, num_hiddens), its
    /// inputs at all earlier steps (`None` for none). A query at step t
    /// attends to the steps up to t among both, and to the encoder's
    /// outputs `enc_outputs` (batch_size, num_src_steps, num_hiddens) up
    /// to `enc_valid_lens` (batch_size,).
    ///
    /// # Panics
    /// When the shapes do not fit the block or each other.
    ///
    /// # Examples
    /// See [`TransformerBlockConfig::init_decoder_block`].
    // ANCHOR: decoder_block_forward
    pub fn forward(
        &self,
        x: Tensor<3>,
        cached: Option<Tensor<3>>,
        enc_outputs: &Tensor<3>,
        enc_valid_lens: Option<&ValidLens>,
    ) -> DecoderBlockOutput {
        let [batch_size, num_steps, _] = x.dims();
        let past = cached.as_ref().map_or(0, |c| c.dims()[1]);
        let key_values = match cached {
            Some(cached) => Tensor::cat(vec![cached, x.clone()], 1),
            None => x.clone(),
        };
        let dec_valid_lens =
            causal_lens(batch_size, past, num_steps, &x.device());
        let attended = self.attention1.forward(
            x.clone(),
            key_values.clone(),
            key_values.clone(),
            Some(&dec_valid_lens),
        );
        let mut y = self.addnorm1.forward(x, attended.output);
        let mut cross_attention = None;
        if let Some(cross) = &self.cross {
            let to_source = cross.attention.forward(
                y.clone(),
                enc_outputs.clone(),
                enc_outputs.clone(),
                enc_valid_lens,
            );
            y = cross.addnorm.forward(y, to_source.output);
            cross_attention = Some(to_source.attention_weights);
        }
        DecoderBlockOutput {
            output: self.addnorm3.forward(y.clone(), self.ffn.forward(y)),
            key_values,
            self_attention: attended.attention_weights,
            cross_attention,
        }
    }
    // ANCHOR_END: decoder_block_forward
}

/// The Transformer decoder (d2l en's `TransformerDecoder`): token
/// embeddings scaled by √num_hiddens, the positional encoding, the blocks
/// and a dense layer to the target vocabulary.
///
/// **Training** reads a whole target sequence in one call: the query at
/// step t attends to steps ≤ t only (d2l's `dec_valid_lens`), so no step
/// sees the tokens it must predict. **Prediction** calls it once per new
/// token: each block keeps its inputs at the steps so far (as d2l does;
/// [`TransformerDecoderState::key_values`]), the new token attends to them
/// and to itself, and gets the positional encoding of its own position.
/// (d2l's code adds position 0's encoding at every prediction step, since
/// each call sees a sequence of one token.) Unlike d2l, which drops the
/// mask in eval mode, the mask applies in every mode: in eval mode a whole
/// sequence in one call (a teacher-forced evaluation) must not see the
/// future either, and for one new token at a time the mask hides nothing.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::seq2seq::{Decoder, Encoder};
/// use d2l_attention::transformer::TransformerConfig;
///
/// let device = Device::flex();
/// let model = TransformerConfig::new(10, 12).init(&device);
/// let src = Tensor::<2, Int>::zeros([2, 5], &device);
/// let state = model.decoder.init_state(model.encoder.forward(src, None), None);
/// // Three target tokens at once, then one more.
/// let decoded = model.decoder.forward(Tensor::zeros([2, 3], &device), state);
/// assert_eq!(decoded.output.dims(), [2, 3, 12]);
/// let next = model.decoder.forward(Tensor::zeros([2, 1], &device), decoded.state);
/// assert_eq!(next.state.num_steps(), 4);
/// ```
#[derive(Module, Debug)]
pub struct TransformerDecoder {
    /// Token embedding, (vocab_size → num_hiddens).
    pub embedding: Embedding,
    /// The sinusoidal positional encoding, with its dropout.
    pub pos_encoding: PositionalEncoding,
    /// The blocks, from the input up.
    pub blks: Vec<TransformerDecoderBlock>,
    /// Output layer, (num_hiddens → vocab_size).
    pub dense: Linear,
}

/// The decoder's state between calls (d2l's `[enc_outputs,
/// enc_valid_lens, [None] * num_blks]`).
///
/// # Examples
/// See [`TransformerDecoder`].
#[derive(Clone, Debug)]
pub struct TransformerDecoderState {
    /// The encoder's outputs: (batch_size, num_src_steps, num_hiddens).
    pub enc_outputs: Tensor<3>,
    /// Valid source lengths, (batch_size,).
    pub enc_valid_lens: Option<ValidLens>,
    /// Per block, its inputs at every step decoded so far (batch_size,
    /// steps, num_hiddens): the cache its self-attention reads keys and
    /// values from. `None` before the first call.
    pub key_values: Vec<Option<Tensor<3>>>,
}

impl TransformerDecoderState {
    /// How many target steps the decoder has read so far.
    ///
    /// # Examples
    /// See [`TransformerDecoder`].
    pub fn num_steps(&self) -> usize {
        match self.key_values.first() {
            Some(Some(cached)) => cached.dims()[1],
            _ => 0,
        }
    }
}

impl Decoder<TransformerEncoded> for TransformerDecoder {
    type State = TransformerDecoderState;

    /// The first state: the encoder's outputs, and nothing decoded yet.
    fn init_state(
        &self,
        encoded: TransformerEncoded,
        enc_valid_lens: Option<ValidLens>,
    ) -> TransformerDecoderState {
        TransformerDecoderState {
            enc_outputs: encoded.outputs,
            enc_valid_lens,
            key_values: vec![None; self.blks.len()],
        }
    }

    /// Decodes the target token indices `x` (batch_size, num_steps), the
    /// steps after those in `state`. The maps: every layer's self-attention
    /// per head ([`AttentionKind::DecoderSelfAttention`]), then every
    /// layer's encoder–decoder attention per head
    /// ([`AttentionKind::EncoderDecoder`]).
    ///
    /// # Panics
    /// When `x` has no steps or another batch size than the state, the
    /// state has another number of blocks, the steps go past the positional
    /// encoding's max_len, or a token index is not below the vocabulary size
    /// (the message names the argument).
    // ANCHOR: decoder_forward
    fn forward(
        &self,
        x: Tensor<2, Int>,
        state: TransformerDecoderState,
    ) -> Decoded<TransformerDecoderState> {
        self.check_state(&x, &state);
        // the positions after those already decoded
        let past = state.num_steps();
        let mut x = self.embed(x, past);
        let TransformerDecoderState {
            enc_outputs,
            enc_valid_lens,
            key_values,
        } = state;
        let (mut cache, mut maps, mut cross_maps) =
            (Vec::new(), Vec::new(), Vec::new());
        for (layer, (blk, cached)) in
            self.blks.iter().zip(key_values).enumerate()
        {
            let out =
                blk.forward(x, cached, &enc_outputs, enc_valid_lens.as_ref());
            x = out.output;
            cache.push(Some(out.key_values));
            let kind = AttentionKind::DecoderSelfAttention;
            maps.extend(head_maps(kind, layer, &out.self_attention));
            if let Some(weights) = out.cross_attention {
                let kind = AttentionKind::EncoderDecoder;
                cross_maps.extend(head_maps(kind, layer, &weights));
            }
        }
        maps.append(&mut cross_maps);
        Decoded {
            output: self.dense.forward(x),
            state: TransformerDecoderState {
                enc_outputs,
                enc_valid_lens,
                key_values: cache,
            },
            attention: maps,
        }
    }
    // ANCHOR_END: decoder_forward

    fn vocab_size(&self) -> usize {
        self.dense.weight.dims()[1]
    }
}

impl TransformerDecoder {
    /// What the first block reads for tokens `x` (batch_size, num_steps) at
    /// positions `start`, `start` + 1, …: their scaled embeddings plus the
    /// positional encoding, then its dropout.
    pub(crate) fn embed(&self, x: Tensor<2, Int>, start: usize) -> Tensor<3> {
        embed(&self.embedding, &self.pos_encoding, x, start)
    }

    /// The shape checks of [`Decoder::forward`], all on the host.
    fn check_state(&self, x: &Tensor<2, Int>, state: &TransformerDecoderState) {
        let [batch_size, num_steps] = x.dims();
        assert!(
            num_steps > 0,
            "`x` has shape {:?}, expected (batch_size, num_steps) with at least one step",
            x.dims()
        );
        let enc = state.enc_outputs.dims();
        assert!(
            enc[0] == batch_size,
            "`state.enc_outputs` has shape {enc:?}, expected batch size {batch_size} of `x` {:?}",
            x.dims()
        );
        let (got, blocks) = (state.key_values.len(), self.blks.len());
        assert!(
            got == blocks,
            "`state.key_values` holds {got} blocks' caches, expected {blocks}"
        );
    }
}
