//! PyTorch's `torch.nn.MultiheadAttention` in the book's layer: its
//! weights, from a state dict saved with `torch.save` or already in memory,
//! its sequence-first layout and its two kinds of mask.
//!
//! PyTorch packs the three input projections into one `in_proj_weight`
//! (3·embed_dim, embed_dim) = [W_q; W_k; W_v] with one `in_proj_bias`, unless
//! keys or values have another size (`kdim`, `vdim`): then they are
//! `q_proj_weight`, `k_proj_weight` and `v_proj_weight`. `out_proj` is W_o.
//! Weights are (out, in); burn's `Linear` stores (in, out).

use std::collections::HashMap;
#[cfg(feature = "native")]
use std::path::{Path, PathBuf};

use burn::module::Param;
use burn::nn::Linear;
#[cfg(feature = "native")]
use burn::store::bridge;
#[cfg(feature = "native")]
use burn::store::pytorch_reader::{PytorchError, PytorchReader};
use burn::tensor::{Bool, DType, Device, Tensor, TensorData};

use super::*;
use crate::attention_scoring::{mask_value, masked_softmax_by, pool};

/// Why a PyTorch state dict could not become a [`MultiHeadAttention`].
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::multihead_attention::{MultiHeadAttention, PytorchLoadError};
///
/// let err = MultiHeadAttention::from_pytorch("no/such.pt".as_ref(), 2, &Device::flex()).unwrap_err();
/// assert!(matches!(err, PytorchLoadError::Read { .. }));
/// assert_eq!(err.to_string(), "cannot read the PyTorch file `no/such.pt`");
/// ```
#[derive(Debug, thiserror::Error)]
pub enum PytorchLoadError {
    /// The file could not be read as a PyTorch checkpoint.
    #[cfg(feature = "native")]
    #[error("cannot read the PyTorch file `{}`", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What the reader said.
        #[source]
        source: PytorchError,
    },
    /// A tensor the layer needs is not in the state dict.
    #[error("`{name}` is not in the state dict (it holds {keys})")]
    Missing {
        /// The tensor's name.
        name: String,
        /// The names it does hold.
        keys: String,
    },
    /// A tensor has the wrong shape or kind.
    #[error(
        "`{name}` has shape {got:?} and type {dtype:?}, expected {expected}"
    )]
    Invalid {
        /// The tensor's name.
        name: String,
        /// Its shape.
        got: Vec<usize>,
        /// Its element type.
        dtype: DType,
        /// What was expected, in words.
        expected: String,
    },
    /// The state dict holds a tensor of a feature the layer does not have.
    #[error("`{name}` is in the state dict, but {feature} is not supported")]
    Unsupported {
        /// The tensor's name.
        name: String,
        /// The `nn.MultiheadAttention` argument that made it.
        feature: &'static str,
    },
    /// A tensor's values could not be read (from the file, or converted
    /// to f32).
    #[error("cannot read the values of `{name}`")]
    Values {
        /// The tensor's name.
        name: String,
        /// What the reader or the conversion said.
        #[source]
        source: std::io::Error,
    },
}

/// PyTorch's `attn_mask`, boolean or float, in either of PyTorch's shapes:
/// (L, S) for all sequences and heads, or (N·num_heads, L, S) with row
/// n·num_heads + head for head `head` of sequence `n`. Build it from a
/// tensor of either rank with `into()`; a 2-D mask is kept as (1, L, S).
///
/// # Examples
/// ```
/// use burn::tensor::{Bool, Device, Tensor};
/// use d2l_attention::multihead_attention::AttnMask;
///
/// // A causal mask for 3 queries and 3 keys, (L, S) as PyTorch takes it:
/// // true = not allowed.
/// let device = Device::flex();
/// let causal = Tensor::<2, Bool>::triu_mask([3, 3], 1, &device);
/// let AttnMask::Bool(mask) = AttnMask::from(causal) else { unreachable!() };
/// assert_eq!(mask.dims(), [1, 3, 3]);
///
/// // A float mask per sequence and head (N·num_heads = 4), added to the scores.
/// let bias = Tensor::<3>::zeros([4, 3, 3], &device);
/// assert!(matches!(AttnMask::from(bias), AttnMask::Float(_)));
/// ```
#[derive(Clone, Debug)]
pub enum AttnMask {
    /// True where a query may not attend to a key: (1, L, S) or
    /// (N·num_heads, L, S).
    Bool(Tensor<3, Bool>),
    /// Added to the scores, in the same shapes (−∞ allowed).
    Float(Tensor<3>),
}

impl From<Tensor<2, Bool>> for AttnMask {
    /// PyTorch's 2-D boolean mask, (L, S).
    fn from(mask: Tensor<2, Bool>) -> Self {
        Self::Bool(mask.unsqueeze())
    }
}

impl From<Tensor<3, Bool>> for AttnMask {
    /// PyTorch's 3-D boolean mask, (N·num_heads, L, S).
    fn from(mask: Tensor<3, Bool>) -> Self {
        Self::Bool(mask)
    }
}

impl From<Tensor<2>> for AttnMask {
    /// PyTorch's 2-D float mask, (L, S).
    fn from(mask: Tensor<2>) -> Self {
        Self::Float(mask.unsqueeze())
    }
}

impl From<Tensor<3>> for AttnMask {
    /// PyTorch's 3-D float mask, (N·num_heads, L, S).
    fn from(mask: Tensor<3>) -> Self {
        Self::Float(mask)
    }
}

impl AttnMask {
    /// The mask's shape, (1 or N·num_heads, L, S).
    fn dims(&self) -> [usize; 3] {
        match self {
            Self::Bool(mask) => mask.dims(),
            Self::Float(mask) => mask.dims(),
        }
    }
}

/// The arguments of PyTorch's `MultiheadAttention.forward`.
///
/// # Examples
/// See [`MultiHeadAttention::forward_pytorch`].
#[derive(Clone, Debug)]
pub struct PytorchMhaInput {
    /// (L, N, embed_dim), or (N, L, embed_dim) when `batch_first`.
    pub query: Tensor<3>,
    /// (S, N, kdim), or (N, S, kdim).
    pub key: Tensor<3>,
    /// (S, N, vdim), or (N, S, vdim).
    pub value: Tensor<3>,
    /// Whether the batch comes first (PyTorch's default is sequence first).
    pub batch_first: bool,
    /// (N, S): true for keys no query may attend to (padding).
    pub key_padding_mask: Option<Tensor<2, Bool>>,
    /// See [`AttnMask`].
    pub attn_mask: Option<AttnMask>,
}

/// What PyTorch's `MultiheadAttention.forward` returns.
///
/// # Examples
/// See [`MultiHeadAttention::forward_pytorch`].
#[derive(Clone, Debug)]
pub struct PytorchMhaOutput {
    /// In the input's layout: (L, N, embed_dim) or (N, L, embed_dim).
    pub attn_output: Tensor<3>,
    /// Averaged over the heads (PyTorch's default): (N, L, S).
    pub attn_weights: Tensor<3>,
    /// Per head (`average_attn_weights=False`): (N, num_heads, L, S).
    pub attn_weights_per_head: Tensor<4>,
}

impl MultiHeadAttention {
    /// Reads the state dict of a `torch.nn.MultiheadAttention` with
    /// `num_heads` heads, saved with `torch.save(mha.state_dict(), path)`,
    /// with either layout of the input projections (packed, or separate
    /// when `kdim` or `vdim` differs from `embed_dim`), with or without
    /// biases. `add_bias_kv` is refused (its `bias_k` and `bias_v` would
    /// change the result); `add_zero_attn`, which adds no tensor that the
    /// loader could see, is not supported either. The
    /// tensors are read into memory and loaded by
    /// [`MultiHeadAttention::from_pytorch_tensors`].
    ///
    /// # Errors
    /// [`PytorchLoadError`] naming the file, or the tensor that is missing
    /// or of the wrong shape or type.
    ///
    /// # Panics
    /// When `num_heads` does not divide `embed_dim`.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::multihead_attention::MultiHeadAttention;
    ///
    /// // Configured like the notebook 注意力机制's: embed_dim 10, 10 heads, biases.
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/torch_mha/notebook.pt");
    /// let mha = MultiHeadAttention::from_pytorch(path.as_ref(), 10, &Device::flex()).unwrap();
    /// assert_eq!((mha.w_q.weight.dims(), mha.num_heads), ([10, 10], 10));
    /// assert!(mha.w_o.bias.is_some());
    /// ```
    #[cfg(feature = "native")]
    pub fn from_pytorch(
        path: &Path,
        num_heads: usize,
        device: &Device,
    ) -> Result<Self, PytorchLoadError> {
        let reader = PytorchReader::new(path).map_err(|source| {
            PytorchLoadError::Read {
                path: path.to_owned(),
                source,
            }
        })?;
        let tensors = reader
            .into_tensors()
            .into_iter()
            .map(|(name, tensor)| {
                match bridge::into_data(bridge::from_pytorch(tensor)) {
                    Ok(data) => Ok((name, data)),
                    Err(err) => Err(PytorchLoadError::Values {
                        name,
                        source: std::io::Error::other(err.to_string()),
                    }),
                }
            })
            .collect::<Result<_, _>>()?;
        Self::from_pytorch_tensors(&tensors, num_heads, device)
    }

    /// The same from a state dict already in memory: host tensors
    /// ([`TensorData`], f32 or f64) keyed by PyTorch's names
    /// (`in_proj_weight`, `in_proj_bias`, or `q_proj_weight`,
    /// `k_proj_weight`, `v_proj_weight`; `out_proj.weight`,
    /// `out_proj.bias`), with PyTorch's (out, in) layout. Names the layer
    /// does not use are ignored.
    ///
    /// # Errors
    /// [`PytorchLoadError`] naming the tensor that is missing or of the
    /// wrong shape or type.
    ///
    /// # Panics
    /// When `num_heads` does not divide `embed_dim`.
    ///
    /// # Examples
    /// ```
    /// use std::collections::HashMap;
    /// use burn::tensor::{Device, TensorData};
    /// use d2l_attention::multihead_attention::MultiHeadAttention;
    ///
    /// // embed_dim 4, 2 heads, no biases: W_q = W_k = W_v = W_o = I.
    /// let eye: Vec<f32> = (0..16).map(|i| (i % 5 == 0) as u8 as f32).collect();
    /// let packed: Vec<f32> = eye.repeat(3);
    /// let state_dict = HashMap::from([
    ///     ("in_proj_weight".to_owned(), TensorData::new(packed, [12, 4])),
    ///     ("out_proj.weight".to_owned(), TensorData::new(eye, [4, 4])),
    /// ]);
    /// let mha = MultiHeadAttention::from_pytorch_tensors(&state_dict, 2, &Device::flex()).unwrap();
    /// assert_eq!((mha.w_k.weight.dims(), mha.num_heads), ([4, 4], 2));
    /// assert!(mha.w_o.bias.is_none());
    ///
    /// let err = MultiHeadAttention::from_pytorch_tensors(&HashMap::new(), 2, &Device::flex());
    /// assert_eq!(
    ///     err.unwrap_err().to_string(),
    ///     "`out_proj.weight` is not in the state dict (it holds )"
    /// );
    /// ```
    pub fn from_pytorch_tensors(
        tensors: &HashMap<String, TensorData>,
        num_heads: usize,
        device: &Device,
    ) -> Result<Self, PytorchLoadError> {
        StateDict(tensors).multihead(num_heads, device)
    }

    /// PyTorch's `MultiheadAttention.forward(query, key, value,
    /// key_padding_mask, need_weights=True, attn_mask)` in eval mode, on
    /// this layer (loaded with [`MultiHeadAttention::from_pytorch`]).
    ///
    /// Masks follow PyTorch's convention (true = hidden). Every hidden
    /// score becomes −10⁶ and every score is at least −10⁶ after the
    /// additive mask (in f16, −65504: [`mask_value`]), as in
    /// [`masked_softmax_by`]: a query whose keys are all hidden gets
    /// uniform weights (PyTorch returns NaN there).
    ///
    /// # Panics
    /// When a shape does not fit the layer or the inputs, naming the
    /// argument, or the layer does not score with scaled dot products, as
    /// PyTorch's does.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::multihead_attention::{MultiHeadAttention, PytorchMhaInput};
    /// use d2l_attention::random::rand;
    ///
    /// let device = Device::flex();
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/torch_mha/notebook.pt");
    /// let mha = MultiHeadAttention::from_pytorch(path.as_ref(), 10, &device).unwrap();
    /// // The notebook's shapes: L, N, E, S = 3, 4, 10, 6, sequence first.
    /// let query = rand([3, 4, 10], 0, &device);
    /// let key = rand([6, 4, 10], 1, &device);
    /// let out = mha.forward_pytorch(PytorchMhaInput {
    ///     query, key: key.clone(), value: key, batch_first: false,
    ///     key_padding_mask: None, attn_mask: None,
    /// });
    /// assert_eq!(out.attn_output.dims(), [3, 4, 10]);
    /// assert_eq!(out.attn_weights.dims(), [4, 3, 6]);
    /// ```
    // ANCHOR: forward_pytorch
    pub fn forward_pytorch(&self, input: PytorchMhaInput) -> PytorchMhaOutput {
        let layout = |x: Tensor<3>| {
            if input.batch_first {
                x
            } else {
                x.swap_dims(0, 1)
            }
        };
        let (query, key) = (layout(input.query), layout(input.key));
        let value = layout(input.value);
        self.check_sizes(&query, &key, &value);
        let attention = match &self.attention {
            Scoring::DotProduct(attention) if attention.scaled => attention,
            _ => panic!(
                "`forward_pytorch` needs scaled dot products, as PyTorch's \
                 layer: this one scores additively or unscaled"
            ),
        };
        let ([n, l, _], s, h) = (query.dims(), key.dims()[1], self.num_heads);
        check_masks(&input.key_padding_mask, &input.attn_mask, [n, h, l, s]);
        // (N·h, L or S, embed_dim / h), as in `forward`
        let q = transpose_qkv(self.w_q.forward(query), h);
        let k = transpose_qkv(self.w_k.forward(key), h);
        let v = transpose_qkv(self.w_v.forward(value), h);
        let mut scores = attention.scores(q, k);
        let shape = [n * h, l, s];
        // Every sequence's padding, for all its heads and queries.
        let mut hidden = input.key_padding_mask.map(|mask| {
            mask.reshape([n, 1, 1, s])
                .expand([n, h, l, s])
                .reshape(shape)
        });
        match input.attn_mask {
            Some(AttnMask::Bool(mask)) => {
                let mask = mask.expand(shape);
                hidden = Some(match hidden {
                    Some(hidden) => hidden.bool_or(mask),
                    None => mask,
                });
            }
            Some(AttnMask::Float(bias)) => {
                let fill = mask_value(scores.dtype()); // −∞ counts as hidden
                scores = (scores + bias.expand(shape)).clamp_min(fill);
            }
            None => {}
        }
        let weights = masked_softmax_by(scores, hidden);
        let attended = pool(&attention.dropout, weights, v);
        let output = self.w_o.forward(transpose_output(attended.output, h));
        let per_head = attended.attention_weights.tensor().reshape([n, h, l, s]);
        PytorchMhaOutput {
            attn_output: layout(output),
            attn_weights: per_head.clone().mean_dim(1).reshape([n, l, s]),
            attn_weights_per_head: per_head,
        }
    }
    // ANCHOR_END: forward_pytorch
}

/// Panics, naming the mask, when a mask's shape is not one PyTorch takes
/// for `n` sequences, `h` heads, `l` queries and `s` keys.
fn check_masks(
    key_padding_mask: &Option<Tensor<2, Bool>>,
    attn_mask: &Option<AttnMask>,
    [n, h, l, s]: [usize; 4],
) {
    if let Some(mask) = key_padding_mask {
        assert!(
            mask.dims() == [n, s],
            "`key_padding_mask` has shape {:?}, expected (N, S) = {:?}",
            mask.dims(),
            [n, s]
        );
    }
    if let Some(mask) = attn_mask {
        let [rows, ..] = mask.dims();
        assert!(
            (rows == 1 || rows == n * h) && mask.dims()[1..] == [l, s],
            "`attn_mask` has shape {:?}, expected (L, S) = {:?} or \
             (N·num_heads, L, S) = {:?}",
            mask.dims(),
            [l, s],
            [n * h, l, s]
        );
    }
}

/// A state dict's tensors by name.
struct StateDict<'a>(&'a HashMap<String, TensorData>);

impl StateDict<'_> {
    fn multihead(
        &self,
        num_heads: usize,
        device: &Device,
    ) -> Result<MultiHeadAttention, PytorchLoadError> {
        // add_bias_kv's extra key and value would be ignored, silently
        if let Some(name) = ["bias_k", "bias_v"]
            .into_iter()
            .find(|name| self.0.contains_key(*name))
        {
            return Err(PytorchLoadError::Unsupported {
                name: name.into(),
                feature: "add_bias_kv",
            });
        }
        let out = self.get("out_proj.weight", None)?;
        // a weight of another rank is refused by `matrix` below
        let embed_dim = out.shape().as_slice().first().copied().unwrap_or(0);
        let square = [embed_dim, embed_dim];
        let weights: Vec<Tensor<2>> = if self.0.contains_key("in_proj_weight") {
            let packed = self.matrix(
                "in_proj_weight",
                [3 * embed_dim, embed_dim],
                device,
            )?;
            (0..3)
                .map(|i| packed.clone().narrow(0, i * embed_dim, embed_dim))
                .collect()
        } else {
            // (embed_dim, embed_dim), (embed_dim, kdim), (embed_dim, vdim)
            ["q_proj_weight", "k_proj_weight", "v_proj_weight"]
                .into_iter()
                .map(|name| {
                    let shape = self.get(name, None)?.shape().as_slice();
                    match *shape {
                        [_, cols] => {
                            self.matrix(name, [embed_dim, cols], device)
                        }
                        _ => self.matrix(name, [embed_dim, 0], device),
                    }
                })
                .collect::<Result<_, _>>()?
        };
        let biases: Vec<Option<Tensor<1>>> = match self
            .0
            .contains_key("in_proj_bias")
        {
            true => {
                let packed =
                    self.vector("in_proj_bias", 3 * embed_dim, device)?;
                (0..3)
                    .map(|i| {
                        Some(packed.clone().narrow(0, i * embed_dim, embed_dim))
                    })
                    .collect()
            }
            false => vec![None; 3],
        };
        let out_bias = match self.0.contains_key("out_proj.bias") {
            true => Some(self.vector("out_proj.bias", embed_dim, device)?),
            false => None,
        };
        let mut linears =
            weights.into_iter().zip(biases).map(|(w, b)| linear(w, b));
        let (w_q, w_k, w_v) = (
            linears.next().expect("three projections"),
            linears.next().expect("three projections"),
            linears.next().expect("three projections"),
        );
        let w_o =
            linear(self.matrix("out_proj.weight", square, device)?, out_bias);
        assert!(
            num_heads > 0 && embed_dim % num_heads == 0,
            "`num_heads` ({num_heads}) must divide embed_dim ({embed_dim})"
        );
        Ok(MultiHeadAttention {
            attention: DotProductAttentionConfig::new().init().into(),
            w_q,
            w_k,
            w_v,
            w_o,
            num_heads,
        })
    }

    /// The tensor `name`, of the given rank if any.
    fn get(
        &self,
        name: &str,
        shape: Option<&[usize]>,
    ) -> Result<&TensorData, PytorchLoadError> {
        let tensor = self.0.get(name).ok_or_else(|| {
            let mut keys: Vec<&str> =
                self.0.keys().map(String::as_str).collect();
            keys.sort_unstable();
            PytorchLoadError::Missing {
                name: name.into(),
                keys: keys.join(", "),
            }
        })?;
        let float = matches!(tensor.dtype(), DType::F32 | DType::F64);
        if !float || shape.is_some_and(|s| s != tensor.shape().as_slice()) {
            return Err(PytorchLoadError::Invalid {
                name: name.into(),
                got: tensor.shape().to_vec(),
                dtype: tensor.dtype(),
                expected: match shape {
                    Some(s) => format!("{s:?} of float32 or float64"),
                    None => "float32 or float64".into(),
                },
            });
        }
        Ok(tensor)
    }

    /// The values of `name`, which must have `shape`, as f32.
    fn values(
        &self,
        name: &str,
        shape: &[usize],
    ) -> Result<Vec<f32>, PytorchLoadError> {
        let tensor = self.get(name, Some(shape))?;
        tensor.clone().try_into_vec_as::<f32>().map_err(|err| {
            PytorchLoadError::Values {
                name: name.into(),
                source: std::io::Error::other(err.to_string()),
            }
        })
    }

    fn matrix(
        &self,
        name: &str,
        shape: [usize; 2],
        device: &Device,
    ) -> Result<Tensor<2>, PytorchLoadError> {
        let values = self.values(name, &shape)?;
        Ok(Tensor::from_data(TensorData::new(values, shape), device))
    }

    fn vector(
        &self,
        name: &str,
        len: usize,
        device: &Device,
    ) -> Result<Tensor<1>, PytorchLoadError> {
        let values = self.values(name, &[len])?;
        Ok(Tensor::from_data(TensorData::new(values, [len]), device))
    }
}

/// burn's `Linear` from PyTorch's (out, in) weight and its bias.
fn linear(weight: Tensor<2>, bias: Option<Tensor<1>>) -> Linear {
    Linear {
        weight: Param::from_tensor(weight.transpose()),
        bias: bias.map(Param::from_tensor),
    }
}
