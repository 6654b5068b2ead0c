//! The checks `classify::train_classifier` and `classify::evaluate` make
//! before any work: labels below the model's number of classes, and no
//! training batch that would leave a batch normalisation one value per
//! channel (PyTorch: "Expected more than 1 value per channel when
//! training").

mod common;

use burn::module::Module;
use burn::tensor::Device;
use d2l_attention::classify::*;
use d2l_attention::fashion_mnist::Images;
use d2l_attention::resnet::ResNetConfig;
use d2l_attention::vit::ViTConfig;

fn images(labels: &[u8]) -> Images {
    Images {
        pixels: vec![128; 784 * labels.len()],
        labels: labels.to_vec(),
    }
}

/// One epoch of `model` on `labels`' images (train and test alike) in
/// batches of `batch_size`.
fn one_epoch<M: ImageClassifier>(
    model: M,
    labels: &[u8],
    batch_size: usize,
    device: &Device,
) -> Result<M, ClassifyError> {
    let data = images(labels);
    let config = ClassifierTrainConfig::new()
        .with_num_epochs(1)
        .with_batch_size(batch_size);
    train_classifier(model, &data, &data, &config, device, |_| {})
}

fn invalid(err: ClassifyError) -> (&'static str, String) {
    match err {
        ClassifyError::Invalid { arg, reason } => (arg, reason),
        other => panic!("expected an invalid argument, got {other}"),
    }
}

#[test]
fn labels_past_the_classes_are_refused_before_training() {
    let device = Device::flex().autodiff();
    let vit = ViTConfig::new(28, 14, 8, 16, 2, 1)
        .with_num_classes(2)
        .init(&device);
    assert_eq!(vit.num_classes(), 2);
    let config = ClassifierTrainConfig::new()
        .with_num_epochs(1)
        .with_batch_size(2);
    let (good, bad) = (images(&[0, 1]), images(&[0, 5]));
    let mut epochs = 0;
    for (train, test, named) in [(&bad, &good, "train"), (&good, &bad, "test")]
    {
        let err = train_classifier(
            vit.clone(),
            train,
            test,
            &config,
            &device,
            |_| epochs += 1,
        )
        .unwrap_err();
        let (arg, reason) = invalid(err);
        assert_eq!(arg, named);
        assert!(
            reason.contains("image 1 has label 5")
                && reason.contains("2 classes"),
            "{reason}"
        );
    }
    assert_eq!(epochs, 0, "no epoch ran");
    let resnet = ResNetConfig::new(4, vec![(1, 4)])
        .with_num_classes(3)
        .init(&device);
    assert_eq!(resnet.num_classes(), 3);
    let plain = vit.valid();
    let message = common::panic_message(|| {
        evaluate(&plain, &bad, 2, &Device::flex());
    });
    assert!(
        message.contains("`images`") && message.contains("label 5"),
        "{message}"
    );
}

#[test]
fn a_batch_norm_with_one_value_per_channel_is_refused() {
    let device = Device::flex().autodiff();
    // ResNet-18 shrinks 28 × 28 to 1 × 1: one image per batch leaves one
    // value per channel
    let resnet18 = ResNetConfig::new(8, vec![(1, 8), (1, 8), (1, 8), (1, 8)])
        .init(&device);
    assert_eq!(resnet18.last_map([28, 28]), [1, 1]);
    assert_eq!(resnet18.batch_norm_values(28, 28), Some(1));
    let (arg, reason) = invalid(
        one_epoch(resnet18.clone(), &[0, 1, 2], 1, &device).unwrap_err(),
    );
    assert_eq!(arg, "batch_size");
    assert!(reason.contains("one value per channel"), "{reason}");
    // 3 images in batches of 2: the last batch holds one image
    assert_eq!(
        invalid(
            one_epoch(resnet18.clone(), &[0, 1, 2], 2, &device).unwrap_err()
        )
        .0,
        "train"
    );
    // 4 images in batches of 2 train
    one_epoch(resnet18, &[0, 1, 2, 3], 2, &device).unwrap();
    // the chapter's ResNet ends on 2 × 2 maps: 4 values per channel from
    // one image, which PyTorch normalises too, so a batch of one trains
    let chapter =
        ResNetConfig::new(16, vec![(1, 16), (1, 32), (1, 64)]).init(&device);
    assert_eq!(chapter.last_map([28, 28]), [2, 2]);
    one_epoch(chapter, &[3], 1, &device).unwrap();
    // a ViT has no batch normalisation
    let vit = ViTConfig::new(28, 14, 8, 16, 2, 1).init(&device);
    assert_eq!(vit.batch_norm_values(28, 28), None);
    one_epoch(vit, &[3], 1, &device).unwrap();
}
