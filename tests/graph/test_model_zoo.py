"""The model zoo: shapes people bring (tests/graph/zoo_nets.py, hosted as ``--model
zoo_nets.py:NAME``), each through the hub's build, export and check of the bytes it serves,
a worker's acceptance of those bytes and one training step, which must equal the same step
taken by the original module (loss, every gradient, every buffer after the step); or the
hub refuses it before a session opens, naming the layer and the way out.

The torchvision classifiers go the same way in ``scripts/model_zoo.py`` (a CI step of its
own); tests/graph/test_model_zoo_script.py runs it on two of them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import zoo_nets

from computeshare_desktop.data import ArrayDataset, load_dataset
from computeshare_desktop.data.prepared import load_data
from computeshare_desktop.hub.code_offer import HINT as OFFER_CODE
from computeshare_desktop.hub.config import HubConfig
from computeshare_desktop.hub.user_model import build_hub_model
from testbed.zoo import Result, through_session

NETS = Path(zoo_nets.__file__)
TABLE, IMAGES = "table", "mnist-sample"

# (the name in zoo_nets.py, the data it takes, what it shows)
TRAINS = [
    ("sequential_mlp", TABLE, "a bare nn.Sequential MLP: parameters named 0.weight"),
    ("sequential_cnn", IMAGES, "a bare nn.Sequential CNN with BatchNorm2d and Dropout"),
    ("ListMLP", TABLE, "nn.ModuleList"),
    ("OddKeys", IMAGES, "nn.ModuleDict keys 'conv-in', 'block1-0', 'Head'"),
    ("ParamList", TABLE, "nn.ParameterList and torch.addmm"),
    ("LayerNormMLP", TABLE, "LayerNorm"),
    ("CategoryEmbedding", TABLE, "nn.Embedding over a category column"),
    ("TiedEmbedding", TABLE, "weight tying: an embedding's weight as an output layer's"),
    ("TiedLinear", TABLE, "tied weights: one Parameter under two names"),
    ("SharedBlock", IMAGES, "one block applied three times"),
    ("MnistRNN", IMAGES, "pytorch/examples mnist_rnn: nn.LSTM, BatchNorm1d, Dropout2d"),
    ("RowsGRU", IMAGES, "a 2-layer bidirectional nn.GRU with dropout between layers"),
    ("RowsRNN", IMAGES, "a plain nn.RNN, sequence first"),
    ("EncoderNet", IMAGES, "nn.TransformerEncoder"),
    ("AttentionNet", IMAGES, "nn.MultiheadAttention and its weights"),
    ("CausalSDPA", IMAGES, "F.scaled_dot_product_attention, causal"),
    ("SmallViT", IMAGES, "a small ViT: class token and positions as nn.Parameter"),
    ("GroupNormNet", IMAGES, "GroupNorm"),
    ("WeightNormNet", IMAGES, "torch.nn.utils.parametrizations.weight_norm"),
    ("Buffers", IMAGES, "buffers that are no BatchNorm statistic, one updated in forward "
                        "under torch.no_grad()"),
    ("Constants", IMAGES, "lifted constants: tensors made in forward, a plain attribute"),
    ("LogProbs", IMAGES, "a model returning log-probabilities"),
    ("Quantized", IMAGES, "a straight-through estimator: x + (q - x).detach()"),
]

# (name, the layer the hub names, words of its reason, words of its advice)
REFUSED = [
    ("MaskedMean", "pool: Positive", "size depends on the data", "torch.where"),
    ("Branchy", "gate: Gate", "data-dependent", "torch.where"),
    ("CustomGradient", "reverse: Reversal", "torch.autograd.Function Reverse",
     "x + (f(x) - x).detach()"),
]


@pytest.fixture(scope="module")
def datasets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[str, ArrayDataset]]:
    """Each kind of data as the hub has it: its ``--dataset`` and its training split (the
    table read, one-hot encoded and standardized by the hub's own loader)."""
    folder = tmp_path_factory.mktemp("zoo-table")
    csv = folder / "people.csv"
    csv.write_text(zoo_nets.table_csv(), encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("COMPUTESHARE_DATA_DIR", str(folder / "cache"))
        table, _ = load_data(str(csv))
    return {TABLE: (str(csv), table), IMAGES: (IMAGES, load_dataset(IMAGES, "train"))}


def hosted(name: str, data: str, datasets: dict[str, tuple[str, ArrayDataset]]) -> Result:
    """``computeshare host --model zoo_nets.py:NAME --dataset ...``, up to a worker's
    first step, against the same step of the hub's own module."""
    spec, train_set = datasets[data]
    config = HubConfig(model=f"{NETS}:{name}", dataset=spec)
    model = build_hub_model(config, train_set.info)
    return through_session(name, model, config, train_set, batch=3, seed=7)


def test_the_table_has_the_shapes_people_bring() -> None:
    assert len(TRAINS) + len(REFUSED) >= 20
    assert {n for n, _, _ in TRAINS}.isdisjoint(n for n, *_ in REFUSED)


@pytest.mark.parametrize("name, data, shows", TRAINS, ids=[row[0] for row in TRAINS])
def test_it_trains_on_a_worker_as_its_module_does(name: str, data: str, shows: str,
                                                  datasets) -> None:
    result = hosted(name, data, datasets)
    assert result.outcome == "equal", f"{shows}: {result.detail}"
    assert result.ops > 0 and result.parameters > 0


@pytest.mark.parametrize("name, layer, reason, advice", REFUSED, ids=[r[0] for r in REFUSED])
def test_the_hub_refuses_it_naming_the_layer_and_the_way_out(name: str, layer: str,
                                                             reason: str, advice: str,
                                                             datasets) -> None:
    result = hosted(name, IMAGES, datasets)
    assert result.outcome == "refused", result.detail
    message = result.detail
    assert f"layer {layer}: " in message, message
    assert reason in message and advice in message, message
    assert message.rstrip().endswith(OFFER_CODE), message  # a file model's last resort
    assert not re.search(r"'(slice|select|index)_\d+'", message)  # no internal names
