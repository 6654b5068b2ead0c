//! The pretraining objectives and the inference functions of
//! `d2l_attention::pretraining`: BERT's 80/10/10 proportions, T5's spans
//! (input and target together give back the sentence), generation with the
//! key–value cache equal to reading the whole text at once, the loss
//! against its closed form, and the errors that name their argument.

mod common;

use burn::tensor::{Device, Int, Tensor};
use chacha20::ChaCha12Rng;
use d2l_attention::pretraining::*;
use d2l_attention::transformer::TransformerConfig;
use rand::SeedableRng;

#[test]
fn bert_masking_keeps_its_proportions() {
    let mut rng = ChaCha12Rng::seed_from_u64(0);
    let words: Vec<usize> = (10..30).collect(); // 20 words: 3 picked
    let (mut masked, mut kept, mut random, mut picked) = (0, 0, 0, 0);
    for _ in 0..20_000 {
        let e = mask_tokens(&words, 1_000, &mut rng);
        assert_eq!(e.positions.len(), 3);
        for (&p, &label) in e.positions.iter().zip(&e.labels) {
            assert_eq!(label, words[p - 1]);
            picked += 1;
            match e.tokens[p] {
                MASK => masked += 1,
                t if t == label => kept += 1,
                t => {
                    assert!((FIRST_WORD..1_000).contains(&t));
                    random += 1
                }
            }
        }
        // only the picked positions change
        for (i, &t) in e.tokens[1..=20].iter().enumerate() {
            assert!(e.positions.contains(&(i + 1)) || t == words[i]);
        }
    }
    let share = |n: usize| n as f64 / picked as f64;
    // a random word equal to the original (1 in 994) counts as kept
    assert!((share(masked) - 0.8).abs() < 0.01, "{}", share(masked));
    assert!((share(kept) - 0.1).abs() < 0.01, "{}", share(kept));
    assert!((share(random) - 0.1).abs() < 0.01, "{}", share(random));
}

#[test]
fn spans_and_their_sentinels_give_back_the_sentence() {
    let mut rng = ChaCha12Rng::seed_from_u64(1);
    for len in 2..12 {
        let words: Vec<String> = (0..len).map(|i| format!("w{i}")).collect();
        for _ in 0..200 {
            let (input, target) = corrupt_spans(&words, 0.3, 2.0, &mut rng);
            let hidden = target.iter().filter(|w| !w.starts_with('<')).count();
            let expected =
                ((len as f64 * 0.3).round() as usize).clamp(1, len - 1);
            assert_eq!(hidden, expected, "{input:?} {target:?}");
            // each sentinel of the input, replaced by the words after the
            // same sentinel in the target, gives the sentence back
            let mut restored = Vec::new();
            for w in &input {
                if !SENTINELS.contains(&w.as_str()) {
                    restored.push(w.clone());
                    continue;
                }
                let at = target.iter().position(|t| t == w).unwrap();
                let span =
                    target[at + 1..].iter().take_while(|t| !t.starts_with('<'));
                restored.extend(span.cloned());
            }
            assert_eq!(restored, words, "{input:?} {target:?}");
            let last = target.last().unwrap();
            assert!(
                SENTINELS.contains(&last.as_str()) && !input.contains(last)
            );
        }
    }
}

#[test]
fn generating_with_the_cache_reads_as_the_whole_text_does() {
    let device = Device::flex();
    let model = CausalLm::new(
        &TransformerConfig::new(30, 30).with_dropout(0.0),
        &device,
    );
    let c =
        generate(&model, &[7, 8, 9], 10, Sampling::Greedy, &device).unwrap();
    // every token written is the likeliest after the text before it, read
    // in one call without a cache
    let text: Vec<i64> = [BOS, 7, 8, 9]
        .iter()
        .chain(&c.tokens)
        .map(|&t| t as i64)
        .collect();
    let n = text.len();
    let x = Tensor::<2, Int>::from_data(
        burn::tensor::TensorData::new(text.clone(), [1, n]),
        &device,
    );
    let scores = model.forward(x, model.init_state(1)).output;
    let best = scores.argmax(2).try_into_vec_as::<i64>().unwrap();
    for (i, &t) in c.tokens.iter().enumerate() {
        assert_eq!(best[3 + i], t as i64, "step {i}");
    }
    if c.ended {
        assert_eq!(best[n - 1], EOS as i64);
    }
}

#[test]
fn the_loss_is_the_summed_cross_entropy_of_the_labels() {
    let device = Device::flex();
    let batch = causal_batch(&[&vec![7, 8], &vec![9]], &device);
    // scores 2 for the label, 0 elsewhere, over 10 tokens: each counted
    // label costs ln(e² + 9) − 2; the padded step costs nothing
    let labels = batch.labels.clone().try_into_vec_as::<i64>().unwrap();
    let mut scores = vec![0f32; 2 * 3 * 10];
    for (i, &l) in labels.iter().enumerate() {
        scores[i * 10 + l as usize] = 2.0;
    }
    let logits = Tensor::<3>::from_data(
        burn::tensor::TensorData::new(scores, [2, 3, 10]),
        &device,
    );
    let loss = lm_loss(logits, &batch).into_scalar::<f64>();
    let each = (2f64.exp() + 9.0).ln() - 2.0;
    assert!((loss - 5.0 * each).abs() < 1e-5, "{loss}");
}

#[test]
fn bad_arguments_are_named() {
    let device = Device::flex();
    let config = TransformerConfig::new(20, 20);
    let bert = MaskedLm::new(&config, &device);
    let err = |e: d2l_attention::seq2seq::Seq2SeqError| e.to_string();
    assert!(
        err(fill_mask(&bert, &[7, 8], 3, &device).unwrap_err())
            .contains("`words`")
    );
    assert!(
        err(fill_mask(&bert, &[MASK, 25], 3, &device).unwrap_err())
            .contains("`words`")
    );
    assert!(
        err(fill_mask(&bert, &[MASK], 0, &device).unwrap_err()).contains("`k`")
    );
    let gpt = CausalLm::new(&config, &device);
    let hot = Sampling::Temperature {
        temperature: 0.0,
        seed: 0,
    };
    assert!(
        err(generate(&gpt, &[7], 5, hot, &device).unwrap_err())
            .contains("`sampling`")
    );
    assert!(
        err(generate(&gpt, &[20], 5, Sampling::Greedy, &device).unwrap_err())
            .contains("`prompt`")
    );
    assert!(
        err(generate(&gpt, &[7], 0, Sampling::Greedy, &device).unwrap_err())
            .contains("`max_new`")
    );
    let sentences: Vec<Vec<String>> =
        (0..10).map(|i| vec![format!("w{i}"), ".".into()]).collect();
    let data = LmData::from_sentences(sentences, 0.2, 1, 0);
    let config = d2l_attention::seq2seq::TrainConfig::new();
    let plain =
        pretrain(gpt.clone(), &data, &config, &device, |_| {}).unwrap_err();
    assert!(err(plain).contains("autodiff"));
}

#[test]
fn prediction_ignores_the_models_mode() {
    // a model with dropout, fresh in training mode on an autodiff device:
    // filling a mask twice gives the same answer (the inference copy runs)
    let device = Device::flex().autodiff();
    let bert = MaskedLm::new(
        &TransformerConfig::new(20, 20).with_dropout(0.5),
        &device,
    );
    let a = fill_mask(&bert, &[7, MASK, 9], 3, &device)
        .unwrap()
        .candidates;
    let b = fill_mask(&bert, &[7, MASK, 9], 3, &device)
        .unwrap()
        .candidates;
    assert_eq!(a, b);
}

#[test]
fn masking_picks_unk_as_a_word_and_refuses_other_reserved_tokens() {
    // <unk> (0) is a word: in a one-word sentence it is the one picked
    for seed in 0..20 {
        let mut rng = ChaCha12Rng::seed_from_u64(seed);
        let e = mask_tokens(&[0], 20, &mut rng);
        assert_eq!(
            (e.positions.as_slice(), e.labels.as_slice()),
            (&[1][..], &[0][..])
        );
    }
    // every other reserved token, and an index past the vocabulary, is
    // refused, naming `words`, the position and the index
    for (words, bad) in [
        (vec![PAD, PAD, 7, 8], "holds 1 at position 0"),
        (vec![7, BOS], "holds 2 at position 1"),
        (vec![7, 8, EOS], "holds 3 at position 2"),
        (vec![CLS], "holds 4 at position 0"),
        (vec![7, MASK], "holds 5 at position 1"),
        (vec![7, 20], "holds 20 at position 1"),
    ] {
        let message = common::panic_message(|| {
            mask_tokens(&words, 20, &mut ChaCha12Rng::seed_from_u64(0));
        });
        assert!(
            message.starts_with("`words` ") && message.contains(bad),
            "{message}"
        );
    }
    // a masked model's batches say which sentence
    let device = Device::flex();
    let sentences = vec![vec![7, 8], vec![PAD, PAD, 9]];
    let message = common::panic_message(|| {
        MaskedLm::batches(&sentences, 20, 2, 0, &device);
    });
    assert!(
        message.starts_with("`sentences`[1] holds 1 at"),
        "{message}"
    );
    assert!(message.contains("holds 1 at position 0"), "{message}");
}

#[test]
fn generation_and_fill_mask_refuse_what_passes_the_length_limit() {
    let device = Device::flex();
    let config = TransformerConfig::new(20, 20).with_max_len(8);
    let gpt = CausalLm::new(&config, &device);
    assert_eq!(gpt.max_len(), 8);
    let err = |r: Result<
        Continuation,
        d2l_attention::seq2seq::Seq2SeqError,
    >| { r.unwrap_err().to_string() };
    // <bos>, 2 words and 6 new ones: 9 positions of 8
    let e = err(generate(&gpt, &[7, 8], 6, Sampling::Greedy, &device));
    assert!(
        e.contains("`max_new`") && e.contains("leave 5 of the model's 8"),
        "{e}"
    );
    // a prompt that leaves no room
    let e = err(generate(&gpt, &[7; 7], 1, Sampling::Greedy, &device));
    assert!(
        e.contains("`prompt`") && e.contains("at most 6 prompt tokens"),
        "{e}"
    );
    let e = err(generate(&gpt, &[7; 8], 1, Sampling::Greedy, &device));
    assert!(e.contains("`prompt`"), "{e}");
    // exactly at the limit it runs: 1 + 2 + 5 = 8
    let at_limit =
        generate(&gpt, &[7, 8], 5, Sampling::Greedy, &device).unwrap();
    assert!(at_limit.tokens.len() <= 5);
    let bert = MaskedLm::new(&config, &device);
    assert_eq!(bert.max_len(), 8);
    // <cls>, 7 words, <eos>: 9 positions of 8
    let e = fill_mask(&bert, &[7, 8, MASK, 9, 10, 11, 12], 3, &device)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`words`") && e.contains("at most 6 words"),
        "{e}"
    );
    let six = fill_mask(&bert, &[7, 8, MASK, 9, 10, 11], 3, &device).unwrap();
    assert_eq!(six.attention_weights[0].dims(), [1, 4, 8, 8]);
}

#[test]
fn fine_tuning_refuses_labels_past_the_classes() {
    let device = Device::flex().autodiff();
    let config = TransformerConfig::new(20, 20);
    let model = SentenceClassifier::new(&config, 2, &device);
    assert_eq!(model.num_classes(), 2);
    let good = vec![Labelled {
        sentence: vec![7, 8],
        label: 1,
    }];
    let bad = vec![
        Labelled {
            sentence: vec![7],
            label: 0,
        },
        Labelled {
            sentence: vec![8],
            label: 3,
        },
    ];
    let train_config = d2l_attention::seq2seq::TrainConfig::new();
    for (train, valid, arg) in
        [(&bad, &good, "`train`"), (&good, &bad, "`valid`")]
    {
        let e = fine_tune(
            model.clone(),
            train,
            valid,
            &train_config,
            &device,
            |_| {},
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains(arg), "{e}");
        assert!(
            e.contains("example 1 has label 3") && e.contains("2 classes"),
            "{e}"
        );
    }
    let message = common::panic_message(|| {
        accuracy(&model, &bad, &device);
    });
    assert!(
        message.contains("`examples`") && message.contains("label 3"),
        "{message}"
    );
}

#[test]
fn a_power_law_fit_names_every_bad_value() {
    let good = [1.0, 2.0, 4.0];
    for (x, y, named) in [
        ([1.0, 2.0, 4.0], [3.0, f64::INFINITY, 1.0], "`y[1]` is inf"),
        ([1.0, 2.0, 4.0], [3.0, 2.0, 0.0], "`y[2]` is 0"),
        ([1.0, 2.0, 4.0], [f64::NAN, 2.0, 1.0], "`y[0]` is NaN"),
        ([1.0, 2.0, 4.0], [3.0, -2.0, 1.0], "`y[1]` is -2"),
        ([1.0, f64::INFINITY, 4.0], [3.0, 2.0, 1.0], "`x[1]` is inf"),
        (
            [1.0, 2.0, f64::NEG_INFINITY],
            [3.0, 2.0, 1.0],
            "`x[2]` is -inf",
        ),
        ([0.0, 2.0, 4.0], [3.0, 2.0, 1.0], "`x[0]` is 0"),
    ] {
        let message = common::panic_message(|| {
            PowerLaw::fit(&x, &y);
        });
        assert!(message.contains(named), "{named}: {message}");
    }
    // and a good fit is finite
    let fit = PowerLaw::fit(&good, &[4.0, 2.0, 1.0]);
    assert!((fit.alpha - 1.0).abs() < 1e-12 && (fit.c - 4.0).abs() < 1e-9);
}
