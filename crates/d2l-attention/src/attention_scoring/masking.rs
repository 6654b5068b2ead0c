//! The masked softmax (d2l zh §10.3.1): by valid lengths, or by a mask.

use burn::tensor::{Bool, Tensor};

use crate::kernels::softmax;

use super::*;

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
