//! The exercises of "Bahdanau Attention" (d2l zh §10.4, en §11.4) that
//! train: LSTM layers in place of the GRU (1), scaled dot-product scores
//! in place of the additive ones (2), and more training pairs (3).

use std::fmt::Write;

use burn::module::Module;
use burn::tensor::Device;

use super::bahdanau::{EXAMPLES, MAX_FINAL_LOSS, check_translation};
use super::{Check, Listing, Output, Progress};
use crate::attention_scoring::{AdditiveAttention, DotProductAttention};
use crate::bahdanau::{BahdanauModel, DecoderAttention, Seq2SeqConfig};
use crate::machine_translation::{Corpus, NmtData, bleu};
use crate::rnn::{GruLayer, LstmLayer, RnnLayer};
use crate::seq2seq::{
    Decoder, Encoder, EncoderDecoder, TrainConfig, predict_seq2seq,
    train_seq2seq,
};

/// The listings of this section.
pub const LISTINGS: &[Listing] = &[
    Listing {
        name: "bahdanau-lstm",
        file: file!(),
        check: Check::Facts(lstm_facts),
        run: lstm_demo,
    },
    Listing {
        name: "bahdanau-dot",
        file: file!(),
        check: Check::Facts(dot_facts),
        run: dot_demo,
    },
    Listing {
        name: "bahdanau-more-pairs",
        file: file!(),
        check: Check::Facts(more_pairs_facts),
        run: more_pairs_demo,
    },
];

/// The chapter's seed (initial weights and dropout masks).
const SEED: u64 = 1;

/// Pairs and epochs of exercise 3.
const MORE_PAIRS: (usize, usize) = (5000, 10);

// ANCHOR: fit
/// The chapter's model settings (embeddings and hidden states of 32, two
/// layers, dropout 0.1) for the vocabularies of `data`.
pub fn chapter_config(data: &NmtData) -> Seq2SeqConfig {
    let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
    Seq2SeqConfig::new(src, tgt, 32, 32, 2).with_dropout(0.1)
}

/// Prints the size of `model` and of an epoch, trains it on `data` as the
/// chapter does (batches of 64, Adam with learning rate 0.005, clipping at
/// norm 1) for `num_epochs`, then prints its final loss and the chapter's
/// four translations.
fn fit<E: Encoder, D: Decoder<E::Output>>(
    model: EncoderDecoder<E, D>,
    data: &NmtData,
    num_epochs: usize,
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    let config = TrainConfig::new()
        .with_batch_size(64)
        .with_num_epochs(num_epochs);
    let num_batches = data.len().div_ceil(config.batch_size);
    let num_params = model.num_params();
    writeln!(
        out,
        "{num_params} parameters, {num_batches} batches per epoch"
    )?;
    let mut progress = Progress::new(num_epochs)?;
    let train_device = device.clone().autodiff();
    let model = train_seq2seq(model, data, &config, &train_device, |e| {
        progress.epoch(e)
    })?;
    let last = progress.finish().pop().expect("at least one epoch");
    writeln!(out, "loss {:.3} after {} epochs", last.loss, last.epoch)?;
    for (eng, fra) in EXAMPLES {
        let (src, tgt) = (&data.src_vocab, &data.tgt_vocab);
        let t = predict_seq2seq(&model, eng, src, tgt, 10, device)?;
        let score = bleu(&t.text, fra, 2);
        writeln!(out, "{eng} => {}, bleu {score:.3}", t.text)?;
    }
    Ok(())
}

/// The chapter's run with recurrent layers `L` and attention `A`: its 600
/// pairs, its seed, 250 epochs, printed by `fit`.
fn fit_chapter<L: RnnLayer, A: DecoderAttention>(
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    let data = Corpus::load(None)?.training_data(10, 600)?;
    let train_device = device.clone().autodiff();
    train_device.seed(SEED);
    let model: BahdanauModel<L, A> =
        chapter_config(&data).init_variant(&train_device);
    fit(model, &data, 250, device, out)
}
// ANCHOR_END: fit

fn lstm_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: lstm
    fit_chapter::<LstmLayer, AdditiveAttention>(device, out)?;
    // ANCHOR_END: lstm
    Ok(())
}

fn dot_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: dot
    fit_chapter::<GruLayer, DotProductAttention>(device, out)?;
    // ANCHOR_END: dot
    Ok(())
}

fn more_pairs_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: more_pairs
    let (num_examples, num_epochs) = MORE_PAIRS; // (5000, 10)
    let data = Corpus::load(None)?.training_data(10, num_examples)?;
    let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
    writeln!(out, "{} pairs, vocabularies {src} and {tgt}", data.len())?;
    let train_device = device.clone().autodiff();
    train_device.seed(SEED);
    let model = chapter_config(&data).init(&train_device);
    fit(model, &data, num_epochs, device, out)?;
    // ANCHOR_END: more_pairs
    Ok(())
}

/// What the exercises' models weigh and how many batches make an epoch:
/// the chapter's model (49,449 parameters, 10 batches) with LSTM layers,
/// with dot-product scores, and on 5000 pairs (d2l's vocabularies of
/// those pairs, 875 and 1231 tokens).
pub const SIZES: [(usize, usize); 3] =
    [(58_921, 10), (47_369, 10), (138_511, 79)];

/// What `fit` printed: `sizes` (parameters and batches per epoch), a
/// final loss in `losses` after `num_epochs`, then the four [`EXAMPLES`],
/// the three training pairs exact when `exact`.
fn fit_facts(
    lines: &mut std::str::Lines,
    sizes: (usize, usize),
    num_epochs: usize,
    losses: std::ops::RangeInclusive<f64>,
    exact: bool,
) -> anyhow::Result<()> {
    let first = lines.next().unwrap_or_default();
    let expected =
        format!("{} parameters, {} batches per epoch", sizes.0, sizes.1);
    anyhow::ensure!(first == expected, "expected `{expected}`: `{first}`");
    let line = lines.next().unwrap_or_default();
    let loss = line
        .strip_prefix("loss ")
        .and_then(|rest| {
            rest.strip_suffix(&format!(" after {num_epochs} epochs"))
        })
        .and_then(|loss| loss.parse::<f64>().ok())
        .ok_or_else(|| {
            anyhow::anyhow!("no loss after {num_epochs} epochs: `{line}`")
        })?;
    anyhow::ensure!(
        losses.contains(&loss) && loss > 0.0,
        "final loss {loss} outside {losses:?}: `{line}`"
    );
    for (eng, fra) in EXAMPLES {
        let line = lines.next().unwrap_or_default();
        check_translation(line, eng, fra, exact && eng != EXAMPLES[2].0)?;
    }
    anyhow::ensure!(lines.next().is_none(), "more lines than expected");
    Ok(())
}

/// What `bahdanau-lstm` prints on any machine: its [`SIZES`], a final
/// loss above 0 and at most the chapter's [`MAX_FINAL_LOSS`] after 250
/// epochs, and the three training pairs among [`EXAMPLES`] translated
/// exactly ("he's calm ." as some words with a BLEU in [0, 1]).
///
/// # Errors
/// The first fact that fails, quoting the line.
pub fn lstm_facts(text: &str) -> anyhow::Result<()> {
    let losses = 0.0..=MAX_FINAL_LOSS;
    fit_facts(&mut text.lines(), SIZES[0], 250, losses, true)
}

/// What `bahdanau-dot` prints on any machine: as [`lstm_facts`], with its
/// own [`SIZES`].
///
/// # Errors
/// The first fact that fails, quoting the line.
pub fn dot_facts(text: &str) -> anyhow::Result<()> {
    let losses = 0.0..=MAX_FINAL_LOSS;
    fit_facts(&mut text.lines(), SIZES[1], 250, losses, true)
}

/// The data line `bahdanau-more-pairs` prints first.
pub const MORE_PAIRS_DATA: &str = "5000 pairs, vocabularies 875 and 1231";

/// What `bahdanau-more-pairs` prints on any machine: [`MORE_PAIRS_DATA`],
/// its [`SIZES`], a final loss after 10 epochs between 0.06 and 0.3 (at
/// least twice the chapter's bound [`MAX_FINAL_LOSS`]: a third as many
/// updates as the chapter's training, over 8 times the pairs, fit them
/// less well), and four translations with a BLEU in [0, 1] each.
///
/// # Errors
/// The first fact that fails, quoting the line.
pub fn more_pairs_facts(text: &str) -> anyhow::Result<()> {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or_default();
    anyhow::ensure!(
        first == MORE_PAIRS_DATA,
        "expected `{MORE_PAIRS_DATA}`: `{first}`"
    );
    fit_facts(&mut lines, SIZES[2], MORE_PAIRS.1, 0.06..=0.3, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn committed(name: &str) -> String {
        let path =
            format!("{}/../../figures/{name}.txt", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(path).unwrap()
    }

    /// The committed runs' facts hold; a run that differs where the facts
    /// speak fails them.
    #[test]
    fn the_exercises_facts_hold_and_catch_a_failed_run() {
        type Facts = fn(&str) -> anyhow::Result<()>;
        let checks: [(&str, Facts, usize); 3] = [
            ("bahdanau-lstm", lstm_facts, 250),
            ("bahdanau-dot", dot_facts, 250),
            ("bahdanau-more-pairs", more_pairs_facts, MORE_PAIRS.1),
        ];
        for ((name, facts, epochs), (params, batches)) in
            checks.into_iter().zip(SIZES)
        {
            let text = committed(name);
            facts(&text).unwrap();
            let loss = text.lines().find(|l| l.starts_with("loss ")).unwrap();
            let loss_of = |value| format!("loss {value} after {epochs} epochs");
            for (from, to) in [
                (loss.to_owned(), loss_of("0.400")),
                (loss.to_owned(), loss_of("0.000")),
                (
                    format!("{params} parameters"),
                    format!("{} parameters", params + 1),
                ),
                (
                    format!("{batches} batches"),
                    format!("{} batches", batches - 1),
                ),
            ] {
                let broken = text.replace(&from, &to);
                assert!(
                    broken != text && facts(&broken).is_err(),
                    "{name}: {to}"
                );
            }
            assert!(facts(&format!("{text}extra line\n")).is_err(), "{name}");
        }
        let wrong = committed("bahdanau-lstm").replace("va !", "marche .");
        assert!(lstm_facts(&wrong).is_err());
        let text = committed("bahdanau-more-pairs");
        let loss = text.lines().find(|l| l.starts_with("loss ")).unwrap();
        // as well fitted as the chapter's 600 pairs: not after 10 epochs
        let fitted = text.replace(loss, "loss 0.020 after 10 epochs");
        assert!(more_pairs_facts(&fitted).is_err());
    }
}
