//! Masking by valid length (d2l zh §10.3.1): which keys a query may see.

use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

use crate::kernels::softmax;

use super::*;

/// How many keys each query may attend to: the first `valid_len` keys count,
/// the rest (padding) get weight exactly 0 (d2l's `valid_lens`).
///
/// Built from host values, where the data pipeline makes them: lengths
/// cannot be negative, and they stay on the host too, so that a forward
/// pass checks them against the number of keys without reading anything
/// back from the device.
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::attention_scoring::ValidLens;
///
/// let device = Device::flex();
/// let per_sequence = ValidLens::new(&[2, 3], &device);
/// let mask = per_sequence.mask(2, 1, 4);
/// // Keys at or past each valid length are masked.
/// let mask = mask.into_data().to_vec::<bool>().unwrap();
/// assert_eq!(mask, [false, false, true, true, false, false, false, true]);
/// ```
#[derive(Clone, Debug)]
pub struct ValidLens {
    /// (batch_size, 1) for one length per sequence, (batch_size,
    /// num_queries) for one per query.
    lens: Tensor<2, Int>,
    /// The same lengths on the host, row-major.
    host: Vec<usize>,
}

impl ValidLens {
    /// One length per sequence, shared by all its queries (d2l's 1-D
    /// `valid_lens`): `lens` (batch_size,).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::attention_scoring::ValidLens;
    ///
    /// let valid_lens = ValidLens::new(&[2, 6], &Device::flex());
    /// assert_eq!((valid_lens.batch_size(), valid_lens.max()), (2, 6));
    /// ```
    pub fn new(lens: &[usize], device: &Device) -> Self {
        Self::from_host(lens.to_vec(), [lens.len(), 1], device)
    }

    /// One length per query (d2l's 2-D `valid_lens`): `lens` (batch_size,
    /// num_queries), one row per sequence.
    ///
    /// # Panics
    /// When the rows differ in length.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::attention_scoring::ValidLens;
    ///
    /// let per_query = ValidLens::per_query(&[[1, 3], [2, 4]], &Device::flex());
    /// assert_eq!(per_query.lens(), [1, 3, 2, 4]);
    /// ```
    pub fn per_query(lens: &[impl AsRef<[usize]>], device: &Device) -> Self {
        let num_queries = lens.first().map_or(0, |row| row.as_ref().len());
        let host: Vec<usize> =
            lens.iter().flat_map(|row| row.as_ref()).copied().collect();
        assert!(
            host.len() == lens.len() * num_queries,
            "`lens` has rows of different lengths"
        );
        Self::from_host(host, [lens.len(), num_queries], device)
    }

    fn from_host(host: Vec<usize>, dims: [usize; 2], device: &Device) -> Self {
        let data = host.iter().map(|&l| l as i64).collect::<Vec<_>>();
        let lens =
            Tensor::<2, Int>::from_data(TensorData::new(data, dims), device);
        Self { lens, host }
    }

    /// Every sequence's lengths repeated `n` times in a row: sequence i
    /// becomes rows i·n … i·n + n − 1 (torch's `repeat_interleave`), as
    /// multi-head attention needs when it folds the heads into the batch.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::attention_scoring::ValidLens;
    ///
    /// let valid_lens = ValidLens::new(&[3, 2], &Device::flex()).repeat_interleave(2);
    /// assert_eq!(valid_lens.lens(), [3, 3, 2, 2]);
    /// ```
    pub fn repeat_interleave(&self, n: usize) -> Self {
        let [batch_size, width] = self.lens.dims();
        let lens = self
            .lens
            .clone()
            .unsqueeze_dim::<3>(1)
            .expand([batch_size, n, width])
            .reshape([batch_size * n, width]);
        let host = self
            .host
            .chunks(width)
            .flat_map(|row| std::iter::repeat_n(row, n).flatten().copied())
            .collect();
        Self { lens, host }
    }

    /// The number of sequences.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::attention_scoring::ValidLens;
    ///
    /// assert_eq!(ValidLens::new(&[2, 6, 1], &Device::flex()).batch_size(), 3);
    /// ```
    pub fn batch_size(&self) -> usize {
        self.lens.dims()[0]
    }

    /// The lengths as given, row-major, from the host copy.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::attention_scoring::ValidLens;
    ///
    /// assert_eq!(ValidLens::new(&[2, 6], &Device::flex()).lens(), [2, 6]);
    /// ```
    pub fn lens(&self) -> &[usize] {
        &self.host
    }

    /// The largest length (0 when there are none), from the host copy.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::attention_scoring::ValidLens;
    ///
    /// assert_eq!(ValidLens::new(&[2, 6], &Device::flex()).max(), 6);
    /// ```
    pub fn max(&self) -> usize {
        self.host.iter().copied().max().unwrap_or(0)
    }

    /// The smallest length (0 when there are none), from the host copy.
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::attention_scoring::ValidLens;
    ///
    /// assert_eq!(ValidLens::new(&[2, 6], &Device::flex()).min(), 2);
    /// ```
    pub fn min(&self) -> usize {
        self.host.iter().copied().min().unwrap_or(0)
    }

    /// True where a key is at or past its query's valid length:
    /// (batch_size, num_queries, num_keys), on the lengths' device.
    ///
    /// # Panics
    /// When the lengths are not (batch_size,) or (batch_size, num_queries),
    /// or one is larger than `num_keys` (the message names `valid_lens`).
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::Device;
    /// use d2l_attention::attention_scoring::ValidLens;
    ///
    /// let per_query = ValidLens::per_query(&[[1, 3]], &Device::flex());
    /// let mask = per_query.mask(1, 2, 3);
    /// assert_eq!(mask.dims(), [1, 2, 3]);
    /// assert_eq!(mask.into_data().to_vec::<bool>().unwrap(), [false, true, true, false, false, false]);
    /// ```
    // ANCHOR: mask
    pub fn mask(
        &self,
        batch_size: usize,
        num_queries: usize,
        num_keys: usize,
    ) -> Tensor<3, Bool> {
        self.check(batch_size, num_queries, num_keys);
        let shape = [batch_size, num_queries, num_keys];
        // (b, 1 or q, 1): one length per sequence or per query
        let lens = self.lens.clone().unsqueeze_dim::<3>(2).expand(shape);
        let positions =
            Tensor::<1, Int>::arange(0..num_keys as i64, &self.lens.device());
        positions
            .reshape([1, 1, num_keys])
            .expand(shape)
            .greater_equal(lens)
    }
    // ANCHOR_END: mask

    /// The lengths as a tensor, (batch_size, 1) or (batch_size, num_queries).
    pub(crate) fn tensor(&self) -> Tensor<2, Int> {
        self.lens.clone()
    }

    /// The checks of [`ValidLens::mask`], on the host copy.
    pub(crate) fn check(
        &self,
        batch_size: usize,
        num_queries: usize,
        num_keys: usize,
    ) {
        let dims = self.lens.dims();
        let shape = if dims[1] == 1 { &dims[..1] } else { &dims[..] };
        assert!(
            dims[0] == batch_size && (dims[1] == 1 || dims[1] == num_queries),
            "`valid_lens` has shape {shape:?}, expected ({batch_size},) or ({batch_size}, {num_queries})"
        );
        if let Some(i) = self.host.iter().position(|&l| l > num_keys) {
            let index = if dims[1] == 1 {
                vec![i]
            } else {
                vec![i / dims[1], i % dims[1]]
            };
            panic!(
                "`valid_lens` holds {} at {index:?}; each valid length must be in 0..={num_keys} (the number of keys)",
                self.host[i]
            );
        }
    }
}

/// Softmax over the last axis of `scores` that ignores keys past each
/// query's valid length (d2l zh §10.3.1, `masked_softmax`).
///
/// - `scores`: (batch_size, num_queries, num_keys).
/// - `valid_lens`: `None` (every key counts), or lengths per sequence
///   (batch_size,) or per query (batch_size, num_queries): see
///   [`ValidLens::new`] and [`ValidLens::per_query`].
///
/// Returns the weights, shaped like `scores`: each row sums to 1 over its
/// valid keys, and keys at or past the valid length get exactly 0. A row
/// with valid length 0 is **uniform** (1/num_keys each), as in d2l, whose
/// masked scores are [`MASK_VALUE`]: finite, so neither the weights nor
/// their gradient contain NaN. (PyTorch's fused SDPA returns zeros there.)
/// That holds in every float dtype: f16, which cannot hold −10⁶, is
/// filled with its lowest finite value instead ([`mask_value`]).
///
/// `softmax` is the library's ([`crate::kernels::softmax`]): burn's
/// softmax along the last axis as a backend extension, faster on flex and
/// under autodiff, within 1e-6 + 1e-6·|value| of burn's
/// `activation::softmax` in value and gradient (`tests/kernels.rs`).
///
/// # Panics
/// As [`ValidLens::mask`].
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::attention_scoring::{ValidLens, masked_softmax};
///
/// let device = Device::flex();
/// let scores = Tensor::<3>::zeros([2, 1, 4], &device);
/// let valid_lens = ValidLens::new(&[2, 4], &device);
/// let weights = masked_softmax(scores, Some(&valid_lens));
/// assert_eq!(weights.dims(), [2, 1, 4]);
/// let weights = weights.try_into_vec_as::<f32>().unwrap();
/// assert_eq!(weights, [0.5, 0.5, 0.0, 0.0, 0.25, 0.25, 0.25, 0.25]);
/// ```
// ANCHOR: masked_softmax
pub fn masked_softmax(
    scores: Tensor<3>,
    valid_lens: Option<&ValidLens>,
) -> Tensor<3> {
    let [batch_size, num_queries, num_keys] = scores.dims();
    let Some(lens) = valid_lens else {
        return softmax(scores);
    };
    let hidden = lens.mask(batch_size, num_queries, num_keys);
    let fill = mask_value(scores.dtype()); // d2l's −10⁶ (f16: −65504)
    softmax(scores.mask_fill(hidden, fill))
}
// ANCHOR_END: masked_softmax

/// Softmax over the last axis of `scores` (batch_size, num_queries,
/// num_keys) after setting the entries where `hidden` (same shape) is true
/// to [`MASK_VALUE`]: how PyTorch-style masks (multi-head attention's
/// `key_padding_mask`, `attn_mask`) meet the scores, as valid lengths do
/// in [`masked_softmax`]. A row with every entry hidden is uniform, in
/// every float dtype ([`mask_value`]).
///
/// # Panics
/// When `hidden` does not have the shape of `scores`.
///
/// # Examples
/// ```
/// use burn::tensor::{Bool, Device, Tensor, TensorData};
/// use d2l_attention::attention_scoring::masked_softmax_by;
///
/// let device = Device::flex();
/// let scores = Tensor::<3>::zeros([1, 2, 3], &device);
/// // The first query may not see key 2; the second sees nothing.
/// let hidden = vec![false, false, true, true, true, true];
/// let hidden = Tensor::<3, Bool>::from_data(TensorData::new(hidden, [1, 2, 3]), &device);
/// let weights = masked_softmax_by(scores, Some(hidden)).try_into_vec_as::<f32>().unwrap();
/// let third = 1.0 / 3.0;
/// assert_eq!(weights, [0.5, 0.5, 0.0, third, third, third]);
/// ```
// ANCHOR: masked_softmax_by
pub fn masked_softmax_by(
    scores: Tensor<3>,
    hidden: Option<Tensor<3, Bool>>,
) -> Tensor<3> {
    match hidden {
        Some(hidden) => {
            let (s, m) = (scores.dims(), hidden.dims());
            assert!(s == m, "`hidden` has shape {m:?}, expected {s:?}");
            let fill = mask_value(scores.dtype());
            softmax(scores.mask_fill(hidden, fill))
        }
        None => softmax(scores),
    }
}
// ANCHOR_END: masked_softmax_by
