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
//! - [`rotary`](fn@rotary): rotary position embeddings (Su et al., 2021, RoFormer).

mod grouped;
mod online_softmax;
mod rotary;
mod tiled;

pub use grouped::{GroupedQueryAttention, GroupedQueryAttentionConfig};
pub use online_softmax::online_softmax;
pub use rotary::rotary;
pub use tiled::tiled_attention;
