//! Rotary position embeddings (Su et al., 2021, "RoFormer", §3.2.2 and
//! §3.4.2): each pair of features of a query or key is turned by an angle
//! proportional to its position, so that a query–key score depends on the
//! two positions only through their distance.

use burn::tensor::{Device, Tensor, TensorData};

/// Rotary position embedding of `x` (batch_size, heads, n, d), row t at
/// position `start` + t: features 2j and 2j + 1 (adjacent pairs, RoFormer
/// eq. 34 and Meta's Llama `apply_rotary_emb`; GPT-NeoX and Hugging Face's
/// `rotate_half` pair feature j with j + d/2 instead) are turned by the
/// angle position · θ_j, θ_j = 10000^(−2j/d):
/// (x₂ⱼ, x₂ⱼ₊₁) ↦ (x₂ⱼ cos − x₂ⱼ₊₁ sin, x₂ⱼ sin + x₂ⱼ₊₁ cos).
/// Angles and their cosines and sines are computed in f64 and rounded once
/// (Llama computes the angle in f32). Within 1e-5 + 1e-5·|value| of a
/// transcription of Llama's function in f64 (`tests/efficient_attention.rs`,
/// `golden/rotary.json`).
///
/// # Panics
/// When d is odd (naming `x`).
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Tensor};
/// use d2l_attention::efficient_attention::rotary;
///
/// // One pair (1, 0) at positions 0 and 1: turned by 0 and by 1 radian.
/// let x = Tensor::<4>::from_data([[[[1.0, 0.0], [1.0, 0.0]]]], &Device::flex());
/// let y = rotary(x, 0).try_into_vec_as::<f32>().unwrap();
/// assert_eq!(y[..2], [1.0, 0.0]);
/// assert!((y[2] - 1f32.cos()).abs() < 1e-7 && (y[3] - 1f32.sin()).abs() < 1e-7);
/// ```
// ANCHOR: rotary
pub fn rotary(x: Tensor<4>, start: usize) -> Tensor<4> {
    let [batch_size, heads, n, d] = x.dims();
    assert!(
        d % 2 == 0,
        "`x` has shape {:?}, expected an even size (dimension 3): rotary \
         embeddings turn pairs of features",
        x.dims()
    );
    let (cos, sin) = cos_sin(start, n, d / 2, &x.device());
    let (cos, sin) = (cos.cast(x.dtype()), sin.cast(x.dtype()));
    // (batch_size, heads, n, d/2, 2): features 2i and 2i + 1 side by side
    let pairs = x.reshape([batch_size, heads, n, d / 2, 2]);
    let even = pairs.clone().narrow(4, 0, 1);
    let odd = pairs.narrow(4, 1, 1);
    let turned = Tensor::cat(
        vec![
            even.clone() * cos.clone() - odd.clone() * sin.clone(),
            even * sin + odd * cos,
        ],
        4,
    );
    turned.reshape([batch_size, heads, n, d])
}
// ANCHOR_END: rotary

/// cos and sin of position · θ_j for positions `start` … `start + n − 1`
/// and j < `pairs`, θ_j = 10000^(−j/pairs): (1, 1, n, pairs, 1) each.
fn cos_sin(
    start: usize,
    n: usize,
    pairs: usize,
    device: &Device,
) -> (Tensor<5>, Tensor<5>) {
    let angles = (start..start + n).flat_map(|position| {
        (0..pairs).map(move |j| {
            position as f64 * 10000f64.powf(-(j as f64) / pairs as f64)
        })
    });
    let (cos, sin): (Vec<f32>, Vec<f32>) = angles
        .map(|angle| (angle.cos() as f32, angle.sin() as f32))
        .unzip();
    let table = |values| {
        Tensor::from_data(TensorData::new(values, [1, 1, n, pairs, 1]), device)
    };
    (table(cos), table(sin))
}
