//! "Transformers for Vision" against d2l en §11.8's PyTorch code
//! (`python/make_vit_golden.py`, PyTorch 2.9.0): the patch embedding, the
//! MLP, a block (with and without valid lengths), a whole ViT (both
//! poolings) and its gradients, and d2l en §8.6's `Residual` in training
//! and inference; on every backend of the build, within 1e-5 +
//! 1e-5·|torch|. Prints the largest deviation of each.

mod common;

use burn::module::{Param, RunningState};
use burn::nn::conv::Conv2d;
use burn::nn::{BatchNorm, BatchNormConfig, LayerNormConfig, Linear};
use burn::tensor::{Device, Tensor};
use common::{assert_close, float, golden, int, modes, valid_lens};
use d2l_attention::classify::cross_entropy;
use d2l_attention::kernels::LayerNorm;
use d2l_attention::multihead_attention::{
    MultiHeadAttention, MultiHeadAttentionConfig,
};
use d2l_attention::resnet::Residual;
use d2l_attention::vit::*;
use serde_json::Value;

const TOL: f64 = 1e-5;

struct Weights<'a> {
    params: &'a Value,
    device: &'a Device,
}

impl Weights<'_> {
    fn get<const D: usize>(&self, name: &str) -> Tensor<D> {
        let v = &self.params[name];
        assert!(!v.is_null(), "no `{name}` in the state dict");
        float(v, self.device)
    }

    fn param<const D: usize>(&self, name: &str) -> Param<Tensor<D>> {
        Param::from_tensor(self.get(name))
    }

    fn linear(&self, prefix: &str) -> Linear {
        let bias = format!("{prefix}.bias");
        Linear {
            weight: Param::from_tensor(
                self.get::<2>(&format!("{prefix}.weight")).transpose(),
            ),
            bias: (!self.params[&bias].is_null()).then(|| self.param(&bias)),
        }
    }

    fn layer_norm(&self, prefix: &str) -> LayerNorm {
        let gamma = self.get::<1>(&format!("{prefix}.weight"));
        let mut ln =
            LayerNorm::new(&LayerNormConfig::new(gamma.dims()[0]), self.device);
        ln.gamma = Param::from_tensor(gamma);
        ln.beta = Some(self.param(&format!("{prefix}.bias")));
        ln
    }

    fn conv(&self, prefix: &str, mut conv: Conv2d) -> Conv2d {
        conv.weight = self.param(&format!("{prefix}.weight"));
        conv.bias = Some(self.param(&format!("{prefix}.bias")));
        conv
    }

    fn batch_norm(&self, prefix: &str) -> BatchNorm {
        let p = |s: &str| format!("{prefix}.{s}");
        let mut bn =
            BatchNormConfig::new(self.get::<1>(&p("weight")).dims()[0])
                .init(self.device);
        bn.gamma = self.param(&p("weight"));
        bn.beta = self.param(&p("bias"));
        bn.running_mean = RunningState::new(self.get(&p("running_mean")));
        bn.running_var = RunningState::new(self.get(&p("running_var")));
        bn
    }

    fn patch_embedding(
        &self,
        prefix: &str,
        patch_size: usize,
    ) -> PatchEmbedding {
        let w = self.get::<4>(&format!("{prefix}conv.weight")).dims();
        let fresh = PatchEmbedding::new(w[1], patch_size, w[0], self.device);
        PatchEmbedding {
            conv: self.conv(&format!("{prefix}conv"), fresh.conv),
        }
    }

    fn mlp(&self, prefix: &str) -> ViTMLP {
        let mut mlp = ViTMLP::new(1, 1, 1, 0.0, self.device);
        mlp.dense1 = self.linear(&format!("{prefix}dense1"));
        mlp.dense2 = self.linear(&format!("{prefix}dense2"));
        mlp
    }

    fn attention(&self, prefix: &str, num_heads: usize) -> MultiHeadAttention {
        let n = self.get::<2>(&format!("{prefix}.W_q.weight")).dims()[0];
        let mut mha = MultiHeadAttentionConfig::new(n, n, n, n, num_heads)
            .init(self.device);
        mha.w_q = self.linear(&format!("{prefix}.W_q"));
        mha.w_k = self.linear(&format!("{prefix}.W_k"));
        mha.w_v = self.linear(&format!("{prefix}.W_v"));
        mha.w_o = self.linear(&format!("{prefix}.W_o"));
        mha
    }

    fn block(&self, prefix: &str, num_heads: usize) -> ViTBlock {
        ViTBlock {
            ln1: self.layer_norm(&format!("{prefix}ln1")),
            attention: self.attention(&format!("{prefix}attention"), num_heads),
            ln2: self.layer_norm(&format!("{prefix}ln2")),
            mlp: self.mlp(&format!("{prefix}mlp.")),
        }
    }

    fn vit(&self, sizes: &Value, pool: Pool) -> ViT {
        let size = |k: &str| sizes[k].as_u64().unwrap() as usize;
        let config = ViTConfig::new(
            size("img_size"),
            size("patch_size"),
            size("num_hiddens"),
            size("mlp_num_hiddens"),
            size("num_heads"),
            size("num_blks"),
        )
        .with_emb_dropout(0.0)
        .with_blk_dropout(0.0)
        .with_pool(pool);
        let mut vit = config.init(self.device);
        vit.patch_embedding =
            self.patch_embedding("patch_embedding.", config.patch_size);
        vit.cls_token = self.param("cls_token");
        vit.pos_embedding = self.param("pos_embedding");
        vit.blks = (0..config.num_blks)
            .map(|i| self.block(&format!("blks.{i}."), config.num_heads))
            .collect();
        vit.head_norm = self.layer_norm("head.0");
        vit.head = self.linear("head.1");
        vit
    }
}

fn weights<'a>(case: &'a Value, device: &'a Device) -> Weights<'a> {
    Weights {
        params: &case["params"],
        device,
    }
}

/// Ours (batch_size, num_heads, q, k) as d2l's (batch_size·num_heads, q, k).
fn merged(weights: Tensor<4>) -> Tensor<3> {
    let [b, h, q, k] = weights.dims();
    weights.reshape([b * h, q, k])
}

fn close<const D: usize>(
    what: &str,
    actual: Tensor<D>,
    expected: &Value,
) -> f64 {
    assert_close(what, actual, expected, TOL, TOL)
}

#[test]
fn patch_embedding_mlp_and_block_match_pytorch() {
    let g = golden("vit.json");
    let cases = &g["cases"];
    for (mode, device) in modes() {
        for name in ["patch_embedding", "patch_embedding_rgb"] {
            let c = &cases[name];
            let embedding = weights(c, &device).patch_embedding("", 4);
            let out = embedding.forward(float(&c["X"], &device));
            println!(
                "{mode} {name}: {:.1e}",
                close(&format!("{mode} {name}"), out, &c["output"])
            );
        }
        let c = &cases["vit_mlp"];
        let out = weights(c, &device)
            .mlp("")
            .forward(float::<3>(&c["X"], &device));
        println!(
            "{mode} vit_mlp: {:.1e}",
            close(&format!("{mode} vit_mlp"), out, &c["output"])
        );

        let c = &cases["vit_block"];
        let block = weights(c, &device).block("", 2);
        let x = float(&c["X"], &device);
        let out = block.forward(x.clone(), None);
        let w = format!("{mode} vit_block");
        let mut dev = close(&w, out.output, &c["output"]);
        dev = dev.max(close(
            &w,
            merged(out.attention_weights.tensor()),
            &c["attention_weights"],
        ));
        let lens = valid_lens(&c["valid_lens"], &device);
        let out = block.forward(x, Some(&lens));
        dev = dev.max(close(&w, out.output, &c["output_valid_lens"]));
        dev = dev.max(close(
            &w,
            merged(out.attention_weights.tensor()),
            &c["attention_weights_valid_lens"],
        ));
        println!("{w}: {dev:.1e}");
    }
}

#[test]
fn the_vit_its_mean_pooling_and_its_gradients_match_pytorch() {
    let g = golden("vit.json");
    let (c, sizes) = (&g["cases"]["vit"], &g["sizes"]);
    for (mode, device) in modes() {
        let w = format!("{mode} vit");
        let vit = weights(c, &device).vit(sizes, Pool::Cls);
        let x = float::<4>(&c["X"], &device);
        let out = vit.forward(x.clone());
        let mut dev = close(&w, out.logits.clone(), &c["logits"]);
        for (i, weights) in out.attention_weights.into_iter().enumerate() {
            dev = dev.max(close(
                &w,
                merged(weights.tensor()),
                &c["attention_weights"][i],
            ));
        }
        let mean = weights(c, &device)
            .vit(sizes, Pool::Mean)
            .forward(x.clone());
        dev = dev.max(close(&w, mean.logits, &c["logits_mean_pool"]));
        println!("{w}: {dev:.1e}");

        if !device.is_autodiff() {
            continue;
        }
        let grad_case = &g["cases"]["vit_grad"];
        let loss =
            cross_entropy(out.logits, int(&grad_case["labels"], &device));
        let want_loss = grad_case["loss"]["data"][0].as_f64().unwrap();
        let got_loss = loss.clone().into_scalar::<f64>();
        assert!(
            (got_loss - want_loss).abs() <= TOL * (1.0 + want_loss),
            "{w} loss {got_loss} vs {want_loss}"
        );
        let grads = loss.backward();
        let want = &grad_case["grads"];
        let g = |name: &str| &want[name];
        let mut dev = 0f64;
        let mut check = |name: &str, grad: Tensor<4>| {
            let mut want = g(name).clone();
            want["shape"] = serde_json::json!([grad.shape().num_elements()]);
            dev = dev.max(close(
                &format!("{w} grad {name}"),
                grad.flatten::<1>(0, 3),
                &want,
            ));
        };
        let as4 = |t: Tensor<1>| t.reshape([1, 1, 1, -1]);
        let lin = |l: &Linear| {
            l.weight.grad(&grads).unwrap().transpose().unsqueeze::<4>()
        };
        // every parameter of the state dict (32 here)
        let bias = |b: &Option<burn::module::Param<Tensor<1>>>| {
            as4(b.as_ref().unwrap().grad(&grads).unwrap())
        };
        let norm = |ln: &LayerNorm| {
            let beta = ln.beta.as_ref().unwrap().grad(&grads).unwrap();
            (as4(ln.gamma.grad(&grads).unwrap()), as4(beta))
        };
        let mut checked = 0;
        let mut check = |name: &str, grad: Tensor<4>| {
            check(name, grad);
            checked += 1;
        };
        check("cls_token", vit.cls_token.grad(&grads).unwrap().unsqueeze());
        check(
            "pos_embedding",
            vit.pos_embedding.grad(&grads).unwrap().unsqueeze(),
        );
        let conv = &vit.patch_embedding.conv;
        check(
            "patch_embedding.conv.weight",
            conv.weight.grad(&grads).unwrap(),
        );
        check("patch_embedding.conv.bias", bias(&conv.bias));
        let (gamma, beta) = norm(&vit.head_norm);
        check("head.0.weight", gamma);
        check("head.0.bias", beta);
        check("head.1.weight", lin(&vit.head));
        check("head.1.bias", bias(&vit.head.bias));
        for (i, blk) in vit.blks.iter().enumerate() {
            let name = |s: &str| format!("blks.{i}.{s}");
            let a = &blk.attention;
            for (p, l) in
                [("q", &a.w_q), ("k", &a.w_k), ("v", &a.w_v), ("o", &a.w_o)]
            {
                check(&name(&format!("attention.W_{p}.weight")), lin(l));
            }
            for (p, ln) in [("ln1", &blk.ln1), ("ln2", &blk.ln2)] {
                let (gamma, beta) = norm(ln);
                check(&name(&format!("{p}.weight")), gamma);
                check(&name(&format!("{p}.bias")), beta);
            }
            for (p, l) in
                [("dense1", &blk.mlp.dense1), ("dense2", &blk.mlp.dense2)]
            {
                check(&name(&format!("mlp.{p}.weight")), lin(l));
                check(&name(&format!("mlp.{p}.bias")), bias(&l.bias));
            }
        }
        assert_eq!(checked, want.as_object().unwrap().len(), "every gradient");
        println!("{w} gradients: {dev:.1e}");
    }
}

#[test]
fn the_residual_block_matches_pytorch_in_training_and_inference() {
    let g = golden("vit.json");
    let c = &g["cases"]["residual"];
    for (mode, device) in modes() {
        let w = weights(c, &device);
        let fresh = Residual::new(3, 4, true, 2, &device);
        let blk = Residual {
            conv1: w.conv("conv1", fresh.conv1),
            conv2: w.conv("conv2", fresh.conv2),
            conv3: Some(w.conv("conv3", fresh.conv3.unwrap())),
            bn1: w.batch_norm("bn1"),
            bn2: w.batch_norm("bn2"),
        };
        let x = float::<4>(&c["X"], &device);
        let (key, what) = match device.is_autodiff() {
            true => (
                "output_train",
                format!("{mode} residual (batch statistics)"),
            ),
            false => (
                "output_eval",
                format!("{mode} residual (running statistics)"),
            ),
        };
        let mut dev = close(&what, blk.forward(x), &c[key]);
        if device.is_autodiff() {
            // Running means as PyTorch's. burn 0.22.1's BatchNorm updates the
            // running variance with the batch's biased variance (the one it
            // normalises with; burn-nn `norm/batch.rs`, `forward_train`),
            // PyTorch with the unbiased one: PyTorch's update scaled by
            // (n − 1)/n, n = 2 · 3 · 3 values per channel here.
            let n = 18.0;
            for (bn, norm) in [("bn1", &blk.bn1), ("bn2", &blk.bn2)] {
                let (after, before) = (&c["running_after_train"], &c["params"]);
                let key = |s: &str| format!("{bn}.{s}");
                let mean = norm.running_mean.value_sync();
                dev = dev.max(close(&what, mean, &after[key("running_mean")]));
                let old = float::<1>(&before[key("running_var")], &device);
                let torch = float::<1>(&after[key("running_var")], &device);
                let biased =
                    (torch - old.clone() * 0.9) * ((n - 1.0) / n) + old * 0.9;
                let got = norm.running_var.value_sync();
                let worst = (got - biased).abs().max().into_scalar::<f64>();
                assert!(
                    worst < TOL,
                    "{what} {bn} running_var off by {worst:e}"
                );
            }
        }
        println!("{what}: {dev:.1e}");
    }
}
