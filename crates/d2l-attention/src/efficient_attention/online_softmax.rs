//! Softmax in one pass over a row's blocks (Milakov and Gimelshein, 2018,
//! "Online normalizer calculation for softmax").

use burn::tensor::Tensor;

/// The softmax of every row of `x` (rows, n), its normaliser found in one
/// pass over blocks of `block` columns: a running maximum m and a running
/// sum l of exp(x − m), where a new maximum m′ rescales the sum so far by
/// exp(m − m′). Equal to softmax within rounding for any `block`
/// (`tests/efficient_attention.rs`: within 1e-6 + 1e-6·|value|).
///
/// A row of d2l's fill (−10⁶) is uniform, as in d2l's `masked_softmax`; a
/// row of −∞ is NaN (its maximum is −∞, and −∞ − (−∞) is NaN).
///
/// # Panics
/// When `block` is 0.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::efficient_attention::online_softmax;
///
/// let x = Tensor::<2>::from_data([[1.0, 2.0, 3.0, 4.0, 5.0]], &Device::flex());
/// let by_two = online_softmax(x.clone(), 2).try_into_vec_as::<f32>().unwrap();
/// let whole = burn::tensor::activation::softmax(x, 1).try_into_vec_as::<f32>().unwrap();
/// for (a, b) in by_two.iter().zip(&whole) {
///     assert!((a - b).abs() < 1e-6);
/// }
/// ```
// ANCHOR: online_softmax
pub fn online_softmax(x: Tensor<2>, block: usize) -> Tensor<2> {
    assert!(block > 0, "`block` is 0: blocks need at least one column");
    let [rows, n] = x.dims();
    let device = x.device();
    // running maximum and the sum of exp(x − maximum) so far, (rows, 1)
    let dtype = x.dtype();
    let mut m =
        Tensor::<2>::full([rows, 1], f32::NEG_INFINITY, &device).cast(dtype);
    let mut l = Tensor::<2>::zeros([rows, 1], &device).cast(dtype);
    for start in (0..n).step_by(block) {
        let columns = x.clone().narrow(1, start, block.min(n - start));
        let m_new = m.clone().max_pair(columns.clone().max_dim(1));
        // the old sum was taken against m: rescale it to m_new
        l = l * (m - m_new.clone()).exp()
            + (columns - m_new.clone()).exp().sum_dim(1);
        m = m_new;
    }
    (x - m).exp() / l
}
// ANCHOR_END: online_softmax
