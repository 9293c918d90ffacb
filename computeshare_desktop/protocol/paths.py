"""The names of a model's tensors (``0.weight``, ``blocks.conv-in.weight``), one rule for the
manifest and the graph. Pure.

PyTorch allows almost any text as a module's name but ``.`` (its separator) and the empty
string: ``nn.Sequential`` numbers its layers (``0.weight``), an ``nn.ModuleDict`` takes any key
(``conv-in``, ``Head``, ``block1-0`` in torchvision's RegNet). Both sides accept the names
models use (letters and digits of any script, ``_ - + : @``) and refuse what could escape
where a name goes: torch.fx writes a part that is not an identifier into the generated
``forward`` as ``getattr(self, "part")``, so quotes and backslashes could end the string;
path separators, spaces and control characters could reach a file name or a log line;
other punctuation is refused because no model we know of uses it. Python folds look-alike
letters in identifiers (NFKC: ``ﬁ`` reads as ``fi``), so a name must be its own normal form;
a dunder or a keyword would reach an attribute Python gives a meaning, or fail to compile.
"""

from __future__ import annotations

import keyword
import unicodedata
from typing import Annotated

import msgspec

MAX_PATH_CHARS = 200
# one part: letters and digits of any script, "_", "-", "+", ":" and "@" (no space, quote,
# slash, backslash or other punctuation: no model we know of names a layer with one)
_PART = r"[\w\-+:@]+"
PATTERN = rf"\A{_PART}(?:\.{_PART})*\Z"
TensorPath = Annotated[str, msgspec.Meta(pattern=PATTERN, max_length=MAX_PATH_CHARS)]


def path_problem(path: str) -> str | None:
    """Why ``path`` (already matching ``PATTERN``) is refused, or None when it is fine."""
    if unicodedata.normalize("NFKC", path) != path:
        return "it has characters Python reads as others"
    for part in path.split("."):
        if part.startswith("__") or keyword.iskeyword(part):
            return f"its part {part!r} is a Python keyword or a dunder"
    return None
