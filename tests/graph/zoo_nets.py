"""Model shapes people bring, written as they write them: the zoo tests host this file as
``--model zoo_nets.py:NAME`` (each builder takes the arguments a user's file is offered:
``num_classes``, ``in_channels``, ``image_size``, ``in_features``).

Images are mnist-sample's (1×28×28, 10 classes); tables are ``TABLE`` (a CSV with number
columns and one text column of category codes, one-hot encoded and standardized by the
hub, as data/tables.py reads it). Recurrent networks read an image as 7 rows of 112
pixels: the same shapes as 28 rows of 28, a quarter of the time steps to export.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

ROWS, ROW = 7, 112  # an image's 784 pixels as a sequence of 7 steps
STEPS, STEP = 4, 196  # or of 4: the stacked GRU's 4 directions and layers export slowly
COLOURS = ("red", "green", "blue", "cyan", "grey", "black")  # the table's category codes


def table_csv(rows: int = 60) -> str:
    """The table the table models train on: two numbers, a colour, a size, a label."""
    lines = ["height,colour,weight,label"]
    for i in range(rows):
        colour = COLOURS[(i * 7) % len(COLOURS)]
        lines.append(f"{150 + (i * 13) % 50},{colour},{40 + (i * 29) % 60},{'abc'[i % 3]}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ containers and tables
def sequential_mlp(in_features: int, num_classes: int) -> nn.Module:
    """The quickest model there is: a bare nn.Sequential (parameters ``0.weight`` ...)."""
    return nn.Sequential(nn.Linear(in_features, 32), nn.ReLU(), nn.Dropout(0.2),
                         nn.Linear(32, num_classes))


def sequential_cnn(in_channels: int, num_classes: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(in_channels, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
        nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(0.2), nn.Linear(16, num_classes))


class ListMLP(nn.Module):
    """Residual blocks kept in an nn.ModuleList."""

    def __init__(self, in_features: int, num_classes: int, depth: int = 3) -> None:
        super().__init__()
        self.inp = nn.Linear(in_features, 24)
        self.blocks = nn.ModuleList(nn.Linear(24, 24) for _ in range(depth))
        self.out = nn.Linear(24, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.inp(x)
        for block in self.blocks:
            x = x + F.silu(block(x))
        return self.out(x)


class OddKeys(nn.Module):
    """An nn.ModuleDict whose keys have dashes and capitals."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.layers = nn.ModuleDict({
            "conv-in": nn.Conv2d(in_channels, 8, 3, stride=2),
            "block1-0": nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8)),
            "Head": nn.Linear(8, num_classes),
        })

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.layers["conv-in"](x))
        x = F.relu(x + self.layers["block1-0"](x))
        return self.layers["Head"](x.mean(dim=(2, 3)))


class ParamList(nn.Module):
    """Weights kept by hand in an nn.ParameterList, used with torch.addmm."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__()
        sizes = [in_features, 16, 16, num_classes]
        self.weights = nn.ParameterList(nn.Parameter(torch.randn(a, b) / math.sqrt(a))
                                        for a, b in zip(sizes, sizes[1:], strict=False))
        self.biases = nn.ParameterList(nn.Parameter(torch.zeros(b)) for b in sizes[1:])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, (weight, bias) in enumerate(zip(self.weights, self.biases, strict=True)):
            x = torch.addmm(bias, x, weight)
            x = torch.tanh(x) if i < len(self.weights) - 1 else x
        return x


class LayerNormMLP(nn.Module):
    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_features, 32), nn.LayerNorm(32), nn.GELU(),
                                 nn.Linear(32, 32), nn.LayerNorm(32), nn.GELU())
        self.head = nn.Linear(32, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.net(x))


def colour_slots(in_features: int) -> slice:
    """Where the colour's one-hot columns are: after ``height``, in sorted order (the
    hub one-hot encodes a text column with few values as COLUMN=VALUE, sorted)."""
    return slice(1, 1 + len(COLOURS))


class CategoryEmbedding(nn.Module):
    """An nn.Embedding over a category column. The hub hands a model standardized float
    rows, a text column as one-hot columns; the hot one is the largest of its columns
    (standardized, 1 stays above 0), so its index is the category's code."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__()
        self.slots = colour_slots(in_features)
        self.embed = nn.Embedding(len(COLOURS), 4)
        self.numbers = nn.Linear(in_features - len(COLOURS), 12)
        self.head = nn.Linear(16, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        codes = x[:, self.slots].argmax(dim=1)
        numbers = torch.cat([x[:, :self.slots.start], x[:, self.slots.stop:]], dim=1)
        return self.head(torch.cat([self.embed(codes), F.relu(self.numbers(numbers))], 1))


class TiedEmbedding(CategoryEmbedding):
    """Weight tying as language models do it: the layer that predicts the category back
    from the hidden state is the embedding's own weight (one Parameter, two names)."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__(in_features, num_classes)
        self.unembed = nn.Linear(4, len(COLOURS), bias=False)
        self.unembed.weight = self.embed.weight
        self.head = nn.Linear(16 + len(COLOURS), num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        codes = x[:, self.slots].argmax(dim=1)
        hidden = self.embed(codes)
        numbers = F.relu(self.numbers(torch.cat([x[:, :1], x[:, self.slots.stop:]], 1)))
        return self.head(torch.cat([hidden, numbers, self.unembed(hidden)], dim=1))


class TiedLinear(nn.Module):
    """An encoder and a decoder sharing one weight (assigned, as tutorials do)."""

    def __init__(self, in_features: int, num_classes: int) -> None:
        super().__init__()
        self.encode, self.decode = nn.Linear(in_features, in_features), \
            nn.Linear(in_features, in_features)
        self.decode.weight = self.encode.weight
        self.head = nn.Linear(2 * in_features, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = torch.tanh(self.encode(x))
        return self.head(torch.cat([hidden, self.decode(hidden)], dim=1))


# ------------------------------------------------------------------ recurrent networks
class MnistRNN(nn.Module):
    """pytorch/examples' mnist_rnn ``Net``, as written there (no arguments), over 7 rows
    of 112 pixels: nn.LSTM, BatchNorm1d, Dropout2d on a 2-D input, log-probabilities."""

    def __init__(self) -> None:
        super().__init__()
        self.rnn = nn.LSTM(input_size=ROW, hidden_size=64, batch_first=True)
        self.batchnorm = nn.BatchNorm1d(64)
        self.dropout1 = nn.Dropout2d(0.25)
        self.dropout2 = nn.Dropout2d(0.5)
        self.fc1 = nn.Linear(64, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        input = input.reshape(-1, ROWS, ROW)
        output, hidden = self.rnn(input)
        output = output[:, -1, :]
        output = self.batchnorm(output)
        output = self.dropout1(output)
        output = self.fc1(output)
        output = F.relu(output)
        output = self.dropout2(output)
        output = self.fc2(output)
        return F.log_softmax(output, dim=1)


class RowsGRU(nn.Module):
    """A 2-layer bidirectional nn.GRU over image rows, with dropout between layers."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.gru = nn.GRU(STEP, 24, num_layers=2, bidirectional=True, batch_first=True,
                          dropout=0.2)
        self.head = nn.Linear(48, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(x.flatten(1).unflatten(1, (STEPS, STEP)))
        return self.head(out.mean(dim=1))


class RowsRNN(nn.Module):
    """A plain nn.RNN (tanh), sequence first, its last hidden state classified."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.rnn = nn.RNN(ROW, 32)
        self.head = nn.Linear(32, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rows = x.reshape(x.shape[0], ROWS, ROW).transpose(0, 1)
        _, last = self.rnn(rows)
        return self.head(last[-1])


# ------------------------------------------------------------------ attention
def patches(x: torch.Tensor, size: int) -> torch.Tensor:
    """N×C×H×W images as N×(H/size · W/size)×(C·size²) patch vectors."""
    n, c, h, w = x.shape
    x = x.reshape(n, c, h // size, size, w // size, size).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(n, (h // size) * (w // size), c * size * size)


class EncoderNet(nn.Module):
    """nn.TransformerEncoder over 4×4 patches, batch first, mean-pooled."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.embed = nn.Linear(in_channels * 16, 32)
        layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.1,
                                           batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        self.head = nn.Linear(32, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(patches(x, 4))).mean(dim=1))


class AttentionNet(nn.Module):
    """nn.MultiheadAttention used directly (sequence first), with its weights."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.embed = nn.Linear(in_channels * 49, 24)
        self.attention = nn.MultiheadAttention(24, 3, dropout=0.1)
        self.head = nn.Linear(24, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(patches(x, 7)).transpose(0, 1)
        mixed, weights = self.attention(tokens, tokens, tokens)  # weights: N×L×L
        attended = torch.bmm(weights, tokens.transpose(0, 1)).mean(dim=1)
        return self.head(mixed.mean(dim=0) + attended)


class CausalSDPA(nn.Module):
    """F.scaled_dot_product_attention written by hand: causal, over image rows."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.qkv = nn.Linear(ROW, 3 * 32)
        self.out = nn.Linear(32, 32)
        self.head = nn.Linear(32, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.qkv(x.reshape(-1, ROWS, ROW)).unflatten(2, (3, 4, 8)).unbind(2)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2), is_causal=True)
        return self.head(self.out(y.transpose(1, 2).flatten(2)).mean(dim=1))


class SmallViT(nn.Module):
    """A vision transformer: patch-embedding convolution, a class token and learned
    positions (nn.Parameter), pre-norm encoder layers, a LayerNorm'd head."""

    def __init__(self, in_channels: int, num_classes: int, image_size: int) -> None:
        super().__init__()
        patch, width = 7, 32
        tokens = (image_size // patch) ** 2
        self.patch = nn.Conv2d(in_channels, width, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        self.pos = nn.Parameter(torch.randn(1, tokens + 1, width) * 0.02)
        layer = nn.TransformerEncoderLayer(width, 4, 2 * width, dropout=0.1, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.blocks(x))[:, 0])


# ------------------------------------------------------------------ norms, buffers, tricks
class GroupNormNet(nn.Module):
    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(in_channels, 16, 3, stride=2), nn.GroupNorm(4, 16),
                                      nn.SiLU(), nn.Conv2d(16, 16, 3), nn.GroupNorm(1, 16),
                                      nn.SiLU())
        self.head = nn.Linear(16, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(dim=(2, 3)))


class WeightNormNet(nn.Module):
    """torch.nn.utils.parametrizations.weight_norm on a convolution and the head."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        weight_norm = nn.utils.parametrizations.weight_norm
        self.conv = weight_norm(nn.Conv2d(in_channels, 8, 5, stride=2))
        self.head = weight_norm(nn.Linear(8, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.relu(self.conv(x)).amax(dim=(2, 3)))


class Buffers(nn.Module):
    """Buffers that are no BatchNorm statistic: the input's expected mean (persistent), a
    fixed filter (not persistent), and a running mean of the features that forward
    updates itself."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.register_buffer("centre", torch.full((1, in_channels, 1, 1), 0.1))
        self.register_buffer("blur", torch.full((in_channels, 1, 3, 3), 1 / 9),
                             persistent=False)
        self.register_buffer("feature_mean", torch.zeros(8))
        self.conv = nn.Conv2d(in_channels, 8, 3, stride=2)
        self.head = nn.Linear(8, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.conv2d(x - self.centre, self.blur, padding=1, groups=x.shape[1])
        features = F.relu(self.conv(x)).mean(dim=(2, 3))
        with torch.no_grad():
            self.feature_mean.mul_(0.9).add_(0.1 * features.mean(dim=0))
        return self.head(features - self.feature_mean)


class SharedBlock(nn.Module):
    """One convolution block applied three times (its weights used thrice)."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.stem = nn.Conv2d(in_channels, 8, 3, stride=2, padding=1)
        self.block = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.head = nn.Linear(8, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.stem(x)
        for _ in range(3):
            x = x + self.block(x)
        return self.head(x.mean(dim=(2, 3)))


class Constants(nn.Module):
    """Tensors made in forward and a tensor kept as a plain attribute (neither parameter
    nor buffer): export lifts them into constants."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.weights = torch.linspace(0.5, 1.5, 8)  # a plain attribute: a lifted constant
        self.conv = nn.Conv2d(in_channels, 8, 3, stride=2)
        self.head = nn.Linear(8, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x * torch.tensor([0.5]) + torch.tensor(0.25)
        features = F.relu(self.conv(x)).mean(dim=(2, 3)) * self.weights
        return self.head(features)


class LogProbs(nn.Module):
    """A model that returns log-probabilities (log_softmax), as NLL-loss tutorials do."""

    def __init__(self, in_channels: int, num_classes: int, image_size: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(in_channels * image_size * image_size, 64)
        self.dropout = nn.Dropout(0.3)
        self.fc2 = nn.Linear(64, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.dropout(F.relu(self.fc1(torch.flatten(x, 1))))
        return F.log_softmax(self.fc2(x), dim=1)


class Quantized(nn.Module):
    """A straight-through estimator (``x + (q - x).detach()``, as VQ-VAEs and quantized
    training write it): the forward rounds, the gradient passes as if it did not."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, 8, 3, stride=2)
        self.head = nn.Linear(8, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = torch.tanh(self.conv(x)).mean(dim=(2, 3)) * 4
        rounded = features + (torch.round(features) - features).detach()
        return self.head(rounded)


# ------------------------------------------------------------------ what cannot be a graph
class Reverse(torch.autograd.Function):
    """A gradient reversal layer (domain-adversarial training): identity forward, the
    gradient negated backward."""

    @staticmethod
    def forward(ctx: torch.autograd.function.FunctionCtx, x: torch.Tensor) -> torch.Tensor:
        return x.view_as(x)

    @staticmethod
    def backward(ctx: torch.autograd.function.FunctionCtx, grad: torch.Tensor) -> torch.Tensor:
        return -grad


class Reversal(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return Reverse.apply(x)


class CustomGradient(nn.Module):
    """A torch.autograd.Function with its own backward, inside a layer."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, 8, 3, stride=2)
        self.reverse = Reversal()
        self.head = nn.Linear(8, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.reverse(F.relu(self.conv(x)).mean(dim=(2, 3))))


class MaskedMean(nn.Module):
    """Boolean-mask indexing: how many elements survive depends on the data."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, 8, 3, stride=2)
        self.pool = Positive()
        self.head = nn.Linear(8, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.conv(x)))


class Positive(nn.Module):
    """The mean of each channel's positive values, by masking."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kept = x.transpose(0, 1).flatten(1)
        return torch.stack([row[row > 0].mean() for row in kept]).expand(x.shape[0], -1)


class Branchy(nn.Module):
    """A Python ``if`` on a tensor's value in forward."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(in_channels, 8, 3, stride=2)
        self.gate = Gate()
        self.head = nn.Linear(8, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.gate(F.relu(self.conv(x)).mean(dim=(2, 3))))


class Gate(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.mean() > 0.5:
            return x * 2
        return x
