"""What the tests and the benchmarks share: a virtual LAN of network namespaces and free ports.

A development package beside ``tests/`` and ``benchmarks/``: neither of those imports the
other, both import this. It is not shipped (setuptools packages only
``computeshare_desktop*``); from the repository root it is importable as is, and pytest
puts the root on ``sys.path`` (pyproject's ``pythonpath``).
"""
