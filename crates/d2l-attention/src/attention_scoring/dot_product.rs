//! Scaled dot-product attention (d2l zh §10.3.3, en §11.3.3), bilinear
//! scores, and self-attention as a loop and vectorised (the notebook
//! 注意力机制).

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig};
use burn::prelude::Config;
use burn::tensor::Tensor;

use crate::kernels::{self, AttentionMask, softmax};

use super::*;

/// Configuration of [`DotProductAttention`].
///
/// # Examples
/// ```
/// use d2l_attention::attention_scoring::DotProductAttentionConfig;
///
/// let layer = DotProductAttentionConfig::new().with_dropout(0.5).init();
/// assert!(layer.scaled);
/// ```
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
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::attention_scoring::DotProductAttentionConfig;
    ///
    /// let unscaled = DotProductAttentionConfig::new().with_scaled(false).init();
    /// assert!(!unscaled.scaled);
    /// ```
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
///
/// # Examples
/// ```
/// # use burn::tensor::{Device, Int, Tensor};
/// # let device = Device::flex();
/// let queries = d2l_attention::random::randn([2, 1, 2], 0, &device);
/// let keys = Tensor::<3>::ones([2, 10, 2], &device);
/// # let values = Tensor::<1, Int>::arange(0..40, &device).float().reshape([1, 10, 4]);
/// # let values = values.repeat_dim(0, 2);
/// use d2l_attention::attention_scoring::{DotProductAttentionConfig, ValidLens};
/// let valid_lens = ValidLens::new(&[2, 6], &device);
///
/// let layer = DotProductAttentionConfig::new().init();
/// let attended = layer.forward(queries, keys, values, Some(&valid_lens));
/// let output = attended.output.try_into_vec_as::<f32>().unwrap();
/// let expected = [2.0, 3.0, 4.0, 5.0, 10.0, 11.0, 12.0, 13.0];
/// assert!(output.iter().zip(expected).all(|(o, e)| (o - e).abs() < 1e-4));
/// ```
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
    /// # Panics
    /// When the batch sizes or vector sizes differ (naming both shapes).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::attention_scoring::DotProductAttentionConfig;
    ///
    /// let device = Device::flex();
    /// let queries = Tensor::<3>::from_floats([[[1.0, 1.0]]], &device);
    /// let keys = Tensor::<3>::from_floats([[[2.0, 0.0], [1.0, 3.0]]], &device);
    /// let scores = DotProductAttentionConfig::new().init().scores(queries, keys);
    /// // qᵀk / √2: 2/√2 and 4/√2.
    /// let scores = scores.try_into_vec_as::<f32>().unwrap();
    /// assert!((scores[0] - 2f32.sqrt()).abs() < 1e-6 && (scores[1] - 8f32.sqrt()).abs() < 1e-6);
    /// ```
    // ANCHOR: dot_product
    pub fn scores(&self, queries: Tensor<3>, keys: Tensor<3>) -> Tensor<3> {
        check_dot(&queries, &keys);
        let d = queries.dims()[2];
        let scores = queries.matmul(keys.swap_dims(1, 2));
        if self.scaled {
            scores / (d as f64).sqrt()
        } else {
            scores
        }
    }
    // ANCHOR_END: dot_product

    /// d2l's attention weights: the masked softmax ([`masked_softmax`])
    /// of [`DotProductAttention::scores`], (batch_size, num_queries,
    /// num_keys).
    ///
    /// # Panics
    /// As [`DotProductAttention::scores`] and [`ValidLens::mask`].
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::attention_scoring::{DotProductAttentionConfig, ValidLens};
    ///
    /// let device = Device::flex();
    /// let x = Tensor::<3>::ones([1, 1, 2], &device);
    /// let keys = Tensor::<3>::ones([1, 4, 2], &device);
    /// let lens = ValidLens::new(&[2], &device);
    /// let weights = DotProductAttentionConfig::new().init().weights(x, keys, Some(&lens));
    /// assert_eq!(weights.try_into_vec_as::<f32>().unwrap(), [0.5, 0.5, 0.0, 0.0]);
    /// ```
    pub fn weights(
        &self,
        queries: Tensor<3>,
        keys: Tensor<3>,
        valid_lens: Option<&ValidLens>,
    ) -> Tensor<3> {
        kernels::masked_softmax(self.scores(queries, keys), valid_lens)
    }

    /// Attention pooling of `values` (batch_size, num_keys, value_size) for
    /// `queries` (batch_size, num_queries, d) over `keys` (batch_size,
    /// num_keys, d), masked by `valid_lens` as in [`masked_softmax`].
    ///
    /// Scaled scores take the fused operation ([`kernels::attention`]: no
    /// score matrix in memory, its own backward pass; the same result
    /// within rounding, the same dropout masks) where it pays
    /// ([`kernels::fused_attention_pays`]: f32 on flex, 64 keys or more,
    /// 128 under autodiff); the weights are then built
    /// only when asked ([`AttentionWeights::tensor`]). Everything else
    /// takes d2l's form.
    ///
    /// # Panics
    /// When the shapes disagree or `valid_lens` does not fit (see
    /// [`ValidLens::mask`]), naming the argument.
    ///
    /// # Examples
    /// ```
    /// # use burn::tensor::{Device, Int, Tensor};
    /// # let device = Device::flex();
    /// let queries = d2l_attention::random::randn([2, 1, 2], 0, &device);
    /// let keys = Tensor::<3>::ones([2, 10, 2], &device);
    /// # let values = Tensor::<1, Int>::arange(0..40, &device).float().reshape([1, 10, 4]);
    /// # let values = values.repeat_dim(0, 2);
    /// use d2l_attention::attention_scoring::{DotProductAttentionConfig, ValidLens};
    /// let valid_lens = ValidLens::new(&[2, 6], &device);
    ///
    /// let layer = DotProductAttentionConfig::new().init();
    /// let attended = layer.forward(queries, keys, values, Some(&valid_lens));
    /// assert_eq!(attended.attention_weights.dims(), [2, 1, 10]);
    /// ```
    // ANCHOR: dot_product_forward
    pub fn forward(
        &self,
        queries: Tensor<3>,
        keys: Tensor<3>,
        values: Tensor<3>,
        valid_lens: Option<&ValidLens>,
    ) -> Attended {
        check_qkv(&queries, &keys, &values);
        if self.scaled
            && kernels::fused_attention_pays(&queries, keys.dims()[1])
        {
            return self.forward_fused(queries, keys, values, valid_lens);
        }
        let weights =
            kernels::masked_softmax(self.scores(queries, keys), valid_lens);
        pool(&self.dropout, weights, values)
    }
    // ANCHOR_END: dot_product_forward

    /// [`DotProductAttention::forward`] through [`kernels::attention`],
    /// one head per sequence.
    fn forward_fused(
        &self,
        queries: Tensor<3>,
        keys: Tensor<3>,
        values: Tensor<3>,
        valid_lens: Option<&ValidLens>,
    ) -> Attended {
        check_dot(&queries, &keys);
        let mask =
            valid_lens.map_or(AttentionMask::None, AttentionMask::ValidLens);
        let head = |x: &Tensor<3>| x.clone().unsqueeze_dim::<4>(1);
        let output = kernels::attention(
            head(&queries),
            head(&keys),
            head(&values),
            mask,
            &self.dropout,
        );
        Attended {
            output: output.squeeze_dim(1),
            attention_weights: AttentionWeights::of_scores(
                self, queries, keys, valid_lens,
            ),
        }
    }
}

/// Checks that `queries` (b, n_q, d) and `keys` (b, n_k, d) share b and d.
///
/// # Panics
/// Naming both shapes.
fn check_dot(queries: &Tensor<3>, keys: &Tensor<3>) {
    let (q, k) = (queries.dims(), keys.dims());
    assert!(
        q[0] == k[0] && q[2] == k[2],
        "`queries` {q:?} and `keys` {k:?} disagree: a dot product needs \
         one batch size (dimension 0) and one vector size (dimension 2)"
    );
}

/// Bilinear scores a(q, k) = kᵀ W q (seed `002`'s table; Luong et al.,
/// 2015, "general"): (batch_size, num_queries, num_keys), from queries
/// (batch_size, num_queries, query_size), keys (batch_size, num_keys,
/// key_size) and `w` (key_size, query_size).
///
/// # Panics
/// When the batch sizes differ or `w` does not fit the query and key sizes.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::attention_scoring::bilinear_scores;
///
/// let device = Device::flex();
/// let queries = Tensor::<3>::from_floats([[[1.0, 2.0, 3.0]]], &device);
/// let keys = Tensor::<3>::from_floats([[[1.0, 0.0], [0.0, 1.0]]], &device);
/// let w = Tensor::<2>::from_floats([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]], &device);
/// // kᵀ W q: W picks q's first and third entries.
/// let scores = bilinear_scores(queries, keys, w);
/// assert_eq!(scores.try_into_vec_as::<f32>().unwrap(), [1.0, 3.0]);
/// ```
// ANCHOR: bilinear
pub fn bilinear_scores(
    queries: Tensor<3>,
    keys: Tensor<3>,
    w: Tensor<2>,
) -> Tensor<3> {
    let (q, k, wd) = (queries.dims(), keys.dims(), w.dims());
    assert!(
        q[0] == k[0],
        "`queries` {q:?} and `keys` {k:?} disagree: batch sizes differ"
    );
    assert!(
        wd == [k[2], q[2]],
        "`w` has shape {wd:?}, expected (key_size, query_size) = ({}, {})",
        k[2],
        q[2]
    );
    // (b, q, key_size)
    let projected = queries.matmul(w.transpose().unsqueeze_dim::<3>(0));
    projected.matmul(keys.swap_dims(1, 2))
}
// ANCHOR_END: bilinear

/// Self-attention as seed `002` writes it, one score at a time: tokens are
/// the N columns of `x` (d1, N); Q = W_Q X, K = W_K X, V = W_V X with `w_q`,
/// `w_k` (d3, d1) and `w_v` (d2, d1); h_i = Σ_j softmax_j(k_j·q_i / √d3) v_j.
/// Returns H (d2, N). Slow on purpose: it is the definition, spelled out.
///
/// # Examples
/// ```
/// use d2l_attention::attention_scoring::{self_attention, self_attention_loop};
/// use d2l_attention::random::randn;
/// # use burn::tensor::Device;
/// # let device = Device::flex();
///
/// // Five tokens of size 4; queries and keys of size 3, values of size 2.
/// let x = randn([4, 5], 0, &device);
/// let (w_q, w_k, w_v) = (randn([3, 4], 1, &device), randn([3, 4], 2, &device), randn([2, 4], 3, &device));
/// let h = self_attention_loop(&x, &w_q, &w_k, &w_v);
/// assert_eq!(h.dims(), [2, 5]);
/// let (vectorised, _) = self_attention(&x, &w_q, &w_k, &w_v);
/// assert!((h - vectorised).abs().max().into_scalar::<f32>() < 1e-5);
/// ```
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
    // (rows, 1)
    let column = |m: &Tensor<2>, j: usize| m.clone().narrow(1, j, 1);
    let outputs: Vec<Tensor<2>> = (0..n)
        .map(|i| {
            let scores: Vec<f32> = (0..n)
                .map(|j| {
                    (column(&k, j) * column(&q, i)).sum().into_scalar::<f32>()
                        / (d3 as f32).sqrt()
                })
                .collect();
            let alpha = softmax(Tensor::<1>::from_floats(
                scores.as_slice(),
                &x.device(),
            ));
            (0..n)
                .map(|j| {
                    column(&v, j)
                        * alpha.clone().narrow(0, j, 1).unsqueeze::<2>()
                })
                .reduce(|a, b| a + b)
                .expect("N > 0")
        })
        .collect();
    Tensor::cat(outputs, 1)
}
// ANCHOR_END: self_attention_loop

/// The same self-attention vectorised: A = softmax(QᵀK / √d3) row by row
/// (query i in row i), H = V Aᵀ. Returns (H (d2, N), A (N, N)).
///
/// # Examples
/// ```
/// use d2l_attention::attention_scoring::self_attention;
/// use d2l_attention::random::randn;
/// # use burn::tensor::Device;
/// # let device = Device::flex();
///
/// let x = randn([4, 5], 0, &device);
/// let (w_q, w_k, w_v) = (randn([3, 4], 1, &device), randn([3, 4], 2, &device), randn([2, 4], 3, &device));
/// let (h, a) = self_attention(&x, &w_q, &w_k, &w_v);
/// assert_eq!((h.dims(), a.dims()), ([2, 5], [5, 5]));
/// // Each query's weights sum to 1.
/// let sums = a.sum_dim(1).try_into_vec_as::<f32>().unwrap();
/// assert!(sums.iter().all(|s| (s - 1.0).abs() < 1e-5));
/// ```
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
    let weights = softmax(q.transpose().matmul(k) / d3.sqrt());
    (v.matmul(weights.clone().transpose()), weights)
}
// ANCHOR_END: self_attention
