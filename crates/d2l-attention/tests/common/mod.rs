//! Reading the PyTorch reference values in `tests/golden/` (see its README).
#![allow(dead_code)] // each test file uses part of this

use std::path::Path;

use burn::module::Param;
use burn::nn::Linear;
use burn::tensor::{Device, Int, Shape, Tensor, TensorData};
use d2l_attention::BackendChoice;
use serde_json::Value;

/// A reference file, parsed.
pub fn golden(name: &str) -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// A stored tensor's shape and values.
pub fn array(v: &Value) -> (Vec<usize>, Vec<f64>) {
    let shape = v["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    let data = v["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            x.as_f64()
                .unwrap_or_else(|| if x.as_bool().unwrap() { 1.0 } else { 0.0 })
        })
        .collect();
    (shape, data)
}

/// A stored tensor on `device` (f32: inputs are exact f32 values).
pub fn float<const D: usize>(v: &Value, device: &Device) -> Tensor<D> {
    let (shape, data) = array(v);
    let data: Vec<f32> = data.iter().map(|&x| x as f32).collect();
    Tensor::from_data(TensorData::new(data, Shape::from(shape)), device)
}

/// A bias-free burn `Linear` from a stored PyTorch weight (out, in):
/// burn stores Wᵀ.
pub fn linear(w: &Value, device: &Device) -> Linear {
    Linear {
        weight: Param::from_tensor(float::<2>(w, device).transpose()),
        bias: None,
    }
}

/// A stored integer tensor on `device`.
pub fn int<const D: usize>(v: &Value, device: &Device) -> Tensor<D, Int> {
    let (shape, data) = array(v);
    let data: Vec<i64> = data.iter().map(|&x| x as i64).collect();
    Tensor::from_data(TensorData::new(data, Shape::from(shape)), device)
}

/// Asserts `|actual − expected| ≤ atol + rtol·|expected|` everywhere and
/// returns the largest absolute deviation.
pub fn assert_close<const D: usize>(
    what: &str,
    actual: Tensor<D>,
    expected: &Value,
    atol: f64,
    rtol: f64,
) -> f64 {
    let (shape, want) = array(expected);
    assert_eq!(actual.dims().to_vec(), shape, "{what}: shape");
    let got = actual.try_into_vec_as::<f64>().unwrap();
    let mut worst = 0.0f64;
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let dev = (g - w).abs();
        assert!(
            dev <= atol + rtol * w.abs(),
            "{what}[{i}]: got {g}, PyTorch {w} (off by {dev:e})"
        );
        worst = worst.max(dev);
    }
    worst
}

/// Every backend these tests run on, with its device: this build's CPU
/// backends and, when `D2L_DEVICE` names a GPU (`libtorch-cuda:N`, as
/// `scripts/gpu-check` sets it), that GPU too.
pub fn devices() -> Vec<(BackendChoice, Device)> {
    let mut backends = BackendChoice::compiled_cpu_backends();
    if let Ok(gpu @ BackendChoice::LibTorchCuda(_)) = BackendChoice::from_env()
    {
        backends.push(gpu);
    }
    backends
        .into_iter()
        .map(|b| (b, b.device().unwrap()))
        .collect()
}

/// Every tested backend in both modes, eval (its plain device) and train (its
/// autodiff device): ("flex eval", device), ("flex train", device), ….
pub fn modes() -> Vec<(String, Device)> {
    devices()
        .into_iter()
        .flat_map(|(backend, device)| {
            [
                (format!("{backend} eval"), device.clone()),
                (format!("{backend} train"), device.autodiff()),
            ]
        })
        .collect()
}

/// Stored valid lengths, (batch_size,) or (batch_size, num_queries).
pub fn valid_lens(
    v: &Value,
    device: &Device,
) -> d2l_attention::attention_scoring::ValidLens {
    use d2l_attention::attention_scoring::ValidLens;
    let (shape, data) = array(v);
    let lens: Vec<usize> = data.iter().map(|&x| x as usize).collect();
    match shape[..] {
        [_] => ValidLens::new(&lens, device),
        [_, q] => {
            ValidLens::per_query(&lens.chunks(q).collect::<Vec<_>>(), device)
        }
        _ => panic!("valid_lens of shape {shape:?}"),
    }
}

/// The text of a panic's payload (a `String` or a `&str`).
pub fn message(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(msg) => *msg,
        Err(payload) => payload.downcast_ref::<&str>().unwrap().to_string(),
    }
}

/// The message of the panic `f` raises.
///
/// # Panics
/// When `f` does not panic.
pub fn panic_message(f: impl FnOnce()) -> String {
    let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .expect_err("the call should panic");
    message(payload)
}
