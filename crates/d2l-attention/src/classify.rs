//! Training and judging image classifiers (d2l en §4.3's `Classifier`
//! with §3.4's `Trainer`): minibatch SGD on the cross-entropy, and the
//! accuracy on held-out images. "Transformers for Vision" trains its
//! [`ViT`](crate::vit::ViT) and its [`ResNet`](crate::resnet::ResNet) with it.

use std::time::Instant;

use burn::config::Config;
use burn::module::Module;
use burn::optim::{GradientsParams, SgdConfig};
use burn::tensor::{Device, Int, Tensor};

use crate::fashion_mnist::Images;
use crate::kernels::log_softmax;

/// A model that scores classes for images.
pub trait ImageClassifier: Module + Clone {
    /// Class scores (batch_size, num_classes) for `x` (batch_size,
    /// channels, height, width).
    fn logits(&self, x: Tensor<4>) -> Tensor<2>;

    /// The number of classes it scores: labels run from 0 to this − 1.
    fn num_classes(&self) -> usize;

    /// The fewest values per channel that one image of `height` × `width`
    /// pixels gives a batch-normalisation layer of the model (the smallest
    /// feature map's area), or `None` without batch normalisation. In
    /// training, a batch of `b` images gives it `b` times as many, and one
    /// value per channel cannot be normalised (PyTorch refuses: "Expected
    /// more than 1 value per channel when training").
    fn batch_norm_values(
        &self,
        _height: usize,
        _width: usize,
    ) -> Option<usize> {
        None
    }
}

impl ImageClassifier for crate::vit::ViT {
    fn logits(&self, x: Tensor<4>) -> Tensor<2> {
        self.forward(x).logits
    }

    fn num_classes(&self) -> usize {
        self.head.weight.dims()[1]
    }
}

impl ImageClassifier for crate::resnet::ResNet {
    fn logits(&self, x: Tensor<4>) -> Tensor<2> {
        self.forward(x)
    }

    fn num_classes(&self) -> usize {
        self.dense.weight.dims()[1]
    }

    fn batch_norm_values(&self, height: usize, width: usize) -> Option<usize> {
        let [h, w] = self.last_map([height, width]);
        Some(h * w)
    }
}

/// The mean cross-entropy of `logits` (batch_size, num_classes) against
/// `labels` (batch_size,), (1,), as PyTorch's `F.cross_entropy`.
///
/// # Examples
/// ```
/// use burn::tensor::{Device, Int, Tensor};
/// use d2l_attention::classify::cross_entropy;
///
/// let device = Device::flex();
/// // Equal scores over 4 classes: ln 4 whatever the label.
/// let loss = cross_entropy(Tensor::zeros([2, 4], &device), Tensor::<1, Int>::from_ints([0, 3], &device));
/// assert!((loss.into_scalar::<f64>() - 4f64.ln()).abs() < 1e-6);
/// ```
pub fn cross_entropy(logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1> {
    let picked = log_softmax(logits).gather(1, labels.unsqueeze_dim(1));
    -picked.mean()
}

/// How [`train_classifier`] trains: d2l's SGD learning rate, epochs,
/// batch size, and the seed of the batches' order.
#[derive(Config, Debug)]
pub struct ClassifierTrainConfig {
    /// SGD's learning rate (d2l's ViT: 0.1; d2l en §8.6 trains its
    /// ResNet-18 with 0.01).
    #[config(default = 0.1)]
    pub lr: f64,
    /// Passes over the training images.
    #[config(default = 10)]
    pub num_epochs: usize,
    /// Images per step.
    #[config(default = 128)]
    pub batch_size: usize,
    /// Seeds the order of the batches (epoch e uses seed + e).
    #[config(default = 0)]
    pub seed: u64,
}

/// What one epoch of [`train_classifier`] did.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClassEpoch {
    /// The epoch (1-based).
    pub epoch: usize,
    /// The mean training loss over the epoch's batches (as the model was
    /// when it met each batch).
    pub loss: f64,
    /// The loss on the test images, after the epoch, without dropout.
    pub test_loss: f64,
    /// The test images classified right, after the epoch.
    pub test_acc: f64,
    /// Seconds of training in this epoch (evaluation excluded).
    pub seconds: f64,
    /// Training images in this epoch.
    pub images: usize,
}

impl ClassEpoch {
    /// Training images per second in this epoch.
    ///
    /// # Examples
    /// ```
    /// use d2l_attention::classify::ClassEpoch;
    ///
    /// let e = ClassEpoch { epoch: 1, loss: 1.0, test_loss: 1.0, test_acc: 0.5, seconds: 2.0, images: 1000 };
    /// assert_eq!(e.images_per_sec(), 500.0);
    /// ```
    pub fn images_per_sec(&self) -> f64 {
        self.images as f64 / self.seconds
    }
}

/// What can stop a training.
#[derive(Debug, thiserror::Error)]
pub enum ClassifyError {
    /// A setting is out of range.
    #[error("invalid `{arg}`: {reason}")]
    Invalid {
        /// The setting.
        arg: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// Training needs gradients.
    #[error(
        "`device` is {0:?}, not an autodiff device: pass `device.autodiff()` and a model made on it"
    )]
    NotAutodiff(Device),
    /// The loss stopped being a number.
    #[error("the loss became {loss} in epoch {epoch}; lower the learning rate")]
    Diverged {
        /// The epoch (1-based).
        epoch: usize,
        /// The loss.
        loss: f64,
    },
}

/// Trains `model` (on `device`, an autodiff device) on `train` by
/// minibatch SGD on [`cross_entropy`], as d2l's `Trainer.fit` does, and
/// after each epoch measures it on `test` ([`evaluate`]); `on_epoch` sees
/// each [`ClassEpoch`]. Reads the loss back once per epoch.
///
/// # Errors
/// [`ClassifyError::Invalid`], before training, for a learning rate that
/// is not a positive number, no epochs, a batch size of 0, no training
/// images, a label of `train` or `test` that is not below the model's
/// [`ImageClassifier::num_classes`] (naming the set, the image, the label
/// and the number of classes), or, for a model with batch normalisation,
/// a batch of one image whose smallest feature map is one pixel (naming
/// `batch_size`, or `train` when only the last batch holds one image;
/// [`ImageClassifier::batch_norm_values`]);
/// [`ClassifyError::NotAutodiff`]; [`ClassifyError::Diverged`].
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::classify::{ClassifierTrainConfig, train_classifier};
/// use d2l_attention::fashion_mnist::Images;
/// use d2l_attention::vit::ViTConfig;
///
/// // Two classes told apart by brightness: a tiny ViT learns them.
/// let mut images = Images::default();
/// for i in 0..32u8 {
///     images.pixels.extend([if i % 2 == 0 { 0 } else { 255 }; 784]);
///     images.labels.push(i % 2);
/// }
/// let device = Device::flex().autodiff();
/// device.seed(0);
/// let model = ViTConfig::new(28, 14, 8, 16, 2, 1).with_num_classes(2).init(&device);
/// let config = ClassifierTrainConfig::new().with_num_epochs(10).with_batch_size(8);
/// let mut accuracies = Vec::new();
/// train_classifier(model, &images, &images, &config, &device, |e| accuracies.push(e.test_acc)).unwrap();
/// assert_eq!(accuracies[9], 1.0);
/// ```
pub fn train_classifier<M: ImageClassifier>(
    model: M,
    train: &Images,
    test: &Images,
    config: &ClassifierTrainConfig,
    device: &Device,
    mut on_epoch: impl FnMut(ClassEpoch),
) -> Result<M, ClassifyError> {
    check(config, device, train)?;
    check_labels(&model, [("train", train), ("test", test)])?;
    check_batch_norm(&model, config.batch_size, train.len())?;
    // training mode, whatever mode the caller left the model in
    let mut model = model.train();
    let mut optimizer = SgdConfig::new().init();
    for epoch in 1..=config.num_epochs {
        let start = Instant::now();
        let mut losses = Vec::new();
        let seed = config.seed.wrapping_add(epoch as u64);
        for (x, y) in train.batches(config.batch_size, Some(seed), device) {
            let loss = cross_entropy(model.logits(x), y);
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optimizer.step(config.lr, model, grads);
            losses.push(loss.detach());
        }
        let loss = Tensor::cat(losses, 0).mean().into_scalar::<f64>();
        let seconds = start.elapsed().as_secs_f64();
        if !loss.is_finite() {
            return Err(ClassifyError::Diverged { epoch, loss });
        }
        let (test_loss, test_acc) =
            evaluate(&model, test, config.batch_size, device);
        on_epoch(ClassEpoch {
            epoch,
            loss,
            test_loss,
            test_acc,
            seconds,
            images: train.len(),
        });
    }
    Ok(model)
}

fn check(
    config: &ClassifierTrainConfig,
    device: &Device,
    train: &Images,
) -> Result<(), ClassifyError> {
    let invalid =
        |arg, reason: String| Err(ClassifyError::Invalid { arg, reason });
    if !(config.lr > 0.0 && config.lr.is_finite()) {
        return invalid(
            "lr",
            format!("{} is not a positive number", config.lr),
        );
    }
    if config.num_epochs == 0 {
        return invalid("num_epochs", "must be at least 1".into());
    }
    if config.batch_size == 0 {
        return invalid("batch_size", "must be at least 1".into());
    }
    if train.is_empty() {
        return invalid("train", "has no images".into());
    }
    if !device.is_autodiff() {
        return Err(ClassifyError::NotAutodiff(device.clone()));
    }
    Ok(())
}

/// An error naming the first set whose label is not below the model's
/// number of classes.
fn check_labels<'a, M: ImageClassifier>(
    model: &M,
    sets: impl IntoIterator<Item = (&'static str, &'a Images)>,
) -> Result<(), ClassifyError> {
    let num_classes = model.num_classes();
    for (arg, images) in sets {
        let bad = images
            .labels
            .iter()
            .enumerate()
            .find(|(_, l)| usize::from(**l) >= num_classes);
        if let Some((i, label)) = bad {
            let reason = format!(
                "image {i} has label {label}, but the model scores \
                 {num_classes} classes (labels below {num_classes})"
            );
            return Err(ClassifyError::Invalid { arg, reason });
        }
    }
    Ok(())
}

/// An error when a training batch (a full one, or the last) would give a
/// batch-normalisation layer one value per channel.
fn check_batch_norm<M: ImageClassifier>(
    model: &M,
    batch_size: usize,
    num_images: usize,
) -> Result<(), ClassifyError> {
    use crate::fashion_mnist::SIDE;
    if model.batch_norm_values(SIDE, SIDE) != Some(1) {
        return Ok(());
    }
    let arg = if batch_size == 1 {
        "batch_size"
    } else if num_images % batch_size == 1 {
        "train"
    } else {
        return Ok(());
    };
    let reason = format!(
        "a batch of one image ({} images in batches of {batch_size}) leaves \
         one value per channel in the model's last batch normalisation \
         ({SIDE} × {SIDE} images shrink to 1 × 1), which training cannot \
         normalise; use batches of at least 2 images",
        num_images
    );
    Err(ClassifyError::Invalid { arg, reason })
}

/// The mean cross-entropy and the accuracy of `model` (living on
/// `device`, plain or autodiff) on `images`, in batches of `batch_size`,
/// computed by its inference copy `model.valid()` (no dropout, batch
/// norm's running statistics) whatever mode it was left in. Returns
/// (0, 0) for no images.
///
/// # Panics
/// When `batch_size` is 0, or a label of `images` is not below the model's
/// [`ImageClassifier::num_classes`] (the message names `images`, the image
/// and the label).
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::classify::evaluate;
/// use d2l_attention::fashion_mnist::Images;
/// use d2l_attention::vit::ViTConfig;
///
/// let device = Device::flex();
/// let model = ViTConfig::new(28, 14, 8, 16, 2, 1).init(&device);
/// let images = Images { pixels: vec![0; 784 * 3], labels: vec![0, 1, 2] };
/// let (loss, acc) = evaluate(&model, &images, 2, &device);
/// // Equal images get equal scores: at most one of the three labels is right.
/// assert!(loss > 0.0 && (acc == 0.0 || (acc - 1.0 / 3.0).abs() < 1e-12));
/// ```
pub fn evaluate<M: ImageClassifier>(
    model: &M,
    images: &Images,
    batch_size: usize,
    device: &Device,
) -> (f64, f64) {
    if images.is_empty() {
        return (0.0, 0.0);
    }
    if let Err(e) = check_labels(model, [("images", images)]) {
        panic!("{e}");
    }
    let (model, device) = (model.valid(), device.clone().inner());
    let (mut losses, mut correct) = (Vec::new(), Vec::new());
    for (x, y) in images.batches(batch_size, None, &device) {
        let n = y.dims()[0] as f64;
        let logits = model.logits(x);
        losses.push(cross_entropy(logits.clone(), y.clone()) * n);
        correct.push(
            logits
                .argmax(1)
                .squeeze_dim::<1>(1)
                .equal(y)
                .int()
                .sum()
                .float(),
        );
    }
    let n = images.len() as f64;
    let loss = Tensor::cat(losses, 0).sum().into_scalar::<f64>() / n;
    let correct = Tensor::cat(correct, 0).sum().into_scalar::<f64>();
    (loss, correct / n)
}

/// The predicted class of each of `images`, by `model`'s inference copy
/// on the plain form of `device` (where `model` lives, plain or autodiff).
///
/// # Examples
/// ```
/// use burn::tensor::Device;
/// use d2l_attention::classify::predict;
/// use d2l_attention::fashion_mnist::Images;
/// use d2l_attention::vit::ViTConfig;
///
/// let device = Device::flex().autodiff();
/// let model = ViTConfig::new(28, 14, 8, 16, 2, 1).init(&device);
/// let images = Images { pixels: vec![0; 784 * 2], labels: vec![0, 1] };
/// let predicted = predict(&model, &images, &device);
/// // One class each, the same for equal images (no dropout in inference).
/// assert!(predicted.len() == 2 && predicted[0] == predicted[1] && predicted[0] < 10);
/// ```
pub fn predict<M: ImageClassifier>(
    model: &M,
    images: &Images,
    device: &Device,
) -> Vec<usize> {
    let (model, device) = (model.valid(), device.clone().inner());
    let idx: Vec<usize> = (0..images.len()).collect();
    let (x, _) = images.batch(&idx, &device);
    let predicted = model
        .logits(x)
        .argmax(1)
        .try_into_vec_as::<i64>()
        .expect("argmax reads back");
    predicted.into_iter().map(|c| c as usize).collect()
}
