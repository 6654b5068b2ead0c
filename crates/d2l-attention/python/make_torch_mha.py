"""Reference values for loading PyTorch's nn.MultiheadAttention into the
book's MultiHeadAttention.

Run from the repository root with PyTorch 2.9.0 (CPU is enough):

    ~/.cache/attention-book/torch-2.9.0/bin/python crates/d2l-attention/python/make_torch_mha.py

For each case it saves the module's state dict with torch.save (float32, as
a reader would export it) to ../tests/golden/torch_mha/<case>.pt, and writes
the same state dict (its f32 values, widened), the inputs, the masks and
PyTorch's outputs to
../tests/golden/torch_multihead_attention.json (the golden format of the
README there: inputs are exact f32 values, outputs computed in float64 from
the same f32 weights). Biases are drawn at random (PyTorch starts them at
0, which would hide a bias that is loaded wrongly). No case has a query
whose keys are all masked: PyTorch returns NaN there (see the chapter).
"""

import json
import os

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(HERE, "..", "tests", "golden")


def t(x):
    x = x.detach()
    if x.dtype == torch.bool:
        return {"shape": list(x.shape), "dtype": "bool", "data": x.flatten().tolist()}
    return {"shape": list(x.shape), "dtype": "float64",
            "data": x.double().flatten().tolist()}


def case(name, E, h, L, S, N, *, bias=True, kdim=None, vdim=None,
         batch_first=False, key_padding_mask=None, attn_mask=None, seed=0):
    torch.manual_seed(seed)
    mha = nn.MultiheadAttention(E, h, dropout=0.0, bias=bias, kdim=kdim,
                                vdim=vdim, batch_first=batch_first)
    with torch.no_grad():
        for pname, p in mha.named_parameters():
            if "bias" in pname:
                p.normal_(0.0, 0.5)
    mha.eval()
    torch.save(mha.state_dict(), os.path.join(GOLDEN, "torch_mha", name + ".pt"))
    kd, vd = kdim or E, vdim or E
    shape = (lambda n, s, e: (n, s, e)) if batch_first else (lambda n, s, e: (s, n, e))
    query = torch.randn(shape(N, L, E))
    key = torch.randn(shape(N, S, kd))
    value = torch.randn(shape(N, S, vd))
    wide = mha.double()
    args = dict(key_padding_mask=key_padding_mask,
                attn_mask=attn_mask.double() if attn_mask is not None
                and attn_mask.dtype != torch.bool else attn_mask)
    with torch.no_grad():
        out, avg = wide(query.double(), key.double(), value.double(), **args)
        _, per_head = wide(query.double(), key.double(), value.double(),
                           average_attn_weights=False, **args)
        out32, _ = mha.float()(query, key, value, key_padding_mask=key_padding_mask,
                               attn_mask=attn_mask)
    assert not torch.isnan(out).any(), name
    return {
        "embed_dim": E, "num_heads": h, "bias": bias, "kdim": kd, "vdim": vd,
        "batch_first": batch_first,
        "query": t(query), "key": t(key), "value": t(value),
        "key_padding_mask": t(key_padding_mask) if key_padding_mask is not None else None,
        "attn_mask": t(attn_mask) if attn_mask is not None else None,
        "attn_output": t(out), "attn_weights": t(avg),
        "attn_weights_per_head": t(per_head),
        "state_dict": {k: t(v) for k, v in mha.float().state_dict().items()},
        "f32_vs_f64_max_abs_diff": (out32.double() - out).abs().max().item(),
    }


def main():
    cases = {}
    # Configured like the notebook 注意力机制's module: E = 10, 10 heads,
    # sequence-first (its weights drawn here).
    cases["notebook"] = case("notebook", 10, 10, 3, 6, 4)
    # The last two keys of batch element 1 are padding.
    pad = torch.zeros(3, 7, dtype=torch.bool)
    pad[1, 5:] = True
    cases["padding"] = case("padding", 8, 2, 4, 7, 3, batch_first=True,
                            key_padding_mask=pad, seed=1)
    # Self-attention shapes with a causal mask (True = not allowed).
    causal = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
    cases["causal"] = case("causal", 8, 4, 5, 5, 2, attn_mask=causal, seed=2)
    # An additive float mask, plus padding.
    torch.manual_seed(30)
    additive = torch.randn(4, 6)
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[0, 4:] = True
    cases["additive"] = case("additive", 6, 3, 4, 6, 2, attn_mask=additive,
                             key_padding_mask=pad, seed=3)
    # Keys and values of other sizes: separate q/k/v projection weights.
    pad = torch.zeros(2, 5, dtype=torch.bool)
    pad[1, 3:] = True
    cases["kdim_vdim"] = case("kdim_vdim", 6, 3, 3, 5, 2, kdim=4, vdim=7,
                              batch_first=True, key_padding_mask=pad, seed=4)
    # One mask per head: (N * num_heads, L, S), no row fully masked.
    torch.manual_seed(50)
    per_head = torch.rand(2 * 2, 3, 5) < 0.4
    per_head[..., 0] = False
    cases["per_head_mask"] = case("per_head_mask", 4, 2, 3, 5, 2,
                                  attn_mask=per_head, seed=5)
    # No biases at all, as in d2l.
    cases["no_bias"] = case("no_bias", 8, 2, 3, 4, 2, bias=False,
                            batch_first=True, seed=6)
    # What PyTorch does with a query whose keys are all masked (sequence 1
    # of the notebook's module), with and without weights requested.
    torch.manual_seed(70)
    mha = nn.MultiheadAttention(10, 10)
    mha.load_state_dict(torch.load(os.path.join(GOLDEN, "torch_mha", "notebook.pt")))
    mha.eval()
    q, k = torch.randn(3, 2, 10), torch.randn(6, 2, 10)
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[1] = True
    with torch.no_grad():
        out_w, w = mha(q, k, k, key_padding_mask=pad)
        out_nw, _ = mha(q, k, k, key_padding_mask=pad, need_weights=False)
    all_masked = {
        "weights_nan": bool(torch.isnan(w[1]).all()),
        "output_nan_with_weights": bool(torch.isnan(out_w[:, 1]).all()),
        "output_nan_without_weights": bool(torch.isnan(out_nw[:, 1]).any()),
        "output_without_weights": t(out_nw[:, 1]),
    }
    # A state dict without its packed input projection.
    state = torch.load(os.path.join(GOLDEN, "torch_mha", "no_bias.pt"))
    del state["in_proj_weight"]
    torch.save(state, os.path.join(GOLDEN, "torch_mha", "broken.pt"))
    out = {
        "all_masked_query": all_masked,
        "description": "torch.nn.MultiheadAttention (eval, dropout 0) per case: "
        "the state dict is in torch_mha/<case>.pt; inputs in the module's own "
        "layout (batch_first or not); attn_weights averaged over heads, "
        "attn_weights_per_head (N, num_heads, L, S).",
        "generator": {"script": "crates/d2l-attention/python/make_torch_mha.py",
                      "torch_version": torch.__version__},
        "cases": cases,
    }
    with open(os.path.join(GOLDEN, "torch_multihead_attention.json"), "w") as f:
        json.dump(out, f)
        f.write("\n")
    for name, c in cases.items():
        print(f"{name}: f32 drift {c['f32_vs_f64_max_abs_diff']:.2e}")
    print("all keys masked:", {k: v for k, v in all_masked.items() if k != "output_without_weights"})
    print("  output without weights:", out_nw[:, 1])


if __name__ == "__main__":
    main()
