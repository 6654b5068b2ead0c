//! Which keys a query may see: d2l's valid lengths and the value masked
//! scores are replaced with (d2l zh §10.3.1). Below both the kernels and
//! the scoring functions, which re-export them
//! ([`crate::attention_scoring`]).

use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

/// The value d2l's `sequence_mask` writes into masked scores before the
/// softmax. Finite on purpose: exp(−10⁶ − max) underflows to exactly 0,
/// while a fully masked row stays finite (uniform), in value and gradient;
/// a −∞ fill would give NaN there (pytorch#41508, burn#4694).
///
/// # Examples
/// ```
/// use d2l_attention::attention_scoring::MASK_VALUE;
///
/// // exp(MASK_VALUE) underflows to exactly 0 in f32.
/// assert_eq!(MASK_VALUE.exp(), 0.0);
/// ```
pub const MASK_VALUE: f32 = -1e6;

/// The fill for masked scores of `dtype`: [`MASK_VALUE`] where the dtype
/// holds it (f32, f64, bf16), else the dtype's lowest finite value (f16:
/// −65504, where −10⁶ would round to −∞ and a fully masked row would be
/// NaN). Either way exp(fill − max) is 0 beside any valid score that is
/// not itself that low, and a fully masked row is uniform.
///
/// # Examples
/// ```
/// use burn::tensor::DType;
/// use d2l_attention::attention_scoring::{MASK_VALUE, mask_value};
///
/// assert_eq!(mask_value(DType::F32), MASK_VALUE);
/// assert_eq!(mask_value(DType::F16), -65504.0);
/// ```
pub fn mask_value(dtype: burn::tensor::DType) -> f32 {
    match dtype {
        burn::tensor::DType::F16 => -65_504.0, // f16's lowest finite value
        _ => MASK_VALUE,
    }
}

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
