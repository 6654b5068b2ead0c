//! Grouped-query attention (Ainslie et al., 2023, "GQA"): `num_heads` query
//! heads share `kv_heads` key/value heads, query head h reading key/value
//! head h / (num_heads / kv_heads). One key/value head is multi-query
//! attention (Shazeer, 2019); as many as query heads is d2l's multi-head
//! attention.

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Initializer, Linear, LinearConfig};
use burn::prelude::Config;
use burn::tensor::{Device, Tensor};

use crate::attention_scoring::{TORCH_LINEAR, check_fits};
use crate::kernels::{AttentionMask, attention};

use super::rotary;

/// Configuration of [`GroupedQueryAttention`].
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::efficient_attention::GroupedQueryAttentionConfig;
///
/// // 8 query heads of 4 features share 2 key/value heads.
/// let attention = GroupedQueryAttentionConfig::new(32, 8, 2).init(&Device::flex());
/// assert_eq!(attention.w_q.weight.dims(), [32, 32]);
/// assert_eq!(attention.w_k.weight.dims(), [32, 8]);
/// ```
#[derive(Config, Debug)]
pub struct GroupedQueryAttentionConfig {
    /// Size of the inputs and of the output, and of all query heads
    /// together (num_heads × head size).
    pub num_hiddens: usize,
    /// Number of query heads.
    pub num_heads: usize,
    /// Number of key/value heads; divides `num_heads`.
    pub kv_heads: usize,
    /// Dropout probability on the attention weights.
    #[config(default = 0.0)]
    pub dropout: f64,
    /// Whether the four projections have biases.
    #[config(default = false)]
    pub bias: bool,
    /// How the projections start (burn's `Linear` default, PyTorch's).
    #[config(default = "TORCH_LINEAR")]
    pub initializer: Initializer,
}

impl GroupedQueryAttentionConfig {
    /// The layer on `device`.
    ///
    /// # Panics
    /// When `num_heads` is 0 or does not divide `num_hiddens`, or
    /// `kv_heads` is 0 or does not divide `num_heads`.
    ///
    /// # Examples
    /// See [`GroupedQueryAttentionConfig`].
    pub fn init(&self, device: &Device) -> GroupedQueryAttention {
        let (n, h, g) = (self.num_hiddens, self.num_heads, self.kv_heads);
        assert!(
            n > 0 && h > 0 && n % h == 0,
            "`num_hiddens` ({n}) must be a positive multiple of `num_heads` \
             ({h})"
        );
        assert!(
            g > 0 && h % g == 0,
            "`kv_heads` ({g}) must divide `num_heads` ({h}): each key/value \
             head serves num_heads / kv_heads query heads"
        );
        let linear = |d_output| {
            LinearConfig::new(n, d_output)
                .with_bias(self.bias)
                .with_initializer(self.initializer.clone())
                .init(device)
        };
        GroupedQueryAttention {
            w_q: linear(n),
            w_k: linear(g * n / h),
            w_v: linear(g * n / h),
            w_o: linear(n),
            num_heads: h,
            kv_heads: g,
            dropout: DropoutConfig::new(self.dropout).init(),
        }
    }
}

/// Grouped-query attention: queries projected to `num_heads` heads, keys
/// and values to `kv_heads` heads of the same size, every group of
/// num_heads / kv_heads query heads attending with one key/value head
/// through [`crate::kernels::attention`] (on flex, FlashAttention-2), and
/// W_o mixing the heads. Its keys and values take kv_heads / num_heads of
/// multi-head attention's projections and memory.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::efficient_attention::GroupedQueryAttentionConfig;
/// use d2l_attention::kernels::AttentionMask;
///
/// let device = Device::flex();
/// let attention = GroupedQueryAttentionConfig::new(16, 4, 1).init(&device);
/// let x = d2l_attention::random::randn([2, 5, 16], 0, &device);
/// let y = attention.forward(x.clone(), x.clone(), x, AttentionMask::Causal);
/// assert_eq!(y.dims(), [2, 5, 16]);
/// ```
#[derive(Module, Debug)]
pub struct GroupedQueryAttention {
    /// W_q, (num_hiddens → num_hiddens).
    pub w_q: Linear,
    /// W_k, (num_hiddens → kv_heads × head size).
    pub w_k: Linear,
    /// W_v, (num_hiddens → kv_heads × head size).
    pub w_v: Linear,
    /// W_o, (num_hiddens → num_hiddens).
    pub w_o: Linear,
    /// Number of query heads.
    pub num_heads: usize,
    /// Number of key/value heads.
    pub kv_heads: usize,
    /// Dropout on the attention weights (in training, on an autodiff
    /// device).
    pub dropout: Dropout,
}

impl GroupedQueryAttention {
    /// Attention of `queries` (batch_size, num_queries, num_hiddens) over
    /// `keys` and `values` (batch_size, num_keys, num_hiddens), each query
    /// seeing the keys `mask` allows (aligned bottom-right, see
    /// [`AttentionMask`]). Returns (batch_size, num_queries, num_hiddens).
    ///
    /// # Panics
    /// When a size does not fit the projections, the batch sizes differ,
    /// `keys` and `values` differ in length or hold no key (naming the
    /// argument), or the mask's valid lengths do not fit.
    ///
    /// # Examples
    /// See [`GroupedQueryAttention`].
    // ANCHOR: forward
    pub fn forward(
        &self,
        queries: Tensor<3>,
        keys: Tensor<3>,
        values: Tensor<3>,
        mask: AttentionMask<'_>,
    ) -> Tensor<3> {
        check_fits("queries", &queries, &self.w_q);
        check_fits("keys", &keys, &self.w_k);
        check_fits("values", &values, &self.w_v);
        let (q, k, v) = (queries.dims(), keys.dims(), values.dims());
        assert!(
            k[0] == q[0] && v[..2] == k[..2] && k[1] > 0,
            "`keys` {k:?} and `values` {v:?} must hold the same number (at \
             least 1) of keys for each of the {} sequences of `queries`",
            q[0]
        );
        // (batch_size, heads, n, head size)
        let queries = split_heads(self.w_q.forward(queries), self.num_heads);
        let keys = split_heads(self.w_k.forward(keys), self.kv_heads);
        let values = split_heads(self.w_v.forward(values), self.kv_heads);
        // query head h reads key/value head h / (num_heads / kv_heads)
        let output = attention(queries, keys, values, mask, &self.dropout);
        self.w_o.forward(merge_heads(output))
    }
    // ANCHOR_END: forward

    /// Self-attention of new inputs `x` (batch_size, n, num_hiddens) after
    /// the projected keys and values of earlier steps in `cached` (each
    /// (batch_size, kv_heads, steps, head size)), for a decoder that
    /// generates: only the new inputs are projected. With `rotary_start`
    /// = Some(p), the new queries and keys are turned by [`rotary`] as
    /// positions p, p + 1, … before the keys are cached. Returns the
    /// output (batch_size, n, num_hiddens) and the keys and values with the
    /// new ones appended.
    ///
    /// # Panics
    /// As [`GroupedQueryAttention::forward`], and when `cached` does not
    /// fit the new keys (batch size, heads or head size).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::efficient_attention::GroupedQueryAttentionConfig;
    /// use d2l_attention::kernels::AttentionMask;
    ///
    /// let device = Device::flex();
    /// let attention = GroupedQueryAttentionConfig::new(16, 4, 2).init(&device);
    /// let x = d2l_attention::random::randn([1, 5, 16], 0, &device);
    /// let (_, cached) = attention.forward_cached(x.clone().narrow(1, 0, 3), None, Some(0), AttentionMask::Causal);
    /// let (y, (keys, _)) = attention.forward_cached(x.narrow(1, 3, 2), Some(cached), Some(3), AttentionMask::Causal);
    /// // 2 key/value heads of 4 features, 5 steps cached.
    /// assert_eq!((y.dims(), keys.dims()), ([1, 2, 16], [1, 2, 5, 4]));
    /// ```
    // ANCHOR: forward_cached
    pub fn forward_cached(
        &self,
        x: Tensor<3>,
        cached: Option<(Tensor<4>, Tensor<4>)>,
        rotary_start: Option<usize>,
        mask: AttentionMask<'_>,
    ) -> (Tensor<3>, (Tensor<4>, Tensor<4>)) {
        check_fits("x", &x, &self.w_q);
        let mut queries =
            split_heads(self.w_q.forward(x.clone()), self.num_heads);
        let mut keys = split_heads(self.w_k.forward(x.clone()), self.kv_heads);
        let mut values = split_heads(self.w_v.forward(x), self.kv_heads);
        if let Some(start) = rotary_start {
            queries = rotary(queries, start);
            keys = rotary(keys, start);
        }
        if let Some((past_keys, past_values)) = cached {
            let (past, new) = (past_keys.dims(), keys.dims());
            assert!(
                past[0] == new[0] && past[1] == new[1] && past[3] == new[3],
                "`cached` keys {past:?} do not fit the new keys {new:?}"
            );
            keys = Tensor::cat(vec![past_keys, keys], 2);
            values = Tensor::cat(vec![past_values, values], 2);
        }
        let output = attention(
            queries,
            keys.clone(),
            values.clone(),
            mask,
            &self.dropout,
        );
        (self.w_o.forward(merge_heads(output)), (keys, values))
    }
    // ANCHOR_END: forward_cached
}

/// (batch_size, n, heads · d) → (batch_size, heads, n, d): head j holds
/// features j·d … (j + 1)·d − 1, as d2l's `transpose_qkv` and PyTorch's
/// `view(b, n, heads, d).transpose(1, 2)`.
pub(super) fn split_heads(x: Tensor<3>, heads: usize) -> Tensor<4> {
    let [batch_size, n, width] = x.dims();
    x.reshape([batch_size, n, heads, width / heads])
        .swap_dims(1, 2)
}

/// Undoes [`split_heads`]: the heads side by side again.
pub(super) fn merge_heads(x: Tensor<4>) -> Tensor<3> {
    let [batch_size, heads, n, d] = x.dims();
    x.swap_dims(1, 2).reshape([batch_size, n, heads * d])
}
