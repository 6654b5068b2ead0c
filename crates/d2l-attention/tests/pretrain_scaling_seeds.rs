//! The scaling study of "Large-Scale Pretraining with Transformers" for
//! every seed of its design: writes the report that the listing
//! `pretrain-scaling-fits` reads (`tests/reports/`, committed).
//! Needs the corpus and about ten minutes of a release build: `cargo test
//! --release -p d2l-attention --test pretrain_scaling_seeds -- --ignored
//! --nocapture`.

use std::path::Path;

use burn::tensor::Device;
use d2l_attention::files::write_atomic;
use d2l_attention::listings::pretraining::chapter_data;
use d2l_attention::listings::pretraining_scaling::*;

#[test]
#[ignore = "needs the corpus and minutes of a release build"]
fn the_grid_for_every_seed() {
    let data = chapter_data().unwrap();
    let device = Device::flex();
    let mut runs = Vec::new();
    for seed in SEEDS {
        for run in scaling_grid(&data, seed, &device).unwrap() {
            println!("{run:?}");
            assert!(run.loss.is_finite(), "{run:?}");
            runs.push(run);
        }
    }
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(REPORT_PATH);
    let json = serde_json::to_string_pretty(&runs).unwrap() + "\n";
    write_atomic(&path, json.as_bytes()).unwrap();
}
