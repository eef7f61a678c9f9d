# SPDX-License-Identifier: BSD-3-Clause
"""The language model of examples/train.py (--model lm): a small
decoder-only transformer over bytes, trained on the text of Debian's
`fortunes` package.

Why `fortunes`: it is plain English prose and verse (quotations, jokes,
definitions, ~2.4 MB) in one directory, installable everywhere with apt
(scripts/deps.sh), free (BSD-style and public domain), and stable across
Debian releases; a byte-level model needs no tokenizer or vocabulary file.

Data: every regular file of /usr/share/games/fortunes (not the `.dat`
indexes, not the `.u8` links), in name order, concatenated; cut into
blocks of 4096 bytes; every tenth block is held out for the evaluation
loss, the others are the training text, dealt to the islands block by
block (island k gets training blocks k, k + N, ...).
"""
import glob
import math
import os

import torch
import torch.nn as nn
import torch.nn.functional as F

CORPUS_DIR = "/usr/share/games/fortunes"
BLOCK = 4096
HELD_OUT_EVERY = 10


def corpus(path=CORPUS_DIR):
    """The corpus as one uint8 tensor (see the module's docstring)."""
    files = sorted(f for f in glob.glob(os.path.join(path, "*"))
                   if os.path.isfile(f) and not os.path.islink(f) and not f.endswith(".dat"))
    if not files:
        raise SystemExit("train.py: no text in %s (apt-get install fortunes; scripts/deps.sh)"
                         % path)
    data = b"".join(open(f, "rb").read() for f in files)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8)


def split(data, island, islands):
    """(island's training text, held-out text): blocks of BLOCK bytes,
    every HELD_OUT_EVERY-th held out, the rest dealt round-robin."""
    nb = len(data) // BLOCK
    blocks = data[:nb * BLOCK].view(nb, BLOCK)
    held = torch.arange(nb) % HELD_OUT_EVERY == HELD_OUT_EVERY - 1
    train = blocks[~held]
    mine = train[island::islands].reshape(-1)
    return mine, blocks[held].reshape(-1)


class Block(nn.Module):
    """Pre-norm transformer block: causal self-attention, then a 4x MLP."""

    def __init__(self, d, heads):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
        self.heads = heads

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = (z.transpose(1, 2) for z in (q, k, v))        # b, h, t, d/h
        att = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.heads) + mask[:t, :t]
        y = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class ByteLM(nn.Module):
    """Decoder-only transformer over bytes (vocabulary 256), learned
    positions, tied input/output embedding."""

    def __init__(self, d=128, layers=1, heads=4, ctx=32):
        super().__init__()
        self.tok = nn.Embedding(256, d)
        self.pos = nn.Parameter(torch.zeros(ctx, d))
        self.blocks = nn.ModuleList([Block(d, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.ctx = ctx
        self.register_buffer("mask", torch.triu(torch.full((ctx, ctx), float("-inf")), 1),
                             persistent=False)
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos, std=0.02)

    def forward(self, x):
        h = self.tok(x) + self.pos[:x.shape[1]]
        for b in self.blocks:
            h = b(h, self.mask)
        return self.ln(h) @ self.tok.weight.t()


def make_lm(a):
    torch.manual_seed(a.seed)           # the same start on every island
    return ByteLM(d=a.d_model, layers=a.layers, heads=a.heads, ctx=a.ctx)


def batch(text, n, ctx, g):
    """n windows of ctx + 1 bytes at random offsets: (inputs, targets)."""
    i = torch.randint(0, len(text) - ctx - 1, (n,), generator=g)
    w = torch.stack([text[j:j + ctx + 1] for j in i.tolist()]).long()
    return w[:, :-1], w[:, 1:]


def loss_of(model, x, y):
    return F.cross_entropy(model(x).reshape(-1, 256), y.reshape(-1))


def eval_set(held, n, ctx, seed):
    """The evaluation windows: n fixed windows of the held-out text, the
    same on every island and in every run."""
    return batch(held, n, ctx, torch.Generator().manual_seed(10_000 + seed))


def eval_loss(model, ev):
    with torch.no_grad():
        return float(loss_of(model, *ev))
