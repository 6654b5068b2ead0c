//! The kernels under autodiff: one forward operation each, with the
//! backward pass written once for every backend in its own operations.
//!
//! For y = softmax(x) along the last axis, ∂L/∂x = y ⊙ (g − Σ g ⊙ y); for
//! y = log_softmax(x), ∂L/∂x = g − e^y · Σ g (the sums along the last axis,
//! g = ∂L/∂y); for y = e^x, g ⊙ y.

use super::attention::{KeyMask, WeightDropout};
use super::{AttentionOps, softmax_backward};
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind, unary};
use burn::backend::tensor::{FloatTensor, IntTensor};
use burn::backend::{Autodiff, Backend, TensorMetadata};

fn last_dim<B: Backend>(x: &FloatTensor<B>) -> usize {
    x.shape().num_dims() - 1
}

/// g − e^y · Σ g.
fn log_softmax_backward<B: Backend + AttentionOps>(
    y: FloatTensor<B>,
    g: FloatTensor<B>,
) -> FloatTensor<B> {
    let sum = B::float_sum_dim(g.clone(), last_dim::<B>(&y));
    B::float_sub(g, B::float_mul(B::exp(y), sum))
}

/// A one-input operation whose gradient is `self.0(y, extra, g)`, from
/// its output y and what else the forward pass kept (`extra`).
#[derive(Debug)]
struct FromOutput<B: Backend, E>(
    fn(FloatTensor<B>, E, FloatTensor<B>) -> FloatTensor<B>,
);

impl<B, E> Backward<B, 1> for FromOutput<B, E>
where
    B: Backend,
    E: Clone + Send + std::fmt::Debug + 'static,
{
    type State = (FloatTensor<B>, E);

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _: &mut Checkpointer,
    ) {
        let (y, extra) = ops.state;
        unary::<B, _>(ops.parents, ops.node, grads, |g| self.0(y, extra, g));
    }
}

/// A one-input operation whose gradient is `self.0(x, g)`, from its input
/// x alone.
#[derive(Debug)]
struct FromInput<B: Backend>(
    fn(FloatTensor<B>, FloatTensor<B>) -> FloatTensor<B>,
);

impl<B: Backend> Backward<B, 1> for FromInput<B> {
    type State = FloatTensor<B>;

    fn backward(
        self,
        ops: Ops<Self::State, 1>,
        grads: &mut Gradients,
        _: &mut Checkpointer,
    ) {
        let x = ops.state;
        unary::<B, _>(ops.parents, ops.node, grads, |g| self.0(x, g));
    }
}

/// y = `forward`(x) on the inner backend, tracked with the gradient
/// `backward`(y, `extra`, g).
fn track<B, C, E>(
    x: FloatTensor<Autodiff<B, C>>,
    extra: E,
    forward: impl FnOnce(FloatTensor<B>) -> FloatTensor<B>,
    backward: fn(FloatTensor<B>, E, FloatTensor<B>) -> FloatTensor<B>,
) -> FloatTensor<Autodiff<B, C>>
where
    B: Backend,
    C: CheckpointStrategy,
    E: Clone + Send + std::fmt::Debug + 'static,
{
    let node = x.node();
    let y = forward(x.into_primitive());
    match FromOutput(backward)
        .prepare::<C>([node])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => prep.finish((y.clone(), extra), y),
        OpsKind::UnTracked(prep) => prep.finish(y),
    }
}

/// Scaled dot-product attention, tracked with three parents (queries,
/// keys, values); its backward pass is the backend's `attention_backward`
/// from the saved inputs, output and log-sum-exp.
#[derive(Debug)]
struct Fused;

/// What the fused attention keeps for its backward pass.
type FusedState<B> = ([FloatTensor<B>; 5], KeyMask<B>, Option<WeightDropout>);

impl<B: Backend + AttentionOps> Backward<B, 3> for Fused {
    type State = FusedState<B>;

    fn backward(
        self,
        ops: Ops<Self::State, 3>,
        grads: &mut Gradients,
        _: &mut Checkpointer,
    ) {
        let grad = grads.consume::<B>(&ops.node);
        let ([q, k, v, out, lse], mask, dropout) = ops.state;
        let (dq, dk, dv) =
            B::attention_backward(q, k, v, out, lse, grad, mask, dropout);
        for (node, grad) in ops.parents.into_iter().zip([dq, dk, dv]) {
            if let Some(node) = node {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

/// Layer normalisation of the sum of its first N − 2 parents, tracked with
/// N parents (the summands, γ, β): LN(x) with N = 3, add & norm with N = 4.
/// Its backward pass is the backend's `layer_norm_backward` from the saved
/// sum and γ; each summand gets the sum's gradient.
#[derive(Debug)]
struct LayerNormed;

impl<B: Backend + AttentionOps, const N: usize> Backward<B, N> for LayerNormed {
    type State = (FloatTensor<B>, FloatTensor<B>, f64);

    fn backward(
        self,
        ops: Ops<Self::State, N>,
        grads: &mut Gradients,
        _: &mut Checkpointer,
    ) {
        let grad = grads.consume::<B>(&ops.node);
        let (sum, gamma, epsilon) = ops.state;
        let (dx, d_gamma, d_beta) =
            B::layer_norm_backward(sum, gamma, grad, epsilon);
        let mut gradients = vec![dx; N - 2];
        gradients.extend([d_gamma, d_beta]);
        for (node, grad) in ops.parents.into_iter().zip(gradients) {
            if let Some(node) = node {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

/// LN(sum of the summands) · γ + β for `inputs` = [summands…, γ, β],
/// tracked as one operation.
fn layer_normed<B, C, const N: usize>(
    inputs: [FloatTensor<Autodiff<B, C>>; N],
    epsilon: f64,
) -> FloatTensor<Autodiff<B, C>>
where
    B: Backend + AttentionOps,
    C: CheckpointStrategy,
{
    let nodes = inputs.each_ref().map(|t| t.node());
    let mut inner: Vec<_> =
        inputs.into_iter().map(|t| t.into_primitive()).collect();
    let (beta, gamma) = (inner.pop().unwrap(), inner.pop().unwrap());
    let sum = inner.into_iter().reduce(B::float_add).expect("a summand");
    let out = <B as AttentionOps>::layer_norm(
        sum.clone(),
        gamma.clone(),
        beta,
        epsilon,
    );
    match LayerNormed.prepare::<C>(nodes).compute_bound().stateful() {
        OpsKind::Tracked(prep) => prep.finish((sum, gamma, epsilon), out),
        OpsKind::UnTracked(prep) => prep.finish(out),
    }
}

impl<B: Backend + AttentionOps, C: CheckpointStrategy> AttentionOps
    for Autodiff<B, C>
{
    fn layer_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f64,
    ) -> FloatTensor<Self> {
        layer_normed::<B, C, 3>([x, gamma, beta], epsilon)
    }

    fn add_layer_norm(
        x: FloatTensor<Self>,
        y: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        epsilon: f64,
    ) -> FloatTensor<Self> {
        layer_normed::<B, C, 4>([x, y, gamma, beta], epsilon)
    }

    /// The inner backend's, untracked (no second derivatives).
    fn layer_norm_backward(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        epsilon: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (dx, d_gamma, d_beta) = B::layer_norm_backward(
            x.into_primitive(),
            gamma.into_primitive(),
            grad.into_primitive(),
            epsilon,
        );
        let new = FloatTensor::<Self>::new;
        (new(dx), new(d_gamma), new(d_beta))
    }

    fn attention_forward(
        queries: FloatTensor<Self>,
        keys: FloatTensor<Self>,
        values: FloatTensor<Self>,
        mask: KeyMask<Self>,
        dropout: Option<WeightDropout>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let nodes = [queries.node(), keys.node(), values.node()];
        let mask = mask.map::<B>(|lens| lens);
        let (q, k, v) = (
            queries.into_primitive(),
            keys.into_primitive(),
            values.into_primitive(),
        );
        let (out, lse) = B::attention_forward(
            q.clone(),
            k.clone(),
            v.clone(),
            mask.clone(),
            dropout,
        );
        let lse_out = FloatTensor::<Self>::new(lse.clone());
        let out = match Fused.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                prep.finish(([q, k, v, out.clone(), lse], mask, dropout), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(out),
        };
        (out, lse_out)
    }

    /// The inner backend's, untracked (no second derivatives).
    fn attention_backward(
        queries: FloatTensor<Self>,
        keys: FloatTensor<Self>,
        values: FloatTensor<Self>,
        output: FloatTensor<Self>,
        lse: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        mask: KeyMask<Self>,
        dropout: Option<WeightDropout>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (dq, dk, dv) = B::attention_backward(
            queries.into_primitive(),
            keys.into_primitive(),
            values.into_primitive(),
            output.into_primitive(),
            lse.into_primitive(),
            grad.into_primitive(),
            mask.map::<B>(|lens| lens),
            dropout,
        );
        let new = FloatTensor::<Self>::new;
        (new(dq), new(dk), new(dv))
    }

    fn dropout_seed(x: FloatTensor<Self>) -> IntTensor<Self> {
        B::dropout_seed(x.into_primitive())
    }

    fn softmax_last(x: FloatTensor<Self>) -> FloatTensor<Self> {
        track::<B, C, _>(x, (), B::softmax_last, |y, (), g| {
            softmax_backward::<B>(y, g)
        })
    }

    fn masked_softmax_last(
        scores: FloatTensor<Self>,
        valid_lens: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        let lens = valid_lens.clone();
        track::<B, C, _>(
            scores,
            valid_lens,
            |s| B::masked_softmax_last(s, lens),
            |y, lens, g| B::masked_softmax_backward(y, g, lens),
        )
    }

    fn log_softmax_last(x: FloatTensor<Self>) -> FloatTensor<Self> {
        track::<B, C, _>(x, (), B::log_softmax_last, |y, (), g| {
            log_softmax_backward::<B>(y, g)
        })
    }

    /// The gradient g · GELU′(x), from the input x (the only tensor kept).
    fn gelu(x: FloatTensor<Self>) -> FloatTensor<Self> {
        let node = x.node();
        let x = x.into_primitive();
        let y = <B as AttentionOps>::gelu(x.clone());
        let backward = FromInput(<B as AttentionOps>::gelu_backward);
        match backward.prepare::<C>([node]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish(x, y),
            OpsKind::UnTracked(prep) => prep.finish(y),
        }
    }

    /// The inner backend's, untracked (no second derivatives).
    fn gelu_backward(
        x: FloatTensor<Self>,
        grad: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let (x, grad) = (x.into_primitive(), grad.into_primitive());
        FloatTensor::<Self>::new(<B as AttentionOps>::gelu_backward(x, grad))
    }

    /// The gradient of e^x is g ⊙ y.
    fn exp(x: FloatTensor<Self>) -> FloatTensor<Self> {
        track::<B, C, _>(x, (), <B as AttentionOps>::exp, |y, (), g| {
            B::float_mul(g, y)
        })
    }

    /// The gradient g ⊙ y ⊙ (1 − y) is burn's own (fused on flex).
    fn sigmoid(x: FloatTensor<Self>) -> FloatTensor<Self> {
        track::<B, C, _>(x, (), <B as AttentionOps>::sigmoid, |y, (), g| {
            B::sigmoid_backward(y, g)
        })
    }

    /// A constant: dropout multiplies by it, and autodiff's product keeps
    /// the mask for the backward pass.
    fn dropout_mask(x: FloatTensor<Self>, prob: f64) -> FloatTensor<Self> {
        FloatTensor::<Self>::new(B::dropout_mask(x.into_primitive(), prob))
    }
}
