"""What the tests and the benchmarks share: a virtual LAN of network namespaces, free ports,
and a flooder (an unpaired peer hammering a hub, built on the worker core's first request).

A development package beside ``tests/`` and ``benchmarks/``: neither of those imports the
other, both import this. It is not shipped (setuptools packages only
``computeshare_desktop*``); from the repository root it is importable as is, and pytest
puts the root on ``sys.path`` (pyproject's ``pythonpath``).
"""
