//! The fused attention operation (`kernels::attention`) against d2l's form
//! of the same computation (scores / √d, `masked_softmax`, dropout, `bmm`,
//! head by head), forward and every gradient, on every backend, with every
//! kind of mask, grouped key/value heads and dropout.

use super::{RANDOM, common};

use burn::nn::{Dropout, DropoutConfig};
use burn::tensor::{Bool, DType, Device, Tensor, TensorData};
use d2l_attention::attention_scoring::{ValidLens, masked_softmax_by};
use d2l_attention::kernels::{AttentionMask, attention, dropout};
use d2l_attention::random::randn;

/// Which keys the queries see, in the test's own words.
#[derive(Clone, Debug)]
enum Mask {
    None,
    /// One length per sequence, or per query (batch × n_q, row-major).
    Lens(Vec<usize>),
    Causal,
    Window(usize, usize),
}

/// One problem: sizes (batch, heads, kv_heads, n_q, n_k, d, d_v), the mask,
/// the dropout probability and the inputs' dtype.
#[derive(Clone, Debug)]
struct Case {
    sizes: [usize; 7],
    mask: Mask,
    prob: f64,
    dtype: DType,
}

impl Case {
    /// True where query i of sequence b does not see key j: (batch, n_q,
    /// n_k), written out from the definitions (query i sits at position
    /// n_k − n_q + i).
    fn hidden(&self) -> Option<Vec<bool>> {
        let [batch, _, _, n_q, n_k, _, _] = self.sizes;
        let hidden = |b: usize, i: usize, j: usize| {
            let (pos, j) = ((n_k + i) as i64 - n_q as i64, j as i64);
            match &self.mask {
                Mask::None => false,
                Mask::Lens(lens) if lens.len() == batch => j >= lens[b] as i64,
                Mask::Lens(lens) => j >= lens[b * n_q + i] as i64,
                Mask::Causal => j > pos,
                Mask::Window(l, r) => {
                    j < pos - *l as i64 || j > pos + *r as i64
                }
            }
        };
        if matches!(self.mask, Mask::None) {
            return None;
        }
        let mut out = Vec::new();
        for b in 0..batch {
            for i in 0..n_q {
                out.extend((0..n_k).map(|j| hidden(b, i, j)));
            }
        }
        Some(out)
    }

    /// The queries, keys, values and the weights of the loss Σ r ⊙ out.
    fn inputs(&self, device: &Device) -> [Tensor<4>; 4] {
        let [batch, heads, kv_heads, n_q, n_k, d, d_v] = self.sizes;
        [
            randn([batch, heads, n_q, d], 1, device),
            randn([batch, kv_heads, n_k, d], 2, device),
            randn([batch, kv_heads, n_k, d_v], 3, device),
            randn([batch, heads, n_q, d_v], 4, device),
        ]
        .map(|x| x.cast(self.dtype))
    }

    fn dropout(&self) -> Dropout {
        DropoutConfig::new(self.prob).init()
    }
}

/// d2l's form: the heads folded into the batch, the key/value heads
/// repeated, scores / √d, `masked_softmax` (by the hidden keys), dropout,
/// then the product with the values.
fn unfused(case: &Case, q: Tensor<4>, k: Tensor<4>, v: Tensor<4>) -> Tensor<4> {
    let [batch, heads, kv_heads, n_q, n_k, d, d_v] = case.sizes;
    let group = heads / kv_heads;
    let repeat = |x: Tensor<4>, e: usize| {
        x.reshape([batch, kv_heads, 1, n_k, e])
            .expand([batch, kv_heads, group, n_k, e])
            .reshape([batch * heads, n_k, e])
    };
    let (k, v) = (repeat(k, d), repeat(v, d_v));
    let device = q.device();
    let q = q.reshape([batch * heads, n_q, d]);
    let scores = q.matmul(k.swap_dims(1, 2)) / (d as f64).sqrt();
    let hidden = case.hidden().map(|h| {
        let h = Tensor::<3, Bool>::from_data(
            TensorData::new(h, [batch, n_q, n_k]),
            &device,
        );
        h.reshape([batch, 1, n_q, n_k])
            .expand([batch, heads, n_q, n_k])
            .reshape([batch * heads, n_q, n_k])
    });
    let weights = dropout(&case.dropout(), masked_softmax_by(scores, hidden));
    weights.matmul(v).reshape([batch, heads, n_q, d_v])
}

fn fused(case: &Case, q: Tensor<4>, k: Tensor<4>, v: Tensor<4>) -> Tensor<4> {
    let [batch, _, _, n_q, _, _, _] = case.sizes;
    let lens = match &case.mask {
        Mask::Lens(lens) if lens.len() == batch => {
            Some(ValidLens::new(lens, &q.device()))
        }
        Mask::Lens(lens) => {
            let rows: Vec<&[usize]> = lens.chunks(n_q).collect();
            Some(ValidLens::per_query(&rows, &q.device()))
        }
        _ => None,
    };
    let mask = match (&case.mask, &lens) {
        (Mask::Lens(_), Some(lens)) => AttentionMask::ValidLens(lens),
        (Mask::Causal, _) => AttentionMask::Causal,
        (&Mask::Window(left, right), _) => {
            AttentionMask::Window { left, right }
        }
        _ => AttentionMask::None,
    };
    attention(q, k, v, mask, &case.dropout())
}

/// |fused − unfused| ≤ atol + 1e-5·|unfused| everywhere, atol = 1e-5
/// for sums of up to 64 terms and growing as √n past them (the rounding
/// error of an f32 sum of n terms). Two f32 computations of a gradient
/// that is 0 in exact arithmetic differ by that much: for a row that sees
/// one key, d2l's softmax backward gives exactly 0 (g − g·1), while
/// FlashAttention-2's dP − D, with D = rowsum(dO ⊙ O), leaves the
/// rounding of two dot products, which dK then sums over every row.
fn assert_near(what: &str, got: Tensor<4>, want: Tensor<4>, terms: usize) {
    assert_eq!(got.dims(), want.dims(), "{what}: shape");
    let atol = 1e-5 * (terms as f32 / 64.0).sqrt().max(1.0);
    let got = got.try_into_vec_as::<f32>().unwrap();
    let want = want.try_into_vec_as::<f32>().unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= atol + 1e-5 * w.abs(),
            "{what}[{i}]: fused {g}, unfused {w}"
        );
    }
}

/// The output and the gradients of queries, keys and values of Σ r ⊙ out,
/// through `f`, with flex's generator seeded first.
fn run(
    case: &Case,
    device: &Device,
    f: fn(&Case, Tensor<4>, Tensor<4>, Tensor<4>) -> Tensor<4>,
) -> Vec<Tensor<4>> {
    let [q, k, v, r] = case.inputs(device);
    if !device.is_autodiff() {
        return vec![f(case, q, k, v)];
    }
    let (q, k, v) = (q.require_grad(), k.require_grad(), v.require_grad());
    device.seed(11);
    let out = f(case, q.clone(), k.clone(), v.clone());
    let grads = (out.clone() * r).sum().backward();
    let grad = |x: &Tensor<4>| x.grad(&grads).expect("a gradient");
    vec![out.inner(), grad(&q), grad(&k), grad(&v)]
}

/// Fused against unfused, on every backend, plain and autodiff devices
/// (dropout only on flex, where both draw the same mask).
fn check(case: &Case) {
    let _turn = RANDOM.lock().unwrap_or_else(|e| e.into_inner());
    for (backend, plain) in common::devices() {
        if case.prob > 0.0 && backend.to_string() != "flex" {
            continue;
        }
        for device in [plain.clone(), plain.autodiff()] {
            let got = run(case, &device, fused);
            let want = run(case, &device, unfused);
            for (name, (g, w)) in ["output", "dQ", "dK", "dV"]
                .iter()
                .zip(got.into_iter().zip(want))
            {
                let [_, heads, kv_heads, n_q, n_k, d, d_v] = case.sizes;
                let terms =
                    [d, d_v, n_k, n_q * heads / kv_heads].into_iter().max();
                let terms = terms.unwrap_or(1);
                assert_near(&format!("{backend} {case:?} {name}"), g, w, terms);
            }
        }
    }
}

/// Every mask on sizes n, d ∈ {1, 7, 64, 129}, n_q = n_k and n_q < n_k,
/// kv_heads 1, 2 and 4 of 4 heads, dropout 0 and 0.1: each (n, d) with
/// `per_size` of the masks (in turn), or all six.
fn grid(per_size: usize) {
    let mut index = 0;
    for n in [1, 7, 64, 129] {
        for d in [1, 7, 64, 129] {
            for n_k in [n, n + 5] {
                let masks = [
                    Mask::None,
                    Mask::Lens(vec![0, 1, n_k]),
                    Mask::Lens(
                        (0..3 * n).map(|i| (i * 5 + 1) % (n_k + 1)).collect(),
                    ),
                    Mask::Causal,
                    Mask::Window(3, 0),
                    Mask::Window(2, 5),
                ];
                for _ in 0..per_size {
                    let mask = masks[index % masks.len()].clone();
                    let kv_heads = [1, 2, 4][index % 3];
                    let prob = [0.0, 0.1][index / 6 % 2];
                    let sizes = [3, 4, kv_heads, n, n_k, d, d.max(2) - 1];
                    check(&Case {
                        sizes,
                        mask,
                        prob,
                        dtype: DType::F32,
                    });
                    index += 1;
                }
            }
        }
    }
}

/// The grid, each (n, d, n_k) with one mask (every mask in turn).
#[test]
fn fused_attention_is_d2l_s_attention() {
    grid(1);
}

/// The whole grid: every mask on every size (release, as `.ci/run` runs
/// the ignored tests of this file).
#[test]
#[ignore = "the whole grid: run in release, as .ci/run does"]
fn fused_attention_is_d2l_s_attention_on_the_whole_grid() {
    grid(6);
}

/// One long problem: 1,000 queries and keys of 64 features, causal, with
/// dropout.
#[test]
fn a_long_causal_problem_matches() {
    check(&Case {
        sizes: [1, 2, 1, 1000, 1000, 64, 64],
        mask: Mask::Causal,
        prob: 0.1,
        dtype: DType::F32,
    });
}

/// f64 takes burn's operations on flex too (the kernel is f32's), with
/// every kind of mask.
#[test]
fn f64_takes_burn_s_operations_with_every_mask() {
    for mask in [
        Mask::Lens(vec![0, 2, 5]),
        Mask::Lens(vec![1, 2, 3, 4, 0, 5, 5, 5, 2, 2, 2, 2]),
        Mask::Causal,
        Mask::Window(1, 1),
    ] {
        let sizes = [3, 2, 1, 4, 5, 8, 3];
        check(&Case {
            sizes,
            mask,
            prob: 0.0,
            dtype: DType::F64,
        });
    }
}

/// Zero keys or features, and mixed dtypes, are refused by name.
#[test]
fn empty_products_and_mixed_dtypes_are_refused() {
    let device = Device::flex();
    let layer = DropoutConfig::new(0.0).init();
    let call = |q: [usize; 4], k: [usize; 4], f64_values: bool| {
        let values = Tensor::<4>::zeros([k[0], k[1], k[2], 2], &device);
        let values = if f64_values {
            values.cast(DType::F64)
        } else {
            values
        };
        let (queries, keys) = (
            Tensor::<4>::zeros(q, &device),
            Tensor::<4>::zeros(k, &device),
        );
        common::panic_message(|| {
            attention(queries, keys, values, AttentionMask::None, &layer);
        })
    };
    let message = call([1, 1, 2, 4], [1, 1, 0, 4], false);
    assert!(
        message.contains("`keys` [1, 1, 0, 4] hold no key"),
        "{message}"
    );
    let message = call([1, 1, 2, 0], [1, 1, 3, 0], false);
    assert!(message.contains("no feature"), "{message}");
    let message = call([1, 1, 2, 4], [1, 1, 3, 4], true);
    assert!(
        message.contains("`values` is F64, `queries` F32"),
        "{message}"
    );
}

/// A row that sees no key is d2l's uniform row: the mean of the values.
#[test]
fn a_query_that_sees_no_key_averages_the_values() {
    let device = Device::flex();
    let case = Case {
        sizes: [1, 1, 1, 3, 2, 4, 2],
        mask: Mask::Causal,
        prob: 0.0,
        dtype: DType::F32,
    };
    let [q, k, v, _] = case.inputs(&device);
    // Query 0 of 3 against 2 keys sits at position −1: it sees nothing.
    let out = fused(&case, q, k, v.clone()).slice([0..1, 0..1, 0..1, 0..2]);
    let mean = v.mean_dim(2);
    assert_near("uniform row", out, mean, 1);
}

/// Against PyTorch's `scaled_dot_product_attention` in f64
/// (`golden/fused_attention.json`): a boolean mask from valid lengths, a
/// causal mask at n_q = n_k and grouped key/value heads, the output and
/// the gradients of Σ r ⊙ out, on every backend.
#[test]
fn fused_attention_is_pytorch_s_scaled_dot_product_attention() {
    let golden = common::golden("fused_attention.json");
    for (backend, plain) in common::devices() {
        let device = plain.autodiff();
        for name in ["valid_lens", "causal", "gqa"] {
            let case = &golden[name];
            let input = |key| common::float::<4>(&case[key], &device);
            let (q, k, v) = (
                input("queries").require_grad(),
                input("keys").require_grad(),
                input("values").require_grad(),
            );
            let lens = case
                .get("valid_lens")
                .map(|l| common::valid_lens(l, &device));
            let mask = match (name, &lens) {
                (_, Some(lens)) => AttentionMask::ValidLens(lens),
                ("causal", _) => AttentionMask::Causal,
                _ => AttentionMask::None,
            };
            let layer = DropoutConfig::new(0.0).init();
            let out = attention(q.clone(), k.clone(), v.clone(), mask, &layer);
            let grads = (out.clone() * input("r")).sum().backward();
            let what = |x: &str| format!("{backend} {name} {x}");
            let grad = |x: &Tensor<4>| x.grad(&grads).unwrap();
            let tol = (1e-5, 1e-5);
            common::assert_close(
                &what("output"),
                out.inner(),
                &case["output"],
                tol.0,
                tol.1,
            );
            common::assert_close(
                &what("dq"),
                grad(&q),
                &case["dq"],
                tol.0,
                tol.1,
            );
            common::assert_close(
                &what("dk"),
                grad(&k),
                &case["dk"],
                tol.0,
                tol.1,
            );
            common::assert_close(
                &what("dv"),
                grad(&v),
                &case["dv"],
                tol.0,
                tol.1,
            );
        }
    }
}
