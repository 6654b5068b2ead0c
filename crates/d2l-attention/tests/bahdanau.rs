//! The Bahdanau model's shapes, loss, clipping, training, prediction,
//! saving and errors (its numbers against PyTorch are in seq2seq_golden.rs).

mod common;

use burn::module::{Module, ModuleMapper, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor, TensorData};
use common::panic_message;
use d2l_attention::attention_scoring::ValidLens;
use d2l_attention::bahdanau::*;
use d2l_attention::listings::bahdanau::train_facts;
use d2l_attention::machine_translation::{NmtData, Vocab};
use d2l_attention::random::{rand, randn};
use d2l_attention::seq2seq::*;

fn ints<const D: usize>(
    data: Vec<i64>,
    shape: [usize; D],
    device: &Device,
) -> Tensor<D, Int> {
    Tensor::from_data(TensorData::new(data, shape), device)
}

/// Gives every parameter seeded values in [−0.4, 0.4), so that a test
/// does not depend on burn's global generator (shared by parallel tests).
struct SeededInit(u64);

impl ModuleMapper for SeededInit {
    fn map_float<const D: usize>(
        &mut self,
        param: Param<Tensor<D>>,
    ) -> Param<Tensor<D>> {
        self.0 += 1;
        let seed = self.0;
        param.map(|t| {
            ((rand(t.dims(), seed, &t.device()) - 0.5) * 0.8).require_grad()
        })
    }
}

/// The shape check of d2l zh §10.4, `chapter10.ipynb` In[28].
#[test]
fn shapes_match_the_seed() {
    let device = Device::flex();
    let config = Seq2SeqConfig::new(10, 10, 8, 16, 2);
    let (encoder, decoder) =
        (config.init_encoder(&device), config.init_decoder(&device));
    let x = Tensor::<2, Int>::zeros([4, 7], &device);
    let encoded = encoder.forward(x.clone(), None);
    assert_eq!(encoded.outputs.dims(), [4, 7, 16]);
    assert_eq!(encoded.state.dims(), [2, 4, 16]);
    let decoded = decoder.forward(x, decoder.init_state(encoded, None));
    assert_eq!(decoded.output.dims(), [4, 7, 10]);
    assert_eq!(decoded.state.enc_outputs.dims(), [4, 7, 16]);
    assert_eq!(decoded.state.hidden_state.dims(), [2, 4, 16]);
    assert_eq!(decoded.attention.len(), 1);
    let map = &decoded.attention[0];
    assert_eq!(
        (map.kind, map.layer, map.head),
        (AttentionKind::EncoderDecoder, 0, 0)
    );
    assert_eq!(map.weights.dims(), [4, 7, 7]);
}

#[test]
fn masked_loss_ignores_padding_and_has_its_closed_form() {
    let device = Device::flex();
    let label = ints(vec![1, 2, 3, 4, 0, 1, 2, 3], [2, 4], &device);
    let valid_len = ValidLens::new(&[4, 2], &device);
    // Uniform scores over 5 classes: ln 5 per valid token, averaged over 4 steps.
    let uniform = Tensor::<3>::zeros([2, 4, 5], &device);
    let loss = masked_softmax_ce_loss(uniform, label.clone(), &valid_len);
    let loss = loss.try_into_vec_as::<f64>().unwrap();
    let ln5 = 5f64.ln();
    assert!(
        (loss[0] - ln5).abs() < 1e-6
            && (loss[1] - ln5 * 2.0 / 4.0).abs() < 1e-6,
        "{loss:?}"
    );
    // Scores at padded steps (sequence 1, steps 2 and 3) do not count.
    let pred = randn([2, 4, 5], 1, &device);
    let noise = randn([2, 4, 5], 2, &device) * 100.0;
    let padded = Tensor::<1, Int>::arange(0..4, &device)
        .reshape([1, 4, 1])
        .expand([2, 4, 5])
        .greater_equal(ints(vec![4, 2], [2, 1, 1], &device).expand([2, 4, 5]));
    let changed = pred.clone() + noise.mask_fill(padded.bool_not(), 0.0);
    let a = masked_softmax_ce_loss(pred, label.clone(), &valid_len);
    let b = masked_softmax_ce_loss(changed, label.clone(), &valid_len);
    assert_eq!(
        a.try_into_vec_as::<f32>().unwrap(),
        b.try_into_vec_as::<f32>().unwrap()
    );
    // A valid length past num_steps is refused, not silently clamped.
    let msg = panic_message(|| {
        masked_softmax_ce_loss(
            randn([2, 4, 5], 3, &device),
            label,
            &ValidLens::new(&[5, 1], &device),
        );
    });
    assert!(msg.starts_with("`valid_lens` holds 5 at [0]"), "{msg}");
}

#[test]
fn clipping_rescales_the_global_norm_only_when_above_theta() {
    let device = Device::flex().autodiff();
    let model = Seq2SeqConfig::new(6, 6, 3, 4, 1).init_encoder(&device);
    let x = ints(vec![1, 2, 3, 4, 5, 0], [2, 3], &device);
    let loss = || model.forward(x.clone(), None).outputs.sum() * 10.0;
    let grads = || GradientsParams::from_grads(loss().backward(), &model);
    let flat = |g: &GradientsParams| {
        let mut all = Vec::new();
        for layer in &model.rnn.layers {
            for linear in [&layer.input, &layer.hidden] {
                all.extend(
                    g.get::<2>(linear.weight.id)
                        .unwrap()
                        .try_into_vec_as::<f64>()
                        .unwrap(),
                );
            }
        }
        all
    };
    let mut g = grads();
    let before = flat(&g);
    let clip = |g: &mut GradientsParams, theta| {
        grad_clipping(&model, g, theta)
            .unwrap()
            .into_scalar::<f64>()
    };
    let norm = clip(&mut g, 0.5);
    assert!(norm > 0.5, "the test needs a norm above theta, got {norm}");
    let after = flat(&g);
    for (b, a) in before.iter().zip(&after) {
        assert!(
            (a - b * 0.5 / norm).abs() < 1e-6 * (1.0 + b.abs()),
            "{a} vs {b}·0.5/{norm}"
        );
    }
    let mut g = grads();
    assert_eq!(clip(&mut g, 0.5), norm, "the norm is the unclipped one");
    // The clipped norm over all parameters is theta.
    let mut again = g;
    let clipped = clip(&mut again, f64::INFINITY);
    assert!((clipped - 0.5).abs() < 1e-5, "{clipped}");
    // Under theta nothing changes.
    let mut g = grads();
    clip(&mut g, norm * 2.0);
    assert_eq!(flat(&g), before);
}

/// 20 steps on one tiny batch drive the loss far down.
#[test]
fn twenty_steps_on_a_tiny_batch_drive_the_loss_down() {
    let device = Device::flex().autodiff();
    let text =
        "go .\tva !\nhi .\tsalut !\nrun !\tcours !\nwho ?\tqui ?\n".repeat(2);
    let data = NmtData::new(&text, 5, 8).unwrap();
    let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
    let model = Seq2SeqConfig::new(src, tgt, 8, 16, 2)
        .init(&device)
        .map(&mut SeededInit(0));
    let config = TrainConfig::new().with_lr(0.02);
    let bos = data.tgt_vocab.index("<bos>") as i64;
    let mut optimizer = config.optimizer.init();
    let batch = data.batches(8, 0, &device).remove(0);
    let mut model = model;
    let mut losses = Vec::new();
    for _ in 0..20 {
        let step =
            train_batch(model, &mut optimizer, batch.clone(), bos, &config)
                .unwrap();
        assert_eq!(step.num_tokens, 24, "3 tokens per target, 8 targets");
        let loss_sum = step.loss_sum.into_scalar::<f64>();
        losses.push(loss_sum / step.num_tokens as f64);
        model = step.model;
    }
    assert!(losses[19] < losses[0] * 0.3, "losses {losses:?}");
    // It has learned the four pairs.
    let model = model.valid();
    for (src, tgt) in [("go .", "va !"), ("who ?", "qui ?")] {
        let t = predict_seq2seq(
            &model,
            src,
            &data.src_vocab,
            &data.tgt_vocab,
            5,
            &device.clone().inner(),
        )
        .unwrap();
        assert_eq!(t.text, tgt);
    }
}

#[test]
fn prediction_stops_and_its_weights_cover_the_valid_source() {
    let device = Device::flex();
    let text = "go .\tva !\nhi .\tsalut !\n".repeat(2);
    let data = NmtData::new(&text, 6, 4).unwrap();
    let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
    let model = Seq2SeqConfig::new(src, tgt, 4, 8, 2).init(&device);
    let weights = |t: &Translation| {
        t.weights(AttentionKind::EncoderDecoder, 0, 0).unwrap()
    };
    let predict = |sentence| {
        predict_seq2seq(
            &model,
            sentence,
            &data.src_vocab,
            &data.tgt_vocab,
            6,
            &device,
        )
        .unwrap()
    };
    for (sentence, valid) in [("go .", 3), ("hi .", 3), ("run fast now !", 5)] {
        let t = predict(sentence);
        // Padding is cut before attending: one column per valid token.
        let [steps, keys] = weights(&t).dims();
        assert_eq!(keys, valid);
        let words = if t.text.is_empty() {
            0
        } else {
            t.text.split(' ').count()
        };
        assert!(
            steps == words + 1 || (steps == 6 && words == 6),
            "{steps} steps for {:?}",
            t.text
        );
        let w = weights(&t).try_into_vec_as::<f32>().unwrap();
        for row in w.chunks(valid) {
            assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            assert!(row.iter().all(|&x| x > 0.0), "{sentence}: {row:?}");
        }
    }
    // The source is lowercased; a sentence longer than num_steps is cut
    // (no <eos>) and attends everywhere.
    let (upper, lower) = (predict("HI ."), predict("hi ."));
    assert_eq!(upper.text, lower.text);
    assert_eq!(
        weights(&upper).try_into_vec_as::<f32>().unwrap(),
        weights(&lower).try_into_vec_as::<f32>().unwrap()
    );
    let long = predict("go go go go go go go go");
    assert_eq!(weights(&long).dims()[1], 6);
    let w = weights(&long).try_into_vec_as::<f32>().unwrap();
    assert!(w.iter().all(|&x| x > 0.0), "{w:?}");
    // Bad arguments are named.
    let err = predict_seq2seq(
        &model,
        "go .",
        &data.src_vocab,
        &data.tgt_vocab,
        0,
        &device,
    );
    assert!(err.unwrap_err().to_string().contains("num_steps"));
    let small = Seq2SeqConfig::new(3, 3, 4, 8, 1).init(&device);
    let err = predict_seq2seq(
        &small,
        "go .",
        &data.src_vocab,
        &data.tgt_vocab,
        6,
        &device,
    );
    let err = err.unwrap_err().to_string();
    assert!(
        err.contains("src_vocab") && err.contains("embeds 3"),
        "{err}"
    );
}

#[test]
fn a_saved_model_loads_back_identical() {
    let device = Device::flex();
    let config = Seq2SeqConfig::new(9, 9, 4, 8, 2);
    let vocab = Vocab::new(&[vec!["a".to_string(); 2]], 0, &["<pad>"]);
    let info = ModelInfo::new(&config, &vocab, &vocab);
    let model = config.init(&device);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nested/model.bpk");
    save_model(&model, &info, &path).unwrap();
    let loaded = load_model(config.init(&device), &info, &path).unwrap();
    let x = ints(vec![1, 2, 3, 4, 5, 6], [2, 3], &device);
    let out = |m: &BahdanauModel| {
        m.forward(x.clone(), x.clone(), None)
            .output
            .try_into_vec_as::<f32>()
            .unwrap()
    };
    assert_eq!(out(&model), out(&loaded));
    // A file where the folder should be: an error that names it, nothing written.
    let blocker = dir.path().join("file");
    std::fs::write(&blocker, "x").unwrap();
    let err =
        save_model(&model, &info, &blocker.join("model.bpk")).unwrap_err();
    assert!(matches!(err, ModelFileError::CreateDir { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!("cannot create the folder `{}`", blocker.display())
    );
    // Its cause is kept, not flattened into the message.
    assert!(std::error::Error::source(&err).is_some());
    // A file that is not a model: an error that names it.
    let err = load_model(config.init(&device), &info, &blocker).unwrap_err();
    assert!(
        matches!(err, ModelFileError::NotAModelFile { .. }),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains(&format!("`{}`", blocker.display()))
    );
    assert_eq!(std::fs::read_to_string(&blocker).unwrap(), "x");
    // A bare burnpack (as saved before model files carried their
    // information) is not taken for one either.
    model.clone().save_file(&blocker).unwrap();
    let err = load_model(config.init(&device), &info, &blocker).unwrap_err();
    assert!(
        matches!(err, ModelFileError::NotAModelFile { .. }),
        "{err:?}"
    );
}

/// A model file made for another corpus (the same sizes, other tokens) or
/// another configuration is refused, and the error says what differs.
#[test]
fn a_model_file_for_other_data_or_sizes_is_refused_saying_why() {
    let device = Device::flex();
    let words = |w: &[&str]| {
        Vocab::new(&[w.iter().map(|t| t.to_string()).collect()], 0, &["<pad>"])
    };
    let (ours, theirs) = (words(&["va", "!"]), words(&["vas", "!"]));
    assert_eq!(ours.len(), theirs.len());
    let config = Seq2SeqConfig::new(ours.len(), ours.len(), 4, 8, 1);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.bpk");
    let saved = ModelInfo::new(&config, &ours, &theirs);
    save_model(&config.init(&device), &saved, &path).unwrap();
    let info = ModelInfo::new(&config, &ours, &ours);
    let err = load_model(config.init(&device), &info, &path).unwrap_err();
    let ModelFileError::Mismatch { differences, .. } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(differences.len(), 1, "{differences:?}");
    let n = ours.len();
    let expected = format!(
        "the target vocabulary has {n} tokens (SHA-256 {}) in the file, {n} tokens (SHA-256 {}) here",
        &saved.tgt_vocab.sha256[..12],
        &info.tgt_vocab.sha256[..12]
    );
    assert_eq!(differences[0], expected);
    assert!(err.to_string().starts_with(&format!(
        "`{}` holds a model made for something else: ",
        path.display()
    )));
    // Two layers where the file has one, and other dropout: both named.
    let deeper = Seq2SeqConfig::new(n, n, 4, 8, 2).with_dropout(0.2);
    let info = ModelInfo::new(&deeper, &ours, &theirs);
    let err = load_model(deeper.init(&device), &info, &path).unwrap_err();
    let ModelFileError::Mismatch { differences, .. } = err else {
        panic!("{err:?}");
    };
    assert_eq!(
        differences,
        [
            "`dropout` is 0.0 in the file, 0.2 here",
            "`num_layers` is 1 in the file, 2 here"
        ]
    );
}

#[test]
fn bad_states_and_devices_are_named() {
    let device = Device::flex();
    let config = Seq2SeqConfig::new(10, 10, 8, 16, 2);
    let (encoder, decoder) =
        (config.init_encoder(&device), config.init_decoder(&device));
    let x = Tensor::<2, Int>::zeros([4, 7], &device);
    let mut state = decoder.init_state(encoder.forward(x.clone(), None), None);
    state.hidden_state = Tensor::zeros([1, 4, 16], &device);
    let err = panic_message(|| {
        decoder.forward(x.clone(), state);
    });
    assert!(
        err.contains("`state.hidden_state` has shape [1, 4, 16]")
            && err.contains("(2, 4, 16)"),
        "{err}"
    );
    let state = decoder.init_state(encoder.forward(x.clone(), None), None);
    let err = panic_message(|| {
        decoder.forward(x.clone().narrow(0, 0, 3), state);
    });
    assert!(err.contains("state.hidden_state"), "{err}");
    let state = decoder.init_state(
        encoder.forward(x.clone(), None),
        Some(ValidLens::new(&[8, 1, 1, 1], &device)),
    );
    let err = panic_message(|| {
        decoder.forward(x.clone(), state);
    });
    assert!(err.starts_with("`valid_lens` holds 8 at [0]"), "{err}");
    // Training without autodiff.
    let text = "go .\tva !\nhi .\tsalut !\n".repeat(2);
    let data = NmtData::new(&text, 5, 4).unwrap();
    let model = EncoderDecoder { encoder, decoder };
    let err = train_seq2seq(
        model.clone(),
        &data,
        &TrainConfig::new(),
        &device,
        |_| {},
    )
    .unwrap_err();
    assert!(err.to_string().contains("autodiff"), "{err}");
    // Settings that cannot train.
    let ad = device.autodiff();
    let model = model.fork(&ad);
    for (config, arg) in [
        (TrainConfig::new().with_clip_norm(-1.0), "clip_norm"),
        (TrainConfig::new().with_lr(f64::NAN), "lr"),
        (TrainConfig::new().with_batch_size(0), "`batch_size`"),
        (TrainConfig::new().with_num_epochs(0), "`num_epochs`"),
    ] {
        let err = train_seq2seq(model.clone(), &data, &config, &ad, |_| {})
            .unwrap_err()
            .to_string();
        assert!(err.contains(arg), "{err}");
    }
    // One state for a GRU of two layers.
    let mut states = vec![Tensor::<2>::zeros([1, 16], &ad)];
    let message = panic_message(|| {
        model
            .encoder
            .rnn
            .step(Tensor::zeros([1, 8], &ad), &mut states);
    });
    assert!(message.contains("one state per layer"), "{message}");
}

/// Exercise 1's model: LSTM states carry h and c; the first query is the
/// top layer's h (not c), the scaled dot product its exercise-2 sibling's
/// score; a state of a GRU's width, or an `x` of another size, is named.
#[test]
fn lstm_states_carry_h_and_c_and_h_is_the_query() {
    use d2l_attention::attention_scoring::{
        AdditiveAttention, DotProductAttention, DotProductAttentionConfig,
    };
    use d2l_attention::rnn::{GruLayer, LstmLayer};

    let device = Device::flex().autodiff(); // for `SeededInit`
    let config = Seq2SeqConfig::new(10, 12, 8, 16, 2);
    let x = ints((0..28).map(|i| i % 10).collect(), [4, 7], &device);
    let lens = ValidLens::new(&[7, 3, 5, 1], &device);
    let lstm: BahdanauModel<LstmLayer> =
        config.init_variant(&device).map(&mut SeededInit(0));
    let encoded = lstm.encoder.forward(x.clone(), None);
    assert_eq!(encoded.state.dims(), [2, 4, 32]);
    let state = lstm.decoder.init_state(encoded.clone(), Some(lens.clone()));
    let decoded = lstm.decoder.forward(x.clone().narrow(1, 0, 1), state);
    assert_eq!(decoded.state.hidden_state.dims(), [2, 4, 32]);
    // The first step's weights are those of the top layer's h as query.
    let top = encoded.state.clone().narrow(0, 1, 1).squeeze_dim::<2>(0);
    let expect = |query: Tensor<2>, attention: &AdditiveAttention| {
        let keys = encoded.outputs.clone();
        let query = query.unsqueeze_dim(1);
        attention.forward(query, keys.clone(), keys, Some(&lens))
    };
    let weights = decoded.attention[0].weights.clone();
    let attention = &lstm.decoder.attention;
    for (part, is_query) in [(0, true), (16, false)] {
        let query = top.clone().narrow(1, part, 16);
        let gap = (expect(query, attention).attention_weights.tensor()
            - weights.clone())
        .abs()
        .max()
        .into_scalar::<f32>();
        assert_eq!(gap < 1e-6, is_query, "part {part}: gap {gap}");
    }
    // The dot product: softmax of qᵀk / √16 over the valid keys.
    let dot: BahdanauModel<GruLayer, DotProductAttention> =
        config.init_variant(&device).map(&mut SeededInit(0));
    let encoded = dot.encoder.forward(x.clone(), None);
    let state = dot.decoder.init_state(encoded.clone(), Some(lens.clone()));
    let decoded = dot.decoder.forward(x.clone().narrow(1, 0, 1), state);
    let top = encoded.state.narrow(0, 1, 1).squeeze_dim::<2>(0);
    let keys = encoded.outputs.narrow(1, 0, 7);
    let plain = DotProductAttentionConfig::new().init().forward(
        top.unsqueeze_dim(1),
        keys.clone(),
        keys,
        Some(&lens),
    );
    let gap = (plain.attention_weights.tensor() - decoded.attention[0].weights.clone())
        .abs()
        .max()
        .into_scalar::<f32>();
    assert!(gap < 1e-6, "dot product: gap {gap}");
    // Wrong sizes are named.
    let mut state = lstm
        .decoder
        .init_state(lstm.encoder.forward(x.clone(), None), None);
    state.hidden_state = Tensor::zeros([2, 4, 16], &device);
    let err = panic_message(|| {
        lstm.decoder.forward(x.clone(), state);
    });
    assert!(err.contains("(2, 4, 32)"), "{err}");
    let layer = &lstm.encoder.rnn.layers[0];
    let err = panic_message(|| {
        use d2l_attention::rnn::RnnLayer;
        layer.step(
            Tensor::zeros([4, 9], &device),
            Tensor::zeros([4, 32], &device),
        );
    });
    assert!(err.starts_with("`x` has shape [4, 9]"), "{err}");
    let err = panic_message(|| {
        use d2l_attention::rnn::RnnLayer;
        layer.step(
            Tensor::zeros([4, 8], &device),
            Tensor::zeros([1, 32], &device),
        );
    });
    assert!(err.starts_with("`state` has shape [1, 32]"), "{err}");
}

/// `train_batch` skips the padding past the longest source (for the keys)
/// and target; the loss and the gradient stay those of the full batch.
#[test]
fn skipping_padding_changes_neither_loss_nor_gradient() {
    let device = Device::flex().autodiff();
    let model = Seq2SeqConfig::new(9, 9, 4, 8, 2)
        .init(&device)
        .map(&mut SeededInit(100));
    let batch = d2l_attention::machine_translation::Batch {
        x: ints(vec![3, 4, 2, 0, 0, 0, 5, 2, 0, 0, 0, 0], [2, 6], &device),
        x_valid_len: ValidLens::new(&[3, 2], &device),
        y: ints(vec![6, 7, 8, 2, 0, 0, 5, 2, 0, 0, 0, 0], [2, 6], &device),
        y_valid_len: ValidLens::new(&[4, 2], &device),
    };
    // The full computation, padding included: all 6 keys, all 6 steps.
    let bos = Tensor::<2, Int>::full([2, 1], 1, &device);
    let dec_x = Tensor::cat(vec![bos, batch.y.clone().narrow(1, 0, 5)], 1);
    let encoded = model.encoder.forward(batch.x.clone(), None);
    let state = DecoderState {
        enc_outputs: encoded.outputs,
        hidden_state: encoded.state,
        enc_valid_lens: Some(batch.x_valid_len.clone()),
    };
    let decoded = model.decoder.forward(dec_x, state);
    assert_eq!(decoded.attention[0].weights.dims(), [2, 6, 6]);
    let loss = masked_softmax_ce_loss(
        decoded.output,
        batch.y.clone(),
        &batch.y_valid_len,
    )
    .sum();
    let full_loss = loss.clone().into_scalar::<f64>();
    let mut grads = GradientsParams::from_grads(loss.backward(), &model);
    let full_norm = grad_clipping(&model, &mut grads, f64::INFINITY)
        .unwrap()
        .into_scalar::<f64>();
    let config = TrainConfig::new();
    let mut optimizer = config.optimizer.init();
    let step = train_batch(model, &mut optimizer, batch, 1, &config).unwrap();
    let loss_sum = step.loss_sum.into_scalar::<f64>();
    assert!(
        (loss_sum - full_loss).abs() < 1e-6 * full_loss,
        "{loss_sum} vs {full_loss}"
    );
    let grad_norm = step.grad_norm.unwrap().into_scalar::<f64>();
    assert!(
        (grad_norm - full_norm).abs() < 1e-5 * full_norm,
        "{grad_norm} vs {full_norm}"
    );
}

/// A run of `bahdanau-train` as another machine may print it.
const TRAIN_OUTPUT: &str = "loss 0.020 after 250 epochs on flex
go . => va !, bleu 1.000
i lost . => j'ai perdu ., bleu 1.000
he's calm . => il est bon ., bleu 0.658
i'm home . => je suis chez moi ., bleu 1.000
    je <- home   (0.29)
  suis <- .      (0.33)
  chez <- home   (0.34)
   moi <- <eos>  (0.31)
     . <- <eos>  (0.31)
 <eos> <- <eos>  (0.26)
";

#[test]
fn training_facts_hold_for_any_machine_s_run_and_catch_a_failed_one() {
    train_facts(TRAIN_OUTPUT).unwrap();
    // "he's calm ." is not a training pair: any translation is a valid run.
    let calm = TRAIN_OUTPUT
        .replace("il est bon ., bleu 0.658", "il essaye ., bleu 0.000");
    train_facts(&calm).unwrap();
    let cases = [
        (
            "loss 0.020",
            "loss 0.041",
            "final loss 0.041 outside (0, 0.03]",
        ),
        ("loss 0.020", "loss -7.500", "final loss -7.5 outside"),
        ("loss 0.020", "loss -inf", "final loss -inf outside"),
        ("after 250 epochs", "after 1 epochs", "not 250 epochs"),
        (
            "va !, bleu 1.000",
            "va ., bleu 0.000",
            "`go .` must come out as `va !`",
        ),
        (
            "j'ai perdu ., bleu 1.000",
            "j'ai perdu !, bleu 0.658",
            "`i lost .`",
        ),
        ("il est bon ., bleu 0.658", ", bleu 0.658", "no translation"),
        (
            "il est bon ., bleu 0.658",
            "il est bon ., bleu NaN",
            "BLEU outside",
        ),
        (
            "     . <- <eos>  (0.31)\n",
            "",
            "5 alignment rows, expected 6",
        ),
        ("(0.26)", "(0.20)", "bad alignment row for `<eos>`"),
        (
            "  chez <- home",
            "  chez <- banana",
            "bad alignment row for `chez`",
        ),
        (
            "    je <- home",
            "   xyz <- home",
            "bad alignment row for `je`",
        ),
    ];
    for (from, to, error) in cases {
        let broken = TRAIN_OUTPUT.replace(from, to);
        let e = train_facts(&broken).unwrap_err().to_string();
        assert!(e.contains(error), "{to:?}: {e}");
    }
}
