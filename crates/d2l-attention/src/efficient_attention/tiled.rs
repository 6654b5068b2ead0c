//! FlashAttention's forward pass, readable: the loop order of
//! FlashAttention-2 (Dao, ICLR 2024: a block of queries outside, blocks of
//! keys and values streaming past inside) in burn's tensor operations.

use burn::tensor::{Int, Tensor};

use crate::masks::{ValidLens, mask_value};

/// Scaled dot-product attention (d2l's `DotProductAttention` in eval mode,
/// no dropout) computed block by block: `block_q` queries at a time
/// against `block_k` keys at a time, keeping for each query a running
/// maximum m, a running sum l of the weights and the running output o,
/// all rescaled by exp(m − m′) when the maximum grows to m′ (the online
/// softmax of [`online_softmax`](fn@super::online_softmax)). No
/// (num_queries, num_keys) score matrix is ever made: the scores exist one
/// (block_q, block_k) block per sequence at a time.
///
/// - `queries`: (batch_size, num_queries, d);
/// - `keys`: (batch_size, num_keys, d);
/// - `values`: (batch_size, num_keys, value_size);
/// - `valid_lens`: as d2l's, (batch_size,) or (batch_size, num_queries):
///   masked scores get d2l's fill (−10⁶), so a query with no valid key gets
///   d2l's uniform row.
///
/// Returns (batch_size, num_queries, value_size), equal to
/// `DotProductAttention::forward`'s output within 1e-5 + 1e-5·|value| for
/// every block size (`tests/efficient_attention.rs`). This is the
/// algorithm, not the fast version: [`crate::kernels::attention`] runs the
/// same loops in SIMD registers and has a backward pass.
///
/// # Panics
/// When a block size is 0, the shapes disagree, a size is 0 (queries,
/// keys or features), or the valid lengths do not fit (as
/// [`ValidLens::mask`]), naming the argument.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::attention_scoring::ValidLens;
/// use d2l_attention::efficient_attention::tiled_attention;
///
/// let device = Device::flex();
/// // Equal scores: each query averages the values of its valid keys.
/// let queries = Tensor::<3>::zeros([2, 3, 4], &device);
/// let keys = Tensor::<3>::zeros([2, 5, 4], &device);
/// let values = Tensor::<1, Int>::arange(0..10, &device).float().reshape([2, 5, 1]);
/// let valid_lens = ValidLens::new(&[2, 5], &device);
/// let out = tiled_attention(queries, keys, values, Some(&valid_lens), 2, 2);
/// assert_eq!(out.try_into_vec_as::<f32>().unwrap(), [0.5, 0.5, 0.5, 7.0, 7.0, 7.0]);
/// ```
pub fn tiled_attention(
    queries: Tensor<3>,
    keys: Tensor<3>,
    values: Tensor<3>,
    valid_lens: Option<&ValidLens>,
    block_q: usize,
    block_k: usize,
) -> Tensor<3> {
    let [batch_size, num_queries, d] = queries.dims();
    let (k, v) = (keys.dims(), values.dims());
    assert!(
        block_q > 0 && block_k > 0,
        "`block_q` ({block_q}) and `block_k` ({block_k}) must be above 0"
    );
    assert!(
        k[0] == batch_size && k[2] == d,
        "`keys` {k:?} do not fit `queries` {:?}: expected ({batch_size}, \
         num_keys, {d})",
        queries.dims()
    );
    assert!(
        num_queries > 0 && k[1] > 0 && d > 0,
        "`queries` {:?} and `keys` {k:?} must hold at least one query, one \
         key and one feature",
        queries.dims()
    );
    assert!(
        v[..2] == k[..2],
        "`values` {v:?} do not fit `keys` {k:?}: expected ({batch_size}, \
         {}, value_size)",
        k[1]
    );
    if let Some(lens) = valid_lens {
        lens.check(batch_size, num_queries, k[1]);
    }
    let queries = queries / (d as f64).sqrt();
    let blocks = (0..num_queries)
        .step_by(block_q)
        .map(|start| {
            let rows = block_q.min(num_queries - start);
            let lens = valid_lens.map(|lens| block_lens(lens, start, rows));
            query_block(
                queries.clone().narrow(1, start, rows),
                &keys,
                &values,
                lens,
                block_k,
            )
        })
        .collect();
    Tensor::cat(blocks, 1)
}

/// The valid lengths of queries `start` … `start + rows − 1`, (batch_size,
/// rows or 1, 1), ready to compare with key positions.
fn block_lens(lens: &ValidLens, start: usize, rows: usize) -> Tensor<3, Int> {
    let lens = lens.tensor();
    let lens = match lens.dims()[1] {
        1 => lens,
        _ => lens.narrow(1, start, rows),
    };
    lens.unsqueeze_dim(2)
}

/// One block of (already scaled) queries, (batch_size, rows, d), against
/// every key, `block_k` keys at a time.
// ANCHOR: query_block
fn query_block(
    queries: Tensor<3>,
    keys: &Tensor<3>,
    values: &Tensor<3>,
    lens: Option<Tensor<3, Int>>,
    block_k: usize,
) -> Tensor<3> {
    let [batch_size, rows, _] = queries.dims();
    let [_, num_keys, value_size] = values.dims();
    let device = queries.device();
    let (dtype, fill) = (queries.dtype(), mask_value(queries.dtype()));
    let mut m =
        Tensor::<3>::full([batch_size, rows, 1], f32::NEG_INFINITY, &device)
            .cast(dtype);
    let mut l = Tensor::<3>::zeros([batch_size, rows, 1], &device).cast(dtype);
    let mut o =
        Tensor::<3>::zeros([batch_size, rows, value_size], &device).cast(dtype);
    for start in (0..num_keys).step_by(block_k) {
        let width = block_k.min(num_keys - start);
        let k = keys.clone().narrow(1, start, width);
        let v = values.clone().narrow(1, start, width);
        let mut s = queries.clone().matmul(k.swap_dims(1, 2));
        if let Some(lens) = &lens {
            let shape = [batch_size, rows, width];
            let positions = Tensor::<1, Int>::arange(
                start as i64..(start + width) as i64,
                &device,
            );
            let masked = positions
                .reshape([1, 1, width])
                .expand(shape)
                .greater_equal(lens.clone().expand(shape));
            s = s.mask_fill(masked, fill);
        }
        let m_new = m.clone().max_pair(s.clone().max_dim(2));
        let p = (s - m_new.clone()).exp();
        // what l and o summed against the old maximum, rescaled to m_new
        let rescale = (m - m_new.clone()).exp();
        l = l * rescale.clone() + p.clone().sum_dim(2);
        o = o * rescale + p.matmul(v);
        m = m_new;
    }
    o / l
}
// ANCHOR_END: query_block
