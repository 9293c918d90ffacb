"""What the tests share, imported by subject (``from helpers.hub import ...``; pyproject puts
tests/ on pythonpath): a fake clock, scripted runners, fake workers and hubs, processes of the
real command, the app's widgets as a person would use them. No test module imports another;
a helper two test files need lives here (tests/test_test_layout.py checks it)."""
