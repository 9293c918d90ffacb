"""The command line (``computeshare``): a thin view that parses arguments and drives the service."""
