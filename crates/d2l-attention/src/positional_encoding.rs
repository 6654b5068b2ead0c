//! Positional encoding (d2l zh §10.6.3, en §11.6.3; Vaswani et al., 2017):
//! self-attention treats its input as a set, so the position of each token
//! is added to it as a fixed pattern of sines and cosines.

use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig};
use burn::prelude::Config;
use burn::tensor::{Device, Tensor, TensorData};

use crate::kernels::dropout;
use crate::plot::PlotError;
use crate::{Axes, HeatmapOptions, Series, Svg, plot, show_heatmaps};

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
    /// The longest sequence it encodes: its `max_len`.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::positional_encoding::PositionalEncodingConfig;
    ///
    /// let pe = PositionalEncodingConfig::new(4).with_max_len(8).init(&Device::flex());
    /// assert_eq!(pe.max_len(), 8);
    /// ```
    pub fn max_len(&self) -> usize {
        self.p.dims()[1]
    }

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

/// Columns `columns` of the encoding of positions 0 … `num_steps` − 1 in
/// `encoding_dim` columns, one line each over the positions (d2l zh
/// Fig. 10.6.2); the chapter draws columns 6 to 9 of 32 over 60 positions.
///
/// # Errors
/// [`PlotError::InvalidArgument`] naming `columns` when they are empty or
/// reach past `encoding_dim`, or `num_steps` when it is 0 or over 1000.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::positional_encoding::encoding_columns;
///
/// let svg = encoding_columns(32, 60, 6..10, &Device::flex()).unwrap();
/// assert!(svg.as_str().contains("Col 9"));
/// let err = encoding_columns(8, 60, 6..10, &Device::flex()).unwrap_err();
/// assert!(err.to_string().contains("`columns`"), "{err}");
/// ```
pub fn encoding_columns(
    encoding_dim: usize,
    num_steps: usize,
    columns: std::ops::Range<usize>,
    device: &Device,
) -> Result<Svg, PlotError> {
    check_size(encoding_dim, num_steps)?;
    if columns.is_empty() || columns.end > encoding_dim {
        return Err(PlotError::InvalidArgument {
            arg: "columns",
            reason: format!("{columns:?}, of {encoding_dim} columns"),
        });
    }
    // ANCHOR: columns
    let pe = PositionalEncodingConfig::new(encoding_dim).init(device);
    let x = pe.forward(Tensor::zeros([1, num_steps, encoding_dim], device));
    let p = x.squeeze_dim::<2>(0); // (positions, columns)
    let rows: Vec<f64> = (0..num_steps).map(|i| i as f64).collect();
    let series: Vec<Series> = columns
        .map(|column| {
            let y = p.clone().narrow(1, column, 1).try_into_vec_as::<f64>();
            y.map(|y| Series::line(&rows, &y).label(&format!("Col {column}")))
        })
        .collect::<Result<_, _>>()
        .map_err(|e| PlotError::Read {
            arg: "p",
            reason: format!("{e:?}"),
        })?;
    plot(&series, &Axes::new("Row (position)", ""))
    // ANCHOR_END: columns
}

/// The encoding of positions 0 … `num_steps` − 1 in `encoding_dim`
/// columns as one heatmap, positions down and columns across (d2l zh
/// Fig. 10.6.3); the chapter draws 60 positions of 32 columns.
///
/// # Errors
/// [`PlotError::InvalidArgument`] naming `encoding_dim` when it is 0 or
/// over 512, or `num_steps` when it is 0 or over 1000.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::positional_encoding::encoding_heatmap;
///
/// let svg = encoding_heatmap(32, 60, &Device::flex()).unwrap();
/// assert!(svg.as_str().contains("Row (position)"));
/// let err = encoding_heatmap(32, 0, &Device::flex()).unwrap_err();
/// assert!(err.to_string().contains("`num_steps`"), "{err}");
/// ```
pub fn encoding_heatmap(
    encoding_dim: usize,
    num_steps: usize,
    device: &Device,
) -> Result<Svg, PlotError> {
    check_size(encoding_dim, num_steps)?;
    // ANCHOR: heatmap
    let p = PositionalEncodingConfig::new(encoding_dim).init(device).p;
    // the first num_steps positions, as one (1, 1, num_steps, encoding_dim) panel
    let p = p.narrow(1, 0, num_steps).unsqueeze::<4>();
    let options = HeatmapOptions {
        figsize: (3.5, 5.0),
        cmap: crate::Cmap::Blues,
        // cells fill the figure, however few the columns
        aspect: crate::plot::Aspect::Auto,
        ..HeatmapOptions::default()
    };
    show_heatmaps(&p, "Column (encoding dimension)", "Row (position)", options)
    // ANCHOR_END: heatmap
}

/// Refuses an encoding the figures cannot draw, naming the argument.
fn check_size(encoding_dim: usize, num_steps: usize) -> Result<(), PlotError> {
    let invalid = |arg, value: usize, most: usize| PlotError::InvalidArgument {
        arg,
        reason: format!("{value}; it must be in 1..={most}"),
    };
    if !(1..=512).contains(&encoding_dim) {
        return Err(invalid("encoding_dim", encoding_dim, 512));
    }
    if !(1..=1000).contains(&num_steps) {
        return Err(invalid("num_steps", num_steps, 1000));
    }
    Ok(())
}
