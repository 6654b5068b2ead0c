//! The backend extensions of `kernels` against burn's own operations, on
//! every tested backend, plain and autodiff: softmax, log-softmax and the
//! masked softmax within 1e-6 + 1e-6·|reference| in value and gradient
//! (masked entries filled with d2l's −10⁶ or −∞, rows with every entry
//! masked), and dropout with burn's `Dropout` semantics.

mod common;

use std::sync::Mutex;

use burn::module::Param;
use burn::nn::{Dropout, DropoutConfig};
use burn::tensor::activation::{
    gelu as burn_gelu, log_softmax as burn_log_softmax,
    sigmoid as burn_sigmoid, softmax as burn_softmax,
};
use burn::tensor::{Bool, DType, Device, Tensor, TensorData};
use d2l_attention::attention_scoring::{MASK_VALUE, ValidLens, masked_softmax};
use d2l_attention::kernels::{
    self, dropout, exp, exp_slice, gelu, log_softmax, sigmoid, softmax,
};
use d2l_attention::random::randn;

/// The generators are global per backend: tests that draw take turns.
static RANDOM: Mutex<()> = Mutex::new(());

#[path = "kernels/fused_attention.rs"]
mod fused_attention;

/// Asserts |a − b| ≤ 1e-6 + 1e-6·|b| element by element (infinities equal).
fn assert_close(what: &str, a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (&x, &y)) in a.iter().zip(b).enumerate() {
        let ok =
            x == y || (x - y).abs() as f64 <= 1e-6 + 1e-6 * (y as f64).abs();
        assert!(ok, "{what}[{i}]: {x} against burn's {y}");
    }
}

/// Values and, on an autodiff device, the gradient of Σ y ⊙ u with respect to x.
fn run(
    f: impl Fn(Tensor<3>) -> Tensor<3>,
    x: &Tensor<3>,
    u: &Tensor<3>,
) -> (Vec<f32>, Option<Vec<f32>>) {
    let x = match x.device().is_autodiff() {
        true => x.clone().require_grad(),
        false => x.clone(),
    };
    let y = f(x.clone());
    let grad = x.device().is_autodiff().then(|| {
        let grads = (y.clone() * u.clone()).sum().backward();
        x.grad(&grads).unwrap().try_into_vec_as::<f32>().unwrap()
    });
    (y.try_into_vec_as::<f32>().unwrap(), grad)
}

/// Scores of several shapes (rows shorter and longer than any SIMD width,
/// tails included), some entries hidden with `fill`, and row 0 of each
/// batch hidden entirely when `whole_rows`.
fn cases(
    device: &Device,
    fill: f32,
    whole_rows: bool,
) -> Vec<(Tensor<3>, Tensor<3>)> {
    [[2, 3, 1], [3, 4, 7], [2, 5, 33], [1, 2, 100]]
        .iter()
        .enumerate()
        .map(|(seed, &[b, q, k])| {
            let seed = seed as u64;
            let x = randn([b, q, k], seed, device) * 4.0;
            let hidden: Vec<bool> = (0..b * q * k)
                .map(|i| {
                    (whole_rows && i % (q * k) < k)
                        || (i * 7 + seed as usize).is_multiple_of(5)
                            && i % k != 0
                })
                .collect();
            let hidden = Tensor::<3, Bool>::from_data(
                TensorData::new(hidden, [b, q, k]),
                device,
            );
            (
                x.mask_fill(hidden, fill),
                randn([b, q, k], seed + 10, device),
            )
        })
        .collect()
}

#[test]
fn softmax_and_log_softmax_are_burn_s_within_tolerance() {
    for (mode, device) in common::modes() {
        for (fill, whole_rows) in [
            (MASK_VALUE, false),
            (MASK_VALUE, true),
            (f32::NEG_INFINITY, false),
        ] {
            for (x, u) in cases(&device, fill, whole_rows) {
                let at = format!(
                    "{mode}, fill {fill}, whole rows {whole_rows}, {:?}",
                    x.dims()
                );
                let (ours, burn) =
                    (run(softmax, &x, &u), run(|x| burn_softmax(x, 2), &x, &u));
                assert_close(&format!("softmax, {at}"), &ours.0, &burn.0);
                if let (Some(a), Some(b)) = (ours.1, burn.1) {
                    assert_close(&format!("softmax gradient, {at}"), &a, &b);
                }
                let (ours, burn) = (
                    run(log_softmax, &x, &u),
                    run(|x| burn_log_softmax(x, 2), &x, &u),
                );
                assert_close(&format!("log-softmax, {at}"), &ours.0, &burn.0);
                if let (Some(a), Some(b)) = (ours.1, burn.1) {
                    assert_close(
                        &format!("log-softmax gradient, {at}"),
                        &a,
                        &b,
                    );
                }
            }
        }
    }
}

/// The element-wise kernels, on the same cases (−10⁶ included).
#[test]
fn sigmoid_and_exp_are_burn_s_within_tolerance() {
    for (mode, device) in common::modes() {
        for (x, u) in cases(&device, MASK_VALUE, true) {
            let at = format!("{mode}, {:?}", x.dims());
            let (ours, burn) =
                (run(sigmoid, &x, &u), run(burn_sigmoid, &x, &u));
            assert_close(&format!("sigmoid, {at}"), &ours.0, &burn.0);
            if let (Some(a), Some(b)) = (ours.1, burn.1) {
                assert_close(&format!("sigmoid gradient, {at}"), &a, &b);
            }
            let (ours, burn) = (run(exp, &x, &u), run(|x| x.exp(), &x, &u));
            assert_close(&format!("exp, {at}"), &ours.0, &burn.0);
            if let (Some(a), Some(b)) = (ours.1, burn.1) {
                assert_close(&format!("exp gradient, {at}"), &a, &b);
            }
        }
    }
}

/// The library's two masked softmaxes, `attention_scoring::masked_softmax`
/// (d2l's form on the extension's softmax) and `kernels::masked_softmax`
/// (one operation), against d2l's form on burn's softmax: lengths of 0,
/// per-sequence and per-query lengths, and scores below d2l's fill (where
/// the fill outweighs the valid keys, as in d2l).
#[test]
fn masked_softmax_is_d2l_s_on_burn_within_tolerance() {
    for (mode, device) in common::modes() {
        let per_sequence = ValidLens::new(&[0, 3, 7], &device);
        let per_query =
            ValidLens::per_query(&[[1, 0], [7, 2], [4, 4]], &device);
        for (lens, shift) in
            [(&per_sequence, 0.0), (&per_query, 0.0), (&per_query, -2e6)]
        {
            let x = randn([3, 2, 7], 5, &device) * 4.0 + shift;
            let u = randn([3, 2, 7], 6, &device);
            let d2l = |x: Tensor<3>| {
                burn_softmax(x.mask_fill(lens.mask(3, 2, 7), MASK_VALUE), 2)
            };
            let burn = run(d2l, &x, &u);
            let ours = [
                run(|x| masked_softmax(x, Some(lens)), &x, &u),
                run(|x| kernels::masked_softmax(x, Some(lens)), &x, &u),
            ];
            for (which, ours) in
                ["attention_scoring", "kernels"].iter().zip(ours)
            {
                let at = format!("{mode}, {which}, shift {shift}");
                assert_close(&format!("{at}: weights"), &ours.0, &burn.0);
                if let (Some(a), Some(b)) = (ours.1, &burn.1) {
                    assert_close(&format!("{at}: gradient"), &a, b);
                }
            }
        }
    }
}

#[test]
fn dropout_keeps_burn_s_semantics() {
    let _turn = RANDOM.lock().unwrap();
    for (backend, plain) in common::devices() {
        let layer = DropoutConfig::new(0.25).init();
        let x = Tensor::<3>::ones([4, 50, 100], &plain);
        // Nothing is dropped off an autodiff device, with p = 0, or in a
        // layer whose training flag is off.
        assert_eq!(
            dropout(&layer, x.clone()).try_into_vec_as::<f32>().unwrap(),
            vec![1.0; 20_000]
        );
        let device = plain.autodiff();
        let x = Tensor::<3>::ones([4, 50, 100], &device);
        let none = DropoutConfig::new(0.0).init();
        let frozen = Dropout {
            prob: 0.25,
            training: Param::from_bool(false),
        };
        for off in [none, frozen] {
            assert_eq!(
                dropout(&off, x.clone()).try_into_vec_as::<f32>().unwrap(),
                vec![1.0; 20_000]
            );
        }
        // Kept entries are scaled by 1/(1 − p); the fraction kept is within
        // 5 standard deviations of 1 − p; the gradient is the mask.
        let x = x.require_grad();
        let y = dropout(&layer, x.clone());
        let u = randn([4, 50, 100], 1, &device);
        let grad = x.grad(&(y.clone() * u.clone()).sum().backward()).unwrap();
        let (y, u) = (
            y.try_into_vec_as::<f32>().unwrap(),
            u.try_into_vec_as::<f32>().unwrap(),
        );
        assert!(
            y.iter().all(|&v| v == 0.0 || v == 1.0 / 0.75),
            "{backend}: values"
        );
        let kept = y.iter().filter(|&&v| v > 0.0).count() as f64;
        let (mean, sd) = (15_000.0, (20_000.0f64 * 0.25 * 0.75).sqrt());
        assert!(
            (kept - mean).abs() < 5.0 * sd,
            "{backend}: kept {kept} of 20000"
        );
        let expected: Vec<f32> = y.iter().zip(&u).map(|(m, u)| m * u).collect();
        assert_eq!(
            grad.try_into_vec_as::<f32>().unwrap(),
            expected,
            "{backend}: gradient"
        );
    }
}

#[test]
fn seeded_dropout_is_reproducible_and_calls_differ() {
    let _turn = RANDOM.lock().unwrap();
    for (backend, plain) in common::devices() {
        let device = plain.autodiff();
        let layer = DropoutConfig::new(0.5).init();
        let masks = || {
            device.seed(42);
            let x = Tensor::<2>::ones([64, 64], &device);
            let first =
                dropout(&layer, x.clone()).try_into_vec_as::<f32>().unwrap();
            (first, dropout(&layer, x).try_into_vec_as::<f32>().unwrap())
        };
        let (a, b) = masks();
        assert_eq!(
            (a.clone(), b.clone()),
            masks(),
            "{backend}: the same seed, the same masks"
        );
        assert_ne!(a, b, "{backend}: two calls, two masks");
    }
}

/// A sample of every 65 521st f32 (a prime stride, so every exponent and
/// many mantissas), and the special values, against e^x in f64: at most
/// 1 ulp where the result is normal. The ignored test below (release, run
/// by `.ci/run`) checks all 2³² values.
#[test]
fn exp_is_within_one_ulp_on_a_sample() {
    let mut inputs: Vec<f32> =
        (0..=u32::MAX).step_by(65_521).map(f32::from_bits).collect();
    inputs.extend([
        0.0,
        -0.0,
        1.0,
        -1.0,
        f32::NEG_INFINITY,
        f32::INFINITY,
        f32::NAN,
        -1e6,
        1e6,
        -87.3,
        88.7,
    ]);
    let mut got = vec![0.0; inputs.len()];
    exp_slice(&inputs, &mut got);
    for (&x, &y) in inputs.iter().zip(&got) {
        if let Err(why) = exp_error(x, y, 1) {
            panic!("exp({x:e}) = {y:e}: {why}");
        }
    }
}

/// Every f32, in release (`cargo test --release -p d2l-attention --test
/// kernels -- --ignored`): at most 1 ulp where e^x is normal, exactly 0
/// below `UNDERFLOW`, +∞ above `OVERFLOW`, NaN for NaN.
#[test]
#[ignore = "2³² values: run in release, as .ci/run does"]
fn exp_is_within_one_ulp_for_every_f32() {
    use rayon::prelude::*;
    const BLOCK: u64 = 1 << 16;
    let failures: Vec<String> = (0..(1u64 << 32) / BLOCK)
        .into_par_iter()
        .flat_map_iter(|block| {
            let inputs: Vec<f32> = (block * BLOCK..(block + 1) * BLOCK)
                .map(|b| f32::from_bits(b as u32))
                .collect();
            let mut got = vec![0.0; inputs.len()];
            exp_slice(&inputs, &mut got);
            inputs
                .into_iter()
                .zip(got)
                .filter_map(|(x, y)| {
                    exp_error(x, y, 1)
                        .err()
                        .map(|why| format!("exp({x:e}) = {y:e}: {why}"))
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} failures, first {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
}

/// Whether `y` is e^`x` within `max_ulps`.
fn exp_error(x: f32, y: f32, max_ulps: u32) -> Result<(), String> {
    let reference = (x as f64).exp();
    let rounded = reference as f32;
    if x.is_nan() {
        return if y.is_nan() {
            Ok(())
        } else {
            Err("NaN expected".into())
        };
    }
    if rounded.is_infinite() || reference < f32::MIN_POSITIVE as f64 {
        // Overflow gives +∞; results below the smallest normal float are
        // 0 (flushed) or within it of the reference.
        let ok = (rounded.is_infinite() && y == f32::INFINITY)
            || (reference < f32::MIN_POSITIVE as f64
                && (y as f64 - reference).abs() <= f32::MIN_POSITIVE as f64);
        return if ok {
            Ok(())
        } else {
            Err(format!("expected about {reference:e}"))
        };
    }
    let ulps = (y.to_bits() as i64 - rounded.to_bits() as i64).unsigned_abs();
    if ulps <= max_ulps as u64 {
        Ok(())
    } else {
        Err(format!("{ulps} ulps from {rounded:e}"))
    }
}

/// On flex the mask is decided by the ChaCha8 stream of one u64 drawn from
/// flex's seeded generator: what `kernels/mask.rs` promises, end to end
/// through the dispatch (this fails if the call reaches burn's sampler).
#[test]
fn flex_masks_come_from_the_chacha8_stream_of_one_drawn_seed() {
    use burn::tensor::{DType, Distribution, Int};
    use chacha20::ChaCha8Rng;
    use chacha20::rand_core::{Rng, SeedableRng};
    let _turn = RANDOM.lock().unwrap();
    let device = Device::flex();
    device.seed(7);
    let seed = Tensor::<1, Int>::random(
        [1],
        Distribution::Default,
        (&device, DType::U64),
    );
    let seed = seed.into_data().try_to_vec::<u64>().unwrap()[0];
    device.seed(7);
    let layer = DropoutConfig::new(0.3).init();
    let x = Tensor::<2>::ones([300, 70], &device.autodiff());
    let mask = dropout(&layer, x).try_into_vec_as::<f32>().unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let threshold = (0.7 * 4_294_967_296.0) as u64;
    for (i, &m) in mask.iter().enumerate() {
        let kept = u64::from(rng.next_u32()) < threshold;
        assert_eq!(
            m,
            if kept { (1.0 / 0.7) as f32 } else { 0.0 },
            "element {i}"
        );
    }
}

/// Rows of a masked softmax read back as f32, whatever the dtype.
fn rows_f32(weights: Tensor<3>) -> Vec<f32> {
    weights
        .cast(burn::tensor::DType::F32)
        .try_into_vec_as::<f32>()
        .unwrap()
}

/// d2l's −10⁶ overflows to −∞ in f16: the masked softmax fills f16 with
/// its lowest finite value instead, so that a row with valid length 0 is
/// still uniform (NaN before), on every backend, plain and autodiff, in
/// f16, bf16 and f32.
#[test]
fn a_fully_masked_row_is_uniform_in_every_float_dtype() {
    use burn::tensor::DType;
    for (mode, device) in common::modes() {
        for dtype in [DType::F16, DType::BF16, DType::F32] {
            let scores = Tensor::<3>::from_floats(
                [[[1.0, 2.0, 3.0, 4.0]], [[1.0, 2.0, 3.0, 4.0]]],
                &device,
            )
            .cast(dtype);
            let lens = ValidLens::new(&[2, 0], &device);
            let fused = kernels::masked_softmax(scores.clone(), Some(&lens));
            let composed = masked_softmax(scores, Some(&lens));
            for (what, w) in [("kernels", fused), ("scoring", composed)] {
                let w = rows_f32(w);
                let first = 1.0 / (1.0 + 1f32.exp());
                let expected =
                    [first, 1.0 - first, 0.0, 0.0, 0.25, 0.25, 0.25, 0.25];
                let tol = if dtype == DType::F32 { 1e-6 } else { 1e-2 };
                for (got, want) in w.iter().zip(expected) {
                    assert!(
                        (got - want).abs() <= tol,
                        "{mode} {dtype:?} {what}: {w:?}"
                    );
                }
            }
        }
    }
}

/// GELU against burn's exact form in f64 (libm's erf), value and
/// gradient, plain and autodiff: x from −12 to 12 in steps of 1/64 (1,537
/// values, a tail past every SIMD width) within 2e-7 + 2e-7·|reference|
/// (1e-6 + 2e-7·|reference| for PyTorch's GELU on libtorch), and burn's
/// answers for ±∞ and NaN (PyTorch's +∞ may be NaN, see below).
#[test]
fn gelu_is_burn_s_exact_form_within_tolerance() {
    let xs: Vec<f32> = (-768..=768).map(|i| i as f32 / 64.0).collect();
    let n = xs.len();
    let device = Device::flex().autodiff();
    let x = Tensor::<1>::from_floats(xs.as_slice(), &device)
        .cast(DType::F64)
        .require_grad();
    let y = burn_gelu(x.clone());
    let grad = x.grad(&y.clone().sum().backward()).unwrap();
    let want_y = y.into_data().try_to_vec::<f64>().unwrap();
    let want_grad = grad.into_data().try_to_vec::<f64>().unwrap();
    for (mode, device) in common::modes() {
        let x =
            Tensor::<1>::from_floats(xs.as_slice(), &device).reshape([1, 1, n]);
        let (y, grad) = run(gelu, &x, &Tensor::ones([1, 1, n], &device));
        // libtorch runs PyTorch's own GELU, whose erf is within 3.6e-7; on
        // AVX-512 (a 2-core AMD EPYC Zen 4, 2026-12-06) it was 5.7e-7 off
        // at -3.8125.
        let atol = if mode.starts_with("flex") { 2e-7 } else { 1e-6 };
        let mut checks = vec![("value", y, &want_y)];
        checks.extend(grad.map(|g| ("gradient", g, &want_grad)));
        for (what, ours, want) in checks {
            for ((&x, &a), &b) in xs.iter().zip(&ours).zip(want) {
                let gap = (a as f64 - b).abs();
                assert!(
                    gap <= atol + 2e-7 * b.abs(),
                    "{mode}: GELU {what} at {x}: {a} against {b} (gap {gap:.1e})"
                );
            }
        }
        let special = Tensor::<1>::from_floats(
            [f32::INFINITY, f32::NEG_INFINITY, f32::NAN],
            &device,
        );
        let [inf, neg_inf, nan] =
            gelu(special).try_into_vec_as::<f32>().unwrap()[..]
        else {
            panic!("three values")
        };
        // PyTorch's vectorised GELU gives NaN for +∞ on AVX-512 (the same
        // Zen 4) where burn's form, and PyTorch on AVX2, give +∞.
        let inf_ok = inf == f32::INFINITY
            || (!mode.starts_with("flex") && inf.is_nan());
        assert!(
            inf_ok && neg_inf.is_nan() && nan.is_nan(),
            "{mode}: GELU(+∞, −∞, NaN) = ({inf}, {neg_inf}, {nan})"
        );
    }
}

/// Values and gradients (x, γ, β) of Σ LN(x) ⊙ u, by `ln` on `x`'s device.
fn layer_norm_run(
    x: &Tensor<3>,
    params: [&Tensor<1>; 2],
    u: &Tensor<3>,
    ln: impl Fn(Tensor<3>, Tensor<1>, Tensor<1>) -> Tensor<3>,
) -> Vec<Vec<f64>> {
    let [gamma, beta] = params.map(|p| p.clone().require_grad());
    let x = x.clone().require_grad();
    let y = ln(x.clone(), gamma.clone(), beta.clone());
    let grads = (y.clone() * u.clone()).sum().backward();
    let grad = |t: Option<Tensor<3>>| t.unwrap().cast(DType::F64);
    let vec =
        |t: Tensor<1>| t.cast(DType::F64).try_into_vec_as::<f64>().unwrap();
    vec![
        vec(y.cast(DType::F64).flatten(0, 2)),
        vec(grad(x.grad(&grads)).flatten(0, 2)),
        vec(gamma.grad(&grads).unwrap()),
        vec(beta.grad(&grads).unwrap()),
    ]
}

#[test]
fn layer_norm_is_burn_s_layer_within_tolerance() {
    let _turn = RANDOM.lock().unwrap_or_else(|e| e.into_inner());
    let reference = Device::flex().autodiff();
    // Widths 1 (every output β), 7, 96 (the ViT's) and 130 (past the lanes);
    // one row constant (variance 0), one far from 0 (mean 30, where a
    // one-pass variance, E[x²] − E[x]², loses ~5e-5 in f32).
    for (seed, &[b, n, d]) in [[2, 3, 1], [3, 4, 7], [2, 17, 96], [1, 3, 130]]
        .iter()
        .enumerate()
    {
        let seed = seed as u64;
        let mut xs = randn([b, n, d], seed, &Device::flex())
            .try_into_vec_as::<f32>()
            .unwrap();
        xs[..d].fill(0.5);
        xs[d..2 * d].iter_mut().for_each(|v| *v += 30.0);
        let data = |v: Vec<f32>, shape: Vec<usize>| TensorData::new(v, shape);
        let u = randn([b, n, d], seed + 10, &Device::flex())
            .try_into_vec_as::<f32>()
            .unwrap();
        let p = randn([2, d], seed + 20, &Device::flex())
            .try_into_vec_as::<f32>()
            .unwrap();
        let tensors = |device: &Device, dtype| {
            let t3 = |v: &[f32]| {
                Tensor::<3>::from_data(data(v.to_vec(), vec![b, n, d]), device)
                    .cast(dtype)
            };
            let t1 = |v: &[f32]| {
                Tensor::<1>::from_data(data(v.to_vec(), vec![d]), device)
                    .cast(dtype)
            };
            (t3(&xs), [t1(&p[..d]), t1(&p[d..])], t3(&u))
        };
        let (x, [g, bt], u_ref) = tensors(&reference, DType::F64);
        let burn_ln = |x: Tensor<3>, gamma: Tensor<1>, beta: Tensor<1>| {
            let mut ln = burn::nn::LayerNormConfig::new(d).init(&reference);
            ln.gamma = Param::from_tensor(gamma);
            ln.beta = Some(Param::from_tensor(beta));
            ln.forward(x)
        };
        let want = layer_norm_run(&x, [&g, &bt], &u_ref, burn_ln);
        for (mode, device) in common::modes() {
            let (x, [g, bt], u) = tensors(&device, DType::F32);
            if !device.is_autodiff() {
                let y = kernels::layer_norm(x, g, bt, 1e-5);
                let y = y
                    .cast(DType::F64)
                    .flatten::<1>(0, 2)
                    .try_into_vec_as::<f64>()
                    .unwrap();
                assert_within("layer norm value", &mode, &y, &want[0]);
                continue;
            }
            let ours = layer_norm_run(&x, [&g, &bt], &u, |x, g, b| {
                kernels::layer_norm(x, g, b, 1e-5)
            });
            for ((what, a), b) in
                ["value", "∂x", "∂γ", "∂β"].iter().zip(&ours).zip(&want)
            {
                assert_within(
                    &format!("layer norm {what} (d = {d})"),
                    &mode,
                    a,
                    b,
                );
            }
        }
    }
}

/// |a − b| ≤ 1e-5 + 1e-5·|b| element by element.
fn assert_within(what: &str, mode: &str, a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        let gap = (x - y).abs();
        assert!(
            gap <= 1e-5 + 1e-5 * y.abs(),
            "{mode}: {what}[{i}]: {x} against burn's {y} (gap {gap:.1e})"
        );
    }
}

#[test]
fn add_and_norm_is_the_layer_norm_of_the_sum() {
    let _turn = RANDOM.lock().unwrap_or_else(|e| e.into_inner());
    for (mode, device) in common::modes() {
        let x = randn([2, 5, 24], 1, &device);
        let y = randn([2, 5, 24], 2, &device);
        let gamma = randn([24], 3, &device);
        let beta = randn([24], 4, &device);
        let u = randn([2, 5, 24], 5, &device);
        let grads = |fused: bool| {
            let track = |t: &Tensor<3>| match device.is_autodiff() {
                true => t.clone().require_grad(),
                false => t.clone(),
            };
            let [x, y] = [&x, &y].map(track);
            let [g, b] = [&gamma, &beta].map(|t| match device.is_autodiff() {
                true => t.clone().require_grad(),
                false => t.clone(),
            });
            let out = match fused {
                true => kernels::add_layer_norm(
                    x.clone(),
                    y.clone(),
                    g.clone(),
                    b.clone(),
                    1e-5,
                ),
                false => kernels::layer_norm(
                    x.clone() + y.clone(),
                    g.clone(),
                    b.clone(),
                    1e-5,
                ),
            };
            let mut all = vec![out.clone().try_into_vec_as::<f32>().unwrap()];
            if device.is_autodiff() {
                let grads = (out * u.clone()).sum().backward();
                let vec = |t: Tensor<1>| t.try_into_vec_as::<f32>().unwrap();
                all.push(vec(x.grad(&grads).unwrap().flatten(0, 2)));
                all.push(vec(y.grad(&grads).unwrap().flatten(0, 2)));
                all.push(vec(g.grad(&grads).unwrap()));
                all.push(vec(b.grad(&grads).unwrap()));
            }
            all
        };
        // The same operations in the same order: equal bit for bit.
        assert_eq!(grads(true), grads(false), "{mode}");
    }
}
