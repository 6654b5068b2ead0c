"""Reference values for the library's Transformer (d2l en 1.0.3, §11.7).

Run from the repository root with PyTorch 2.9.0 (CPU is enough):

    ~/.cache/attention-book/torch-2.9.0/bin/python crates/d2l-attention/python/make_transformer_golden.py

It writes ../tests/golden/transformer.json in the golden format (see the
README there): weights and inputs are exact f32 values, outputs are
computed in float64. The models are d2l_reference.py's re-implementation of
d2l en's classes: attention without biases as in d2l, dropout 0, and every
layer norm's weight and bias perturbed (PyTorch starts them at 1 and 0,
which would hide a norm loaded wrongly). Cases:

- encoder_block: one TransformerEncoderBlock with valid_lens;
- encoder: a two-block TransformerEncoder, outputs and attention weights;
- decoder_block: one TransformerDecoderBlock in training mode (causal
  dec_valid_lens) over an encoder block's outputs;
- decoder: the two-block TransformerDecoder in training mode over the
  encoder's outputs (teacher forcing), logits and both attentions;
- prediction: the same decoder in eval mode, fed the same tokens one call
  per token, with the position offset fixed in the reference (each token
  gets its own position's encoding, where d2l's code adds position 0's):
  its logits are the training pass's (checked here, so only the cache's
  length and the largest difference are stored).
"""

import json
import os

import torch

from d2l_reference import (
    TransformerDecoder,
    TransformerDecoderBlock,
    TransformerEncoder,
    TransformerEncoderBlock,
)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "golden", "transformer.json")
F64 = torch.float64
HIDDENS, FFN, HEADS = 8, 16, 2


def t(x):
    x = x.detach()
    if x.is_floating_point():
        return {"shape": list(x.shape), "dtype": "float64",
                "data": x.to(F64).reshape(-1).tolist()}
    return {"shape": list(x.shape), "dtype": "int64",
            "data": x.to(torch.int64).reshape(-1).tolist()}


def perturb_norms(module):
    with torch.no_grad():
        for name, p in module.named_parameters():
            if ".ln." in "." + name:
                p.add_(0.2 * torch.randn_like(p))


def params(module):
    return {k: t(v) for k, v in module.state_dict().items() if not k.endswith(".P") and k != "P"}


def main():
    torch.manual_seed(0)
    cases = {}

    # One encoder block.
    blk = TransformerEncoderBlock(HIDDENS, FFN, HEADS, 0.0)
    perturb_norms(blk)
    X = torch.randn(2, 5, HIDDENS)
    valid_lens = torch.tensor([5, 3])
    blk.eval()
    out = blk.double()(X.double(), valid_lens)
    cases["encoder_block"] = {
        "params": params(blk.float()), "X": t(X), "valid_lens": t(valid_lens),
        "output": t(out),
        "attention_weights": t(blk.attention.attention.attention_weights),
    }

    # The whole encoder.
    encoder = TransformerEncoder(11, HIDDENS, FFN, HEADS, 2, 0.0)
    perturb_norms(encoder)
    enc_X = torch.tensor([[1, 4, 2, 7, 3, 9], [5, 2, 8, 1, 0, 0]])
    enc_valid_lens = torch.tensor([6, 4])
    encoder.eval()
    enc_outputs = encoder.double()(enc_X, enc_valid_lens)
    cases["encoder"] = {
        "params": params(encoder.float()), "X": t(enc_X), "valid_lens": t(enc_valid_lens),
        "output": t(enc_outputs),
        "attention_weights": [t(w) for w in encoder.attention_weights],
    }

    # One decoder block in training mode, over an encoder block's outputs.
    dblk = TransformerDecoderBlock(HIDDENS, FFN, HEADS, 0.0, 0)
    perturb_norms(dblk)
    Y = torch.randn(2, 4, HIDDENS)
    memory = torch.randn(2, 6, HIDDENS)
    dblk.train()
    out, _ = dblk.double()(Y.double(), [memory.double(), enc_valid_lens, [None]])
    cases["decoder_block"] = {
        "params": params(dblk.float()), "X": t(Y), "enc_outputs": t(memory),
        "enc_valid_lens": t(enc_valid_lens), "output": t(out),
        "self_attention": t(dblk.attention1.attention.attention_weights),
        "cross_attention": t(dblk.attention2.attention.attention_weights),
    }

    # The whole decoder in training mode (causal), then step by step.
    decoder = TransformerDecoder(13, HIDDENS, FFN, HEADS, 2, 0.0)
    perturb_norms(decoder)
    dec_X = torch.tensor([[1, 5, 3, 8, 2], [1, 7, 7, 4, 6]])
    decoder.double().train()
    memory = enc_outputs.detach()
    logits, _ = decoder(dec_X, decoder.init_state(memory, enc_valid_lens))
    weights = decoder._attention_weights
    cases["decoder"] = {
        "params": params(decoder.float()), "enc_X": t(enc_X),
        "enc_valid_lens": t(enc_valid_lens), "enc_outputs": t(memory),
        "X": t(dec_X), "output": t(logits),
        "self_attention": [t(w) for w in weights[0]],
        "cross_attention": [t(w) for w in weights[1]],
    }
    decoder.double().eval()
    state = decoder.init_state(memory, enc_valid_lens)
    steps = []
    for i in range(dec_X.shape[1]):
        step_logits, state = decoder(dec_X[:, i:i + 1], state)
        steps.append(step_logits)
    prediction = torch.cat(steps, 1)
    assert torch.allclose(prediction, logits, rtol=0, atol=1e-12)
    cases["prediction"] = {
        "cache_steps": [kv.shape[1] for kv in state[2]],
        "max_abs_diff_from_training_pass": (prediction - logits).abs().max().item(),
    }

    out = {
        "description": __doc__,
        "generator": {"script": "crates/d2l-attention/python/make_transformer_golden.py",
                      "torch_version": torch.__version__},
        "sizes": {"num_hiddens": HIDDENS, "ffn_num_hiddens": FFN, "num_heads": HEADS},
        "cases": cases,
    }
    with open(OUT, "w") as f:
        json.dump(out, f)
        f.write("\n")
    print("prediction vs training pass:", cases["prediction"]["max_abs_diff_from_training_pass"])
    print("cache steps:", cases["prediction"]["cache_steps"])


if __name__ == "__main__":
    main()
