//! PyTorch's `nn.MultiheadAttention`, loaded from its saved state dict into
//! the book's `MultiHeadAttention`, gives PyTorch's outputs and weights
//! (references made by `python/make_torch_mha.py` with PyTorch 2.9.0), and
//! what PyTorch leaves undefined (a query with every key masked) follows
//! our rule instead.

mod common;

use std::collections::HashMap;
use std::path::Path;

use burn::module::{Module, ModuleMapper, Param};
use burn::tensor::{Bool, DType, Device, Shape, Tensor, TensorData};
use common::{array, assert_close, devices, float, golden};
use d2l_attention::device::BackendChoice;
use d2l_attention::multihead_attention::*;
use d2l_attention::random::randn;
use serde_json::Value;

fn bools<const D: usize>(v: &Value, device: &Device) -> Tensor<D, Bool> {
    let (shape, data) = array(v);
    let data: Vec<bool> = data.iter().map(|&x| x != 0.0).collect();
    Tensor::from_data(TensorData::new(data, Shape::from(shape)), device)
}

/// The generator's mask, in PyTorch's own shape: (L, S) or (N·h, L, S).
fn attn_mask(v: &Value, device: &Device) -> Option<AttnMask> {
    if v.is_null() {
        return None;
    }
    let rank2 = array(v).0.len() == 2;
    Some(match (v["dtype"] == "bool", rank2) {
        (true, true) => bools::<2>(v, device).into(),
        (true, false) => bools::<3>(v, device).into(),
        (false, true) => float::<2>(v, device).into(),
        (false, false) => float::<3>(v, device).into(),
    })
}

fn load(name: &str, num_heads: usize, device: &Device) -> MultiHeadAttention {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/torch_mha")
        .join(format!("{name}.pt"));
    MultiHeadAttention::from_pytorch(&path, num_heads, device).unwrap()
}

/// A case's state dict as the generator wrote it into the JSON, as host
/// tensors: f64 values when `wide`, else f32.
fn state_dict(c: &Value, wide: bool) -> HashMap<String, TensorData> {
    let dict = c["state_dict"].as_object().unwrap();
    let data = |v: &Value| {
        let (shape, values) = array(v);
        match wide {
            true => TensorData::new(values, Shape::from(shape)),
            false => {
                let values: Vec<f32> =
                    values.iter().map(|&x| x as f32).collect();
                TensorData::new(values, Shape::from(shape))
            }
        }
    };
    dict.iter().map(|(k, v)| (k.clone(), data(v))).collect()
}

/// How the layer is loaded in a comparison with PyTorch.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// `from_pytorch`, from the `.pt` file.
    File,
    /// `from_pytorch_tensors`, from f32 or (when true) f64 tensors in memory.
    Memory(bool),
}

/// Runs every case of the generator with the layer loaded from `source`,
/// and returns the largest deviation from PyTorch.
fn compare_every_case(
    source: Source,
    device: &Device,
    backend: BackendChoice,
) -> f64 {
    let g = golden("torch_multihead_attention.json");
    let cases = g["cases"].as_object().unwrap();
    assert_eq!(cases.len(), 7);
    let mut worst = 0.0f64;
    for (name, c) in cases {
        let num_heads = c["num_heads"].as_u64().unwrap() as usize;
        let mha = match source {
            Source::File => load(name, num_heads, device),
            Source::Memory(wide) => MultiHeadAttention::from_pytorch_tensors(
                &state_dict(c, wide),
                num_heads,
                device,
            )
            .unwrap(),
        };
        assert_eq!(mha.w_o.bias.is_some(), c["bias"].as_bool().unwrap());
        let out = mha.forward_pytorch(PytorchMhaInput {
            query: float(&c["query"], device),
            key: float(&c["key"], device),
            value: float(&c["value"], device),
            batch_first: c["batch_first"].as_bool().unwrap(),
            key_padding_mask: (!c["key_padding_mask"].is_null())
                .then(|| bools(&c["key_padding_mask"], device)),
            attn_mask: attn_mask(&c["attn_mask"], device),
        });
        let what = |t: &str| format!("{backend} {source:?} {name} {t}");
        for (t, got) in [
            ("attn_output", out.attn_output),
            ("attn_weights", out.attn_weights),
        ] {
            worst = worst.max(assert_close(&what(t), got, &c[t], 1e-5, 1e-5));
        }
        worst = worst.max(assert_close(
            &what("attn_weights_per_head"),
            out.attn_weights_per_head,
            &c["attn_weights_per_head"],
            1e-5,
            1e-5,
        ));
    }
    worst
}

#[test]
fn every_case_matches_pytorch_on_every_backend() {
    for (backend, device) in devices() {
        let worst = compare_every_case(Source::File, &device, backend);
        eprintln!("{backend}: largest deviation from PyTorch {worst:e}");
    }
}

/// The state dicts in memory (f32 and f64), keyed by PyTorch's names, load
/// the layers the files do: the same outputs as PyTorch in every case.
#[test]
fn a_state_dict_in_memory_loads_like_the_file() {
    for (backend, device) in devices() {
        for wide in [false, true] {
            let worst =
                compare_every_case(Source::Memory(wide), &device, backend);
            eprintln!("{backend} in memory (f64: {wide}): {worst:e}");
        }
    }
}

#[test]
fn a_state_dict_in_memory_that_does_not_fit_names_the_tensor() {
    let g = golden("torch_multihead_attention.json");
    let mut dict = state_dict(&g["cases"]["no_bias"], false);
    let device = Device::flex();
    let weight = dict.remove("out_proj.weight").unwrap();
    dict.insert(
        "out_proj.weight".into(),
        TensorData::new(vec![0i64; 64], [8, 8]),
    );
    let err = MultiHeadAttention::from_pytorch_tensors(&dict, 2, &device);
    assert_eq!(
        err.unwrap_err().to_string(),
        "`out_proj.weight` has shape [8, 8] and type I64, expected float32 or float64"
    );
    dict.insert("out_proj.weight".into(), weight);
    dict.insert("bias_k".into(), TensorData::new(vec![0f32; 8], [1, 1, 8]));
    let err = MultiHeadAttention::from_pytorch_tensors(&dict, 2, &device);
    assert_eq!(
        err.unwrap_err().to_string(),
        "`bias_k` is in the state dict, but add_bias_kv is not supported"
    );
    dict.remove("bias_k");
    dict.insert(
        "in_proj_weight".into(),
        TensorData::new(vec![0f32; 8], [2, 4]),
    );
    let err = MultiHeadAttention::from_pytorch_tensors(&dict, 2, &device);
    assert_eq!(
        err.unwrap_err().to_string(),
        "`in_proj_weight` has shape [2, 4] and type F32, expected [24, 8] of float32 or float64"
    );
}

/// Masks in shapes PyTorch refuses are refused too, naming the argument.
#[test]
fn a_mask_of_the_wrong_shape_panics_naming_it() {
    let device = Device::flex();
    let mha = load("causal", 4, &device);
    // (L, N, E) = (5, 2, 8), S = 5, 4 heads.
    let input = |key_padding_mask, attn_mask| PytorchMhaInput {
        query: randn([5, 2, 8], 1, &device),
        key: randn([5, 2, 8], 2, &device),
        value: randn([5, 2, 8], 3, &device),
        batch_first: false,
        key_padding_mask,
        attn_mask,
    };
    let causal = Tensor::<2, Bool>::triu_mask([5, 4], 1, &device);
    let message = common::panic_message(|| {
        mha.forward_pytorch(input(None, Some(causal.into())));
    });
    assert_eq!(
        message,
        "`attn_mask` has shape [1, 5, 4], expected (L, S) = [5, 5] or \
         (N·num_heads, L, S) = [8, 5, 5]"
    );
    let per_sequence = Tensor::<3>::zeros([2, 5, 5], &device);
    let message = common::panic_message(|| {
        mha.forward_pytorch(input(None, Some(per_sequence.into())));
    });
    assert!(
        message.starts_with("`attn_mask` has shape [2, 5, 5]"),
        "{message}"
    );
    let padding = Tensor::<2, Bool>::empty([5, 2], &device);
    let message = common::panic_message(|| {
        mha.forward_pytorch(input(Some(padding), None));
    });
    assert_eq!(
        message,
        "`key_padding_mask` has shape [5, 2], expected (N, S) = [2, 5]"
    );
    let additive = MultiHeadAttentionConfig::new(8, 8, 8, 8, 4)
        .with_additive_hiddens(Some(6))
        .init(&device);
    let message = common::panic_message(|| {
        additive.forward_pytorch(input(None, None));
    });
    assert!(message.starts_with("`forward_pytorch` needs scaled dot products"));
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

/// Casts every parameter to f16.
struct ToF16;

impl ModuleMapper for ToF16 {
    fn map_float<const D: usize>(
        &mut self,
        param: Param<Tensor<D>>,
    ) -> Param<Tensor<D>> {
        param.map(|t| t.cast(DType::F16))
    }
}

/// In f16 too, a row of −∞ in an additive mask is uniform: the scores are
/// clamped at f16's lowest finite value (d2l's −10⁶ is −∞ there, and the
/// row would be NaN).
#[test]
fn an_additive_mask_of_minus_infinity_is_uniform_in_f16() {
    let device = Device::flex();
    let mha = load("per_head_mask", 2, &device).map(&mut ToF16);
    let f16 = |t: Tensor<3>| t.cast(DType::F16);
    let bias = Tensor::<3>::full([1, 3, 5], f32::NEG_INFINITY, &device);
    let out = mha.forward_pytorch(PytorchMhaInput {
        query: f16(randn([3, 2, 4], 1, &device)),
        key: f16(randn([5, 2, 4], 2, &device)),
        value: f16(randn([5, 2, 4], 3, &device)),
        batch_first: false,
        key_padding_mask: None,
        attn_mask: Some(AttnMask::Float(f16(bias))),
    });
    let floats = |t: Tensor<3>| {
        assert_eq!(t.dtype(), DType::F16);
        t.cast(DType::F32).try_into_vec_as::<f32>().unwrap()
    };
    let w = floats(out.attn_weights);
    assert!(w.iter().all(|&x| (x - 0.2).abs() < 1e-3), "{w:?}");
    let output = floats(out.attn_output);
    assert!(output.iter().all(|x| x.is_finite()), "{output:?}");
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
    let bias = load("notebook", 10, &device).w_o.bias.unwrap().val();
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
