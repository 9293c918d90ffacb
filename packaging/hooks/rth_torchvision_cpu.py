"""PyInstaller runtime hook: torchvision without its compiled ops, beside a CPU-only torch.

The bundle leaves out torchvision's ``_C`` extension (PyPI's build links CUDA libraries the
CPU torch does not have). Without it, ``import torchvision`` fails while registering fake
kernels for ``torchvision::nms`` / ``qnms``, operators only ``_C`` would define. The app
uses models and datasets, never the detection ops, so declaring the two schemas is enough.

This hook must not import torch itself: ``computeshare --help`` and ``join`` to a closed
port answer before torch loads. It installs a finder that acts once, on the first
``import torchvision``, then steps aside and lets the normal import proceed.
"""

import sys
import types

SCHEMAS = ("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
           "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")


# Holds the torch.library.Library: its definitions are undone when it is collected.
KEEPER = "_computeshare_torchvision_schemas"


class _TorchvisionSchemas:
    """A meta-path finder that never finds anything; it defines the schemas first."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname == "torchvision" and KEEPER not in sys.modules:
            sys.meta_path.remove(self)
            import torch

            keeper = types.ModuleType(KEEPER)
            keeper.library = torch.library.Library("torchvision", "DEF")
            for schema in SCHEMAS:
                keeper.library.define(schema)
            sys.modules[KEEPER] = keeper
        return None


sys.meta_path.insert(0, _TorchvisionSchemas())
