//! The exercises of "The Transformer" (d2l zh §10.7, exercises 1–5; en
//! §11.7), each with a solution the book runs.

use std::fmt::Write;

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor, TensorData};

use super::bahdanau::EXAMPLES;
use super::transformer_training::Translate;
use super::{Check, Listing, Output};
use crate::attention_scoring::ValidLens;
use crate::machine_translation::{Corpus, bleu};
use crate::seq2seq::*;
use crate::transformer::*;

/// The listings of this section.
pub const LISTINGS: &[Listing] = &[
    Listing {
        name: "transformer-variants",
        file: file!(),
        check: Check::Facts(variants_facts),
        run: variants_exercise,
    },
    Listing::new("transformer-decoder-only", file!(), decoder_only_exercise),
    Listing::new("transformer-long", file!(), long_exercise),
    Listing::new("transformer-cache", file!(), cache_exercise),
];

/// The epochs of each variant's short training.
const VARIANT_EPOCHS: usize = 12;

/// Exercises 1 and 2: deeper, wider, and with additive attention, each
/// trained briefly on d2l's 600 pairs beside the chapter's model, with its
/// training time relative to the chapter's model's in the same run.
fn variants_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: variants
    let data = Corpus::load(None)?.training_data(10, 600)?;
    let base =
        TransformerConfig::new(data.src_vocab.len(), data.tgt_vocab.len());
    let variants = [
        ("d2l's: 2 layers of 32", base.clone()),
        ("deeper: 4 layers", base.clone().with_num_layers(4)),
        (
            "wider: 64 and FFN 128",
            base.clone().with_num_hiddens(64).with_ffn_num_hiddens(128),
        ),
        (
            "additive attention",
            base.clone().with_additive_hiddens(Some(32)),
        ),
    ];
    let config = TrainConfig::new().with_num_epochs(VARIANT_EPOCHS);
    let train_device = device.clone().autodiff();
    writeln!(
        out,
        "{:<24}{:>11}{:>8}{:>11}{:>8}",
        "model", "parameters", "loss", "mean BLEU", "time ×"
    )?;
    let mut base_seconds = None; // d2l's model's training time
    for (name, variant) in variants {
        train_device.seed(1);
        let model = variant.init(&train_device);
        let num_params = model.num_params();
        let (mut loss, mut seconds) = (f64::NAN, f64::NAN);
        let model = train_seq2seq(model, &data, &config, &train_device, |e| {
            (loss, seconds) = (e.loss, e.seconds)
        })?;
        let time = seconds / *base_seconds.get_or_insert(seconds);
        let mut total = 0.0;
        for (eng, fra) in EXAMPLES {
            total += bleu(&model.translate(eng, &data, device)?, fra, 2);
        }
        let mean = total / EXAMPLES.len() as f64;
        writeln!(
            out,
            "{name:<24}{num_params:>11}{loss:>8.3}{mean:>11.3}{time:>8.2}"
        )?;
    }
    // ANCHOR_END: variants
    Ok(())
}

/// The parameter counts of `transformer-variants`, from the sizes alone:
/// d2l's model, 4 layers, width 64, additive scoring (see the tests).
pub const VARIANT_PARAMS: [usize; 4] = [60937, 102921, 203593, 64201];

/// What `transformer-variants` prints on any machine: its header, then
/// for each variant its exact parameter count ([`VARIANT_PARAMS`]), a
/// finite positive loss after the short training, a mean BLEU in [0, 1]
/// and its training time relative to d2l's model: 1.00 for that model,
/// above 1 for the deeper and the wider one, positive for the last.
///
/// # Errors
/// The first fact that fails, quoting the line.
pub fn variants_facts(text: &str) -> anyhow::Result<()> {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    anyhow::ensure!(header.starts_with("model"), "header `{header}`");
    // d2l's model, then deeper, wider, additive: the least time ratio each
    // must exceed (d2l's own is exactly 1.00)
    let slower = [None, Some(1.0), Some(1.0), Some(0.0)];
    for (expected, slower) in VARIANT_PARAMS.into_iter().zip(slower) {
        let line = lines.next().unwrap_or_default();
        let words: Vec<&str> = line.split_whitespace().collect();
        let [.., params, loss, mean, time] = words[..] else {
            anyhow::bail!("short line `{line}`");
        };
        let number = |w: &str| w.parse::<f64>().unwrap_or(f64::NAN);
        let (loss, mean, ratio) = (number(loss), number(mean), number(time));
        anyhow::ensure!(
            params == expected.to_string()
                && loss.is_finite()
                && loss > 0.0
                && (0.0..=1.0).contains(&mean),
            "expected {expected} parameters, a loss and a BLEU: `{line}`"
        );
        let timed = match slower {
            None => time == "1.00",
            Some(least) => ratio.is_finite() && ratio > least,
        };
        anyhow::ensure!(timed, "a time ratio out of its range: `{line}`");
    }
    anyhow::ensure!(lines.next().is_none(), "more lines than variants");
    Ok(())
}

/// Exercise 3: a decoder without encoder–decoder attention, the shape of
/// a decoder-only language model, cannot see the source at all.
fn decoder_only_exercise(
    device: &Device,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: decoder_only
    let ints = |row: [i64; 3]| {
        Tensor::<2, Int>::from_data(
            TensorData::new(row.to_vec(), [1, 3]),
            device,
        )
    };
    let config = TransformerConfig::new(11, 13);
    let full = config.init(device);
    let decoder_only = config.clone().with_cross_attention(false).init(device);
    let target = ints([1, 6, 4]);
    for (name, model) in
        [("encoder-decoder", full), ("decoder only", decoder_only)]
    {
        let run = |src| model.forward(ints(src), target.clone(), None).output;
        let gap = (run([3, 5, 2]) - run([9, 9, 9])).abs().max();
        let changed = gap.into_scalar::<f32>() > 0.0;
        writeln!(
            out,
            "{name}: {} parameters; \
             another source changes the output: {changed}",
            model.decoder.num_params()
        )?;
    }
    // ANCHOR_END: decoder_only
    Ok(())
}

/// Exercise 4: self-attention over n tokens computes n² scores per head,
/// so its weights' memory grows with the square of the length.
fn long_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: long
    let block =
        TransformerBlockConfig::new(32, 64, 4).init_encoder_block(device);
    for n in [10, 100, 1000] {
        let x = Tensor::<3>::zeros([1, n, 32], device);
        let weights = block.forward(x, None).attention_weights;
        let bytes = weights.dims().iter().product::<usize>() * 4; // f32
        writeln!(
            out,
            "n = {n:>4}: weights {:?}, {bytes:>8} bytes per layer",
            weights.dims()
        )?;
    }
    // ANCHOR_END: long
    Ok(())
}

/// Exercise 5: the decoder's key–value cache. Step t then scores one
/// query against t keys, where recomputing the whole prefix scores t
/// queries against t keys: the same tokens, with less work.
fn cache_exercise(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: cache
    let model = TransformerConfig::new(11, 13)
        .with_dropout(0.0)
        .init(device);
    let source = Tensor::<2, Int>::from_ints([[3, 5, 2, 7]], device);
    let lens = ValidLens::new(&[4], device);
    let encoded = model.encoder.forward(source, Some(&lens));
    let fresh = || {
        model
            .decoder
            .init_state(encoded.clone(), Some(lens.clone()))
    };
    let num_steps = 10;
    let (mut cached, mut recomputed) = (vec![1i64], vec![1i64]); // <bos>
    let mut state = fresh();
    for _ in 0..num_steps {
        // with the cache: feed only the last token
        let last = cached[cached.len() - 1];
        let decoded = model
            .decoder
            .forward(Tensor::from_ints([[last]], device), state);
        state = decoded.state;
        cached.push(decoded.output.argmax(2).into_scalar::<i64>());
        // without: feed the whole prefix to a fresh state, keep the last step
        let n = recomputed.len();
        let prefix = TensorData::new(recomputed.clone(), [1, n]);
        let decoded = model
            .decoder
            .forward(Tensor::from_data(prefix, device), fresh());
        let next = decoded.output.narrow(1, n - 1, 1).argmax(2);
        recomputed.push(next.into_scalar::<i64>());
    }
    writeln!(
        out,
        "same tokens with and without the cache: {}",
        cached == recomputed
    )?;
    let with_cache: usize = (1..=num_steps).sum();
    let without: usize = (1..=num_steps).map(|t| t * t).sum();
    writeln!(
        out,
        "self-attention scores per head and layer, {num_steps} steps:"
    )?;
    writeln!(
        out,
        "  with the cache {with_cache}, recomputing the prefix {without}"
    )?;
    // ANCHOR_END: cache
    Ok(())
}
