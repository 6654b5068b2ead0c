//! Attention scoring functions against PyTorch 2.9.0 running d2l's code
//! (`tests/golden/make_golden.py`), on every backend of this build.

mod common;

use burn::tensor::Tensor;
use common::{devices, float, golden, linear, valid_lens};

/// `common::assert_close`, also printing the deviation (`--nocapture` shows it).
fn assert_close<const D: usize>(
    what: &str,
    actual: Tensor<D>,
    expected: &serde_json::Value,
    atol: f64,
    rtol: f64,
) -> f64 {
    let worst = common::assert_close(what, actual, expected, atol, rtol);
    eprintln!("{what}: max deviation from PyTorch {worst:.1e}");
    worst
}
use d2l_attention::attention_scoring::*;

const ATOL: f64 = 1e-5;
const RTOL: f64 = 1e-5;

#[test]
fn masked_softmax_matches_pytorch_and_masks_exactly() {
    let g = golden("masked_softmax.json");
    for (backend, device) in devices() {
        let x = float::<3>(&g["X"], &device);
        for case in g["cases"].as_array().unwrap() {
            let lens = &case["valid_lens"];
            let valid_lens: Option<ValidLens> =
                lens["shape"].is_array().then(|| valid_lens(lens, &device));
            let out = masked_softmax(x.clone(), valid_lens.as_ref());
            let what = format!("{backend} {}", case["name"]);
            assert_close(&what, out.clone(), &case["output"], ATOL, RTOL);
            // Exactness: masked entries are 0.0 and fully masked rows exactly 0.25.
            let got = out.try_into_vec_as::<f32>().unwrap();
            let want = common::array(&case["output"]).1;
            for (g, w) in got.iter().zip(&want) {
                if *w == 0.0 || *w == 0.25 {
                    assert_eq!(
                        *g as f64, *w,
                        "{what}: masked entries must be exact"
                    );
                }
            }
        }
    }
}

#[test]
fn masked_softmax_gradient_of_fully_masked_rows_is_finite_and_matches() {
    let g = golden("masked_softmax_grad.json");
    for (backend, device) in devices() {
        let device = device.autodiff();
        let x = float::<3>(&g["X"], &device).require_grad();
        let c = float::<3>(&g["C"], &device);
        let out = masked_softmax(
            x.clone(),
            Some(&valid_lens(&g["valid_lens"], &device)),
        );
        assert_close(
            &format!("{backend} output"),
            out.clone(),
            &g["output"],
            ATOL,
            RTOL,
        );
        let grads = (out * c).sum().backward();
        let grad = x.grad(&grads).unwrap();
        assert!(
            !grad.clone().is_nan().any().into_scalar::<bool>(),
            "{backend}: NaN in the gradient"
        );
        assert_close(
            &format!("{backend} grad"),
            grad,
            &g["grad_X"],
            ATOL,
            RTOL,
        );
    }
}

#[test]
fn additive_attention_matches_pytorch_and_the_closed_form() {
    let g = golden("additive_attention_ones_keys.json");
    for (backend, device) in devices() {
        let attention = AdditiveAttention {
            w_q: linear(&g["W_q"], &device),
            w_k: linear(&g["W_k"], &device),
            w_v: linear(&g["w_v"], &device),
            ..AdditiveAttentionConfig::new(2, 20, 8)
                .with_dropout(0.1)
                .init(&device)
        };
        let (q, k, v) = (
            float::<3>(&g["queries"], &device),
            float::<3>(&g["keys"], &device),
            float::<3>(&g["values"], &device),
        );
        assert_close(
            &format!("{backend} scores"),
            attention.scores(q.clone(), k.clone()),
            &g["scores_before_mask"],
            ATOL,
            RTOL,
        );
        let attended = attention.forward(
            q,
            k,
            v,
            Some(&valid_lens(&g["valid_lens"], &device)),
        );
        assert_close(
            &format!("{backend} weights"),
            attended.attention_weights.tensor(),
            &g["attention_weights"],
            ATOL,
            RTOL,
        );
        assert_close(
            &format!("{backend} output"),
            attended.output.clone(),
            &g["output"],
            ATOL,
            RTOL,
        );
        assert_close(
            &format!("{backend} closed form"),
            attended.output,
            &g["expected_closed_form"],
            1e-5,
            0.0,
        );
    }
}

#[test]
fn scaled_dot_product_attention_matches_pytorch() {
    let g = golden("dot_product_attention.json");
    for (backend, device) in devices() {
        let attention =
            DotProductAttentionConfig::new().with_dropout(0.1).init();
        let (q, k, v) = (
            float::<3>(&g["queries"], &device),
            float::<3>(&g["keys"], &device),
            float::<3>(&g["values"], &device),
        );
        assert_close(
            &format!("{backend} scores"),
            attention.scores(q.clone(), k.clone()),
            &g["scores_before_mask"],
            ATOL,
            RTOL,
        );
        let attended = attention.forward(
            q,
            k,
            v,
            Some(&valid_lens(&g["valid_lens"], &device)),
        );
        assert_close(
            &format!("{backend} weights"),
            attended.attention_weights.tensor(),
            &g["attention_weights"],
            ATOL,
            RTOL,
        );
        assert_close(
            &format!("{backend} output"),
            attended.output,
            &g["output"],
            ATOL,
            RTOL,
        );
    }
}

#[test]
fn the_four_scoring_functions_match_pytorch() {
    let g = golden("scoring_functions.json");
    for (backend, device) in devices() {
        let (q, k, v) = (
            float::<3>(&g["queries"], &device),
            float::<3>(&g["keys"], &device),
            float::<3>(&g["values"], &device),
        );
        let [_, _, d] = q.dims();
        let additive = AdditiveAttention {
            w_q: linear(&g["W_q"], &device),
            w_k: linear(&g["W_k"], &device),
            w_v: linear(&g["w_v"], &device),
            ..AdditiveAttentionConfig::new(d, d, 6).init(&device)
        };
        let dot = DotProductAttentionConfig::new().with_scaled(false).init();
        let scaled = DotProductAttentionConfig::new().init();
        let bilinear = bilinear_scores(
            q.clone(),
            k.clone(),
            float::<2>(&g["W_bilinear"], &device),
        );
        let cases: [(&str, Tensor<3>); 4] = [
            ("additive", additive.scores(q.clone(), k.clone())),
            ("dot", dot.scores(q.clone(), k.clone())),
            ("scaled_dot", scaled.scores(q.clone(), k.clone())),
            ("bilinear", bilinear),
        ];
        for (name, scores) in cases {
            let want = &g["functions"][name];
            assert_close(
                &format!("{backend} {name} scores"),
                scores.clone(),
                &want["scores_before_mask"],
                ATOL,
                RTOL,
            );
            let weights = masked_softmax(
                scores,
                Some(&valid_lens(&g["valid_lens"], &device)),
            );
            assert_close(
                &format!("{backend} {name} weights"),
                weights.clone(),
                &want["attention_weights"],
                ATOL,
                RTOL,
            );
            assert_close(
                &format!("{backend} {name} output"),
                weights.matmul(v.clone()),
                &want["output"],
                ATOL,
                RTOL,
            );
        }
    }
}

#[test]
fn self_attention_loop_and_vectorised_match_pytorch() {
    let g = golden("self_attention.json");
    for (backend, device) in devices() {
        let x = float::<2>(&g["X"], &device);
        let (wq, wk, wv) = (
            float::<2>(&g["W_Q"], &device),
            float::<2>(&g["W_K"], &device),
            float::<2>(&g["W_V"], &device),
        );
        let (h, a) = self_attention(&x, &wq, &wk, &wv);
        assert_close(&format!("{backend} H"), h, &g["H"], ATOL, RTOL);
        assert_close(&format!("{backend} A"), a, &g["A"], ATOL, RTOL);
        assert_close(
            &format!("{backend} H by loop"),
            self_attention_loop(&x, &wq, &wk, &wv),
            &g["H"],
            ATOL,
            RTOL,
        );
    }
}
