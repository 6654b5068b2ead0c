//! A cache of projected keys and values for a decoder-only Transformer:
//! each block keeps its self-attention's keys and values, per head, as
//! they were projected, so that a new token projects only its own. d2l's
//! decoder caches each block's inputs instead and projects all of them
//! again at every step ([`crate::transformer::TransformerDecoderState`]).

use burn::tensor::{Int, Tensor};

use crate::kernels::{AttentionMask, attention};
use crate::multihead_attention::{MultiHeadAttention, Scoring};
use crate::transformer::{TransformerDecoder, TransformerDecoderBlock};

use super::grouped::{merge_heads, split_heads};

/// Every block's projected keys and values of the steps decoded so far,
/// each (batch_size, kv_heads, steps, head_size): `2 · layers · kv_heads ·
/// head_size` numbers a token, where d2l's cache of block inputs holds
/// `layers · num_hiddens` (half as many with as many key/value heads as
/// query heads, but each step then projects every cached input again).
/// [`decode_cached`] fills it for a multi-head decoder (kv_heads =
/// num_heads), [`DecoderLm::decode`](super::DecoderLm::decode) for grouped
/// heads, keeping only a sliding window's last steps.
///
/// # Examples
/// See [`decode_cached`] and [`DecoderLm`](super::DecoderLm).
#[derive(Clone, Debug, Default)]
pub struct KvCache {
    /// Per block: (keys, values), the last steps (all of them, or a
    /// sliding window's).
    pub(super) blocks: Vec<(Tensor<4>, Tensor<4>)>,
    /// Steps decoded so far: the position of the next token.
    pub(super) steps: usize,
}

impl KvCache {
    /// A cache before the first token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Steps decoded so far (a sliding window's cache keeps only the last
    /// of them, see [`KvCache::bytes`]).
    pub fn num_steps(&self) -> usize {
        self.steps
    }

    /// Bytes the cached keys and values take, all blocks together.
    pub fn bytes(&self) -> usize {
        let bytes = |x: &Tensor<4>| {
            x.dims().iter().product::<usize>() * x.dtype().size()
        };
        self.blocks.iter().map(|(k, v)| bytes(k) + bytes(v)).sum()
    }
}

/// Scores for the token after each of `tokens` (batch_size, num_steps),
/// which follow the steps in `cache`, by the decoder-only `decoder` (no
/// cross-attention, as [`crate::pretraining::CausalLm`]'s), and the cache
/// with their keys and values appended. Equal within rounding to
/// `decoder`'s own forward pass over the whole sequence, in every step
/// (`tests/efficient_attention.rs`); a query sees the cached steps and
/// the new ones up to its own, as under d2l's valid lengths.
///
/// # Panics
/// When a block has cross-attention or scores other than by scaled dot
/// products, `cache` holds another number of blocks or batch size, or
/// the steps go past the positional encoding's `max_len` (naming the
/// argument).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::efficient_attention::{KvCache, decode_cached};
/// use d2l_attention::pretraining::CausalLm;
/// use d2l_attention::transformer::TransformerConfig;
///
/// let device = Device::flex();
/// let model = CausalLm::new(&TransformerConfig::new(20, 20), &device);
/// let tokens = Tensor::<2, Int>::from_ints([[2, 7, 9]], &device);
/// let (scores, cache) = decode_cached(&model.decoder, tokens, KvCache::new());
/// assert_eq!(scores.dims(), [1, 3, 20]);
/// // 2 blocks × keys and values × 4 heads × 3 steps × 8 features × 4 bytes
/// assert_eq!((cache.num_steps(), cache.bytes()), (3, 2 * 2 * 4 * 3 * 8 * 4));
/// ```
// ANCHOR: decode_cached
pub fn decode_cached(
    decoder: &TransformerDecoder,
    tokens: Tensor<2, Int>,
    cache: KvCache,
) -> (Tensor<3>, KvCache) {
    let blocks = decoder.blks.len();
    assert!(
        cache.blocks.is_empty() || cache.blocks.len() == blocks,
        "`cache` holds {} blocks, the decoder has {blocks}",
        cache.blocks.len()
    );
    let past = cache.num_steps();
    let mut x = decoder.embed(tokens, past);
    let mut cached = cache.blocks.into_iter().map(Some);
    let mut next = Vec::with_capacity(blocks);
    for blk in &decoder.blks {
        let (y, keys_values) = block_step(blk, x, cached.next().flatten());
        x = y;
        next.push(keys_values);
    }
    let cache = KvCache {
        blocks: next,
        steps: past + x.dims()[1],
    };
    (decoder.dense.forward(x), cache)
}

/// One decoder block on new inputs `x` after the projected keys and values
/// in `cached`: masked self-attention on the fused operation, add & norm,
/// FFN, add & norm (post-normalisation, as the block's own `forward`).
fn block_step(
    blk: &TransformerDecoderBlock,
    x: Tensor<3>,
    cached: Option<(Tensor<4>, Tensor<4>)>,
) -> (Tensor<3>, (Tensor<4>, Tensor<4>)) {
    assert!(
        blk.cross.is_none(),
        "`decoder` has cross-attention: `decode_cached` is for decoder-only \
         models"
    );
    let mha: &MultiHeadAttention = &blk.attention1;
    let Scoring::DotProduct(scoring) = &mha.attention else {
        panic!("`decoder`'s self-attention is additive: no projected cache")
    };
    assert!(scoring.scaled, "`decoder`'s scores are not scaled by 1/√d");
    let heads = |x: Tensor<3>| split_heads(x, mha.num_heads);
    let queries = heads(mha.w_q.forward(x.clone()));
    let (mut keys, mut values) = (
        heads(mha.w_k.forward(x.clone())),
        heads(mha.w_v.forward(x.clone())),
    );
    if let Some((past_keys, past_values)) = cached {
        keys = Tensor::cat(vec![past_keys, keys], 2);
        values = Tensor::cat(vec![past_values, values], 2);
    }
    // the queries are the last steps: causal, aligned bottom-right
    let mask = AttentionMask::Causal;
    let attended = attention(
        queries,
        keys.clone(),
        values.clone(),
        mask,
        &scoring.dropout,
    );
    let y = blk
        .addnorm1
        .forward(x, mha.w_o.forward(merge_heads(attended)));
    let output = blk.addnorm3.forward(y.clone(), blk.ffn.forward(y));
    (output, (keys, values))
}
// ANCHOR_END: decode_cached
