//! The library's Transformer against d2l en's PyTorch code
//! (`python/make_transformer_golden.py`, PyTorch 2.9.0): every block, the
//! encoder, the decoder in training mode and step-by-step prediction, on
//! every backend of the build, within 1e-5 + 1e-5·|torch|.

mod common;

use burn::module::Param;
use burn::nn::{DropoutConfig, Embedding, LayerNormConfig, Linear};
use burn::tensor::{Device, Tensor};
use common::{assert_close, float, golden, int, modes, valid_lens};
use d2l_attention::kernels::LayerNorm;
use d2l_attention::multihead_attention::{
    MultiHeadAttention, MultiHeadAttentionConfig,
};
use d2l_attention::positional_encoding::PositionalEncodingConfig;
use d2l_attention::seq2seq::{AttentionKind, AttentionMap, Decoder, Encoder};
use d2l_attention::transformer::*;
use serde_json::Value;

const TOL: f64 = 1e-5;

/// Builds the book's layers from a case's PyTorch state dict.
struct Weights<'a> {
    params: &'a Value,
    device: &'a Device,
    num_heads: usize,
}

impl Weights<'_> {
    fn get<const D: usize>(&self, name: &str) -> Tensor<D> {
        let v = &self.params[name];
        assert!(!v.is_null(), "no `{name}` in the state dict");
        float(v, self.device)
    }

    /// PyTorch's (out, in) weight as burn's (in, out), and the bias if any.
    fn linear(&self, prefix: &str) -> Linear {
        let bias = format!("{prefix}.bias");
        Linear {
            weight: Param::from_tensor(
                self.get::<2>(&format!("{prefix}.weight")).transpose(),
            ),
            bias: (!self.params[&bias].is_null())
                .then(|| Param::from_tensor(self.get::<1>(&bias))),
        }
    }

    fn layer_norm(&self, prefix: &str) -> LayerNorm {
        let gamma = self.get::<1>(&format!("{prefix}.weight"));
        let mut ln =
            LayerNorm::new(&LayerNormConfig::new(gamma.dims()[0]), self.device);
        ln.gamma = Param::from_tensor(gamma);
        ln.beta = Some(Param::from_tensor(self.get(&format!("{prefix}.bias"))));
        ln
    }

    fn attention(&self, prefix: &str) -> MultiHeadAttention {
        let n = self.get::<2>(&format!("{prefix}.W_q.weight")).dims()[0];
        let mut mha = MultiHeadAttentionConfig::new(n, n, n, n, self.num_heads)
            .init(self.device);
        mha.w_q = self.linear(&format!("{prefix}.W_q"));
        mha.w_k = self.linear(&format!("{prefix}.W_k"));
        mha.w_v = self.linear(&format!("{prefix}.W_v"));
        mha.w_o = self.linear(&format!("{prefix}.W_o"));
        mha
    }

    fn add_norm(&self, prefix: &str) -> AddNorm {
        AddNorm {
            dropout: DropoutConfig::new(0.0).init(),
            ln: self.layer_norm(&format!("{prefix}.ln")),
        }
    }

    fn ffn(&self, prefix: &str) -> PositionWiseFFN {
        PositionWiseFFN {
            dense1: self.linear(&format!("{prefix}.dense1")),
            dense2: self.linear(&format!("{prefix}.dense2")),
        }
    }

    /// `prefix` is "" for a lone block, "blks.block{i}." in a stack.
    fn encoder_block(&self, prefix: &str) -> TransformerEncoderBlock {
        TransformerEncoderBlock {
            attention: self.attention(&format!("{prefix}attention")),
            addnorm1: self.add_norm(&format!("{prefix}addnorm1")),
            ffn: self.ffn(&format!("{prefix}ffn")),
            addnorm2: self.add_norm(&format!("{prefix}addnorm2")),
        }
    }

    fn decoder_block(&self, prefix: &str) -> TransformerDecoderBlock {
        TransformerDecoderBlock {
            attention1: self.attention(&format!("{prefix}attention1")),
            addnorm1: self.add_norm(&format!("{prefix}addnorm1")),
            cross: Some(CrossAttention {
                attention: self.attention(&format!("{prefix}attention2")),
                addnorm: self.add_norm(&format!("{prefix}addnorm2")),
            }),
            ffn: self.ffn(&format!("{prefix}ffn")),
            addnorm3: self.add_norm(&format!("{prefix}addnorm3")),
        }
    }

    fn embedding(&self) -> Embedding {
        Embedding {
            weight: Param::from_tensor(self.get("embedding.weight")),
        }
    }

    fn num_blocks(&self) -> usize {
        let keys = self.params.as_object().unwrap().keys();
        keys.filter(|k| k.ends_with("addnorm1.ln.weight")).count()
    }

    fn encoder(&self) -> TransformerEncoder {
        let embedding = self.embedding();
        let num_hiddens = embedding.weight.dims()[1];
        TransformerEncoder {
            embedding,
            pos_encoding: PositionalEncodingConfig::new(num_hiddens)
                .init(self.device),
            blks: (0..self.num_blocks())
                .map(|i| self.encoder_block(&format!("blks.block{i}.")))
                .collect(),
        }
    }

    fn decoder(&self) -> TransformerDecoder {
        let embedding = self.embedding();
        let num_hiddens = embedding.weight.dims()[1];
        TransformerDecoder {
            embedding,
            pos_encoding: PositionalEncodingConfig::new(num_hiddens)
                .init(self.device),
            blks: (0..self.num_blocks())
                .map(|i| self.decoder_block(&format!("blks.block{i}.")))
                .collect(),
            dense: self.linear("dense"),
        }
    }
}

fn weights<'a>(case: &'a Value, device: &'a Device) -> Weights<'a> {
    Weights {
        params: &case["params"],
        device,
        num_heads: 2,
    }
}

/// Ours (batch_size, num_heads, q, k) as d2l's (batch_size·num_heads, q, k).
fn merged(weights: Tensor<4>) -> Tensor<3> {
    let [b, h, q, k] = weights.dims();
    weights.reshape([b * h, q, k])
}

/// The maps of one kind and layer, stacked back into d2l's layout.
fn maps_of(
    maps: &[AttentionMap],
    kind: AttentionKind,
    layer: usize,
) -> Tensor<3> {
    let heads: Vec<Tensor<3>> = maps
        .iter()
        .filter(|m| m.kind == kind && m.layer == layer)
        .map(|m| m.weights.clone())
        .collect();
    merged(Tensor::stack(heads, 1))
}

#[test]
fn every_block_the_encoder_and_the_decoder_match_pytorch() {
    let g = golden("transformer.json");
    let cases = &g["cases"];
    // With dropout 0 both modes must give PyTorch's numbers.
    for (mode, device) in modes() {
        let what = |case: &str, t: &str| format!("{mode} {case} {t}");
        let mut worst = Vec::new();

        let c = &cases["encoder_block"];
        let block = weights(c, &device).encoder_block("");
        let lens = valid_lens(&c["valid_lens"], &device);
        let out = block.forward(float(&c["X"], &device), Some(&lens));
        let w = what("encoder_block", "");
        worst.push((
            "encoder_block",
            assert_close(&w, out.output, &c["output"], TOL, TOL).max(
                assert_close(
                    &w,
                    merged(out.attention_weights.tensor()),
                    &c["attention_weights"],
                    TOL,
                    TOL,
                ),
            ),
        ));

        let c = &cases["encoder"];
        let encoder = weights(c, &device).encoder();
        let lens = valid_lens(&c["valid_lens"], &device);
        let encoded = encoder.forward(int(&c["X"], &device), Some(&lens));
        let w = what("encoder", "");
        let mut dev =
            assert_close(&w, encoded.outputs.clone(), &c["output"], TOL, TOL);
        for (i, weights) in encoded.attention_weights.iter().enumerate() {
            let want = &c["attention_weights"][i];
            dev = dev.max(assert_close(
                &w,
                merged(weights.tensor()),
                want,
                TOL,
                TOL,
            ));
        }
        worst.push(("encoder", dev));

        let c = &cases["decoder_block"];
        let block = weights(c, &device).decoder_block("");
        let lens = valid_lens(&c["enc_valid_lens"], &device);
        let memory = float(&c["enc_outputs"], &device);
        let out =
            block.forward(float(&c["X"], &device), None, &memory, Some(&lens));
        let w = what("decoder_block", "");
        let dev = assert_close(&w, out.output, &c["output"], TOL, TOL)
            .max(assert_close(
                &w,
                merged(out.self_attention.tensor()),
                &c["self_attention"],
                TOL,
                TOL,
            ))
            .max(assert_close(
                &w,
                merged(out.cross_attention.unwrap().tensor()),
                &c["cross_attention"],
                TOL,
                TOL,
            ));
        worst.push(("decoder_block", dev));

        let c = &cases["decoder"];
        let decoder = weights(c, &device).decoder();
        let lens = valid_lens(&c["enc_valid_lens"], &device);
        let state = || {
            decoder.init_state(
                TransformerEncoded {
                    outputs: float(&c["enc_outputs"], &device),
                    attention_weights: Vec::new(),
                },
                Some(lens.clone()),
            )
        };
        let dec_x = int::<2>(&c["X"], &device);
        let decoded = decoder.forward(dec_x.clone(), state());
        let w = what("decoder", "");
        let mut dev = assert_close(&w, decoded.output, &c["output"], TOL, TOL);
        for layer in 0..2 {
            for (kind, key) in [
                (AttentionKind::DecoderSelfAttention, "self_attention"),
                (AttentionKind::EncoderDecoder, "cross_attention"),
            ] {
                let got = maps_of(&decoded.attention, kind, layer);
                dev = dev.max(assert_close(&w, got, &c[key][layer], TOL, TOL));
            }
        }
        worst.push(("decoder (training pass)", dev));

        // One call per token, the cache carrying the steps so far: the
        // logits of the training pass (PyTorch's prediction equals
        // them; its generator checks it).
        let mut state = state();
        let mut steps = Vec::new();
        for t in 0..dec_x.dims()[1] {
            let decoded = decoder.forward(dec_x.clone().narrow(1, t, 1), state);
            state = decoded.state;
            steps.push(decoded.output);
        }
        let p = &cases["prediction"];
        let dev = assert_close(
            &what("prediction", ""),
            Tensor::cat(steps, 1),
            &c["output"],
            TOL,
            TOL,
        );
        let cached: Vec<usize> = state
            .key_values
            .iter()
            .map(|kv| kv.as_ref().unwrap().dims()[1])
            .collect();
        let want: Vec<usize> = p["cache_steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as usize)
            .collect();
        assert_eq!(cached, want);
        worst.push(("prediction (step by step)", dev));

        for (case, dev) in worst {
            eprintln!("{mode}: {case}: largest deviation {dev:.2e}");
        }
    }
}
