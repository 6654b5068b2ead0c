//! Where does the fused attention (`kernels::attention`) beat d2l's form
//! (scores, masked softmax, batched product)? Median milliseconds of each,
//! forward on a plain device and forward + backward on an autodiff one,
//! for d = 8 and 64 and growing sequence lengths n (batch · heads chosen
//! so that every row holds about 4 M scores), on flex. What
//! `kernels::FUSED_MIN_KEYS` and `FUSED_MIN_TRAINING_KEYS` rest on.
//!
//! Run: `cargo bench -p d2l-attention --bench crossover`.

mod common;

use burn::nn::DropoutConfig;
use burn::tensor::{Device, Tensor};
use d2l_attention::performance::median_seconds;
use d2l_attention::attention_scoring::DotProductAttentionConfig;
use d2l_attention::kernels::{AttentionMask, attention};
use d2l_attention::random::randn;

/// Milliseconds of (d2l's form, fused) for `bh` heads of n × d.
fn pair(device: &Device, bh: usize, n: usize, d: usize) -> (f64, f64) {
    let backward = device.is_autodiff();
    let x = |seed| {
        let x: Tensor<3> = randn([bh, n, d], seed, device);
        if backward { x.require_grad() } else { x }
    };
    let (q, k, v) = (x(1), x(2), x(3));
    let layer = DotProductAttentionConfig::new().init();
    let dropout = DropoutConfig::new(0.0).init();
    let finish = |out: Tensor<3>| match backward {
        true => drop(out.sum().backward()),
        false => drop(out.into_data()),
    };
    let unfused = || {
        let weights = layer.weights(q.clone(), k.clone(), None);
        finish(weights.matmul(v.clone()));
    };
    let head = |x: &Tensor<3>| x.clone().unsqueeze_dim::<4>(1);
    let fused = || {
        let out = attention(
            head(&q),
            head(&k),
            head(&v),
            AttentionMask::None,
            &dropout,
        );
        finish(out.squeeze_dim(1));
    };
    let ms = |f: &dyn Fn()| median_seconds((2, 9, 1), f, || ()) * 1e3;
    (ms(&unfused), ms(&fused))
}

fn main() {
    println!(
        "{:>9} {:>3} {:>5} {:>6} {:>10} {:>10} {:>6}",
        "pass", "d", "n", "heads", "d2l ms", "fused ms", "ratio"
    );
    for (pass, device) in [
        ("fwd", Device::flex()),
        ("fwd+bwd", Device::flex().autodiff()),
    ] {
        for d in [8, 64] {
            for n in [8, 16, 32, 48, 64, 96, 128, 256, 512, 1024, 2048] {
                let bh = (1 << 22) / (n * n);
                let bh = bh.clamp(8, 16_384);
                let (unfused, fused) = pair(&device, bh, n, d);
                println!(
                    "{pass:>9} {d:>3} {n:>5} {bh:>6} {unfused:>10.3} {fused:>10.3} {:>6.2}",
                    fused / unfused
                );
            }
        }
    }
}
