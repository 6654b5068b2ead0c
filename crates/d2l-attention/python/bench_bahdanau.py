"""The PyTorch baseline of benches/bahdanau_train.rs: d2l's Bahdanau model
(zh 10.4) trained the d2l way on the same 600 English-French pairs, with the
same settings (embed 32, hidden 32, 2 layers, dropout 0.1, batch 64,
num_steps 10, Adam lr 0.005, gradients clipped to norm 1). Prints target
tokens per second over all epochs, as the Rust bench does.

Run with PyTorch 2.9.0 (the virtualenv of the README's libtorch section):

    ~/.cache/attention-book/torch-2.9.0/bin/python \
        crates/d2l-attention/benches/d2l_bahdanau.py [EPOCHS] [THREADS]

(defaults: 25 epochs, 1 thread). The corpus is read from $D2L_DATA_DIR/fra.txt.
"""

import argparse
import collections
import os
import sys
import time

import torch

from d2l_reference import (
    Seq2SeqAttentionDecoder,
    Seq2SeqEncoder,
    masked_ce_loss,
    xavier_init_weights,
)


def preprocess(text):
    text = text.replace("\u202f", " ").replace("\xa0", " ").lower()
    return "".join(
        " " + c if i > 0 and c in ",.!?" and text[i - 1] != " " else c for i, c in enumerate(text)
    )


def load(num_steps, num_examples):
    path = os.path.join(os.environ.get("D2L_DATA_DIR", ""), "fra.txt")
    if not os.path.isfile(path):
        sys.exit(f"fra.txt not found at `{path}`: set D2L_DATA_DIR to the folder holding it")
    with open(path, encoding="utf-8") as f:
        lines = preprocess(f.read()).split("\n")
    pairs = [line.split("\t") for line in lines if line.count("\t") == 1][:num_examples]
    arrays, vocabs = [], []
    for side in zip(*pairs):
        tokens = [s.split(" ") for s in side]
        counts = collections.Counter(t for line in tokens for t in line)
        itos = ["<unk>", "<pad>", "<bos>", "<eos>"]
        itos += [t for t, n in sorted(counts.items(), key=lambda x: -x[1]) if n >= 2]
        index = {t: i for i, t in enumerate(itos)}
        ids = [[index.get(t, 0) for t in line] + [index["<eos>"]] for line in tokens]
        ids = [line[:num_steps] + [index["<pad>"]] * (num_steps - len(line)) for line in ids]
        x = torch.tensor(ids)
        arrays += [x, (x != index["<pad>"]).sum(1)]
        vocabs.append(index)
    return torch.utils.data.TensorDataset(*arrays), vocabs


def count(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got `{text}`")
    return int(text)


def main():
    parser = argparse.ArgumentParser(description="d2l's Bahdanau training in PyTorch")
    parser.add_argument("epochs", nargs="?", type=count, default=25)
    parser.add_argument("threads", nargs="?", type=count, default=1)
    args = parser.parse_args()
    num_epochs = args.epochs
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    dataset, (src_vocab, tgt_vocab) = load(10, 600)
    loader = torch.utils.data.DataLoader(dataset, batch_size=64, shuffle=True)
    encoder = Seq2SeqEncoder(len(src_vocab), 32, 32, 2, dropout=0.1)
    decoder = Seq2SeqAttentionDecoder(len(tgt_vocab), 32, 32, 2, dropout=0.1)
    params = list(encoder.parameters()) + list(decoder.parameters())
    xavier_init_weights(encoder, decoder)
    optimizer = torch.optim.Adam(params, lr=0.005)
    start, tokens = time.perf_counter(), 0
    for epoch in range(num_epochs):
        loss_sum, epoch_tokens = 0.0, 0
        for x, x_len, y, y_len in loader:
            optimizer.zero_grad()
            bos = torch.full((y.shape[0], 1), tgt_vocab["<bos>"])
            outputs, state = encoder(x)
            y_hat, _, _ = decoder(torch.cat([bos, y[:, :-1]], 1), outputs, state, x_len)
            loss = masked_ce_loss(y_hat, y, y_len).sum()
            loss.backward()
            norm = torch.sqrt(sum((p.grad**2).sum() for p in params))  # d2l's grad_clipping
            if norm > 1:
                for p in params:
                    p.grad[:] *= 1 / norm
            optimizer.step()
            loss_sum, epoch_tokens = loss_sum + loss.item(), epoch_tokens + int(y_len.sum())
        tokens += epoch_tokens
    seconds = time.perf_counter() - start
    print(
        f"{num_epochs} epochs on PyTorch {torch.__version__} ({torch.get_num_threads()} threads): "
        f"loss {loss_sum / epoch_tokens:.3f}, {tokens / seconds:.0f} tokens/s, {seconds:.1f} s"
    )


if __name__ == "__main__":
    main()
