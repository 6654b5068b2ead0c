//! Properties of `masked_softmax` for random shapes and valid lengths, and
//! the errors of the attention layers.

mod common;

use burn::tensor::Device;
use common::panic_message;
use d2l_attention::attention_scoring::*;
use d2l_attention::random::{randn, seeded_linear};
use proptest::prelude::*;

/// Valid lengths (b, q), row-major, as a per-query [`ValidLens`].
fn per_query(lens: &[usize], q: usize, device: &Device) -> ValidLens {
    let rows: Vec<&[usize]> = lens.chunks(q).collect();
    ValidLens::per_query(&rows, device)
}

/// (batch_size, num_queries, num_keys, valid lengths, seed, another valid length row).
fn case()
-> impl Strategy<Value = (usize, usize, usize, Vec<usize>, u64, Vec<usize>)> {
    (1usize..4, 1usize..4, 1usize..7, any::<u64>()).prop_flat_map(
        |(b, q, k, seed)| {
            let lens = proptest::collection::vec(0..=k, b * q);
            let other = proptest::collection::vec(0..=k, b * q);
            (Just(b), Just(q), Just(k), lens, Just(seed), other)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn rows_are_distributions_over_valid_keys((b, q, k, lens, seed, other) in case()) {
        let device = Device::flex();
        let scores = randn([b, q, k], seed, &device) * 3.0;
        let weights = masked_softmax(scores.clone(), Some(&per_query(&lens, q, &device)));
        let w = weights.try_into_vec_as::<f32>().unwrap();
        for (row, &len) in w.chunks(k).zip(&lens) {
            if len == 0 {
                // Fully masked: uniform, as d2l's −1e6 fill gives.
                prop_assert!(row.iter().all(|&x| (x - 1.0 / k as f32).abs() < 1e-6), "{row:?}");
            } else {
                prop_assert!(row[len..].iter().all(|&x| x == 0.0), "masked weights must be exactly 0: {row:?}");
                prop_assert!(row[..len].iter().all(|&x| x > 0.0));
                prop_assert!((row[..len].iter().sum::<f32>() - 1.0).abs() < 1e-5);
            }
        }
        // Batch element i does not see the valid lengths of the others.
        let mut mixed = other.clone();
        mixed[..q].copy_from_slice(&lens[..q]);
        let again = masked_softmax(scores, Some(&per_query(&mixed, q, &device)));
        let again = again.try_into_vec_as::<f32>().unwrap();
        prop_assert_eq!(&again[..q * k], &w[..q * k]);
    }
}

#[test]
fn valid_lens_out_of_range_is_refused_naming_the_argument() {
    let device = Device::flex();
    let scores = randn([2, 2, 4], 0, &device);
    let msg = panic_message(|| {
        masked_softmax(scores.clone(), Some(&ValidLens::new(&[2, 5], &device)));
    });
    assert_eq!(
        msg,
        "`valid_lens` holds 5 at [1]; each valid length must be in 0..=4 (the number of keys)"
    );
    let lens = ValidLens::per_query(&[[1, 2], [4, 7]], &device);
    let msg = panic_message(|| {
        masked_softmax(scores, Some(&lens));
    });
    assert!(msg.starts_with("`valid_lens` holds 7 at [1, 1];"), "{msg}");
}

#[test]
fn valid_lens_of_the_wrong_shape_is_refused() {
    let device = Device::flex();
    let scores = randn([2, 3, 4], 0, &device);
    let msg = panic_message(|| {
        masked_softmax(
            scores.clone(),
            Some(&ValidLens::new(&[1, 2, 3], &device)),
        );
    });
    assert_eq!(msg, "`valid_lens` has shape [3], expected (2,) or (2, 3)");
    let lens = ValidLens::per_query(&[[1, 2], [3, 4]], &device);
    let msg = panic_message(|| {
        masked_softmax(scores, Some(&lens));
    });
    assert_eq!(
        msg,
        "`valid_lens` has shape [2, 2], expected (2,) or (2, 3)"
    );
}

#[test]
fn ragged_per_query_lengths_are_refused() {
    let device = Device::flex();
    let rows = [vec![1, 2], vec![3]];
    let msg = panic_message(|| {
        ValidLens::per_query(&rows, &device);
    });
    assert_eq!(msg, "`lens` has rows of different lengths");
}

#[test]
fn keys_and_values_of_different_counts_name_both_shapes() {
    let device = Device::flex();
    let (queries, keys, values) = (
        randn([2, 1, 3], 0, &device),
        randn([2, 10, 3], 1, &device),
        randn([2, 9, 4], 2, &device),
    );
    let attention = DotProductAttentionConfig::new().init();
    let msg = panic_message(|| {
        attention.forward(queries.clone(), keys.clone(), values.clone(), None);
    });
    assert_eq!(
        msg,
        "`keys` [2, 10, 3] and `values` [2, 9, 4] disagree: one value is needed per key (dimension 1)"
    );
    let additive = AdditiveAttentionConfig::new(3, 3, 4).init(&device);
    let msg = panic_message(|| {
        additive.forward(queries, keys, values, None);
    });
    assert!(msg.contains("`values` [2, 9, 4]"), "{msg}");
}

#[test]
fn dot_product_needs_equal_query_and_key_sizes_and_names_both() {
    let device = Device::flex();
    let attention = DotProductAttentionConfig::new().init();
    let msg = panic_message(|| {
        attention.forward(
            randn([2, 1, 20], 0, &device),
            randn([2, 10, 2], 1, &device),
            randn([2, 10, 4], 2, &device),
            None,
        );
    });
    assert!(
        msg.starts_with("`queries` [2, 1, 20] and `keys` [2, 10, 2] disagree"),
        "{msg}"
    );
}

#[test]
fn bilinear_scores_name_the_argument_that_does_not_fit() {
    let device = Device::flex();
    let w = randn([2, 3], 0, &device); // (key_size 2, query_size 3)
    let msg = panic_message(|| {
        bilinear_scores(
            randn([1, 1, 3], 1, &device),
            randn([3, 4, 2], 2, &device),
            w.clone(),
        );
    });
    assert!(msg.contains("batch sizes differ"), "{msg}");
    let msg = panic_message(|| {
        bilinear_scores(
            randn([1, 1, 3], 1, &device),
            randn([1, 4, 5], 2, &device),
            w,
        );
    });
    assert_eq!(
        msg,
        "`w` has shape [2, 3], expected (key_size, query_size) = (5, 3)"
    );
}

#[test]
fn additive_attention_checks_the_configured_sizes() {
    let device = Device::flex();
    let attention = AdditiveAttentionConfig::new(2, 20, 8).init(&device);
    let msg = panic_message(|| {
        attention.forward(
            randn([2, 1, 19], 0, &device),
            randn([2, 10, 2], 1, &device),
            randn([2, 10, 4], 2, &device),
            None,
        );
    });
    assert_eq!(
        msg,
        "`queries` has shape [2, 1, 19], expected vectors of size 20 (dimension 2)"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// `forward` and the decoder's path (keys projected once, tanh as
    /// 2σ(2x) − 1) give the weights and output of `masked_softmax` over the
    /// tanh `scores`.
    #[test]
    fn forward_and_attend_agree_with_masked_softmax_of_scores(
        (b, q, k, seed) in (1usize..4, 1usize..4, 1usize..7, any::<u64>()),
        lens in proptest::collection::vec(0usize..7, 3),
    ) {
        let device = Device::flex();
        let lens: Vec<usize> = lens[..b].iter().map(|&l| l.min(k)).collect();
        let attention = AdditiveAttention {
            w_k: seeded_linear(3, 8, seed, &device),
            w_q: seeded_linear(5, 8, seed ^ 1, &device),
            w_v: seeded_linear(8, 1, seed ^ 2, &device),
            dropout: burn::nn::DropoutConfig::new(0.0).init(),
        };
        let queries = randn([b, q, 5], seed ^ 3, &device) * 2.0;
        let keys = randn([b, k, 3], seed ^ 4, &device) * 2.0;
        let values = randn([b, k, 2], seed ^ 5, &device);
        let valid_lens = ValidLens::new(&lens, &device);
        let weights = masked_softmax(
            attention.scores(queries.clone(), keys.clone()),
            Some(&valid_lens),
        );
        let output = weights.clone().matmul(values.clone());
        let forward = attention
            .forward(queries.clone(), keys.clone(), values.clone(), Some(&valid_lens));
        let projected = attention.project_keys(keys, values, Some(valid_lens));
        let fast = attention.attend(queries, &projected);
        for (what, a, b) in [
            ("forward weights", weights.clone(), forward.attention_weights.tensor()),
            ("forward output", output.clone(), forward.output),
            ("attend weights", weights, fast.attention_weights.tensor()),
            ("attend output", output, fast.output),
        ] {
            let (a, b) = (a.try_into_vec_as::<f32>().unwrap(), b.try_into_vec_as::<f32>().unwrap());
            for (x, y) in a.iter().zip(&b) {
                prop_assert!((x - y).abs() <= 2e-6 + 2e-6 * x.abs(), "{what}: {x} vs {y}");
                prop_assert_eq!(*x == 0.0, *y == 0.0, "{} masking differs: {} vs {}", what, x, y);
            }
        }
    }
}

/// A row whose every key is hidden is uniform in f16 as in f32, by valid
/// lengths and by mask (d2l's −10⁶ would be −∞ in f16, and the row NaN).
#[test]
fn fully_masked_rows_are_uniform_in_f16() {
    use burn::tensor::{Bool, DType, Tensor, TensorData};
    let device = Device::flex();
    let scores = Tensor::<3>::from_floats([[[0.5, -1.0, 2.0]]], &device)
        .cast(DType::F16);
    let by_lens =
        masked_softmax(scores.clone(), Some(&ValidLens::new(&[0], &device)));
    let hidden = Tensor::<3, Bool>::from_data(
        TensorData::new(vec![true; 3], [1, 1, 3]),
        &device,
    );
    let by_mask = masked_softmax_by(scores, Some(hidden));
    for weights in [by_lens, by_mask] {
        let w = weights.cast(DType::F32).try_into_vec_as::<f32>().unwrap();
        for x in w {
            assert!((x - 1.0 / 3.0).abs() < 1e-3, "{x}");
        }
    }
}

/// From `FUSED_MIN_KEYS` keys on plain flex (`FUSED_MIN_TRAINING_KEYS`
/// under autodiff), `DotProductAttention` pools through the fused
/// operation: the same output and query gradient as d2l's form within
/// 1e-5, and the same weights (built on request, bit for bit). A NaN among
/// the masked values shows which path ran: d2l's weights of 0 multiply it
/// into the output, the fused operation never reads it.
#[test]
fn dot_product_attention_takes_the_fused_path_where_it_pays() {
    use burn::tensor::Tensor;
    use d2l_attention::kernels::{FUSED_MIN_KEYS, FUSED_MIN_TRAINING_KEYS};
    let layer = DotProductAttentionConfig::new().init();
    let plain = (Device::flex(), FUSED_MIN_KEYS);
    let training = (Device::flex().autodiff(), FUSED_MIN_TRAINING_KEYS);
    for (device, min_keys) in [plain, training] {
        for n_k in [min_keys - 1, min_keys] {
            let queries = randn([2, 5, 16], 1, &device);
            let queries = match device.is_autodiff() {
                true => queries.require_grad(),
                false => queries,
            };
            let keys = randn([2, n_k, 16], 2, &device);
            let values = randn([2, n_k, 3], 3, &device);
            let lens = ValidLens::new(&[n_k - 2, 7], &device);
            let (q, k, v) = (queries.clone(), keys.clone(), values.clone());
            let attended =
                layer.forward(q.clone(), k.clone(), v.clone(), Some(&lens));
            let weights = layer.weights(q, k, Some(&lens));
            let expected = weights.clone().matmul(v);
            let gap = |a: Tensor<3>, b: Tensor<3>| {
                (a - b).abs().max().into_scalar::<f32>()
            };
            let output_gap = gap(attended.output.clone(), expected.clone());
            assert!(output_gap < 1e-5, "{n_k} keys: output gap {output_gap}");
            if device.is_autodiff() {
                let grad = |y: Tensor<3>| {
                    let u = values.clone().narrow(1, 0, 5);
                    queries.grad(&(y * u).sum().backward()).expect("a gradient")
                };
                let grad_gap = gap(grad(attended.output), grad(expected));
                assert!(grad_gap < 1e-5, "{n_k} keys: gradient gap {grad_gap}");
            }
            assert_eq!(
                attended.attention_weights.tensor().into_data(),
                weights.into_data(),
                "{n_k} keys"
            );
            // NaN in the last value of every sequence, a key both masks hide.
            let nan = Tensor::<3>::full([2, 1, 3], f32::NAN, &device);
            let values =
                Tensor::cat(vec![values.narrow(1, 0, n_k - 1), nan], 1);
            let output = layer
                .forward(queries.clone(), keys, values, Some(&lens))
                .output;
            let has_nan = output.is_nan().any().into_scalar::<bool>();
            assert_eq!(has_nan, n_k < min_keys, "{n_k} keys");
        }
    }
}
