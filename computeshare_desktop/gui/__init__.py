"""The desktop app: a thin Qt layer over the same hub, worker and discovery cores as the CLI.

This is the only package that imports PySide6 or pyqtgraph, and only its widget modules do:
the controllers (``hub_runner``, ``worker_runner``, ``sources``), the view model
(``progress_state``), ``options``, ``settings`` and ``formatting`` are plain Python, so they
are tested without a display and never touch Qt from a background thread.

Threads: every core runs on a background thread that owns its ZeroMQ sockets and only
appends plain-dict events to a ``queue.SimpleQueue``. Each window drains its queues from a
``QTimer`` on the GUI thread (about 10 times a second) and applies the latest state in one
batch, so no Qt signal ever crosses threads and a fast session cannot flood the event loop.
"""
