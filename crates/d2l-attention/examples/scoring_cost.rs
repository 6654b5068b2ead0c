//! Times additive and scaled dot-product attention at the sizes the
//! scoring page's exercise 4 counts (d2l en §11.3, exercise 3): the median
//! wall time of one forward pass of each, its output read back, over 2
//! batches of n queries and n keys of d features (values of d), on the
//! backend named by `D2L_DEVICE` (default flex). Then, at n = 256,
//! d = h = 64, the steps of the additive scores: the broadcast sum alone,
//! the sum followed by tanh (in place, as `AdditiveAttention::scores` runs
//! it), and the product with w_v. Every row repeats in `ROUNDS` rounds, so
//! that a difference can be told from the machine's drift.
//!
//! Run: `cargo run --release -p d2l-attention --example scoring_cost`.

use burn::tensor::Device;
use d2l_attention::BackendChoice;
use d2l_attention::attention_scoring::{
    AdditiveAttentionConfig, DotProductAttentionConfig,
};
use d2l_attention::performance::median_seconds;
use d2l_attention::random::randn;

/// The page's sizes: (n, d, h).
const SIZES: [(usize, usize, usize); 5] = [
    (64, 64, 64),
    (256, 64, 64),
    (256, 64, 16),
    (256, 64, 256),
    (256, 256, 64),
];
const ROUNDS: usize = 3;

/// Milliseconds of one call of `f`: the median of 11 after 2 untimed.
fn millis(f: &dyn Fn()) -> f64 {
    median_seconds((2, 11, 1), f, || ()) * 1e3
}

fn main() -> anyhow::Result<()> {
    let backend = BackendChoice::from_env()?;
    let device = backend.device()?;
    println!("additive and scaled dot-product attention on {backend}, b = 2");
    for round in 1..=ROUNDS {
        println!("round {round}:   n    d    h  additive ms  dot ms  ratio");
        for (n, d, h) in SIZES {
            layers(&device, (n, d, h));
        }
        steps(&device);
    }
    Ok(())
}

/// One row: both layers' forward passes at (n, d, h).
fn layers(device: &Device, (n, d, h): (usize, usize, usize)) {
    let [queries, keys, values] =
        [1, 2, 3].map(|s| randn([2, n, d], s, device));
    let (q, k, v) = (&queries, &keys, &values);
    let additive = AdditiveAttentionConfig::new(d, d, h).init(device);
    let dot_product = DotProductAttentionConfig::new().init();
    let add_ms = millis(&|| {
        let out = additive.forward(q.clone(), k.clone(), v.clone(), None);
        let _ = out.output.into_data();
    });
    let dot_ms = millis(&|| {
        let out = dot_product.forward(q.clone(), k.clone(), v.clone(), None);
        let _ = out.output.into_data();
    });
    let ratio = add_ms / dot_ms;
    println!("{n:13} {d:4} {h:4} {add_ms:12.2} {dot_ms:7.2} {ratio:6.2}");
}

/// The additive scores' steps at n = 256, d = h = 64.
fn steps(device: &Device) {
    let (n, d, h) = (256, 64, 64);
    let layer = AdditiveAttentionConfig::new(d, d, h).init(device);
    let queries = layer.w_q.forward(randn([2, n, d], 1, device));
    let keys = layer.w_k.forward(randn([2, n, d], 2, device));
    let (q, k) = (queries.unsqueeze_dim::<4>(2), keys.unsqueeze_dim::<4>(1));
    let features = (q.clone() + k.clone()).tanh();
    let sum = millis(&|| {
        let _ = (q.clone() + k.clone()).into_data();
    });
    // the fresh sum is not shared, so tanh overwrites it in place
    let sum_tanh = millis(&|| {
        let _ = (q.clone() + k.clone()).tanh().into_data();
    });
    let w_v = millis(&|| {
        let _ = layer.w_v.forward(features.clone()).into_data();
    });
    println!(
        "  steps at n = {n}, d = h = {d}: sum {sum:.2} ms, sum and tanh \
         {sum_tanh:.2} ms, w_v {w_v:.2} ms"
    );
}
