"""Reference values for the library's Vision Transformer (d2l en 1.0.3, §11.8)
and ResNet's Residual block (§8.6).

Run from the repository root with PyTorch 2.9.0 (CPU is enough):

    ~/.cache/attention-book/torch-2.9.0/bin/python crates/d2l-attention/python/make_vit_golden.py

It writes ../tests/golden/vit.json in the golden format (see the README
there): weights and inputs are exact f32 values, outputs are computed in
float64 (the module run in .double()), on one thread after
torch.manual_seed(0). The models are d2l_reference.py's re-implementation of
d2l en's classes with explicit (non-lazy) layers: attention without biases
as in d2l, dropout 0, GELU in PyTorch's default exact form
0.5 x (1 + erf(x / sqrt 2)), LayerNorm and BatchNorm eps 1e-5, every layer
norm's weight and bias perturbed (PyTorch starts them at 1 and 0, which
would hide a norm loaded wrongly), and ViT's cls token drawn from N(0, 1)
(d2l starts it at 0, which would hide a missing one). "params" are state
dicts (PyTorch's names and layouts: Conv2d weight (out, in, kh, kw), Linear
weight (out, in)). Cases:

- patch_embedding, patch_embedding_rgb: PatchEmbedding(img 8, patch 4,
  6 hiddens) on (2, 1, 8, 8) and (2, 3, 8, 8) images: output (2, 4, 6),
  patches in row-major order;
- vit_mlp: ViTMLP(6 -> 10 -> 6) on (2, 5, 6);
- vit_block: ViTBlock(8 hiddens, mlp 12, 2 heads) on (2, 5, 8), without
  valid lengths ("output", "attention_weights") and with valid_lens [5, 3]
  ("output_valid_lens", "attention_weights_valid_lens"); weights are
  (batch * heads, 5, 5), batch-major as d2l's transpose_qkv orders them;
- vit: ViT(img 8, 1 channel, patch 4, 8 hiddens, mlp 12, 2 heads, 2 blocks,
  10 classes) on a batch of 3: the embedded sequence (cls token first, plus
  the positional embedding), each block's output and attention weights, the
  logits head(X[:, 0]) and "logits_mean_pool", the head applied to
  X[:, 1:].mean(1) (the chapter's exercise 2);
- vit_grad: the same ViT and images (its params and X are the vit case's):
  cross-entropy loss, mean over the batch, for labels [1, 7, 3] (d2l's
  Classifier.loss), and its gradient with respect to every parameter;
- residual: Residual(3 -> 4 channels, use_1x1conv=True, strides=2) on
  (2, 3, 6, 6), with perturbed batch-norm weights, biases and running
  statistics (params include running_mean and running_var; the
  num_batches_tracked counters are left out). "output_train": train mode
  (batch statistics, biased variance); "running_after_train": the running
  statistics after that forward pass (momentum 0.1, unbiased variance);
  "output_eval": eval mode from the params' running statistics (not the
  updated ones).
"""

import copy
import json
import math
import os

import torch
from torch import nn

from d2l_reference import PatchEmbedding, Residual, ViT, ViTBlock, ViTMLP

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "golden", "vit.json")
F64 = torch.float64
IMG, PATCH, HIDDENS, MLP, HEADS, BLKS, CLASSES = 8, 4, 8, 12, 2, 2, 10


def t(x):
    x = x.detach()
    if x.is_floating_point():
        return {"shape": list(x.shape), "dtype": "float64",
                "data": x.to(F64).reshape(-1).tolist()}
    return {"shape": list(x.shape), "dtype": "int64",
            "data": x.to(torch.int64).reshape(-1).tolist()}


def perturb_norms(module):
    """Add 0.2 N(0, 1) to every LayerNorm / BatchNorm weight and bias."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, (nn.LayerNorm, nn.BatchNorm2d)):
                m.weight.add_(0.2 * torch.randn_like(m.weight))
                m.bias.add_(0.2 * torch.randn_like(m.bias))


def params(module):
    return {k: t(v) for k, v in module.state_dict().items()
            if not k.endswith("num_batches_tracked")}


def maxdiff(a, b):
    return (a.to(F64) - b.to(F64)).abs().max().item()


# ----------------------------------------------- independent recomputation
def ln(X, w, b, eps=1e-5):
    mu = X.mean(-1, keepdim=True)
    var = ((X - mu) ** 2).mean(-1, keepdim=True)
    return (X - mu) / torch.sqrt(var + eps) * w + b


def gelu(x):
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


def mlp_ref(p, pre, X):
    h = gelu(X @ p[pre + "dense1.weight"].T + p[pre + "dense1.bias"])
    return h @ p[pre + "dense2.weight"].T + p[pre + "dense2.bias"]


def mha_ref(p, pre, X, heads, valid_lens):
    """Per-head loops, -inf masking: returns (output, weights (B*heads, T, T))."""
    B, T, H = X.shape
    d = H // heads
    Q, K, V = (X @ p[pre + n + ".weight"].T for n in ("W_q", "W_k", "W_v"))
    outs, weights = [], []
    for b in range(B):
        heads_out = []
        for h in range(heads):
            s = slice(h * d, (h + 1) * d)
            scores = Q[b, :, s] @ K[b, :, s].T / math.sqrt(d)
            if valid_lens is not None:
                scores[:, int(valid_lens[b]):] = -math.inf
            w = torch.softmax(scores, -1)
            weights.append(w)
            heads_out.append(w @ V[b, :, s])
        outs.append(torch.cat(heads_out, -1))
    return torch.stack(outs) @ p[pre + "W_o.weight"].T, torch.stack(weights)


def block_ref(p, pre, X, heads, valid_lens=None):
    A, w = mha_ref(p, pre + "attention.", ln(X, p[pre + "ln1.weight"], p[pre + "ln1.bias"]),
                   heads, valid_lens)
    X = X + A
    return X + mlp_ref(p, pre + "mlp.", ln(X, p[pre + "ln2.weight"], p[pre + "ln2.bias"])), w


def patches_ref(p, pre, X, patch):
    B, C, Hh, Ww = X.shape
    P = X.reshape(B, C, Hh // patch, patch, Ww // patch, patch).permute(0, 2, 4, 1, 3, 5)
    P = P.reshape(B, (Hh // patch) * (Ww // patch), C * patch * patch)
    W = p[pre + "conv.weight"]
    return P @ W.reshape(W.shape[0], -1).T + p[pre + "conv.bias"]


def bn_ref(p, pre, X, train):
    if train:
        mu = X.mean((0, 2, 3))
        var = X.var((0, 2, 3), unbiased=False)
    else:
        mu, var = p[pre + "running_mean"], p[pre + "running_var"]
    sh = (1, -1, 1, 1)
    return ((X - mu.reshape(sh)) / torch.sqrt(var.reshape(sh) + 1e-5)
            * p[pre + "weight"].reshape(sh) + p[pre + "bias"].reshape(sh))


def residual_ref(p, X, train, strides):
    conv = nn.functional.conv2d
    Y1 = conv(X, p["conv1.weight"], p["conv1.bias"], stride=strides, padding=1)
    Y = torch.relu(bn_ref(p, "bn1.", Y1, train))
    Y2 = conv(Y, p["conv2.weight"], p["conv2.bias"], padding=1)
    Y = bn_ref(p, "bn2.", Y2, train)
    return torch.relu(Y + conv(X, p["conv3.weight"], p["conv3.bias"], stride=strides)), Y1, Y2


def sd64(module):
    return {k: v.detach().to(F64) for k, v in module.state_dict().items()}


# ----------------------------------------------------------------- cases
def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    cases, checks = {}, {}

    # Patch embedding, one and three channels.
    for name, channels in (("patch_embedding", 1), ("patch_embedding_rgb", 3)):
        pe = PatchEmbedding(IMG, PATCH, 6, channels)
        X = torch.randn(2, channels, IMG, IMG)
        p = params(pe)
        out32 = pe(X)
        out = pe.double()(X.double())
        checks[name] = maxdiff(out, patches_ref(sd64(pe), "", X.double(), PATCH))
        checks[name + " f32 drift"] = maxdiff(out, out32)
        assert pe.num_patches == 4 and out.shape == (2, 4, 6)
        cases[name] = {"params": p, "X": t(X), "output": t(out)}

    # ViTMLP.
    mlp = ViTMLP(6, 10, 6, 0.0)
    X = torch.randn(2, 5, 6)
    p = params(mlp)
    mlp.eval()
    out32 = mlp(X)
    out = mlp.double()(X.double())
    checks["vit_mlp"] = maxdiff(out, mlp_ref(sd64(mlp), "", X.double()))
    checks["vit_mlp f32 drift"] = maxdiff(out, out32)
    cases["vit_mlp"] = {"params": p, "X": t(X), "output": t(out)}

    # One ViT block, without and with valid lengths.
    blk = ViTBlock(HIDDENS, HIDDENS, MLP, HEADS, 0.0)
    perturb_norms(blk)
    X = torch.randn(2, 5, HIDDENS)
    valid_lens = torch.tensor([5, 3])
    p = params(blk)
    blk.eval()
    out32 = blk(X)
    blk.double()
    out = blk(X.double())
    w = blk.attention.attention.attention_weights
    out_vl = blk(X.double(), valid_lens)
    w_vl = blk.attention.attention.attention_weights
    ref, ref_w = block_ref(sd64(blk), "", X.double(), HEADS)
    ref_vl, ref_w_vl = block_ref(sd64(blk), "", X.double(), HEADS, valid_lens)
    checks["vit_block"] = max(maxdiff(out, ref), maxdiff(w, ref_w),
                              maxdiff(out_vl, ref_vl), maxdiff(w_vl, ref_w_vl))
    checks["vit_block f32 drift"] = maxdiff(out, out32)
    assert w.shape == (2 * HEADS, 5, 5)
    assert (w_vl[HEADS:, :, 3:] == 0).all() and (w_vl[HEADS:, :, :3] > 0).all()
    cases["vit_block"] = {
        "params": p, "X": t(X), "output": t(out), "attention_weights": t(w),
        "valid_lens": t(valid_lens), "output_valid_lens": t(out_vl),
        "attention_weights_valid_lens": t(w_vl),
    }

    # The whole ViT.
    vit = ViT(IMG, PATCH, HIDDENS, MLP, HEADS, BLKS, 0.0, 0.0, num_classes=CLASSES)
    perturb_norms(vit)
    with torch.no_grad():
        vit.cls_token.copy_(torch.randn_like(vit.cls_token))
    X = torch.randn(3, 1, IMG, IMG)
    labels = torch.tensor([1, 7, 3])
    p = params(vit)
    vit.eval()
    logits32 = vit(X)
    vit.double()
    with torch.no_grad():
        Xd = X.double()
        E = torch.cat((vit.cls_token.expand(3, -1, -1), vit.patch_embedding(Xd)), 1) \
            + vit.pos_embedding
        block_outputs, H = [], E
        for blk in vit.blks:
            H = blk(H)
            block_outputs.append(H)
        logits = vit(Xd)
        weights = list(vit.attention_weights)
        logits_mean = vit(Xd, pool="mean")
    # Independent recomputation from the state dict.
    s = sd64(vit)
    E_ref = torch.cat((s["cls_token"].expand(3, -1, -1),
                       patches_ref(s, "patch_embedding.", Xd, PATCH)), 1) + s["pos_embedding"]
    H_ref, diffs = E_ref, [maxdiff(E, E_ref)]
    for i in range(BLKS):
        H_ref, w_ref = block_ref(s, f"blks.{i}.", H_ref, HEADS)
        diffs += [maxdiff(block_outputs[i], H_ref), maxdiff(weights[i], w_ref)]

    def head_ref(Z):
        return ln(Z, s["head.0.weight"], s["head.0.bias"]) @ s["head.1.weight"].T + s["head.1.bias"]

    diffs += [maxdiff(logits, head_ref(H_ref[:, 0])),
              maxdiff(logits_mean, head_ref(H_ref[:, 1:].mean(1))),
              # the logits from the stored block outputs, as a test would redo them
              maxdiff(logits, head_ref(block_outputs[-1][:, 0]))]
    checks["vit"] = max(diffs)
    checks["vit f32 drift"] = maxdiff(logits, logits32)
    assert maxdiff(logits, logits_mean) > 1e-2
    cases["vit"] = {
        "params": p, "X": t(X), "embedded": t(E),
        "block_outputs": [t(b) for b in block_outputs],
        "attention_weights": [t(w) for w in weights],
        "logits": t(logits), "logits_mean_pool": t(logits_mean),
    }

    # Its loss and gradient.
    vit.zero_grad()
    loss = nn.functional.cross_entropy(vit(Xd), labels)
    loss.backward()
    grads = {k: v.grad for k, v in vit.named_parameters()}
    assert list(grads) == list(vit.state_dict())
    # Central differences on every parameter entry.
    fd_err = 0.0
    with torch.no_grad():
        for name, prm in vit.named_parameters():
            flat = prm.view(-1)
            g = grads[name].reshape(-1)
            for j in range(flat.numel()):
                v0 = flat[j].item()
                flat[j] = v0 + 1e-6
                lp = nn.functional.cross_entropy(vit(Xd), labels).item()
                flat[j] = v0 - 1e-6
                lm = nn.functional.cross_entropy(vit(Xd), labels).item()
                flat[j] = v0
                fd_err = max(fd_err, abs((lp - lm) / 2e-6 - g[j].item()))
    checks["vit_grad (finite differences)"] = fd_err
    loss_ref = -torch.log_softmax(logits, -1)[torch.arange(3), labels].mean()
    checks["vit_grad loss"] = abs(loss.item() - loss_ref.item())
    vit32 = copy.deepcopy(vit).float()
    nn.functional.cross_entropy(vit32(X), labels).backward()
    checks["vit_grad f32 drift"] = max(maxdiff(grads[k], q.grad)
                                       for k, q in vit32.named_parameters())
    cases["vit_grad"] = {
        "labels": t(labels), "loss": t(loss),
        "grads": {k: t(v) for k, v in grads.items()},
    }

    # ResNet's Residual block, train and eval mode.
    res = Residual(3, 4, use_1x1conv=True, strides=2)
    perturb_norms(res)
    with torch.no_grad():
        for bn in (res.bn1, res.bn2):
            bn.running_mean.copy_(0.5 * torch.randn_like(bn.running_mean))
            bn.running_var.copy_(0.5 + torch.rand_like(bn.running_var))
    X = torch.randn(2, 3, 6, 6)
    p = params(res)
    s = sd64(res)
    res.double()
    train = copy.deepcopy(res).train()
    out_train = train(X.double())
    running = {k: v for k, v in train.state_dict().items()
               if "running" in k}
    res.eval()
    out_eval = res(X.double())
    ref_train, Y1, Y2 = residual_ref(s, X.double(), True, 2)
    ref_eval, _, _ = residual_ref(s, X.double(), False, 2)
    n = Y1.shape[0] * Y1.shape[2] * Y1.shape[3]
    run_ref = {}
    for bn, Y in (("bn1", Y1), ("bn2", Y2)):
        run_ref[bn + ".running_mean"] = 0.9 * s[bn + ".running_mean"] + 0.1 * Y.mean((0, 2, 3))
        run_ref[bn + ".running_var"] = 0.9 * s[bn + ".running_var"] \
            + 0.1 * Y.var((0, 2, 3), unbiased=True)
    # bn2's batch statistics are those of conv2 over bn1's train-mode output
    checks["residual"] = max([maxdiff(out_train, ref_train), maxdiff(out_eval, ref_eval)]
                             + [maxdiff(running[k], run_ref[k]) for k in running])
    assert n == 18 and out_train.shape == (2, 4, 3, 3)
    assert int(train.bn1.num_batches_tracked) == 1
    cases["residual"] = {
        "params": p, "X": t(X), "output_train": t(out_train),
        "running_after_train": {k: t(v) for k, v in running.items()},
        "output_eval": t(out_eval),
    }

    out = {
        "description": __doc__,
        "generator": {"script": "crates/d2l-attention/python/make_vit_golden.py",
                      "torch_version": torch.__version__},
        "sizes": {"img_size": IMG, "patch_size": PATCH, "num_hiddens": HIDDENS,
                  "mlp_num_hiddens": MLP, "num_heads": HEADS, "num_blks": BLKS,
                  "num_classes": CLASSES},
        "cases": cases,
    }
    with open(OUT, "w") as f:
        json.dump(out, f)
        f.write("\n")
    for k, v in checks.items():
        print(f"{k}: {v:.3g}")
    assert max(v for k, v in checks.items()
               if "drift" not in k and "finite" not in k) < 1e-12, checks
    assert checks["vit_grad (finite differences)"] < 1e-7, checks
    print("wrote", os.path.relpath(OUT), os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
