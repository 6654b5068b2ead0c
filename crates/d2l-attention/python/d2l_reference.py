"""d2l's attention code in PyTorch, re-implemented from the book (the d2l
package is not needed): the parametric Nadaraya-Watson model of d2l zh 10.2,
the masked softmax and scores of d2l zh 10.3 and the
seq2seq encoder, attention decoder, loss and initialisation of zh 9.7 and
10.4, and beyond d2l the grouped-query attention and Llama's rotary
embedding of the chapter "Efficient Attention". One module, imported by the
golden generator (`make_golden.py`) and the PyTorch side of the benchmark
suite (`bench_pytorch.py`) in this folder.
"""

import math

import torch
from torch import nn


def sequence_mask(X, valid_len, value=0.0):
    """d2l.sequence_mask: X is 2-D, entries at index >= valid_len get `value`."""
    maxlen = X.size(1)
    mask = torch.arange(maxlen, dtype=torch.float32, device=X.device)[None, :] < valid_len[:, None]
    X[~mask] = value
    return X


def masked_softmax(X, valid_lens):
    """d2l.masked_softmax: softmax over the last axis, masked with -1e6."""
    if valid_lens is None:
        return nn.functional.softmax(X, dim=-1)
    shape = X.shape
    if valid_lens.dim() == 1:
        valid_lens = torch.repeat_interleave(valid_lens, shape[1])
    else:
        valid_lens = valid_lens.reshape(-1)
    X = sequence_mask(X.reshape(-1, shape[-1]), valid_lens, value=-1e6)
    return nn.functional.softmax(X.reshape(shape), dim=-1)


def additive_scores(queries, keys, W_q, W_k, w_v):
    """d2l AdditiveAttention scores: w_v^T tanh(W_q q + W_k k), broadcast."""
    q, k = queries @ W_q.T, keys @ W_k.T
    features = torch.tanh(q.unsqueeze(2) + k.unsqueeze(1))
    return (features @ w_v.T).squeeze(-1)


def scaled_dot_scores(queries, keys):
    """d2l DotProductAttention scores: Q K^T / sqrt(d)."""
    return queries @ keys.transpose(1, 2) / math.sqrt(queries.shape[-1])


class NWKernelRegression(nn.Module):
    """d2l zh 10.2.4's model, as chapter10.ipynb In[13] writes it (w drawn
    from U(0, 1) as d2l zh draws it)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.rand((1,)))

    def forward(self, queries, keys, values):
        queries = queries.repeat_interleave(keys.shape[1]).reshape(-1, keys.shape[1])
        self.attention_weights = nn.functional.softmax(
            -((queries - keys) * self.w) ** 2 / 2, dim=1)
        return torch.bmm(self.attention_weights.unsqueeze(1), values.unsqueeze(-1)).reshape(-1)


class Seq2SeqEncoder(nn.Module):
    """d2l zh 9.7's encoder: Embedding, then a multi-layer GRU (time first)."""

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0.0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size, num_hiddens, num_layers, dropout=dropout)

    def forward(self, X):
        return self.rnn(self.embedding(X).permute(1, 0, 2))


class AdditiveAttention(nn.Module):
    def __init__(self, num_hiddens, dropout=0.0):
        super().__init__()
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=False)
        self.w_v = nn.Linear(num_hiddens, 1, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens):
        scores = additive_scores(queries, keys, self.W_q.weight, self.W_k.weight, self.w_v.weight)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class Seq2SeqAttentionDecoder(nn.Module):
    """The decoder of d2l zh 10.4.2, as chapter10.ipynb In[27] writes it."""

    def __init__(self, vocab_size, embed_size, num_hiddens, num_layers, dropout=0.0):
        super().__init__()
        self.attention = AdditiveAttention(num_hiddens, dropout)
        self.embedding = nn.Embedding(vocab_size, embed_size)
        self.rnn = nn.GRU(embed_size + num_hiddens, num_hiddens, num_layers, dropout=dropout)
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def forward(self, X, enc_outputs, hidden_state, enc_valid_lens):
        enc_outputs = enc_outputs.permute(1, 0, 2)
        outputs, weights = [], []
        for x in self.embedding(X).permute(1, 0, 2):
            query = torch.unsqueeze(hidden_state[-1], dim=1)
            context = self.attention(query, enc_outputs, enc_outputs, enc_valid_lens)
            x = torch.cat((context, torch.unsqueeze(x, dim=1)), dim=-1)
            out, hidden_state = self.rnn(x.permute(1, 0, 2), hidden_state)
            outputs.append(out)
            weights.append(self.attention.attention_weights)
        outputs = self.dense(torch.cat(outputs, dim=0))
        return outputs.permute(1, 0, 2), hidden_state, torch.cat(weights, dim=1)


def masked_ce_loss(pred, label, valid_len):
    """d2l zh 9.7's MaskedSoftmaxCELoss: per sequence, mean over num_steps."""
    weights = sequence_mask(torch.ones_like(label, dtype=pred.dtype), valid_len)
    unweighted = nn.functional.cross_entropy(pred.permute(0, 2, 1), label, reduction="none")
    return (unweighted * weights).mean(dim=1)


def xavier_init_weights(*models):
    """d2l's xavier_init_weights: Xavier-uniform for every Linear and GRU
    weight matrix (biases keep PyTorch's defaults)."""
    for m in (m for model in models for m in model.modules()):
        if isinstance(m, nn.Linear):
            nn.init.xavier_uniform_(m.weight)
        if isinstance(m, nn.GRU):
            for name in m._flat_weights_names:
                if "weight" in name:
                    nn.init.xavier_uniform_(m._parameters[name])


# ------------------------------------------------------------ Transformer
# d2l en 1.0.3's code (d2l/torch.py and the section "The Transformer
# Architecture", §11.7), with nn.Linear of explicit sizes where d2l uses
# nn.LazyLinear (the same layers once their input size is known).


class DotProductAttention(nn.Module):
    """d2l's DotProductAttention: scaled dot products, masked softmax."""

    def __init__(self, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)

    def forward(self, queries, keys, values, valid_lens=None):
        scores = scaled_dot_scores(queries, keys)
        self.attention_weights = masked_softmax(scores, valid_lens)
        return torch.bmm(self.dropout(self.attention_weights), values)


class MultiHeadAttention(nn.Module):
    """d2l en's MultiHeadAttention(num_hiddens, num_heads, dropout, bias)."""

    def __init__(self, num_hiddens, num_heads, dropout, bias=False):
        super().__init__()
        self.num_heads = num_heads
        self.attention = DotProductAttention(dropout)
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_v = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    def transpose_qkv(self, X):
        X = X.reshape(X.shape[0], X.shape[1], self.num_heads, -1)
        X = X.permute(0, 2, 1, 3)
        return X.reshape(-1, X.shape[2], X.shape[3])

    def transpose_output(self, X):
        X = X.reshape(-1, self.num_heads, X.shape[1], X.shape[2])
        X = X.permute(0, 2, 1, 3)
        return X.reshape(X.shape[0], X.shape[1], -1)

    def forward(self, queries, keys, values, valid_lens):
        queries = self.transpose_qkv(self.W_q(queries))
        keys = self.transpose_qkv(self.W_k(keys))
        values = self.transpose_qkv(self.W_v(values))
        if valid_lens is not None:
            valid_lens = torch.repeat_interleave(valid_lens, repeats=self.num_heads, dim=0)
        output = self.attention(queries, keys, values, valid_lens)
        return self.W_o(self.transpose_output(output))


class PositionalEncoding(nn.Module):
    """d2l's PositionalEncoding, with P computed in float64 (as the library
    computes it) and kept as a buffer, so that it follows the module's dtype.
    `offset` is the fix of the prediction bug: the positions of X start
    there (d2l always starts at 0)."""

    def __init__(self, num_hiddens, dropout, max_len=1000):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        P = torch.zeros((1, max_len, num_hiddens), dtype=torch.float64)
        X = torch.arange(max_len, dtype=torch.float64).reshape(-1, 1) / torch.pow(
            10000, torch.arange(0, num_hiddens, 2, dtype=torch.float64) / num_hiddens)
        P[:, :, 0::2] = torch.sin(X)
        P[:, :, 1::2] = torch.cos(X)
        self.register_buffer("P", P.float())

    def forward(self, X, offset=0):
        X = X + self.P[:, offset:offset + X.shape[1], :].to(X.dtype)
        return self.dropout(X)


class PositionWiseFFN(nn.Module):
    """d2l en's PositionWiseFFN: dense, ReLU, dense."""

    def __init__(self, num_inputs, ffn_num_hiddens, ffn_num_outputs):
        super().__init__()
        self.dense1 = nn.Linear(num_inputs, ffn_num_hiddens)
        self.relu = nn.ReLU()
        self.dense2 = nn.Linear(ffn_num_hiddens, ffn_num_outputs)

    def forward(self, X):
        return self.dense2(self.relu(self.dense1(X)))


class AddNorm(nn.Module):
    """d2l en's AddNorm: layer norm over the last axis of X + dropout(Y)."""

    def __init__(self, norm_shape, dropout):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.ln = nn.LayerNorm(norm_shape)

    def forward(self, X, Y):
        return self.ln(self.dropout(Y) + X)


class TransformerEncoderBlock(nn.Module):
    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias=False):
        super().__init__()
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens, num_hiddens)
        self.addnorm2 = AddNorm(num_hiddens, dropout)

    def forward(self, X, valid_lens):
        Y = self.addnorm1(X, self.attention(X, X, X, valid_lens))
        return self.addnorm2(Y, self.ffn(Y))


class TransformerEncoder(nn.Module):
    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks,
                 dropout, use_bias=False):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module("block" + str(i), TransformerEncoderBlock(
                num_hiddens, ffn_num_hiddens, num_heads, dropout, use_bias))

    def forward(self, X, valid_lens):
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens))
        self.attention_weights = [None] * len(self.blks)
        for i, blk in enumerate(self.blks):
            X = blk(X, valid_lens)
            self.attention_weights[i] = blk.attention.attention.attention_weights
        return X


class TransformerDecoderBlock(nn.Module):
    """§11.7's decoder block (on the page only, not in d2l/torch.py)."""

    def __init__(self, num_hiddens, ffn_num_hiddens, num_heads, dropout, i):
        super().__init__()
        self.i = i
        self.attention1 = MultiHeadAttention(num_hiddens, num_heads, dropout)
        self.addnorm1 = AddNorm(num_hiddens, dropout)
        self.attention2 = MultiHeadAttention(num_hiddens, num_heads, dropout)
        self.addnorm2 = AddNorm(num_hiddens, dropout)
        self.ffn = PositionWiseFFN(num_hiddens, ffn_num_hiddens, num_hiddens)
        self.addnorm3 = AddNorm(num_hiddens, dropout)

    def forward(self, X, state):
        enc_outputs, enc_valid_lens = state[0], state[1]
        if state[2][self.i] is None:
            key_values = X
        else:
            key_values = torch.cat((state[2][self.i], X), dim=1)
        state[2][self.i] = key_values
        if self.training:
            batch_size, num_steps, _ = X.shape
            dec_valid_lens = torch.arange(1, num_steps + 1, device=X.device).repeat(batch_size, 1)
        else:
            dec_valid_lens = None
        X2 = self.attention1(X, key_values, key_values, dec_valid_lens)
        Y = self.addnorm1(X, X2)
        Y2 = self.attention2(Y, enc_outputs, enc_outputs, enc_valid_lens)
        Z = self.addnorm2(Y, Y2)
        return self.addnorm3(Z, self.ffn(Z)), state


class TransformerDecoder(nn.Module):
    """§11.7's decoder. `forward` adds the positional encoding of the
    positions after those in the state's cache (the fix; d2l adds position
    0's to every token it predicts)."""

    def __init__(self, vocab_size, num_hiddens, ffn_num_hiddens, num_heads, num_blks, dropout):
        super().__init__()
        self.num_hiddens = num_hiddens
        self.num_blks = num_blks
        self.embedding = nn.Embedding(vocab_size, num_hiddens)
        self.pos_encoding = PositionalEncoding(num_hiddens, dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module("block" + str(i), TransformerDecoderBlock(
                num_hiddens, ffn_num_hiddens, num_heads, dropout, i))
        self.dense = nn.Linear(num_hiddens, vocab_size)

    def init_state(self, enc_outputs, enc_valid_lens):
        return [enc_outputs, enc_valid_lens, [None] * self.num_blks]

    def forward(self, X, state):
        offset = 0 if state[2][0] is None else state[2][0].shape[1]
        X = self.pos_encoding(self.embedding(X) * math.sqrt(self.num_hiddens), offset)
        self._attention_weights = [[None] * len(self.blks) for _ in range(2)]
        for i, blk in enumerate(self.blks):
            X, state = blk(X, state)
            self._attention_weights[0][i] = blk.attention1.attention.attention_weights
            self._attention_weights[1][i] = blk.attention2.attention.attention_weights
        return self.dense(X), state


# ------------------------------------------------------ Vision Transformer
# d2l en 1.0.3's "Transformers for Vision" (§11.8), with explicit layer sizes
# where d2l uses lazy layers (nn.LazyConv2d, nn.LazyLinear): the same layers
# once their input size is known. ViT is an nn.Module here (d2l's derives
# from d2l.Classifier, which adds training and the loss
# F.cross_entropy(Y_hat, Y, reduction="mean")).


class PatchEmbedding(nn.Module):
    """§11.8's PatchEmbedding: a Conv2d with kernel = stride = patch_size,
    then (batch, num_hiddens, h, w) -> (batch, h*w patches, num_hiddens).
    `num_channels` is the image's channel count (the lazy conv's input)."""

    def __init__(self, img_size=96, patch_size=16, num_hiddens=512, num_channels=3):
        super().__init__()

        def _make_tuple(x):
            if not isinstance(x, (list, tuple)):
                return (x, x)
            return x

        img_size, patch_size = _make_tuple(img_size), _make_tuple(patch_size)
        self.num_patches = (img_size[0] // patch_size[0]) * (img_size[1] // patch_size[1])
        self.conv = nn.Conv2d(num_channels, num_hiddens, kernel_size=patch_size,
                              stride=patch_size)

    def forward(self, X):
        return self.conv(X).flatten(2).transpose(1, 2)


class ViTMLP(nn.Module):
    """§11.8's ViTMLP: dense, GELU (PyTorch's default, the exact erf form),
    dropout, dense, dropout. `num_inputs` is the first lazy layer's input."""

    def __init__(self, num_inputs, mlp_num_hiddens, mlp_num_outputs, dropout=0.5):
        super().__init__()
        self.dense1 = nn.Linear(num_inputs, mlp_num_hiddens)
        self.gelu = nn.GELU()
        self.dropout1 = nn.Dropout(dropout)
        self.dense2 = nn.Linear(mlp_num_hiddens, mlp_num_outputs)
        self.dropout2 = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout2(self.dense2(self.dropout1(self.gelu(self.dense1(x)))))


class ViTBlock(nn.Module):
    """§11.8's ViTBlock (pre-norm): X + attention(ln1(X) x 3), then
    X + mlp(ln2(X))."""

    def __init__(self, num_hiddens, norm_shape, mlp_num_hiddens, num_heads, dropout,
                 use_bias=False):
        super().__init__()
        self.ln1 = nn.LayerNorm(norm_shape)
        self.attention = MultiHeadAttention(num_hiddens, num_heads, dropout, use_bias)
        self.ln2 = nn.LayerNorm(norm_shape)
        self.mlp = ViTMLP(num_hiddens, mlp_num_hiddens, num_hiddens, dropout)

    def forward(self, X, valid_lens=None):
        X = X + self.attention(*([self.ln1(X)] * 3), valid_lens)
        return X + self.mlp(self.ln2(X))


class ViT(nn.Module):
    """§11.8's ViT. `num_channels` is the images' channel count (d2l's lazy
    conv takes it from FashionMNIST: 1). `forward(X, pool="mean")` is the
    chapter's exercise 2: the head reads the mean of the patch
    representations X[:, 1:] instead of the cls token's X[:, 0]. Each
    block's attention weights are kept in `attention_weights` (d2l keeps
    only the last call's, in each block's attention)."""

    def __init__(self, img_size, patch_size, num_hiddens, mlp_num_hiddens, num_heads,
                 num_blks, emb_dropout, blk_dropout, lr=0.1, use_bias=False,
                 num_classes=10, num_channels=1):
        super().__init__()
        self.patch_embedding = PatchEmbedding(img_size, patch_size, num_hiddens, num_channels)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, num_hiddens))
        num_steps = self.patch_embedding.num_patches + 1  # Add the cls token
        self.pos_embedding = nn.Parameter(torch.randn(1, num_steps, num_hiddens))
        self.dropout = nn.Dropout(emb_dropout)
        self.blks = nn.Sequential()
        for i in range(num_blks):
            self.blks.add_module(f"{i}", ViTBlock(
                num_hiddens, num_hiddens, mlp_num_hiddens, num_heads, blk_dropout, use_bias))
        self.head = nn.Sequential(nn.LayerNorm(num_hiddens), nn.Linear(num_hiddens, num_classes))

    def features(self, X):
        """Everything before the head: (batch, num_patches + 1, num_hiddens)."""
        X = self.patch_embedding(X)
        X = torch.cat((self.cls_token.expand(X.shape[0], -1, -1), X), 1)
        X = self.dropout(X + self.pos_embedding)
        self.attention_weights = [None] * len(self.blks)
        for i, blk in enumerate(self.blks):
            X = blk(X)
            self.attention_weights[i] = blk.attention.attention.attention_weights
        return X

    def forward(self, X, pool="cls"):
        X = self.features(X)
        return self.head(X[:, 0] if pool == "cls" else X[:, 1:].mean(1))


# ------------------------------------------------------------------ ResNet
# d2l en 1.0.3's Residual block (§8.6), with the input channel count given
# (d2l's layers are lazy; d2l en 0.17 took it as the first argument too).


class Residual(nn.Module):
    """The Residual block of ResNet models: conv 3x3 (stride), BN, ReLU,
    conv 3x3, BN, plus X (through a strided 1x1 conv if use_1x1conv), ReLU.
    Modules are created in d2l's order: conv1, conv2, conv3, bn1, bn2."""

    def __init__(self, input_channels, num_channels, use_1x1conv=False, strides=1):
        super().__init__()
        self.conv1 = nn.Conv2d(input_channels, num_channels, kernel_size=3, padding=1,
                               stride=strides)
        self.conv2 = nn.Conv2d(num_channels, num_channels, kernel_size=3, padding=1)
        if use_1x1conv:
            self.conv3 = nn.Conv2d(input_channels, num_channels, kernel_size=1, stride=strides)
        else:
            self.conv3 = None
        self.bn1 = nn.BatchNorm2d(num_channels)
        self.bn2 = nn.BatchNorm2d(num_channels)

    def forward(self, X):
        Y = nn.functional.relu(self.bn1(self.conv1(X)))
        Y = self.bn2(self.conv2(Y))
        if self.conv3:
            X = self.conv3(X)
        Y += X
        return nn.functional.relu(Y)


# ---------------------------------------------- beyond d2l: efficient attention
class GroupedQueryAttention(nn.Module):
    """Grouped-query attention (Ainslie et al., 2023): num_heads query heads
    share kv_heads key/value heads through PyTorch's own
    scaled_dot_product_attention(..., enable_gqa=True), which gives query
    head h key/value head h // (num_heads // kv_heads). Not d2l's code: the
    projections are laid out as MultiHeadAttention's above."""

    def __init__(self, num_hiddens, num_heads, kv_heads, bias=False):
        super().__init__()
        self.num_heads, self.kv_heads = num_heads, kv_heads
        head_size = num_hiddens // num_heads
        self.W_q = nn.Linear(num_hiddens, num_hiddens, bias=bias)
        self.W_k = nn.Linear(num_hiddens, kv_heads * head_size, bias=bias)
        self.W_v = nn.Linear(num_hiddens, kv_heads * head_size, bias=bias)
        self.W_o = nn.Linear(num_hiddens, num_hiddens, bias=bias)

    @staticmethod
    def split(X, heads):
        return X.reshape(X.shape[0], X.shape[1], heads, -1).transpose(1, 2)

    def forward(self, queries, keys, values, attn_mask=None, is_causal=False):
        q = self.split(self.W_q(queries), self.num_heads)
        k = self.split(self.W_k(keys), self.kv_heads)
        v = self.split(self.W_v(values), self.kv_heads)
        out = nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=attn_mask, is_causal=is_causal, enable_gqa=True)
        return self.W_o(out.transpose(1, 2).reshape(queries.shape[0], queries.shape[1], -1))


def precompute_freqs_cis(dim, end, theta=10000.0, dtype=torch.float32):
    """Meta's Llama (github.com/meta-llama/llama, llama/model.py,
    precompute_freqs_cis), transcribed; `dtype` added so that the golden
    generator can run it in float64 (Llama: float32)."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].to(dtype) / dim))
    t = torch.arange(end, dtype=dtype)
    freqs = torch.outer(t, freqs)
    return torch.polar(torch.ones_like(freqs), freqs)


def apply_rotary_emb(xq, xk, freqs_cis):
    """Meta's Llama (llama/model.py, apply_rotary_emb and
    reshape_for_broadcast), transcribed: x is (batch, seqlen, heads,
    head_dim), adjacent features (2i, 2i + 1) form one complex number turned
    by freqs_cis[position, i]. Llama casts x to float32 first; here x keeps
    its dtype (float64 in the golden generator)."""
    xq_ = torch.view_as_complex(xq.reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.reshape(*xk.shape[:-1], -1, 2))
    shape = [d if i == 1 or i == xq_.ndim - 1 else 1 for i, d in enumerate(xq_.shape)]
    freqs_cis = freqs_cis.view(*shape)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)
