//! What the Transformer must guarantee beyond matching PyTorch: prediction
//! uses the cache and equals the teacher-forced pass, the masks hide what
//! they must in both modes, nothing leaks between sentences, layer norm is
//! what it should be, and fully masked rows stay finite. Every test runs
//! on every backend of the build.

mod common;

use burn::module::Module;
use burn::nn::{BatchNormConfig, LayerNormConfig};
use burn::tensor::{Device, Int, Tensor, TensorData};
use common::{devices, modes};
use d2l_attention::attention_scoring::ValidLens;
use d2l_attention::machine_translation::NmtData;
use d2l_attention::seq2seq::*;
use d2l_attention::transformer::*;

/// d2l's sizes, without dropout, so that the training mode (an autodiff
/// device) computes what the eval mode does.
fn model(device: &Device) -> TransformerModel {
    TransformerConfig::new(11, 13)
        .with_dropout(0.0)
        .init(device)
}

fn ints(rows: &[&[i64]], device: &Device) -> Tensor<2, Int> {
    let width = rows[0].len();
    let data: Vec<i64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    Tensor::from_data(TensorData::new(data, [rows.len(), width]), device)
}

fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.try_into_vec_as::<f32>().unwrap()
}

fn largest_gap<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> f32 {
    values((a - b).abs().max())[0]
}

#[test]
fn step_by_step_prediction_with_the_cache_equals_the_teacher_forced_pass() {
    for (mode, device) in modes() {
        // scaled dot products, and additive scoring (d2l's exercise 2)
        let additive = TransformerConfig::new(11, 13)
            .with_dropout(0.0)
            .with_additive_hiddens(Some(16))
            .init(&device);
        for model in [model(&device), additive] {
            check_prediction_equals_training(&mode, &device, model);
        }
    }
}

fn check_prediction_equals_training(
    mode: &str,
    device: &Device,
    model: TransformerModel,
) {
    let src = ints(&[&[3, 5, 2, 1, 1], &[4, 2, 7, 9, 6]], device);
    let lens = ValidLens::new(&[3, 5], device);
    let tgt = ints(&[&[1, 6, 4, 8, 2, 3], &[1, 9, 9, 5, 12, 2]], device);
    let encoded = model.encoder.forward(src, Some(&lens));
    let state = model.decoder.init_state(encoded, Some(lens));
    let whole = model.decoder.forward(tgt.clone(), state.clone());
    let mut state = state;
    let mut steps = Vec::new();
    for t in 0..6 {
        let decoded = model.decoder.forward(tgt.clone().narrow(1, t, 1), state);
        state = decoded.state;
        // after t + 1 calls, every block holds t + 1 steps
        for kv in &state.key_values {
            assert_eq!(kv.as_ref().unwrap().dims(), [2, t + 1, 32]);
        }
        steps.push(decoded.output);
    }
    let gap = largest_gap(Tensor::cat(steps, 1), whole.output);
    assert!(gap < 1e-5, "{mode}: {gap}");
}

/// Through `predict_seq2seq`: each call reads one token, so the joined
/// decoder self-attention has one row per written token, and row t weighs
/// the t + 1 steps read so far and nothing after (the cache's keys).
#[test]
fn prediction_feeds_one_token_per_call_and_attends_to_the_cache() {
    let data =
        NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 6, 4).unwrap();
    for (backend, device) in devices() {
        let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
        let model = TransformerConfig::new(src, tgt).init(&device).valid();
        let (sv, tv) = (&data.src_vocab, &data.tgt_vocab);
        let t = predict_seq2seq(&model, "go .", sv, tv, 6, &device).unwrap();
        let written = t.text.split(' ').filter(|w| !w.is_empty()).count();
        for layer in 0..2 {
            let kind = AttentionKind::DecoderSelfAttention;
            let map = t.weights(kind, layer, 3).unwrap();
            let [rows, cols] = map.dims();
            // the step that wrote <eos> is a row too, unless 6 were written
            assert!(rows == written + 1 || rows == 6, "{backend}: {rows}");
            assert_eq!(cols, rows);
            let w = values(map);
            for r in 0..rows {
                let row = &w[r * cols..(r + 1) * cols];
                let seen: f32 = row[..=r].iter().sum();
                assert!(
                    (seen - 1.0).abs() < 1e-5,
                    "{backend} row {r}: {row:?}"
                );
                assert!(row[r + 1..].iter().all(|&x| x == 0.0), "{row:?}");
            }
        }
        // the encoder's maps: one per layer and head over the padded source
        let enc = t
            .weights(AttentionKind::EncoderSelfAttention, 1, 0)
            .unwrap();
        assert_eq!(enc.dims(), [6, 6]);
    }
}

#[test]
fn a_padded_source_token_changes_no_output() {
    for (mode, device) in modes() {
        let model = model(&device);
        let lens = || Some(ValidLens::new(&[3, 5], &device));
        let tgt = ints(&[&[1, 6, 4, 8], &[1, 9, 9, 5]], &device);
        let run = |pad: i64| {
            let src = ints(&[&[3, 5, 2, pad, pad], &[4, 2, 7, 9, 6]], &device);
            model.forward(src, tgt.clone(), lens()).output
        };
        let (a, b) = (values(run(1)), values(run(10)));
        assert_eq!(a, b, "{mode}");
    }
}

#[test]
fn a_later_target_token_changes_no_earlier_output() {
    for (mode, device) in modes() {
        let model = model(&device);
        let src = ints(&[&[3, 5, 2, 1, 1], &[4, 2, 7, 9, 6]], &device);
        let lens = || Some(ValidLens::new(&[3, 5], &device));
        for t in 0..4 {
            let mut changed = [[1, 6, 4, 8, 2], [1, 9, 9, 5, 12]];
            for row in &mut changed {
                for token in &mut row[t + 1..] {
                    *token = (*token + 3) % 13;
                }
            }
            let original =
                ints(&[&[1, 6, 4, 8, 2], &[1, 9, 9, 5, 12]], &device);
            let changed = ints(&[&changed[0], &changed[1]], &device);
            let a = model.forward(src.clone(), original, lens()).output;
            let b = model.forward(src.clone(), changed, lens()).output;
            let (a, b) = (a.narrow(1, 0, t + 1), b.narrow(1, 0, t + 1));
            assert_eq!(values(a), values(b), "{mode}: steps ≤ {t}");
        }
    }
}

#[test]
fn translating_one_sentence_leaves_nothing_for_the_next() {
    let data = NmtData::new(
        &"go .\tva !\nhi .\tsalut !\nrun !\tcours !\n".repeat(2),
        6,
        6,
    )
    .unwrap();
    for (backend, device) in devices() {
        let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
        let model = TransformerConfig::new(src, tgt).init(&device).valid();
        let (sv, tv) = (&data.src_vocab, &data.tgt_vocab);
        let fresh =
            predict_seq2seq(&model, "hi .", sv, tv, 6, &device).unwrap();
        predict_seq2seq(&model, "run !", sv, tv, 6, &device).unwrap();
        let after =
            predict_seq2seq(&model, "hi .", sv, tv, 6, &device).unwrap();
        assert_eq!(fresh.text, after.text, "{backend}");
        for (a, b) in fresh.attention.iter().zip(&after.attention) {
            assert_eq!(values(a.weights.clone()), values(b.weights.clone()));
        }
    }
}

/// d2l's comparison on [[1, 2], [2, 3]]: layer norm normalises each row,
/// batch norm (with the batch's statistics, in training mode) each column.
#[test]
fn layer_norm_normalises_rows_and_batch_norm_columns() {
    for (backend, device) in devices() {
        let device = device.autodiff();
        let x = Tensor::<2>::from_floats([[1.0, 2.0], [2.0, 3.0]], &device);
        let ln = LayerNormConfig::new(2).init(&device).forward(x.clone());
        let bn = BatchNormConfig::new(2).init(&device).forward(x);
        let (ln, bn) = (values(ln), values(bn));
        eprintln!("{backend}: layer norm {ln:?}, batch norm {bn:?}");
        for (got, want) in ln.iter().zip([-1.0, 1.0, -1.0, 1.0]) {
            assert!((got - want).abs() < 1e-4, "{ln:?}");
        }
        for (got, want) in bn.iter().zip([-1.0, -1.0, 1.0, 1.0]) {
            assert!((got - want).abs() < 1e-4, "{bn:?}");
        }
    }
}

/// ε sits inside the square root, (x − mean)/√(var + ε), and a large
/// common offset does not spoil the variance (no E[x²] − E[x]² in f32).
#[test]
fn add_norm_puts_epsilon_inside_the_root_and_survives_a_large_offset() {
    for (backend, plain) in devices() {
        for device in [plain.clone(), plain.autodiff()] {
            let add_norm = AddNormConfig::new(2).init(&device);
            let zeros = || Tensor::<3>::zeros([1, 1, 2], &device);
            // variance 1e-6: inside, 0.001/√(1.1e-5) = 0.3015; outside,
            // 0.001/(0.001 + 1e-5) = 0.990
            let small = Tensor::<3>::from_floats([[[0.0, 0.002]]], &device);
            let out = values(add_norm.forward(small, zeros()));
            let want = 0.001 / (1e-6f32 + 1e-5).sqrt();
            assert!((out[1] - want).abs() < 1e-3, "{backend}: {out:?}");
            let far = Tensor::<3>::from_floats([[[10001.0, 10002.0]]], &device);
            let out = values(add_norm.forward(far, zeros()));
            assert!((out[0] + 1.0).abs() < 1e-3, "{backend}: {out:?}");
            assert!((out[1] - 1.0).abs() < 1e-3, "{backend}: {out:?}");
        }
    }
}

/// A source with no valid token leaves its encoder–decoder rows uniform:
/// the output and every gradient stay finite.
#[test]
fn a_source_with_no_valid_token_stays_finite_forward_and_backward() {
    for (backend, device) in devices() {
        let device = device.autodiff();
        let model = TransformerConfig::new(11, 13).init(&device);
        let src = ints(&[&[3, 5, 2], &[4, 2, 7]], &device);
        let tgt = ints(&[&[1, 6, 4], &[1, 9, 9]], &device);
        let lens = ValidLens::new(&[0, 3], &device);
        let decoded = model.forward(src, tgt.clone(), Some(lens.clone()));
        let out = values(decoded.output.clone());
        assert!(out.iter().all(|x| x.is_finite()), "{backend}");
        let loss = masked_softmax_ce_loss(decoded.output, tgt, &lens).sum();
        let grads = loss.backward();
        let q = &model.decoder.blks[0].cross.as_ref().unwrap().attention.w_q;
        let grad = values(q.weight.val().grad(&grads).unwrap());
        assert!(grad.iter().all(|g| g.is_finite()), "{backend}");
        let e = &model.encoder.embedding.weight;
        assert!(
            values(e.val().grad(&grads).unwrap())
                .iter()
                .all(|g| g.is_finite())
        );
    }
}

#[test]
fn a_decoder_without_cross_attention_ignores_the_source() {
    for (backend, device) in devices() {
        let model = TransformerConfig::new(11, 13)
            .with_cross_attention(false)
            .init(&device);
        let tgt = ints(&[&[1, 6, 4]], &device);
        let run = |src: &[i64]| {
            model.forward(ints(&[src], &device), tgt.clone(), None)
        };
        let (a, b) = (run(&[3, 5, 2]), run(&[9, 9, 9]));
        assert_eq!(values(a.output), values(b.output), "{backend}");
        // encoder maps only, and the decoder's self-attention
        let kinds: Vec<_> = a.attention.iter().map(|m| m.kind).collect();
        assert!(!kinds.contains(&AttentionKind::EncoderDecoder));
    }
}

#[test]
fn misuse_panics_naming_the_argument() {
    let device = Device::flex();
    let model = model(&device);
    let src = ints(&[&[3, 5, 2]], &device);
    let state = model
        .decoder
        .init_state(model.encoder.forward(src, None), None);
    let message = common::panic_message(|| {
        model
            .decoder
            .forward(ints(&[&[1], &[2]], &device), state.clone());
    });
    assert!(
        message.starts_with("`state.enc_outputs` has shape [1, 3, 32]"),
        "{message}"
    );
    let message = common::panic_message(|| {
        let add_norm = AddNormConfig::new(4).init(&device);
        add_norm.forward(
            Tensor::zeros([1, 2, 4], &device),
            Tensor::zeros([1, 3, 4], &device),
        );
    });
    assert_eq!(
        message,
        "add & norm: `x` has shape [1, 2, 4] and `y` [1, 3, 4]: the residual needs one shape"
    );
}

/// The Transformer trains, predicts, saves and loads through the same
/// seq2seq functions as Bahdanau's model.
#[test]
fn it_trains_predicts_saves_and_loads_like_any_seq2seq_model() {
    let data =
        NmtData::new(&"go .\tva !\nhi .\tsalut !\n".repeat(2), 5, 4).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (backend, device) in devices() {
        let train_device = device.clone().autodiff();
        let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
        let model = TransformerConfig::new(src, tgt).init(&train_device);
        let config = TrainConfig::new()
            .with_num_epochs(40)
            .with_batch_size(4)
            .with_lr(0.01);
        let mut losses = Vec::new();
        let model = train_seq2seq(model, &data, &config, &train_device, |e| {
            losses.push(e.loss)
        })
        .unwrap()
        .valid();
        // The initial weights are unseeded (tests share the generator):
        // over 40 seeded initialisations on flex and on libtorch, epoch
        // 40's loss was at most 0.35 of epoch 1's.
        assert!(losses[39] < losses[0] / 2.0, "{backend}: {losses:?}");
        let (sv, tv) = (&data.src_vocab, &data.tgt_vocab);
        let t = predict_seq2seq(&model, "hi .", sv, tv, 5, &device).unwrap();
        assert_eq!(t.text, "salut !", "{backend}");
        let path = dir.path().join(format!("{backend}.bpk"));
        let model_config = TransformerConfig::new(src, tgt);
        let info = ModelInfo::new(&model_config, sv, tv);
        save_model(&model, &info, &path).unwrap();
        let loaded = load_model(model_config.init(&device), &info, &path);
        let loaded = loaded.unwrap();
        let again = predict_seq2seq(&loaded, "hi .", sv, tv, 5, &device);
        assert_eq!(again.unwrap().text, "salut !", "{backend}");
    }
}

/// The parameters of a Transformer with `d` hidden units, an FFN of `f`
/// and `l` blocks, counted by hand: attention projections without biases
/// (4 d² per attention), two layer-norm vectors per add & norm, an FFN of
/// two biased linear layers; embeddings, and the decoder's dense layer.
fn closed_form(d: usize, f: usize, l: usize, vocab: (usize, usize)) -> usize {
    let ffn = d * f + f + f * d + d;
    let encoder_block = 4 * d * d + 2 * (2 * d) + ffn;
    let decoder_block = 2 * (4 * d * d) + 3 * (2 * d) + ffn;
    let (src, tgt) = vocab;
    src * d + l * encoder_block + tgt * d + l * decoder_block + d * tgt + tgt
}

#[test]
fn the_exercise_s_parameter_counts_are_the_closed_form_s() {
    use d2l_attention::listings::transformer_exercises::VARIANT_PARAMS;
    // d2l's vocabularies of the 600 pairs (see the corpus tests)
    let vocab = (184, 201);
    let device = Device::flex();
    let base = TransformerConfig::new(vocab.0, vocab.1);
    let count = |config: TransformerConfig| config.init(&device).num_params();
    let cases = [
        (base.clone(), closed_form(32, 64, 2, vocab)),
        (
            base.clone().with_num_layers(4),
            closed_form(32, 64, 4, vocab),
        ),
        (
            base.clone().with_num_hiddens(64).with_ffn_num_hiddens(128),
            closed_form(64, 128, 2, vocab),
        ),
    ];
    for (i, (config, expected)) in cases.into_iter().enumerate() {
        assert_eq!(count(config), expected, "variant {i}");
        assert_eq!(VARIANT_PARAMS[i], expected, "variant {i}");
    }
    let additive = count(base.with_additive_hiddens(Some(32)));
    assert_eq!(VARIANT_PARAMS[3], additive);
    assert!(additive > VARIANT_PARAMS[0]);
}
