//! Attention scoring functions (d2l zh §10.3, en §11.3): masked softmax,
//! additive, dot-product and bilinear scores, and self-attention written
//! as a double loop and vectorised (seed notebook `002`).

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Initializer, Linear, LinearConfig};
use burn::prelude::Config;
use burn::tensor::{
    Bool, Device, Int, Tensor,
    activation::{sigmoid, softmax},
    module::linear,
};

/// The value d2l's `sequence_mask` writes into masked scores before the
/// softmax. Finite on purpose: exp(−10⁶ − max) underflows to exactly 0,
/// while a fully masked row stays finite (uniform), in value and gradient;
/// a −∞ fill would give NaN there (pytorch#41508, burn#4694).
pub const MASK_VALUE: f32 = -1e6;

/// Why an attention call was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum AttentionError {
    /// One tensor has the wrong shape.
    #[error("`{arg}` has shape {got:?}, expected {expected}")]
    Shape {
        /// The argument.
        arg: &'static str,
        /// Its shape.
        got: Vec<usize>,
        /// What was expected, in words.
        expected: String,
    },
    /// Two tensors disagree.
    #[error("`{a}` {a_shape:?} and `{b}` {b_shape:?} disagree: {why}")]
    Mismatch {
        /// The first argument.
        a: &'static str,
        /// Its shape.
        a_shape: Vec<usize>,
        /// The second argument.
        b: &'static str,
        /// Its shape.
        b_shape: Vec<usize>,
        /// The dimension that differs, in words.
        why: &'static str,
    },
    /// `valid_lens` could not be read from its device.
    #[error("cannot read `valid_lens` from its device: {0}")]
    Unreadable(String),
    /// A valid length outside 0..=num_keys.
    #[error("`valid_lens` holds {value} at {index:?}; each valid length must be in 0..={num_keys}")]
    ValidLen {
        /// The offending length.
        value: i64,
        /// Where it is in `valid_lens`.
        index: Vec<usize>,
        /// The number of keys.
        num_keys: usize,
    },
}

impl AttentionError {
    pub(crate) fn mismatch(
        a: &'static str,
        a_shape: Vec<usize>,
        b: &'static str,
        b_shape: Vec<usize>,
        why: &'static str,
    ) -> Self {
        AttentionError::Mismatch {
            a,
            a_shape,
            b,
            b_shape,
            why,
        }
    }
}

/// How many keys each query may attend to: the first `valid_len` keys count,
/// the rest (padding) get weight exactly 0.
#[derive(Clone, Debug)]
pub enum ValidLens {
    /// (batch_size,): one length shared by all queries of a batch element
    /// (d2l's 1-D `valid_lens`).
    PerSequence(Tensor<1, Int>),
    /// (batch_size, num_queries): a length per query (d2l's 2-D `valid_lens`).
    PerQuery(Tensor<2, Int>),
}

impl From<Tensor<1, Int>> for ValidLens {
    fn from(t: Tensor<1, Int>) -> Self {
        ValidLens::PerSequence(t)
    }
}

impl From<Tensor<2, Int>> for ValidLens {
    fn from(t: Tensor<2, Int>) -> Self {
        ValidLens::PerQuery(t)
    }
}

impl ValidLens {
    /// The lengths as (batch_size, num_queries, 1), after checking their
    /// shape and range.
    fn per_query(
        self,
        batch_size: usize,
        num_queries: usize,
        num_keys: usize,
    ) -> Result<Tensor<3, Int>, AttentionError> {
        let expected = || format!("({batch_size},) or ({batch_size}, {num_queries})");
        let (lens, dims): (Tensor<3, Int>, Vec<usize>) = match self {
            ValidLens::PerSequence(t) if t.dims() == [batch_size] => (
                t.reshape([batch_size, 1, 1])
                    .expand([batch_size, num_queries, 1]),
                vec![batch_size],
            ),
            ValidLens::PerQuery(t) if t.dims() == [batch_size, num_queries] => (
                t.reshape([batch_size, num_queries, 1]),
                vec![batch_size, num_queries],
            ),
            ValidLens::PerSequence(t) => {
                return Err(AttentionError::Shape {
                    arg: "valid_lens",
                    got: t.dims().to_vec(),
                    expected: expected(),
                });
            }
            ValidLens::PerQuery(t) => {
                return Err(AttentionError::Shape {
                    arg: "valid_lens",
                    got: t.dims().to_vec(),
                    expected: expected(),
                });
            }
        };
        let values = lens
            .clone()
            .try_into_vec_as::<i64>()
            .map_err(|e| AttentionError::Unreadable(e.to_string()))?;
        if let Some(i) = values.iter().position(|&v| v < 0 || v as usize > num_keys) {
            // The position in the caller's tensor: (b,) or (b, q).
            let index = if dims.len() == 1 {
                vec![i / num_queries]
            } else {
                vec![i / num_queries, i % num_queries]
            };
            return Err(AttentionError::ValidLen {
                value: values[i],
                index,
                num_keys,
            });
        }
        Ok(lens)
    }

    /// True where a key is at or past its query's valid length:
    /// (batch_size, num_queries, num_keys).
    ///
    /// # Errors
    /// As [`masked_softmax`].
    // ANCHOR: mask
    pub fn mask(
        self,
        batch_size: usize,
        num_queries: usize,
        num_keys: usize,
        device: &Device,
    ) -> Result<Tensor<3, Bool>, AttentionError> {
        let lens = self.per_query(batch_size, num_queries, num_keys)?; // (b, q, 1)
        let shape = [batch_size, num_queries, num_keys];
        let positions =
            Tensor::<1, Int>::arange(0..num_keys as i64, device).reshape([1, 1, num_keys]);
        Ok(positions.expand(shape).greater_equal(lens.expand(shape)))
    }
    // ANCHOR_END: mask
}

fn check_rank3(
    arg: &'static str,
    dims: [usize; 3],
    batch_size: usize,
) -> Result<(), AttentionError> {
    if dims[0] != batch_size {
        return Err(AttentionError::Shape {
            arg,
            got: dims.to_vec(),
            expected: format!("batch size {batch_size}"),
        });
    }
    Ok(())
}

/// Softmax over the last axis of `scores` that ignores keys past each
/// query's valid length (d2l zh §10.3.1, `masked_softmax`).
///
/// - `scores`: (batch_size, num_queries, num_keys).
/// - `valid_lens`: `None` (every key counts), [`ValidLens::PerSequence`]
///   (batch_size,) or [`ValidLens::PerQuery`] (batch_size, num_queries).
///
/// Returns the weights, shaped like `scores`: each row sums to 1 over its
/// valid keys, and keys at or past the valid length get exactly 0 (as long
/// as the valid scores of the row stay well above [`MASK_VALUE`], which
/// the masked ones are set to, as in d2l). A row
/// with valid length 0 is **uniform** (1/num_keys each), as in d2l, whose
/// masked scores are [`MASK_VALUE`]: finite, so neither the weights nor
/// their gradient contain NaN. (PyTorch's fused SDPA returns zeros there.)
///
/// # Errors
/// [`AttentionError::Shape`] when `valid_lens` is not (batch_size,) or
/// (batch_size, num_queries); [`AttentionError::ValidLen`] when a length is
/// negative or larger than num_keys.
// ANCHOR: masked_softmax
pub fn masked_softmax(
    scores: Tensor<3>,
    valid_lens: Option<ValidLens>,
) -> Result<Tensor<3>, AttentionError> {
    let Some(valid_lens) = valid_lens else {
        return Ok(softmax(scores, 2));
    };
    let [batch_size, num_queries, num_keys] = scores.dims();
    let masked = valid_lens.mask(batch_size, num_queries, num_keys, &scores.device())?;
    Ok(softmax(scores.mask_fill(masked, MASK_VALUE), 2))
}
// ANCHOR_END: masked_softmax

/// What an attention layer returns.
#[derive(Clone, Debug)]
pub struct Attended {
    /// The pooled values: (batch_size, num_queries, value_size).
    pub output: Tensor<3>,
    /// The attention weights (before dropout): (batch_size, num_queries, num_keys).
    pub attention_weights: Tensor<3>,
}

/// Checks queries (b, q, dq), keys (b, k, dk) and values (b, k, dv) against
/// each other and returns (b, q, k).
fn check_qkv(
    queries: &Tensor<3>,
    keys: &Tensor<3>,
    values: &Tensor<3>,
) -> Result<(), AttentionError> {
    let (q, k, v) = (queries.dims(), keys.dims(), values.dims());
    check_rank3("keys", k, q[0])?;
    check_rank3("values", v, q[0])?;
    if k[1] != v[1] {
        return Err(AttentionError::mismatch(
            "keys",
            k.to_vec(),
            "values",
            v.to_vec(),
            "one value is needed per key (dimension 1)",
        ));
    }
    Ok(())
}

/// Weights the values: dropout on the weights (active only when training
/// on an autodiff device), then a batched matrix product.
fn pool(dropout: &Dropout, weights: Tensor<3>, values: Tensor<3>) -> Attended {
    let output = dropout.forward(weights.clone()).matmul(values);
    Attended {
        output,
        attention_weights: weights,
    }
}

/// Configuration of [`AdditiveAttention`]; d2l's
/// `AdditiveAttention(key_size, query_size, num_hiddens, dropout)`.
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
    #[config(
        default = "Initializer::KaimingUniform { gain: 1.0 / 3.0f64.sqrt(), fan_out_only: false }"
    )]
    pub initializer: Initializer,
}

impl AdditiveAttentionConfig {
    /// A layer with freshly initialised weights on `device`.
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
    // ANCHOR: additive
    pub fn scores(&self, queries: Tensor<3>, keys: Tensor<3>) -> Tensor<3> {
        let queries = self.w_q.forward(queries).unsqueeze_dim::<4>(2); // (b, q, 1, h)
        let keys = self.w_k.forward(keys).unsqueeze_dim::<4>(1); // (b, 1, k, h)
        let features = (queries + keys).tanh(); // (b, q, k, h)
        self.w_v.forward(features).squeeze_dim::<3>(3)
    }
    // ANCHOR_END: additive

    /// Attention pooling of `values` (batch_size, num_keys, value_size) for
    /// `queries` (batch_size, num_queries, query_size) over `keys`
    /// (batch_size, num_keys, key_size), masked by `valid_lens` as in
    /// [`masked_softmax`]: [`AdditiveAttention::project_keys`] followed by
    /// [`AdditiveAttention::attend`], which computes [`AdditiveAttention::scores`]
    /// in a faster form.
    ///
    /// # Errors
    /// [`AttentionError`] when the batch sizes differ, keys and values
    /// differ in number, the query or key size is not the configured one,
    /// or `valid_lens` is malformed.
    pub fn forward(
        &self,
        queries: Tensor<3>,
        keys: Tensor<3>,
        values: Tensor<3>,
        valid_lens: Option<ValidLens>,
    ) -> Result<Attended, AttentionError> {
        check_qkv(&queries, &keys, &values)?;
        let projected = self.project(keys, values, valid_lens, queries.dims()[1])?;
        self.attend(queries, &projected)
    }

    /// Prepares `keys` (batch_size, num_keys, key_size), `values`
    /// (batch_size, num_keys, value_size) and their `valid_lens`
    /// (batch_size,) for many calls of [`AdditiveAttention::attend`], as a
    /// decoder makes, one per step: the keys are projected and the mask is
    /// built once.
    ///
    /// # Errors
    /// As [`AdditiveAttention::forward`].
    pub fn project_keys(
        &self,
        keys: Tensor<3>,
        values: Tensor<3>,
        valid_lens: Option<Tensor<1, Int>>,
    ) -> Result<ProjectedKeys, AttentionError> {
        self.project(keys, values, valid_lens.map(ValidLens::from), 1)
    }

    /// [`AdditiveAttention::project_keys`] for `num_queries` queries, so
    /// that per-query valid lengths work too.
    fn project(
        &self,
        keys: Tensor<3>,
        values: Tensor<3>,
        valid_lens: Option<ValidLens>,
        num_queries: usize,
    ) -> Result<ProjectedKeys, AttentionError> {
        check_qkv(&keys, &keys, &values)?;
        let [key_size, _] = self.w_k.weight.dims();
        let [batch_size, num_keys, _] = keys.dims();
        if keys.dims()[2] != key_size {
            return Err(AttentionError::Shape {
                arg: "keys",
                got: keys.dims().to_vec(),
                expected: format!("key_size {key_size}"),
            });
        }
        let device = keys.device();
        let mask = valid_lens
            .map(|lens| lens.mask(batch_size, num_queries, num_keys, &device))
            .transpose()?;
        Ok(ProjectedKeys {
            keys: (self.w_k.forward(keys) * 2.0).unsqueeze_dim(1),
            values,
            mask,
            w_q: self.w_q.weight.val() * 2.0,
            w_v: self.w_v.weight.val() * 2.0,
        })
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
    /// # Errors
    /// [`AttentionError::Shape`] when `queries` has another batch size or
    /// query size, or `projected` was made by a layer of another size.
    pub fn attend(
        &self,
        queries: Tensor<3>,
        projected: &ProjectedKeys,
    ) -> Result<Attended, AttentionError> {
        let [query_size, num_hiddens] = self.w_q.weight.dims();
        let [batch_size, _, num_keys, h] = projected.keys.dims();
        if h != num_hiddens {
            return Err(AttentionError::Shape {
                arg: "projected",
                got: projected.keys.dims().to_vec(),
                expected: format!("keys projected to num_hiddens {num_hiddens}"),
            });
        }
        let [b, num_queries, d] = queries.dims();
        if d != query_size {
            return Err(AttentionError::Shape {
                arg: "queries",
                got: queries.dims().to_vec(),
                expected: format!("query_size {query_size}"),
            });
        }
        let mask_queries = projected.mask.as_ref().map_or(1, |m| m.dims()[1]);
        if b != batch_size || (mask_queries != 1 && mask_queries != num_queries) {
            return Err(AttentionError::Shape {
                arg: "queries",
                got: queries.dims().to_vec(),
                expected: format!("({batch_size}, {mask_queries}, {query_size})"),
            });
        }
        let queries = linear(queries, projected.w_q.clone(), None).unsqueeze_dim::<4>(2);
        let features = sigmoid(queries + projected.keys.clone()); // (tanh + 1) / 2
        let scores = linear(features, projected.w_v.clone(), None).squeeze_dim::<3>(3);
        let scores = match &projected.mask {
            Some(mask) => {
                let shape = [batch_size, num_queries, num_keys];
                scores.mask_fill(mask.clone().expand(shape), MASK_VALUE)
            }
            None => scores,
        };
        let weights = softmax(scores, 2);
        Ok(pool(&self.dropout, weights, projected.values.clone()))
    }
}

/// Keys and values ready for [`AdditiveAttention::attend`].
#[derive(Clone, Debug)]
pub struct ProjectedKeys {
    /// 2·W_k k: (batch_size, 1, num_keys, num_hiddens).
    keys: Tensor<4>,
    /// (batch_size, num_keys, value_size).
    values: Tensor<3>,
    /// True at or past each valid length: (batch_size, num_queries,
    /// num_keys), where num_queries is 1 for [`AdditiveAttention::project_keys`].
    mask: Option<Tensor<3, Bool>>,
    /// 2·W_q, (query_size, num_hiddens).
    w_q: Tensor<2>,
    /// 2·w_v, (num_hiddens, 1).
    w_v: Tensor<2>,
}

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
