//! A decoder-only language model built from the chapter's pieces: grouped
//! key/value heads, rotary or sinusoidal positions, a causal or sliding
//! window mask, and a cache of projected keys and values; otherwise the
//! blocks of d2l's Transformer (post-normalisation, ReLU feed-forward).

use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, Linear, LinearConfig};
use burn::prelude::Config;
use burn::tensor::{Device, Int, Tensor, TensorData};
use chacha20::ChaCha12Rng;
use rand::SeedableRng;
use rand::seq::SliceRandom;

use super::grouped::{GroupedQueryAttention, GroupedQueryAttentionConfig};
use super::kv_cache::KvCache;
use crate::attention_scoring::ValidLens;
use crate::kernels::{AttentionMask, log_softmax};
use crate::positional_encoding::{
    PositionalEncoding, PositionalEncodingConfig,
};
use crate::pretraining::{LanguageModel, LmBatch, Scores};
use crate::transformer::{
    AddNorm, AddNormConfig, PositionWiseFFN, PositionWiseFFNConfig,
};

/// Configuration of [`DecoderLm`]; the defaults are the sizes of "The
/// Transformer" (32 hidden, FFN 64, 4 heads, 2 blocks), rotary positions,
/// as many key/value heads as query heads, no window, no dropout.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::efficient_attention::DecoderLmConfig;
///
/// let model = DecoderLmConfig::new(50).with_kv_heads(1).init(&Device::flex());
/// // 2 blocks × a key and a value × 1 head × 8 features × 4 bytes
/// assert_eq!(model.cache_bytes_per_token(), 128);
/// ```
#[derive(Config, Debug)]
pub struct DecoderLmConfig {
    /// Size of the vocabulary.
    pub vocab_size: usize,
    /// Width of the model.
    #[config(default = 32)]
    pub num_hiddens: usize,
    /// Width of the feed-forward layers.
    #[config(default = 64)]
    pub ffn_num_hiddens: usize,
    /// Query heads.
    #[config(default = 4)]
    pub num_heads: usize,
    /// Key/value heads; divides `num_heads`.
    #[config(default = 4)]
    pub kv_heads: usize,
    /// Blocks.
    #[config(default = 2)]
    pub num_layers: usize,
    /// Rotary positions in every block's attention (true), or d2l's
    /// sinusoids added to the embeddings (false).
    #[config(default = true)]
    pub rotary: bool,
    /// Positions the sinusoids are tabulated for (unused with `rotary`).
    #[config(default = 1000)]
    pub max_len: usize,
    /// Keys a query sees, itself included (a causal sliding window);
    /// `None`: every earlier key.
    #[config(default = "None")]
    pub window: Option<usize>,
    /// Dropout after attention and feed-forward layers.
    #[config(default = 0.0)]
    pub dropout: f64,
}

impl DecoderLmConfig {
    /// The model on `device`.
    ///
    /// # Panics
    /// When the heads do not divide (as [`GroupedQueryAttentionConfig`]),
    /// or `window` is Some(0).
    ///
    /// # Examples
    /// See [`DecoderLmConfig`].
    pub fn init(&self, device: &Device) -> DecoderLm {
        assert!(self.window != Some(0), "`window` must hold at least 1 key");
        let n = self.num_hiddens;
        let block = || DecoderLmBlock {
            attention: GroupedQueryAttentionConfig::new(
                n,
                self.num_heads,
                self.kv_heads,
            )
            .init(device),
            addnorm1: AddNormConfig::new(n)
                .with_dropout(self.dropout)
                .init(device),
            ffn: PositionWiseFFNConfig::new(n, self.ffn_num_hiddens, n)
                .init(device),
            addnorm2: AddNormConfig::new(n)
                .with_dropout(self.dropout)
                .init(device),
        };
        DecoderLm {
            embedding: EmbeddingConfig::new(self.vocab_size, n).init(device),
            pos_encoding: (!self.rotary).then(|| {
                PositionalEncodingConfig::new(n)
                    .with_dropout(self.dropout)
                    .with_max_len(self.max_len)
                    .init(device)
            }),
            blks: (0..self.num_layers).map(|_| block()).collect(),
            dense: LinearConfig::new(n, self.vocab_size).init(device),
            window: self.window,
        }
    }
}

/// One block: grouped-query self-attention, add & norm, feed-forward,
/// add & norm.
#[derive(Module, Debug)]
pub struct DecoderLmBlock {
    /// Masked self-attention.
    pub attention: GroupedQueryAttention,
    /// After the attention.
    pub addnorm1: AddNorm,
    /// Position-wise feed-forward network.
    pub ffn: PositionWiseFFN,
    /// After the feed-forward network.
    pub addnorm2: AddNorm,
}

/// A decoder-only language model with grouped key/value heads, rotary or
/// sinusoidal positions and an optional sliding window, which decodes
/// with a [`KvCache`] of projected keys and values (a window's cache keeps
/// only the last `window` steps, Mistral 7B's rolling buffer, Jiang et al.
/// 2023, §2).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::efficient_attention::{DecoderLmConfig, KvCache};
///
/// let device = Device::flex();
/// let model = DecoderLmConfig::new(20).with_window(Some(2)).init(&device);
/// let tokens = Tensor::<2, Int>::from_ints([[2, 7, 9, 4]], &device);
/// assert_eq!(model.forward(tokens.clone()).dims(), [1, 4, 20]);
/// let (_, cache) = model.decode(tokens, KvCache::new());
/// // 4 steps decoded, 2 kept: 2 blocks × 2 × 4 heads × 2 steps × 8 × 4 bytes
/// assert_eq!((cache.num_steps(), cache.bytes()), (4, 1024));
/// ```
#[derive(Module, Debug)]
pub struct DecoderLm {
    /// Token embeddings (vocab_size → num_hiddens).
    pub embedding: Embedding,
    /// d2l's sinusoids, or `None` for rotary positions.
    pub pos_encoding: Option<PositionalEncoding>,
    /// The blocks.
    pub blks: Vec<DecoderLmBlock>,
    /// Scores over the vocabulary (num_hiddens → vocab_size).
    pub dense: Linear,
    /// Keys a query sees, itself included; `None`: all earlier ones.
    #[module(skip)]
    pub window: Option<usize>,
}

impl DecoderLm {
    /// Scores for the token after each of `tokens` (batch_size, num_steps):
    /// (batch_size, num_steps, vocab_size).
    ///
    /// # Panics
    /// As [`DecoderLm::decode`].
    ///
    /// # Examples
    /// See [`DecoderLm`].
    pub fn forward(&self, tokens: Tensor<2, Int>) -> Tensor<3> {
        self.decode(tokens, KvCache::new()).0
    }

    /// Scores for the token after each of `tokens` (batch_size, num_steps),
    /// which follow the steps in `cache`, and the cache with their keys and
    /// values appended (and, under a window, trimmed to its last `window`
    /// steps). Equal within rounding to [`DecoderLm::forward`] over the
    /// whole sequence (`tests/efficient_attention.rs`).
    ///
    /// # Panics
    /// When `cache` holds another number of blocks or batch size, or
    /// sinusoidal positions go past `max_len` (naming the argument).
    ///
    /// # Examples
    /// See [`DecoderLm`].
    // ANCHOR: decode
    pub fn decode(
        &self,
        tokens: Tensor<2, Int>,
        cache: KvCache,
    ) -> (Tensor<3>, KvCache) {
        let blocks = self.blks.len();
        assert!(
            cache.blocks.is_empty() || cache.blocks.len() == blocks,
            "`cache` holds {} blocks, the model has {blocks}",
            cache.blocks.len()
        );
        let (start, n) = (cache.steps, tokens.dims()[1]);
        let width = self.dense.weight.dims()[0];
        let mut x = self.embedding.forward(tokens) * (width as f64).sqrt();
        // sinusoids once at the bottom, or rotations in every block
        let rotary_start = match &self.pos_encoding {
            Some(pos_encoding) => {
                let max_len = pos_encoding.max_len();
                assert!(
                    start + n <= max_len,
                    "`tokens` reach position {}, past the sinusoids' \
                     `max_len` of {max_len}",
                    start + n - 1
                );
                x = pos_encoding.forward_at(x, start);
                None
            }
            None => Some(start),
        };
        let mask = match self.window {
            Some(w) => AttentionMask::Window {
                left: w - 1,
                right: 0,
            },
            None => AttentionMask::Causal,
        };
        let mut cached = cache.blocks.into_iter().map(Some);
        let mut next = Vec::with_capacity(blocks);
        for blk in &self.blks {
            let past = cached.next().flatten();
            let (attended, (keys, values)) = blk.attention.forward_cached(
                x.clone(),
                past,
                rotary_start,
                mask,
            );
            let y = blk.addnorm1.forward(x, attended);
            x = blk.addnorm2.forward(y.clone(), blk.ffn.forward(y));
            next.push(self.keep(keys, values));
        }
        let cache = KvCache {
            blocks: next,
            steps: start + n,
        };
        (self.dense.forward(x), cache)
    }
    // ANCHOR_END: decode

    /// The steps of `keys` and `values` a later query can still see: the
    /// last `window` under a window, else all.
    fn keep(
        &self,
        keys: Tensor<4>,
        values: Tensor<4>,
    ) -> (Tensor<4>, Tensor<4>) {
        let steps = keys.dims()[2];
        match self.window {
            Some(w) if steps > w => {
                (keys.narrow(2, steps - w, w), values.narrow(2, steps - w, w))
            }
            _ => (keys, values),
        }
    }

    /// Bytes of cached keys and values per token: 2 · layers · kv_heads ·
    /// head size numbers of 4 bytes (f32).
    ///
    /// # Examples
    /// See [`DecoderLmConfig`].
    pub fn cache_bytes_per_token(&self) -> usize {
        self.blks
            .iter()
            .map(|blk| 2 * blk.attention.w_k.weight.dims()[1] * 4)
            .sum()
    }
}

impl Scores for DecoderLm {
    fn logits(&self, batch: &LmBatch) -> Tensor<3> {
        self.forward(batch.tokens.clone())
    }
}

impl LanguageModel for DecoderLm {
    /// `sentences` are streams (see [`streams`]): each gives the input
    /// (all but its last token) and the labels (all but its first).
    ///
    /// # Panics
    /// When the streams in a batch differ in length or hold under 2
    /// tokens.
    fn batches(
        sentences: &[Vec<usize>],
        _vocab_len: usize,
        batch_size: usize,
        seed: u64,
        device: &Device,
    ) -> Vec<LmBatch> {
        let mut order: Vec<&Vec<usize>> = sentences.iter().collect();
        order.shuffle(&mut ChaCha12Rng::seed_from_u64(seed));
        order
            .chunks(batch_size)
            .map(|chunk| stream_batch(chunk, device))
            .collect()
    }
}

/// Streams of equal length as one causal batch: inputs all but the last
/// token, labels all but the first, every label counting.
fn stream_batch(streams: &[&Vec<usize>], device: &Device) -> LmBatch {
    let len = streams[0].len();
    assert!(
        len >= 2 && streams.iter().all(|s| s.len() == len),
        "streams must share one length of at least 2 tokens"
    );
    let (b, n) = (streams.len(), len - 1);
    let ints = |part: fn(&[usize]) -> &[usize]| {
        let data: Vec<i64> = streams
            .iter()
            .flat_map(|s| part(s).iter().map(|&t| t as i64))
            .collect();
        Tensor::<2, Int>::from_data(TensorData::new(data, [b, n]), device)
    };
    LmBatch {
        tokens: ints(|s| &s[..s.len() - 1]),
        valid_lens: ValidLens::new(&vec![n; b], device),
        positions: None,
        labels: ints(|s| &s[1..]),
        weights: Tensor::ones([b, n], device),
        num_preds: b * n,
    }
}

/// `sentences` (token indices) joined into one text, each followed by
/// `eos`, cut into consecutive streams of `length` tokens (the rest
/// dropped): a task with context beyond the sentence, as GPT-3's
/// training sequences join documents with an end-of-text token (Brown et
/// al. 2020, Appendix B).
///
/// # Panics
/// When `length` is 0.
///
/// # Examples
/// ```
/// use d2l_attention::efficient_attention::streams;
///
/// let s = streams(&[vec![7, 8], vec![9], vec![10, 11]], 3, 3);
/// assert_eq!(s, [vec![7, 8, 3], vec![9, 3, 10]]);
/// ```
pub fn streams(
    sentences: &[Vec<usize>],
    eos: usize,
    length: usize,
) -> Vec<Vec<usize>> {
    assert!(length > 0, "`length` must be at least 1");
    let text: Vec<usize> = sentences
        .iter()
        .flat_map(|s| s.iter().copied().chain([eos]))
        .collect();
    text.chunks_exact(length).map(<[_]>::to_vec).collect()
}

/// The mean cross-entropy (nats) of `model` at each position of
/// `streams` (all of one length L + 1): L values, the t-th for predicting
/// token t + 1 from tokens 0 … t, averaged over the streams. Runs the
/// inference copy `model.valid()` on `device.inner()`, in batches of
/// `batch_size`; one read from the device.
///
/// # Panics
/// When `streams` is empty, `batch_size` is 0, or as [`DecoderLm::decode`].
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::efficient_attention::{DecoderLmConfig, position_losses};
///
/// let device = Device::flex();
/// let model = DecoderLmConfig::new(10).init(&device);
/// let losses = position_losses(&model, &[vec![1, 2, 3, 4], vec![4, 3, 2, 1]], 1, &device);
/// assert_eq!(losses.len(), 3);
/// ```
pub fn position_losses(
    model: &DecoderLm,
    streams: &[Vec<usize>],
    batch_size: usize,
    device: &Device,
) -> Vec<f64> {
    assert!(!streams.is_empty(), "`streams` is empty");
    assert!(batch_size > 0, "`batch_size` must be at least 1");
    let (model, device) = (model.valid(), device.clone().inner());
    let sums: Vec<Tensor<1>> = streams
        .chunks(batch_size)
        .map(|chunk| {
            let chunk: Vec<&Vec<usize>> = chunk.iter().collect();
            let batch = stream_batch(&chunk, &device);
            let [b, n] = batch.labels.dims();
            let picked = log_softmax(model.logits(&batch))
                .gather(2, batch.labels.unsqueeze_dim(2))
                .reshape([b, n]);
            -picked.sum_dim(0).reshape([n])
        })
        .collect();
    let count = streams.len() as f64;
    let total = Tensor::stack::<2>(sums, 0).sum_dim(0).reshape([-1]);
    total
        .try_into_vec_as::<f64>()
        .expect("losses are floats")
        .into_iter()
        .map(|sum| sum / count)
        .collect()
}
