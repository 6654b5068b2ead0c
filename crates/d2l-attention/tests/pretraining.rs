//! The pretraining objectives and the inference functions of
//! `d2l_attention::pretraining`: BERT's 80/10/10 proportions, T5's spans
//! (input and target together give back the sentence), generation with the
//! key–value cache equal to reading the whole text at once, the loss
//! against its closed form, and the errors that name their argument.

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
