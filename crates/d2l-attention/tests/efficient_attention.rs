//! The chapter "Efficient Attention": the online softmax and the readable
//! tiled attention against d2l's forms, grouped-query attention against
//! PyTorch's `scaled_dot_product_attention(..., enable_gqa=True)` and
//! against d2l's multi-head attention, and the rotary embedding against a
//! transcription of Meta's Llama (`golden/grouped_query_attention.json`,
//! `golden/rotary.json`, made by `python/make_golden.py`), and decoding
//! with a cache of projected keys and values against the whole pass.

mod common;

use burn::module::Param;
use burn::nn::Linear;
use burn::optim::GradientsParams;
use burn::tensor::activation::softmax;
use burn::tensor::{Device, Int, Tensor};
use common::{
    assert_close, devices, float, golden, linear, modes, panic_message,
};
use d2l_attention::attention_scoring::{
    DotProductAttentionConfig, MASK_VALUE, ValidLens,
};
use d2l_attention::efficient_attention::*;
use d2l_attention::kernels::AttentionMask;
use d2l_attention::multihead_attention::{
    MultiHeadAttention, MultiHeadAttentionConfig,
};
use d2l_attention::pretraining::CausalLm;
use d2l_attention::random::randn;
use d2l_attention::transformer::TransformerConfig;

fn values<const D: usize>(x: Tensor<D>) -> Vec<f32> {
    x.try_into_vec_as::<f32>().unwrap()
}

/// |a − b| ≤ atol + rtol·|b| everywhere.
fn assert_near(what: &str, a: &[f32], b: &[f32], atol: f32, rtol: f32) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= atol + rtol * y.abs(),
            "{what}[{i}]: {x} against {y}"
        );
    }
}

/// Every split of a row into blocks gives softmax; rows of large, small
/// and spread-out scores included.
#[test]
fn online_softmax_is_softmax_for_every_block_size() {
    let device = Device::flex();
    let x = randn([3, 37], 0, &device);
    let scale = Tensor::<2>::from_data([[1.0], [30.0], [1e-3]], &device);
    let x = x * scale;
    let want = values(softmax(x.clone(), 1));
    for block in (1..=37).chain([64]) {
        let got = values(online_softmax(x.clone(), block));
        assert_near(&format!("block {block}"), &got, &want, 1e-6, 1e-6);
    }
}

/// A row of d2l's fill is uniform, as `masked_softmax` makes it; a row of
/// −∞ is NaN (its running maximum is −∞, and −∞ − (−∞) is NaN).
#[test]
fn online_softmax_of_masked_rows() {
    let device = Device::flex();
    let x = Tensor::<2>::from_data(
        [[MASK_VALUE; 5], [f32::NEG_INFINITY; 5]],
        &device,
    );
    let y = values(online_softmax(x, 2));
    assert!(y[..5].iter().all(|&w| w == 0.2), "{y:?}");
    assert!(y[5..].iter().all(|w| w.is_nan()), "{y:?}");
    let message = panic_message(|| {
        online_softmax(Tensor::<2>::zeros([1, 3], &device), 0);
    });
    assert!(message.contains("`block` is 0"), "{message}");
}

/// The tiled forward pass equals d2l's `DotProductAttention` for valid
/// lengths per sequence (0 included: the uniform row), per query (d2l's
/// causal decoder lengths) and none, for block sizes that divide the
/// sequences and sizes that do not, on every backend.
#[test]
fn tiled_attention_is_d2l_s_dot_product_attention() {
    for (backend, device) in devices() {
        let (n_q, n_k) = (7, 9);
        let queries = randn([2, n_q, 4], 1, &device);
        let keys = randn([2, n_k, 4], 2, &device);
        let values_ = randn([2, n_k, 3], 3, &device);
        let causal: Vec<Vec<usize>> = (0..2)
            .map(|_| (0..n_q).map(|i| n_k - n_q + i + 1).collect())
            .collect();
        let cases = [
            ("none", None),
            ("per sequence", Some(ValidLens::new(&[4, 0], &device))),
            ("causal", Some(ValidLens::per_query(&causal, &device))),
        ];
        let d2l = DotProductAttentionConfig::new().init();
        for (name, lens) in &cases {
            let want = d2l
                .forward(
                    queries.clone(),
                    keys.clone(),
                    values_.clone(),
                    lens.as_ref(),
                )
                .output;
            let want = values(want);
            for (block_q, block_k) in [(1, 1), (2, 4), (3, 2), (7, 9), (64, 64)]
            {
                let got = tiled_attention(
                    queries.clone(),
                    keys.clone(),
                    values_.clone(),
                    lens.as_ref(),
                    block_q,
                    block_k,
                );
                assert_near(
                    &format!("{backend} {name} blocks {block_q}×{block_k}"),
                    &values(got),
                    &want,
                    1e-5,
                    1e-5,
                );
            }
        }
    }
}

#[test]
fn tiled_attention_refuses_bad_arguments() {
    let device = Device::flex();
    let x = Tensor::<3>::zeros([2, 3, 4], &device);
    let cases: [(&str, Box<dyn FnOnce()>); 4] = [
        (
            "`block_q` (0)",
            Box::new(|| {
                tiled_attention(x.clone(), x.clone(), x.clone(), None, 0, 1);
            }),
        ),
        (
            "`keys` [2, 3, 5]",
            Box::new(|| {
                let keys = Tensor::<3>::zeros([2, 3, 5], &device);
                tiled_attention(x.clone(), keys.clone(), keys, None, 1, 1);
            }),
        ),
        (
            "at least one query, one key and one feature",
            Box::new(|| {
                let none = Tensor::<3>::zeros([2, 0, 4], &device);
                tiled_attention(x.clone(), none.clone(), none, None, 1, 1);
            }),
        ),
        (
            "`valid_lens`",
            Box::new(|| {
                let lens = ValidLens::new(&[4, 1], &device);
                tiled_attention(
                    x.clone(),
                    x.clone(),
                    x.clone(),
                    Some(&lens),
                    1,
                    1,
                );
            }),
        ),
    ];
    for (name, f) in cases {
        let message = panic_message(f);
        assert!(message.contains(name), "{name}: {message}");
    }
}

/// Against PyTorch's projections and `scaled_dot_product_attention(...,
/// enable_gqa=True)` in f64: output and the gradients of the inputs and
/// of all four weights, with valid lengths (2 key/value heads for 4 query
/// heads) and causal (1, multi-query), in every mode.
#[test]
fn grouped_query_attention_matches_pytorch() {
    let g = golden("grouped_query_attention.json");
    for (mode, device) in modes() {
        for name in ["valid_lens", "causal"] {
            let case = &g[name];
            let mut model = GroupedQueryAttentionConfig::new(
                16,
                4,
                case["kv_heads"].as_u64().unwrap() as usize,
            )
            .init(&device);
            model.w_q = linear(&case["W_q"], &device);
            model.w_k = linear(&case["W_k"], &device);
            model.w_v = linear(&case["W_v"], &device);
            model.w_o = linear(&case["W_o"], &device);
            let input = |key| {
                let x = float::<3>(&case[key], &device);
                if device.is_autodiff() {
                    x.require_grad()
                } else {
                    x
                }
            };
            let (queries, kv) = (input("queries"), input("keys_values"));
            let lens = case
                .get("valid_lens")
                .map(|l| common::valid_lens(l, &device));
            let mask = match &lens {
                Some(lens) => AttentionMask::ValidLens(lens),
                None => AttentionMask::Causal,
            };
            let out =
                model.forward(queries.clone(), kv.clone(), kv.clone(), mask);
            let what = |x: &str| format!("{mode} {name} {x}");
            assert_close(
                &what("output"),
                out.clone(),
                &case["output"],
                1e-5,
                1e-5,
            );
            if !device.is_autodiff() {
                continue;
            }
            let r = float::<3>(&case["r"], &device);
            let grads = (out * r).sum().backward();
            let grad = |x: &Tensor<3>| x.grad(&grads).unwrap();
            assert_close(
                &what("d_queries"),
                grad(&queries),
                &case["d_queries"],
                1e-5,
                1e-5,
            );
            assert_close(
                &what("d_keys_values"),
                grad(&kv),
                &case["d_keys_values"],
                1e-5,
                1e-5,
            );
            let params = GradientsParams::from_grads(grads, &model);
            for (w, key) in [
                (&model.w_q, "dW_q"),
                (&model.w_k, "dW_k"),
                (&model.w_v, "dW_v"),
                (&model.w_o, "dW_o"),
            ] {
                let dw = params.get::<2>(w.weight.id).unwrap().transpose();
                assert_close(&what(key), dw, &case[key], 1e-5, 1e-5);
            }
        }
    }
}

/// d2l's multi-head attention with `model`'s projections, W_k and W_v
/// widened so that query head h has key/value head h / (heads / kv_heads).
fn as_multi_head(
    model: &GroupedQueryAttention,
    device: &Device,
) -> MultiHeadAttention {
    let (heads, groups) = (model.num_heads, model.kv_heads);
    let num_hiddens = model.w_q.weight.dims()[1];
    let head_size = num_hiddens / heads;
    let widen = |w: &Linear| {
        let blocks = (0..heads)
            .map(|h| {
                w.weight.val().narrow(
                    1,
                    h / (heads / groups) * head_size,
                    head_size,
                )
            })
            .collect();
        Linear {
            weight: Param::from_tensor(Tensor::cat(blocks, 1)),
            bias: None,
        }
    };
    let mut mha = MultiHeadAttentionConfig::new(
        num_hiddens,
        num_hiddens,
        num_hiddens,
        num_hiddens,
        heads,
    )
    .init(device);
    mha.w_q = model.w_q.clone();
    mha.w_k = widen(&model.w_k);
    mha.w_v = widen(&model.w_v);
    mha.w_o = model.w_o.clone();
    mha
}

/// With as many key/value heads as query heads the layer is d2l's
/// multi-head attention; with fewer, it is multi-head attention whose
/// heads in one group share their keys and values (every kv_heads that
/// divides 8, valid lengths with a 0).
#[test]
fn grouped_query_attention_is_multi_head_attention_with_shared_keys() {
    let device = Device::flex();
    let x = randn([2, 5, 16], 4, &device);
    let y = randn([2, 6, 16], 5, &device);
    let lens = ValidLens::new(&[6, 0], &device);
    for kv_heads in [8, 4, 2, 1] {
        let model =
            GroupedQueryAttentionConfig::new(16, 8, kv_heads).init(&device);
        let got = model.forward(
            x.clone(),
            y.clone(),
            y.clone(),
            AttentionMask::ValidLens(&lens),
        );
        let want = as_multi_head(&model, &device)
            .forward(x.clone(), y.clone(), y.clone(), Some(&lens))
            .output;
        assert_near(
            &format!("kv_heads {kv_heads}"),
            &values(got),
            &values(want),
            1e-5,
            1e-5,
        );
    }
}

#[test]
fn grouped_query_attention_refuses_bad_arguments() {
    let device = Device::flex();
    let message = panic_message(|| {
        GroupedQueryAttentionConfig::new(16, 4, 3).init(&device);
    });
    assert!(
        message.contains("`kv_heads` (3) must divide `num_heads` (4)"),
        "{message}"
    );
    let model = GroupedQueryAttentionConfig::new(16, 4, 2).init(&device);
    let message = panic_message(|| {
        let x = Tensor::<3>::zeros([1, 2, 16], &device);
        let bad = Tensor::<3>::zeros([1, 2, 8], &device);
        model.forward(x.clone(), bad, x, AttentionMask::None);
    });
    assert!(message.contains("`keys` has shape [1, 2, 8]"), "{message}");
    let message = panic_message(|| {
        let x = Tensor::<3>::zeros([1, 2, 16], &device);
        let values = Tensor::<3>::zeros([1, 3, 16], &device);
        model.forward(x.clone(), x, values, AttentionMask::None);
    });
    assert!(
        message.contains("the same number (at least 1) of keys"),
        "{message}"
    );
}

/// Against Meta's Llama `apply_rotary_emb` in f64, at positions 5 … 11.
#[test]
fn rotary_matches_llama() {
    let g = golden("rotary.json");
    let start = g["start"].as_u64().unwrap() as usize;
    for (backend, device) in devices() {
        for (x, want) in [("xq", "xq_out"), ("xk", "xk_out")] {
            // Llama's (batch, seqlen, heads, d) to ours and back
            let input = float::<4>(&g[x], &device).swap_dims(1, 2);
            let out = rotary(input, start).swap_dims(1, 2);
            assert_close(&format!("{backend} {x}"), out, &g[want], 1e-5, 1e-5);
        }
    }
}

/// The score of a query at position m and a key at position n depends on
/// m − n only: shifting both by s changes it by rounding alone.
#[test]
fn rotary_scores_depend_only_on_the_distance() {
    let device = Device::flex();
    let q = randn([1, 1, 1, 16], 6, &device);
    let k = randn([1, 1, 1, 16], 7, &device);
    let score = |m, n| {
        let q = rotary(q.clone(), m);
        let k = rotary(k.clone(), n);
        (q * k).sum().into_scalar::<f32>()
    };
    let size = values(q.clone().powi_scalar(2).sum())
        .first()
        .unwrap()
        .sqrt()
        * values(k.clone().powi_scalar(2).sum())
            .first()
            .unwrap()
            .sqrt();
    for (m, n) in [(0, 0), (3, 0), (0, 5), (7, 2)] {
        let at_start = score(m, n);
        for shift in [1, 10, 100, 1000] {
            let shifted = score(m + shift, n + shift);
            assert!(
                (shifted - at_start).abs() <= 1e-5 * size,
                "({m}, {n}) shifted by {shift}: {shifted} against {at_start}"
            );
        }
    }
    // but the score does depend on the distance
    assert!((score(0, 0) - score(5, 0)).abs() > 1e-3 * size);
    let message = panic_message(|| {
        rotary(Tensor::<4>::zeros([1, 1, 2, 3], &device), 0);
    });
    assert!(message.contains("`x` has shape [1, 1, 2, 3]"), "{message}");
}

/// A decoder-only model of the pretraining chapter's kind, with dropout
/// (inactive outside training), and a batch of token sequences.
fn causal_lm(device: &Device) -> (CausalLm, Tensor<2, Int>) {
    device.seed(7);
    let config = TransformerConfig::new(30, 30).with_num_hiddens(16);
    let model = CausalLm::new(&config, device);
    let tokens = Tensor::<2, Int>::from_ints(
        [[2, 7, 9, 11, 4, 29, 3, 5], [1, 0, 17, 22, 8, 6, 13, 2]],
        device,
    );
    (model, tokens)
}

#[test]
fn decoding_with_projected_keys_and_values_is_the_whole_pass() {
    for (backend, device) in devices() {
        let (model, tokens) = causal_lm(&device);
        let whole = model.forward(tokens.clone(), model.init_state(2)).output;
        // one token at a time, then in chunks of 3, 1 and 4
        for chunks in [vec![1; 8], vec![3, 1, 4]] {
            let mut cache = KvCache::new();
            let mut start = 0;
            for len in chunks {
                let step = tokens.clone().narrow(1, start, len);
                let (scores, next) = decode_cached(&model.decoder, step, cache);
                let want = whole.clone().narrow(1, start, len);
                let what = format!("{backend}: steps {start}..{}", start + len);
                assert_near(&what, &values(scores), &values(want), 1e-5, 1e-5);
                start += len;
                assert_eq!(next.num_steps(), start, "{what}");
                cache = next;
            }
            // 2 blocks × keys and values × 2 sequences × 8 steps × 16 × 4 bytes
            assert_eq!(cache.bytes(), 2 * 2 * 2 * 8 * 16 * 4, "{backend}");
        }
    }
}

#[test]
fn decoding_with_projected_keys_and_values_refuses_other_decoders() {
    let device = Device::flex();
    let (model, tokens) = causal_lm(&device);
    let (_, cache) =
        decode_cached(&model.decoder, tokens.clone(), KvCache::new());
    let one_block = CausalLm::new(
        &TransformerConfig::new(30, 30)
            .with_num_hiddens(16)
            .with_num_layers(1),
        &device,
    );
    let message = panic_message(|| {
        decode_cached(&one_block.decoder, tokens.clone(), cache);
    });
    assert!(message.contains("`cache` holds 2 blocks"), "{message}");
    let seq2seq = TransformerConfig::new(30, 30).init_decoder(&device);
    let message = panic_message(|| {
        decode_cached(&seq2seq, tokens, KvCache::new());
    });
    assert!(message.contains("cross-attention"), "{message}");
}

/// The chapter's decoder-only model in its variants: rotary with 2
/// key/value heads, sinusoids with 4, and a window of 3 keys with one.
fn decoder_lms(device: &Device) -> Vec<(&'static str, DecoderLm)> {
    device.seed(11);
    let config = DecoderLmConfig::new(30).with_num_hiddens(16);
    vec![
        (
            "rotary, 2 kv heads",
            config.clone().with_kv_heads(2).init(device),
        ),
        ("sinusoids", config.clone().with_rotary(false).init(device)),
        (
            "window 3, 1 kv head",
            config.with_kv_heads(1).with_window(Some(3)).init(device),
        ),
    ]
}

/// Decoding one token at a time and in chunks gives the whole pass's
/// scores, for rotary positions (queries and cached keys turned at their
/// own positions), sinusoids, and a window whose cache keeps only its
/// last 3 steps (the rolling buffer).
#[test]
fn decoder_lm_decoding_with_a_cache_is_the_whole_pass() {
    for (backend, device) in devices() {
        let tokens = causal_lm(&device).1;
        for (name, model) in decoder_lms(&device) {
            let whole = model.forward(tokens.clone());
            for chunks in [vec![1; 8], vec![3, 1, 4]] {
                let mut cache = KvCache::new();
                let mut start = 0;
                for len in chunks {
                    let step = tokens.clone().narrow(1, start, len);
                    let (scores, next) = model.decode(step, cache);
                    let want = whole.clone().narrow(1, start, len);
                    let what = format!("{backend}, {name}: steps {start}..");
                    assert_near(
                        &what,
                        &values(scores),
                        &values(want),
                        1e-5,
                        1e-5,
                    );
                    start += len;
                    assert_eq!(next.num_steps(), start, "{what}");
                    cache = next;
                }
                // 2 blocks × keys and values × 2 sequences × steps kept ×
                // bytes per head-step (key/value heads × 4 features × 4 bytes)
                let kept = model.window.unwrap_or(8);
                let per_token = model.cache_bytes_per_token();
                assert_eq!(cache.bytes(), 2 * kept * per_token, "{name}");
            }
        }
    }
}

/// The window hides what lies beyond it: a token outside every query's
/// window in one block changes no score of a one-block model, and a token
/// inside changes them.
#[test]
fn decoder_lm_window_hides_the_tokens_beyond_it() {
    let device = Device::flex();
    device.seed(3);
    let model = DecoderLmConfig::new(30)
        .with_num_hiddens(16)
        .with_num_layers(1)
        .with_window(Some(3))
        .init(&device);
    let tokens = |first: i64, third: i64| {
        Tensor::<2, Int>::from_ints([[first, 9, third, 11, 4, 29]], &device)
    };
    let last = |t: Tensor<2, Int>| values(model.forward(t).narrow(1, 5, 1));
    // position 5 sees positions 3, 4, 5
    assert_eq!(last(tokens(7, 8)), last(tokens(12, 13)));
    let inside = Tensor::<2, Int>::from_ints([[7, 9, 8, 12, 4, 29]], &device);
    assert_ne!(last(tokens(7, 8)), last(inside));
}

/// Bytes per token are 2 · layers · kv_heads · head size · 4, and the
/// position losses average to the pretraining chapter's held-out loss on
/// the same streams.
#[test]
fn decoder_lm_cache_size_and_position_losses() {
    use d2l_attention::machine_translation::Vocab;
    use d2l_attention::pretraining::{LmData, lm_valid_loss};
    let device = Device::flex();
    for kv_heads in [4, 2, 1] {
        let model = DecoderLmConfig::new(30)
            .with_kv_heads(kv_heads)
            .init(&device);
        assert_eq!(model.cache_bytes_per_token(), 2 * 2 * kv_heads * 8 * 4);
    }
    let model = &decoder_lms(&device)[0].1;
    let text: Vec<Vec<usize>> = (0..9)
        .map(|i| (0..i % 4 + 2).map(|j| 6 + (i * j) % 20).collect())
        .collect();
    let valid = streams(&text, 3, 6);
    let losses = position_losses(model, &valid, 2, &device);
    assert_eq!(losses.len(), 5);
    let data = LmData {
        vocab: Vocab::new(&[vec!["a".to_string()]], 1, &[]),
        train: valid.clone(),
        valid,
    };
    let mean = losses.iter().sum::<f64>() / 5.0;
    let want = lm_valid_loss(model, &data, 3, &device);
    assert!((mean - want).abs() < 1e-5 * want, "{mean} against {want}");
}

#[test]
fn decoder_lm_refuses_bad_arguments() {
    let device = Device::flex();
    let message = panic_message(|| {
        DecoderLmConfig::new(30).with_window(Some(0)).init(&device);
    });
    assert!(
        message.contains("`window` must hold at least 1 key"),
        "{message}"
    );
    let message = panic_message(|| {
        DecoderLmConfig::new(30).with_kv_heads(3).init(&device);
    });
    assert!(message.contains("`kv_heads` (3) must divide"), "{message}");
    let models = decoder_lms(&device);
    let tokens = causal_lm(&device).1;
    let (_, cache) = models[0].1.decode(tokens.clone(), KvCache::new());
    let one_block = DecoderLmConfig::new(30)
        .with_num_hiddens(16)
        .with_num_layers(1)
        .init(&device);
    let message = panic_message(|| {
        one_block.decode(tokens.clone(), cache);
    });
    assert!(message.contains("`cache` holds 2 blocks"), "{message}");
    let short = DecoderLmConfig::new(30)
        .with_rotary(false)
        .with_max_len(4)
        .init(&device);
    let message = panic_message(|| {
        short.forward(tokens);
    });
    assert!(
        message.contains(
            "`tokens` reach position 7, past the sinusoids' `max_len` of 4"
        ),
        "{message}"
    );
    let gqa = GroupedQueryAttentionConfig::new(16, 4, 2).init(&device);
    let x = randn([1, 3, 16], 0, &device);
    let other = Tensor::<4>::zeros([1, 4, 2, 4], &device);
    let message = panic_message(|| {
        gqa.forward_cached(
            x,
            Some((other.clone(), other)),
            None,
            AttentionMask::Causal,
        );
    });
    assert!(
        message.contains(
            "`cached` keys [1, 4, 2, 4] do not fit the new keys [1, 2, 3, 4]"
        ),
        "{message}"
    );
    let message = panic_message(|| {
        streams(&[vec![7]], 3, 0);
    });
    assert!(message.contains("`length` must be at least 1"), "{message}");
}
