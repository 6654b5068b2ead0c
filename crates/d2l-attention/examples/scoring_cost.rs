//! Times additive and scaled dot-product attention at the sizes the
//! scoring page's exercise 4 counts (d2l en §11.3, exercise 3): the median
//! wall time of one forward pass of each, its output read back, over `b` =
//! 2 batches of n queries and n keys of d features (values of d), on the
//! backend named by `D2L_DEVICE` (default flex). The rows repeat in
//! `ROUNDS` rounds, the two layers timed in turn, so that a difference
//! can be told from the machine's drift. Then the three steps of the
//! additive scores, timed one by one.
//!
//! Run: `cargo run --release -p d2l-attention --example scoring_cost`.

#[path = "../benches/common/mod.rs"]
mod common;

use common::median_seconds;
use d2l_attention::BackendChoice;
use d2l_attention::attention_scoring::{
    AdditiveAttentionConfig, DotProductAttentionConfig,
};
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

fn main() -> anyhow::Result<()> {
    let backend = BackendChoice::from_env()?;
    let device = backend.device()?;
    println!("additive and scaled dot-product attention on {backend}, b = 2");
    println!("round   n    d    h  additive ms  dot ms  ratio");
    for round in 1..=ROUNDS {
        for (n, d, h) in SIZES {
            let queries = randn([2, n, d], 1, &device);
            let keys = randn([2, n, d], 2, &device);
            let values = randn([2, n, d], 3, &device);
            let additive = AdditiveAttentionConfig::new(d, d, h).init(&device);
            let dot = DotProductAttentionConfig::new().init();
            let (q, k, v) = (&queries, &keys, &values);
            let time = |f: &dyn Fn()| median_seconds((2, 11, 1), f, || ());
            let add = time(&|| {
                let out =
                    additive.forward(q.clone(), k.clone(), v.clone(), None);
                let _ = out.output.into_data();
            });
            let dot = time(&|| {
                let out = dot.forward(q.clone(), k.clone(), v.clone(), None);
                let _ = out.output.into_data();
            });
            println!(
                "{round:5} {n:3} {d:4} {h:4} {:12.2} {:7.2} {:6.2}",
                add * 1e3,
                dot * 1e3,
                add / dot
            );
        }
    }
    steps(&device);
    Ok(())
}

/// Where additive attention's time goes at n = 256, d = h = 64: each step
/// of its scores on its own, read back.
fn steps(device: &burn::tensor::Device) {
    let (n, d, h) = (256, 64, 64);
    let layer = AdditiveAttentionConfig::new(d, d, h).init(device);
    let queries = layer.w_q.forward(randn([2, n, d], 1, device));
    let keys = layer.w_k.forward(randn([2, n, d], 2, device));
    let (q, k) = (queries.unsqueeze_dim::<4>(2), keys.unsqueeze_dim::<4>(1));
    let sum = q.clone() + k.clone();
    let features = sum.clone().tanh();
    let time = |name: &str, f: &dyn Fn()| {
        let ms = median_seconds((2, 11, 1), f, || ()) * 1e3;
        println!("{name:>28} {ms:8.2} ms");
    };
    println!("the steps of the scores at n = {n}, d = h = {d}:");
    time("q + k, (2, n, n, h)", &|| {
        let _ = (q.clone() + k.clone()).into_data();
    });
    time("tanh", &|| {
        let _ = sum.clone().tanh().into_data();
    });
    time("w_v, (2, n, n, h) → (2, n, n)", &|| {
        let _ = layer.w_v.forward(features.clone()).into_data();
    });
}
