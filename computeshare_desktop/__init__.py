"""ComputeShare desktop: pool the machines you have to train one PyTorch model over the LAN."""

__version__ = "0.1.0"
