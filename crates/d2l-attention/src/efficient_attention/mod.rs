//! Efficient attention (beyond d2l): the pieces the attention of today's
//! open models is built from, each checked against d2l's form or PyTorch.
//!
//! - [`online_softmax`](fn@online_softmax): softmax in one pass over blocks of a row, with a
//!   running maximum and sum (Milakov and Gimelshein, 2018);
//! - [`tiled_attention`]: FlashAttention's forward pass written readably in
//!   burn's operations, blocks of queries against blocks of keys, without
//!   the score matrix (Dao et al., 2022; Dao, 2024, FlashAttention-2); the
//!   library's fast version is [`crate::kernels::attention`];
//! - [`GroupedQueryAttention`]: fewer key/value heads than query heads
//!   (Shazeer, 2019; Ainslie et al., 2023);
//! - [`KvCache`] and [`decode_cached`]: a decoder-only model's projected
//!   keys and values kept between steps of generation;
//! - [`DecoderLm`]: a decoder-only language model with all of them, and
//!   [`streams`] of joined sentences to train it on;
//! - [`rotary`](fn@rotary): rotary position embeddings (Su et al., 2021, RoFormer);
//! - [`Form`] and [`peak_in_fresh_process`]: d2l's form against the fused
//!   operation, and the peak memory of one call of either.

#[cfg(feature = "native")]
mod cost;
mod grouped;
mod kv_cache;
#[cfg(feature = "native")]
mod lm;
mod online_softmax;
mod rotary;
mod tiled;

#[cfg(feature = "native")]
pub use cost::{Form, PEAK_FLAG, peak_in_fresh_process, serve_peak_request};
pub use grouped::{GroupedQueryAttention, GroupedQueryAttentionConfig};
pub use kv_cache::{KvCache, decode_cached};
#[cfg(feature = "native")]
pub use lm::{
    DecoderLm, DecoderLmBlock, DecoderLmConfig, position_losses, streams,
};
pub use online_softmax::online_softmax;
pub use rotary::rotary;
pub use tiled::tiled_attention;
