//! PyTorch's `nn.MultiheadAttention`, loaded from its saved state dict into
//! the book's `MultiHeadAttention`, gives PyTorch's outputs and weights
//! (references made by `python/make_torch_mha.py` with PyTorch 2.9.0), and
//! what PyTorch leaves undefined (a query with every key masked) follows
//! our rule instead.

mod common;

use std::path::Path;

use burn::tensor::{Bool, Device, Shape, Tensor, TensorData};
use common::{array, assert_close, devices, float, golden};
use d2l_attention::multihead_attention::*;
use d2l_attention::random::randn;
use serde_json::Value;

fn bools<const D: usize>(v: &Value, device: &Device) -> Tensor<D, Bool> {
    let (shape, data) = array(v);
    let data: Vec<bool> = data.iter().map(|&x| x != 0.0).collect();
    Tensor::from_data(TensorData::new(data, Shape::from(shape)), device)
}

/// PyTorch's (L, S) masks apply to every sequence and head: (1, L, S).
fn attn_mask(v: &Value, device: &Device) -> Option<AttnMask> {
    if v.is_null() {
        return None;
    }
    let rank2 = array(v).0.len() == 2;
    Some(match (v["dtype"] == "bool", rank2) {
        (true, true) => AttnMask::Bool(bools::<2>(v, device).unsqueeze()),
        (true, false) => AttnMask::Bool(bools::<3>(v, device)),
        (false, true) => AttnMask::Float(float::<2>(v, device).unsqueeze()),
        (false, false) => AttnMask::Float(float::<3>(v, device)),
    })
}

fn load(name: &str, num_heads: usize, device: &Device) -> MultiHeadAttention {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/torch_mha")
        .join(format!("{name}.pt"));
    MultiHeadAttention::from_pytorch(&path, num_heads, device).unwrap()
}

#[test]
fn every_case_matches_pytorch_on_every_backend() {
    let g = golden("torch_multihead_attention.json");
    let cases = g["cases"].as_object().unwrap();
    assert_eq!(cases.len(), 7);
    for (backend, device) in devices() {
        let mut worst = 0.0f64;
        for (name, c) in cases {
            let num_heads = c["num_heads"].as_u64().unwrap() as usize;
            let mha = load(name, num_heads, &device);
            assert_eq!(mha.w_o.bias.is_some(), c["bias"].as_bool().unwrap());
            let out = mha.forward_pytorch(PytorchMhaInput {
                query: float(&c["query"], &device),
                key: float(&c["key"], &device),
                value: float(&c["value"], &device),
                batch_first: c["batch_first"].as_bool().unwrap(),
                key_padding_mask: (!c["key_padding_mask"].is_null())
                    .then(|| bools(&c["key_padding_mask"], &device)),
                attn_mask: attn_mask(&c["attn_mask"], &device),
            });
            let what = |t: &str| format!("{backend} {name} {t}");
            worst = worst
                .max(assert_close(
                    &what("attn_output"),
                    out.attn_output,
                    &c["attn_output"],
                    1e-5,
                    1e-5,
                ))
                .max(assert_close(
                    &what("attn_weights"),
                    out.attn_weights,
                    &c["attn_weights"],
                    1e-5,
                    1e-5,
                ))
                .max(assert_close(
                    &what("attn_weights_per_head"),
                    out.attn_weights_per_head,
                    &c["attn_weights_per_head"],
                    1e-5,
                    1e-5,
                ));
        }
        eprintln!("{backend}: largest deviation from PyTorch {worst:e}");
    }
}

/// PyTorch gives NaN for a query whose keys are all masked; ours gives
/// uniform weights in that head, and finite outputs and gradients.
#[test]
fn a_head_whose_keys_are_all_masked_is_uniform_and_finite() {
    for (backend, device) in devices() {
        let device = device.autodiff();
        let mha = load("per_head_mask", 2, &device);
        // (N·h, L, S) = (4, 3, 5): head 1 of sequence 0 sees no key at all.
        let mut hidden = vec![false; 4 * 3 * 5];
        hidden[15..30].iter_mut().for_each(|h| *h = true);
        let hidden = Tensor::<3, Bool>::from_data(
            TensorData::new(hidden, [4, 3, 5]),
            &device,
        );
        let query = randn([3, 2, 4], 1, &device).require_grad();
        let key = randn([5, 2, 4], 2, &device);
        let out = mha.forward_pytorch(PytorchMhaInput {
            query: query.clone(),
            key: key.clone(),
            value: key,
            batch_first: false,
            key_padding_mask: None,
            attn_mask: Some(AttnMask::Bool(hidden)),
        });
        let head = out
            .attn_weights_per_head
            .clone()
            .narrow(0, 0, 1)
            .narrow(1, 1, 1)
            .try_into_vec_as::<f32>()
            .unwrap();
        assert!(head.iter().all(|&w| (w - 0.2).abs() < 1e-6), "{head:?}");
        let grads = out.attn_output.clone().sum().backward();
        let grad = query
            .grad(&grads)
            .unwrap()
            .try_into_vec_as::<f32>()
            .unwrap();
        assert!(grad.iter().all(|g| g.is_finite()), "{backend}: {grad:?}");
        let output = out.attn_output.try_into_vec_as::<f32>().unwrap();
        assert!(output.iter().all(|x| x.is_finite()), "{backend}");
        // −∞ in an additive mask counts as hidden: a row of −∞ is uniform.
        let bias = Tensor::<3>::full([1, 3, 5], f32::NEG_INFINITY, &device);
        let out = mha.forward_pytorch(PytorchMhaInput {
            query: randn([3, 2, 4], 1, &device),
            key: randn([5, 2, 4], 2, &device),
            value: randn([5, 2, 4], 2, &device),
            batch_first: false,
            key_padding_mask: None,
            attn_mask: Some(AttnMask::Float(bias)),
        });
        let w = out.attn_weights.try_into_vec_as::<f32>().unwrap();
        assert!(
            w.iter().all(|&x| (x - 0.2).abs() < 1e-6),
            "{backend}: {w:?}"
        );
    }
}

#[test]
fn a_state_dict_that_does_not_fit_names_the_tensor() {
    let device = Device::flex();
    let dir = tempfile::tempdir().unwrap();
    let not_torch = dir.path().join("model.pt");
    std::fs::write(&not_torch, "not a checkpoint").unwrap();
    let err =
        MultiHeadAttention::from_pytorch(&not_torch, 2, &device).unwrap_err();
    assert!(matches!(err, PytorchLoadError::Read { .. }), "{err:?}");
    assert!(std::error::Error::source(&err).is_some());
}

/// What PyTorch 2.9 itself does there, as the generator recorded it:
/// NaN weights and output when weights are requested, and, on its fast
/// path without weights, an output of just `out_proj.bias` (the heads
/// contribute 0). The chapter quotes both.
#[test]
fn pytorch_s_answer_for_an_all_masked_query_is_nan_or_its_output_bias() {
    let g = golden("torch_multihead_attention.json");
    let facts = &g["all_masked_query"];
    assert_eq!(facts["weights_nan"], true);
    assert_eq!(facts["output_nan_with_weights"], true);
    assert_eq!(facts["output_nan_without_weights"], false);
    let device = Device::flex();
    let bias = load("seed002", 10, &device).w_o.bias.unwrap().val();
    let (shape, out) = array(&facts["output_without_weights"]);
    assert_eq!(shape, [3, 10]);
    let bias = bias.try_into_vec_as::<f64>().unwrap();
    for row in out.chunks(10) {
        for (o, b) in row.iter().zip(&bias) {
            assert!((o - b).abs() < 1e-6, "{row:?} vs {bias:?}");
        }
    }
}

#[test]
fn a_missing_tensor_is_named_with_what_the_file_holds() {
    let err = MultiHeadAttention::from_pytorch(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/golden/torch_mha/broken.pt"),
        2,
        &Device::flex(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`q_proj_weight` is not in the state dict (it holds out_proj.weight)"
    );
}
