//! The Bahdanau encoder–decoder against PyTorch running d2l's code
//! (tests/golden/seq2seq_attention.json): forward pass, masked loss,
//! gradient norms, clipped gradients and two clipped Adam steps; and the
//! LSTM layers of the chapter's exercise 1 against `torch.nn.LSTM`
//! (tests/golden/lstm.json).

mod common;

use burn::module::Param;
use burn::nn::{DropoutConfig, Embedding, Linear};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor};
use common::{assert_close, devices, float, golden, int, valid_lens};
use d2l_attention::attention_scoring::AdditiveAttention;
use d2l_attention::bahdanau::{
    BahdanauModel, Seq2SeqAttentionDecoder, Seq2SeqEncoder,
};
use d2l_attention::machine_translation::Batch;
use d2l_attention::rnn::{GruLayer, LstmLayer, StackedGru, StackedLstm};
use d2l_attention::seq2seq::{
    Decoder, Encoder, EncoderDecoder, TrainConfig, grad_clipping,
    masked_softmax_ce_loss, train_batch,
};
use serde_json::Value;

/// A Linear from torch's (out, in) weight.
fn linear(
    params: &Value,
    weight: &str,
    bias: Option<&str>,
    device: &Device,
) -> Linear {
    let w: Tensor<2> = float(&params[weight], device);
    Linear {
        weight: Param::from_tensor(w.transpose()),
        bias: bias.map(|b| Param::from_tensor(float(&params[b], device))),
    }
}

fn gru(params: &Value, part: &str, device: &Device) -> StackedGru {
    let layers = (0..2)
        .map(|l| {
            let name = |kind: &str| format!("{part}.rnn.{kind}_l{l}");
            GruLayer {
                input: linear(
                    params,
                    &name("weight_ih"),
                    Some(&name("bias_ih")),
                    device,
                ),
                hidden: linear(
                    params,
                    &name("weight_hh"),
                    Some(&name("bias_hh")),
                    device,
                ),
            }
        })
        .collect();
    StackedGru {
        layers,
        dropout: DropoutConfig::new(0.0).init(),
    }
}

fn embedding(params: &Value, name: &str, device: &Device) -> Embedding {
    Embedding {
        weight: Param::from_tensor(float(&params[name], device)),
    }
}

/// The model of case j, with torch's initial weights.
fn model(g: &Value, device: &Device) -> BahdanauModel {
    let p = &g["params"];
    let attention = |name: &str| {
        linear(p, &format!("decoder.attention.{name}"), None, device)
    };
    EncoderDecoder {
        encoder: Seq2SeqEncoder {
            embedding: embedding(p, "encoder.embedding", device),
            rnn: gru(p, "encoder", device),
        },
        decoder: Seq2SeqAttentionDecoder {
            attention: AdditiveAttention {
                w_k: attention("W_k"),
                w_q: attention("W_q"),
                w_v: attention("w_v"),
                dropout: DropoutConfig::new(0.0).init(),
            },
            embedding: embedding(p, "decoder.embedding", device),
            rnn: gru(p, "decoder", device),
            dense: linear(
                p,
                "decoder.dense.weight",
                Some("decoder.dense.bias"),
                device,
            ),
        },
    }
}

#[test]
fn forward_and_loss_match_pytorch() {
    let g = golden("seq2seq_attention.json");
    for (backend, device) in devices() {
        let model = model(&g, &device);
        let encoded = model.encoder.forward(int(&g["enc_X"], &device), None);
        let worst_enc = assert_close(
            "enc_outputs",
            encoded.outputs.clone(),
            &g["enc_outputs"],
            1e-5,
            1e-5,
        );
        let state = model.decoder.init_state(
            encoded,
            Some(valid_lens(&g["enc_valid_lens"], &device)),
        );
        let decoded = model.decoder.forward(int(&g["dec_X"], &device), state);
        let attention_weights = decoded.attention[0].weights.clone();
        let worst = [
            worst_enc,
            assert_close(
                "dec_output",
                decoded.output.clone(),
                &g["dec_output"],
                1e-5,
                1e-5,
            ),
            assert_close(
                "hidden_state",
                decoded.state.hidden_state,
                &g["hidden_state"],
                1e-5,
                1e-5,
            ),
            assert_close(
                "attention_weights",
                attention_weights.clone(),
                &g["attention_weights"],
                1e-5,
                1e-5,
            ),
            assert_close(
                "loss",
                masked_softmax_ce_loss(
                    decoded.output,
                    int(&g["Y"], &device),
                    &valid_lens(&g["Y_valid_len"], &device),
                ),
                &g["loss"],
                1e-5,
                1e-5,
            ),
        ];
        // Source positions past the valid length get exactly nothing.
        let weights = attention_weights.try_into_vec_as::<f32>().unwrap();
        for (b, valid) in [(1, 2), (2, 1)] {
            for q in 0..5 {
                for k in valid..4 {
                    assert_eq!(
                        weights[(b * 5 + q) * 4 + k],
                        0.0,
                        "{backend}: weight [{b}, {q}, {k}]"
                    );
                }
            }
        }
        eprintln!(
            "{backend}: largest deviation {:e}",
            worst.iter().fold(0.0f64, |a, &b| a.max(b))
        );
    }
}

/// The gradients after clipping to a global norm of 0.5, against torch's
/// `clip_grad_norm_`.
#[test]
fn clipped_gradients_match_pytorch() {
    let g = golden("seq2seq_attention.json");
    for (backend, device) in devices() {
        let device = device.autodiff();
        let model = model(&g, &device);
        let decoded = model.forward(
            int(&g["enc_X"], &device),
            int(&g["dec_X"], &device),
            Some(valid_lens(&g["enc_valid_lens"], &device)),
        );
        let loss = masked_softmax_ce_loss(
            decoded.output,
            int(&g["Y"], &device),
            &valid_lens(&g["Y_valid_len"], &device),
        );
        let mut grads =
            GradientsParams::from_grads(loss.sum().backward(), &model);
        grad_clipping(&model, &mut grads, 0.5);
        let clipped = &g["clipped_grads"];
        let bias = grads
            .get::<1>(model.decoder.dense.bias.as_ref().unwrap().id)
            .unwrap();
        let w_q = grads
            .get::<2>(model.decoder.attention.w_q.weight.id)
            .unwrap();
        let worst = assert_close(
            "dense.bias",
            bias,
            &clipped["decoder.dense.bias"],
            1e-6,
            1e-5,
        )
        .max(assert_close(
            "W_q",
            w_q.transpose(),
            &clipped["decoder.attention.W_q"],
            1e-6,
            1e-5,
        ));
        eprintln!("{backend}: clipped gradients off by {worst:e}");
    }
}

/// Two steps, so that the second Adam update depends on the size of the
/// clipped gradients (the first is their sign, up to ε).
#[test]
fn two_clipped_adam_steps_match_pytorch() {
    let g = golden("seq2seq_attention.json");
    let torch_norms: Vec<f64> = g["grad_norms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    for (backend, device) in devices() {
        let device = device.autodiff();
        let batch = || Batch {
            x: int(&g["enc_X"], &device),
            x_valid_len: valid_lens(&g["enc_valid_lens"], &device),
            y: int(&g["Y"], &device),
            y_valid_len: valid_lens(&g["Y_valid_len"], &device),
        };
        let config = TrainConfig::new().with_clip_norm(0.5);
        let mut optimizer = config.optimizer.init();
        let mut model = model(&g, &device);
        let mut norms = Vec::new();
        for i in 0..2 {
            let step = train_batch(model, &mut optimizer, batch(), 1, &config)
                .unwrap();
            if i == 0 {
                let loss_sum: f64 = common::array(&g["loss"]).1.iter().sum();
                let ours = step.loss_sum.into_scalar::<f64>();
                assert!(
                    (ours - loss_sum).abs() < 1e-5,
                    "{backend}: loss {ours} vs {loss_sum}"
                );
            }
            assert_eq!(step.num_tokens, 10);
            norms.push(step.grad_norm.unwrap().into_scalar::<f64>());
            model = step.model;
        }
        for (ours, torch) in norms.iter().zip(&torch_norms) {
            assert!(
                (ours - torch).abs() < 1e-5 * torch.max(1.0),
                "{backend}: grad norms {norms:?} vs PyTorch {torch_norms:?}"
            );
        }
        let b = batch();
        let dec_x = int(&g["dec_X"], &device);
        let after = model.forward(b.x, dec_x, Some(b.x_valid_len));
        let loss_after =
            masked_softmax_ce_loss(after.output, b.y, &b.y_valid_len);
        let worst = assert_close(
            "loss_after",
            loss_after,
            &g["loss_after"],
            1e-4,
            1e-4,
        );
        eprintln!(
            "{backend}: grad norms {norms:?} (PyTorch {torch_norms:?}), loss after two steps off by {worst:e}"
        );
    }
}

/// torch's `nn.LSTM(3, 4, num_layers=2)` of case k, in our layout.
fn lstm(params: &Value, device: &Device) -> StackedLstm {
    let layers = (0..2)
        .map(|l| {
            let name = |kind: &str| format!("{kind}_l{l}");
            let weights = |kind: &str| {
                let (weight, bias) = (
                    name(&format!("weight_{kind}")),
                    name(&format!("bias_{kind}")),
                );
                linear(params, &weight, Some(&bias), device)
            };
            LstmLayer {
                input: weights("ih"),
                hidden: weights("hh"),
            }
        })
        .collect();
    StackedLstm {
        layers,
        dropout: DropoutConfig::new(0.0).init(),
    }
}

#[test]
fn lstm_layers_match_pytorch() {
    let g = golden("lstm.json");
    for (backend, device) in devices() {
        let lstm = lstm(&g["params"], &device);
        let x: Tensor<3> = float(&g["X"], &device);
        let mut states = lstm.zero_states(2, &device);
        let outputs: Vec<Tensor<2>> = x
            .iter_dim(0)
            .map(|x| lstm.step(x.squeeze_dim(0), &mut states))
            .collect();
        let states = Tensor::stack::<3>(states, 0); // (layers, batch, [h, c])
        let worst = [
            assert_close(
                "output",
                Tensor::stack::<3>(outputs, 0),
                &g["output"],
                1e-5,
                1e-5,
            ),
            assert_close(
                "h_n",
                states.clone().narrow(2, 0, 4),
                &g["h_n"],
                1e-5,
                1e-5,
            ),
            assert_close("c_n", states.narrow(2, 4, 4), &g["c_n"], 1e-5, 1e-5),
        ]
        .into_iter()
        .fold(0.0, f64::max);
        eprintln!("{backend}: LSTM worst |diff| {worst:.2e}");
    }
}
