//! The facts that `listing-runner check` asserts of "Large-Scale
//! Pretraining with Transformers"'s trainings (fine-tuning included), held
//! by the seeds 2 and 3 as by the listings' seed 1 (whose outputs the tests
//! check). Needs the corpus and minutes of a release build: `cargo test
//! --release -p d2l-attention --test pretrain_seeds -- --ignored
//! --nocapture`.

use std::path::Path;

use burn::tensor::Device;
use d2l_attention::listings::pretraining::*;
use d2l_attention::listings::{BUILT_FROM, Output};

type Run = fn(&Device, u64, &mut Output) -> anyhow::Result<()>;
type Facts = fn(&str) -> anyhow::Result<()>;

#[test]
#[ignore = "needs the corpus and minutes of a release build"]
fn the_facts_hold_for_other_seeds() {
    let device = Device::flex();
    let runs: [(&str, Run, Facts); 2] =
        [("t5", t5_run, t5_facts), ("gpt", gpt_run, gpt_facts)];
    for seed in [2, 3] {
        let mut out = Output::new(Path::new(BUILT_FROM));
        let (bert, data) = bert_run(&device, seed, &mut out).unwrap();
        println!("seed {seed}, bert:\n{}", out.text());
        bert_facts(out.text()).unwrap();
        let mut out = Output::new(Path::new(BUILT_FROM));
        finetune_run(&data, bert, seed, &mut out).unwrap();
        println!("seed {seed}, fine-tuning:\n{}", out.text());
        finetune_facts(out.text()).unwrap();
        for (name, run, facts) in runs {
            let mut out = Output::new(Path::new(BUILT_FROM));
            run(&device, seed, &mut out).unwrap();
            println!("seed {seed}, {name}:\n{}", out.text());
            facts(out.text()).unwrap();
        }
    }
}
