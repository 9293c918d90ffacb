"""Constants every layer shares, in a module that imports nothing (no zmq, no Qt)."""

DEFAULT_PORT = 7341  # the hub's request port; events use +1, pairing +2
HOME_ENV = "COMPUTESHARE_HOME"  # overrides the per-user data folder (tests, portable installs)
DEVICE_CHOICES = ("auto", "cpu", "cuda", "mps")  # where a worker trains (worker.device picks)
