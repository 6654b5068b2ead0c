//! The comparison of "Efficient Attention" (key/value heads, positions,
//! windows on the long task) for every seed of its design: writes the
//! report that the listing `efficient-seeds` reads (`tests/reports/`,
//! committed). Needs the corpus and about 13 minutes of a release build:
//! `cargo test --release -p d2l-attention --test efficient_seeds --
//! --ignored --nocapture`.

use std::path::Path;

use burn::tensor::Device;
use d2l_attention::files::write_atomic;
use d2l_attention::listings::efficient::*;

#[test]
#[ignore = "needs the corpus and minutes of a release build"]
fn every_variant_for_every_seed() {
    let (data, long) = long_task().unwrap();
    let device = Device::flex();
    let mut runs = Vec::new();
    for seed in SEEDS {
        for variant in VARIANTS {
            let run =
                efficient_run((&data, &long), variant, seed, &device).unwrap();
            println!("{run:?}");
            assert!(run.buckets.iter().all(|l| l.is_finite()), "{run:?}");
            runs.push(run);
        }
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(REPORT_PATH);
    let json = serde_json::to_string_pretty(&runs).unwrap() + "\n";
    write_atomic(&path, json.as_bytes()).unwrap();
}
