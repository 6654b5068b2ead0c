//! How much faster is vectorised self-attention than the double loop of
//! its definition (d2l §10.3, the notebook 注意力机制)? Median wall time of
//! each for growing sequence lengths N, on the backend named by
//! `D2L_DEVICE` (default flex).
//!
//! Run: `cargo bench -p d2l-attention --bench self_attention`.

mod common;

use d2l_attention::performance::median_seconds;
use d2l_attention::BackendChoice;
use d2l_attention::attention_scoring::{self_attention, self_attention_loop};
use d2l_attention::random::randn;

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
        // Each call reads the result back, so that a lazy backend computes it.
        let looped = median_seconds(
            (0, 5, 1),
            || {
                let _ = self_attention_loop(&x, &w_q, &w_k, &w_v).into_data();
            },
            || (),
        );
        let vectorised = median_seconds(
            (0, 51, 1),
            || {
                let _ = self_attention(&x, &w_q, &w_k, &w_v).0.into_data();
            },
            || (),
        );
        let speedup = looped / vectorised;
        println!(
            "{n:>5} {:>10.3}ms {:>12.3}ms {speedup:>8.0}×",
            looped * 1e3,
            vectorised * 1e3
        );
    }
    Ok(())
}
