//! Properties of `masked_softmax` for random shapes and valid lengths, and
//! the errors of the attention layers.

use burn::tensor::{Device, Int, Tensor, TensorData};
use d2l_attention::attention_scoring::*;
use d2l_attention::listings::scoring::seeded_linear;
use d2l_attention::random::randn;
use proptest::prelude::*;

fn lens_tensor(
    lens: &[i64],
    b: usize,
    q: usize,
    device: &Device,
) -> Tensor<2, Int> {
    Tensor::from_data(TensorData::new(lens.to_vec(), [b, q]), device)
}

/// (batch_size, num_queries, num_keys, valid lengths, seed, another valid length row).
fn case()
-> impl Strategy<Value = (usize, usize, usize, Vec<i64>, u64, Vec<i64>)> {
    (1usize..4, 1usize..4, 1usize..7, any::<u64>()).prop_flat_map(
        |(b, q, k, seed)| {
            let lens = proptest::collection::vec(0..=k as i64, b * q);
            let other = proptest::collection::vec(0..=k as i64, b * q);
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
        let weights = masked_softmax(scores.clone(), Some(lens_tensor(&lens, b, q, &device).into())).unwrap();
        let w = weights.try_into_vec_as::<f32>().unwrap();
        for (row, &len) in w.chunks(k).zip(&lens) {
            if len == 0 {
                // Fully masked: uniform, as d2l's −1e6 fill gives.
                prop_assert!(row.iter().all(|&x| (x - 1.0 / k as f32).abs() < 1e-6), "{row:?}");
            } else {
                let len = len as usize;
                prop_assert!(row[len..].iter().all(|&x| x == 0.0), "masked weights must be exactly 0: {row:?}");
                prop_assert!(row[..len].iter().all(|&x| x > 0.0));
                prop_assert!((row[..len].iter().sum::<f32>() - 1.0).abs() < 1e-5);
            }
        }
        // Batch element i does not see the valid lengths of the others.
        let mut mixed = other.clone();
        mixed[..q].copy_from_slice(&lens[..q]);
        let again = masked_softmax(scores, Some(lens_tensor(&mixed, b, q, &device).into())).unwrap();
        let again = again.try_into_vec_as::<f32>().unwrap();
        prop_assert_eq!(&again[..q * k], &w[..q * k]);
    }
}

#[test]
fn valid_lens_out_of_range_is_refused() {
    let device = Device::flex();
    let scores = randn([2, 2, 4], 0, &device);
    for (lens, bad, at) in [([2i64, 5], 5i64, 1), ([-1, 3], -1, 0)] {
        let err = masked_softmax(
            scores.clone(),
            Some(Tensor::<1, Int>::from_ints(lens, &device).into()),
        )
        .unwrap_err();
        assert_eq!(
            err,
            AttentionError::ValidLen {
                value: bad,
                index: vec![at],
                num_keys: 4
            }
        );
        assert!(
            err.to_string().contains("`valid_lens`")
                && err.to_string().contains("0..=4"),
            "{err}"
        );
    }
    let err = masked_softmax(
        scores,
        Some(Tensor::<2, Int>::from_ints([[1, 2], [4, 7]], &device).into()),
    )
    .unwrap_err();
    assert_eq!(
        err,
        AttentionError::ValidLen {
            value: 7,
            index: vec![1, 1],
            num_keys: 4
        }
    );
}

#[test]
fn valid_lens_of_the_wrong_shape_is_refused() {
    let device = Device::flex();
    let scores = randn([2, 3, 4], 0, &device);
    let err = masked_softmax(
        scores.clone(),
        Some(Tensor::<1, Int>::from_ints([1, 2, 3], &device).into()),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`valid_lens` has shape [3], expected (2,) or (2, 3)"
    );
    let err = masked_softmax(
        scores,
        Some(Tensor::<2, Int>::from_ints([[1, 2], [3, 4]], &device).into()),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`valid_lens` has shape [2, 2], expected (2,) or (2, 3)"
    );
}

#[test]
fn keys_and_values_of_different_counts_name_both_shapes() {
    let device = Device::flex();
    let attention = DotProductAttentionConfig::new().init();
    let err = attention
        .forward(
            randn([2, 1, 3], 0, &device),
            randn([2, 10, 3], 1, &device),
            randn([2, 9, 4], 2, &device),
            None,
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("`keys` [2, 10, 3]") && msg.contains("`values` [2, 9, 4]"),
        "{msg}"
    );
    let additive = AdditiveAttentionConfig::new(3, 3, 4).init(&device);
    let err = additive
        .forward(
            randn([2, 1, 3], 0, &device),
            randn([2, 10, 3], 1, &device),
            randn([2, 9, 4], 2, &device),
            None,
        )
        .unwrap_err();
    assert!(err.to_string().contains("[2, 9, 4]"));
}

#[test]
fn dot_product_needs_equal_query_and_key_sizes_and_names_both() {
    let device = Device::flex();
    let attention = DotProductAttentionConfig::new().init();
    let err = attention
        .forward(
            randn([2, 1, 20], 0, &device),
            randn([2, 10, 2], 1, &device),
            randn([2, 10, 4], 2, &device),
            None,
        )
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("`queries` [2, 1, 20]")
            && msg.contains("`keys` [2, 10, 2]"),
        "{msg}"
    );
}

#[test]
fn bilinear_scores_name_the_argument_that_does_not_fit() {
    let device = Device::flex();
    let w = randn([2, 3], 0, &device); // (key_size 2, query_size 3)
    let err = bilinear_scores(
        randn([1, 1, 3], 1, &device),
        randn([3, 4, 2], 2, &device),
        w.clone(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("batch sizes differ"), "{err}");
    let err = bilinear_scores(
        randn([1, 1, 3], 1, &device),
        randn([1, 4, 5], 2, &device),
        w,
    )
    .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("`w` [2, 3] and `keys` [1, 4, 5]"),
        "{err}"
    );
}

#[test]
fn additive_attention_checks_the_configured_sizes() {
    let device = Device::flex();
    let attention = AdditiveAttentionConfig::new(2, 20, 8).init(&device);
    let err = attention
        .forward(
            randn([2, 1, 19], 0, &device),
            randn([2, 10, 2], 1, &device),
            randn([2, 10, 4], 2, &device),
            None,
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`queries` has shape [2, 1, 19], expected query_size 20"
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
        lens in proptest::collection::vec(0i64..7, 3),
    ) {
        let device = Device::flex();
        let lens: Vec<i64> = lens[..b].iter().map(|&l| l.min(k as i64)).collect();
        let attention = AdditiveAttention {
            w_k: seeded_linear(3, 8, seed, &device),
            w_q: seeded_linear(5, 8, seed ^ 1, &device),
            w_v: seeded_linear(8, 1, seed ^ 2, &device),
            dropout: burn::nn::DropoutConfig::new(0.0).init(),
        };
        let queries = randn([b, q, 5], seed ^ 3, &device) * 2.0;
        let keys = randn([b, k, 3], seed ^ 4, &device) * 2.0;
        let values = randn([b, k, 2], seed ^ 5, &device);
        let valid_lens = Tensor::<1, Int>::from_data(TensorData::new(lens, [b]), &device);
        let weights = masked_softmax(
            attention.scores(queries.clone(), keys.clone()),
            Some(valid_lens.clone().into()),
        )
        .unwrap();
        let output = weights.clone().matmul(values.clone());
        let forward = attention
            .forward(queries.clone(), keys.clone(), values.clone(), Some(valid_lens.clone().into()))
            .unwrap();
        let projected = attention.project_keys(keys, values, Some(valid_lens)).unwrap();
        let fast = attention.attend(queries, &projected).unwrap();
        for (what, a, b) in [
            ("forward weights", weights.clone(), forward.attention_weights),
            ("forward output", output.clone(), forward.output),
            ("attend weights", weights, fast.attention_weights),
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
