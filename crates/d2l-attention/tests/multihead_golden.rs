//! d2l's `MultiHeadAttention` against PyTorch 2.9.0 (the shared reference
//! set's case e, copied to `golden/multihead_attention.json`), and the rules
//! of the layer that no reference shows: per-sequence valid lengths per
//! head, and finite results where every key is masked.

mod common;

use burn::tensor::{Device, Tensor};
use common::{assert_close, devices, float, golden, linear, valid_lens};
use d2l_attention::attention_scoring::{DotProductAttentionConfig, ValidLens};
use d2l_attention::multihead_attention::*;
use d2l_attention::random::randn;
use serde_json::Value;

fn model(g: &Value, device: &Device) -> MultiHeadAttention {
    MultiHeadAttention {
        attention: DotProductAttentionConfig::new().init().into(),
        w_q: linear(&g["W_q"], device),
        w_k: linear(&g["W_k"], device),
        w_v: linear(&g["W_v"], device),
        w_o: linear(&g["W_o"], device),
        num_heads: g["num_heads"].as_u64().unwrap() as usize,
    }
}

#[test]
fn multi_head_attention_matches_pytorch() {
    let g = golden("multihead_attention.json");
    for (backend, device) in devices() {
        let attention = model(&g, &device);
        let attended = attention.forward(
            float(&g["queries"], &device),
            float(&g["keys"], &device),
            float(&g["values"], &device),
            Some(&valid_lens(&g["valid_lens"], &device)),
        );
        // d2l's layout: row r is sequence r / 5, head r % 5.
        let weights = attended.attention_weights.tensor().reshape([10, 4, 6]);
        let worst = assert_close(
            &format!("{backend} output"),
            attended.output,
            &g["output"],
            1e-5,
            1e-5,
        )
        .max(assert_close(
            &format!("{backend} weights"),
            weights.clone(),
            &g["attention_weights_per_head"],
            1e-5,
            1e-5,
        ));
        // Past the valid lengths [3, 2], every head's weight is exactly 0.
        let w = weights.try_into_vec_as::<f32>().unwrap();
        for (row, chunk) in w.chunks(6).enumerate() {
            let valid = [3, 2][row / 20];
            assert!(chunk[valid..].iter().all(|&x| x == 0.0), "{chunk:?}");
        }
        eprintln!("{backend}: largest deviation from PyTorch {worst:e}");
    }
}

/// `repeat_interleave`, not `repeat`: every head of sequence i uses
/// sequence i's length, so changing the other sequences' lengths leaves
/// sequence i's output exactly as it was.
#[test]
fn each_sequence_s_heads_use_its_own_valid_length() {
    let device = Device::flex();
    let attention = MultiHeadAttentionConfig::new(6, 5, 4, 12, 3)
        .with_bias(true)
        .init(&device);
    let queries = randn([3, 2, 5], 1, &device);
    let keys = randn([3, 7, 6], 2, &device);
    let values = randn([3, 7, 4], 3, &device);
    let run = |lens: &[usize]| {
        attention.forward(
            queries.clone(),
            keys.clone(),
            values.clone(),
            Some(&ValidLens::new(lens, &device)),
        )
    };
    let (a, b) = (run(&[2, 7, 4]), run(&[2, 1, 6]));
    let first =
        |t: Tensor<3>| t.narrow(0, 0, 1).try_into_vec_as::<f32>().unwrap();
    assert_eq!(first(a.output.clone()), first(b.output.clone()));
    // And sequence 1 does see its own change.
    assert_ne!(
        a.output.narrow(0, 1, 1).try_into_vec_as::<f32>().unwrap(),
        b.output.narrow(0, 1, 1).try_into_vec_as::<f32>().unwrap()
    );
    // Every head of sequence 0 stops at its 2 keys.
    let w = a
        .attention_weights
        .tensor()
        .narrow(0, 0, 1)
        .try_into_vec_as::<f32>()
        .unwrap();
    for row in w.chunks(7) {
        assert!(row[2..].iter().all(|&x| x == 0.0), "{row:?}");
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
    }
}

#[test]
#[should_panic(
    expected = "`num_hiddens` (100) must be a multiple of `num_heads` (3)"
)]
fn heads_that_do_not_divide_num_hiddens_are_refused() {
    MultiHeadAttentionConfig::new(100, 100, 100, 100, 3).init(&Device::flex());
}

/// A sequence with no valid key: every head's weights are uniform, and
/// neither the output nor any gradient holds a NaN.
#[test]
fn a_sequence_with_no_valid_key_stays_finite_forward_and_backward() {
    for (backend, device) in devices() {
        let device = device.autodiff();
        let attention =
            MultiHeadAttentionConfig::new(4, 4, 4, 8, 2).init(&device);
        let queries = randn([2, 3, 4], 4, &device).require_grad();
        let keys = randn([2, 5, 4], 5, &device).require_grad();
        let attended = attention.forward(
            queries.clone(),
            keys.clone(),
            keys.clone(),
            Some(&ValidLens::new(&[0, 5], &device)),
        );
        let weights = attended.attention_weights.tensor();
        let w = weights.narrow(0, 0, 1).try_into_vec_as::<f32>().unwrap();
        assert!(
            w.iter().all(|&x| (x - 0.2).abs() < 1e-6),
            "{backend}: {w:?}"
        );
        let grads = attended.output.sum().backward();
        for (what, grad) in [
            ("queries", queries.grad(&grads).unwrap()),
            ("keys", keys.grad(&grads).unwrap()),
        ] {
            let g = grad.try_into_vec_as::<f32>().unwrap();
            assert!(g.iter().all(|x| x.is_finite()), "{backend} {what}: {g:?}");
        }
        let w_q = attention.w_q.weight.grad(&grads).unwrap();
        let g = w_q.try_into_vec_as::<f32>().unwrap();
        assert!(g.iter().all(|x| x.is_finite()), "{backend} W_q");
    }
}

/// burn's `MultiHeadAttention` with our weights, in eval mode (dropout 0),
/// gives our outputs and weights, padding included (its −1e4 fill and our
/// −∞, used since no valid length is 0, both give weight exactly 0).
#[test]
fn ours_and_burn_s_module_agree_in_eval_mode() {
    use burn::nn::attention::{MhaInput, MultiHeadAttentionConfig as Burn};
    for (backend, device) in devices() {
        let ours = MultiHeadAttentionConfig::new(12, 12, 12, 12, 3)
            .with_bias(true)
            .init(&device);
        let mut theirs = Burn::new(12, 3).with_dropout(0.0).init(&device);
        theirs.query = ours.w_q.clone();
        theirs.key = ours.w_k.clone();
        theirs.value = ours.w_v.clone();
        theirs.output = ours.w_o.clone();
        let queries = randn([3, 4, 12], 7, &device);
        let keys = randn([3, 6, 12], 8, &device);
        let values = randn([3, 6, 12], 9, &device);
        let valid_lens = ValidLens::new(&[6, 2, 4], &device);
        let mask_pad = valid_lens.mask(3, 1, 6).reshape([3, 6]);
        let a = ours.forward(
            queries.clone(),
            keys.clone(),
            values.clone(),
            Some(&valid_lens),
        );
        let b = theirs
            .forward(MhaInput::new(queries, keys, values).mask_pad(mask_pad));
        let gap = |x: Vec<f32>, y: Vec<f32>| {
            x.iter()
                .zip(&y)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max)
        };
        let output_gap = gap(
            a.output.try_into_vec_as().unwrap(),
            b.context.try_into_vec_as().unwrap(),
        );
        let w = a.attention_weights.tensor().try_into_vec_as::<f32>().unwrap();
        let weights_gap = gap(w.clone(), b.weights.try_into_vec_as().unwrap());
        assert!(output_gap < 1e-5 && weights_gap < 1e-6, "{backend}");
        eprintln!(
            "{backend}: ours vs burn's: output {output_gap:e}, weights {weights_gap:e}"
        );
    }
}
