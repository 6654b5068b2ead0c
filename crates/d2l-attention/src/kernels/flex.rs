//! The kernels on flex: rows in parallel on rayon's pool (flex's own), each
//! row in three passes of SIMD lanes while it stays in cache (max, exp and
//! sum, scale).

use super::attention::{KeyMask, WeightDropout, key_ranges};
use super::exp::{Row, masked_rows, rows};
use super::flash::{self, Problem, Upstream};
use super::gelu;
use super::mask::{Keep, dropout_mask};
use super::norm;
use super::{AttentionOps, attention};
use burn::backend::flex::{FlexDevice, FlexTensor};
use burn::backend::ops::{ActivationOps, IntTensorOps};
use burn::backend::{Flex, TensorMetadata};
use burn::tensor::{DType, Distribution, IntDType, TensorData};

use crate::masks::MASK_VALUE;
use rayon::prelude::*;

/// Elements per parallel task (whole rows, at least one).
const TASK: usize = 1 << 14;

/// The rows along the last axis of an f32 tensor, each replaced by
/// `f(row, out, valid lengths of the task's rows)`, in tasks of whole rows.
/// When the tensor's buffer is its own (the usual case: the output of the
/// operation before), the rows are overwritten in place, each task reading
/// a copy of its own rows: no new tensor-sized buffer to zero and fault in.
fn apply_rows(
    x: FlexTensor,
    lens: Option<&[usize]>,
    f: impl Fn(&[f32], &mut [f32], Option<&[usize]>) + Sync,
) -> FlexTensor {
    let shape = x.shape();
    let len = shape.last().copied().unwrap_or(1);
    if len == 0 || shape.num_elements() == 0 {
        return x;
    }
    let rows = (TASK / len).max(1);
    let lens_of =
        |i: usize, n: usize| lens.map(|l| &l[i * rows..i * rows + n / len]);
    let mut x = {
        let contiguous = x.to_contiguous();
        drop(x);
        contiguous
    };
    if let Some(data) = x.try_storage_mut::<f32>() {
        data.par_chunks_mut(rows * len)
            .enumerate()
            .for_each(|(i, y)| {
                let input = y.to_vec();
                f(&input, y, lens_of(i, y.len()))
            });
        return x;
    }
    let input = x.as_slice::<f32>().expect("contiguous f32");
    let mut output = vec![0.0f32; input.len()];
    output
        .par_chunks_mut(rows * len)
        .zip(input.par_chunks(rows * len))
        .enumerate()
        .for_each(|(i, (y, x))| f(x, y, lens_of(i, y.len())));
    FlexTensor::from_data(TensorData::new(output, shape))
}

/// `kind` applied to the rows along the last axis of an f32 tensor.
fn map_rows(kind: Row, x: FlexTensor) -> FlexTensor {
    let len = x.shape().last().copied().unwrap_or(1);
    apply_rows(x, None, |x, y, _| rows(kind, x, y, len))
}

/// Each row's valid length: `valid_lens` (b, 1 or q) spread over the b · q
/// rows of scores shaped `shape` (b, q, k).
fn row_lens(valid_lens: FlexTensor, shape: &[usize]) -> Vec<usize> {
    let per_query = valid_lens.shape()[1] != 1;
    let lens: Vec<usize> = valid_lens
        .into_data()
        .iter::<i64>()
        .map(|l| l as usize)
        .collect();
    let (q, k) = (shape[1], shape[2]);
    (0..shape[0] * q)
        .map(|r| lens[if per_query { r } else { r / q }].min(k))
        .collect()
}

fn last_dim(x: &FlexTensor) -> usize {
    x.shape().num_dims() - 1
}

impl AttentionOps for Flex {
    fn attention_forward(
        queries: FlexTensor,
        keys: FlexTensor,
        values: FlexTensor,
        mask: KeyMask<Flex>,
        dropout: Option<WeightDropout>,
    ) -> (FlexTensor, FlexTensor) {
        fused_forward(queries, keys, values, mask, dropout)
    }

    fn attention_backward(
        queries: FlexTensor,
        keys: FlexTensor,
        values: FlexTensor,
        output: FlexTensor,
        lse: FlexTensor,
        grad: FlexTensor,
        mask: KeyMask<Flex>,
        dropout: Option<WeightDropout>,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        let f32s = [&output, &lse, &grad]
            .iter()
            .all(|t| t.dtype() == DType::F32);
        let fused =
            Fused::new(&queries, &keys, &values, &mask).filter(|_| f32s);
        let Some(inputs) = fused else {
            return attention::backward_ops::<Flex>(
                queries, keys, values, output, lse, grad, mask, dropout,
            );
        };
        let (output, lse, grad) = (
            output.to_contiguous(),
            lse.to_contiguous(),
            grad.to_contiguous(),
        );
        let (o, g) = (
            output.as_slice::<f32>().expect("f32"),
            grad.as_slice::<f32>().expect("f32"),
        );
        let d_v = values.shape()[3];
        let delta: Vec<f32> = o
            .par_chunks(d_v)
            .zip(g.par_chunks(d_v))
            .map(|(o, g)| o.iter().zip(g).map(|(o, g)| o * g).sum())
            .collect();
        let up = Upstream {
            lse: lse.as_slice::<f32>().expect("f32"),
            d_o: g,
            delta: &delta,
        };
        let [dq, dk, dv] = flash::backward(&inputs.problem(dropout), &up);
        let tensor = |x, like: &FlexTensor| {
            FlexTensor::from_data(TensorData::new(x, like.shape()))
        };
        (tensor(dq, &queries), tensor(dk, &keys), tensor(dv, &values))
    }

    fn softmax_last(x: FlexTensor) -> FlexTensor {
        match x.dtype() {
            DType::F32 => map_rows(Row::Softmax, x),
            _ => Flex::softmax(x.clone(), last_dim(&x)),
        }
    }

    fn masked_softmax_last(
        scores: FlexTensor,
        valid_lens: FlexTensor,
    ) -> FlexTensor {
        let shape = scores.shape();
        let rank = shape.num_dims();
        assert_eq!(
            rank, 3,
            "masked softmax: scores of rank {rank}, expected 3"
        );
        if scores.dtype() != DType::F32 || shape[2] == 0 {
            return super::masked_softmax_ops::<Flex>(scores, valid_lens);
        }
        let lens = row_lens(valid_lens, &shape);
        apply_rows(scores, Some(&lens), |x, y, lens| {
            masked_rows(x, y, lens.expect("one per row"), MASK_VALUE)
        })
    }

    fn masked_softmax_backward(
        y: FlexTensor,
        grad: FlexTensor,
        valid_lens: FlexTensor,
    ) -> FlexTensor {
        let shape = y.shape();
        assert_eq!(
            shape.num_dims(),
            3,
            "masked softmax: `y` must be (b, q, k)"
        );
        if y.dtype() != DType::F32
            || grad.dtype() != DType::F32
            || shape[2] == 0
        {
            return super::masked_softmax_backward_ops::<Flex>(
                y, grad, valid_lens,
            );
        }
        let lens = row_lens(valid_lens, &shape);
        let (y, g) = (y.to_contiguous(), grad.to_contiguous());
        let (ys, gs) = (
            y.as_slice::<f32>().expect("f32"),
            g.as_slice::<f32>().expect("f32"),
        );
        let k = shape[2];
        // Pair the two inputs row by row: the weights, then the gradient.
        let mut output = vec![0.0f32; ys.len()];
        let rows = (TASK / k).max(1);
        output
            .par_chunks_mut(rows * k)
            .zip(ys.par_chunks(rows * k).zip(gs.par_chunks(rows * k)))
            .zip(lens.par_chunks(rows))
            .for_each(|((dx, (y, g)), lens)| {
                let rows = dx
                    .chunks_exact_mut(k)
                    .zip(y.chunks_exact(k).zip(g.chunks_exact(k)));
                for ((dx, (y, g)), &valid) in rows.zip(lens) {
                    let s: f32 = y.iter().zip(g).map(|(y, g)| y * g).sum();
                    for ((d, y), g) in dx[..valid].iter_mut().zip(y).zip(g) {
                        *d = y * (g - s);
                    }
                }
            });
        FlexTensor::from_data(TensorData::new(output, shape))
    }

    fn log_softmax_last(x: FlexTensor) -> FlexTensor {
        match x.dtype() {
            DType::F32 => map_rows(Row::LogSoftmax, x),
            _ => Flex::log_softmax(x.clone(), last_dim(&x)),
        }
    }

    fn gelu(x: FlexTensor) -> FlexTensor {
        match x.dtype() {
            DType::F32 => {
                apply_rows(x, None, |x, y, _| gelu::forward_slice(x, y))
            }
            _ => <Flex as ActivationOps<Flex>>::gelu(x),
        }
    }

    fn gelu_backward(x: FlexTensor, grad: FlexTensor) -> FlexTensor {
        let f32s = x.dtype() == DType::F32 && grad.dtype() == DType::F32;
        if !f32s || x.shape() != grad.shape() {
            return <Flex as ActivationOps<Flex>>::gelu_backward(x, grad);
        }
        let shape = x.shape();
        let (x, g) = (x.to_contiguous(), grad.to_contiguous());
        let (xs, gs) = (
            x.as_slice::<f32>().expect("f32"),
            g.as_slice::<f32>().expect("f32"),
        );
        let mut output = vec![0.0f32; xs.len()];
        output
            .par_chunks_mut(TASK)
            .zip(xs.par_chunks(TASK).zip(gs.par_chunks(TASK)))
            .for_each(|(dx, (x, g))| gelu::backward_slice(x, g, dx));
        FlexTensor::from_data(TensorData::new(output, shape))
    }

    fn layer_norm_backward(
        x: FlexTensor,
        gamma: FlexTensor,
        grad: FlexTensor,
        epsilon: f64,
    ) -> (FlexTensor, FlexTensor, FlexTensor) {
        let f32s = [&x, &gamma, &grad].iter().all(|t| t.dtype() == DType::F32);
        if !f32s || x.shape() != grad.shape() {
            return norm::backward_ops::<Flex>(x, gamma, grad, epsilon);
        }
        let (shape, d_shape) = (x.shape(), gamma.shape());
        let (x, gamma, g) = (
            x.to_contiguous(),
            gamma.to_contiguous(),
            grad.to_contiguous(),
        );
        let (dx, d_gamma, d_beta) = norm::backward_f32(
            x.as_slice::<f32>().expect("f32"),
            gamma.as_slice::<f32>().expect("f32"),
            g.as_slice::<f32>().expect("f32"),
            epsilon as f32,
        );
        let tensor = |v, s| FlexTensor::from_data(TensorData::new(v, s));
        (
            tensor(dx, shape),
            tensor(d_gamma, d_shape.clone()),
            tensor(d_beta, d_shape),
        )
    }

    fn exp(x: FlexTensor) -> FlexTensor {
        match x.dtype() {
            DType::F32 => map_rows(Row::Exp, x),
            _ => {
                <Flex as burn::backend::ops::FloatTensorOps<Flex>>::float_exp(x)
            }
        }
    }

    fn sigmoid(x: FlexTensor) -> FlexTensor {
        match x.dtype() {
            DType::F32 => map_rows(Row::Sigmoid, x),
            _ => <Flex as ActivationOps<Flex>>::sigmoid(x),
        }
    }

    /// One seed per call from flex's seeded generator, so that
    /// `Device::seed` makes the masks reproducible.
    fn dropout_seed(_x: FlexTensor) -> FlexTensor {
        Flex::int_random(
            [1].into(),
            Distribution::Default,
            &FlexDevice,
            IntDType::U64,
        )
    }

    fn dropout_mask(x: FlexTensor, prob: f64) -> FlexTensor {
        let seed = Self::dropout_seed(x.clone());
        let seed = seed.as_slice::<u64>().expect("one u64")[0];
        let shape = x.shape();
        let mask = dropout_mask(seed, shape.num_elements(), prob);
        let mask = FlexTensor::from_data(TensorData::new(mask, shape));
        match x.dtype() {
            DType::F32 => mask,
            dtype => {
                <Flex as burn::backend::ops::FloatTensorOps<Flex>>::float_cast(
                    mask,
                    dtype.into(),
                )
            }
        }
    }
}

/// The inputs of the fused kernel: contiguous f32 queries, keys and values
/// and each row's range of keys.
struct Fused {
    q: FlexTensor,
    k: FlexTensor,
    v: FlexTensor,
    ranges: Vec<(usize, usize)>,
}

impl Fused {
    /// None where the kernel does not apply: another dtype, or a size 0.
    fn new(
        q: &FlexTensor,
        k: &FlexTensor,
        v: &FlexTensor,
        mask: &KeyMask<Flex>,
    ) -> Option<Self> {
        let f32s = [q, k, v].iter().all(|t| t.dtype() == DType::F32);
        let (qs, vs) = (q.shape(), v.shape());
        let sizes = [qs[0], qs[1], qs[2], qs[3], vs[2], vs[3]];
        if !f32s || sizes.contains(&0) {
            return None;
        }
        let lens = match mask {
            KeyMask::ValidLens(lens) => {
                Some(lens.clone().into_data().iter::<i64>().collect::<Vec<_>>())
            }
            _ => None,
        };
        let ranges = key_ranges(mask, lens.as_deref(), qs[0], qs[2], vs[2]);
        let (q, k, v) =
            (q.to_contiguous(), k.to_contiguous(), v.to_contiguous());
        Some(Self { q, k, v, ranges })
    }

    fn problem(&self, dropout: Option<WeightDropout>) -> Problem<'_> {
        let (qs, vs) = (self.q.shape(), self.v.shape());
        Problem {
            q: self.q.as_slice::<f32>().expect("f32"),
            k: self.k.as_slice::<f32>().expect("f32"),
            v: self.v.as_slice::<f32>().expect("f32"),
            heads: qs[1],
            kv_heads: vs[1],
            n_q: qs[2],
            n_k: vs[2],
            d: qs[3],
            d_v: vs[3],
            ranges: &self.ranges,
            scale: 1.0 / (qs[3] as f32).sqrt(),
            keep: dropout.map(|d| Keep::new(d.seed, d.prob)),
        }
    }
}

/// [`AttentionOps::attention_forward`] on flex.
fn fused_forward(
    q: FlexTensor,
    k: FlexTensor,
    v: FlexTensor,
    mask: KeyMask<Flex>,
    dropout: Option<WeightDropout>,
) -> (FlexTensor, FlexTensor) {
    let Some(inputs) = Fused::new(&q, &k, &v, &mask) else {
        return attention::forward_ops::<Flex>(q, k, v, mask, dropout);
    };
    let (qs, vs) = (q.shape(), v.shape());
    let (out, lse) = flash::forward(&inputs.problem(dropout));
    (
        FlexTensor::from_data(TensorData::new(
            out,
            [qs[0], qs[1], qs[2], vs[3]],
        )),
        FlexTensor::from_data(TensorData::new(lse, [qs[0], qs[1], qs[2]])),
    )
}
