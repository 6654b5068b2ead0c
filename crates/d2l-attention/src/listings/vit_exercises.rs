//! The exercises of "Transformers for Vision" (d2l en §11.8.6), backed by
//! runs: the cost of `img_size`, the averaged patches instead of `<cls>`,
//! and other settings. They need the data (`scripts/fetch-fashion-mnist`).

use std::fmt::Write;
use std::time::Instant;

use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::Device;
use burn::tensor::module::interpolate;
use burn::tensor::ops::{InterpolateMode, InterpolateOptions};

use super::vit_training::{SEED, book_vit};
use super::{Check, Listing, Output};
use crate::classify::*;
use crate::fashion_mnist::load_fashion_mnist;
use crate::vit::{Pool, ViTConfig};

/// The listings of this section.
pub const LISTINGS: &[Listing] = &[
    Listing {
        name: "vit-img-size",
        file: file!(),
        check: Check::Facts(img_size_facts),
        run: img_size_demo,
    },
    Listing {
        name: "vit-variants",
        file: file!(),
        check: Check::Facts(variants_facts),
        run: variants_demo,
    },
];

/// Image sides of exercise 1: the images scaled up (bilinear, as d2l's
/// `Resize`), the patches kept at 7 × 7.
const IMG_SIZES: [usize; 3] = [28, 56, 84];

fn img_size_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: img_size
    let data = load_fashion_mnist(None)?;
    let train_device = device.clone().autodiff();
    let batch: Vec<usize> = (0..128).collect();
    let mut base = None;
    for img_size in IMG_SIZES {
        train_device.seed(SEED);
        let config = ViTConfig {
            img_size,
            ..book_vit()
        };
        let mut model = config.init(&train_device);
        let mut optimizer = SgdConfig::new().init();
        let (x, y) = data.train.batch(&batch, &train_device);
        // half-pixel centres, as torchvision's Resize
        let resize = InterpolateOptions::new(InterpolateMode::Bilinear)
            .with_align_corners(false)
            .with_output_size([img_size; 2]);
        let x = interpolate(x, resize);
        let mut seconds = Vec::new();
        for _ in 0..4 {
            let start = Instant::now();
            let loss = cross_entropy(model.logits(x.clone()), y.clone());
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optimizer.step(0.1, model, grads);
            loss.into_scalar::<f32>(); // wait for the step
            seconds.push(start.elapsed().as_secs_f64());
        }
        // the median of the three steps after the first (the warm-up)
        let mut timed = seconds.split_off(1);
        timed.sort_by(f64::total_cmp);
        let step = timed[1];
        let base = *base.get_or_insert(step);
        writeln!(
            out,
            "img_size {img_size}: {} patches, {:.0} ms a step, {:.1} × 28's",
            config.num_patches(),
            step * 1e3,
            step / base
        )?;
    }
    // ANCHOR_END: img_size
    Ok(())
}

/// Facts of `vit-img-size`: a step takes longer for every larger image.
pub fn img_size_facts(text: &str) -> anyhow::Result<()> {
    let ratios: Vec<f64> = text
        .lines()
        .filter_map(|l| l.rsplit_once(", ")?.1.split(' ').next()?.parse().ok())
        .collect();
    anyhow::ensure!(
        ratios.len() == IMG_SIZES.len(),
        "one line per size expected: {text}"
    );
    anyhow::ensure!(
        ratios.windows(2).all(|w| w[1] > w[0]),
        "the time per step does not grow with img_size: {ratios:?}"
    );
    Ok(())
}

fn variants_demo(device: &Device, out: &mut Output) -> anyhow::Result<()> {
    // ANCHOR: variants
    let data = load_fashion_mnist(None)?;
    let (train, test) = (
        data.train.first_per_class(500),
        data.test.first_per_class(200),
    );
    let config = ClassifierTrainConfig::new().with_num_epochs(8);
    let variants = [
        ("<cls> token (d2l)", book_vit(), 0.1),
        ("mean of the patches", book_vit().with_pool(Pool::Mean), 0.1),
        (
            "no dropout, lr 0.3",
            book_vit().with_emb_dropout(0.0).with_blk_dropout(0.0),
            0.3,
        ),
    ];
    let train_device = device.clone().autodiff();
    writeln!(
        out,
        "{:19}  last 3  test accuracy, epochs 1 to 8",
        "variant"
    )?;
    for (name, vit, lr) in variants {
        train_device.seed(SEED);
        let model = vit.init(&train_device);
        let mut acc = Vec::new();
        let config = config.clone().with_lr(lr);
        train_classifier(model, &train, &test, &config, &train_device, |e| {
            acc.push(e.test_acc)
        })?;
        let accs: Vec<String> = acc.iter().map(|a| format!("{a:.2}")).collect();
        let last3 = acc[acc.len() - 3..].iter().sum::<f64>() / 3.0;
        writeln!(out, "{name:19}  {last3:.3}   {}", accs.join(" "))?;
    }
    // ANCHOR_END: variants
    Ok(())
}

/// Facts of `vit-variants`: every variant trained eight epochs and learned
/// (its mean accuracy over the last three above 0.4, four times chance).
pub fn variants_facts(text: &str) -> anyhow::Result<()> {
    let lines: Vec<&str> = text.lines().skip(1).collect();
    anyhow::ensure!(lines.len() == 3, "three variants expected: {lines:?}");
    for line in lines {
        // the name, then the mean of the last three, then the 8 epochs
        let numbers: Vec<f64> = line
            .get(19..)
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|a| a.parse().ok())
            .collect();
        anyhow::ensure!(numbers.len() == 9, "eight epochs expected: `{line}`");
        anyhow::ensure!(numbers[0] > 0.4, "did not learn: `{line}`");
    }
    Ok(())
}
