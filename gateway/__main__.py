"""`python -m gateway` is the `manualqa` command."""

from gateway.cli import main

main()
