//! How fast, and how well, does the Bahdanau model of d2l §10.4 train?
//! Trains the chapter's configuration (embed 32, hidden 32, 2 layers,
//! dropout 0.1, batch 64, num_steps 10, 600 pairs) and prints target tokens
//! per second (the number d2l's `train_seq2seq` reports), then the BLEU of
//! the chapter's four translations. The backend comes from `D2L_DEVICE`
//! (default flex); the corpus is found as in the chapter (`D2L_DATA_DIR`,
//! then the cache, then a download).
//!
//! Run: `cargo bench -p d2l-attention --bench bahdanau_train [-- EPOCHS [SEED]]
//! [--variant lstm|dot] [--examples N]` (default 25 epochs, seed 0, d2l's
//! GRU with additive attention, 600 pairs; the chapter trains 250 epochs).
//! The variants are the chapter's exercises 1 (LSTM layers) and 2
//! (scaled dot-product attention); `--examples 5000` is its exercise 3.
//! The benchmark suite (`benches/suite.rs`) times the d2l training next to
//! d2l's in PyTorch.

mod common;

use burn::module::Module;
use burn::tensor::Device;
use d2l_attention::BackendChoice;
use d2l_attention::attention_scoring::DotProductAttention;
use d2l_attention::bahdanau::BahdanauModel;
use d2l_attention::listings::bahdanau::EXAMPLES;
use d2l_attention::listings::bahdanau_exercises::chapter_config;
use d2l_attention::machine_translation::{Corpus, NmtData, bleu};
use d2l_attention::rnn::{GruLayer, LstmLayer};
use d2l_attention::seq2seq::{
    Decoder, Encoder, EncoderDecoder, TrainConfig, predict_seq2seq,
    train_seq2seq,
};

/// The allocator of the book's listing runner (`listing-runner`), which trains the chapter.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The model to train.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum Variant {
    /// d2l's: GRU layers, additive attention.
    Gru,
    /// Exercise 1: LSTM layers, additive attention.
    Lstm,
    /// Exercise 2: GRU layers, scaled dot-product attention.
    Dot,
}

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
    /// The model.
    #[arg(long, value_enum, default_value_t = Variant::Gru)]
    variant: Variant,
    /// Training pairs, the first of the corpus (the chapter's 600).
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    examples: u64,
    /// Added by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() -> anyhow::Result<()> {
    let args: Args = clap::Parser::parse();
    let backend = BackendChoice::from_env()?;
    let device = backend.device()?;
    let train_device = device.clone().autodiff();
    let corpus = Corpus::load(None)?; // as the chapter reads it
    let data = corpus.training_data(10, args.examples as usize)?;
    train_device.seed(args.seed);
    let config = chapter_config(&data);
    println!(
        "{:?} on {backend}, {} pairs, seed {}:",
        args.variant,
        data.len(),
        args.seed
    );
    match args.variant {
        Variant::Gru => run(config.init(&train_device), &data, &args, &device),
        Variant::Lstm => {
            let model: BahdanauModel<LstmLayer> =
                config.init_variant(&train_device);
            run(model, &data, &args, &device)
        }
        Variant::Dot => {
            let model: BahdanauModel<GruLayer, DotProductAttention> =
                config.init_variant(&train_device);
            run(model, &data, &args, &device)
        }
    }
}

/// Trains `model`, prints its speed, then its BLEU on the four examples.
fn run<E: Encoder, D: Decoder<E::Output>>(
    model: EncoderDecoder<E, D>,
    data: &NmtData,
    args: &Args,
    device: &Device,
) -> anyhow::Result<()> {
    let num_epochs = args.epochs as usize;
    let num_params = model.num_params();
    let config = TrainConfig::new()
        .with_batch_size(64)
        .with_num_epochs(num_epochs);
    let mut last = None;
    let train_device = device.clone().autodiff();
    let model =
        train_seq2seq(model, data, &config, &train_device, |e| last = Some(e))?;
    let last = last.expect("at least one epoch");
    println!(
        "  {num_params} parameters, {num_epochs} epochs: loss {:.3}, {:.0} tokens/s, {:.1} s, {:.3} s per epoch",
        last.loss,
        last.tokens_per_sec(),
        last.seconds,
        last.seconds / num_epochs as f64
    );
    let mut total = 0.0;
    for (eng, fra) in EXAMPLES {
        let t = predict_seq2seq(
            &model,
            eng,
            &data.src_vocab,
            &data.tgt_vocab,
            10,
            device,
        )?;
        let score = bleu(&t.text, fra, 2);
        total += score;
        println!("  {eng} => {}, bleu {score:.3}", t.text);
    }
    println!("  mean bleu {:.3}", total / EXAMPLES.len() as f64);
    Ok(())
}
