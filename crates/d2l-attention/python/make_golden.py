"""Generate the golden reference vectors for the attention chapter.

Run from the repository root with PyTorch 2.9.0 (CPU is enough):

    ~/.cache/attention-book/torch-2.9.0/bin/python crates/d2l-attention/python/make_golden.py

It writes the JSON files of ../tests/golden/, one per subject. Inputs come
from torch seeds, except the Nadaraya-Watson case's x_train / noise /
y_train, which are read from nadaraya_watson_inputs.json because
their last bit depends on the CPU's SIMD kernels (see that file's description).
Seeded normal/randn draws of 16 or more values also go through PyTorch's
vectorised kernel; these files were generated on an AVX2 CPU.

Conventions (the same as the book's shared reference set):

- every tensor is {"shape": [...], "dtype": "float64"|"int64"|"bool",
  "data": [flat, row-major]};
- inputs and weights are drawn in float32 (so each stored value is exactly an
  f32) and widened; all outputs are computed in float64;
- Linear weights use PyTorch's (out_features, in_features) layout, y = x W^T;
- "f32_vs_f64_max_abs_diff" is the largest drift when the same computation is
  run in float32 from the same inputs.

The d2l functions and models come from d2l_reference.py in this folder;
the d2l package is not needed.

If ../shared/golden exists (relative to the repository root), the script
finally compares every common numeric field with those files and prints the
largest absolute difference. Nothing is read from there to build the outputs.
"""

import copy
import json
import math
import os

import torch
from torch import nn

from d2l_reference import (
    AdditiveAttention,
    GroupedQueryAttention,
    Seq2SeqAttentionDecoder,
    Seq2SeqEncoder,
    additive_scores,
    apply_rotary_emb,
    masked_ce_loss,
    masked_softmax,
    precompute_freqs_cis,
    scaled_dot_scores,
    sequence_mask,
    xavier_init_weights,
)

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "tests", "golden")
REPO = os.path.join(HERE, "..", "..", "..")
SHARED = os.path.join(REPO, "..", "shared", "golden")
# Our file names and the shared set's, for the cross-check.
SHARED_NAMES = {
    "masked_softmax.json": "case_a_masked_softmax.json",
    "additive_attention_ones_keys.json": "case_b_additive_attention_ones_keys.json",
    "dot_product_attention.json": "case_d_dot_product_attention.json",
    "nadaraya_watson.json": "case_g_nadaraya_watson.json",
}
F64 = torch.float64
GENERATOR = {
    "script": "crates/d2l-attention/python/make_golden.py",
    "torch_version": torch.__version__,
    "layout": "row-major flat data; Linear weights are (out, in), y = x @ W^T",
}


# ----------------------------------------------------------------- helpers
def t(x):
    """Serialise a tensor as {"shape", "dtype", "data"}."""
    x = x.detach()
    if x.dtype == torch.bool:
        dtype = "bool"
    elif x.is_floating_point():
        dtype, x = "float64", x.to(F64)
    else:
        dtype, x = "int64", x.to(torch.int64)
    return {"shape": list(x.shape), "dtype": dtype, "data": x.reshape(-1).tolist()}


def maxdiff(a, b):
    return (a.to(F64) - b.to(F64)).abs().max().item()


def write(name, obj):
    obj["generator"] = GENERATOR
    # Dump with indentation, but keep every "shape"/"data" list on one line.
    compact = {}

    def squash(o):
        if isinstance(o, dict):
            return {k: squash(v) for k, v in o.items()}
        if isinstance(o, list) and o and not isinstance(o[0], (dict, list)):
            key = f"@@{len(compact)}@@"
            compact[key] = json.dumps(o, separators=(",", ":"))
            return key
        if isinstance(o, list):
            return [squash(v) for v in o]
        return o

    text = json.dumps(squash(obj), indent=1, ensure_ascii=False)
    for key, val in compact.items():
        text = text.replace(f'"{key}"', val)
    with open(os.path.join(GOLDEN, name), "w") as f:
        f.write(text + "\n")
    print("wrote", name)


def values_1_to_40():
    return torch.arange(40, dtype=torch.float32).reshape(1, 10, 4).repeat(2, 1, 1)


# ------------------------------------------------------------------ case a
def case_a():
    torch.manual_seed(0)
    X = torch.rand(2, 2, 4)
    subcases = [
        ("valid_lens_1d", torch.tensor([2, 3])),
        ("valid_lens_2d", torch.tensor([[1, 3], [2, 4]])),
        ("valid_lens_none", None),
        ("valid_lens_1d_with_zero", torch.tensor([0, 3])),
        ("valid_lens_2d_with_zero", torch.tensor([[0, 3], [2, 4]])),
    ]
    cases, drift = [], 0.0
    for name, vl in subcases:
        out = masked_softmax(X.to(F64), vl)
        drift = max(drift, maxdiff(masked_softmax(X.clone(), vl), out))
        cases.append({"name": name, "valid_lens": None if vl is None else t(vl), "output": t(out)})
    write("masked_softmax.json", {
        "description": (
            "d2l masked_softmax on a (2,2,4) score tensor X = torch.rand after manual_seed(0). "
            "For each sub-case, entries of the last axis at index >= valid_len are replaced by "
            "-1e6 before a softmax over the last axis. 1-D valid_lens give one length per batch "
            "element (shared by all its query rows); 2-D valid_lens give one length per "
            "(batch, query) row; null means plain softmax. A valid_len of 0 masks the whole row, "
            "and because the fill is the finite -1e6 (not -inf) the row becomes uniform 1/4 "
            "instead of NaN."),
        "mask_value": -1e6,
        "X": t(X),
        "cases": cases,
        "f32_vs_f64_max_abs_diff": drift,
    })


# ------------------------------------------------------------------ case b
def case_b():
    torch.manual_seed(1)
    queries = torch.normal(0, 1, (2, 1, 20))
    keys = torch.ones(2, 10, 2)
    values = values_1_to_40()
    valid_lens = torch.tensor([2, 6])
    torch.manual_seed(1001)  # nn.Linear default init, created in d2l's order
    W_k = nn.Linear(2, 8, bias=False).weight.detach()
    W_q = nn.Linear(20, 8, bias=False).weight.detach()
    w_v = nn.Linear(8, 1, bias=False).weight.detach()

    def run(dt):
        s = additive_scores(queries.to(dt), keys.to(dt), W_q.to(dt), W_k.to(dt), w_v.to(dt))
        a = masked_softmax(s.clone(), valid_lens)
        return s, a, a @ values.to(dt)

    scores, weights, out = run(F64)
    drift = max(maxdiff(x, y) for x, y in zip(run(torch.float32), (scores, weights, out)))
    closed = torch.tensor([[[2.0, 3, 4, 5]], [[10.0, 11, 12, 13]]], dtype=F64)
    write("additive_attention_ones_keys.json", {
        "description": (
            "d2l AdditiveAttention(key_size=2, query_size=20, num_hiddens=8) in eval mode. All ten "
            "keys are identical (ones), so every key gets the same score for a given query and the "
            "masked softmax is uniform over the first valid_len keys: the output is the mean of the "
            "first 2 (batch 0) or 6 (batch 1) value rows, i.e. [[2,3,4,5]] and [[10,11,12,13]]. "
            "Weights come from nn.Linear's default init under manual_seed(1001) (created in the "
            "order W_k, W_q, w_v); queries are N(0,1) under manual_seed(1)."),
        "key_size": 2, "query_size": 20, "num_hiddens": 8, "dropout": 0.1,
        "mode": "eval (dropout off)", "seed_inputs": 1, "seed_weights": 1001,
        "queries": t(queries), "keys": t(keys), "values": t(values), "valid_lens": t(valid_lens),
        "W_q": t(W_q), "W_k": t(W_k), "w_v": t(w_v),
        "scores_before_mask": t(scores), "attention_weights": t(weights), "output": t(out),
        "f32_vs_f64_max_abs_diff": drift,
        "expected_closed_form": t(closed),
        "closed_form_max_abs_diff": maxdiff(out, closed),
    })


# ------------------------------------------------------------------ case d
def case_d():
    torch.manual_seed(3)
    queries = torch.normal(0, 1, (2, 1, 2))
    keys = torch.normal(0, 1, (2, 10, 2))
    values = values_1_to_40()
    valid_lens = torch.tensor([2, 6])

    def run(dt):
        s = scaled_dot_scores(queries.to(dt), keys.to(dt))
        a = masked_softmax(s.clone(), valid_lens)
        return s, a, a @ values.to(dt)

    scores, weights, out = run(F64)
    drift = max(maxdiff(x, y) for x, y in zip(run(torch.float32), (scores, weights, out)))
    write("dot_product_attention.json", {
        "description": (
            "d2l DotProductAttention (scaled dot product, eval mode): scores = Q K^T / sqrt(d) with "
            "d=2, masked softmax with valid_lens [2,6], output = weights @ V. Queries (2,1,2) and "
            "keys (2,10,2) are N(0,1) under manual_seed(3); values are arange(40) reshaped "
            "(1,10,4) and repeated twice."),
        "d": 2,
        "queries": t(queries), "keys": t(keys), "values": t(values), "valid_lens": t(valid_lens),
        "scores_before_mask": t(scores), "attention_weights": t(weights), "output": t(out),
        "f32_vs_f64_max_abs_diff": drift,
    })


# ----------------------------------------------------------- case f (grad)
def case_f():
    torch.manual_seed(3)
    X = torch.rand(2, 3, 4)
    valid_lens = torch.tensor([[0, 2, 4], [1, 0, 3]])
    C = torch.arange(24, dtype=F64).reshape(2, 3, 4) / 10

    def run(dt):
        x = X.to(dt).requires_grad_(True)
        out = masked_softmax(x.clone(), valid_lens)  # d2l masks in place: feed a non-leaf
        (out * C.to(dt)).sum().backward()
        return out.detach(), x.grad

    out, grad = run(F64)
    assert not torch.isnan(grad).any() and not torch.isnan(out).any()
    drift = max(maxdiff(x, y) for x, y in zip(run(torch.float32), (out, grad)))
    write("masked_softmax_grad.json", {
        "description": (
            "Gradient of d2l masked_softmax (fill -1e6) with fully masked rows. X (2,3,4) = "
            "torch.rand after manual_seed(3); 2-D valid_lens [[0,2,4],[1,0,3]], so rows (0,0) and "
            "(1,1) are fully masked and come out uniform 0.25. Loss L = sum(output * C) with "
            "C = arange(24).reshape(2,3,4) / 10 (float64). grad_X = dL/dX: masked entries get "
            "exactly 0 gradient (the fill overwrites them), unmasked entries get the softmax "
            "Jacobian-vector product; fully masked rows therefore have an all-zero gradient "
            "(no NaN)."),
        "mask_value": -1e6,
        "X": t(X), "valid_lens": t(valid_lens), "C": t(C),
        "output": t(out), "grad_X": t(grad),
        "grad_has_nan": bool(torch.isnan(grad).any()),
        "f32_vs_f64_max_abs_diff": drift,
    })


# ------------------------------------------------------------------ case g
def case_g():
    n = 50
    f = lambda x: 2 * torch.sin(x) + x ** 0.8
    torch.manual_seed(0)  # d2l's float32 draw; its last bit depends on the CPU's SIMD kernels
    x_train, _ = torch.sort(torch.rand(n) * 5)
    noise = torch.normal(0.0, 0.5, (n,))
    seeded = {"x_train": x_train, "noise": noise, "y_train": f(x_train) + noise}
    # The reference therefore uses the embedded f32 values (see inputs.json).
    with open(os.path.join(GOLDEN, "nadaraya_watson_inputs.json")) as fh:
        emb = {k: torch.tensor(v["data"], dtype=F64).float()
               for k, v in json.load(fh)["case_g"].items()}
    for k in seeded:
        print(f"  case g: seeded {k} vs inputs.json: max abs diff {maxdiff(seeded[k], emb[k]):.3g}")
    x_train, noise, y_train = emb["x_train"], emb["noise"], emb["y_train"]
    x_test = torch.arange(0, 5, 0.1)
    eye_mask = (1 - torch.eye(n)).type(torch.bool)
    train_keys = x_train.repeat((n, 1))[eye_mask].reshape((n, -1))
    train_values = y_train.repeat((n, 1))[eye_mask].reshape((n, -1))

    def nw(queries, keys, values, w):
        """d2l-zh NWKernelRegression.forward with scalar parameter w."""
        q = queries.repeat_interleave(keys.shape[1]).reshape((-1, keys.shape[1]))
        attn = nn.functional.softmax(-((q - keys) * w) ** 2 / 2, dim=1)
        return torch.bmm(attn.unsqueeze(1), values.unsqueeze(-1)).reshape(-1), attn

    def run(dt):
        xtr, ytr, xte = x_train.to(dt), y_train.to(dt), x_test.to(dt)
        # nonparametric
        X_repeat = xte.repeat_interleave(n).reshape((-1, n))
        A_np = nn.functional.softmax(-(X_repeat - xtr) ** 2 / 2, dim=1)
        y_np = A_np @ ytr
        # parametric: full-batch SGD on sum of squared errors
        w = torch.ones(1, dtype=dt, requires_grad=True)
        opt = torch.optim.SGD([w], lr=0.5)
        losses, grads, ws = [], [], []
        for _ in range(5):
            opt.zero_grad()
            pred, _ = nw(xtr, train_keys.to(dt), train_values.to(dt), w)
            loss = nn.functional.mse_loss(pred, ytr, reduction="none").sum()
            loss.backward()
            losses.append(loss.item()); grads.append(w.grad.item())
            opt.step()
            ws.append(w.item())
        with torch.no_grad():
            final_loss = ((nw(xtr, train_keys.to(dt), train_values.to(dt), w)[0] - ytr) ** 2).sum()
            y_hat_test, A_test = nw(xte, xtr.repeat((n, 1)), ytr.repeat((n, 1)), w)
        scalars = torch.tensor(losses + grads + ws + [final_loss.item()], dtype=F64)
        return A_np, y_np, scalars, y_hat_test, A_test, (losses, grads, ws, final_loss.item())

    *r64, (losses, grads, ws, final_loss) = run(F64)
    *r32, _ = run(torch.float32)
    drift = max(maxdiff(a, b) for a, b in zip(r32, r64))
    A_np, y_np, _, y_hat_test, A_test = r64
    write("nadaraya_watson.json", {
        "description": (
            "Nadaraya-Watson kernel regression as in d2l 0.17 (section 'Attention Pooling: "
            "Nadaraya-Watson Kernel Regression'). After torch.manual_seed(0): x_train = "
            "sort(rand(50)*5), noise = normal(0, 0.5, (50,)), y_train = 2 sin(x_train) + "
            "x_train^0.8 + noise, all float32 (stored exactly; read from nadaraya_watson_inputs.json "
            "because the last bit of this draw depends on the CPU's SIMD kernels); x_test = "
            "arange(0, 5, 0.1) in float32 (50 points). Nonparametric part: attention_nonparametric[i, j] = "
            "softmax_j(-(x_test[i] - x_train[j])^2 / 2), y_hat = A @ y_train. Parametric part: "
            "score -((q - k) * w)^2 / 2 with scalar w initialised to exactly 1.0; training queries "
            "are x_train, and each training query i uses the 49 keys/values obtained by deleting "
            "position i (d2l's (1 - eye) mask over x_train / y_train tiled 50 times). Loss per "
            "epoch = sum_i (pred_i - y_i)^2 (MSELoss(reduction='none'), then summed, exactly as "
            "d2l-zh v2 and chapter10.ipynb), full batch, SGD lr 0.5, 5 epochs. losses_per_epoch[e] is the "
            "loss computed in epoch e BEFORE that epoch's step (what d2l prints); "
            "grad_w_per_epoch[e] is dLoss/dw at that point; w_after_epoch[e] is w after the step; "
            "loss_at_w_final re-evaluates the training loss with the final w. Final prediction "
            "uses all 50 training points as keys/values for each x_test query. y_truth_test = "
            "2 sin(x_test) + x_test^0.8 in float64. Computed in float64."),
        "n_train": n,
        "x_train": t(x_train), "noise": t(noise), "y_train": t(y_train), "x_test": t(x_test),
        "y_truth_test": t(f(x_test.to(F64))),
        "nonparametric": {"attention_weights": t(A_np), "y_hat": t(y_np)},
        "parametric": {
            "w_init": 1.0, "lr": 0.5, "epochs": 5,
            "loss": "sum over 50 training points of (pred - y)^2",
            "train_keys": t(train_keys), "train_values": t(train_values),
            "losses_per_epoch": losses, "grad_w_per_epoch": grads, "w_after_epoch": ws,
            "w_final": ws[-1], "loss_at_w_final": final_loss,
            "y_hat_test": t(y_hat_test), "attention_weights_test": t(A_test),
        },
        "f32_vs_f64_max_abs_diff": drift,
    })


# ------------------------------------------------------------------ case h
def case_h():
    torch.manual_seed(7)
    queries = torch.randn(2, 3, 4)
    keys = torch.randn(2, 5, 4)
    values = torch.randn(2, 5, 3)
    W_k = torch.randn(6, 4) * 0.5
    W_q = torch.randn(6, 4) * 0.5
    w_v = torch.randn(1, 6) * 0.5
    W = torch.randn(4, 4) * 0.5
    valid_lens = torch.tensor([3, 5])

    def run(dt):
        q, k, v = queries.to(dt), keys.to(dt), values.to(dt)
        scores = {
            "additive": additive_scores(q, k, W_q.to(dt), W_k.to(dt), w_v.to(dt)),
            "dot": q @ k.transpose(1, 2),
            "scaled_dot": scaled_dot_scores(q, k),
            "bilinear": torch.einsum("bja,ac,bic->bij", k, W.to(dt), q),  # k_j^T W q_i
        }
        res = {}
        for name, s in scores.items():
            a = masked_softmax(s.clone(), valid_lens)
            res[name] = (s, a, a @ v)
        return res

    r64, r32 = run(F64), run(torch.float32)
    drift = max(maxdiff(a, b) for name in r64 for a, b in zip(r32[name], r64[name]))
    formulas = {
        "additive": "w_v^T tanh(W_k k + W_q q)",
        "dot": "k^T q",
        "scaled_dot": "k^T q / sqrt(d), d = 4",
        "bilinear": "k^T W q = sum_{a,b} k_a W[a][b] q_b",
    }
    functions = {
        name: {"formula": formulas[name], "scores_before_mask": t(s),
               "attention_weights": t(a), "output": t(o)}
        for name, (s, a, o) in r64.items()
    }
    write("scoring_functions.json", {
        "description": (
            "One query/key/value set scored by four functions. After torch.manual_seed(7), in this "
            "order: queries (2,3,4) = randn, keys (2,5,4) = randn, values (2,5,3) = randn, "
            "W_k (6,4), W_q (6,4), w_v (1,6) each = randn * 0.5 (additive attention, d2l naming: "
            "score = w_v tanh(W_q q + W_k k), i.e. v^T tanh(W k + U q) with W = W_k, U = W_q, "
            "v = w_v), then bilinear W (4,4) = randn * 0.5 with score(q, k) = k^T W q = "
            "sum_{a,b} k_a W[a][b] q_b, so scores[b,i,j] = (Q W^T K^T)[i,j] (row index of W "
            "pairs with the key, column index with the query). dot: k^T q; scaled_dot: "
            "k^T q / sqrt(4). scores_before_mask has shape (batch 2, queries 3, keys 5); "
            "attention_weights = d2l masked_softmax(scores, valid_lens [3,5]) (fill -1e6); "
            "output = attention_weights @ values, shape (2,3,3)."),
        "queries": t(queries), "keys": t(keys), "values": t(values), "valid_lens": t(valid_lens),
        "W_k": t(W_k), "W_q": t(W_q), "w_v": t(w_v), "W_bilinear": t(W),
        "functions": functions,
        "f32_vs_f64_max_abs_diff": drift,
    })

def case_j():
    torch.manual_seed(13)
    src_vocab, tgt_vocab, embed, hidden, layers = 7, 8, 5, 6, 2
    encoder = Seq2SeqEncoder(src_vocab, embed, hidden, layers)
    decoder = Seq2SeqAttentionDecoder(tgt_vocab, embed, hidden, layers)
    xavier_init_weights(encoder, decoder)
    enc_X = torch.tensor([[1, 2, 3, 2], [4, 5, 2, 6], [6, 1, 0, 0]])
    enc_valid_lens = torch.tensor([4, 2, 1])
    Y = torch.tensor([[3, 4, 5, 6, 2], [7, 3, 2, 0, 0], [5, 2, 0, 0, 0]])
    Y_valid_len = torch.tensor([5, 3, 2])
    bos = 1
    dec_X = torch.cat([torch.full((3, 1), bos), Y[:, :-1]], 1)
    params = {
        "encoder.embedding": encoder.embedding.weight,
        "decoder.embedding": decoder.embedding.weight,
        "decoder.attention.W_k": decoder.attention.W_k.weight,
        "decoder.attention.W_q": decoder.attention.W_q.weight,
        "decoder.attention.w_v": decoder.attention.w_v.weight,
        "decoder.dense.weight": decoder.dense.weight,
        "decoder.dense.bias": decoder.dense.bias,
    }
    for part, rnn in (("encoder", encoder.rnn), ("decoder", decoder.rnn)):
        for name in rnn._flat_weights_names:
            params[f"{part}.rnn.{name}"] = rnn._parameters[name]
    initial = {k: t(v) for k, v in params.items()}

    def run(dt):
        enc, dec = encoder.to(dt), decoder.to(dt)
        enc_outputs, state = enc(enc_X)
        out, hidden_state, weights = dec(dec_X, enc_outputs, state, enc_valid_lens)
        loss = masked_ce_loss(out, Y, Y_valid_len)
        return enc_outputs.permute(1, 0, 2), out, hidden_state, weights, loss

    r32 = [x.detach() for x in run(torch.float32)]
    enc_outputs, out, hidden_state, weights, loss = run(F64)
    drift = max(maxdiff(a, b) for a, b in zip(r32, (enc_outputs, out, hidden_state, weights, loss)))
    # Two training steps as d2l's train_seq2seq on the same batch: backward of
    # the summed loss, clipping to a global norm of 0.5 (below the first
    # norm, so that clipping acts), Adam (lr 0.005, eps 1e-8).
    all_params = list(encoder.parameters()) + list(decoder.parameters())
    optimizer = torch.optim.Adam(all_params, lr=0.005, eps=1e-8)
    grad_norms = []
    for _ in range(2):
        optimizer.zero_grad()
        run(F64)[-1].sum().backward()
        grad_norms.append(torch.sqrt(sum((p.grad ** 2).sum() for p in all_params)).item())
        torch.nn.utils.clip_grad_norm_(all_params, 0.5)
        if not grad_norms[1:]:
            clipped = {"decoder.dense.bias": t(decoder.dense.bias.grad),
                       "decoder.attention.W_q": t(decoder.attention.W_q.weight.grad)}
        optimizer.step()
    with torch.no_grad():
        loss_after = run(F64)[-1]
    write("seq2seq_attention.json", {
        "description": (
            "d2l's Seq2SeqEncoder and d2l zh's Seq2SeqAttentionDecoder (as chapter10.ipynb writes it) (2-layer GRUs, no "
            "dropout, d2l's Xavier init) after torch.manual_seed(13): src vocab 7, tgt vocab 8, "
            "embed 5, hidden 6. params: torch layouts (GRU weight_ih_l{k} is (3h, in), gates r, "
            "z, n; Linear (out, in)). enc_X (3,4), enc_valid_lens, Y (3,5), Y_valid_len; the "
            "decoder reads dec_X = [<bos>=1, Y[:, :-1]] (teacher forcing). Outputs: enc_outputs "
            "(3,4,6), dec_output (3,5,8), hidden_state (2,3,6), attention_weights (3,5,4), loss "
            "(3,) = MaskedSoftmaxCELoss (mean over num_steps). Then two training steps on the "
            "same batch: loss.sum().backward(), clipping to a global norm of 0.5, Adam (lr 0.005, "
            "eps 1e-8); grad_norms are the global gradient norms before clipping, loss_after (3,) "
            "the loss after both steps; clipped_grads holds two gradients of the first step after "
            "clipping (torch layout)."),
        "params": initial,
        "enc_X": t(enc_X), "enc_valid_lens": t(enc_valid_lens), "dec_X": t(dec_X),
        "Y": t(Y), "Y_valid_len": t(Y_valid_len),
        "enc_outputs": t(enc_outputs), "dec_output": t(out), "hidden_state": t(hidden_state),
        "attention_weights": t(weights), "loss": t(loss),
        "grad_norms": grad_norms, "clipped_grads": clipped, "loss_after": t(loss_after),
        "f32_vs_f64_max_abs_diff": drift,
    })


# ------------------------------------------------------------------ case k
def case_k():
    torch.manual_seed(17)
    lstm = nn.LSTM(3, 4, num_layers=2)
    X = torch.randn(5, 2, 3)  # (num_steps, batch_size, input_size)
    params = {name: t(lstm._parameters[name]) for name in lstm._flat_weights_names}

    def run(dt):
        output, (h, c) = lstm.to(dt)(X.to(dt))
        return output, h, c

    r32 = [x.detach() for x in run(torch.float32)]
    output, h, c = run(F64)
    drift = max(maxdiff(a, b) for a, b in zip(r32, (output, h, c)))
    write("lstm.json", {
        "description": (
            "torch.nn.LSTM(3, 4, num_layers=2) after torch.manual_seed(17), torch's own "
            "initialisation, run from zero states on X = torch.randn(5, 2, 3) (num_steps, "
            "batch_size, input_size). params: torch layouts (weight_ih_l{k} is (4h, in), gates "
            "i, f, g, o). Outputs: output (5,2,4), the top layer's h at every step; h_n and "
            "c_n (2,2,4), each layer's final hidden state and memory cell."),
        "params": params, "X": t(X),
        "output": t(output), "h_n": t(h), "c_n": t(c),
        "f32_vs_f64_max_abs_diff": drift,
    })


# ------------------------------------------------------------------ case i
def case_i():
    torch.manual_seed(11)
    d1, d2, d3, N = 6, 3, 4, 5
    X = torch.randn(d1, N)
    W_Q, W_K, W_V = torch.randn(d3, d1), torch.randn(d3, d1), torch.randn(d2, d1)

    def run(dt):
        Q, K, V = W_Q.to(dt) @ X.to(dt), W_K.to(dt) @ X.to(dt), W_V.to(dt) @ X.to(dt)
        A = torch.softmax(Q.T @ K / math.sqrt(d3), dim=1)  # A[i, j]: query i, key j
        return Q, K, V, A, V @ A.T  # H[:, i] = sum_j A[i, j] v_j

    r64 = run(F64)
    drift = max(maxdiff(a, b) for a, b in zip(run(torch.float32), r64))
    Q, K, V, A, H = r64
    write("self_attention.json", {
        "description": (
            "Explicit self-attention with column vectors. After torch.manual_seed(11), in this "
            "order: X (d1=6, N=5), W_Q (d3=4, d1), W_K (d3, d1), W_V (d2=3, d1), all randn. "
            "Q = W_Q X, K = W_K X, V = W_V X (columns are tokens). A[i, j] = "
            "softmax_j(k_j . q_i / sqrt(d3)) with rows = queries, columns = keys (N, N); "
            "h_i = sum_j A[i, j] v_j, so H = V A^T has shape (d2, N). No masking."),
        "d1": d1, "d2": d2, "d3": d3, "N": N,
        "X": t(X), "W_Q": t(W_Q), "W_K": t(W_K), "W_V": t(W_V),
        "Q": t(Q), "K": t(K), "V": t(V), "A": t(A), "H": t(H),
        "f32_vs_f64_max_abs_diff": drift,
    })


# ------------------------------------------------------------------ case l
def case_l():
    """torch.nn.functional.scaled_dot_product_attention, forward and backward."""
    import torch.nn.functional as F
    torch.manual_seed(23)
    B, H, L, S, E, Ev = 2, 4, 5, 6, 8, 3

    def inputs(kv_heads, length):
        q = torch.randn(B, H, L if length is None else length, E)
        k = torch.randn(B, kv_heads, S if length is None else length, E)
        v = torch.randn(B, kv_heads, S if length is None else length, Ev)
        r = torch.randn(B, H, q.shape[2], Ev)
        return q, k, v, r

    def run(q, k, v, r, dt, **options):
        q, k, v = (x.to(dt).requires_grad_() for x in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, **options)
        (out * r.to(dt)).sum().backward()
        return out.detach(), q.grad, k.grad, v.grad

    lens = torch.tensor([3, 6])
    attend = torch.arange(S)[None, :] < lens[:, None]  # (B, S), True = attend
    subcases = {
        "valid_lens": (inputs(H, None), {"attn_mask": attend[:, None, None, :]}, {"valid_lens": t(lens)}),
        "causal": (inputs(H, S), {"is_causal": True}, {}),
        "gqa": (inputs(2, None), {"enable_gqa": True}, {}),
    }
    out = {}
    drift = 0.0
    for name, ((q, k, v, r), options, extra) in subcases.items():
        r64 = run(q, k, v, r, F64, **options)
        r32 = run(q, k, v, r, torch.float32, **options)
        drift = max(drift, max(maxdiff(a, b) for a, b in zip(r32, r64)))
        o, dq, dk, dv = r64
        out[name] = {"queries": t(q), "keys": t(k), "values": t(v), "r": t(r),
                     "output": t(o), "dq": t(dq), "dk": t(dk), "dv": t(dv), **extra}
    write("fused_attention.json", {
        "description": (
            "torch.nn.functional.scaled_dot_product_attention (scale 1/sqrt(E), dropout 0) in "
            "float64 on inputs drawn in float32 after torch.manual_seed(23), per subcase in "
            "this order: queries (B=2, H=4, L, E=8), keys (B, kv_heads, S, E), values (B, "
            "kv_heads, S, Ev=3), r (B, H, L, Ev); the gradients dq, dk, dv are those of "
            "sum(r * output). valid_lens: L=5, S=6, attn_mask (B, 1, 1, S) True where the key "
            "index is below valid_lens [3, 6] (True = attend). causal: L = S = 6, is_causal=True. "
            "gqa: L=5, S=6, kv_heads 2, enable_gqa=True (query head h reads key/value head "
            "h // 2)."),
        **out,
        "f32_vs_f64_max_abs_diff": drift,
    })


# ------------------------------------------------------------------ case m
def case_m():
    """Grouped-query attention: projections, PyTorch's enable_gqa, W_o."""
    torch.manual_seed(29)
    B, L, S, H, D = 2, 5, 6, 4, 16

    def subcase(kv_heads, length, mask_options, extra):
        model = GroupedQueryAttention(D, H, kv_heads)
        X_q = torch.randn(B, length or L, D)
        X_kv = torch.randn(B, length or S, D)
        r = torch.randn(B, X_q.shape[1], D)

        def run(dt):
            m = copy.deepcopy(model).to(dt)
            q, kv = X_q.to(dt).requires_grad_(), X_kv.to(dt).requires_grad_()
            out = m(q, kv, kv, **mask_options)
            (out * r.to(dt)).sum().backward()
            return (out.detach(), q.grad, kv.grad, m.W_q.weight.grad, m.W_k.weight.grad,
                    m.W_v.weight.grad, m.W_o.weight.grad)

        r64 = run(F64)
        drift = max(maxdiff(a, b) for a, b in zip(run(torch.float32), r64))
        names = ("output", "d_queries", "d_keys_values", "dW_q", "dW_k", "dW_v", "dW_o")
        return {"kv_heads": kv_heads, "queries": t(X_q), "keys_values": t(X_kv), "r": t(r),
                "W_q": t(model.W_q.weight), "W_k": t(model.W_k.weight),
                "W_v": t(model.W_v.weight), "W_o": t(model.W_o.weight),
                **{n: t(x) for n, x in zip(names, r64)}, **extra}, drift

    lens = torch.tensor([3, 6])
    attend = (torch.arange(S)[None, :] < lens[:, None])[:, None, None, :]
    valid, d1 = subcase(2, None, {"attn_mask": attend}, {"valid_lens": t(lens)})
    causal, d2 = subcase(1, 6, {"is_causal": True}, {})
    write("grouped_query_attention.json", {
        "description": (
            "GroupedQueryAttention of d2l_reference.py (num_hiddens 16, num_heads 4, no "
            "biases): W_q, W_k, W_v projections, heads split as view(b, n, heads, d)"
            ".transpose(1, 2), torch.nn.functional.scaled_dot_product_attention(..., "
            "enable_gqa=True) (query head h reads key/value head h // (heads // kv_heads)), "
            "heads merged, W_o. Float64 on inputs and weights drawn in float32 after "
            "torch.manual_seed(29), per subcase in this order: the model's weights (nn.Linear's "
            "default initialisation: W_q, W_k, W_v, W_o), queries (B=2, L, 16), keys_values "
            "(B, S, 16; the same tensor is the keys and the values), r (B, L, 16). Gradients are "
            "those of sum(r * output): d_queries, d_keys_values (keys and values together), and "
            "the four weights' in PyTorch's (out, in) layout. valid_lens: kv_heads 2, L=5, S=6, "
            "attn_mask True (attend) where the key index is below valid_lens [3, 6]. causal: "
            "kv_heads 1 (multi-query), L = S = 6, is_causal=True."),
        "num_hiddens": D, "num_heads": H,
        "valid_lens": valid, "causal": causal,
        "f32_vs_f64_max_abs_diff": max(d1, d2),
    })


# ------------------------------------------------------------------ case n
def case_n():
    """Llama's rotary embedding (precompute_freqs_cis, apply_rotary_emb)."""
    torch.manual_seed(31)
    B, N, H, D, start = 2, 7, 3, 8, 5
    xq, xk = torch.randn(B, N, H, D), torch.randn(B, N, H, D)

    def run(dt, complex_dt):
        freqs = precompute_freqs_cis(D, start + N, dtype=dt)[start:start + N]
        return apply_rotary_emb(xq.to(dt), xk.to(dt), freqs.to(complex_dt))

    r64 = run(F64, torch.complex128)
    drift = max(maxdiff(a, b) for a, b in zip(run(torch.float32, torch.complex64), r64))
    write("rotary.json", {
        "description": (
            "Rotary position embedding as Meta's Llama computes it (llama/model.py, "
            "precompute_freqs_cis with theta 10000 and apply_rotary_emb, transcribed in "
            "d2l_reference.py), in float64 (Llama: float32) on xq and xk (B=2, seqlen=7, "
            "heads=3, head_dim=8; Llama's layout) drawn in float32 after torch.manual_seed(31), "
            "positions start … start + 6 with start = 5 (freqs_cis[start:start + seqlen], as "
            "Llama's forward slices it for a cache). Features 2i and 2i+1 are one complex "
            "number, multiplied by exp(i * position * 10000^(-2i/head_dim))."),
        "start": start, "xq": t(xq), "xk": t(xk), "xq_out": t(r64[0]), "xk_out": t(r64[1]),
        "f32_vs_f64_max_abs_diff": drift,
    })


# ------------------------------------------------------ optional cross-check
def cross_check():
    """Compare our files with ../shared/golden (if present), field by field."""
    if not os.path.isdir(SHARED):
        return

    def walk(a, b, path, out):
        if isinstance(a, dict) and "data" in a and isinstance(b, dict) and "data" in b:
            if a["shape"] != b["shape"] or a["dtype"] != b["dtype"]:
                out.append((path, float("inf")))
            else:
                d = [abs(float(x) - float(y)) for x, y in zip(a["data"], b["data"])]
                out.append((path, max(d, default=0.0)))
        elif isinstance(a, dict) and isinstance(b, dict):
            for k in a.keys() & b.keys():
                if k not in ("generator", "description"):
                    walk(a[k], b[k], f"{path}.{k}", out)
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                out.append((path, float("inf")))
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{path}[{i}]", out)
        elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
            out.append((path, abs(a - b)))

    print("cross-check against", os.path.normpath(SHARED))
    for name, shared in sorted(SHARED_NAMES.items()):
        other = os.path.join(SHARED, shared)
        if not os.path.exists(other):
            continue
        with open(os.path.join(GOLDEN, name)) as f, open(other) as g:
            mine, theirs = json.load(f), json.load(g)
        diffs = []
        walk(mine, theirs, "", diffs)
        values = [d for p, d in diffs if not p.endswith("f32_vs_f64_max_abs_diff")]
        drift = [d for p, d in diffs if p.endswith("f32_vs_f64_max_abs_diff")]
        worst = max(values, default=0.0)
        status = "OK" if worst <= 1e-12 else "MISMATCH"
        print(f"  {name}: {len(values)} fields, max abs diff {worst:.3g} [{status}];"
              f" f32 drift field diff {max(drift, default=0.0):.3g}")
        for p, d in diffs:
            if d > 1e-12 and not p.endswith("f32_vs_f64_max_abs_diff"):
                print(f"    {p}: {d:.3g}")
        only_mine = sorted(mine.keys() - theirs.keys())
        only_theirs = sorted(theirs.keys() - mine.keys())
        if only_mine or only_theirs:
            print(f"    keys only here: {only_mine}; only there: {only_theirs}")


if __name__ == "__main__":
    # Case letters as arguments (e.g. `k`) write only those files.
    import sys
    torch.set_num_threads(1)
    cases = {"a": case_a, "b": case_b, "d": case_d, "f": case_f, "g": case_g,
             "h": case_h, "i": case_i, "j": case_j, "k": case_k, "l": case_l,
             "m": case_m, "n": case_n}
    for letter in sys.argv[1:] or cases:
        cases[letter]()
    cross_check()
