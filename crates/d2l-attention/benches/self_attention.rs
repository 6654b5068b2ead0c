//! How much faster is vectorised self-attention than the double loop of
//! its definition (d2l §10.3, the notebook 注意力机制)? Median wall time of
//! each for growing sequence lengths N, on the backend named by
//! `D2L_DEVICE` (default flex).
//!
//! Run: `cargo bench -p d2l-attention --bench self_attention`.

use std::time::{Duration, Instant};

use burn::tensor::Tensor;
use d2l_attention::BackendChoice;
use d2l_attention::attention_scoring::{self_attention, self_attention_loop};
use d2l_attention::random::randn;

/// Median of `runs` timings of `f`; each run reads the result back, so
/// that lazy backends really compute it.
fn median(runs: usize, mut f: impl FnMut() -> Tensor<2>) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            let _ = f().into_data();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn main() -> anyhow::Result<()> {
    let backend = BackendChoice::from_env()?;
    let device = backend.device()?;
    let (d1, d2, d3) = (64, 64, 64);
    let (w_q, w_k, w_v) = (
        randn([d3, d1], 1, &device),
        randn([d3, d1], 2, &device),
        randn([d2, d1], 3, &device),
    );
    println!("self-attention on {backend}: d1 = d2 = d3 = 64");
    println!(
        "{:>5} {:>12} {:>14} {:>9}",
        "N", "loop", "vectorised", "speed-up"
    );
    for n in [8, 16, 32, 64] {
        let x = randn([d1, n], 4, &device);
        let looped = median(5, || self_attention_loop(&x, &w_q, &w_k, &w_v));
        let vectorised = median(51, || self_attention(&x, &w_q, &w_k, &w_v).0);
        let speedup = looped.as_secs_f64() / vectorised.as_secs_f64();
        println!(
            "{n:>5} {:>10.3}ms {:>12.3}ms {speedup:>8.0}×",
            looped.as_secs_f64() * 1e3,
            vectorised.as_secs_f64() * 1e3
        );
    }
    Ok(())
}
