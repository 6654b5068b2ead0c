//! Additive attention (d2l zh §10.3.2, en §11.3.2).

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Initializer, Linear, LinearConfig};
use burn::prelude::Config;
use burn::tensor::{Device, Tensor, module::linear};

use crate::kernels::{self, sigmoid};

use super::*;

/// Configuration of [`AdditiveAttention`]; d2l's
/// `AdditiveAttention(key_size, query_size, num_hiddens, dropout)`.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::attention_scoring::AdditiveAttentionConfig;
///
/// // d2l's AdditiveAttention(key_size=2, query_size=20, num_hiddens=8, dropout=0.1).
/// let layer = AdditiveAttentionConfig::new(2, 20, 8).with_dropout(0.1).init(&Device::flex());
/// assert_eq!(layer.w_q.weight.dims(), [20, 8]);
/// ```
#[derive(Config, Debug)]
pub struct AdditiveAttentionConfig {
    /// Size of a key vector.
    pub key_size: usize,
    /// Size of a query vector.
    pub query_size: usize,
    /// Size of the hidden layer that compares them.
    pub num_hiddens: usize,
    /// Dropout probability on the attention weights.
    #[config(default = 0.0)]
    pub dropout: f64,
    /// How the three weight matrices start (default: burn's `Linear`
    /// default, which is torch's).
    #[config(default = "super::TORCH_LINEAR")]
    pub initializer: Initializer,
}

impl AdditiveAttentionConfig {
    /// A layer with freshly initialised weights on `device`.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::attention_scoring::AdditiveAttentionConfig;
    ///
    /// let layer = AdditiveAttentionConfig::new(2, 20, 8).init(&Device::flex());
    /// assert_eq!((layer.w_k.weight.dims(), layer.w_v.weight.dims()), ([2, 8], [8, 1]));
    /// ```
    pub fn init(&self, device: &Device) -> AdditiveAttention {
        let linear = |i, o| {
            LinearConfig::new(i, o)
                .with_bias(false)
                .with_initializer(self.initializer.clone())
                .init(device)
        };
        AdditiveAttention {
            w_k: linear(self.key_size, self.num_hiddens),
            w_q: linear(self.query_size, self.num_hiddens),
            w_v: linear(self.num_hiddens, 1),
            dropout: DropoutConfig::new(self.dropout).init(),
        }
    }
}

/// Additive attention (Bahdanau et al., 2015; d2l zh §10.3.2, eq. 10.3.3):
/// score a(q, k) = w_vᵀ tanh(W_q q + W_k k). Queries and keys may have
/// different sizes.
///
/// # Examples
/// ```
/// # use burn::tensor::{Device, Int, Tensor};
/// # let device = Device::flex();
/// // d2l's demo: identical keys, so the output is the mean of the valid values.
/// let queries = d2l_attention::random::randn([2, 1, 20], 0, &device);
/// let keys = Tensor::<3>::ones([2, 10, 2], &device);
/// # let values = Tensor::<1, Int>::arange(0..40, &device).float().reshape([1, 10, 4]);
/// # let values = values.repeat_dim(0, 2);
/// use d2l_attention::attention_scoring::{AdditiveAttentionConfig, ValidLens};
/// let valid_lens = ValidLens::new(&[2, 6], &device);
///
/// let layer = AdditiveAttentionConfig::new(2, 20, 8).init(&device);
/// let attended = layer.forward(queries, keys, values, Some(&valid_lens));
/// let output = attended.output.try_into_vec_as::<f32>().unwrap();
/// let expected = [2.0, 3.0, 4.0, 5.0, 10.0, 11.0, 12.0, 13.0];
/// assert!(output.iter().zip(expected).all(|(o, e)| (o - e).abs() < 1e-4));
/// ```
#[derive(Module, Debug)]
pub struct AdditiveAttention {
    /// W_k, (key_size → num_hiddens), no bias.
    pub w_k: Linear,
    /// W_q, (query_size → num_hiddens), no bias.
    pub w_q: Linear,
    /// w_v, (num_hiddens → 1), no bias.
    pub w_v: Linear,
    /// Dropout on the attention weights.
    pub dropout: Dropout,
}

impl AdditiveAttention {
    /// The scores of every query against every key: (batch_size,
    /// num_queries, num_keys), from queries (batch_size, num_queries,
    /// query_size) and keys (batch_size, num_keys, key_size).
    ///
    /// # Examples
    /// ```
    /// # use burn::tensor::{Device, Int, Tensor};
    /// # let device = Device::flex();
    /// // d2l's demo: identical keys, so the output is the mean of the valid values.
    /// let queries = d2l_attention::random::randn([2, 1, 20], 0, &device);
    /// let keys = Tensor::<3>::ones([2, 10, 2], &device);
    /// # let values = Tensor::<1, Int>::arange(0..40, &device).float().reshape([1, 10, 4]);
    /// # let values = values.repeat_dim(0, 2);
    /// use d2l_attention::attention_scoring::{AdditiveAttentionConfig, ValidLens};
    /// let valid_lens = ValidLens::new(&[2, 6], &device);
    ///
    /// let layer = AdditiveAttentionConfig::new(2, 20, 8).init(&device);
    /// let scores = layer.scores(queries, keys);
    /// assert_eq!(scores.dims(), [2, 1, 10]);
    /// ```
    // ANCHOR: additive
    pub fn scores(&self, queries: Tensor<3>, keys: Tensor<3>) -> Tensor<3> {
        self.check_sizes(&queries, &keys);
        // (b, q, 1, h)
        let queries = self.w_q.forward(queries).unsqueeze_dim::<4>(2);
        let keys = self.w_k.forward(keys).unsqueeze_dim::<4>(1); // (b, 1, k, h)
        let features = (queries + keys).tanh(); // (b, q, k, h)
        self.w_v.forward(features).squeeze_dim::<3>(3)
    }
    // ANCHOR_END: additive

    /// Attention pooling of `values` (batch_size, num_keys, value_size) for
    /// `queries` (batch_size, num_queries, query_size) over `keys`
    /// (batch_size, num_keys, key_size), masked by `valid_lens` as in
    /// [`masked_softmax`]: d2l's `AdditiveAttention.forward`. A decoder that
    /// attends over the same keys at every step uses
    /// [`AdditiveAttention::project_keys`] and [`AdditiveAttention::attend`]
    /// instead, which give the same weights faster.
    ///
    /// # Panics
    /// When the batch sizes differ, keys and values differ in number, the
    /// query or key size is not the configured one, or `valid_lens` does not
    /// fit (see [`ValidLens::mask`]); the message names the argument.
    ///
    /// # Examples
    /// ```
    /// # use burn::tensor::{Device, Int, Tensor};
    /// # let device = Device::flex();
    /// // d2l's demo: identical keys, so the output is the mean of the valid values.
    /// let queries = d2l_attention::random::randn([2, 1, 20], 0, &device);
    /// let keys = Tensor::<3>::ones([2, 10, 2], &device);
    /// # let values = Tensor::<1, Int>::arange(0..40, &device).float().reshape([1, 10, 4]);
    /// # let values = values.repeat_dim(0, 2);
    /// use d2l_attention::attention_scoring::{AdditiveAttentionConfig, ValidLens};
    /// let valid_lens = ValidLens::new(&[2, 6], &device);
    ///
    /// let layer = AdditiveAttentionConfig::new(2, 20, 8).init(&device);
    /// let attended = layer.forward(queries, keys, values, Some(&valid_lens));
    /// assert_eq!(attended.output.dims(), [2, 1, 4]);
    /// // The weights past each valid length are exactly 0.
    /// let weights = attended.attention_weights.tensor().try_into_vec_as::<f32>().unwrap();
    /// assert!(weights[2..10].iter().all(|&w| w == 0.0));
    /// ```
    // ANCHOR: additive_forward
    pub fn forward(
        &self,
        queries: Tensor<3>,
        keys: Tensor<3>,
        values: Tensor<3>,
        valid_lens: Option<&ValidLens>,
    ) -> Attended {
        check_qkv(&queries, &keys, &values);
        let weights =
            kernels::masked_softmax(self.scores(queries, keys), valid_lens);
        pool(&self.dropout, weights, values)
    }
    // ANCHOR_END: additive_forward

    /// Checks `queries` (…, query_size) and `keys` (…, key_size) against
    /// the layer's sizes.
    fn check_sizes(&self, queries: &Tensor<3>, keys: &Tensor<3>) {
        check_fits("queries", queries, &self.w_q);
        check_fits("keys", keys, &self.w_k);
    }

    /// Prepares `keys` (batch_size, num_keys, key_size), `values`
    /// (batch_size, num_keys, value_size) and their `valid_lens` for many
    /// calls of [`AdditiveAttention::attend`], as a decoder makes, one per
    /// step: the keys are projected once.
    ///
    /// # Panics
    /// As [`AdditiveAttention::forward`].
    ///
    /// # Examples
    /// ```
    /// # use burn::tensor::{Device, Int, Tensor};
    /// # let device = Device::flex();
    /// // d2l's demo: identical keys, so the output is the mean of the valid values.
    /// let queries = d2l_attention::random::randn([2, 1, 20], 0, &device);
    /// let keys = Tensor::<3>::ones([2, 10, 2], &device);
    /// # let values = Tensor::<1, Int>::arange(0..40, &device).float().reshape([1, 10, 4]);
    /// # let values = values.repeat_dim(0, 2);
    /// use d2l_attention::attention_scoring::{AdditiveAttentionConfig, ValidLens};
    /// let valid_lens = ValidLens::new(&[2, 6], &device);
    ///
    /// let layer = AdditiveAttentionConfig::new(2, 20, 8).init(&device);
    /// let projected = layer.project_keys(keys, values, Some(valid_lens));
    /// let attended = layer.attend(queries, &projected);
    /// assert_eq!(attended.attention_weights.dims(), [2, 1, 10]);
    /// ```
    pub fn project_keys(
        &self,
        keys: Tensor<3>,
        values: Tensor<3>,
        valid_lens: Option<ValidLens>,
    ) -> ProjectedKeys {
        check_qkv(&keys, &keys, &values);
        check_fits("keys", &keys, &self.w_k);
        ProjectedKeys {
            keys: (self.w_k.forward(keys) * 2.0).unsqueeze_dim(1),
            values,
            valid_lens,
            w_q: self.w_q.weight.val() * 2.0,
            w_v: self.w_v.weight.val() * 2.0,
        }
    }

    /// The same pooling as [`AdditiveAttention::forward`] over keys
    /// prepared by [`AdditiveAttention::project_keys`], for `queries`
    /// (batch_size, num_queries, query_size).
    ///
    /// It computes tanh(x) as 2σ(2x) − 1, folding the factors 2 into the
    /// three weight matrices once per [`AdditiveAttention::project_keys`]
    /// (the −1 shifts every score of a row alike, which softmax ignores).
    /// flex evaluates tanh entry by entry with libm's `tanhf`, once forward
    /// and again in the backward pass; its sigmoid is a cheaper `expf`. In
    /// our measurements this alone made the Bahdanau training about 40%
    /// faster on flex. The weights agree with those of [`masked_softmax`]
    /// over [`AdditiveAttention::scores`] to rounding.
    ///
    /// # Panics
    /// When `queries` has another batch size or query size, or `projected`
    /// was made by a layer of another size (naming the argument), or
    /// `projected`'s valid lengths do not fit the queries.
    ///
    /// # Examples
    /// ```
    /// # use burn::tensor::{Device, Int, Tensor};
    /// # let device = Device::flex();
    /// // d2l's demo: identical keys, so the output is the mean of the valid values.
    /// let queries = d2l_attention::random::randn([2, 1, 20], 0, &device);
    /// let keys = Tensor::<3>::ones([2, 10, 2], &device);
    /// # let values = Tensor::<1, Int>::arange(0..40, &device).float().reshape([1, 10, 4]);
    /// # let values = values.repeat_dim(0, 2);
    /// use d2l_attention::attention_scoring::{AdditiveAttentionConfig, ValidLens};
    /// let valid_lens = ValidLens::new(&[2, 6], &device);
    ///
    /// let layer = AdditiveAttentionConfig::new(2, 20, 8).init(&device);
    /// let projected = layer.project_keys(keys.clone(), values.clone(), Some(valid_lens.clone()));
    /// // The same weights as `forward`, to rounding.
    /// let fast = layer.attend(queries.clone(), &projected).attention_weights.tensor();
    /// let plain = layer.forward(queries, keys, values, Some(&valid_lens));
    /// let gap = (fast - plain.attention_weights.tensor()).abs().max().into_scalar::<f32>();
    /// assert!(gap < 1e-6);
    /// ```
    pub fn attend(
        &self,
        queries: Tensor<3>,
        projected: &ProjectedKeys,
    ) -> Attended {
        let [query_size, num_hiddens] = self.w_q.weight.dims();
        let keys = projected.keys.dims();
        assert!(
            keys[3] == num_hiddens,
            "`projected` holds keys {keys:?}, expected keys projected to num_hiddens {num_hiddens}"
        );
        let q = queries.dims();
        assert!(
            q[0] == keys[0] && q[2] == query_size,
            "`queries` has shape {q:?}, expected ({}, num_queries, {query_size})",
            keys[0]
        );
        let queries =
            linear(queries, projected.w_q.clone(), None).unsqueeze_dim::<4>(2);
        let features = sigmoid(queries + projected.keys.clone()); // (tanh + 1) / 2
        let scores =
            linear(features, projected.w_v.clone(), None).squeeze_dim::<3>(3);
        let weights =
            kernels::masked_softmax(scores, projected.valid_lens.as_ref());
        pool(&self.dropout, weights, projected.values.clone())
    }
}

/// Keys and values ready for [`AdditiveAttention::attend`].
///
/// # Examples
/// ```
/// # use burn::tensor::{Device, Int, Tensor};
/// # let device = Device::flex();
/// // d2l's demo: identical keys, so the output is the mean of the valid values.
/// let queries = d2l_attention::random::randn([2, 1, 20], 0, &device);
/// let keys = Tensor::<3>::ones([2, 10, 2], &device);
/// # let values = Tensor::<1, Int>::arange(0..40, &device).float().reshape([1, 10, 4]);
/// # let values = values.repeat_dim(0, 2);
/// use d2l_attention::attention_scoring::{AdditiveAttentionConfig, ValidLens};
/// let valid_lens = ValidLens::new(&[2, 6], &device);
///
/// let layer = AdditiveAttentionConfig::new(2, 20, 8).init(&device);
/// // Made once per batch, used by every decoding step.
/// let projected = layer.project_keys(keys, values, Some(valid_lens));
/// for _ in 0..3 {
///     assert_eq!(layer.attend(queries.clone(), &projected).output.dims(), [2, 1, 4]);
/// }
/// ```
#[derive(Clone, Debug)]
pub struct ProjectedKeys {
    /// 2·W_k k: (batch_size, 1, num_keys, num_hiddens).
    keys: Tensor<4>,
    /// (batch_size, num_keys, value_size).
    values: Tensor<3>,
    /// How many keys each query may see.
    valid_lens: Option<ValidLens>,
    /// 2·W_q, (query_size, num_hiddens).
    w_q: Tensor<2>,
    /// 2·w_v, (num_hiddens, 1).
    w_v: Tensor<2>,
}
