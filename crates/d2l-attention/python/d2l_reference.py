"""d2l's attention code in PyTorch, re-implemented from the book (the d2l
package is not needed): the masked softmax and scores of d2l zh 10.3 and the
seq2seq encoder, attention decoder, loss and initialisation of zh 9.7 and
10.4. One module, imported by the golden generator (`make_golden.py`) and
the PyTorch benchmark (`bench_bahdanau.py`) in this folder.
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
    """The decoder of seed notebook 000, In[27] (d2l zh 10.4.2)."""

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
