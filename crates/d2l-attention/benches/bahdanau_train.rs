//! How fast, and how well, does the Bahdanau model of d2l §10.4 train?
//! Trains the chapter's configuration (embed 32, hidden 32, 2 layers,
//! dropout 0.1, batch 64, num_steps 10, 600 pairs) and prints target tokens
//! per second (the number d2l's `train_seq2seq` reports), then the BLEU of
//! the chapter's four translations. The backend comes from `D2L_DEVICE`
//! (default flex); the corpus is found as in the chapter (`D2L_DATA_DIR`,
//! then the cache, then a download).
//!
//! Run: `cargo bench -p d2l-attention --bench bahdanau_train [-- EPOCHS [SEED]]`
//! (default 25 epochs and seed 0; the chapter trains 250 epochs).
//! The benchmark suite (`benches/suite.rs`) times the same training next to
//! d2l's in PyTorch.

mod common;

use burn::module::Module;
use d2l_attention::BackendChoice;
use d2l_attention::listings::bahdanau::EXAMPLES;
use d2l_attention::machine_translation::{NmtData, bleu, load_fra_eng};
use d2l_attention::seq2seq::{TrainConfig, predict_seq2seq, train_seq2seq};

/// The allocator of the book's `mdbook-listings`, which trains the chapter.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The command line.
#[derive(clap::Parser)]
#[command(about = "Trains d2l's Bahdanau model and prints tokens/s and BLEU")]
struct Args {
    /// Training epochs (the chapter trains 250).
    #[arg(default_value_t = 25, value_parser = clap::value_parser!(u64).range(1..))]
    epochs: u64,
    /// The seed of the initial weights and dropout masks (the chapter uses 1).
    #[arg(default_value_t = 0)]
    seed: u64,
    /// Added by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> anyhow::Result<()> {
    let Args { epochs, seed, .. } = clap::Parser::parse();
    let num_epochs = epochs as usize;
    let backend = BackendChoice::from_env()?;
    let device = backend.device()?;
    let train_device = device.clone().autodiff();
    let data = NmtData::new(&load_fra_eng(None)?, 10, 600)?;
    train_device.seed(seed);
    let model = common::bahdanau(&data, &train_device);
    let config = TrainConfig::new()
        .with_batch_size(64)
        .with_num_epochs(num_epochs);
    let mut last = None;
    let model = train_seq2seq(model, &data, &config, &train_device, |e| {
        last = Some(e)
    })?;
    let last = last.expect("at least one epoch");
    println!(
        "{num_epochs} epochs on {backend}, seed {seed}: loss {:.3}, {:.0} tokens/s, {:.1} s",
        last.loss,
        last.tokens_per_sec(),
        last.seconds
    );
    let model = model.valid();
    let mut total = 0.0;
    for (eng, fra) in EXAMPLES {
        let t = predict_seq2seq(
            &model,
            eng,
            &data.src_vocab,
            &data.tgt_vocab,
            10,
            &device,
        )?;
        let score = bleu(&t.text, fra, 2);
        total += score;
        println!("  {eng} => {}, bleu {score:.3}", t.text);
    }
    println!("  mean bleu {:.3}", total / EXAMPLES.len() as f64);
    Ok(())
}
