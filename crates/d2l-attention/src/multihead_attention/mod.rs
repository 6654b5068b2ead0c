//! Multi-head attention (d2l zh §10.5, en §11.5; Vaswani et al., 2017,
//! "Attention Is All You Need"): `num_heads` scaled dot-product attentions
//! over learned projections, run as one batched product, and the layouts of
//! PyTorch's `nn.MultiheadAttention` and burn's own module.

use burn::module::Module;
use burn::nn::{Initializer, Linear, LinearConfig};
use burn::prelude::Config;
use burn::tensor::{Device, Tensor};

mod pytorch;

pub use pytorch::{
    AttnMask, PytorchLoadError, PytorchMhaInput, PytorchMhaOutput,
};

use crate::attention_scoring::{
    AdditiveAttention, AdditiveAttentionConfig, Attended, AttentionWeights,
    DotProductAttention,
    DotProductAttentionConfig, TORCH_LINEAR, ValidLens, check_fits,
};

/// Configuration of [`MultiHeadAttention`]; d2l's
/// `MultiHeadAttention(key_size, query_size, value_size, num_hiddens,
/// num_heads, dropout, bias=False)`.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::multihead_attention::MultiHeadAttentionConfig;
///
/// // d2l's example: 100 hidden units in 5 heads, dropout 0.5.
/// let attention = MultiHeadAttentionConfig::new(100, 100, 100, 100, 5)
///     .with_dropout(0.5)
///     .init(&Device::flex());
/// assert_eq!(attention.w_o.weight.dims(), [100, 100]);
/// ```
#[derive(Config, Debug)]
pub struct MultiHeadAttentionConfig {
    /// Size of a key vector.
    pub key_size: usize,
    /// Size of a query vector.
    pub query_size: usize,
    /// Size of a value vector.
    pub value_size: usize,
    /// Size of the output, and of all heads together (num_heads × the
    /// size of one head's queries, keys and values).
    pub num_hiddens: usize,
    /// Number of heads.
    pub num_heads: usize,
    /// Dropout probability on the attention weights.
    #[config(default = 0.0)]
    pub dropout: f64,
    /// Whether the four projections have biases (d2l: no; PyTorch's
    /// `nn.MultiheadAttention` and burn's module: yes).
    #[config(default = false)]
    pub bias: bool,
    /// How the four projections start: burn's `Linear` default (PyTorch's)
    /// unless a model trains from d2l's Xavier initialisation.
    #[config(default = "TORCH_LINEAR")]
    pub initializer: Initializer,
    /// When set, the heads score with one additive attention of this many
    /// hidden units over each head's num_hiddens / num_heads features (its
    /// weights shared by all heads, as the dot product is), instead of
    /// scaled dot products (d2l en §11.7, exercise 2).
    #[config(default = "None")]
    pub additive_hiddens: Option<usize>,
}

impl MultiHeadAttentionConfig {
    /// The layer on `device`, its projections drawn by `initializer`
    /// (burn's default `Linear` initialisation, PyTorch's, unless set).
    ///
    /// # Panics
    /// When `num_heads` is 0 or does not divide `num_hiddens`.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::multihead_attention::MultiHeadAttentionConfig;
    ///
    /// let attention = MultiHeadAttentionConfig::new(3, 4, 5, 8, 2).with_bias(true).init(&Device::flex());
    /// // Linear weights are (d_input, d_output) in burn.
    /// assert_eq!(attention.w_k.weight.dims(), [3, 8]);
    /// assert!(attention.w_k.bias.is_some());
    /// ```
    pub fn init(&self, device: &Device) -> MultiHeadAttention {
        let (h, n) = (self.num_heads, self.num_hiddens);
        assert!(
            h > 0 && n % h == 0,
            "`num_hiddens` ({n}) must be a multiple of `num_heads` ({h}): every head gets num_hiddens / num_heads features"
        );
        let linear = |d_input| {
            LinearConfig::new(d_input, n)
                .with_bias(self.bias)
                .with_initializer(self.initializer.clone())
                .init(device)
        };
        let attention = match self.additive_hiddens {
            None => Scoring::DotProduct(
                DotProductAttentionConfig::new()
                    .with_dropout(self.dropout)
                    .init(),
            ),
            Some(hiddens) => Scoring::Additive(
                AdditiveAttentionConfig::new(n / h, n / h, hiddens)
                    .with_dropout(self.dropout)
                    .with_initializer(self.initializer.clone())
                    .init(device),
            ),
        };
        MultiHeadAttention {
            attention,
            w_q: linear(self.query_size),
            w_k: linear(self.key_size),
            w_v: linear(self.value_size),
            w_o: linear(n),
            num_heads: h,
        }
    }
}

/// How the heads score their queries against their keys: scaled dot
/// products (d2l's multi-head attention) or one additive attention shared
/// by all heads.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::attention_scoring::DotProductAttentionConfig;
/// use d2l_attention::multihead_attention::Scoring;
///
/// let scoring = Scoring::from(DotProductAttentionConfig::new().init());
/// let x = Tensor::<3>::ones([2, 3, 4], &Device::flex());
/// assert_eq!(scoring.forward(x.clone(), x.clone(), x, None).output.dims(), [2, 3, 4]);
/// ```
#[derive(Module, Debug)]
pub enum Scoring {
    /// Scaled (or plain) dot products, d2l's `DotProductAttention`.
    DotProduct(DotProductAttention),
    /// d2l's `AdditiveAttention` over each head's features.
    Additive(AdditiveAttention),
}

impl From<DotProductAttention> for Scoring {
    fn from(attention: DotProductAttention) -> Self {
        Self::DotProduct(attention)
    }
}

impl Scoring {
    /// The chosen attention's `forward` (see [`DotProductAttention`] and
    /// [`AdditiveAttention`]).
    ///
    /// # Panics
    /// As that attention's `forward`.
    ///
    /// # Examples
    /// See [`Scoring`].
    pub fn forward(
        &self,
        queries: Tensor<3>,
        keys: Tensor<3>,
        values: Tensor<3>,
        valid_lens: Option<&ValidLens>,
    ) -> Attended {
        match self {
            Self::DotProduct(a) => a.forward(queries, keys, values, valid_lens),
            Self::Additive(a) => a.forward(queries, keys, values, valid_lens),
        }
    }
}

/// Multi-head attention (d2l zh §10.5, eq. 10.5.1–10.5.2): head i attends
/// with scaled dot products over W_q,i q, W_k,i k and W_v,i v, and W_o
/// mixes the concatenated heads. The heads' projections are the row blocks
/// of the four weight matrices, so all heads run as one batched product.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::attention_scoring::ValidLens;
/// use d2l_attention::multihead_attention::MultiHeadAttentionConfig;
///
/// // d2l's shape check.
/// let device = Device::flex();
/// let attention = MultiHeadAttentionConfig::new(100, 100, 100, 100, 5).init(&device);
/// let x = Tensor::<3>::ones([2, 4, 100], &device);
/// let y = Tensor::<3>::ones([2, 6, 100], &device);
/// let valid_lens = ValidLens::new(&[3, 2], &device);
/// let attended = attention.forward(x, y.clone(), y, Some(&valid_lens));
/// assert_eq!(attended.output.dims(), [2, 4, 100]);
/// assert_eq!(attended.attention_weights.dims(), [2, 5, 4, 6]);
/// ```
#[derive(Module, Debug)]
pub struct MultiHeadAttention {
    /// How the heads score (scaled dot products unless configured), one
    /// layer shared by all heads.
    pub attention: Scoring,
    /// W_q, (query_size → num_hiddens): all heads' query projections.
    pub w_q: Linear,
    /// W_k, (key_size → num_hiddens).
    pub w_k: Linear,
    /// W_v, (value_size → num_hiddens).
    pub w_v: Linear,
    /// W_o, (num_hiddens → num_hiddens).
    pub w_o: Linear,
    /// Number of heads.
    pub num_heads: usize,
}

/// What [`MultiHeadAttention::forward`] returns.
///
/// # Examples
/// See [`MultiHeadAttention`].
#[derive(Clone, Debug)]
pub struct MultiHeadAttended {
    /// (batch_size, num_queries, num_hiddens).
    pub output: Tensor<3>,
    /// Every head's weights (before dropout): (batch_size, num_heads,
    /// num_queries, num_keys), built when asked.
    pub attention_weights: AttentionWeights<4>,
}

impl MultiHeadAttention {
    /// Multi-head attention of `queries` (batch_size, num_queries,
    /// query_size) over `keys` (batch_size, num_keys, key_size) and
    /// `values` (batch_size, num_keys, value_size); every head of sequence
    /// i sees the keys of `valid_lens` (batch_size,) or (batch_size,
    /// num_queries) for sequence i.
    ///
    /// A query whose keys are all masked (a valid length of 0) gets uniform
    /// weights in every head, as d2l's −10⁶ fill gives: finite, in the
    /// output and in the gradient (PyTorch's module returns NaN there).
    ///
    /// # Panics
    /// When a size does not fit the layer's projections or `valid_lens`
    /// does not fit (see [`ValidLens::mask`]), naming the argument.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::attention_scoring::ValidLens;
    /// use d2l_attention::multihead_attention::MultiHeadAttentionConfig;
    ///
    /// let device = Device::flex();
    /// let attention = MultiHeadAttentionConfig::new(2, 3, 4, 6, 3).init(&device);
    /// let queries = d2l_attention::random::randn([2, 1, 3], 0, &device);
    /// let keys = d2l_attention::random::randn([2, 5, 2], 1, &device);
    /// let values = d2l_attention::random::randn([2, 5, 4], 2, &device);
    /// let valid_lens = ValidLens::new(&[5, 0], &device);
    /// let weights = attention.forward(queries, keys, values, Some(&valid_lens)).attention_weights.tensor();
    /// // Sequence 1 has no valid key: uniform weights in all three heads.
    /// let row = weights.narrow(0, 1, 1).try_into_vec_as::<f32>().unwrap();
    /// assert!(row.iter().all(|&w| (w - 0.2).abs() < 1e-6));
    /// ```
    // ANCHOR: forward
    pub fn forward(
        &self,
        queries: Tensor<3>,
        keys: Tensor<3>,
        values: Tensor<3>,
        valid_lens: Option<&ValidLens>,
    ) -> MultiHeadAttended {
        self.check_sizes(&queries, &keys, &values);
        let [batch_size, num_queries, _] = queries.dims();
        let h = self.num_heads;
        // (batch_size·num_heads, n, num_hiddens / num_heads)
        let queries = transpose_qkv(self.w_q.forward(queries), h);
        let keys = transpose_qkv(self.w_k.forward(keys), h);
        let values = transpose_qkv(self.w_v.forward(values), h);
        // Row i·num_heads + j is head j of sequence i: it needs sequence
        // i's lengths.
        let valid_lens = valid_lens.map(|lens| lens.repeat_interleave(h));
        let attended =
            self.attention
                .forward(queries, keys, values, valid_lens.as_ref());
        let num_keys = attended.attention_weights.dims()[2];
        MultiHeadAttended {
            output: self.w_o.forward(transpose_output(attended.output, h)),
            attention_weights: attended.attention_weights.reshape([
                batch_size,
                h,
                num_queries,
                num_keys,
            ]),
        }
    }
    // ANCHOR_END: forward

    /// The size checks of [`MultiHeadAttention::forward`], on the host.
    fn check_sizes(
        &self,
        queries: &Tensor<3>,
        keys: &Tensor<3>,
        values: &Tensor<3>,
    ) {
        check_fits("queries", queries, &self.w_q);
        check_fits("keys", keys, &self.w_k);
        check_fits("values", values, &self.w_v);
    }
}

/// Splits the last axis of `x` (batch_size, n, num_hiddens) into
/// `num_heads` heads and moves them into the batch: (batch_size·num_heads,
/// n, num_hiddens / num_heads), where row i·num_heads + j is head j of
/// sequence i and holds features j·d … (j + 1)·d − 1 (d2l's
/// `transpose_qkv`).
///
/// # Panics
/// When `num_heads` does not divide num_hiddens.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::multihead_attention::{transpose_output, transpose_qkv};
///
/// let device = Device::flex();
/// // One sequence of 2 tokens, 4 features: 0 1 2 3 and 4 5 6 7.
/// let x = Tensor::<1, Int>::arange(0..8, &device).float().reshape([1, 2, 4]);
/// let heads = transpose_qkv(x.clone(), 2);
/// assert_eq!(heads.dims(), [2, 2, 2]);
/// // Head 0 has features 0 and 1 of each token, head 1 features 2 and 3.
/// let heads_data = heads.clone().try_into_vec_as::<f32>().unwrap();
/// assert_eq!(heads_data, [0.0, 1.0, 4.0, 5.0, 2.0, 3.0, 6.0, 7.0]);
/// assert_eq!(transpose_output(heads, 2).to_data(), x.to_data());
/// ```
// ANCHOR: transpose_qkv
pub fn transpose_qkv(x: Tensor<3>, num_heads: usize) -> Tensor<3> {
    let [batch_size, n, num_hiddens] = x.dims();
    assert!(
        num_heads > 0 && num_hiddens % num_heads == 0,
        "`num_heads` ({num_heads}) must divide the size of `x` {:?} \
         (dimension 2)",
        x.dims()
    );
    let d = num_hiddens / num_heads;
    // (b, n, h, d) → (b, h, n, d) → (b·h, n, d)
    x.reshape([batch_size, n, num_heads, d])
        .swap_dims(1, 2)
        .reshape([batch_size * num_heads, n, d])
}
// ANCHOR_END: transpose_qkv

/// Undoes [`transpose_qkv`]: (batch_size·num_heads, n, d) → (batch_size,
/// n, num_heads·d), the heads side by side (d2l's `transpose_output`).
///
/// # Panics
/// When `num_heads` does not divide the first dimension.
///
/// # Examples
/// See [`transpose_qkv`].
// ANCHOR: transpose_output
pub fn transpose_output(x: Tensor<3>, num_heads: usize) -> Tensor<3> {
    let [rows, n, d] = x.dims();
    assert!(
        num_heads > 0 && rows % num_heads == 0,
        "`num_heads` ({num_heads}) must divide the rows of `x` {:?} \
         (dimension 0)",
        x.dims()
    );
    // (b·h, n, d) → (b, h, n, d) → (b, n, h, d) → (b, n, h·d)
    x.reshape([rows / num_heads, num_heads, n, d])
        .swap_dims(1, 2)
        .reshape([rows / num_heads, n, num_heads * d])
}
// ANCHOR_END: transpose_output
