//! The trainings of "Large-Scale Pretraining with Transformers" (d2l en
//! §11.9), small: the corpus's English sentences, an encoder-only model
//! trained to restore masked words (BERT), the chapter's Transformer
//! trained to restore corrupted spans (T5), and a decoder-only model
//! trained to predict the next word (GPT).

use std::fmt::Write;
use std::path::{Path, PathBuf};

use burn::tensor::{Device, Int, Tensor};

use super::{Check, Listing, Output};
use chacha20::ChaCha12Rng;
use rand::{RngExt, SeedableRng};

use crate::attention_scoring::ValidLens;
use crate::machine_translation::{Corpus, NmtData, Pairs};
use crate::plot::{Diagram, Node, Scale};
use crate::pretraining::*;
use crate::seq2seq::{
    AttentionKind, Encoder, ModelInfo, TrainConfig, Translation, load_model,
    predict_seq2seq, save_model, train_seq2seq,
};
use crate::transformer::TransformerConfig;
use crate::{Axes, HeatmapOptions, Series, plot, show_heatmaps};
use plotters::style::{RGBColor, WHITE};

/// The listings of this section.
pub const LISTINGS: &[Listing] = &[
    Listing {
        name: "pretrain-data",
        file: file!(),
        check: Check::Facts(data_facts),
        run: data_demo,
    },
    Listing {
        name: "pretrain-bert",
        file: file!(),
        check: Check::Facts(bert_facts),
        run: bert_demo,
    },
    Listing {
        name: "pretrain-t5",
        file: file!(),
        check: Check::Facts(t5_facts),
        run: t5_demo,
    },
    Listing {
        name: "pretrain-finetune",
        file: file!(),
        check: Check::Facts(finetune_facts),
        run: finetune_demo,
    },
    Listing {
        name: "pretrain-gpt",
        file: file!(),
        check: Check::Facts(gpt_facts),
        run: gpt_demo,
    },
    Listing::new("pretrain-modes", file!(), modes_demo),
    Listing::new("pretrain-source", file!(), source_demo),
];

/// The seed of the initial weights.
pub const SEED: u64 = 1;

/// The sentences every part of the chapter uses.
// ANCHOR: data_config
pub fn chapter_data() -> anyhow::Result<LmData> {
    let corpus = Corpus::load(None)?; // downloaded once, then cached
    // the distinct English sentences of the first 60,000 pairs, a tenth of
    // them held out (shuffled with seed 0), words seen at least 3 times in
    // the training sentences
    Ok(LmData::english(&corpus, 60_000, 0.1, 3, 0)?)
}
// ANCHOR_END: data_config

/// The chapter's model sizes for a vocabulary of `vocab_len`.
// ANCHOR: model_config
pub fn book_lm(vocab_len: usize) -> TransformerConfig {
    // the sizes of "The Transformer": 32 hidden, FFN 64, 4 heads, 2 blocks;
    // no dropout
    TransformerConfig::new(vocab_len, vocab_len).with_dropout(0.0)
}
// ANCHOR_END: model_config

fn data_demo(_: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: data
    let data = chapter_data()?;
    let (train, valid) = (&data.train, &data.valid);
    writeln!(
        out,
        "sentences: {} training, {} held out",
        train.len(),
        valid.len()
    )?;
    writeln!(
        out,
        "tokens with <eos>: {} training, {} held out",
        LmData::num_tokens(train),
        LmData::num_tokens(valid)
    )?;
    writeln!(out, "vocabulary: {} tokens", data.vocab.len())?;
    for sentence in &valid[..3] {
        writeln!(out, "  {}", data.decode(sentence))?;
    }
    // ANCHOR_END: data
    Ok(())
}

/// What `pretrain-data` prints for d2l's `fra.txt` on any machine (the
/// split and the vocabulary involve no floating point).
pub fn data_facts(text: &str) -> anyhow::Result<()> {
    let expected = [
        "sentences: 34831 training, 3871 held out",
        "tokens with <eos>: 213330 training, 23621 held out",
        "vocabulary: 2850 tokens",
    ];
    let lines: Vec<&str> = text.lines().collect();
    anyhow::ensure!(lines.len() == 6, "{} lines, expected 6", lines.len());
    for (line, want) in lines.into_iter().zip(expected) {
        anyhow::ensure!(line == want, "`{line}`, expected `{want}`");
    }
    Ok(())
}

/// Each token's share of the training tokens (words and `<eos>`), by
/// index: a model that ignores every context can do no better.
pub fn frequencies(data: &LmData) -> Vec<f64> {
    let mut counts = vec![0.0; data.vocab.len()];
    for s in &data.train {
        s.iter().chain([&EOS]).for_each(|&t| counts[t] += 1.0);
    }
    let total: f64 = counts.iter().sum();
    counts.iter().map(|c| c / total).collect()
}

/// The cross-entropy, in nats per token, of the held-out tokens (words
/// and `<eos>`) under [`frequencies`].
pub fn unigram_loss(data: &LmData) -> f64 {
    let freq = frequencies(data);
    let held: Vec<usize> = data
        .valid
        .iter()
        .flat_map(|s| s.iter().copied().chain([EOS]))
        .collect();
    let nats: f64 = held.iter().map(|&t| -freq[t].ln()).sum();
    nats / held.len() as f64
}

/// One line of a training's progress, on stderr.
fn progress(e: LmEpoch) {
    eprintln!(
        "epoch {}: loss {:.3}, held-out loss {:.3}, {:.0} tokens/s",
        e.epoch,
        e.loss,
        e.valid_loss,
        e.tokens_per_sec()
    );
}

/// The last epoch's losses and speed, as the facts read them.
fn report(out: &mut Output, epochs: &[LmEpoch]) -> anyhow::Result<()> {
    let last = epochs.last().expect("at least one epoch");
    writeln!(
        out,
        "after {} epochs: loss {:.3}, held-out loss {:.3}, {:.0} predicted tokens/s",
        last.epoch,
        last.loss,
        last.valid_loss,
        last.tokens_per_sec()
    )?;
    Ok(())
}

/// The held-out sentences the chapter masks a word of: the first `n` of
/// at least 4 words, all known, with the middle word masked.
fn probes(data: &LmData, n: usize) -> Vec<(Vec<usize>, usize)> {
    data.valid
        .iter()
        .filter(|s| s.len() >= 4 && !s.contains(&0))
        .take(n)
        .map(|s| (s.clone(), s.len() / 2))
        .collect()
}

fn bert_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    let (model, data) = bert_run(device, SEED, out)?;
    save_model(&model, &bert_info(&data), &bert_path(out.root()))?;
    Ok(())
}

/// Where `pretrain-bert` keeps its trained model for fine-tuning: in the
/// book's `target/` under `root` (ignored by git; each checkout its own),
/// trained again when missing.
fn bert_path(root: &Path) -> PathBuf {
    root.join("target").join("bert-fra-eng-english.bpk")
}

fn bert_info(data: &LmData) -> ModelInfo {
    ModelInfo::new(&book_lm(data.vocab.len()), &data.vocab, &data.vocab)
}

/// `pretrain-bert` with the initial weights drawn from `seed`; the
/// trained model (in training mode, on the autodiff form of `device`) and
/// its data.
pub fn bert_run(
    device: &Device,
    seed: u64,
    out: &mut Output,
) -> anyhow::Result<(MaskedLm, LmData)> {
    // ANCHOR: bert
    let data = chapter_data()?;
    let train_device = device.clone().autodiff();
    train_device.seed(seed); // initial weights
    let model = MaskedLm::new(&book_lm(data.vocab.len()), &train_device);
    // one word in six to predict: more, smaller steps than the others take
    let config = TrainConfig::new()
        .with_lr(0.002)
        .with_batch_size(32)
        .with_num_epochs(8);
    let mut epochs = Vec::new();
    let model = pretrain(model, &data, &config, &train_device, |e| {
        progress(e);
        epochs.push(e)
    })?;
    // ANCHOR_END: bert
    report(out, &epochs)?;
    let held_out = masked_accuracy(&model, &data, device)?;
    writeln!(out, "{held_out}")?;
    // ANCHOR: fill
    for (sentence, at) in probes(&data, 4) {
        let mut masked = sentence.clone();
        masked[at] = MASK;
        let filled = fill_mask(&model, &masked, 5, device)?;
        let guesses: Vec<String> = filled
            .candidates
            .iter()
            .map(|&(token, p)| format!("{} {p:.2}", data.vocab.token(token)))
            .collect();
        writeln!(
            out,
            "{} ({})",
            data.decode(&masked),
            data.vocab.token(sentence[at])
        )?;
        writeln!(out, "  => {}", guesses.join("   "))?;
    }
    // ANCHOR_END: fill
    let (sentence, at) = probes(&data, 1).remove(0);
    let mut masked = sentence;
    masked[at] = MASK;
    let filled = fill_mask(&model, &masked, 1, device)?;
    let tokens = ["<cls>".to_owned()]
        .into_iter()
        .chain(data.decode(&masked).split(' ').map(str::to_owned))
        .chain(["<eos>".to_owned()])
        .collect::<Vec<_>>();
    let weights = filled.attention_weights.iter().map(|w| w.tensor());
    let grid = layer_head_grid(&weights.collect::<Vec<_>>());
    let figure = attention_figure(&grid, &tokens, &tokens, "Keys", "Queries")?;
    out.figure("pretrain-bert-attention", figure);
    Ok((model, data))
}

/// Restored words on the held-out sentences, counting only the words that
/// became `<mask>` (masks from seed 0, as [`lm_valid_loss`] draws them),
/// against always guessing the most frequent training word.
#[derive(Clone, Debug)]
pub struct MaskedAccuracy {
    /// Words that became `<mask>`.
    pub count: usize,
    /// Share whose likeliest token was the right one.
    pub top1: f64,
    /// Share with the right one among the five likeliest.
    pub top5: f64,
    /// The most frequent training word.
    pub top_word: String,
    /// Share equal to it.
    pub baseline: f64,
}

impl std::fmt::Display for MaskedAccuracy {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(
            f,
            "{} held-out words masked: top-1 {:.3}, top-5 {:.3}\n\
             the most frequent word (\"{}\") every time: {:.3}",
            self.count, self.top1, self.top5, self.top_word, self.baseline
        )
    }
}

fn masked_accuracy(
    model: &MaskedLm,
    data: &LmData,
    device: &Device,
) -> anyhow::Result<MaskedAccuracy> {
    let freq = frequencies(data);
    let top_word = (FIRST_WORD..freq.len())
        .max_by(|&a, &b| freq[a].total_cmp(&freq[b]))
        .expect("words");
    let (mut count, mut top1, mut top5, mut baseline) = (0, 0, 0, 0);
    let vocab_len = data.vocab.len();
    let model = burn::module::Module::valid(model);
    for batch in MaskedLm::batches(&data.valid, vocab_len, 256, 0, device) {
        let ([b, p], n, v) =
            (batch.labels.dims(), batch.tokens.dims()[1], vocab_len);
        let scores = model.logits(&batch).try_into_vec_as::<f32>()?;
        let labels = batch.labels.try_into_vec_as::<i64>()?;
        let weights = batch.weights.try_into_vec_as::<f32>()?;
        let tokens = batch.tokens.try_into_vec_as::<i64>()?;
        let positions = batch
            .positions
            .expect("a masked batch")
            .try_into_vec_as::<i64>()?;
        for i in 0..b * p {
            // only the words that became <mask>, not those kept or replaced
            let input = tokens[i / p * n + positions[i] as usize] as usize;
            if weights[i] == 0.0 || input != MASK {
                continue;
            }
            let row = &scores[i * v..(i + 1) * v];
            let label = labels[i] as usize;
            let above = row.iter().filter(|&&s| s > row[label]).count();
            count += 1;
            top1 += usize::from(above == 0);
            top5 += usize::from(above < 5);
            baseline += usize::from(label == top_word);
        }
    }
    let share = |n: usize| n as f64 / count as f64;
    Ok(MaskedAccuracy {
        count,
        top1: share(top1),
        top5: share(top5),
        top_word: data.vocab.token(top_word).to_owned(),
        baseline: share(baseline),
    })
}

/// The number after `key ` in `line`.
fn number_after(line: &str, key: &str) -> anyhow::Result<f64> {
    let at = line
        .find(&format!("{key} "))
        .ok_or_else(|| anyhow::anyhow!("no `{key}` in `{line}`"))?;
    let rest = &line[at + key.len() + 1..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    Ok(rest[..end].parse()?)
}

/// The training and held-out losses of a `report` line, checked to be
/// within `gap` of each other (no overfitting).
fn losses(line: &str, gap: f64) -> anyhow::Result<(f64, f64)> {
    let (loss, held) = (
        number_after(line, "loss")?,
        number_after(line, "held-out loss")?,
    );
    anyhow::ensure!(
        (loss - held).abs() <= gap,
        "the losses differ by more than {gap}: `{line}`"
    );
    Ok((loss, held))
}

/// The highest held-out loss [`bert_facts`] accepts (seeds 1–3 on the
/// 2-core CI machine: 3.77 to 3.86).
pub const MAX_BERT_LOSS: f64 = 4.2;

/// What `pretrain-bert` prints on any machine: a held-out loss at most
/// [`MAX_BERT_LOSS`] and within 0.3 of the training loss; a top-1 share of
/// restored words at least 1.5 times the most frequent word's, and a top-5
/// share above it; four masked sentences with five guesses each, likeliest
/// first.
pub fn bert_facts(text: &str) -> anyhow::Result<()> {
    let mut lines = text.lines();
    let mut next =
        || lines.next().ok_or_else(|| anyhow::anyhow!("too few lines"));
    let (_, held) = losses(next()?, 0.3)?;
    anyhow::ensure!(held <= MAX_BERT_LOSS, "held-out loss {held}");
    let (line, baseline) = (next()?, next()?);
    let (top1, top5, most) = (
        number_after(line, "top-1")?,
        number_after(line, "top-5")?,
        number_after(baseline, "every time:")?,
    );
    anyhow::ensure!(
        top1 >= 1.5 * most && top5 > top1,
        "`{line}`, `{baseline}`"
    );
    for _ in 0..4 {
        anyhow::ensure!(
            next()?.contains("<mask>"),
            "a masked sentence expected"
        );
        let guesses = next()?;
        let probs: Vec<f64> = guesses
            .split("   ")
            .map(|g| g.rsplit(' ').next().unwrap_or_default().parse())
            .collect::<Result<_, _>>()?;
        let ordered = probs.windows(2).all(|w| w[0] >= w[1]);
        anyhow::ensure!(probs.len() == 5 && ordered, "`{guesses}`");
    }
    Ok(())
}

/// Per-layer weights (1, num_heads, n, n) as one grid (layers, heads, n, n).
fn layer_head_grid(weights: &[Tensor<4>]) -> Tensor<4> {
    let layers = weights.iter().map(|w| w.clone().squeeze_dim::<3>(0));
    Tensor::stack(layers.collect(), 0)
}

/// A grid of layers by heads with tokens on the axes.
fn attention_figure(
    grid: &Tensor<4>,
    keys: &[String],
    queries: &[String],
    xlabel: &str,
    ylabel: &str,
) -> anyhow::Result<crate::Svg> {
    let [num_layers, num_heads, _, _] = grid.dims();
    let name = |what: &str, n: usize| -> Vec<String> {
        (1..=n).map(|i| format!("{what} {i}")).collect()
    };
    let (titles, rows) = (name("head", num_heads), name("layer", num_layers));
    fn strs(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    let (titles, rows) = (strs(&titles), strs(&rows));
    let (keys, queries) = (strs(keys), strs(queries));
    let options = HeatmapOptions {
        titles: Some(&titles),
        row_titles: Some(&rows),
        figsize: (7.0, 4.4),
        xticks: Some(&keys),
        yticks: Some(&queries),
        ..HeatmapOptions::default()
    };
    Ok(show_heatmaps(grid, xlabel, ylabel, options)?)
}

/// The replaced-word task: sentences with at least two words (tokens with
/// a letter or digit), half of them (at random, from `seed`) with one word
/// replaced by another word drawn with the training frequencies (label 1),
/// the others as they are (label 0). Punctuation is neither replaced nor
/// drawn, and drawn by frequency the new word is no rarer than the words
/// around it: whether a sentence was changed shows only in how its words
/// fit together.
// ANCHOR: task
pub fn replaced_word_task(
    data: &LmData,
    sentences: &[Vec<usize>],
    seed: u64,
) -> Vec<Labelled> {
    let is_word = |t: usize| {
        t >= FIRST_WORD
            && data.vocab.token(t).chars().any(char::is_alphanumeric)
    };
    // the training frequencies of words, 0 for punctuation and <unk>
    let weights: Vec<f64> = frequencies(data)
        .iter()
        .enumerate()
        .map(|(t, &f)| if is_word(t) { f } else { 0.0 })
        .collect();
    let draw = rand::distr::weighted::WeightedIndex::new(&weights)
        .expect("word frequencies");
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    let mut examples = Vec::new();
    for original in sentences {
        let words: Vec<usize> = (0..original.len())
            .filter(|&i| is_word(original[i]))
            .collect();
        if words.len() < 2 {
            continue;
        }
        let mut sentence = original.clone();
        if rng.random_bool(0.5) {
            let at = words[rng.random_range(0..words.len())];
            while sentence[at] == original[at] {
                sentence[at] = rng.sample(&draw);
            }
        }
        let label = usize::from(sentence != *original);
        examples.push(Labelled { sentence, label });
    }
    examples
}
// ANCHOR_END: task

/// `pretrain-bert`'s model, loaded from where it saved it (trained again
/// when the file is missing or was made for other data), on `device`.
fn trained_bert(
    data: &LmData,
    root: &Path,
    device: &Device,
) -> anyhow::Result<MaskedLm> {
    let init = || MaskedLm::new(&book_lm(data.vocab.len()), device);
    Ok(
        match load_model(init(), &bert_info(data), &bert_path(root)) {
            Ok(model) => model,
            Err(err) => {
                eprintln!("{err}: training it again");
                bert_demo(&device.clone().inner(), &mut Output::new(root))?;
                load_model(init(), &bert_info(data), &bert_path(root))?
            }
        },
    )
}

fn finetune_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    let data = chapter_data()?;
    let pretrained =
        trained_bert(&data, out.root(), &device.clone().autodiff())?;
    finetune_run(&data, pretrained, SEED, out)
}

/// `pretrain-finetune` from `pretrained` (on an autodiff device), with the
/// heads and the encoder from scratch drawn from `seed`.
pub fn finetune_run(
    data: &LmData,
    pretrained: MaskedLm,
    seed: u64,
    out: &mut Output,
) -> anyhow::Result<()> {
    let train_device = pretrained.encoder.embedding.weight.device();
    // ANCHOR: finetune
    let train = replaced_word_task(data, &data.train, 0);
    let held_out = replaced_word_task(data, &data.valid, 1);
    let (valid, test) = held_out.split_at(200);
    let mut curves = [Vec::new(), Vec::new()]; // pretrained, from scratch
    for n in [50, 100, 200, 500, 1_000, 2_000] {
        // as many examples as 200 batches of 32, whatever the number of
        // labelled examples (the last batch of each pass may be smaller)
        let epochs = (200 * 32usize).div_ceil(n);
        let config = TrainConfig::new()
            .with_lr(0.001)
            .with_batch_size(32)
            .with_num_epochs(epochs);
        for (curve, start) in curves.iter_mut().zip([true, false]) {
            let mut held = f64::NAN; // the last held-out loss, shown on stderr
            train_device.seed(seed); // the head, and the encoder from scratch
            let model = if start {
                SentenceClassifier::from_pretrained(
                    pretrained.clone(),
                    2,
                    &train_device,
                )
            } else {
                SentenceClassifier::new(
                    &book_lm(data.vocab.len()),
                    2,
                    &train_device,
                )
            };
            let model = fine_tune(
                model,
                &train[..n],
                valid,
                &config,
                &train_device,
                |e| held = e.valid_loss,
            )?;
            eprintln!(
                "{n} labelled, pretrained {start}: held-out loss {held:.3}"
            );
            curve.push(accuracy(&model, test, &train_device));
        }
        writeln!(
            out,
            "{n:>5} labelled: pretrained {:.3}, from scratch {:.3}",
            curves[0].last().expect("a run"),
            curves[1].last().expect("a run")
        )?;
    }
    // ANCHOR_END: finetune
    let share =
        test.iter().filter(|e| e.label == 1).count() as f64 / test.len() as f64;
    writeln!(
        out,
        "{} test sentences, {share:.3} of them changed",
        test.len()
    )?;
    let x = [50.0, 100.0, 200.0, 500.0, 1000.0, 2000.0];
    let figure = plot(
        &[
            Series::line(&x, &curves[0]).label("pretrained encoder"),
            Series::line(&x, &curves[1]).label("from scratch"),
        ],
        &Axes::new("labelled examples", "test accuracy")
            .xscale(Scale::Log)
            .xlim(40.0, 2500.0),
    )?;
    out.figure("pretrain-finetune", figure);
    Ok(())
}

/// The least lead [`finetune_facts`] accepts of the pretrained encoder
/// over the one from scratch with 1,000 and with 2,000 labelled examples
/// (seeds 1–3: 0.06 to 0.14 on the 2-core AMD EPYC of the fourth
/// generation that made the committed outputs, 0.07 to 0.12 on one of the
/// first).
pub const MIN_PRETRAINED_LEAD: f64 = 0.03;

/// What `pretrain-finetune` prints on any machine: six accuracies for each
/// start, each in [0, 1]; the pretrained encoder ahead by at least
/// [`MIN_PRETRAINED_LEAD`] with 1,000 and 2,000 labelled examples; the
/// test set's size and balance.
pub fn finetune_facts(text: &str) -> anyhow::Result<()> {
    let lines: Vec<&str> = text.lines().collect();
    anyhow::ensure!(lines.len() == 7, "{} lines, expected 7", lines.len());
    for (i, line) in lines[..6].iter().enumerate() {
        let pretrained = number_after(line, "pretrained")?;
        let scratch = number_after(line, "from scratch")?;
        let valid =
            (0.0..=1.0).contains(&pretrained) && (0.0..=1.0).contains(&scratch);
        anyhow::ensure!(valid, "`{line}`");
        let lead = pretrained - scratch;
        anyhow::ensure!(i < 4 || lead >= MIN_PRETRAINED_LEAD, "`{line}`");
    }
    let size: f64 = lines[6].split(' ').next().unwrap_or_default().parse()?;
    let share = number_after(lines[6], "sentences,")?;
    anyhow::ensure!(
        size > 0.0 && (0.4..0.6).contains(&share),
        "`{}`",
        lines[6]
    );
    Ok(())
}

/// The sentences as T5's (input, target) pairs, one corruption each,
/// drawn from `seed`.
// ANCHOR: corrupt
pub fn span_pairs(data: &LmData, sentences: &[Vec<usize>], seed: u64) -> Pairs {
    let mut rng = ChaCha12Rng::seed_from_u64(seed);
    let mut pairs = Pairs::default();
    for sentence in sentences.iter().filter(|s| s.len() >= 2) {
        let words: Vec<String> = sentence
            .iter()
            .map(|&t| data.vocab.token(t).to_owned())
            .collect();
        // 30 % of the words hidden, in spans of 2 on average
        let (input, target) = corrupt_spans(&words, 0.3, 2.0, &mut rng);
        pairs.source.push(input);
        pairs.target.push(target);
    }
    pairs
}
// ANCHOR_END: corrupt

fn t5_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    t5_run(device, SEED, out)
}

/// `pretrain-t5` with the initial weights drawn from `seed`.
pub fn t5_run(
    device: &Device,
    seed: u64,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: t5
    let data = chapter_data()?;
    let num_steps = 10; // the longest sentence has 8 words
    let train =
        NmtData::new_from_pairs(&span_pairs(&data, &data.train, 0), num_steps);
    let held_out = span_pairs(&data, &data.valid, 1);
    let train_device = device.clone().autodiff();
    train_device.seed(seed); // initial weights
    let (src, tgt) = (train.src_vocab.len(), train.tgt_vocab.len());
    let model = TransformerConfig::new(src, tgt)
        .with_dropout(0.0)
        .init(&train_device); // the chapter's sizes, as book_lm
    let config = TrainConfig::new() // lr 0.005, batches of 64
        .with_num_epochs(6);
    let model = train_seq2seq(model, &train, &config, &train_device, |e| {
        eprintln!("epoch {}: loss {:.4}", e.epoch, e.loss)
    })?;
    // ANCHOR_END: t5
    writeln!(
        out,
        "{} training pairs, vocabularies {src} and {tgt}",
        train.len()
    )?;
    // ANCHOR: reconstruct
    let (mut exact, count) = (0, 500);
    let mut shown = Vec::new();
    for (input, target) in
        held_out.source.iter().zip(&held_out.target).take(count)
    {
        let (input, target) = (input.join(" "), target.join(" "));
        let t = predict_seq2seq(
            &model,
            &input,
            &train.src_vocab,
            &train.tgt_vocab,
            num_steps,
            device,
        )?;
        exact += usize::from(t.text == target);
        if shown.len() < 4 {
            writeln!(out, "{input}\n  => {}  (hidden: {target})", t.text)?;
            shown.push((input, t));
        }
    }
    writeln!(
        out,
        "targets restored exactly: {exact} of {count} held-out sentences"
    )?;
    // ANCHOR_END: reconstruct
    let (input, t) = shown.pop().expect("four examples");
    t5_figures(&input, &t, out)
}

/// The three attention patterns of one reconstruction.
fn t5_figures(
    input: &str,
    t: &Translation,
    out: &mut Output,
) -> anyhow::Result<()> {
    let source: Vec<String> = input
        .split(' ')
        .chain(["<eos>"])
        .map(str::to_owned)
        .collect();
    let written: Vec<String> = t
        .text
        .split(' ')
        .chain(["<eos>"])
        .map(str::to_owned)
        .collect();
    let read: Vec<String> = ["<bos>".to_owned()]
        .into_iter()
        .chain(written.clone())
        .collect();
    let kinds = [
        (
            AttentionKind::EncoderSelfAttention,
            "encoder",
            &source,
            &source,
        ),
        (AttentionKind::EncoderDecoder, "cross", &written, &source),
        (
            AttentionKind::DecoderSelfAttention,
            "decoder",
            &written,
            &read,
        ),
    ];
    for (kind, name, queries, keys) in kinds {
        let per_layer: Vec<Tensor<4>> = (0..2)
            .map(|layer| {
                let heads: Vec<Tensor<2>> = (0..4)
                    .map(|head| t.weights(kind, layer, head).expect("a map"))
                    .collect();
                Tensor::stack::<3>(heads, 0).unsqueeze_dim(0)
            })
            .collect();
        let grid = layer_head_grid(&per_layer);
        let [_, _, q, k] = grid.dims();
        let (q, k) = (q.min(queries.len()), k.min(keys.len()));
        let grid = grid.narrow(2, 0, q).narrow(3, 0, k);
        let figure = attention_figure(
            &grid,
            &keys[..k],
            &queries[..q],
            "Keys",
            "Queries",
        )?;
        out.figure(&format!("pretrain-t5-{name}"), figure);
    }
    Ok(())
}

/// The fewest held-out targets [`t5_facts`] accepts restored exactly, of
/// 500 (seeds 1–3: 11 to 38 on the 2-core AMD EPYC of the fourth
/// generation that made the committed outputs, 33 to 48 on one of the
/// first; a model that has not learnt the task restores none).
pub const MIN_T5_EXACT: f64 = 5.0;

/// What `pretrain-t5` prints on any machine: four reconstructions whose
/// targets start with `<X>`, and at least [`MIN_T5_EXACT`] of 500 held-out
/// targets restored exactly.
pub fn t5_facts(text: &str) -> anyhow::Result<()> {
    let lines: Vec<&str> = text.lines().collect();
    anyhow::ensure!(lines.len() == 10, "{} lines, expected 10", lines.len());
    for line in lines[1..9].iter().skip(1).step_by(2) {
        anyhow::ensure!(line.starts_with("  => <X>"), "`{line}`");
    }
    let exact = number_after(lines[9], "exactly:")?;
    anyhow::ensure!(exact >= MIN_T5_EXACT, "`{}`", lines[9]);
    Ok(())
}

fn gpt_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    gpt_run(device, SEED, out)
}

/// `pretrain-gpt` with the initial weights drawn from `seed`.
pub fn gpt_run(
    device: &Device,
    seed: u64,
    out: &mut Output,
) -> anyhow::Result<()> {
    // ANCHOR: gpt
    let data = chapter_data()?;
    let train_device = device.clone().autodiff();
    train_device.seed(seed); // initial weights
    let model = CausalLm::new(&book_lm(data.vocab.len()), &train_device);
    let config = TrainConfig::new() // lr 0.005
        .with_batch_size(128)
        .with_num_epochs(3);
    let mut epochs = Vec::new();
    let model = pretrain(model, &data, &config, &train_device, |e| {
        progress(e);
        epochs.push(e)
    })?;
    // ANCHOR_END: gpt
    report(out, &epochs)?;
    writeln!(
        out,
        "held-out loss of the training frequencies alone: {:.3}",
        unigram_loss(&data)
    )?;
    // ANCHOR: generate
    let mut last = None;
    for prompt in ["i", "where is", "tom wants"] {
        let prompt = data.encode(prompt);
        let greedy = generate(&model, &prompt, 8, Sampling::Greedy, device)?;
        let show = |c: &Continuation| {
            let end = if c.ended { "" } else { " …" };
            format!(
                "{} | {}{end}",
                data.decode(&prompt),
                data.decode(&c.tokens)
            )
        };
        writeln!(out, "greedy:  {}", show(&greedy))?;
        for seed in 0..2 {
            let sampling = Sampling::Temperature {
                temperature: 1.0,
                seed,
            };
            let sampled = generate(&model, &prompt, 8, sampling, device)?;
            writeln!(out, "sampled: {}", show(&sampled))?;
        }
        last = Some((prompt, greedy));
    }
    // ANCHOR_END: generate
    let (prompt, greedy) = last.expect("three prompts");
    let read: Vec<String> = ["<bos>".to_owned()]
        .into_iter()
        .chain(data.decode(&prompt).split(' ').map(str::to_owned))
        .chain(
            greedy
                .tokens
                .iter()
                .map(|&t| data.vocab.token(t).to_owned()),
        )
        .collect();
    let num_layers =
        greedy.attention.iter().map(|m| m.layer).max().unwrap_or(0) + 1;
    let per_layer: Vec<Tensor<4>> = (0..num_layers)
        .map(|layer| {
            let heads: Vec<Tensor<3>> = greedy
                .attention
                .iter()
                .filter(|m| m.layer == layer)
                .map(|m| m.weights.clone())
                .collect();
            Tensor::stack::<4>(heads, 1)
        })
        .collect();
    let grid = layer_head_grid(&per_layer);
    let figure =
        attention_figure(&grid, &read, &read, "Tokens read (keys)", "Queries")?;
    out.figure("pretrain-gpt-attention", figure);
    Ok(())
}

/// What `pretrain-gpt` prints on any machine: a held-out loss within 0.3
/// of the training loss and at least 1 nat below the frequencies' (seeds
/// 1–3 on the 2-core CI machine: 1.71 to 1.72 below); for each of three
/// prompts a greedy and two sampled continuations.
pub fn gpt_facts(text: &str) -> anyhow::Result<()> {
    let lines: Vec<&str> = text.lines().collect();
    anyhow::ensure!(lines.len() == 11, "{} lines, expected 11", lines.len());
    let (_, held) = losses(lines[0], 0.3)?;
    let alone = number_after(lines[1], "alone:")?;
    anyhow::ensure!(
        held <= alone - 1.0,
        "held-out loss {held}, frequencies {alone}"
    );
    for (i, line) in lines[2..].iter().enumerate() {
        let kind = if i % 3 == 0 { "greedy:  " } else { "sampled: " };
        anyhow::ensure!(
            line.starts_with(kind) && line.contains(" | "),
            "`{line}`"
        );
    }
    Ok(())
}

/// Exercise 4: in a decoder-only model the source is part of one causal
/// sequence, so a source token is encoded from the tokens before it only;
/// an encoder reads every source token in the light of all the others.
fn source_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: source
    let config = book_lm(20);
    let encoder = config.init_encoder(device);
    let decoder_only = CausalLm::new(&config, device);
    // two sources that differ in their last token only
    let sources = [[7, 8, 9, 10], [7, 8, 9, 11]]
        .map(|s| Tensor::<2, Int>::from_ints([s], device));
    let first = |outputs: Tensor<3>| outputs.narrow(1, 0, 1); // token 1's output
    let encoded = sources
        .clone()
        .map(|s| first(encoder.forward(s, None).outputs));
    let decoded = sources.map(|s| {
        first(decoder_only.forward(s, decoder_only.init_state(1)).output)
    });
    for (name, [a, b]) in [("encoder", encoded), ("decoder-only", decoded)] {
        let moved = (a - b).abs().max().into_scalar::<f32>() > 0.0;
        writeln!(
            out,
            "{name}: the first token's output depends on the last: {moved}"
        )?;
    }
    // ANCHOR_END: source
    Ok(())
}

/// Which keys (columns) each query (row) may attend to under
/// `valid_lens`, for `num_queries` queries and `num_keys` keys: the mask
/// that masked softmax applies (`ValidLens::mask`), inverted.
fn allowed(
    valid_lens: &ValidLens,
    num_queries: usize,
    num_keys: usize,
) -> anyhow::Result<Vec<Vec<bool>>> {
    let hidden = valid_lens.mask(1, num_queries, num_keys);
    let hidden = hidden
        .into_data()
        .try_to_vec::<bool>()
        .map_err(|e| anyhow::anyhow!("{e:?}"))?;
    Ok(hidden
        .chunks(num_keys)
        .map(|row| row.iter().map(|h| !h).collect())
        .collect())
}

/// One part of a training set-up: a model box over its input tokens, with
/// the tokens it must predict above them ("" where none).
struct Part<'a> {
    model: &'a str,
    inputs: &'a [&'a str],
    targets: &'a [&'a str],
}

/// The parts side by side (an arrow from each to the next, as from T5's
/// encoder to its decoder) and, below them, the attention pattern: a grid
/// of cells, dark where a query (row) may attend to a key (column), its
/// key labels on two staggered lines so that wide ones (`<mask>`) fit.
fn mode_figure(
    parts: &[Part],
    pattern: &[Vec<bool>],
    rows: &[&str],
    cols: &[&str],
) -> anyhow::Result<crate::Svg> {
    // token boxes wide enough for the longest token: 12 px a character
    // (`<` and `>` take 13 px at 16 px in DejaVu Sans) and a margin
    let longest = parts
        .iter()
        .flat_map(|p| p.inputs.iter().chain(p.targets))
        .map(|t| t.chars().count() as i32)
        .max()
        .unwrap_or(0);
    let token_w = (12 * longest + 12).max(56);
    let (step, cell) = (token_w + 6, 46);
    let widths: Vec<i32> = parts
        .iter()
        .map(|p| step * p.inputs.len() as i32 - 6)
        .collect();
    let parts_width = 20 + widths.iter().map(|w| w + 50).sum::<i32>();
    let (x0, y0) = (100, 260); // the grid's top-left corner
    let grid_bottom = y0 + cell * pattern.len() as i32;
    let width = parts_width.max(x0 + cell * cols.len() as i32 + 20);
    let mut figure = Diagram::new((width as u32, (grid_bottom + 80) as u32))
        .label((x0 - 45, y0 - 16), "queries")
        .label(
            (x0 + cell * cols.len() as i32 / 2, grid_bottom + 64),
            "keys",
        );
    let (mut x, mut previous): (i32, Option<Node>) = (20, None);
    for (part, w) in parts.iter().zip(&widths) {
        let model = Node::new((x, 84), (*w, 44), part.model);
        for (i, (input, target)) in
            part.inputs.iter().zip(part.targets).enumerate()
        {
            let at = x + step * i as i32;
            let token = Node::new((at, 168), (token_w, 28), input).fill(WHITE);
            figure = figure
                .arrow(token.side('t'), (token.side('t').0, 128))
                .node(token);
            if !target.is_empty() {
                let out =
                    Node::new((at, 16), (token_w, 28), target).fill(WHITE);
                figure = figure
                    .arrow((out.side('b').0, 84), out.side('b'))
                    .node(out);
            }
        }
        if let Some(prev) = previous.take() {
            figure = figure.arrow(prev.side('r'), model.side('l')).node(prev);
        }
        previous = Some(model);
        x += w + 50;
    }
    if let Some(last) = previous {
        figure = figure.node(last);
    }
    let (dark, light) =
        (RGBColor(0x99, 0x1f, 0x1f), RGBColor(0xf7, 0xf7, 0xf7));
    for (r, row) in pattern.iter().enumerate() {
        let y = y0 + cell * r as i32;
        figure = figure.label((x0 - 45, y + cell / 2), rows[r]);
        for (c, &on) in row.iter().enumerate() {
            let at = (x0 + cell * c as i32, y);
            let fill = if on { dark } else { light };
            figure = figure.node(Node::new(at, (cell, cell), "").fill(fill));
        }
    }
    for (c, col) in cols.iter().enumerate() {
        let line = 20 * (c % 2) as i32;
        figure = figure.label(
            (x0 + cell * c as i32 + cell / 2, grid_bottom + 16 + line),
            col,
        );
    }
    Ok(figure.draw()?)
}

fn modes_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: modes
    // d2l's sentence, "i love this red car"; each pattern comes from the
    // valid lengths its attention is given
    let whole = |n| ValidLens::new(&[n], device); // every query sees n keys
    // d2l's dec_valid_lens: query t sees keys 1 … t
    let causal =
        |n: usize| ValidLens::per_query(&[(1..=n).collect::<Vec<_>>()], device);
    // BERT: the encoder reads <cls> i <mask> this red car, restores "love"
    let read = ["<cls>", "i", "<mask>", "this", "red", "car"];
    let restore = ["", "", "love", "", "", ""];
    let encoder = Part {
        model: "Transformer encoder",
        inputs: &read,
        targets: &restore,
    };
    let pattern = allowed(&whole(6), 6, 6)?;
    out.figure(
        "pretrain-mode-bert",
        mode_figure(&[encoder], &pattern, &read, &read)?,
    );
    // GPT: the decoder reads <bos> i love this red car, predicts each next token
    let read = ["<bos>", "i", "love", "this", "red", "car"];
    let next = ["i", "love", "this", "red", "car", "<eos>"];
    let decoder = Part {
        model: "Transformer decoder",
        inputs: &read,
        targets: &next,
    };
    let pattern = allowed(&causal(6), 6, 6)?;
    out.figure(
        "pretrain-mode-gpt",
        mode_figure(&[decoder], &pattern, &read, &read)?,
    );
    // T5: the encoder reads i <X> this <Y>; the decoder writes
    // <X> love <Y> red car <Z>
    let source = ["i", "<X>", "this", "<Y>"];
    let read = ["<bos>", "<X>", "love", "<Y>", "red", "car"];
    let written = ["<X>", "love", "<Y>", "red", "car", "<Z>"];
    let (encoder_self, cross) =
        (allowed(&whole(4), 4, 4)?, allowed(&whole(4), 6, 4)?);
    let decoder_self = allowed(&causal(6), 6, 6)?;
    // rows: the decoder's queries above the encoder's; columns: the
    // encoder's keys, then the decoder's
    let mut pattern: Vec<Vec<bool>> = cross
        .iter()
        .zip(&decoder_self)
        .map(|(c, d)| [c.as_slice(), d].concat())
        .collect();
    pattern.extend(
        encoder_self
            .into_iter()
            .map(|e| [e, vec![false; 6]].concat()),
    );
    let rows: Vec<&str> = read.iter().chain(&source).copied().collect();
    let cols: Vec<&str> = source.iter().chain(&read).copied().collect();
    let parts = [
        Part {
            model: "encoder",
            inputs: &source,
            targets: &["", "", "", ""],
        },
        Part {
            model: "decoder",
            inputs: &read,
            targets: &written,
        },
    ];
    out.figure(
        "pretrain-mode-t5",
        mode_figure(&parts, &pattern, &rows, &cols)?,
    );
    // ANCHOR_END: modes
    Ok(())
}
