//! Positional encoding (d2l zh §10.6.3, en §11.6.3; Vaswani et al., 2017):
//! self-attention treats its input as a set, so the position of each token
//! is added to it as a fixed pattern of sines and cosines.

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig};
use burn::prelude::Config;
use burn::tensor::{Device, Tensor, TensorData};

use crate::kernels::dropout;

/// The sinusoidal encoding of positions 0 … `max_len` − 1 in
/// `num_hiddens` columns, (max_len, num_hiddens), row-major:
/// p[i, 2j] = sin(i / 10000^(2j/d)) and p[i, 2j+1] = cos(i / 10000^(2j/d))
/// with d = `num_hiddens` (d2l zh eq. 10.6.2).
///
/// An odd `num_hiddens` is allowed (d2l's code fails there): the last
/// column, 2j = d − 1, is a sine like every even column. Angles and sines
/// are computed in f64 and rounded once, so every entry is the closest f32
/// to the true value, at position 999 as at position 0 (d2l computes the
/// angle in f32, whose rounding error grows with the position).
///
/// # Examples
/// ```
/// use d2l_attention::positional_encoding::encoding;
///
/// let p = encoding(3, 4);
/// // Position 0: sin 0 = 0, cos 0 = 1.
/// assert_eq!(&p[..4], [0.0, 1.0, 0.0, 1.0]);
/// // Position 1, columns 0 and 1: sin 1 and cos 1.
/// assert_eq!(&p[4..6], [1f64.sin() as f32, 1f64.cos() as f32]);
/// ```
// ANCHOR: encoding
pub fn encoding(max_len: usize, num_hiddens: usize) -> Vec<f32> {
    let d = num_hiddens as f64;
    let mut p = Vec::with_capacity(max_len * num_hiddens);
    for i in 0..max_len {
        for column in 0..num_hiddens {
            // columns 2j and 2j + 1 share the frequency 1 / 10000^(2j/d)
            let two_j = (column - column % 2) as f64;
            let angle = i as f64 / 10000f64.powf(two_j / d);
            let value = if column.is_multiple_of(2) {
                angle.sin()
            } else {
                angle.cos()
            };
            p.push(value as f32);
        }
    }
    p
}
// ANCHOR_END: encoding

/// Configuration of [`PositionalEncoding`]; d2l's
/// `PositionalEncoding(num_hiddens, dropout, max_len=1000)`.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::positional_encoding::PositionalEncodingConfig;
///
/// let pe = PositionalEncodingConfig::new(32).init(&Device::flex());
/// assert_eq!(pe.p.dims(), [1, 1000, 32]);
/// ```
#[derive(Config, Debug)]
pub struct PositionalEncodingConfig {
    /// Size of a token's vector.
    pub num_hiddens: usize,
    /// Dropout on the sum (d2l applies it there).
    #[config(default = 0.0)]
    pub dropout: f64,
    /// The longest sequence it can encode.
    #[config(default = 1000)]
    pub max_len: usize,
}

impl PositionalEncodingConfig {
    /// The layer, with the encoding computed once on `device`.
    ///
    /// # Examples
    /// See [`PositionalEncodingConfig`].
    pub fn init(&self, device: &Device) -> PositionalEncoding {
        let data = encoding(self.max_len, self.num_hiddens);
        let shape = [1, self.max_len, self.num_hiddens];
        PositionalEncoding {
            p: Tensor::from_data(TensorData::new(data, shape), device),
            dropout: DropoutConfig::new(self.dropout).init(),
        }
    }
}

/// Adds the sinusoidal [`encoding`] of each position to a sequence of
/// token vectors (d2l zh §10.6.3, `PositionalEncoding`).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::positional_encoding::PositionalEncodingConfig;
///
/// let device = Device::flex();
/// let pe = PositionalEncodingConfig::new(4).init(&device);
/// let x = pe.forward(Tensor::<3>::zeros([2, 3, 4], &device));
/// // Zeros plus the encoding is the encoding, for every sequence.
/// assert_eq!(x.dims(), [2, 3, 4]);
/// let row = x.narrow(0, 1, 1).narrow(1, 0, 1).try_into_vec_as::<f32>().unwrap();
/// assert_eq!(row, [0.0, 1.0, 0.0, 1.0]);
/// ```
#[derive(Module, Debug)]
pub struct PositionalEncoding {
    /// The encoding, (1, max_len, num_hiddens); a constant, not trained.
    pub p: Tensor<3>,
    /// Dropout on the sum.
    pub dropout: Dropout,
}

impl PositionalEncoding {
    /// `x` (batch_size, num_steps, num_hiddens) plus the encoding of
    /// positions 0 … num_steps − 1, then dropout.
    ///
    /// # Panics
    /// When `x` is longer than max_len or its vectors are not num_hiddens
    /// long (the message names `x`).
    ///
    /// # Examples
    /// See [`PositionalEncoding`].
    // ANCHOR: forward
    pub fn forward(&self, x: Tensor<3>) -> Tensor<3> {
        self.forward_at(x, 0)
    }
    // ANCHOR_END: forward

    /// `x` (batch_size, num_steps, num_hiddens) plus the encoding of
    /// positions `start` … `start` + num_steps − 1, then dropout: what a
    /// decoder adds to the tokens of a later step.
    ///
    /// # Panics
    /// When the positions go past max_len or the vectors of `x` are not
    /// num_hiddens long (the message names `x`).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Tensor};
    /// use d2l_attention::positional_encoding::PositionalEncodingConfig;
    ///
    /// let device = Device::flex();
    /// let pe = PositionalEncodingConfig::new(4).init(&device);
    /// let all = pe.forward(Tensor::<3>::zeros([1, 3, 4], &device));
    /// let third = pe.forward_at(Tensor::<3>::zeros([1, 1, 4], &device), 2);
    /// assert_eq!(third.to_data(), all.narrow(1, 2, 1).to_data());
    /// ```
    pub fn forward_at(&self, x: Tensor<3>, start: usize) -> Tensor<3> {
        let [_, max_len, num_hiddens] = self.p.dims();
        let [batch_size, num_steps, size] = x.dims();
        assert!(
            start + num_steps <= max_len && size == num_hiddens,
            "`x` has shape {:?} at position {start}, expected \
             (batch_size, at most {} steps, {num_hiddens})",
            x.dims(),
            max_len.saturating_sub(start)
        );
        let p = self.p.clone().narrow(1, start, num_steps);
        dropout(
            &self.dropout,
            x + p.expand([batch_size, num_steps, num_hiddens]),
        )
    }
}
