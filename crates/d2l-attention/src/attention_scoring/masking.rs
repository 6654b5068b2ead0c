//! Masking by valid length (d2l zh §10.3.1): which keys a query may see.

use burn::tensor::{Bool, Device, Int, Tensor, activation::softmax};

use super::*;

/// How many keys each query may attend to: the first `valid_len` keys count,
/// the rest (padding) get weight exactly 0.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::attention_scoring::ValidLens;
///
/// let device = Device::flex();
/// let per_sequence: ValidLens = Tensor::<1, Int>::from_ints([2, 3], &device).into();
/// let mask = per_sequence.mask(2, 1, 4, &device).unwrap();
/// // Keys at or past each valid length are masked.
/// let mask = mask.into_data().to_vec::<bool>().unwrap();
/// assert_eq!(mask, [false, false, true, true, false, false, false, true]);
/// ```
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
        let expected =
            || format!("({batch_size},) or ({batch_size}, {num_queries})");
        let (lens, dims): (Tensor<3, Int>, Vec<usize>) = match self {
            ValidLens::PerSequence(t) if t.dims() == [batch_size] => (
                t.reshape([batch_size, 1, 1]).expand([
                    batch_size,
                    num_queries,
                    1,
                ]),
                vec![batch_size],
            ),
            ValidLens::PerQuery(t) if t.dims() == [batch_size, num_queries] => {
                (
                    t.reshape([batch_size, num_queries, 1]),
                    vec![batch_size, num_queries],
                )
            }
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
        if let Some(i) =
            values.iter().position(|&v| v < 0 || v as usize > num_keys)
        {
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
    ///
    /// # Examples
    /// ```
    /// use burn::tensor::{Device, Int, Tensor};
    /// use d2l_attention::attention_scoring::ValidLens;
    ///
    /// let device = Device::flex();
    /// let per_query: ValidLens = Tensor::<2, Int>::from_ints([[1, 3]], &device).into();
    /// let mask = per_query.mask(1, 2, 3, &device).unwrap();
    /// assert_eq!(mask.dims(), [1, 2, 3]);
    /// assert_eq!(mask.into_data().to_vec::<bool>().unwrap(), [false, true, true, false, false, false]);
    /// ```
    // ANCHOR: mask
    pub fn mask(
        self,
        batch_size: usize,
        num_queries: usize,
        num_keys: usize,
        device: &Device,
    ) -> Result<Tensor<3, Bool>, AttentionError> {
        // (b, q, 1)
        let lens = self.per_query(batch_size, num_queries, num_keys)?;
        let shape = [batch_size, num_queries, num_keys];
        let positions = Tensor::<1, Int>::arange(0..num_keys as i64, device)
            .reshape([1, 1, num_keys]);
        Ok(positions.expand(shape).greater_equal(lens.expand(shape)))
    }
    // ANCHOR_END: mask
}

pub(super) fn check_rank3(
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
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::attention_scoring::masked_softmax;
///
/// let device = Device::flex();
/// let scores = Tensor::<3>::zeros([2, 1, 4], &device);
/// let valid_lens = Tensor::<1, Int>::from_ints([2, 4], &device);
/// let weights = masked_softmax(scores, Some(valid_lens.into())).unwrap();
/// assert_eq!(weights.dims(), [2, 1, 4]);
/// let weights = weights.try_into_vec_as::<f32>().unwrap();
/// assert_eq!(weights, [0.5, 0.5, 0.0, 0.0, 0.25, 0.25, 0.25, 0.25]);
/// ```
// ANCHOR: masked_softmax
pub fn masked_softmax(
    scores: Tensor<3>,
    valid_lens: Option<ValidLens>,
) -> Result<Tensor<3>, AttentionError> {
    let Some(valid_lens) = valid_lens else {
        return Ok(softmax(scores, 2));
    };
    let [batch_size, num_queries, num_keys] = scores.dims();
    let masked =
        valid_lens.mask(batch_size, num_queries, num_keys, &scores.device())?;
    Ok(softmax(scores.mask_fill(masked, MASK_VALUE), 2))
}
// ANCHOR_END: masked_softmax
