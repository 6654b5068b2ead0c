//! The facts that `listing-runner check` asserts of "Transformers for
//! Vision"'s trainings, held by the seeds 1, 2 and 3 (the listing's is 1):
//! the ViT's mean test accuracy over the last three epochs, the ResNet's
//! best, and the ResNet ahead of the ViT over the last three.
//! Needs the data (`scripts/fetch-fashion-mnist`) and minutes of a release
//! build: `cargo test --release -p d2l-attention --test vit_seeds --
//! --ignored --nocapture`.

use burn::tensor::Device;
use d2l_attention::classify::{ClassifierTrainConfig, train_classifier};
use d2l_attention::listings::vit_training::*;

#[test]
#[ignore = "needs Fashion-MNIST and minutes of a release build"]
fn the_accuracy_bounds_hold_for_three_seeds() {
    let (train, test) = chapter_data().unwrap();
    let config = ClassifierTrainConfig::new();
    let device = Device::flex().autodiff();
    for seed in [1, 2, 3] {
        device.seed(seed);
        let vit = book_vit().init(&device);
        let mut vit_acc = Vec::new();
        train_classifier(vit, &train, &test, &config, &device, |e| {
            vit_acc.push(e.test_acc)
        })
        .unwrap();
        device.seed(seed);
        let resnet = book_resnet().init(&device);
        let mut resnet_acc = Vec::new();
        train_classifier(resnet, &train, &test, &config, &device, |e| {
            resnet_acc.push(e.test_acc)
        })
        .unwrap();
        let best = resnet_acc.iter().copied().fold(0.0, f64::max);
        let (vit3, resnet3) = (last_three(&vit_acc), last_three(&resnet_acc));
        println!(
            "seed {seed}: ViT {:.3} at epoch 10, {vit3:.3} over the last three; \
             ResNet {:.3}, {resnet3:.3}, best {best:.3}",
            vit_acc[9], resnet_acc[9]
        );
        assert!(vit3 >= MIN_VIT_ACC, "seed {seed}: ViT {vit3}");
        assert!(best >= MIN_RESNET_ACC, "seed {seed}: ResNet best {best}");
        assert!(resnet3 > vit3, "seed {seed}: ResNet {resnet3}, ViT {vit3}");
    }
}
