"""`python -m gateway.cli` is the `manualqa` command, like `python -m gateway`."""

from gateway.cli import main

main()
