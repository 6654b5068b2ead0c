//! Scaled dot-product attention (d2l zh §10.3.3, en §11.3.3), bilinear
//! scores, and self-attention as a loop and vectorised (seed notebook `002`).

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig};
use burn::prelude::Config;
use burn::tensor::{Tensor, activation::softmax};

use super::*;

/// Configuration of [`DotProductAttention`].
#[derive(Config, Debug)]
pub struct DotProductAttentionConfig {
    /// Dropout probability on the attention weights.
    #[config(default = 0.0)]
    pub dropout: f64,
    /// Divide the scores by √d (d = query and key size), as d2l does.
    #[config(default = true)]
    pub scaled: bool,
}

impl DotProductAttentionConfig {
    /// The layer (it has no weights).
    pub fn init(&self) -> DotProductAttention {
        DotProductAttention {
            dropout: DropoutConfig::new(self.dropout).init(),
            scaled: self.scaled,
        }
    }
}

/// (Scaled) dot-product attention (Vaswani et al., 2017; d2l zh §10.3.3,
/// eq. 10.3.4): score a(q, k) = qᵀk / √d. Queries and keys must have the
/// same size d.
#[derive(Module, Debug)]
pub struct DotProductAttention {
    /// Dropout on the attention weights.
    pub dropout: Dropout,
    /// Whether scores are divided by √d.
    pub scaled: bool,
}

impl DotProductAttention {
    /// The scores qᵀk (/ √d when scaled): (batch_size, num_queries,
    /// num_keys), from queries (batch_size, num_queries, d) and keys
    /// (batch_size, num_keys, d).
    ///
    /// # Errors
    /// [`AttentionError::Mismatch`] naming both shapes when the sizes differ.
    // ANCHOR: dot_product
    pub fn scores(&self, queries: Tensor<3>, keys: Tensor<3>) -> Result<Tensor<3>, AttentionError> {
        let (q, k) = (queries.dims(), keys.dims());
        if q[2] != k[2] || q[0] != k[0] {
            let why = if q[0] != k[0] {
                "batch sizes differ"
            } else {
                "a dot product needs queries and keys of one size (dimension 2)"
            };
            return Err(AttentionError::mismatch(
                "queries",
                q.to_vec(),
                "keys",
                k.to_vec(),
                why,
            ));
        }
        let scores = queries.matmul(keys.swap_dims(1, 2));
        Ok(if self.scaled {
            scores / (q[2] as f64).sqrt()
        } else {
            scores
        })
    }
    // ANCHOR_END: dot_product

    /// Attention pooling of `values` (batch_size, num_keys, value_size) for
    /// `queries` (batch_size, num_queries, d) over `keys` (batch_size,
    /// num_keys, d), masked by `valid_lens` as in [`masked_softmax`].
    ///
    /// # Errors
    /// [`AttentionError`] when the shapes disagree or `valid_lens` is malformed.
    pub fn forward(
        &self,
        queries: Tensor<3>,
        keys: Tensor<3>,
        values: Tensor<3>,
        valid_lens: Option<ValidLens>,
    ) -> Result<Attended, AttentionError> {
        check_qkv(&queries, &keys, &values)?;
        let weights = masked_softmax(self.scores(queries, keys)?, valid_lens)?;
        Ok(pool(&self.dropout, weights, values))
    }
}

/// Bilinear scores a(q, k) = kᵀ W q (seed `002`'s table; Luong et al.,
/// 2015, "general"): (batch_size, num_queries, num_keys), from queries
/// (batch_size, num_queries, query_size), keys (batch_size, num_keys,
/// key_size) and `w` (key_size, query_size).
///
/// # Errors
/// [`AttentionError::Mismatch`] when `w` does not fit the query or key size.
// ANCHOR: bilinear
pub fn bilinear_scores(
    queries: Tensor<3>,
    keys: Tensor<3>,
    w: Tensor<2>,
) -> Result<Tensor<3>, AttentionError> {
    let (q, k, wd) = (queries.dims(), keys.dims(), w.dims());
    if q[0] != k[0] {
        return Err(AttentionError::mismatch(
            "queries",
            q.to_vec(),
            "keys",
            k.to_vec(),
            "batch sizes differ",
        ));
    }
    if wd[1] != q[2] {
        return Err(AttentionError::mismatch(
            "w",
            wd.to_vec(),
            "queries",
            q.to_vec(),
            "w must be (key_size, query_size)",
        ));
    }
    if wd[0] != k[2] {
        return Err(AttentionError::mismatch(
            "w",
            wd.to_vec(),
            "keys",
            k.to_vec(),
            "w must be (key_size, query_size)",
        ));
    }
    let projected = queries.matmul(w.transpose().unsqueeze_dim::<3>(0)); // (b, q, key_size)
    Ok(projected.matmul(keys.swap_dims(1, 2)))
}
// ANCHOR_END: bilinear

/// Self-attention as seed `002` writes it, one score at a time: tokens are
/// the N columns of `x` (d1, N); Q = W_Q X, K = W_K X, V = W_V X with `w_q`,
/// `w_k` (d3, d1) and `w_v` (d2, d1); h_i = Σ_j softmax_j(k_j·q_i / √d3) v_j.
/// Returns H (d2, N). Slow on purpose: it is the definition, spelled out.
// ANCHOR: self_attention_loop
pub fn self_attention_loop(
    x: &Tensor<2>,
    w_q: &Tensor<2>,
    w_k: &Tensor<2>,
    w_v: &Tensor<2>,
) -> Tensor<2> {
    let (q, k, v) = (
        w_q.clone().matmul(x.clone()),
        w_k.clone().matmul(x.clone()),
        w_v.clone().matmul(x.clone()),
    );
    let [d3, n] = q.dims();
    let column = |m: &Tensor<2>, j: usize| m.clone().narrow(1, j, 1); // (rows, 1)
    let outputs: Vec<Tensor<2>> = (0..n)
        .map(|i| {
            let scores: Vec<f32> = (0..n)
                .map(|j| {
                    (column(&k, j) * column(&q, i)).sum().into_scalar::<f32>() / (d3 as f32).sqrt()
                })
                .collect();
            let alpha = softmax(Tensor::<1>::from_floats(scores.as_slice(), &x.device()), 0);
            (0..n)
                .map(|j| column(&v, j) * alpha.clone().narrow(0, j, 1).unsqueeze::<2>())
                .reduce(|a, b| a + b)
                .expect("N > 0")
        })
        .collect();
    Tensor::cat(outputs, 1)
}
// ANCHOR_END: self_attention_loop

/// The same self-attention vectorised: A = softmax(QᵀK / √d3) row by row
/// (query i in row i), H = V Aᵀ. Returns (H (d2, N), A (N, N)).
// ANCHOR: self_attention
pub fn self_attention(
    x: &Tensor<2>,
    w_q: &Tensor<2>,
    w_k: &Tensor<2>,
    w_v: &Tensor<2>,
) -> (Tensor<2>, Tensor<2>) {
    let (q, k, v) = (
        w_q.clone().matmul(x.clone()),
        w_k.clone().matmul(x.clone()),
        w_v.clone().matmul(x.clone()),
    );
    let d3 = q.dims()[0] as f64;
    let weights = softmax(q.transpose().matmul(k) / d3.sqrt(), 1);
    (v.matmul(weights.clone().transpose()), weights)
}
// ANCHOR_END: self_attention
