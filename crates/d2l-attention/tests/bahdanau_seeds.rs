//! The Bahdanau chapter's training for every seed of
//! `listings::bahdanau::SEEDS`: writes the report that the listing
//! `bahdanau-seeds` reads (`tests/reports/`, committed), with the day and
//! the CPU (as the benchmark suite names it). Needs the corpus and minutes of a release build: `cargo test
//! --release -p d2l-attention --test bahdanau_seeds -- --ignored
//! --nocapture`.

use std::path::Path;

#[path = "../benches/common/mod.rs"]
mod common;

use burn::tensor::Device;
use d2l_attention::files::write_atomic;
use d2l_attention::listings::Output;
use d2l_attention::listings::bahdanau::*;

#[test]
#[ignore = "needs the corpus and minutes of a release build"]
fn the_chapter_s_training_for_every_seed() {
    // the models go to a scratch folder, not to the book's models/
    let scratch = tempfile::tempdir().unwrap();
    let device = Device::flex();
    let mut runs = Vec::new();
    for seed in SEEDS {
        let run = train_run(seed, &device, &mut Output::new(scratch.path()));
        let run = run.unwrap();
        println!("{run:?}");
        assert_eq!(run.translations.len(), EXAMPLES.len(), "{run:?}");
        runs.push(run);
    }
    let report = SeedReport {
        date: today(),
        cpu: common::cpu(),
        runs,
    };
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(REPORT_PATH);
    let json = serde_json::to_string_pretty(&report).unwrap() + "\n";
    write_atomic(&path, json.as_bytes()).unwrap();
}

/// `date +%F`.
fn today() -> String {
    let out = std::process::Command::new("date").arg("+%F").output();
    String::from_utf8(out.unwrap().stdout)
        .unwrap()
        .trim()
        .to_owned()
}
