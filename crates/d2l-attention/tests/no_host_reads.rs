//! Forward passes and training steps never read a tensor back from the
//! device, so they never stall a GPU waiting for a value.
//!
//! How this is proved: burn 0.22 has no hook that counts reads on flex or
//! libtorch, but it has a capture device (`Device::capture()`, burn's
//! `capture` feature) that records operations instead of running them. A
//! computed tensor has no value there, so reading one fails with "has no
//! concrete value". Every input below is itself computed (`+ 0`, or
//! `repeat_interleave(1)` for valid lengths), so any read of anything the
//! code under test touches fails the test. Only the host's shapes and the
//! host copy inside `ValidLens` are available, which is the point.
//!
//! The capture device cannot run a backward pass: a training step is run
//! until burn's `backward` refuses ("Capture tensors do not support
//! autodiff"), which proves that nothing before it read a value; gradient
//! clipping is then run on its own, on captured gradients. What follows it
//! is burn's Adam step, which reads nothing either.

mod common;

use burn::module::Module;
use burn::nn::LinearConfig;
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor};
use d2l_attention::attention_scoring::*;
use d2l_attention::bahdanau::Seq2SeqConfig;
use d2l_attention::machine_translation::Batch;
use d2l_attention::seq2seq::{
    Decoder, Encoder, EncoderDecoder, TrainConfig, grad_clipping,
    masked_softmax_ce_loss, train_batch,
};
use d2l_attention::transformer::TransformerConfig;

/// Runs `f` in a capture scope; returns its panic message, if any.
fn captured(f: impl FnOnce(&Device)) -> Option<String> {
    let device = Device::capture();
    let mut message = None;
    device
        .capture_scope(|scope| {
            let run = std::panic::AssertUnwindSafe(|| f(&device));
            if let Err(payload) = std::panic::catch_unwind(run) {
                message = Some(common::message(payload));
            }
            scope.complete([], [])
        })
        .unwrap();
    message
}

/// Random values, computed on the capture device (so never readable).
fn computed<const D: usize>(shape: [usize; D], device: &Device) -> Tensor<D> {
    Tensor::random(shape, burn::tensor::Distribution::Default, device) + 0.0
}

fn computed_ints(
    shape: [usize; 2],
    high: i64,
    device: &Device,
) -> Tensor<2, Int> {
    (computed(shape, device) * high as f64).int()
}

/// Valid lengths whose device tensor is computed.
fn lens(host: &[usize], device: &Device) -> ValidLens {
    ValidLens::new(host, device).repeat_interleave(1)
}

#[test]
fn the_capture_device_fails_on_a_read_of_a_computed_tensor() {
    let message = captured(|device| {
        computed([2, 3], device).sum().into_scalar::<f32>();
    });
    assert!(
        message
            .as_deref()
            .is_some_and(|m| m.contains("no concrete value")),
        "{message:?}"
    );
    // Valid lengths made by `lens` are computed too.
    let message = captured(|device| {
        let _ = lens(&[2, 3], device).mask(2, 1, 4).into_data();
    });
    assert!(message.is_some_and(|m| m.contains("no concrete value")));
}

#[test]
fn attention_forward_passes_read_nothing() {
    let message = captured(|device| {
        let (queries, keys, values) = (
            computed([2, 3, 4], device),
            computed([2, 5, 4], device),
            computed([2, 5, 6], device),
        );
        let valid_lens = lens(&[2, 5], device);
        masked_softmax(computed([2, 3, 5], device), Some(&valid_lens));
        let per_query = ValidLens::per_query(&[[1, 2, 3], [5, 4, 0]], device)
            .repeat_interleave(1);
        masked_softmax(computed([2, 3, 5], device), Some(&per_query));
        DotProductAttentionConfig::new()
            .with_dropout(0.5)
            .init()
            .forward(
                queries.clone(),
                keys.clone(),
                values.clone(),
                Some(&valid_lens),
            );
        let additive = AdditiveAttentionConfig::new(4, 4, 8).init(device);
        additive.forward(
            queries.clone(),
            keys.clone(),
            values.clone(),
            Some(&valid_lens),
        );
        let projected = additive.project_keys(keys, values, Some(valid_lens));
        additive.attend(queries, &projected);
    });
    assert_eq!(message, None);
}

/// The fused attention's body in burn's operations (what every backend
/// but flex runs) reads nothing, whatever its mask.
#[test]
fn the_fused_attention_reads_nothing() {
    use d2l_attention::kernels::{AttentionMask, attention};
    let message = captured(|device| {
        let valid_lens = lens(&[2, 5], device);
        let layer = burn::nn::DropoutConfig::new(0.5).init();
        for mask in [
            AttentionMask::None,
            AttentionMask::ValidLens(&valid_lens),
            AttentionMask::Causal,
            AttentionMask::Window { left: 2, right: 1 },
        ] {
            let (queries, keys, values) = (
                computed([2, 4, 3, 8], device),
                computed([2, 2, 5, 8], device),
                computed([2, 2, 5, 6], device),
            );
            attention(queries, keys, values, mask, &layer);
        }
    });
    assert_eq!(message, None);
}

/// A model's forward pass and its loss on captured inputs.
fn forward_and_loss<E: Encoder, D: Decoder<E::Output>>(
    model: EncoderDecoder<E, D>,
    device: &Device,
) {
    let x = computed_ints([4, 7], 10, device);
    let y = computed_ints([4, 6], 12, device);
    let decoded =
        model.forward(x, y.clone(), Some(lens(&[7, 3, 5, 1], device)));
    masked_softmax_ce_loss(decoded.output, y, &lens(&[6, 2, 0, 4], device));
}

/// A training step on captured inputs, which must reach `backward` (which
/// capture cannot do) with no read before it.
fn training_step<E: Encoder, D: Decoder<E::Output>>(
    model: EncoderDecoder<E, D>,
    device: &Device,
) {
    let batch = Batch {
        x: computed_ints([4, 7], 10, device),
        x_valid_len: lens(&[7, 3, 5, 1], device),
        y: computed_ints([4, 6], 12, device),
        y_valid_len: lens(&[6, 2, 3, 4], device),
    };
    let config = TrainConfig::new();
    let mut optimizer = config.optimizer.init();
    let _ = train_batch(model, &mut optimizer, batch, 1, &config);
}

const BACKWARD: Option<&str> = Some("Capture tensors do not support autodiff");

#[test]
fn the_bahdanau_model_and_its_loss_read_nothing() {
    let message = captured(|device| {
        let model = Seq2SeqConfig::new(10, 12, 8, 16, 2).with_dropout(0.1);
        forward_and_loss(model.init(device), device);
    });
    assert_eq!(message, None);
}

#[test]
fn a_training_step_reads_nothing_before_its_backward_pass() {
    let message = captured(|device| {
        let device = device.clone().autodiff();
        let model = Seq2SeqConfig::new(10, 12, 8, 16, 2).with_dropout(0.1);
        training_step(model.init(&device), &device);
    });
    assert_eq!(message.as_deref(), BACKWARD);
}

/// The encoder, the decoder in training mode (dropout on, an autodiff
/// device) and the loss.
#[test]
fn the_transformer_and_its_loss_read_nothing() {
    let message = captured(|device| {
        forward_and_loss(TransformerConfig::new(10, 12).init(device), device);
        let device = device.clone().autodiff();
        let model = TransformerConfig::new(10, 12).init(&device);
        forward_and_loss(model, &device);
    });
    assert_eq!(message, None);
}

#[test]
fn a_transformer_training_step_reads_nothing_before_its_backward_pass() {
    let message = captured(|device| {
        let device = device.clone().autodiff();
        training_step(TransformerConfig::new(10, 12).init(&device), &device);
    });
    assert_eq!(message.as_deref(), BACKWARD);
}

#[test]
fn gradient_clipping_reads_nothing() {
    let message = captured(|device| {
        let model = LinearConfig::new(3, 4).init(device);
        let mut grads = GradientsParams::new();
        grads.register(model.weight.id, computed([3, 4], device) * 10.0);
        let bias = model.bias.as_ref().unwrap();
        grads.register(bias.id, computed([4], device));
        let norm = grad_clipping(&model, &mut grads, 1.0);
        assert!(norm.is_some());
        assert_eq!(model.num_params(), 16);
    });
    assert_eq!(message, None);
}
