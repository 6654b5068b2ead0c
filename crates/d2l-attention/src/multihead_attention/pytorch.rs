//! PyTorch's `torch.nn.MultiheadAttention` in the book's layer: its
//! weights, read from a state dict saved with `torch.save`, its
//! sequence-first layout and its two kinds of mask.
//!
//! PyTorch packs the three input projections into one `in_proj_weight`
//! (3·embed_dim, embed_dim) = [W_q; W_k; W_v] with one `in_proj_bias`, unless
//! keys or values have another size (`kdim`, `vdim`): then they are
//! `q_proj_weight`, `k_proj_weight` and `v_proj_weight`. `out_proj` is W_o.
//! Weights are (out, in); burn's `Linear` stores (in, out).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use burn::module::Param;
use burn::nn::Linear;
use burn::store::pytorch_reader::{self, DType, PytorchError, PytorchReader};
use burn::tensor::{Bool, Device, Tensor, TensorData};

use super::*;
use crate::attention_scoring::{MASK_VALUE, masked_softmax_by, pool};

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
    /// A tensor's values could not be read.
    #[error("cannot read the values of `{name}`")]
    Values {
        /// The tensor's name.
        name: String,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
}

/// PyTorch's `attn_mask`.
///
/// # Examples
/// ```
/// use burn::tensor::{Bool, Device, Tensor};
/// use d2l_attention::multihead_attention::AttnMask;
///
/// // A causal mask for 3 queries and 3 keys: true = not allowed.
/// let device = Device::flex();
/// let causal = Tensor::<2, Bool>::tril_mask([3, 3], 0, &device).unsqueeze::<3>();
/// let mask = AttnMask::Bool(causal);
/// # let _ = mask;
/// ```
#[derive(Clone, Debug)]
pub enum AttnMask {
    /// True where a query may not attend to a key: (1, L, S) for all
    /// sequences and heads, or (N·num_heads, L, S), row n·num_heads + head.
    Bool(Tensor<3, Bool>),
    /// Added to the scores, in the same shapes (−∞ allowed).
    Float(Tensor<3>),
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
    /// biases. `add_bias_kv` and `add_zero_attn` are not supported.
    ///
    /// # Errors
    /// [`PytorchLoadError`] naming the file, or the tensor that is missing
    /// or of the wrong shape or type.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::multihead_attention::MultiHeadAttention;
    ///
    /// // Seed notebook 002's module: embed_dim 10, 10 heads, biases.
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/torch_mha/seed002.pt");
    /// let mha = MultiHeadAttention::from_pytorch(path.as_ref(), 10, &Device::flex()).unwrap();
    /// assert_eq!((mha.w_q.weight.dims(), mha.num_heads), ([10, 10], 10));
    /// assert!(mha.w_o.bias.is_some());
    /// ```
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
        StateDict(reader.into_tensors()).multihead(num_heads, device)
    }

    /// PyTorch's `MultiheadAttention.forward(query, key, value,
    /// key_padding_mask, need_weights=True, attn_mask)` in eval mode, on
    /// this layer (loaded with [`MultiHeadAttention::from_pytorch`]).
    ///
    /// Masks follow PyTorch's convention (true = hidden). Every hidden
    /// score becomes −10⁶ and every score is at least −10⁶ after the
    /// additive mask, as in [`masked_softmax_by`]: a query whose keys are
    /// all hidden gets uniform weights (PyTorch returns NaN there).
    ///
    /// # Panics
    /// When a shape does not fit the layer or the inputs, naming the
    /// argument.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::multihead_attention::{MultiHeadAttention, PytorchMhaInput};
    /// use d2l_attention::random::rand;
    ///
    /// let device = Device::flex();
    /// let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/torch_mha/seed002.pt");
    /// let mha = MultiHeadAttention::from_pytorch(path.as_ref(), 10, &device).unwrap();
    /// // Seed 002: L, N, E, S = 3, 4, 10, 6, sequence first.
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
        let ([n, l, _], s, h) = (query.dims(), key.dims()[1], self.num_heads);
        // (N·h, L or S, embed_dim / h), as in `forward`
        let q = transpose_qkv(self.w_q.forward(query), h);
        let k = transpose_qkv(self.w_k.forward(key), h);
        let v = transpose_qkv(self.w_v.forward(value), h);
        let mut scores = self.attention.scores(q, k);
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
                scores = (scores + bias.expand(shape)).clamp_min(MASK_VALUE);
            }
            None => {}
        }
        let weights = masked_softmax_by(scores, hidden);
        let attended = pool(&self.attention.dropout, weights, v);
        let output = self.w_o.forward(transpose_output(attended.output, h));
        let per_head = attended.attention_weights.reshape([n, h, l, s]);
        PytorchMhaOutput {
            attn_output: layout(output),
            attn_weights: per_head.clone().mean_dim(1).reshape([n, l, s]),
            attn_weights_per_head: per_head,
        }
    }
    // ANCHOR_END: forward_pytorch
}

/// A state dict's tensors by name.
struct StateDict(HashMap<String, pytorch_reader::Tensor>);

impl StateDict {
    fn multihead(
        &self,
        num_heads: usize,
        device: &Device,
    ) -> Result<MultiHeadAttention, PytorchLoadError> {
        let out = self.get("out_proj.weight", None)?;
        let embed_dim = out.shape()[0];
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
                    let cols = self
                        .get(name, None)?
                        .shape()
                        .get(1)
                        .copied()
                        .unwrap_or(0);
                    self.matrix(name, [embed_dim, cols], device)
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
            attention: DotProductAttentionConfig::new().init(),
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
    ) -> Result<&pytorch_reader::Tensor, PytorchLoadError> {
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
        if !float || shape.is_some_and(|s| s != tensor.shape()) {
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
        let bytes =
            tensor.read().map_err(|source| PytorchLoadError::Values {
                name: name.into(),
                source,
            })?;
        Ok(match tensor.dtype() {
            DType::F64 => bytes
                .chunks_exact(8)
                .map(|b| {
                    f64::from_le_bytes(b.try_into().expect("8 bytes")) as f32
                })
                .collect(),
            _ => bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes")))
                .collect(),
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
