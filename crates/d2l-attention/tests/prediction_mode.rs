//! Prediction and validation loss do not depend on the mode a model was
//! left in (d2l-en issue #1484: d2l's Transformer translated with dropout
//! on): a model in training mode on an autodiff device, with dropout,
//! gives bit for bit what its inference copy gives on the plain device.
//! Every test runs on every backend of the build.

mod common;

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor};
use common::devices;
use d2l_attention::bahdanau::Seq2SeqConfig;
use d2l_attention::machine_translation::NmtData;
use d2l_attention::seq2seq::*;
use d2l_attention::transformer::TransformerConfig;

/// Ten pairs of d2l's corpus, preprocessed as it is.
const PAIRS: &str = "go .\tva !\nhi .\tsalut !\nrun !\tcours !\nwow !\tça alors !\n\
who ?\tqui ?\nfire !\tau feu !\nhelp !\tà l'aide !\njump .\tsaute .\n\
stop !\tarrête-toi !\nwait !\tattends !\n";

fn data() -> NmtData {
    NmtData::new(PAIRS, 6, 10).unwrap()
}

/// A translation's text and every map's weights, bit for bit.
fn outcome(t: &Translation) -> (String, Vec<Vec<u32>>) {
    let maps = t
        .attention
        .iter()
        .map(|m| {
            let values = m.weights.clone().try_into_vec_as::<f32>().unwrap();
            values.iter().map(|w| w.to_bits()).collect()
        })
        .collect();
    (t.text.clone(), maps)
}

/// Trains `model` (dropout on) for a few epochs on [`data`], then checks
/// that predicting and evaluating in training mode, after
/// `.valid().train()`, and with the plain device all equal the inference
/// copy on the plain device.
fn check_modes<E: Encoder, D: Decoder<E::Output>>(
    what: &str,
    model: EncoderDecoder<E, D>,
    device: &Device,
) {
    let data = data();
    let train_device = device.clone().autodiff();
    let config = TrainConfig::new()
        .with_num_epochs(30)
        .with_batch_size(5)
        .with_lr(0.01);
    let trained = train_seq2seq(model, &data, &config, &train_device, |_| {});
    let trained = trained.unwrap();
    // Dropout is on in this mode: two teacher-forced passes differ.
    let x = Tensor::<2, Int>::ones([1, 6], &train_device);
    let pass = || trained.forward(x.clone(), x.clone(), None).output;
    let gap = (pass() - pass()).abs().max().into_scalar::<f32>();
    assert!(
        gap > 0.0,
        "{what}: dropout should be active in training mode"
    );

    let reference = trained.valid();
    let plain = device.clone().inner();
    let retrained = trained.clone().valid().train();
    let (sv, tv) = (&data.src_vocab, &data.tgt_vocab);
    for sentence in ["wow !", "who ?"] {
        let predict = |m: &EncoderDecoder<E, D>, d: &Device| {
            outcome(&predict_seq2seq(m, sentence, sv, tv, 6, d).unwrap())
        };
        let expected = predict(&reference, &plain);
        for (mode, got) in [
            ("training mode", predict(&trained, &train_device)),
            ("training mode, plain device", predict(&trained, &plain)),
            (".valid().train()", predict(&retrained, &train_device)),
        ] {
            assert_eq!(got, expected, "{what}, {sentence}: {mode}");
        }
    }
    let expected = evaluate_loss(&reference, &data, 4, &plain);
    assert!(expected.is_finite() && expected > 0.0, "{what}: {expected}");
    for (mode, got) in [
        (
            "training mode",
            evaluate_loss(&trained, &data, 4, &train_device),
        ),
        (
            ".valid().train()",
            evaluate_loss(&retrained, &data, 4, &train_device),
        ),
    ] {
        assert_eq!(got.to_bits(), expected.to_bits(), "{what}: {mode}");
    }
}

#[test]
fn a_transformer_predicts_the_same_in_every_mode() {
    let data = data();
    let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
    for (backend, device) in devices() {
        let config = TransformerConfig::new(src, tgt).with_dropout(0.2);
        let model = config.init(&device.clone().autodiff());
        check_modes(&format!("Transformer, {backend}"), model, &device);
    }
}

#[test]
fn a_bahdanau_model_predicts_the_same_in_every_mode() {
    let data = data();
    let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
    for (backend, device) in devices() {
        let config = Seq2SeqConfig::new(src, tgt, 16, 16, 2).with_dropout(0.2);
        let model = config.init(&device.clone().autodiff());
        check_modes(&format!("Bahdanau, {backend}"), model, &device);
    }
}

/// A device where the model does not live: an error naming `device`
/// (needs a second backend: run with `--features tch`).
#[test]
#[cfg_attr(not(feature = "tch"), ignore = "needs libtorch: --features tch")]
fn a_device_the_model_does_not_live_on_is_named() {
    let data = data();
    let (src, tgt) = (data.src_vocab.len(), data.tgt_vocab.len());
    let (sv, tv) = (&data.src_vocab, &data.tgt_vocab);
    let model = Seq2SeqConfig::new(src, tgt, 4, 8, 1).init(&Device::flex());
    // The device the model lives on: accepted.
    assert!(
        predict_seq2seq(&model, "go .", sv, tv, 6, &Device::flex()).is_ok()
    );
    let others: Vec<_> = devices()
        .into_iter()
        .filter(|(_, d)| *d != Device::flex())
        .collect();
    assert!(!others.is_empty(), "no backend but flex in this build");
    for (backend, device) in others {
        let err = predict_seq2seq(&model, "go .", sv, tv, 6, &device);
        let err = err.unwrap_err().to_string();
        assert!(err.starts_with("invalid `device`"), "{backend}: {err}");
        let msg = common::panic_message(|| {
            evaluate_loss(&model, &data, 4, &device);
        });
        assert!(msg.starts_with("invalid `device`"), "{backend}: {msg}");
    }
}
